//! File reservations (docs/compat/tools.md §6): file_reservation_paths,
//! renew_file_reservations, release_file_reservations, force_release_file_reservation, and
//! the listing behind `resource://file_reservations/{slug}`.
//!
//! Reservations are advisory: a request is always granted and conflicts are reported next to
//! the grants. Each request's check and insert run in one writer transaction, so concurrent
//! requests serialise. Before reserving or renewing, expired reservations are released and
//! stale ones (holder idle, no recent activity; `staleness`) too. Every change queues its
//! JSON artifacts for the archive in the same transaction. `guard`: the commit guard's hooks,
//! which enforce reservations at `git commit` and `git push`.

pub(crate) mod active;
mod force;
pub mod guard;
pub mod mail_surfaces;
pub mod staleness;
#[cfg(test)]
mod tests;

pub use force::{ForceRelease, ForceReleaseOutcome, ForceReleased};

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use self::active::{ActiveReservations, Change, Entry, View};
use self::staleness::{Staleness, Thresholds, Workspace, assess, workspace_activity};
use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::path_pattern::{
    Held, ReservationPattern, conflicts, pattern_warnings, union_matches,
};
use crate::model::time::Timestamp;
use crate::ops::{Mailroom, resolve};
use crate::records::ReservationId;
use crate::records::{AgentId, Project, ProjectId, Reservation};
use crate::store::Db;
use crate::store::db::archive_queue::ArchiveKind;
use crate::store::db::reservations::NewReservation;

/// Renewals extend by at least this much (the reference's floor).
const MIN_EXTEND_SECONDS: i64 = 60;

/// Arguments of file_reservation_paths.
#[derive(Debug, Clone)]
pub struct ReservePaths {
    pub project_key: String,
    pub agent_name: String,
    pub paths: Vec<String>,
    pub ttl_seconds: i64,
    pub exclusive: bool,
    pub reason: String,
}

impl ReservePaths {
    /// Refuses an empty path list, a TTL outside 1 s..=ten years (`ttl_field` names it as the
    /// caller spelled it) and patterns outside the project (docs/compat/tools.md §1.9).
    pub fn validate(&self, ttl_field: &str) -> Result<()> {
        if self.paths.is_empty() {
            return Err(empty_paths());
        }
        bounds::seconds(ttl_field, self.ttl_seconds, 1)?;
        for (index, path) in self.paths.iter().enumerate() {
            bounds::reservation_pattern(&format!("paths[{index}]"), path)?;
        }
        Ok(())
    }
}

/// A granted (or refreshed) reservation.
#[derive(Debug, Clone, Serialize)]
pub struct Granted {
    pub id: ReservationId,
    pub path_pattern: String,
    pub exclusive: bool,
    pub reason: String,
    pub expires_ts: Timestamp,
}

/// Another agent's reservation that clashes with a requested path.
#[derive(Debug, Clone, Serialize)]
pub struct Holder {
    pub agent: String,
    pub path_pattern: String,
    pub exclusive: bool,
    pub expires_ts: Timestamp,
}

/// The holders clashing with one requested path.
#[derive(Debug, Clone, Serialize)]
pub struct PathConflict {
    pub path: String,
    pub holders: Vec<Holder>,
}

/// Result of file_reservation_paths: grants and, beside them, conflicts (never a refusal).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReserveOutcome {
    pub granted: Vec<Granted>,
    pub conflicts: Vec<PathConflict>,
}

/// Which of an agent's reservations renew/release act on: all, or those whose id and/or
/// exact pattern is listed (both filters apply when both are given).
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub paths: Option<Vec<String>>,
    pub ids: Option<Vec<ReservationId>>,
}

impl Selection {
    /// Refuses explicitly empty lists (the reference's EMPTY_PATHS / EMPTY_IDS).
    fn validate(&self) -> Result<()> {
        if self.paths.as_ref().is_some_and(Vec::is_empty) {
            return Err(empty_paths());
        }
        if self.ids.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::invalid_kind(
                "EMPTY_IDS",
                "file_reservation_ids list cannot be empty. Omit it to act on all your \
                 reservations, or pass at least one id.",
            ));
        }
        Ok(())
    }

    fn selects(&self, reservation: &Reservation) -> bool {
        self.ids.as_ref().is_none_or(|ids| ids.contains(&reservation.id))
            && self.paths.as_ref().is_none_or(|paths| paths.contains(&reservation.path_pattern))
    }
}

