//! `mailroom import`: a mailbox the real Python reference left (tests/reference-mailbox, made
//! by scripts/reference-mailbox after a session with every kind of record) comes over with
//! nothing lost, copied or in place; every table is compared row by row, the archive's
//! history and files, and a server then serves it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{KillOnDrop, mailroom, start};
use mailroom_testkit::tool_at;
use rusqlite::Connection;
use serde_json::{Value, json};

const ALPHA: &str = "/work/alpha-service";

fn import(reference: &Path, extra: &[&str]) -> Output {
    mailroom()
        .arg("import")
        .arg(reference)
        .arg("--storage-root")
        .arg(reference.join("archive"))
        .args(extra)
        .arg("--json")
        .output()
        .expect("run mailroom import")
}

fn imported(output: &Output) -> Value {
    assert!(output.status.success(), "import: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON report")
}

/// Every row of `table` with every column the reference has, in id order, as text.
fn rows(database: &Path, table: &str, columns: &[String]) -> Vec<Vec<String>> {
    let conn = Connection::open(database).expect("open");
    let list = columns.iter().map(|c| format!("quote(\"{c}\")")).collect::<Vec<_>>().join(", ");
    let mut statement =
        conn.prepare(&format!("SELECT {list} FROM \"{table}\" ORDER BY rowid")).expect("select");
    statement
        .query_map([], |row| (0..columns.len()).map(|i| row.get::<_, String>(i)).collect())
        .expect("rows")
        .collect::<rusqlite::Result<_>>()
        .expect("read")
}

fn columns(database: &Path, table: &str) -> Vec<String> {
    let conn = Connection::open(database).expect("open");
    let mut statement = conn.prepare(&format!("PRAGMA table_info(\"{table}\")")).expect("pragma");
    statement.query_map([], |r| r.get(1)).expect("columns").collect::<Result<_, _>>().expect("read")
}

/// Every table of the reference's database is in mailroom's, row for row, value for value.
fn assert_same_tables(reference: &Path, database: &Path) {
    let conn = Connection::open(reference).expect("open");
    let mut statement = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND name NOT LIKE 'fts_messages%' ORDER BY name",
        )
        .expect("tables");
    let tables: Vec<String> = statement
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(tables.len(), 11, "every table of the reference's schema: {tables:?}");
    let mut total = 0;
    for table in &tables {
        let columns = columns(reference, table);
        assert!(!columns.is_empty(), "the fixture has {table}");
        let theirs = rows(reference, table, &columns);
        let ours = rows(database, table, &columns);
        assert_eq!(ours, theirs, "table {table}");
        total += theirs.len();
    }
    assert!(total > 40, "the fixture holds every kind of record ({total} rows)");
}

