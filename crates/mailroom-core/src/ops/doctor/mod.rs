//! `mailroom doctor`: the reference's diagnostics and their repairs.
//!
//! `check` is read-only and runs beside a running server (its own read-only connection;
//! nothing locked, nothing written): stale archive locks, the database's integrity, orphaned
//! rows, the full-text index against the messages, reservations expired but not released,
//! and the write-ahead log's size, for the whole data directory or one project. `repair.rs`
//! holds the fixes `doctor repair` makes after a backup (`ops/backups.rs`).

mod repair;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use self::repair::{Fix, PlannedFix, delete_orphans, heal_locks, plan, rebuild_search_index};
use crate::archive::lock_report::{self, LockEntry};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::ProjectId;
use crate::store::db::doctor::DoctorCounts;
pub use crate::store::db::doctor::Orphan;

/// A write-ahead log larger than this is reported (a checkpoint is falling behind).
const WAL_WARN_BYTES: u64 = 256 * 1024 * 1024;

/// At most this many offending rows or locks are listed per check with `--verbose`.
const DETAIL_LIMIT: usize = 100;

/// One check's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    /// `ok`, `warn` or `error`.
    pub status: &'static str,
    pub detail: String,
    /// The offending rows or files, one a line (asked for with `--verbose`; at most
    /// [`DETAIL_LIMIT`], then how many more).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
}

impl Check {
    fn new(
        name: &'static str,
        problem: Option<(&'static str, String)>,
        fine: impl Into<String>,
    ) -> Self {
        match problem {
            Some((status, detail)) => Check { name, status, detail, items: Vec::new() },
            None => Check { name, status: "ok", detail: fine.into(), items: Vec::new() },
        }
    }

    /// Lists the offending rows or files, saying how many more there are than listed.
    fn list(&mut self, items: Vec<String>, total: usize) {
        let listed = items.len();
        self.items = items;
        if total > listed {
            self.items.push(format!("… and {} more", total - listed));
        }
    }
}

/// The project checks are limited to.
#[derive(Debug, Clone, Serialize)]
pub struct Scope {
    #[serde(skip)]
    pub project_id: ProjectId,
    pub slug: String,
    pub human_key: String,
}

impl Scope {
    /// The project named by `project` (its key or slug) in the database at `database`.
    pub fn resolve(database: &Path, project: &str) -> Result<Scope> {
        let found = crate::store::Reader::open(database)?
            .read(|db| crate::ops::resolve::project(db, project))?;
        Ok(Scope { project_id: found.id, slug: found.slug, human_key: found.human_key })
    }