/// One renewed reservation.
#[derive(Debug, Clone, Serialize)]
pub struct Renewed {
    pub id: ReservationId,
    pub path_pattern: String,
    pub old_expires_ts: Timestamp,
    pub new_expires_ts: Timestamp,
}

/// Result of renew_file_reservations.
#[derive(Debug, Clone, Serialize)]
pub struct RenewOutcome {
    pub renewed: usize,
    pub file_reservations: Vec<Renewed>,
}

/// Result of release_file_reservations.
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseOutcome {
    pub released: usize,
    pub released_at: Timestamp,
}

/// A reservation as `resource://file_reservations/{slug}` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ReservationStatus {
    pub id: ReservationId,
    pub agent: String,
    pub path_pattern: String,
    pub exclusive: bool,
    pub reason: String,
    pub created_ts: Timestamp,
    pub expires_ts: Timestamp,
    pub released_ts: Option<Timestamp>,
    #[serde(flatten)]
    pub staleness: Staleness,
}

impl Mailroom {
    /// Reserves paths for an agent; conflicts with other agents' reservations are reported
    /// beside the grants. Asking again for a pattern it holds refreshes that reservation.
    pub async fn file_reservation_paths(&self, req: ReservePaths) -> Result<ReserveOutcome> {
        req.validate("ttl_seconds")?;
        for path in &req.paths {
            for warning in pattern_warnings(path) {
                tracing::info!(agent = %req.agent_name, "{warning}");
            }
        }
        self.admit_archive_work().await?;
        let stale = self.stale_reservation_ids(&req.project_key).await?;
        let active = Arc::clone(&self.active_reservations);
        self.store.write(move |db| reserve_job(db, &active, &req, &stale)).await
    }

    /// Extends an agent's active reservations by `max(60, extend_seconds)` from the later of
    /// their expiry and now.
    pub async fn renew_file_reservations(
        &self,
        project_key: String,
        agent_name: String,
        extend_seconds: i64,
        selection: Selection,
    ) -> Result<RenewOutcome> {
        selection.validate()?;
        self.admit_archive_work().await?;
        let stale = self.stale_reservation_ids(&project_key).await?;
        let bump = bounds::seconds(
            "extend_seconds",
            extend_seconds.max(MIN_EXTEND_SECONDS),
            MIN_EXTEND_SECONDS,
        )?;
        let active = Arc::clone(&self.active_reservations);
        self.store
            .write(move |db| {
                let now = Timestamp::now();
                let owner = (project_key.as_str(), agent_name.as_str());
                let mut renewed = Vec::new();
                for_selected(db, &active, owner, &selection, Some(&stale), now, |view, row| {
                    let new_expires =
                        bounds::later("extend_seconds", row.expires_ts.max(now), bump)?;
                    db.set_reservation_expiry(row.id, new_expires)?;
                    view.record(Change::Updated {
                        id: row.id,
                        exclusive: row.exclusive,
                        expires_ts: new_expires,
                    });
                    db.enqueue_archive(ArchiveKind::Reservation, row.id)?;
                    renewed.push(Renewed {
                        id: row.id,
                        path_pattern: row.path_pattern,
                        old_expires_ts: row.expires_ts,
                        new_expires_ts: new_expires,
                    });
                    Ok(())
                })?;
                Ok(RenewOutcome { renewed: renewed.len(), file_reservations: renewed })
            })
            .await
    }