fn git(root: &Path, args: &[&str]) -> String {
    let output =
        std::process::Command::new("git").arg("-C").arg(root).args(args).output().expect("git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The archive keeps the reference's history (its HEAD is the import commit's parent) and
/// every one of its files, committed or not.
fn assert_same_archive(reference_root: &Path, root: &Path) {
    let reference_head = git(reference_root, &["rev-parse", "HEAD"]);
    let log = git(reference_root, &["log", "--format=%H"]);
    assert_eq!(git(root, &["rev-parse", "HEAD~1"]), reference_head, "history kept");
    assert_eq!(git(root, &["log", "--skip=1", "--format=%H"]), log, "every commit");
    let added = git(root, &["diff", "--name-only", "HEAD~1", "HEAD"]);
    assert!(
        added.lines().all(|p| p.contains("/attachments/_manifests/") || p.contains("/_audit/")),
        "the import commit adds only what the reference leaves uncommitted: {added}"
    );
    for file in git(reference_root, &["ls-files", "--others", "--cached"]).lines() {
        if file == "server.lock" || file == "server.pid" {
            continue;
        }
        let theirs = std::fs::read(reference_root.join(file)).expect("reference file");
        let ours = std::fs::read(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(ours == theirs, "{file} differs");
    }
    assert_eq!(git(root, &["status", "--porcelain"]), "", "nothing left uncommitted");
}

fn verify(env: &[(&str, &Path)], data: &Path) {
    let output = mailroom()
        .args(["archive", "verify", "--data-dir"])
        .arg(data)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .expect("verify");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "archive verify: {stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_mailbox_comes_over_whole_and_is_served() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reference = common::unpack_reference_mailbox(dir.path());
    let data = dir.path().join("data");
    let report = imported(&import(&reference, &["--data-dir", data.to_str().expect("utf-8")]));
    assert_eq!(report["archive_differences"], json!([]), "{report}");
    assert_eq!(report["absent_tables"], json!([]));
    assert_eq!(report["left_behind"], json!([]));
    assert!(report["archive_commit"].is_string(), "{report}");

    let database = data.join("mailroom.sqlite3");
    assert_same_tables(&reference.join("storage.sqlite3"), &database);
    assert_same_archive(&reference.join("archive"), &data.join("archive"));
    verify(&[], &data);

    // Importing again lands nowhere: the data directory holds a mailbox now.
    let again = import(&reference, &["--data-dir", data.to_str().expect("utf-8")]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a mailbox"));
    assert_same_tables(&reference.join("storage.sqlite3"), &database);

    let (server, url) = start(&data);
    let server = KillOnDrop(Some(server));
    let inbox = tool_at(
        &url,
        "fetch_inbox",
        json!({"project_key": ALPHA, "agent_name": "GreenCastle", "include_bodies": true}),
    )
    .await;
    let plan = inbox
        .as_array()
        .and_then(|m| m.iter().find(|m| m["subject"] == "Plan for the v2 API"))
        .unwrap_or_else(|| panic!("the plan in GreenCastle's inbox: {inbox}"));
    assert_eq!(plan["topic"], "api-v2");
    assert_eq!(plan["attachments"][0]["media_type"], "image/webp");
    let found =
        tool_at(&url, "search_messages", json!({"project_key": ALPHA, "query": "migrations"}))
            .await;
    assert!(found.to_string().contains("Re: Plan for the v2 API"), "indexed: {found}");
    let windows = tool_at(&url, "list_window_identities", json!({"project_key": ALPHA})).await;
    assert_eq!(windows["count"], 1, "{windows}");
    let contacts =
        tool_at(&url, "list_contacts", json!({"project_key": ALPHA, "agent_name": "BlueLake"}))
            .await;
    assert!(contacts.to_string().contains("\"approved\""), "{contacts}");
    // New mail continues the reference's ids and reaches the archive.
    let sent = tool_at(
        &url,
        "send_message",
        json!({"project_key": ALPHA, "sender_name": "BlueLake", "to": ["GreenCastle"],
               "subject": "After the move", "body_md": "Still here."}),
    )
    .await;
    let id = sent["deliveries"][0]["payload"]["id"].as_i64().expect("id");
    let max: i64 = Connection::open(reference.join("storage.sqlite3"))
        .expect("open")
        .query_row("SELECT MAX(id) FROM messages", [], |r| r.get(0))
        .expect("max");
    assert_eq!(id, max + 1);
    common::stop(server.take());
    verify(&[], &data);
}

#[test]
fn in_place_the_database_is_converted_and_the_original_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reference = common::unpack_reference_mailbox(dir.path());
    let pristine = dir.path().join("pristine");
    std::fs::create_dir_all(&pristine).expect("mkdir");
    let original = reference.join("storage.sqlite3");
    std::fs::copy(&original, pristine.join("storage.sqlite3")).expect("copy");
    let before = git(&reference.join("archive"), &["rev-parse", "HEAD"]);

    let report = imported(&import(&reference, &["--in-place"]));
    assert_eq!(report["in_place"], true);
    assert_eq!(report["archive_differences"], json!([]), "{report}");
    let kept = PathBuf::from(report["moved_aside"][0].as_str().expect("the original"));
    assert_eq!(
        std::fs::read(&kept).expect("kept"),
        std::fs::read(pristine.join("storage.sqlite3")).expect("read")
    );
    let version: i64 = Connection::open(&original)
        .expect("open")
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert!(version > 0, "a mailroom database now");
    assert_same_tables(&pristine.join("storage.sqlite3"), &original);
    assert_eq!(git(&reference.join("archive"), &["rev-parse", "HEAD~1"]), before);

    // mailroom runs on it where it is.
    let data = dir.path().join("data");
    verify(
        &[
            ("DATABASE_URL", &PathBuf::from(format!("sqlite:///{}", original.display()))),
            ("STORAGE_ROOT", &reference.join("archive")),
        ],
        &data,
    );

    // Twice is refused: it is mailroom's now.
    let again = import(&reference, &["--in-place"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("mailroom database already"));
}

#[test]
fn a_running_reference_is_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let reference = common::unpack_reference_mailbox(dir.path());
    // The reference holds its server.lock while it serves.
    let lock = std::fs::File::create(reference.join("archive/server.lock")).expect("lock file");
    lock.try_lock().expect("lock");
    std::fs::write(reference.join("archive/server.pid"), "4242").expect("pid");
    let data = dir.path().join("data");
    let refused = import(&reference, &["--data-dir", data.to_str().expect("utf-8")]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("running") && stderr.contains("4242"), "{stderr}");
    assert!(!data.join("mailroom.sqlite3").exists() && !data.join("archive").exists());
    let original = std::fs::read(reference.join("storage.sqlite3")).expect("the database");
    let in_place = import(&reference, &["--in-place"]);
    assert!(!in_place.status.success());
    let after = std::fs::read(reference.join("storage.sqlite3")).expect("the database");
    assert!(after == original, "the reference's database is untouched");
    let beside: Vec<String> = std::fs::read_dir(&reference)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("storage.sqlite3."))
        .collect();
    assert!(beside.is_empty(), "nothing left beside it: {beside:?}");
    drop(lock);
}
