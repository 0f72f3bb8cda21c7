//! Copying a whole database from one backend to the other (`mailroom copy-database`): every
//! row of every table, ids and all, into a new database of the current schema, in one
//! transaction. The source is only read.

use super::db::driver::{Cell, Param, Value, args};
use super::{Backend, Db, PgSession, PgSettings, open_connection};
use crate::error::{Error, Result};

/// The tables, parents before children, with their columns (those both schemas have) and the
/// order rows are copied in: ids are kept, and a message's recipients keep their order (the
/// insertion order SQLite calls `rowid`, a column of that name on PostgreSQL).
const TABLES: &[(&str, &[&str], &str)] = &[
    ("projects", &["id", "slug", "human_key", "created_at", "archived_at"], "id"),
    ("products", &["id", "product_uid", "name", "created_at"], "id"),
    ("product_project_links", &["id", "product_id", "project_id", "created_at"], "id"),
    (
        "agents",
        &[
            "id",
            "project_id",
            "name",
            "program",
            "model",
            "task_description",
            "inception_ts",
            "last_active_ts",
            "attachments_policy",
            "contact_policy",
            "registration_token",
            "retired_at",
        ],
        "id",
    ),
    (
        "messages",
        &[
            "id",
            "project_id",
            "sender_id",
            "thread_id",
            "topic",
            "subject",
            "body_md",
            "importance",
            "ack_required",
            "created_ts",
            "attachments",
        ],
        "id",
    ),
    ("message_recipients", &["message_id", "agent_id", "kind", "read_ts", "ack_ts"], "rowid"),
    (
        "file_reservations",
        &[
            "id",
            "project_id",
            "agent_id",
            "path_pattern",
            "\"exclusive\"",
            "reason",
            "created_ts",
            "expires_ts",
            "released_ts",
        ],
        "id",
    ),
    (
        "agent_links",
        &[
            "id",
            "a_project_id",
            "a_agent_id",
            "b_project_id",
            "b_agent_id",
            "status",
            "reason",
            "created_ts",
            "updated_ts",
            "expires_ts",
        ],
        "id",
    ),
    (
        "window_identities",
        &[
            "id",
            "project_id",
            "window_uuid",
            "display_name",
            "created_ts",
            "last_active_ts",
            "expires_ts",
        ],
        "id",
    ),
    (
        "message_summaries",
        &[
            "id",
            "project_id",
            "summary_text",
            "start_ts",
            "end_ts",
            "source_message_count",
            "source_thread_ids",
            "llm_model",
            "cost_usd",
            "created_ts",
        ],
        "id",
    ),
    (
        "project_sibling_suggestions",
        &[
            "id",
            "project_a_id",
            "project_b_id",
            "score",
            "status",
            "rationale",
            "created_ts",
            "evaluated_ts",
            "confirmed_ts",
            "dismissed_ts",
        ],
        "id",
    ),
    ("archive_queue", &["id", "kind", "ref_id", "enqueued_ts", "payload"], "id"),
    (
        "archive_set_aside",
        &["id", "kind", "ref_id", "enqueued_ts", "payload", "error", "set_aside_ts"],
        "id",
    ),
    (
        "idempotency_keys",
        &[
            "project_id",
            "agent_id",
            "tool",
            "idempotency_key",
            "fingerprint",
            "result_json",
            "created_ts",
        ],
        "project_id, agent_id, tool, idempotency_key",
    ),
    ("mailbox_events", &["id", "project_id", "agent_id", "kind", "message_id", "ts"], "id"),
    ("mailbox_events_log", &["id", "database_id", "pruned_through"], "id"),
    ("webhooks", &["id", "project_id", "agent_id", "url", "secret", "created_ts"], "id"),
    (
        "webhook_deliveries",
        &[
            "id",
            "event_id",
            "webhook_id",
            "message_id",
            "agent_id",
            "kind",
            "status",
            "attempts",
            "next_attempt_us",
            "last_error",
            "created_us",
            "finished_us",
        ],
        "id",
    ),
];

/// Tables the new database fills by itself (triggers on `message_recipients`, the log's one
/// row made by the migration): emptied before their rows are copied, so none is doubled.
const MADE_BY_THE_TARGET: &[&str] = &["mailbox_events", "mailbox_events_log", "webhook_deliveries"];

/// Rows read per statement from the source.
const PAGE: i64 = 5_000;

/// Where a database is: a SQLite file or a PostgreSQL database.
#[derive(Debug, Clone)]
pub enum DatabaseAt {
    Sqlite(std::path::PathBuf),
    Postgres(PgSettings),
}

impl DatabaseAt {
    /// The database a `DATABASE_URL` names: `sqlite:///path` (or `sqlite+driver:`) or
    /// `postgres://…`; a copy's statements run without a time limit.
    pub fn from_url(url: &str) -> Result<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(PgSettings {
                url: url.to_string(),
                pool_size: 1,
                statement_timeout_ms: 0,
                connect_timeout: std::time::Duration::from_secs(10),
                may_lead: false,
            }));
        }
        crate::config::database_path_from_url(url).map(Self::Sqlite).map_err(Error::invalid)
    }

    /// The database `config` serves.
    pub fn of(config: &crate::CoreConfig) -> Self {
        match &config.postgres {
            Some(settings) => {
                Self::Postgres(PgSettings { statement_timeout_ms: 0, ..settings.clone() })
            }
            None => Self::Sqlite(config.database_path.clone()),
        }
    }

    /// A read-only connection to it, outside any store (nothing is created, migrated or
    /// locked: a server may be using it); `None` for a SQLite file that does not exist.
    pub fn reader(&self) -> Result<Option<super::Reader>> {
        match self {
            Self::Sqlite(path) if !path.is_file() => Ok(None),
            Self::Sqlite(path) => super::Reader::open(path).map(Some),
            Self::Postgres(settings) => super::Reader::open_postgres(settings).map(Some),
        }
    }

    /// How messages name it: the file, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(settings) => crate::config::without_password(&settings.url),
        }
    }
}