    /// Releases an agent's active reservations (all, or the selected ones). Idempotent:
    /// releasing nothing answers `released: 0`.
    pub async fn release_file_reservations(
        &self,
        project_key: String,
        agent_name: String,
        selection: Selection,
    ) -> Result<ReleaseOutcome> {
        selection.validate()?;
        self.admit_archive_work().await?;
        let active = Arc::clone(&self.active_reservations);
        self.store
            .write(move |db| {
                let now = Timestamp::now();
                let owner = (project_key.as_str(), agent_name.as_str());
                let mut released = 0;
                for_selected(db, &active, owner, &selection, None, now, |view, row| {
                    if release_and_queue(db, row.id, now)? {
                        view.record(Change::Released(row.id));
                        released += 1;
                    }
                    Ok(())
                })?;
                Ok(ReleaseOutcome { released, released_at: now })
            })
            .await
    }

    /// The sweep alone (the upkeep's, every project in turn): the project's expired
    /// reservations and its stale ones released; how many.
    pub(crate) async fn sweep_reservations(&self, project_key: String) -> Result<usize> {
        let stale = self.stale_reservation_ids(&project_key).await?;
        let key = project_key.clone();
        let expired = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &key)?;
                db.has_expired_reservations(project.id, Timestamp::now())
            })
            .await?;
        if stale.is_empty() && !expired {
            // Nothing to release: no write (which would wake every page cache).
            return Ok(0);
        }
        self.admit_archive_work().await?;
        let active = Arc::clone(&self.active_reservations);
        self.store
            .write(move |db| {
                let project = resolve::project(db, &project_key)?;
                let mut view = active.view(db, project.id)?;
                let released = sweep_in_tx(db, project.id, &stale, Timestamp::now())?;
                for &id in &released {
                    view.record(Change::Released(id));
                }
                active.finish(db, view)?;
                Ok(released.len())
            })
            .await
    }

    /// Every reservation of a project (or only those in force), with staleness signals, in
    /// id order: the rows of `resource://file_reservations/{slug}`. Sweeps first.
    pub async fn list_file_reservations(
        &self,
        project_key: String,
        active_only: bool,
    ) -> Result<Vec<ReservationStatus>> {
        self.admit_archive_work().await?;
        let stale = self.stale_reservation_ids(&project_key).await?;
        let key = project_key.clone();
        let active = Arc::clone(&self.active_reservations);
        self.store
            .write(move |db| {
                let project = resolve::project(db, &key)?;
                let mut view = active.view(db, project.id)?;
                sweep_view(db, &mut view, &stale, Timestamp::now())?;
                active.finish(db, view)
            })
            .await?;
        let (project, rows, activity) = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let now = Timestamp::now();
                let rows: Vec<Reservation> = db
                    .project_reservations(project.id)?
                    .into_iter()
                    .filter(|r| !active_only || r.is_active(now))
                    .collect();
                let activity = holder_activity(db, project.id, &rows)?;
                Ok((project, rows, activity))
            })
            .await?;
        let now = Timestamp::now();
        let limits = self.thresholds();
        let mut listed = Vec::with_capacity(rows.len());
        // Rows often share a pattern (refreshes, history): each pattern's directory and Git
        // scan runs once per listing.
        let mut scanned: HashMap<String, Workspace> = HashMap::new();
        for row in rows {
            let workspace = match scanned.get(&row.path_pattern) {
                Some(known) => *known,
                None => {
                    let found = self.workspace_of(&project, &row.path_pattern, now).await?;
                    scanned.insert(row.path_pattern.clone(), found);
                    found
                }
            };
            let (last_active, last_mail) = activity.get(&row.agent_id).copied().unwrap_or_default();
            let mut staleness = assess(last_active, last_mail, workspace, now, limits);
            staleness.stale &= row.released_ts.is_none();
            listed.push(ReservationStatus {
                id: row.id,
                agent: row.agent_name,
                path_pattern: row.path_pattern,
                exclusive: row.exclusive,
                reason: row.reason,
                created_ts: row.created_ts,
                expires_ts: row.expires_ts,
                released_ts: row.released_ts,
                staleness,
            });
        }
        Ok(listed)
    }
}

impl Mailroom {
    fn thresholds(&self) -> Thresholds {
        Thresholds {
            inactivity_seconds: self.config.reservation_inactivity_seconds,
            grace_seconds: self.config.reservation_grace_seconds,
        }
    }

