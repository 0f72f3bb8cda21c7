//! force_release_file_reservation (docs/compat/tools.md §6.6): any agent may release another's
//! reservation once the staleness heuristic (§6.5 there) finds it abandoned; the previous holder
//! is told by a message, sent like any other (contact policy applies).

use serde::Serialize;

use super::staleness::{Staleness, Thresholds, assess};
use crate::error::{Category, Error, Result};
use crate::model::time::Timestamp;
use crate::ops::messaging::SendMessage;
use crate::ops::{Mailroom, resolve};
use crate::records::ReservationId;
use crate::records::{Agent, Project, Reservation};

/// Arguments of force_release_file_reservation.
#[derive(Debug, Clone)]
pub struct ForceRelease {
    pub project_key: String,
    pub agent_name: String,
    pub file_reservation_id: ReservationId,
    pub notify_previous: bool,
    pub note: String,
}

/// The released reservation, with the signals that made it stale.
#[derive(Debug, Clone, Serialize)]
pub struct ForceReleased {
    pub id: ReservationId,
    pub agent: String,
    pub path_pattern: String,
    pub exclusive: bool,
    pub reason: String,
    pub created_ts: Timestamp,
    pub expires_ts: Timestamp,
    pub released_ts: Timestamp,
    pub stale_reasons: Vec<String>,
    pub last_agent_activity_ts: Option<Timestamp>,
    pub last_mail_activity_ts: Option<Timestamp>,
    pub last_filesystem_activity_ts: Option<Timestamp>,
    pub last_git_activity_ts: Option<Timestamp>,
    pub notified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notification_error: Option<String>,
}

/// Result of force_release_file_reservation.
#[derive(Debug, Clone, Serialize)]
pub struct ForceReleaseOutcome {
    pub released: usize,
    pub released_at: Timestamp,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already_released: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation: Option<ForceReleased>,
}

/// What force release reads before deciding: project, actor, the reservation, the holder's
/// last mail activity and last activity.
struct Loaded {
    project: Project,
    actor: Agent,
    row: Reservation,
    last_mail: Option<Timestamp>,
    holder_active: Option<Timestamp>,
}

impl Mailroom {
    /// Releases another agent's reservation, allowed only when it is stale (docs/compat/tools.md
    /// §6.5); the previous holder is told by a message unless `notify_previous` is off.
    pub async fn force_release_file_reservation(
        &self,
        req: ForceRelease,
    ) -> Result<ForceReleaseOutcome> {
        let Loaded { project, actor, row, last_mail, holder_active } =
            self.load_for_force_release(&req).await?;
        let now = Timestamp::now();
        if let Some(released_at) = row.released_ts {
            return Ok(already_released(released_at, false));
        }
        self.admit_archive_work().await?;
        if row.expires_ts <= now {
            self.release_one(row.id, now).await?;
            return Ok(already_released(now, true));
        }
        let workspace = self.workspace_of(&project, &row.path_pattern, now).await?;
        let verdict = assess(holder_active, last_mail, workspace, now, self.thresholds());
        if !verdict.stale {
            return Err(reservation_active(&row, &verdict));
        }
        if !self.release_one(row.id, now).await? {
            return Ok(already_released(now, false));
        }
        let mut released = force_released(&row, now, verdict);
        if req.notify_previous && row.agent_id != actor.id {
            let limits = self.thresholds();
            let notice =
                stale_release_notice(&project, &actor.name, &row, &released, &req.note, limits);
            match self.send_message(notice).await {
                // A notice blocked by reservations on the archive is returned, not raised.
                Ok(sent) => match sent.failure() {
                    Some(failure) => released.notification_error = Some(failure.message),
                    None => released.notified = true,
                },
                Err(e) => released.notification_error = Some(e.message),
            }
        }
        Ok(ForceReleaseOutcome {
            released: 1,
            released_at: now,
            already_released: false,
            expired: false,
            reservation: Some(released),
        })
    }

