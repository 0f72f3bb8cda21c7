//! `mailroom doctor check`: the reference's diagnostics, read-only and beside a running server
//! (its own read-only connection; nothing locked, nothing written): stale archive locks, the
//! database's integrity, orphaned rows, the full-text index against the messages, reservations
//! expired but not released, and the write-ahead log's size.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::store::db::doctor::DoctorCounts;

/// A write-ahead log larger than this is reported (a checkpoint is falling behind).
const WAL_WARN_BYTES: u64 = 256 * 1024 * 1024;

/// One check's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    /// `ok`, `warn` or `error`.
    pub status: &'static str,
    pub detail: String,
}

impl Check {
    fn new(
        name: &'static str,
        problem: Option<(&'static str, String)>,
        fine: impl Into<String>,
    ) -> Self {
        match problem {
            Some((status, detail)) => Check { name, status, detail },
            None => Check { name, status: "ok", detail: fine.into() },
        }
    }
}

/// Whether `path` is a mailroom (or reference) database: migrated, with the mail tables. A
/// command that would open a database another program owns (`DATABASE_URL` from a project's
/// settings) checks first.
pub fn is_mailroom_database(path: &Path) -> bool {
    crate::store::Reader::open(path)
        .and_then(|mut reader| reader.read(|db| db.has_mail_tables()))
        .unwrap_or(false)
}

/// Runs every check on the data directory's database and archive.
pub fn check(database: &Path, storage_root: &Path) -> Result<Vec<Check>> {
    let locks = crate::archive::lock_report::scan(storage_root);
    let stale = locks.summary.stale;
    let mut checks = vec![Check::new(
        "locks",
        (stale > 0).then(|| {
            (
                "warn",
                format!(
                    "{stale} stale lock file(s) of {} (resource://tooling/locks lists them)",
                    locks.summary.total
                ),
            )
        }),
        format!("{} lock file(s), none stale", locks.summary.total),
    )];
    let counts =
        crate::store::Reader::open(database)?.read(|db| db.doctor_counts(Timestamp::now()))?;
    let DoctorCounts { integrity, orphans, messages, indexed, expired_reservations: expired } =
        counts;
    checks.push(Check::new(
        "database",
        (integrity != "ok").then(|| ("error", format!("quick_check: {integrity}"))),
        "quick_check: ok",
    ));
    checks.push(Check::new(
        "orphans",
        (orphans > 0)
            .then(|| ("warn", format!("{orphans} row(s) naming an agent or message that is gone"))),
        "no orphaned rows",
    ));
    checks.push(Check::new(
        "fts",
        (indexed != messages)
            .then(|| ("warn", format!("{indexed} indexed of {messages} messages"))),
        format!("{messages} messages, all indexed"),
    ));
    checks.push(Check::new(
        "reservations",
        (expired > 0).then(|| {
            ("warn", format!("{expired} expired but not released (the next sweep releases them)"))
        }),
        "none expired and unreleased",
    ));
    let wal =
        std::fs::metadata(format!("{}-wal", database.display())).map(|m| m.len()).unwrap_or(0);
    checks.push(Check::new(
        "wal",
        (wal > WAL_WARN_BYTES)
            .then(|| ("warn", format!("{} MB of write-ahead log", wal / (1024 * 1024)))),
        format!("{} KB of write-ahead log", wal / 1024),
    ));
    Ok(checks)
}
