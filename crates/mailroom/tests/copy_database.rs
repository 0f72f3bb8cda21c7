//! `mailroom copy-database`: the reference mailbox (tests/reference-mailbox, every kind of
//! record) imported into a data directory, copied into PostgreSQL and back into a new SQLite
//! file with nothing lost (every table compared row by row), the archive verifying clean
//! against the PostgreSQL copy, and a server on PostgreSQL serving it (and `check-inbox`
//! counting from it). A copy into a database
//! that holds mail, or while a server runs on the data directory, is refused.

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
