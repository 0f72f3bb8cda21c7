//! `mailroom doctor check | repair | backups | restore` on a real data directory: problems
//! made by hand (an orphaned recipient row, an expired reservation nobody released, a lock
//! file left by a dead process, a message whose sender is gone, an index out of step) are
//! reported, repaired beside a running server after a backup, and the backup restored.

mod common;

use std::path::{Path, PathBuf};

use common::{KillOnDrop, json, ok, run, start_with, stop};
use mailroom_testkit::{ProjectCall, RegisterCall, ReserveCall, SendCall, sent_message_id};
use serde_json::Value;

const PROJECT: &str = "/work/doctor";
const OTHER: &str = "/work/doctor-other";

/// The data directory's database, as another program (the `sqlite3` shell, the reference)
/// opens it: foreign keys not enforced, which is how orphaned rows come to be.
fn database(data: &Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("open database");
    db.busy_timeout(std::time::Duration::from_secs(60)).expect("busy timeout");
    db.pragma_update(None, "foreign_keys", false).expect("foreign keys off");
    db
}

fn count(data: &Path, sql: &str) -> i64 {
    database(data).query_row(sql, [], |r| r.get(0)).expect(sql)
}

fn slug(data: &Path, project: &str) -> String {
    let sql = "SELECT slug FROM projects WHERE human_key = ?1";
    database(data).query_row(sql, [project], |r| r.get(0)).expect("slug")
}

/// The check named `name` in `doctor check --json`'s answer.
fn check<'a>(checks: &'a Value, name: &str) -> &'a Value {
    let all = checks.as_array().expect("checks");
    all.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name} in {checks}"))
}

fn backups(data: &Path) -> Vec<Value> {
    json(data, &["doctor", "backups"]).as_array().cloned().unwrap_or_default()
}

