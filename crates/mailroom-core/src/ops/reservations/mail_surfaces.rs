//! Mail-archive enforcement (docs/compat/tools.md §6.7, and §4.3 step 1): other agents'
//! reservations on the archive paths a delivery will write block that delivery.
//!
//! Only reservations whose pattern begins with `agents/`, `messages/`, `attachments/`,
//! `threads/` or `file_reservations/` matter; the store finds them with one indexed query,
//! which in most projects returns nothing, so the usual delivery pays that query and the
//! expiry sweep's indexed UPDATE and nothing else. Surfaces are project-relative (no
//! `projects/<slug>/` prefix), as the reference compares them, and spelled as the reference
//! spells them: the month's directory with `*.md`, not the message's file name.

use serde::Serialize;

use crate::error::Result;
use crate::model::path_pattern::{Held, ReservationPattern, conflicts, union_matches};
use crate::model::time::Timestamp;
use crate::records::{AgentId, ProjectId};
use crate::store::Db;

/// The `type` of the error a blocked delivery returns.
pub const FILE_RESERVATION_CONFLICT: &str = "FILE_RESERVATION_CONFLICT";
/// The message of that error (the reference's words).
pub const CONFLICT_MESSAGE: &str = "Conflicting active file_reservations prevent message write.";

/// One archive surface of a delivery and another agent's reservation that covers it.
#[derive(Debug, Clone, Serialize)]
pub struct SurfaceConflict {
    pub surface: String,
    /// The holder's agent name.
    pub holder: String,
    pub path_pattern: String,
    pub exclusive: bool,
    pub expires_ts: Timestamp,
}

/// What a delivery into one project writes, as far as its archive surfaces depend on it.
pub(crate) struct MailSurfaces<'a> {
    /// The sender, when registered in the target project (it then gets an outbox copy).
    pub local_sender: Option<&'a str>,
    /// Recipient names in the target project, in delivery order.
    pub recipients: Vec<&'a str>,
    pub thread_id: Option<&'a str>,
    /// Whether the message carries attachments.
    pub attachments: bool,
}

impl MailSurfaces<'_> {
    /// The surfaces of docs/compat/tools.md §6.7, in its order, without repeats.
    pub fn paths(&self, now: Timestamp) -> Vec<String> {
        let (year, month) = now.year_month();
        let period = format!("{year:04}/{month:02}");
        let mut paths = vec![format!("messages/{period}/*.md")];
        if let Some(sender) = self.local_sender {
            paths.push(format!("agents/{sender}/outbox/{period}/*.md"));
        }
        for name in &self.recipients {
            let inbox = format!("agents/{name}/inbox/{period}/*.md");
            if !paths.contains(&inbox) {
                paths.push(inbox);
            }
        }
        if let Some(thread) = self.thread_id {
            paths.push(format!("messages/threads/{thread}.md"));
        }
        if self.attachments {
            paths.push("attachments/**".to_string());
        }
        paths
    }
}

/// Other agents' reservations in force that cover any of the delivery's surfaces, each surface
/// taken as an exclusive request (docs/compat/tools.md §6.2), after the reference's union
/// pre-filter.
pub(crate) fn surface_conflicts(
    db: &Db<'_>,
    project_id: ProjectId,
    sender_id: AgentId,
    surfaces: &MailSurfaces<'_>,
    now: Timestamp,
) -> Result<Vec<SurfaceConflict>> {
    let held = db.archive_surface_reservations(project_id, sender_id, now)?;
    if held.is_empty() {
        return Ok(Vec::new());
    }
    // Few reservations name archive paths: compiling them per delivery costs little.
    let patterns: Vec<_> = held.iter().map(|r| ReservationPattern::new(&r.path_pattern)).collect();
    let mut found = Vec::new();
    for surface in surfaces.paths(now) {
        let candidate = ReservationPattern::new(&surface);
        if !union_matches(patterns.iter().map(|p| p.compiled()), candidate.normalized()) {
            continue;
        }
        for (row, pattern) in held.iter().zip(&patterns) {
            let view = Held { pattern, exclusive: row.exclusive, released: false, own: false };
            if conflicts(view, &candidate, true) {
                found.push(SurfaceConflict {
                    surface: surface.clone(),
                    holder: row.agent_name.clone(),
                    path_pattern: row.path_pattern.clone(),
                    exclusive: row.exclusive,
                    expires_ts: row.expires_ts,
                });
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surfaces_follow_the_reference_layout() {
        let now = Timestamp::parse_iso("2025-03-09T10:00:00+00:00").expect("timestamp");
        let surfaces = MailSurfaces {
            local_sender: Some("BlueLake"),
            recipients: vec!["GreenCastle", "RedStone", "GreenCastle"],
            thread_id: Some("T-1"),
            attachments: true,
        };
        assert_eq!(
            surfaces.paths(now),
            [
                "messages/2025/03/*.md",
                "agents/BlueLake/outbox/2025/03/*.md",
                "agents/GreenCastle/inbox/2025/03/*.md",
                "agents/RedStone/inbox/2025/03/*.md",
                "messages/threads/T-1.md",
                "attachments/**",
            ]
        );
        let remote = MailSurfaces {
            local_sender: None,
            recipients: vec!["GreenCastle"],
            thread_id: None,
            attachments: false,
        };
        assert_eq!(
            remote.paths(now),
            ["messages/2025/03/*.md", "agents/GreenCastle/inbox/2025/03/*.md"]
        );
    }
}
