//! Saved states: `archive save`, `archive list`, `archive restore` and
//! `clear-and-reset-everything`, run as the built binary on data directories filled by a real
//! server.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use common::{KillOnDrop, run_on, start_with, stop};
use mailroom_testkit::{InboxCall, ProjectCall, RegisterCall, SendCall, git};
use serde_json::Value;

const ALPHA: &str = "/work/alpha";
const BETA: &str = "/work/beta";
const ENV: [(&str, &str); 1] = [("CONTACT_ENFORCEMENT_ENABLED", "false")];

/// Runs a command that must succeed with `--json`; its JSON.
fn json(data: &Path, args: &[&str]) -> Value {
    let output = run_on(data, args, &["--json"], "");
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// Runs a command that must fail with exit code 1; its stderr.
fn refused(data: &Path, args: &[&str], stdin: &str) -> String {
    let output = run_on(data, args, &[], stdin);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{args:?} should fail: {stderr}");
    stderr
}

/// A server on `data` with the agents BlueLake and GreenCastle in ALPHA and RedStone in BETA.
async fn server_on(data: &Path) -> (KillOnDrop, String) {
    let (server, url) = start_with(data, &ENV);
    for (project, agent) in [(ALPHA, "BlueLake"), (ALPHA, "GreenCastle"), (BETA, "RedStone")] {
        ProjectCall::new(project).ok_at(&url).await;
        RegisterCall::new(project, agent).ok_at(&url).await;
    }
    (KillOnDrop(Some(server)), url)
}

/// A data directory under `dir` filled by a server that is stopped again: the agents of
/// [`server_on`] and one message, `subject`, from BlueLake to GreenCastle. The data directory,
/// its database and its archive.
async fn data_with_mail(dir: &Path, subject: &str) -> (PathBuf, PathBuf, PathBuf) {
    let data = dir.join("data");
    let (server, url) = server_on(&data).await;
    SendCall::new(ALPHA, "BlueLake", "GreenCastle", subject).ok_at(&url).await;
    stop(server.take());
    let (database, archive) = (data.join("mailroom.sqlite3"), data.join("archive"));
    (data, database, archive)
}

/// The messages of the data directory's database: (id, subject), in id order.
fn messages(database: &Path) -> Vec<(i64, String)> {
    let db = rusqlite::Connection::open(database).expect("open the database");
    let mut stmt = db.prepare("SELECT id, subject FROM messages ORDER BY id").expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn head(archive: &Path) -> String {
    git(archive, &["rev-parse", "HEAD"]).trim().to_owned()
}

fn log(archive: &Path) -> String {
    git(archive, &["log", "--format=%H %s"])
}

/// The entries of a state's ZIP file.
fn entries(path: &Path) -> Vec<String> {
    let zip = zip::ZipArchive::new(std::fs::File::open(path).expect("open")).expect("zip");
    zip.file_names().map(|name| name.expect("entry name").into_owned()).collect()
}

/// The files of `dir` whose names start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_state_comes_back_whole_and_serves_its_mail() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (data, database, archive) = data_with_mail(dir.path(), "before the save").await;
    let (saved_head, saved_log, saved_rows) = (head(&archive), log(&archive), messages(&database));

    let saved = json(&data, &["archive", "save", "--label", "first state"]);
    let path = PathBuf::from(saved["path"].as_str().expect("path"));
    assert!(path.starts_with(data.join("archived_mailbox_states")), "{path:?}");
    let metadata = &saved["metadata"];
    assert_eq!(metadata["version"], 1);
    assert_eq!(metadata["storage"]["git_head"], saved_head.as_str());
    assert_eq!(metadata["database"]["snapshot"], "snapshot/mailbox.sqlite3");
    assert_eq!(metadata["scrub_preset"], "archive");
    assert_eq!(metadata["projects_removed"], 0);
    assert_eq!(metadata["projects_included"].as_array().map(Vec::len), Some(2));
    let names = entries(&path);
    assert!(names.contains(&"metadata.json".to_owned()), "{names:?}");
    assert!(names.contains(&"storage_repo/.git/HEAD".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".lock") || n.ends_with(".owner.json")), "{names:?}");

    // More mail, and a second state saved while the server runs.
    let (server, url) = server_on(&data).await;
    SendCall::new(ALPHA, "GreenCastle", "BlueLake", "after the save").ok_at(&url).await;
    let live = json(&data, &["archive", "save"]);
    let notes = live["metadata"]["notes"].to_string();
    assert!(notes.contains("saved while a server ran"), "{notes}");
    stop(server.take());
    assert_eq!(messages(&database).len(), 2);
    assert_ne!(head(&archive), saved_head);

    let listed = json(&data, &["archive", "list"]);
    let files: Vec<&str> =
        listed.as_array().expect("list").iter().filter_map(|s| s["file"].as_str()).collect();
    assert_eq!(files.len(), 2, "{listed}");
    assert_eq!(listed[1]["path"], path.to_str().expect("UTF-8"), "newest first");
    assert_eq!(listed[1]["label"], "first state");
    assert_eq!(json(&data, &["archive", "list", "--limit", "1"]).as_array().map(Vec::len), Some(1));

    let file_name = path.file_name().expect("name").to_str().expect("UTF-8");
    let dry = json(&data, &["archive", "restore", file_name, "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(messages(&database).len(), 2, "a dry run changes nothing");
    let restored = json(&data, &["archive", "restore", file_name, "--force"]);
    assert_eq!(messages(&database), saved_rows, "exactly the saved rows");
    assert_eq!(head(&archive), saved_head);
    assert_eq!(log(&archive), saved_log);
    let aside = PathBuf::from(restored["database"]["moved_aside_to"].as_str().expect("aside"));
    assert_eq!(messages(&aside).len(), 2, "the database moved aside keeps the later mail");
    let archive_aside = restored["archive"]["moved_aside_to"].as_str().expect("archive aside");
    assert!(Path::new(archive_aside).join(".git").is_dir());

    let verified = run_on(&data, &["archive", "verify"], &[], "");
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let (server, url) = start_with(&data, &ENV);
    let server = KillOnDrop(Some(server));
    let inbox = InboxCall::new(ALPHA, "GreenCastle").ok_at(&url).await;
    let subjects: Vec<&str> =
        inbox.as_array().expect("inbox").iter().filter_map(|m| m["subject"].as_str()).collect();
    assert_eq!(subjects, ["before the save"]);
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_scope_keeps_only_the_named_projects() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, url) = server_on(&data).await;
    SendCall::new(ALPHA, "BlueLake", "GreenCastle", "alpha mail").ok_at(&url).await;
    SendCall::new(BETA, "RedStone", "RedStone", "beta mail").ok_at(&url).await;
    stop(server.take());

    let unknown = refused(&data, &["archive", "save", "-p", "/work/gamma"], "");
    assert!(unknown.contains("no project is named \"/work/gamma\""), "{unknown}");
    let scrub = refused(&data, &["archive", "save", "--scrub-preset", "standard"], "");
    assert!(scrub.contains("--scrub-preset archive"), "{scrub}");
    assert!(named(&data.join("archived_mailbox_states"), "mailbox-state").is_empty());

    let saved = json(&data, &["archive", "save", "-p", "work-alpha"]);
    let metadata = &saved["metadata"];
    assert_eq!(metadata["projects_requested"], serde_json::json!(["work-alpha"]));
    assert_eq!(metadata["projects_included"][0]["human_key"], ALPHA);
    assert_eq!(metadata["projects_removed"], 1);
    let path = PathBuf::from(saved["path"].as_str().expect("path"));
    let names = entries(&path);
    assert!(names.iter().any(|n| n.starts_with("storage_repo/projects/work-alpha/")), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("storage_repo/projects/work-beta")), "{names:?}");

    json(&data, &["archive", "restore", path.to_str().expect("UTF-8"), "--force"]);
    assert_eq!(messages(&data.join("mailroom.sqlite3")), [(1, "alpha mail".to_owned())]);
    let db = rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("open");
    let projects: Vec<String> = db
        .prepare("SELECT slug FROM projects")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("projects");
    assert_eq!(projects, ["work-alpha"]);
    assert!(!data.join("archive/projects/work-beta").exists());
}

