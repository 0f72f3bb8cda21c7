//! Append-only schema migrations, tracked with `PRAGMA user_version`.
//!
//! Never edit a shipped migration: add the next one. Each runs in its own transaction.

use rusqlite::Connection;

use super::driver::args;
use super::postgres::PgSession;
use super::{Db, has_table, map_err};
use crate::error::{Error, Result};

/// Migrations in order; index + 1 is the `user_version` after applying it.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_archive_queue.sql"),
    include_str!("migrations/0003_active_reservations_index.sql"),
    include_str!("migrations/0004_fts_project_scope.sql"),
    include_str!("migrations/0005_drop_superseded_reservation_index.sql"),
    include_str!("migrations/0006_deferred_fts.sql"),
    include_str!("migrations/0007_inbox_covering_index.sql"),
    include_str!("migrations/0008_drop_prefix_message_indexes.sql"),
    include_str!("migrations/0009_archive_queue_payload.sql"),
    include_str!("migrations/0010_archive_set_aside.sql"),
    include_str!("migrations/0011_unread_index.sql"),
    include_str!("migrations/0012_ack_required_index.sql"),
    include_str!("migrations/0013_idempotency.sql"),
    include_str!("migrations/0014_mailbox_events.sql"),
    include_str!("migrations/0015_webhooks.sql"),
    include_str!("migrations/0016_webhook_due_per_webhook.sql"),
    include_str!("migrations/0017_search_changes.sql"),
    include_str!("migrations/0018_contentless_fts.sql"),
];

/// PostgreSQL's migrations, in order; their own sequence (the first is SQLite's 0001-0016 as
/// one schema). Applied versions are rows of `mailroom_schema`.
const POSTGRES_MIGRATIONS: &[&str] = &[
    include_str!("migrations_pg/0001_init.sql"),
    include_str!("migrations_pg/0002_mcp_sessions.sql"),
    include_str!("migrations_pg/0003_search_changes.sql"),
];

/// The session-scoped advisory lock instances hold while migrating, so that two starting at
/// once do not both apply a migration.
const MIGRATION_LOCK: i64 = 0x6d69_6772_6174_6500;

/// Brings a PostgreSQL database up to the latest schema.
pub fn migrate_postgres(session: &PgSession) -> Result<()> {
    let db = Db::on_postgres(session, false);
    db.query_row("SELECT pg_advisory_lock(?1)", args![MIGRATION_LOCK], |_| Ok(()))?;
    let outcome = (|| {
        db.execute_batch("CREATE TABLE IF NOT EXISTS mailroom_schema (version BIGINT NOT NULL)")?;
        let current: usize =
            db.query_value("SELECT COALESCE(MAX(version), 0) FROM mailroom_schema", args![])?;
        if current > POSTGRES_MIGRATIONS.len() {
            return Err(Error::internal(format!(
                "database schema version {current} is newer than this mailroom ({})",
                POSTGRES_MIGRATIONS.len()
            )));
        }
        for (index, sql) in POSTGRES_MIGRATIONS.iter().enumerate().skip(current) {
            // One transaction per migration (the simple protocol runs the text as one).
            db.execute_batch(&format!(
                "BEGIN; {sql}; INSERT INTO mailroom_schema (version) VALUES ({}); COMMIT;",
                index + 1
            ))?;
        }
        Ok(())
    })();
    let unlocked = db.query_row("SELECT pg_advisory_unlock(?1)", args![MIGRATION_LOCK], |_| Ok(()));
    outcome.and(unlocked)
}

