//! The lock files under the storage root, as `resource://tooling/locks` reports them
//! (docs/compat/resources.md §2.5): reference-style `*.lock` files that carry owner metadata
//! (`<name>.owner.json`) or are named `.archive.lock`.
//!
//! Mailroom's own ownership lock (`archive.lock` at the root) is held for the server's whole
//! life and says nothing about contention, so it is left out; Git's metadata-less `*.lock`
//! files inside `.git` are left out too, as in the reference.

use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use super::locks::{UNOWNED_LOCK_STALE_AFTER, process_alive};

/// A lock counts as stale after this long even when its owner lives (the reference's rule,
/// the same age after which start-up heals an unowned lock).
pub const STALE_TIMEOUT_SECONDS: f64 = UNOWNED_LOCK_STALE_AFTER.as_secs_f64();

/// One lock file.
#[derive(Debug, Serialize)]
pub struct LockEntry {
    pub path: String,
    pub metadata_path: Option<String>,
    pub status: &'static str,
    pub metadata_present: bool,
    pub category: &'static str,
    pub size: u64,
    pub modified_ts: Option<f64>,
    pub metadata: Value,
    pub owner_pid: Option<u32>,
    pub owner_alive: Option<bool>,
    pub created_ts: Option<f64>,
    pub age_seconds: Option<f64>,
    pub stale_timeout_seconds: f64,
    pub stale_suspected: bool,
}

/// Counts over the listed locks.
#[derive(Debug, Default, Serialize)]
pub struct LockSummary {
    pub total: usize,
    pub active: usize,
    pub stale: usize,
    pub metadata_missing: usize,
}

/// The report.
#[derive(Debug, Serialize)]
pub struct LockReport {
    pub locks: Vec<LockEntry>,
    pub summary: LockSummary,
}

/// Scans `root` recursively (blocking file-system work).
pub fn scan(root: &Path) -> LockReport {
    let mut locks = Vec::new();
    super::locks::walk_lock_files(root, &mut |path, name| {
        if !name.ends_with(".lock") {
            return;
        }
        let owner = path.with_file_name(format!("{name}.owner.json"));
        let metadata_present = owner.exists();
        if metadata_present || name == ".archive.lock" {
            locks.push(entry_for(path, &owner, name, metadata_present));
        }
    });
    locks.sort_by(|a, b| a.path.cmp(&b.path));
    let mut summary = LockSummary { total: locks.len(), ..LockSummary::default() };
    for lock in &locks {
        if lock.stale_suspected {
            summary.stale += 1;
        } else if lock.owner_alive == Some(true) {
            summary.active += 1;
        }
        if !lock.metadata_present {
            summary.metadata_missing += 1;
        }
    }
    LockReport { locks, summary }
}

fn entry_for(path: &Path, owner: &Path, name: &str, metadata_present: bool) -> LockEntry {
    let file = fs::metadata(path).ok();
    let modified_ts = file.as_ref().and_then(|m| m.modified().ok()).and_then(epoch_seconds);
    let metadata: Value = fs::read_to_string(owner)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Object(serde_json::Map::new()));
    let owner_pid = metadata.get("pid").and_then(Value::as_u64).and_then(|p| p.try_into().ok());
    let owner_alive = owner_pid.map(process_alive);
    let created_ts = metadata.get("created_ts").and_then(Value::as_f64).or(modified_ts);
    let now = epoch_seconds(SystemTime::now());
    let age_seconds = created_ts.zip(now).map(|(created, now)| (now - created).max(0.0));
    let stale_suspected =
        owner_alive == Some(false) || age_seconds.is_some_and(|age| age >= STALE_TIMEOUT_SECONDS);
    LockEntry {
        path: path.display().to_string(),
        metadata_path: metadata_present.then(|| owner.display().to_string()),
        status: "held",
        metadata_present,
        category: if name == ".archive.lock" { "archive" } else { "custom" },
        size: file.map_or(0, |m| m.len()),
        modified_ts,
        metadata,
        owner_pid,
        owner_alive,
        created_ts,
        age_seconds,
        stale_timeout_seconds: STALE_TIMEOUT_SECONDS,
        stale_suspected,
    }
}

fn epoch_seconds(time: SystemTime) -> Option<f64> {
    time.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::locks::OWNER_LOCK;

    #[test]
    fn reports_reference_locks_and_skips_the_owner_lock_and_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join(OWNER_LOCK), "").expect("owner lock");
        fs::create_dir_all(root.join(".git")).expect("git dir");
        fs::write(root.join(".git/index.lock"), "").expect("git lock");
        fs::create_dir_all(root.join("projects/p")).expect("project dir");
        fs::write(root.join("projects/p/.archive.lock"), "").expect("archive lock");
        fs::write(root.join("projects/p/x.lock"), "").expect("custom lock");
        fs::write(root.join("projects/p/x.lock.owner.json"), r#"{"pid": 999999999}"#)
            .expect("owner metadata");
        fs::write(root.join("projects/p/bare.lock"), "").expect("bare lock");
        let report = scan(root);
        let names: Vec<&str> =
            report.locks.iter().map(|l| l.path.rsplit('/').next().unwrap_or("")).collect();
        assert_eq!(names, [".archive.lock", "x.lock"]);
        assert_eq!(report.locks[0].category, "archive");
        assert!(!report.locks[0].metadata_present);
        assert_eq!(report.locks[1].owner_pid, Some(999999999));
        assert!(report.locks[1].stale_suspected, "a dead owner makes the lock stale");
        assert_eq!(report.summary.total, 2);
        assert_eq!(report.summary.stale, 1);
        assert_eq!(report.summary.metadata_missing, 1);
    }
}