    async fn load_for_force_release(&self, req: &ForceRelease) -> Result<Loaded> {
        let (key, actor_name, id) =
            (req.project_key.clone(), req.agent_name.clone(), req.file_reservation_id);
        self.store
            .read(move |db| {
                let project = resolve::project(db, &key)?;
                let actor = resolve::agent(db, &project, &actor_name, "agent_name")?;
                let row = db
                    .reservation_by_id(id)?
                    .filter(|r| r.project_id == project.id)
                    .ok_or_else(|| {
                        Error::not_found(format!(
                            "File reservation id={id} not found for project '{}'.",
                            project.human_key
                        ))
                    })?;
                let last_mail = db.last_mail_activity(project.id, row.agent_id)?;
                let holder_active = db.agent_by_id(row.agent_id)?.map(|a| a.last_active_ts);
                Ok(Loaded { project, actor, row, last_mail, holder_active })
            })
            .await
    }
}

fn already_released(released_at: Timestamp, expired: bool) -> ForceReleaseOutcome {
    ForceReleaseOutcome {
        released: 0,
        released_at,
        already_released: true,
        expired,
        reservation: None,
    }
}

fn reservation_active(row: &Reservation, verdict: &Staleness) -> Error {
    Error::new(
        Category::Conflict,
        "RESERVATION_ACTIVE",
        format!(
            "File reservation id={} on '{}' held by {} is still active and cannot be \
             force-released (signals: {}). Ask the holder to release it, or wait until it \
             expires or goes stale.",
            row.id,
            row.path_pattern,
            row.agent_name,
            verdict.stale_reasons.join(", ")
        ),
    )
}

fn force_released(row: &Reservation, now: Timestamp, verdict: Staleness) -> ForceReleased {
    ForceReleased {
        id: row.id,
        agent: row.agent_name.clone(),
        path_pattern: row.path_pattern.clone(),
        exclusive: row.exclusive,
        reason: row.reason.clone(),
        created_ts: row.created_ts,
        expires_ts: row.expires_ts,
        released_ts: now,
        stale_reasons: verdict.stale_reasons,
        last_agent_activity_ts: verdict.last_agent_activity_ts,
        last_mail_activity_ts: verdict.last_mail_activity_ts,
        last_filesystem_activity_ts: verdict.last_filesystem_activity_ts,
        last_git_activity_ts: verdict.last_git_activity_ts,
        notified: false,
        notification_error: None,
    }
}

/// The message telling a holder its stale reservation was released.
fn stale_release_notice(
    project: &Project,
    actor: &str,
    row: &Reservation,
    released: &ForceReleased,
    note: &str,
    limits: Thresholds,
) -> SendMessage {
    let minutes = |t: Option<Timestamp>| match t {
        Some(t) => {
            format!("{} min ago", (released.released_ts.as_micros() - t.as_micros()) / 60_000_000)
        }
        None => "never".to_string(),
    };
    let mut body = format!(
        "{actor} released your file reservation `{}` (id {}) because it looked stale.\n\n\
         **Signals**\n",
        row.path_pattern, row.id
    );
    for reason in &released.stale_reasons {
        body.push_str(&format!("- {reason}\n"));
    }
    body.push_str(&format!(
        "\n- Last agent activity: {}\n- Last mail activity: {}\n",
        minutes(released.last_agent_activity_ts),
        minutes(released.last_mail_activity_ts)
    ));
    body.push_str(&format!(
        "- Thresholds: inactive after {} s, activity counts for {} s\n",
        limits.inactivity_seconds, limits.grace_seconds
    ));
    if !note.trim().is_empty() {
        body.push_str(&format!("\n**Note:** {}\n", note.trim()));
    }
    body.push_str(
        "\nIf you are still working on these files, reserve them again with \
         file_reservation_paths.\n",
    );
    SendMessage {
        project_key: project.human_key.clone(),
        sender_name: actor.to_string(),
        to: vec![row.agent_name.clone()],
        subject: format!("[file-reservations] Released stale lock on {}", row.path_pattern),
        body_md: body,
        ..SendMessage::default()
    }
}
