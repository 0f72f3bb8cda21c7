//! The reservations in force per project, kept in memory, so that a request in a
//! busy project neither scans nor recompiles every reservation: a thousand of them cost more
//! than the rest of `file_reservation_paths` (the target, p99 ≤ 1 ms with 1,000 reservations
//! in force, and the measurements: docs/benchmarks-history.md §12).
//!
//! The cache must always be the database's truth, so it is trusted only by stamp: each set
//! carries the [`ReservationStamp`] of the rows it mirrors, and a write job compares it with
//! the stamp its transaction reads; any other change to the project's rows (an expiry sweep
//! on delivery, force release, lifecycle purges and deletes, another process) moves the stamp,
//! and the job loads the set from the database instead. Jobs that know what they change
//! (reserve, renew, release, the sweep) record it, and when the job ends
//! [`ActiveReservations::finish`] applies the record to the set it started from, provided the
//! stamp moved by exactly one change per recorded change. Doubt drops the set; the next
//! request loads it again.
//!
//! The set is kept at once, before the commit: the next job of the same write batch sees the
//! uncommitted rows, and finds the set at their stamp. Should the job or its batch roll back,
//! the rows return to an earlier stamp, and the kept set's stamp never recurs (stamps carry
//! ticks no rollback rewinds), so it is simply never matched again.
//!
//! A set holds the project's unreleased rows whose expiry had not passed when they entered it;
//! which are in force is decided at each use, against the job's `now`, so expiry by time needs
//! no change. Rows whose stored expiry is not in the canonical text form (SQL compares the
//! text) are never cached.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::Result;
use crate::model::path_pattern::ReservationPattern;
use crate::model::time::Timestamp;
use crate::records::ReservationId;
use crate::records::{AgentId, ProjectId};
use crate::store::Db;
use crate::store::db::reservations::ReservationStamp;

/// The cached sets, by project id. One per [`crate::Mailroom`].
pub(crate) struct ActiveReservations {
    /// Off: every job loads from the database (the SQL-only reference in tests).
    enabled: bool,
    projects: Mutex<HashMap<ProjectId, Arc<ActiveSet>>>,
    /// Sets loaded from the database (for tests: how often the cache missed).
    #[cfg(test)]
    loads: std::sync::atomic::AtomicUsize,
}

/// A project's reservations, by id, at a stamp.
#[derive(Clone)]
pub(crate) struct ActiveSet {
    stamp: ReservationStamp,
    entries: Vec<Entry>,
}

/// One reservation, as the conflict check needs it.
#[derive(Clone)]
pub(crate) struct Entry {
    pub id: ReservationId,
    pub agent_id: AgentId,
    pub exclusive: bool,
    pub expires_ts: Timestamp,
    pub pattern: Arc<ReservationPattern>,
}

impl Entry {
    fn in_force(&self, now: Timestamp) -> bool {
        self.expires_ts > now
    }
}

/// A change a job made to one reservation row.
#[derive(Clone)]
pub(crate) enum Change {
    /// Inserted.
    Added(Entry),
    /// Released (or otherwise out of force for good).
    Released(ReservationId),
    /// Refreshed or renewed: new exclusivity and expiry.
    Updated { id: ReservationId, exclusive: bool, expires_ts: Timestamp },
}

/// A write job's view of one project's reservations: where they stood when it began, the set
/// (when it asked for it) and the changes it records.
pub(crate) struct View {
    project_id: ProjectId,
    base: ReservationStamp,
    set: Option<Arc<ActiveSet>>,
    /// Whether `set` was loaded by this job (and may be kept when it ends).
    loaded: bool,
    changes: Vec<Change>,
}

impl ActiveReservations {
    pub(crate) fn new() -> Self {
        Self {
            enabled: true,
            projects: Mutex::default(),
            #[cfg(test)]
            loads: Default::default(),
        }
    }

    /// A cache that never keeps anything: each job reads the database.
    #[cfg(test)]
    pub(crate) fn disabled() -> Self {
        Self { enabled: false, projects: Mutex::default(), loads: Default::default() }
    }

    /// The map; a poisoned lock is taken over (it only ever holds finished sets).
    fn projects(&self) -> MutexGuard<'_, HashMap<ProjectId, Arc<ActiveSet>>> {
        self.projects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Begins a job's view of the project: reads its stamp. Call before the job changes any
    /// of the project's reservations.
    pub(crate) fn view(&self, db: &Db<'_>, project_id: ProjectId) -> Result<View> {
        Ok(View {
            project_id,
            base: db.reservation_stamp(project_id)?,
            set: None,
            loaded: false,
            changes: Vec::new(),
        })
    }