    /// File and Git activity of a pattern in the project's directory, off the async workers.
    async fn workspace_of(
        &self,
        project: &Project,
        pattern: &str,
        now: Timestamp,
    ) -> Result<Workspace> {
        let (key, pattern) = (project.human_key.clone(), pattern.to_string());
        let grace = self.config.reservation_grace_seconds;
        tokio::task::spawn_blocking(move || workspace_activity(&key, &pattern, now, grace))
            .await
            .map_err(|e| Error::internal(format!("workspace scan failed: {e}")))
    }

    /// Ids of the project's unexpired reservations that the heuristic finds stale now. Only
    /// holders idle past the inactivity threshold and without recent mail are candidates, so
    /// the usual case costs one indexed query and no disk access.
    async fn stale_reservation_ids(&self, project_key: &str) -> Result<Vec<ReservationId>> {
        let now = Timestamp::now();
        let limits = self.thresholds();
        let key = project_key.to_string();
        let cutoff = now.plus_seconds(-limits.inactivity_seconds);
        let (project, candidates) = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &key)?;
                let rows: Vec<Reservation> = db
                    .reservations_of_inactive_holders(project.id, cutoff)?
                    .into_iter()
                    .filter(|r| r.expires_ts >= now)
                    .collect();
                let activity = holder_activity(db, project.id, &rows)?;
                let candidates: Vec<(Reservation, Activity)> = rows
                    .into_iter()
                    .filter_map(|r| {
                        let (active, mail) = activity.get(&r.agent_id).copied()?;
                        let quick = assess(active, mail, Workspace::Unmatched, now, limits);
                        quick.stale.then_some((r, (active, mail)))
                    })
                    .collect();
                Ok((project, candidates))
            })
            .await?;
        let mut stale = Vec::new();
        for (row, (active, mail)) in candidates {
            let workspace = self.workspace_of(&project, &row.path_pattern, now).await?;
            if assess(active, mail, workspace, now, limits).stale {
                stale.push(row.id);
            }
        }
        Ok(stale)
    }

    /// Releases one reservation at `now` and queues its artifacts; false if it was released
    /// meanwhile.
    async fn release_one(&self, id: ReservationId, now: Timestamp) -> Result<bool> {
        self.store.write(move |db| release_and_queue(db, id, now)).await
    }
}

/// A holder's last activity and last mail activity in the project.
type Activity = (Option<Timestamp>, Option<Timestamp>);

/// Each holder's [`Activity`], by agent id.
fn holder_activity(
    db: &Db<'_>,
    project_id: ProjectId,
    rows: &[Reservation],
) -> Result<HashMap<AgentId, Activity>> {
    let mut activity = HashMap::new();
    for row in rows {
        if activity.contains_key(&row.agent_id) {
            continue;
        }
        let last_active = db.agent_by_id(row.agent_id)?.map(|a| a.last_active_ts);
        let last_mail = db.last_mail_activity(project_id, row.agent_id)?;
        activity.insert(row.agent_id, (last_active, last_mail));
    }
    Ok(activity)
}

/// The sweep of docs/compat/tools.md §6.4 inside a write: releases the project's expired
/// reservations and the `stale` ones (found beforehand) still unreleased, and queues their
/// artifacts. A delivery passes no `stale` ids: finding them needs file and Git scans, which
/// have no place on the writer thread.
pub(crate) fn sweep_in_tx(
    db: &Db<'_>,
    project_id: ProjectId,
    stale: &[ReservationId],
    now: Timestamp,
) -> Result<Vec<ReservationId>> {
    let mut released = db.release_expired_reservations(project_id, now)?;
    for &id in &released {
        db.enqueue_archive(ArchiveKind::Reservation, id)?;
    }
    for &id in stale {
        if release_and_queue(db, id, now)? {
            released.push(id);
        }
    }
    Ok(released)
}

