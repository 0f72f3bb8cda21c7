//! `mailroom copy-database`: the reference mailbox (tests/reference-mailbox, every kind of
//! record) imported into a data directory, copied into PostgreSQL and back into a new SQLite
//! file with nothing lost (every table compared row by row), the archive verifying clean
//! against the PostgreSQL copy, and a server on PostgreSQL serving it (and `check-inbox`
//! counting from it). A copy into a database
//! that holds mail, or while a server runs on the data directory, is refused. And on
//! PostgreSQL, backups and saved states copy the rows into a SQLite file, while the commands
//! that work on SQLite's file alone refuse clearly.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{KillOnDrop, mailroom};
use mailroom_testkit::{postgres_server, tool_at};
use rusqlite::Connection;
use serde_json::json;

const ALPHA: &str = "/work/alpha-service";

/// A data directory holding the reference mailbox, imported.
fn imported_data_dir(dir: &Path) -> PathBuf {
    let reference = common::unpack_reference_mailbox(dir);
    let data = dir.join("data");
    let output = mailroom()
        .arg("import")
        .arg(&reference)
        .arg("--storage-root")
        .arg(reference.join("archive"))
        .arg("--data-dir")
        .arg(&data)
        .output()
        .expect("import");
    assert!(output.status.success(), "import: {}", String::from_utf8_lossy(&output.stderr));
    data
}

fn copy(data: &Path, database_url: Option<&str>, to: &str) -> Output {
    let mut command = mailroom();
    command.args(["copy-database", "--json", "--to", to, "--data-dir"]).arg(data);
    if let Some(url) = database_url {
        command.env("DATABASE_URL", url);
    }
    command.output().expect("copy-database")
}

/// Every table of mailroom's schema, each row with every column, in the order the rows were
/// written (SQLite's rowid), as SQLite quotes them.
fn dump(database: &Path) -> Vec<(String, Vec<String>)> {
    let conn = Connection::open(database).expect("open");
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND name NOT LIKE 'fts_%' ORDER BY name",
        )
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<Result<_, _>>()
        .expect("read");
    tables
        .into_iter()
        .map(|table| {
            let columns: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
                .expect("columns")
                .query_map([], |r| r.get(0))
                .expect("columns")
                .collect::<Result<_, _>>()
                .expect("read");
            let list = columns
                .iter()
                .map(|c| format!("quote(\"{c}\")"))
                .collect::<Vec<_>>()
                .join(" || '|' || ");
            let order = if table == "idempotency_keys" {
                "project_id, agent_id, tool, idempotency_key"
            } else {
                "rowid"
            };
            let rows = conn
                .prepare(&format!("SELECT {list} FROM \"{table}\" ORDER BY {order}"))
                .expect("select")
                .query_map([], |r| r.get(0))
                .expect("rows")
                .collect::<Result<_, _>>()
                .expect("read");
            (table, rows)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailbox_goes_to_postgres_and_back_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = imported_data_dir(dir.path());
    let original = data.join("mailroom.sqlite3");
    let postgres = postgres_server::fresh_database_url().await;

    let there = copy(&data, None, &postgres);
    assert!(there.status.success(), "to PostgreSQL: {}", String::from_utf8_lossy(&there.stderr));
    let report: serde_json::Value = serde_json::from_slice(&there.stdout).expect("JSON report");
    assert!(report["tables"]["messages"].as_u64().is_some_and(|n| n > 5), "{report}");
    assert!(report["tables"]["message_recipients"].as_u64().is_some_and(|n| n > 5), "{report}");

    let back = dir.path().join("back.sqlite3");
    let back_url = format!("sqlite:///{}", back.display());
    let home = copy(&data, Some(&postgres), &back_url);
    assert!(home.status.success(), "back to SQLite: {}", String::from_utf8_lossy(&home.stderr));
    let (theirs, ours) = (dump(&original), dump(&back));
    assert_eq!(
        theirs.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ours.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>()
    );
    let mut rows = 0;
    for ((table, original_rows), (_, back_rows)) in theirs.iter().zip(&ours) {
        assert_eq!(back_rows, original_rows, "table {table} after PostgreSQL and back");
        rows += original_rows.len();
    }
    assert!(rows > 40, "the fixture holds every kind of record ({rows} rows)");

    // A database that holds mail is not copied into, nor is a file that exists.
    let again = copy(&data, None, &postgres);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("holds mailroom data already"));
    let over = copy(&data, None, &back_url);
    assert!(!over.status.success());
    assert!(String::from_utf8_lossy(&over.stderr).contains("exists already"));

    // The archive verifies clean against the PostgreSQL copy, which a server then serves.
    let verify = mailroom()
        .args(["archive", "verify", "--data-dir"])
        .arg(&data)
        .env("DATABASE_URL", &postgres)
        .output()
        .expect("verify");
    assert!(verify.status.success(), "verify: {}", String::from_utf8_lossy(&verify.stdout));
    let (server, url) = common::start_with(&data, &[("DATABASE_URL", postgres.as_str())]);
    let server = KillOnDrop(Some(server));
    let found =
        tool_at(&url, "search_messages", json!({"project_key": ALPHA, "query": "migrations"}))
            .await;
    assert!(found.to_string().contains("Re: Plan for the v2 API"), "indexed: {found}");
    let sent = tool_at(
        &url,
        "send_message",
        json!({"project_key": ALPHA, "sender_name": "BlueLake", "to": ["GreenCastle"],
               "subject": "After the copy", "body_md": "Still here."}),
    )
    .await;
    let id = sent["deliveries"][0]["payload"]["id"].as_i64().expect("id");
    let max: i64 = Connection::open(&original)
        .expect("open")
        .query_row("SELECT MAX(id) FROM messages", [], |r| r.get(0))
        .expect("max");
    assert_eq!(id, max + 1, "new mail continues the copied ids");
    // The reminder hook's count reads PostgreSQL too, without the server.
    let unread = mailroom()
        .args(["check-inbox", "--format", "json", "--agent", "GreenCastle", "--project", ALPHA])
        .arg("--data-dir")
        .arg(&data)
        .env("DATABASE_URL", &postgres)
        .output()
        .expect("check-inbox");
    let unread: serde_json::Value = serde_json::from_slice(&unread.stdout).expect("JSON");
    assert!(unread["unread"].as_i64().is_some_and(|n| n >= 1), "{unread}");
    // While a server runs on the data directory, nothing is copied out of it.
    let busy =
        copy(&data, Some(&postgres), &format!("sqlite:///{}", dir.path().join("x").display()));
    assert!(!busy.status.success());
    assert!(String::from_utf8_lossy(&busy.stderr).contains("stop it first"));
    common::stop(server.take());
}