    /// The project's directory in the archive.
    pub fn archive_dir(&self, storage_root: &Path) -> PathBuf {
        storage_root.join("projects").join(&self.slug)
    }
}

/// What the checks found, before it is judged: the repairs are planned from it too.
#[derive(Debug)]
pub struct Diagnosis {
    /// The lock files under the archive (or the project's directory) the lock report calls
    /// stale: their owner is dead, or they are older than the stale timeout.
    pub stale_locks: Vec<LockEntry>,
    pub locks_total: usize,
    pub counts: DoctorCounts,
    /// Bytes of write-ahead log beside the database.
    pub wal_bytes: u64,
}

/// Whether `path` is a mailroom (or reference) database: migrated, with the mail tables. A
/// command that would open a database another program owns (`DATABASE_URL` from a project's
/// settings) checks first.
pub fn is_mailroom_database(path: &Path) -> bool {
    crate::store::Reader::open(path)
        .and_then(|mut reader| reader.read(|db| db.has_mail_tables()))
        .unwrap_or(false)
}

/// Looks at the data directory's database and archive (one project's rows and directory when
/// `scope` names one; the database's integrity, index and log are always the whole's).
pub fn diagnose(database: &Path, storage_root: &Path, scope: Option<&Scope>) -> Result<Diagnosis> {
    let locks = lock_report::scan(
        &scope.map_or(storage_root.to_path_buf(), |s| s.archive_dir(storage_root)),
    );
    let locks_total = locks.summary.total;
    let stale_locks = locks.locks.into_iter().filter(|l| l.stale_suspected).collect();
    let project = scope.map(|s| s.project_id);
    let counts = crate::store::Reader::open(database)?
        .read(|db| db.doctor_counts(Timestamp::now(), project))?;
    let wal_bytes =
        std::fs::metadata(format!("{}-wal", database.display())).map(|m| m.len()).unwrap_or(0);
    Ok(Diagnosis { stale_locks, locks_total, counts, wal_bytes })
}

/// Runs every check on the data directory's database and archive; `verbose` lists the
/// offending rows and lock files.
pub fn check(
    database: &Path,
    storage_root: &Path,
    scope: Option<&Scope>,
    verbose: bool,
) -> Result<Vec<Check>> {
    let diagnosis = diagnose(database, storage_root, scope)?;
    let details = if verbose { Some(details(database, scope, &diagnosis)?) } else { None };
    let Diagnosis { stale_locks, locks_total, counts, wal_bytes } = diagnosis;
    let DoctorCounts { integrity, orphans, messages, indexed, expired_reservations: expired } =
        counts;
    let stale = stale_locks.len();
    let orphan_total: i64 = orphans.iter().sum();
    let mut checks = vec![
        Check::new(
            "locks",
            (stale > 0).then(|| {
                let of = format!("{stale} stale lock file(s) of {locks_total}");
                ("warn", format!("{of} (resource://tooling/locks lists them)"))
            }),
            format!("{locks_total} lock file(s), none stale"),
        ),
        Check::new(
            "database",
            (integrity != "ok").then(|| ("error", format!("quick_check: {integrity}"))),
            "quick_check: ok",
        ),
        Check::new(
            "orphans",
            (orphan_total > 0).then(|| ("warn", orphan_summary(&orphans))),
            "no orphaned rows",
        ),
        Check::new(
            "fts",
            (indexed != messages)
                .then(|| ("warn", format!("{indexed} indexed of {messages} messages"))),
            format!("{messages} messages, all indexed"),
        ),
        Check::new(
            "reservations",
            (expired > 0).then(|| {
                let why = "the next sweep releases them";
                ("warn", format!("{expired} expired but not released ({why})"))
            }),
            "none expired and unreleased",
        ),
        Check::new(
            "wal",
            (wal_bytes > WAL_WARN_BYTES)
                .then(|| ("warn", format!("{} MB of write-ahead log", wal_bytes / (1024 * 1024)))),
            format!("{} KB of write-ahead log", wal_bytes / 1024),
        ),
    ];
    if let Some(Details { locks, orphans: orphan_rows, expired: expired_rows }) = details {
        checks[0].list(locks, stale);
        checks[2].list(orphan_rows, usize::try_from(orphan_total).unwrap_or(0));
        checks[4].list(expired_rows, usize::try_from(expired).unwrap_or(0));
    }
    Ok(checks)
}

/// "N row(s) naming …: a recipient rows naming an agent that is gone, …".
fn orphan_summary(orphans: &[i64; 4]) -> String {
    let total: i64 = orphans.iter().sum();
    let kinds: Vec<String> = Orphan::ALL
        .iter()
        .zip(orphans)
        .filter(|(_, n)| **n > 0)
        .map(|(kind, n)| format!("{n} {}", kind.label()))
        .collect();
    format!("{total} row(s) naming an agent or message that is gone: {}", kinds.join(", "))
}

/// The lines `--verbose` adds.
struct Details {
    locks: Vec<String>,
    orphans: Vec<String>,
    expired: Vec<String>,
}

fn details(database: &Path, scope: Option<&Scope>, diagnosis: &Diagnosis) -> Result<Details> {
    let locks = diagnosis.stale_locks.iter().take(DETAIL_LIMIT).map(describe_lock).collect();
    let project = scope.map(|s| s.project_id);
    let limit = DETAIL_LIMIT as i64;
    let (orphans, expired) = crate::store::Reader::open(database)?.read(|db| {
        let mut orphans = Vec::new();
        for kind in Orphan::ALL {
            let room = limit - orphans.len() as i64;
            if room > 0 {
                orphans.extend(db.orphan_rows(kind, project, room)?);
            }
        }
        let expired = db.expired_reservation_rows(Timestamp::now(), project, limit)?;
        Ok((orphans, expired))
    })?;
    Ok(Details { locks, orphans, expired })
}

/// A stale lock and why it is stale.
fn describe_lock(lock: &LockEntry) -> String {
    let why = match (lock.owner_pid, lock.owner_alive, lock.age_seconds) {
        (Some(pid), Some(false), _) => format!("owner pid {pid} is not running"),
        (_, _, Some(age)) => format!("{age:.0} s old"),
        _ => "stale".to_string(),
    };
    format!("{} ({why})", lock.path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CoreConfig;
    use crate::ops::Mailroom;
    use crate::ops::agents::Registration;
    use crate::ops::messaging::SendMessage;
    use crate::ops::reservations::ReservePaths;

    const PROJECTS: [&str; 2] = ["/work/doctor-a", "/work/doctor-b"];

    /// Two projects, each with a message and a reservation: the configuration, and each
    /// project as a scope.
    async fn two_projects(dir: &Path) -> (CoreConfig, Vec<Scope>) {
        let mut config = CoreConfig::for_data_dir(dir);
        config.archive.enabled = false;
        config.contact_enforcement_enabled = false;
        let core = Mailroom::open(config.clone()).expect("open");
        for project in PROJECTS {
            core.ensure_project(project).await.expect("project");
            for name in ["BlueLake", "GreenCastle"] {
                let registration = Registration {
                    project_key: project.into(),
                    program: "test".into(),
                    model: "test".into(),
                    name: Some(name.into()),
                    ..Registration::default()
                };
                core.register_agent(registration).await.expect("register");
            }
            let send = SendMessage {
                project_key: project.into(),
                sender_name: "BlueLake".into(),
                to: vec!["GreenCastle".into()],
                subject: "hello".into(),
                body_md: "body".into(),
                ..SendMessage::default()
            };
            core.send_message(send).await.expect("send");
            let reserve = ReservePaths {
                project_key: project.into(),
                agent_name: "BlueLake".into(),
                paths: vec!["src/**".into()],
                ttl_seconds: 3600,
                exclusive: true,
                reason: String::new(),
            };
            core.file_reservation_paths(reserve).await.expect("reserve");
        }
        core.close();
        let scopes = PROJECTS
            .iter()
            .map(|p| Scope::resolve(&config.database_path, p).expect("scope"))
            .collect();
        (config, scopes)
    }

    /// Another program's connection: foreign keys not enforced.
    fn tamper(database: &Path, sql: &str) {
        let conn = rusqlite::Connection::open(database).expect("open");
        conn.pragma_update(None, "foreign_keys", false).expect("foreign keys off");
        conn.execute_batch(sql).expect(sql);
    }

    #[tokio::test]
    async fn doctor_finds_and_repairs_one_projects_orphans_and_the_index() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (config, scopes) = two_projects(dir.path()).await;
        let (database, root) = (&config.database_path, &config.storage_root);
        let a = scopes[0].project_id;
        tamper(
            database,
            &format!(
                "INSERT INTO message_recipients (message_id, agent_id, kind) \
                 SELECT id, 9999, 'to' FROM messages WHERE project_id = {a};
                 UPDATE file_reservations SET expires_ts = '2020-01-01 00:00:00.000000' \
                 WHERE project_id = {a};
                 DELETE FROM fts_messages WHERE rowid = (SELECT MAX(id) FROM messages);"
            ),
        );
        let found = diagnose(database, root, Some(&scopes[0])).expect("diagnose");
        assert_eq!(found.counts.orphans, [1, 0, 0, 0]);
        assert_eq!(found.counts.expired_reservations, 1);
        let other = diagnose(database, root, Some(&scopes[1])).expect("diagnose");
        assert_eq!((other.counts.orphans, other.counts.expired_reservations), ([0; 4], 0));
        assert_eq!(other.counts.indexed + 1, other.counts.messages, "the index is the whole's");

        let fixes: Vec<Fix> = plan(&found).into_iter().map(|f| f.fix).collect();
        let expected = [
            Fix::ReleaseExpired,
            Fix::DeleteOrphans(Orphan::RecipientWithoutAgent),
            Fix::RebuildIndex,
        ];
        assert_eq!(fixes, expected);
        assert!(!fixes[0].needs_confirmation() && fixes[1].needs_confirmation());
        let checks = check(database, root, Some(&scopes[0]), true).expect("check");
        let orphans = checks.iter().find(|c| c.name == "orphans").expect("orphans");
        assert_eq!(orphans.items.len(), 1, "{orphans:?}");
        assert!(orphans.items[0].ends_with(", agent 9999"), "{orphans:?}");

        assert_eq!(
            delete_orphans(database, false, Orphan::RecipientWithoutAgent, Some(&scopes[1]))
                .expect("b"),
            0
        );
        assert_eq!(
            delete_orphans(database, false, Orphan::RecipientWithoutAgent, Some(&scopes[0]))
                .expect("a"),
            1
        );
        assert_eq!(rebuild_search_index(database).expect("rebuild"), 2);
        let after = diagnose(database, root, None).expect("diagnose");
        assert_eq!(after.counts.orphans, [0; 4]);
        assert_eq!(after.counts.indexed, after.counts.messages);
    }
}