/// What renew and release share: the agent's reservations in force that `selection` picks,
/// each handed to `act` with the project's set (to record what `act` changes), after the
/// sweep when `stale` is given; the set is kept when all are done.
fn for_selected(
    db: &Db<'_>,
    active: &ActiveReservations,
    (project_key, agent_name): (&str, &str),
    selection: &Selection,
    stale: Option<&[ReservationId]>,
    now: Timestamp,
    mut act: impl FnMut(&mut View, Reservation) -> Result<()>,
) -> Result<()> {
    let project = resolve::project(db, project_key)?;
    let agent = resolve::agent(db, &project, agent_name, "agent_name")?;
    let mut view = active.view(db, project.id)?;
    if let Some(stale) = stale {
        sweep_view(db, &mut view, stale, now)?;
    }
    for row in db.agent_active_reservations(project.id, agent.id, now)? {
        if selection.selects(&row) {
            act(&mut view, row)?;
        }
    }
    active.finish(db, view)
}

/// [`sweep_in_tx`] recording what it released in the job's view.
fn sweep_view(db: &Db<'_>, view: &mut View, stale: &[ReservationId], now: Timestamp) -> Result<()> {
    for id in sweep_in_tx(db, view.project_id(), stale, now)? {
        view.record(Change::Released(id));
    }
    Ok(())
}

/// Releases one reservation unless already released, queueing its artifact rewrite; whether
/// it was released now.
fn release_and_queue(db: &Db<'_>, id: ReservationId, now: Timestamp) -> Result<bool> {
    let released = db.release_reservation(id, now)?;
    if released {
        db.enqueue_archive(ArchiveKind::Reservation, id)?;
    }
    Ok(released)
}

/// The write job of [`Mailroom::file_reservation_paths`]: sweeps the stale holders' rows,
/// then checks and grants against the project's set.
fn reserve_job(
    db: &Db<'_>,
    active: &ActiveReservations,
    req: &ReservePaths,
    stale: &[ReservationId],
) -> Result<ReserveOutcome> {
    let now = Timestamp::now();
    let project = resolve::project(db, &req.project_key)?;
    let agent = resolve::agent(db, &project, &req.agent_name, "agent_name")?;
    let mut view = active.view(db, project.id)?;
    active.load(db, &mut view, now)?;
    sweep_view(db, &mut view, stale, now)?;
    let outcome = reserve_in_tx(db, &project, agent.id, req, now, &mut view)?;
    active.finish(db, view)?;
    Ok(outcome)
}

/// The check-and-grant of docs/compat/tools.md §6.3, in the writer's transaction, against the
/// project's reservations in force as `view` holds them (loaded, swept); records its grants.
fn reserve_in_tx(
    db: &Db<'_>,
    project: &Project,
    agent_id: AgentId,
    req: &ReservePaths,
    now: Timestamp,
    view: &mut View,
) -> Result<ReserveOutcome> {
    // The pre-filter: only paths some qualifying pattern matches literally are examined
    // (qualifying = another agent's, non-virtual, and exclusive unless the request is).
    // As in the reference, it is decided on the reservations in force before this call's own
    // grants (which are the agent's own, so never qualify anyway).
    let qualifies = |held: &&Entry| {
        held.agent_id != agent_id && (held.exclusive || req.exclusive) && !held.pattern.is_virtual()
    };
    // Walked once per call, not per requested path (`view` changes only after the loop).
    let in_force: Vec<&Entry> = view.in_force(now).collect();
    let qualifying: Vec<_> = in_force
        .iter()
        .filter(|held| qualifies(held))
        .map(|held| held.pattern.compiled())
        .collect();
    let mut outcome = ReserveOutcome::default();
    let expires = bounds::later("ttl_seconds", now, req.ttl_seconds)?;
    // This call's new rows: later paths of the call see them (as the agent's own).
    let mut added: Vec<Entry> = Vec::new();
    let mut changes = Vec::new();
    for path in &req.paths {
        let candidate = Arc::new(ReservationPattern::new(path));
        let examined = qualifying.is_empty()
            || union_matches(qualifying.iter().copied(), candidate.normalized());
        if examined {
            let holders =
                holders_of(db, in_force.iter().copied(), &candidate, agent_id, req.exclusive)?;
            if !holders.is_empty() {
                outcome.conflicts.push(PathConflict { path: path.clone(), holders });
            }
        }
        // The agent's newest reservation in force with exactly this pattern, this call's
        // grants included.
        let own = in_force
            .iter()
            .copied()
            .chain(&added)
            .filter(|held| held.agent_id == agent_id && held.pattern.as_str() == path.as_str())
            .map(|held| held.id)
            .max();
        let own_row = match own {
            Some(id) => db.reservation_by_id(id)?,
            None => None,
        };
        let granted = match own_row {
            Some(mut row) => {
                let granted = refresh(db, &mut row, req, expires)?;
                changes.push(Change::Updated {
                    id: row.id,
                    exclusive: row.exclusive,
                    expires_ts: row.expires_ts,
                });
                granted
            }
            None => {
                let row = insert(db, project, agent_id, path, req, now, expires)?;
                let entry = Entry {
                    id: row.id,
                    agent_id,
                    exclusive: row.exclusive,
                    expires_ts: row.expires_ts,
                    pattern: candidate,
                };
                changes.push(Change::Added(entry.clone()));
                added.push(entry);
                granted_of(&row)
            }
        };
        db.enqueue_archive(ArchiveKind::ReservationGrant, granted.id)?;
        outcome.granted.push(granted);
    }
    for change in changes {
        view.record(change);
    }
    Ok(outcome)
}