/// A ZIP with a saved state's metadata and snapshot, plus `extra` entries.
fn hostile_zip(path: &Path, extra: &[&str]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).expect("create"));
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("metadata.json", options).expect("start");
    zip.write_all(br#"{"version": 1, "created_at": "2025-01-01T00:00:00+00:00"}"#).expect("write");
    zip.start_file("snapshot/mailbox.sqlite3", options).expect("start");
    zip.write_all(b"not a database").expect("write");
    for name in extra {
        zip.start_file(*name, options).expect("start");
        zip.write_all(b"escaped").expect("write");
    }
    zip.finish().expect("finish");
}

#[test]
fn a_zip_whose_entries_escape_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    assert!(run_on(&data, &["migrate"], &[], "").status.success());
    let database = data.join("mailroom.sqlite3");
    let before = std::fs::read(&database).expect("database");
    let absolute = dir.path().join("absolute.txt");
    let absolute = absolute.to_str().expect("UTF-8");
    for entry in ["storage_repo/../../escaped.txt", "storage_repo/a/../../../escaped.txt", absolute]
    {
        let zip = dir.path().join("hostile.zip");
        hostile_zip(&zip, &[entry]);
        let zip = zip.to_str().expect("UTF-8");
        let error = refused(&data, &["archive", "restore", zip, "--force"], "");
        assert!(error.contains("not a plain relative path"), "{entry}: {error}");
        for outside in [dir.path().join("escaped.txt"), data.join("escaped.txt")] {
            assert!(!outside.exists(), "{entry}");
        }
        assert!(!Path::new(absolute).exists(), "{entry}");
    }
    let zip = dir.path().join("other.zip");
    hostile_zip(&zip, &["elsewhere/file.txt"]);
    let error =
        refused(&data, &["archive", "restore", zip.to_str().expect("UTF-8"), "--force"], "");
    assert!(error.contains("not part of a saved state"), "{error}");
    assert_eq!(std::fs::read(&database).expect("database"), before, "the database is untouched");
    assert!(named(&data, "mailroom.sqlite3.pre-restore").is_empty(), "nothing moved aside");
    assert!(named(&data, ".mailroom-restoring").is_empty(), "nothing unpacked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_and_clear_are_refused_while_a_server_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, url) = server_on(&data).await;
    SendCall::new(ALPHA, "BlueLake", "GreenCastle", "kept").ok_at(&url).await;
    let saved = json(&data, &["archive", "save"]);
    let path = saved["path"].as_str().expect("path");

    let restore = refused(&data, &["archive", "restore", path, "--force"], "");
    assert!(restore.contains("a mailroom server is running"), "{restore}");
    let clear = refused(&data, &["clear-and-reset-everything", "--force"], "");
    assert!(clear.contains("a mailroom server is running"), "{clear}");
    let inbox = InboxCall::new(ALPHA, "GreenCastle").ok_at(&url).await;
    assert_eq!(inbox[0]["subject"], "kept", "the server goes on serving its data");
    stop(server.take());
    assert_eq!(messages(&data.join("mailroom.sqlite3")).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_and_reset_asks_first_then_saves_and_empties() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (data, database, archive) = data_with_mail(dir.path(), "cleared").await;
    let states = data.join("archived_mailbox_states");

    let unasked = refused(&data, &["clear-and-reset-everything"], "y\n");
    assert!(unasked.contains("standard input is not a terminal: pass --force"), "{unasked}");
    assert!(database.is_file() && archive.join(".git").is_dir(), "nothing deleted");
    assert!(!states.exists(), "nothing saved");

    let cleared = json(&data, &["clear_and_reset_everything", "--force"]);
    let saved = PathBuf::from(cleared["saved"].as_str().expect("saved"));
    assert!(saved.is_file() && saved.starts_with(&states), "{cleared}");
    for sidecar in ["", "-wal", "-shm"] {
        assert!(!data.join(format!("mailroom.sqlite3{sidecar}")).exists(), "{sidecar}");
    }
    let left = std::fs::read_dir(&archive).expect("the archive directory is kept").count();
    assert_eq!(left, 0, "archive emptied");
    let listed = json(&data, &["archive", "list"]);
    assert_eq!(listed[0]["label"], "before clear-and-reset-everything");
    let nothing = json(&data, &["clear-and-reset-everything", "--force", "--no-archive"]);
    assert_eq!(nothing["saved"], Value::Null);

    json(&data, &["archive", "restore", saved.to_str().expect("UTF-8"), "--force"]);
    assert_eq!(messages(&database), [(1, "cleared".to_owned())]);
}