/// Rows copied, table by table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub tables: Vec<(String, u64)>,
}

/// Copies every row of `from` into `to`, a database that must be new: a SQLite file that does
/// not exist yet, or a PostgreSQL database holding no mailroom rows (its schema is created).
/// All in one transaction on `to`: a failure leaves it as it was.
pub fn copy_database(from: &DatabaseAt, to: &DatabaseAt) -> Result<CopyReport> {
    let source = open(from, true)?;
    let target = open(to, false)?;
    let (source_db, target_db) = (source.db(false), target.db(false));
    if !target_is_empty(&target_db)? {
        return Err(Error::invalid(
            "the target database holds mailroom data already; copy into a new, empty one",
        ));
    }
    let mut report = CopyReport::default();
    source_db.read_transaction(|source_db| {
        target_db.begin_write()?;
        let copied = copy_tables(source_db, &target_db, &mut report).and_then(|()| {
            super::db::search::index_pending_messages(&target_db)?;
            advance_sequences(&target_db)?;
            target_db.execute("COMMIT", args![]).map(drop)
        });
        if copied.is_err() {
            let _ = target_db.execute_batch("ROLLBACK");
        }
        copied
    })?;
    Ok(report)
}

fn open(at: &DatabaseAt, source: bool) -> Result<Backend> {
    match at {
        DatabaseAt::Sqlite(path) => {
            if source && !path.is_file() {
                return Err(Error::internal(format!("no database at {}", path.display())));
            }
            if !source && path.exists() {
                return Err(Error::invalid(format!(
                    "{} exists already; copy into a new file",
                    path.display()
                )));
            }
            let mut conn = open_connection(path, source)?;
            if !source {
                super::db::migrations::migrate(&mut conn)?;
            }
            Ok(Backend::Sqlite(conn))
        }
        DatabaseAt::Postgres(settings) => {
            let session = PgSession::connect(settings)?;
            if !source {
                super::db::migrations::migrate_postgres(&session)?;
            }
            Ok(Backend::Postgres(session))
        }
    }
}

fn target_is_empty(db: &Db<'_>) -> Result<bool> {
    for (table, _, _) in TABLES {
        if MADE_BY_THE_TARGET.contains(table) {
            continue;
        }
        let any: bool =
            db.query_value(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), args![])?;
        if any {
            return Ok(false);
        }
    }
    Ok(true)
}

fn copy_tables(source: &Db<'_>, target: &Db<'_>, report: &mut CopyReport) -> Result<()> {
    for (table, columns, order) in TABLES {
        if MADE_BY_THE_TARGET.contains(table) {
            target.execute(&format!("DELETE FROM {table}"), args![])?;
        }
        let list = columns.join(", ");
        let placeholders: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let insert = format!("INSERT INTO {table} ({list}) VALUES ({})", placeholders.join(", "));
        let select = format!("SELECT {list} FROM {table} ORDER BY {order} LIMIT ?1 OFFSET ?2");
        let mut copied = 0_u64;
        loop {
            let mut page = 0_i64;
            source.query_each(&select, args![PAGE, copied], |row| {
                let values = (0..columns.len())
                    .map(|i| row.cell(i).map(value_of))
                    .collect::<Result<Vec<_>>>()?;
                let params: Vec<&dyn Param> = values.iter().map(|v| v as &dyn Param).collect();
                target.execute(&insert, &params)?;
                page += 1;
                Ok(())
            })?;
            copied += page.unsigned_abs();
            if page < PAGE {
                break;
            }
        }
        report.tables.push(((*table).to_string(), copied));
    }
    Ok(())
}

fn value_of(cell: Cell<'_>) -> Value<'_> {
    match cell {
        Cell::Null => Value::Null,
        Cell::Int(v) => Value::Int(v),
        Cell::Real(v) => Value::Real(v),
        Cell::Text(v) => Value::Text(v.into()),
        Cell::Blob(v) => Value::Blob(v),
    }
}

/// PostgreSQL's sequences past the ids copied in (SQLite's AUTOINCREMENT follows by itself).
fn advance_sequences(db: &Db<'_>) -> Result<()> {
    if db.dialect() != super::db::driver::Dialect::Postgres {
        return Ok(());
    }
    for (table, columns, _) in TABLES {
        if columns.first() == Some(&"id")
            && *table != "archive_set_aside"
            && *table != "mailbox_events_log"
        {
            db.query_row(
                &format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'),
                                   COALESCE(MAX(id), 0) + 1, false) FROM {table}"
                ),
                args![],
                |_| Ok(()),
            )?;
        }
    }
    Ok(())
}