/// On PostgreSQL a backup (here `hard-delete-agent`'s) and a saved state hold the database as
/// a SQLite file of the same rows, read in one snapshot; the commands that work on SQLite's
/// file alone (doctor's checks, the restores, clear-and-reset, import) refuse, saying what to
/// do there instead, and nothing shows the URL's password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_backups_hold_a_sqlite_copy_and_file_only_commands_say_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = imported_data_dir(dir.path());
    let postgres = postgres_server::fresh_database_url().await;
    assert!(copy(&data, None, &postgres).status.success());
    std::fs::remove_file(data.join("mailroom.sqlite3")).expect("only PostgreSQL holds it now");
    // The test cluster trusts local connections, so a password given is never checked.
    let with_password = postgres.replacen("://postgres@", "://postgres:hunter2@", 1);
    assert_ne!(with_password, postgres);
    let run = |args: &[&str]| {
        let output = mailroom()
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env("DATABASE_URL", &with_password)
            .output()
            .expect("mailroom");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(!stderr.contains("hunter2") && !stdout.contains("hunter2"), "{stdout}{stderr}");
        (output.status.success(), stdout, stderr)
    };
    let count = "SELECT count(*) FROM messages";
    let before = postgres_server::query_i64s(&postgres, count).await[0];

    let deleted = run(&["hard-delete-agent", ALPHA, "GreenCastle", "--confirm", "I UNDERSTAND"]);
    assert!(deleted.0, "hard delete: {}", deleted.2);
    let backup = deleted.2.split("backed up the database to ").nth(1).expect("said where");
    let backup = PathBuf::from(backup.lines().next().expect("path").trim());
    let copied: i64 = Connection::open(backup.join("database.sqlite3"))
        .expect("open the backup")
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .expect("count");
    assert_eq!(copied, before, "the backup holds the rows from before the delete");
    let after = postgres_server::query_i64s(&postgres, count).await[0];
    assert!(after < before, "the delete happened after it");
    let manifest = std::fs::read_to_string(backup.join("manifest.json")).expect("manifest");
    assert!(manifest.contains("postgres://postgres:***@"), "{manifest}");

    let saved = run(&["archive", "save", "--label", "on-postgres"]);
    assert!(saved.0, "archive save: {}", saved.2);
    assert!(run(&["archive", "list"]).1.contains("on-postgres"));

    for (args, what) in [
        (&["doctor", "check"][..], "doctor's checks"),
        (&["doctor", "restore", backup.to_str().expect("utf-8")], "doctor restore"),
        (&["archive", "restore", "on-postgres"], "archive restore"),
        (&["clear-and-reset-everything", "--force"], "clear-and-reset-everything"),
        (&["import", dir.path().to_str().expect("utf-8")], "import"),
    ] {
        let (ok, _, stderr) = run(args);
        assert!(!ok, "{args:?} must refuse");
        assert!(stderr.contains(what) && stderr.contains("names PostgreSQL"), "{stderr}");
    }
    assert_eq!(postgres_server::query_i64s(&postgres, count).await[0], after, "nothing cleared");
}