    /// The project's set as the view's transaction sees it: the cached one if its stamp is the
    /// view's, else loaded from the database (reusing compiled patterns of the stale set).
    /// Call before recording changes.
    pub(crate) fn load(&self, db: &Db<'_>, view: &mut View, now: Timestamp) -> Result<()> {
        let cached = self.projects().get(&view.project_id).map(Arc::clone);
        if let Some(set) = cached.as_ref().filter(|set| set.stamp == view.base && self.enabled) {
            view.set = Some(Arc::clone(set));
            return Ok(());
        }
        #[cfg(test)]
        self.loads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut entries = Vec::new();
        let mut cacheable = true;
        db.scan_active_reservations(view.project_id, now, |row| {
            let (expires_ts, canonical) = match Timestamp::parse_db(row.expires_ts) {
                Some(at) => (at, at.to_db() == row.expires_ts),
                None => (Timestamp::from_micros(i64::MAX), false),
            };
            // SQL found the row in force at `now`; a non-canonical text may not order like
            // its time, so the row counts as in force for this job and the set is not kept.
            let expires_ts = if canonical { expires_ts } else { Timestamp::from_micros(i64::MAX) };
            cacheable &= canonical;
            let reused = cached.as_ref().and_then(|old| old.pattern_of(row.id, row.pattern));
            entries.push(Entry {
                id: row.id,
                agent_id: row.agent_id,
                exclusive: row.exclusive,
                expires_ts,
                pattern: reused.unwrap_or_else(|| Arc::new(ReservationPattern::new(row.pattern))),
            });
        })?;
        // The scan comes in index order.
        entries.sort_unstable_by_key(|entry| entry.id);
        view.set = Some(Arc::new(ActiveSet { stamp: view.base, entries }));
        view.loaded = cacheable && self.enabled;
        Ok(())
    }

    /// Ends the job's part, its changes all made: reads the stamp they led to and brings the
    /// cached set up to it, or drops the set on doubt.
    pub(crate) fn finish(&self, db: &Db<'_>, view: View) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let after = db.reservation_stamp(view.project_id)?;
        let View { project_id, base, set, loaded, changes } = view;
        // A set taken from the cache is dropped here, so the cached one is not shared while
        // it is updated (no copy).
        let loaded = set.filter(|_| loaded);
        let mut projects = self.projects();
        let start = match loaded {
            Some(set) => set,
            None => match projects.remove(&project_id) {
                Some(set) if set.stamp == base => set,
                // Another state's set, or nothing cached: keep it.
                Some(other) => {
                    projects.insert(project_id, other);
                    return Ok(());
                }
                None => return Ok(()),
            },
        };
        if !after.follows(base, changes.len()) {
            // The rows changed in ways the job did not record.
            return Ok(());
        }
        let mut set = start;
        let updated = Arc::make_mut(&mut set);
        if changes.iter().all(|change| updated.apply(change)) {
            updated.stamp = after;
            projects.insert(project_id, set);
        }
        Ok(())
    }

    /// How many sets were loaded from the database (for tests).
    #[cfg(test)]
    pub(crate) fn loads(&self) -> usize {
        self.loads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The cached set of a project, if any, with its stamp (for tests).
    #[cfg(test)]
    pub(crate) fn cached(&self, project_id: ProjectId) -> Option<Arc<ActiveSet>> {
        self.projects().get(&project_id).map(Arc::clone)
    }
}

impl ActiveSet {
    /// The compiled pattern of reservation `id` if its text is `pattern`.
    fn pattern_of(&self, id: ReservationId, pattern: &str) -> Option<Arc<ReservationPattern>> {
        let at = self.entries.binary_search_by_key(&id, |entry| entry.id).ok()?;
        let found = &self.entries[at].pattern;
        (found.as_str() == pattern).then(|| Arc::clone(found))
    }

    /// Applies one change; false if it does not fit (the set is then unusable).
    fn apply(&mut self, change: &Change) -> bool {
        let find =
            |entries: &[Entry], id: ReservationId| entries.binary_search_by_key(&id, |e| e.id);
        match change {
            Change::Added(entry) => match find(&self.entries, entry.id) {
                Ok(_) => false,
                Err(at) => {
                    self.entries.insert(at, entry.clone());
                    true
                }
            },
            // A released row may have left the set already by expiring before it was loaded.
            Change::Released(id) => {
                if let Ok(at) = find(&self.entries, *id) {
                    self.entries.remove(at);
                }
                true
            }
            Change::Updated { id, exclusive, expires_ts } => match find(&self.entries, *id) {
                Ok(at) => {
                    let entry = &mut self.entries[at];
                    entry.exclusive = *exclusive;
                    entry.expires_ts = *expires_ts;
                    true
                }
                Err(_) => false,
            },
        }
    }

    /// The stamp it mirrors (for tests).
    #[cfg(test)]
    pub(crate) fn stamp(&self) -> ReservationStamp {
        self.stamp
    }

    /// The reservations in force at `now`, by id (for tests).
    #[cfg(test)]
    pub(crate) fn in_force_ids(&self, now: Timestamp) -> Vec<ReservationId> {
        self.entries.iter().filter(|e| e.in_force(now)).map(|e| e.id).collect()
    }
}

impl View {
    /// The project it views.
    pub(crate) fn project_id(&self) -> ProjectId {
        self.project_id
    }

    /// The project's reservations in force at `now` as this job sees them, by id: the
    /// loaded set less what the job released (its own additions are not included).
    pub(crate) fn in_force(&self, now: Timestamp) -> impl Iterator<Item = &Entry> {
        let entries = self.set.as_ref().map_or(&[][..], |set| set.entries.as_slice());
        let released = |id: ReservationId| {
            self.changes.iter().any(|change| matches!(change, Change::Released(r) if *r == id))
        };
        entries.iter().filter(move |e| e.in_force(now) && !released(e.id))
    }

    /// Records a change the job made to one of the project's rows.
    pub(crate) fn record(&mut self, change: Change) {
        self.changes.push(change);
    }
}