/// The reservations in force that clash with the candidate, as holders (full rows are read
/// only for those).
fn holders_of<'a>(
    db: &Db<'_>,
    in_force: impl Iterator<Item = &'a Entry>,
    candidate: &ReservationPattern,
    agent_id: AgentId,
    exclusive: bool,
) -> Result<Vec<Holder>> {
    let mut holders = Vec::new();
    for held in in_force {
        let view = Held {
            pattern: &held.pattern,
            exclusive: held.exclusive,
            released: false,
            own: held.agent_id == agent_id,
        };
        if !conflicts(view, candidate, exclusive) {
            continue;
        }
        let row = db
            .reservation_by_id(held.id)?
            .ok_or_else(|| Error::internal(format!("reservation {} vanished", held.id)))?;
        holders.push(Holder {
            agent: row.agent_name,
            path_pattern: row.path_pattern,
            exclusive: row.exclusive,
            expires_ts: row.expires_ts,
        });
    }
    Ok(holders)
}

/// Same agent, same pattern: update in place. The reason is replaced unless the new one is
/// empty and the old one is not; the expiry never moves earlier.
fn refresh(
    db: &Db<'_>,
    row: &mut Reservation,
    req: &ReservePaths,
    expires: Timestamp,
) -> Result<Granted> {
    if !req.reason.is_empty() || row.reason.is_empty() {
        row.reason = req.reason.clone();
    }
    row.exclusive = req.exclusive;
    row.expires_ts = row.expires_ts.max(expires);
    db.refresh_reservation(row.id, row.exclusive, &row.reason, row.expires_ts)?;
    Ok(granted_of(row))
}

fn insert(
    db: &Db<'_>,
    project: &Project,
    agent_id: AgentId,
    path: &str,
    req: &ReservePaths,
    now: Timestamp,
    expires: Timestamp,
) -> Result<Reservation> {
    let id = db.insert_reservation(&NewReservation {
        project_id: project.id,
        agent_id,
        path_pattern: path,
        exclusive: req.exclusive,
        reason: &req.reason,
        created_ts: now,
        expires_ts: expires,
    })?;
    db.reservation_by_id(id)?.ok_or_else(|| Error::internal("reservation vanished after insert"))
}

fn granted_of(row: &Reservation) -> Granted {
    Granted {
        id: row.id,
        path_pattern: row.path_pattern.clone(),
        exclusive: row.exclusive,
        reason: row.reason.clone(),
        expires_ts: row.expires_ts,
    }
}

fn empty_paths() -> Error {
    Error::invalid_kind(
        "EMPTY_PATHS",
        "paths list cannot be empty. Provide at least one file path or glob pattern to \
         reserve (e.g. ['src/api/*.py']).",
    )
}