/// Brings the database up to the latest schema.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current: usize = conn
        .query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
        .map_err(map_err)?
        .try_into()
        .map_err(|_| Error::internal("negative schema version"))?;
    if current > MIGRATIONS.len() {
        return Err(Error::internal(format!(
            "database schema version {current} is newer than this mailroom ({})",
            MIGRATIONS.len()
        )));
    }
    if current == 0 && has_table(conn, "projects")? {
        // Version 0 with the tables already there: the Python reference made this database.
        return Err(Error::new(
            crate::error::Category::InvalidArgument,
            "REFERENCE_DATABASE",
            "this database was made by the Python reference (MCP Agent Mail): bring it over \
             with `mailroom import` (copied into a data directory, or --in-place)",
        ));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction().map_err(map_err)?;
        tx.execute_batch(sql).map_err(map_err)?;
        tx.pragma_update(None, "user_version", index as i64 + 1).map_err(map_err)?;
        tx.commit().map_err(map_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's database has the tables at version 0: it is pointed at `import`, not
    /// migrated into a half-converted state.
    #[test]
    fn a_reference_database_is_sent_to_import() {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.execute_batch("CREATE TABLE projects (id INTEGER PRIMARY KEY, slug TEXT)").expect("t");
        let err = migrate(&mut conn).expect_err("refused").to_string();
        assert!(err.contains("mailroom import"), "{err}");
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("v");
        assert_eq!(version, 0, "nothing applied");
    }

    /// A database written before migration 0004 keeps its messages searchable, now scoped by
    /// project inside the index.
    #[test]
    fn fts_project_scope_migration_indexes_existing_messages() {
        let mut conn = Connection::open_in_memory().expect("open");
        for sql in &MIGRATIONS[..3] {
            conn.execute_batch(sql).expect("old migration");
        }
        conn.pragma_update(None, "user_version", 3_i64).expect("version");
        conn.execute_batch(
            "INSERT INTO projects (id, slug, human_key, created_at) VALUES
                 (1, 'a', '/a', '2026-01-01'), (2, 'b', '/b', '2026-01-01');
             INSERT INTO agents (id, project_id, name, program, model, inception_ts, last_active_ts)
                 VALUES (1, 1, 'BlueLake', 'p', 'm', '2026-01-01', '2026-01-01'),
                        (2, 2, 'RedFox', 'p', 'm', '2026-01-01', '2026-01-01');
             INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts) VALUES
                 (1, 1, 1, 'deploy', 'shared words', '2026-01-01'),
                 (2, 2, 2, 'deploy', 'shared words', '2026-01-01');",
        )
        .expect("seed");
        migrate(&mut conn).expect("migrate");
        let hits = |query: &str| -> Vec<i64> {
            let mut stmt = conn
                .prepare("SELECT rowid FROM fts_messages WHERE fts_messages MATCH ?1")
                .expect("prepare");
            let rows = stmt.query_map([query], |row| row.get(0)).expect("query");
            rows.collect::<rusqlite::Result<_>>().expect("rows")
        };
        assert_eq!(hits("deploy"), vec![1, 2]);
        assert_eq!(hits("project_scope : p2 AND {subject body} : (shared)"), vec![2]);
        conn.execute(
            "INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts)
             VALUES (3, 2, 2, 'later', 'shared', '2026-01-02')",
            [],
        )
        .expect("insert after migration");
        // Indexed when the transaction indexes its pending messages (migration 0006).
        assert_eq!(hits("project_scope : p2 AND {subject body} : (shared)"), vec![2]);
        super::super::search::index_pending_messages(&super::super::Db::new(&conn, false))
            .expect("index pending");
        assert_eq!(hits("project_scope : p2 AND {subject body} : (shared)"), vec![2, 3]);
    }

    /// 0018 drops FTS5's copy of every subject and body: the index keeps only itself, finds
    /// what it found, and still takes deletions and edits by rowid (a message still waiting to
    /// be indexed included).
    #[test]
    fn the_full_text_index_keeps_no_copy_of_the_text() {
        let mut conn = Connection::open_in_memory().expect("open");
        for sql in &MIGRATIONS[..17] {
            conn.execute_batch(sql).expect("old migration");
        }
        conn.pragma_update(None, "user_version", 17_i64).expect("version");
        conn.execute_batch(
            "INSERT INTO projects (id, slug, human_key, created_at) VALUES (1, 'a', '/a', '2026-01-01');
             INSERT INTO agents (id, project_id, name, program, model, inception_ts, last_active_ts)
                 VALUES (1, 1, 'BlueLake', 'p', 'm', '2026-01-01', '2026-01-01');
             INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts) VALUES
                 (1, 1, 1, 'deploy', 'shared words', '2026-01-01'),
                 (2, 1, 1, 'deploy', 'other words', '2026-01-01');",
        )
        .expect("seed");
        let db =
            |conn: &Connection| super::super::search::index_pending_messages(&Db::new(conn, false));
        db(&conn).expect("indexed");
        conn.execute(
            "INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts)
             VALUES (3, 1, 1, 'deploy', 'pending words', '2026-01-02')",
            [],
        )
        .expect("a message not yet indexed");
        migrate(&mut conn).expect("migrate");
        let hits = |conn: &Connection, query: &str| -> Vec<i64> {
            let mut stmt = conn
                .prepare(
                    "SELECT rowid FROM fts_messages WHERE fts_messages MATCH ?1 ORDER BY rowid",
                )
                .expect("prepare");
            let rows = stmt.query_map([query], |row| row.get(0)).expect("query");
            rows.collect::<rusqlite::Result<_>>().expect("rows")
        };
        let one = |conn: &Connection, sql: &str| -> i64 {
            conn.query_row(sql, [], |row| row.get(0)).expect(sql)
        };
        assert_eq!(hits(&conn, "deploy"), vec![1, 2], "the pending message waits for its turn");
        assert_eq!(
            one(&conn, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'fts_messages_content'"),
            0
        );
        db(&conn).expect("indexed");
        assert_eq!(hits(&conn, "words"), vec![1, 2, 3]);

        conn.execute_batch(
            "DELETE FROM messages WHERE id = 2;
             UPDATE messages SET subject = 'rollback' WHERE id = 1;
             INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts)
                 VALUES (4, 1, 1, 'deploy', 'gone before indexing', '2026-01-02');
             DELETE FROM messages WHERE id = 4;",
        )
        .expect("deletions and an edit");
        db(&conn).expect("indexed");
        assert_eq!(hits(&conn, "deploy"), vec![3]);
        assert_eq!(hits(&conn, "rollback"), vec![1]);
        assert_eq!(hits(&conn, "words"), vec![1, 3]);
        assert_eq!(hits(&conn, "indexing"), Vec::<i64>::new());
        assert_eq!(one(&conn, "SELECT COUNT(*) FROM fts_messages_docsize"), 2);
        assert_eq!(one(&conn, "SELECT COUNT(*) FROM fts_messages"), 2, "what doctor counts");
        conn.execute("INSERT INTO fts_messages (fts_messages) VALUES ('integrity-check')", [])
            .expect("the index is whole");
    }

    /// 0010 moves the years earlier versions stored past 9999 (or before 1) to the last (or
    /// first) instant a timestamp can hold, and leaves valid ones alone.
    #[test]
    fn years_no_timestamp_can_hold_are_repaired() {
        let mut conn = Connection::open_in_memory().expect("open");
        for sql in &MIGRATIONS[..9] {
            conn.execute_batch(sql).expect("old migration");
        }
        conn.pragma_update(None, "user_version", 9_i64).expect("version");
        conn.execute_batch(
            "INSERT INTO projects (id, slug, human_key, created_at) VALUES (1, 'a', '/a', '2026-01-01');
             INSERT INTO agents (id, project_id, name, program, model, inception_ts, last_active_ts)
                 VALUES (1, 1, 'BlueLake', 'p', 'm', '2026-01-01', '2026-01-01'),
                        (2, 1, 'RedFox', 'p', 'm', '2026-01-01', '2026-01-01');
             INSERT INTO file_reservations (id, project_id, agent_id, path_pattern, created_ts, expires_ts)
                 VALUES (1, 1, 1, 'a', '2026-01-01', '33715-03-01 10:00:00.000000'),
                        (2, 1, 1, 'b', '2026-01-01', '-001-01-01 00:00:00.000000'),
                        (3, 1, 1, 'c', '2026-01-01', '2026-05-01 10:00:00.000000'),
                        (4, 1, 1, 'd', '2026-01-01', '0000-12-31 23:00:00.000000'),
                        (5, 1, 1, 'e', '2026-01-01', 'garbage'),
                        (6, 1, 1, 'f', '2026-01-01', '');
             INSERT INTO window_identities (project_id, window_uuid, display_name, created_ts,
                     last_active_ts, expires_ts)
                 VALUES (1, 'w', 'BlueLake', '2026-01-01', '2026-01-01', '12000-01-01 00:00:00');
             INSERT INTO message_summaries (project_id, summary_text, start_ts, end_ts, created_ts)
                 VALUES (1, 's', '-292277-01-01 00:00:00.000000', '2026-01-01', '2026-01-01');
             INSERT INTO agent_links (a_project_id, a_agent_id, b_project_id, b_agent_id,
                     created_ts, updated_ts, expires_ts)
                 VALUES (1, 1, 1, 2, '2026-01-01', '2026-01-01', '1234567-01-01 00:00:00');",
        )
        .expect("seed");
        migrate(&mut conn).expect("migrate");
        let column = |sql: &str| -> Vec<String> {
            let mut stmt = conn.prepare(sql).expect("prepare");
            let rows = stmt.query_map([], |row| row.get(0)).expect("query");
            rows.collect::<rusqlite::Result<_>>().expect("rows")
        };
        assert_eq!(
            column("SELECT expires_ts FROM file_reservations ORDER BY id"),
            [
                "9999-12-31 23:59:59.999999",
                "0001-01-01 00:00:00.000000",
                "2026-05-01 10:00:00.000000",
                "0001-01-01 00:00:00.000000",
                "garbage",
                ""
            ]
        );
        assert_eq!(column("SELECT expires_ts FROM agent_links"), ["9999-12-31 23:59:59.999999"]);
        let window = column("SELECT expires_ts FROM window_identities");
        assert_eq!(window, ["9999-12-31 23:59:59.999999"]);
        let summary = column("SELECT start_ts FROM message_summaries");
        assert_eq!(summary, ["0001-01-01 00:00:00.000000"]);
    }

    /// After 0007 the inbox statement reads its recipient rows (one agent's, newest first,
    /// with their kind) from one covering index, and the two indexes it supersedes are gone.
    #[test]
    fn inbox_rows_come_from_the_covering_index() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn).expect("migrate");
        let sql = format!("EXPLAIN QUERY PLAN {}", *super::super::messages::INBOX_SQL);
        let mut stmt = conn.prepare(&sql).expect("prepare");
        let no_filter: Option<i64> = None;
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params![1, 1, 0, no_filter, no_filter, 20], |row| row.get(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert!(
            plan.iter().any(|step| step.contains(
                "SEARCH r USING COVERING INDEX idx_message_recipients_agent_message_kind"
            )),
            "{plan:?}"
        );
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = 'message_recipients'")
            .expect("prepare")
            .query_map([], |row| row.get(0))
            .expect("indexes")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        // Besides it, only 0011's partial index of unread rows (check-inbox's count).
        let expected =
            ["idx_message_recipients_agent_message_kind", "idx_message_recipients_unread"];
        assert_eq!(indexes, expected.map(str::to_string).to_vec());
    }

    /// check-inbox's count reads 0011's partial index of unread rows, found by the planner
    /// (the query names no index, so a database before 0011 still answers).
    #[test]
    fn unread_counts_come_from_the_unread_index() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn).expect("migrate");
        let sql = format!("EXPLAIN QUERY PLAN {}", *super::super::messages::UNREAD_SQL);
        let plan: Vec<String> = conn
            .prepare(&sql)
            .expect("prepare")
            .query_map(rusqlite::params![1, 1], |row| row.get(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert!(plan.iter().any(|step| step.contains("idx_message_recipients_unread")), "{plan:?}");
    }

    /// After 0008 a message lookup by project or by sender alone uses the composite index
    /// that begins with that column.
    #[test]
    fn lookups_by_project_or_sender_use_the_composite_indexes() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn).expect("migrate");
        let plan = |sql: &str| -> String {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("prepare");
            let steps = stmt.query_map([], |row| row.get::<_, String>(3)).expect("plan");
            steps.collect::<rusqlite::Result<Vec<_>>>().expect("rows").join("; ")
        };
        let by_project = plan("SELECT id FROM messages WHERE project_id = 1");
        assert!(by_project.contains("idx_messages_project_"), "{by_project}");
        let by_sender = plan("SELECT id FROM messages WHERE sender_id = 1");
        assert!(by_sender.contains("idx_messages_sender_created"), "{by_sender}");
        let dropped: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name IN ('ix_messages_project_id', 'ix_messages_sender_id')",
                [],
                |row| row.get(0),
            )
            .expect("count");
        assert_eq!(dropped, 0);
    }
}