/// A lock file and the owner record of a process that no longer runs.
fn dead_lock(data: &Path, slug: &str) -> PathBuf {
    let dir = data.join("archive/projects").join(slug);
    std::fs::create_dir_all(&dir).expect("project dir");
    let lock = dir.join("left-behind.lock");
    std::fs::write(&lock, "").expect("lock");
    std::fs::write(dir.join("left-behind.lock.owner.json"), r#"{"pid": 999999999}"#)
        .expect("owner");
    lock
}

const ORPHANED: &str = "SELECT COUNT(*) FROM message_recipients WHERE agent_id = 9999";
const UNRELEASED: &str = "SELECT COUNT(*) FROM file_reservations WHERE released_ts IS NULL";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_beside_a_running_server_then_restore_the_state_before() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let env =
        [("CONTACT_ENFORCEMENT_ENABLED", "false"), ("FILE_RESERVATIONS_CLEANUP_ENABLED", "false")];
    let (server, url) = start_with(&data, &env);
    let server = KillOnDrop(Some(server));
    ProjectCall::new(PROJECT).ok_at(&url).await;
    for name in ["BlueLake", "GreenCastle"] {
        RegisterCall::new(PROJECT, name).ok_at(&url).await;
    }
    let sent = SendCall::new(PROJECT, "BlueLake", "GreenCastle", "plan").ok_at(&url).await;
    let message = sent_message_id(&sent);
    ReserveCall::new(PROJECT, "BlueLake", &["src/**"]).ok_at(&url).await;

    let clean = json(&data, &["doctor", "check"]);
    assert!(clean.as_array().expect("checks").iter().all(|c| c["status"] == "ok"), "{clean}");

    // The problems, made beside the running server.
    let db = database(&data);
    db.execute(
        "INSERT INTO message_recipients (message_id, agent_id, kind) VALUES (?1, 9999, 'to')",
        [message],
    )
    .expect("orphan");
    db.execute("UPDATE file_reservations SET expires_ts = '2020-01-01 00:00:00.000000'", [])
        .expect("expire");
    drop(db);
    let lock = dead_lock(&data, &slug(&data, PROJECT));

    let found = json(&data, &["doctor", "check", "--verbose"]);
    assert_eq!(check(&found, "locks")["status"], "warn", "{found}");
    assert!(
        check(&found, "locks")["items"][0]
            .as_str()
            .unwrap_or_default()
            .contains("left-behind.lock")
    );
    let orphans = check(&found, "orphans");
    assert!(
        orphans["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("1 recipient row(s) naming an agent"),
        "{orphans}"
    );
    assert_eq!(orphans["items"][0], format!("message {message}, agent 9999"));
    let reservations = check(&found, "reservations");
    assert!(
        reservations["items"][0].as_str().unwrap_or_default().contains("src/**"),
        "{reservations}"
    );
    let failed = run(&data, &["doctor", "check", "/work/nowhere"], "");
    assert_eq!(failed.status.code(), Some(2), "an unknown project is check's own error");

    // A dry run plans the fixes and changes nothing.
    let planned = json(&data, &["doctor", "repair", "--dry-run"]);
    let fixes = planned["fixes"].as_array().expect("fixes");
    assert_eq!(fixes.len(), 3, "{planned}");
    assert!(fixes.iter().all(|f| f["status"] == "planned"));
    assert!(lock.exists() && count(&data, ORPHANED) == 1 && count(&data, UNRELEASED) == 1);
    assert!(backups(&data).is_empty(), "a dry run backs nothing up");

    // Without a terminal and without --yes: the safe fixes only, and it says why.
    let unasked = run(&data, &["doctor", "repair"], "");
    assert!(unasked.status.success(), "{}", String::from_utf8_lossy(&unasked.stderr));
    assert!(String::from_utf8_lossy(&unasked.stderr).contains("stdin is not a terminal"));
    assert!(!lock.exists(), "the dead process's lock is removed");
    assert_eq!(count(&data, UNRELEASED), 0, "the expired reservation is released");
    assert_eq!(count(&data, ORPHANED), 1, "the deletion waits for a confirmation");
    let first = backups(&data);
    assert_eq!(first.len(), 1);

    ok(&data, &["doctor", "repair", "--yes"]);
    assert_eq!(count(&data, ORPHANED), 0);
    let healthy = json(&data, &["doctor", "check"]);
    assert!(healthy.as_array().expect("checks").iter().all(|c| c["status"] == "ok"), "{healthy}");
    let listed = backups(&data);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(
        listed
            .iter()
            .all(|b| b["reason"] == "repair" && b["database"] == true && b["archive"] == true)
    );

    // Restore: refused under the server, then the state before the first repair is back.
    let before = first[0]["path"].as_str().expect("path").to_string();
    let refused = run(&data, &["doctor", "restore", &before, "--yes"], "");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("stop it first"));
    stop(server.take());
    let dry = ok(&data, &["doctor", "restore", &before, "--dry-run"]);
    assert!(dry.contains("nothing changed") && count(&data, ORPHANED) == 0, "{dry}");
    let unconfirmed = run(&data, &["doctor", "restore", &before], "");
    assert_eq!(unconfirmed.status.code(), Some(1), "not asked on a pipe: refused");
    ok(&data, &["doctor", "restore", &before, "--yes"]);
    assert_eq!(count(&data, ORPHANED), 1, "the orphan is back");
    assert_eq!(count(&data, UNRELEASED), 1, "the reservation is unreleased again");
    let aside: Vec<String> = std::fs::read_dir(&data)
        .expect("data dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".pre-restore-"))
        .collect();
    assert!(aside.iter().any(|n| n.starts_with("mailroom.sqlite3.pre-restore-")), "{aside:?}");
    assert!(aside.iter().any(|n| n.starts_with("archive.pre-restore-")), "{aside:?}");
    let log = mailroom_testkit::git(&data.join("archive"), &["log", "--format=%s"]);
    assert!(
        log.contains("chore: initialize archive"),
        "the archive is a clone of the bundle: {log}"
    );

    // The restored data directory serves again.
    let (server, url) = start_with(&data, &env);
    let server = KillOnDrop(Some(server));
    SendCall::new(PROJECT, "GreenCastle", "BlueLake", "back").ok_at(&url).await;
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_is_checked_and_repaired_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, url) = start_with(&data, &[("CONTACT_ENFORCEMENT_ENABLED", "false")]);
    let server = KillOnDrop(Some(server));
    for project in [PROJECT, OTHER] {
        ProjectCall::new(project).ok_at(&url).await;
        for name in ["BlueLake", "GreenCastle"] {
            RegisterCall::new(project, name).ok_at(&url).await;
        }
        SendCall::new(project, "BlueLake", "GreenCastle", "hello").ok_at(&url).await;
        ReserveCall::new(project, "GreenCastle", &["docs/**"]).ok_at(&url).await;
    }
    stop(server.take());

    // Each project's BlueLake is gone, leaving a message without its sender; the search
    // index loses a row; the reservations expire unreleased.
    let db = database(&data);
    db.execute("DELETE FROM agents WHERE name = 'BlueLake'", []).expect("delete senders");
    db.execute("DELETE FROM fts_messages WHERE rowid = (SELECT MIN(id) FROM messages)", [])
        .expect("unindex");
    db.execute("UPDATE file_reservations SET expires_ts = '2020-01-01 00:00:00.000000'", [])
        .expect("expire");
    drop(db);
    let senderless = "SELECT COUNT(*) FROM messages m \
         WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = m.sender_id)";
    assert_eq!(count(&data, senderless), 2);

    let other = json(&data, &["doctor", "check", OTHER]);
    assert!(
        check(&other, "orphans")["detail"].as_str().unwrap_or_default().starts_with("1 row"),
        "{other}"
    );
    assert_eq!(check(&other, "fts")["status"], "warn", "the index is the whole database's");

    let repaired = json(&data, &["doctor", "repair", OTHER, "--yes"]);
    let statuses: Vec<_> =
        repaired["fixes"].as_array().expect("fixes").iter().map(|f| f["status"].clone()).collect();
    assert_eq!(statuses, ["done", "done", "done"], "{repaired}");
    assert_eq!(count(&data, senderless), 1, "only the other project's message is deleted");
    // Released by the data directory opened in the command (no server runs), in its project.
    assert_eq!(count(&data, UNRELEASED), 1, "only the other project's reservation is released");
    assert_eq!(check(&json(&data, &["doctor", "check"]), "fts")["status"], "ok");
    let mine = json(&data, &["doctor", "check", PROJECT]);
    assert_eq!(check(&mine, "orphans")["status"], "warn", "{mine}");
    let listed = backups(&data);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["project"], slug_of(OTHER));
}

/// The slug the reference gives an absolute path.
fn slug_of(path: &str) -> String {
    path.trim_start_matches('/').replace('/', "-")
}
