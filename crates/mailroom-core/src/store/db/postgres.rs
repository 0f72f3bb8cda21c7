//! The PostgreSQL side of the statement API (`driver.rs`): a session on one connection, its
//! prepared statements, and the conversions between [`Value`]/[`Cell`] and PostgreSQL's
//! binary formats.
//!
//! Statements are written once, in SQLite's spelling (`?1` parameters); a session rewrites
//! them to PostgreSQL's (`$1`) when it first prepares them and keeps the prepared statement.
//!
//! The driver is tokio-postgres. Each connection's socket is driven by a task on a small
//! runtime of its own (thread `mailroom-pg-io`); a session's calls wait for their answers
//! with [`block_on`], which needs no runtime, so the store's threads use a session as they
//! use a SQLite connection, and a session can be opened, used at start-up and dropped on any
//! thread.

use std::cell::{Cell as StdCell, RefCell};
use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Statement};

use super::driver::{Cell, Param, Value};
use crate::error::{Category, Error, Result};

/// The advisory lock the archive's leader holds on its database (`Lease`).
const LEADER_LOCK: i64 = 0x6d61_696c_726f_6f00;
/// The channel instances tell each other of their commits on (`listen`).
pub(crate) const CHANNEL: &str = "mailroom";

/// Prepared statements kept per session, like SQLite's statement cache.
const STATEMENT_CACHE_CAPACITY: usize = 256;

/// The runtime that drives every connection's socket.
static IO_RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("mailroom-pg-io")
        .enable_io()
        .enable_time()
        .build()
        .expect("the PostgreSQL I/O runtime starts")
});

/// Waits for `future` on this thread (parking it), without a runtime.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    thread_local! {
        static WAKER: Waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    }
    WAKER.with(|waker| {
        let mut cx = Context::from_waker(waker);
        let mut future = std::pin::pin!(future);
        loop {
            match future.as_mut().poll(&mut cx) {
                Poll::Ready(outcome) => return outcome,
                Poll::Pending => std::thread::park(),
            }
        }
    })
}

/// How to reach the PostgreSQL database and what to ask of each connection.
#[derive(Debug, Clone)]
pub struct PgSettings {
    /// `postgres://` or `postgresql://` URL (`DATABASE_URL`).
    pub url: String,
    /// Read connections in the store's pool (the writer has one more of its own).
    pub pool_size: usize,
    /// The server cancels a statement that runs longer (0: no limit).
    pub statement_timeout_ms: u64,
    /// How long connecting may take before it fails.
    pub connect_timeout: Duration,
    /// Whether this process may lead (write the archive, run the upkeep): a server may; a
    /// command that opens the database for one call may not.
    pub may_lead: bool,
}

/// One PostgreSQL connection and the statements prepared on it. Used by one thread at a time.
pub struct PgSession {
    settings: PgSettings,
    client: Client,
    statements: RefCell<HashMap<String, Statement>>,
    /// Rows this session's statements changed (`Db::total_changes`).
    changes: StdCell<u64>,
}

impl PgSession {
    /// Connects as `settings` say.
    pub fn connect(settings: &PgSettings) -> Result<Self> {
        let opening = settings.clone();
        let connecting = IO_RUNTIME.spawn(async move {
            let (client, connection) = open(&opening).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %e, "a PostgreSQL connection ended");
                }
            });
            Ok::<_, Error>(client)
        });
        let client = block_on(connecting)
            .map_err(|e| Error::internal(format!("connecting to PostgreSQL failed: {e}")))??;
        Ok(Self {
            settings: settings.clone(),
            client,
            statements: RefCell::new(HashMap::new()),
            changes: StdCell::new(0),
        })
    }

    /// Connects again when the server closed this connection (a reader's).
    pub fn reconnect_if_closed(&mut self) -> Result<()> {
        if self.is_closed() {
            *self = Self::connect(&self.settings)?;
        }
        Ok(())
    }

    /// The writer's connection again after the server closed it (a restart, a failover); a
    /// failure is logged and the next statement reports it.
    pub fn reopen_if_closed(&mut self) {
        if let Err(e) = self.reconnect_if_closed() {
            tracing::error!(error = %e, "cannot reconnect to PostgreSQL");
        }
    }

    /// Rows this session's statements changed since it connected.
    pub fn total_changes(&self) -> u64 {
        self.changes.get()
    }

    /// Counts rows changed by a statement that returned rows (`INSERT … RETURNING`).
    pub fn note_changes(&self, rows: u64) {
        self.changes.set(self.changes.get().wrapping_add(rows));
    }

    /// The prepared form of `sql` (written with `?N` parameters).
    fn statement(&self, sql: &str) -> Result<Statement> {
        if let Some(statement) = self.statements.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let statement = block_on(self.client.prepare(&to_postgres(sql))).map_err(map_pg_err)?;
        let mut statements = self.statements.borrow_mut();
        if statements.len() >= STATEMENT_CACHE_CAPACITY {
            statements.clear();
        }
        statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// Runs a statement that returns no rows; how many rows it changed.
    pub fn execute(&self, sql: &str, args: &[&dyn Param]) -> Result<usize> {
        let statement = self.statement(sql)?;
        let values: Vec<Value<'_>> = args.iter().map(|a| a.value()).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v as _).collect();
        let changed = block_on(self.client.execute(&statement, &refs)).map_err(map_pg_err)?;
        self.note_changes(changed);
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    /// Runs statements without parameters (the simple query protocol).
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        block_on(self.client.batch_execute(sql)).map_err(map_pg_err)
    }

    /// Visits the rows of a query in order until `find` returns something.
    pub fn query_find<T>(
        &self,
        sql: &str,
        args: &[&dyn Param],
        mut find: impl FnMut(&tokio_postgres::Row) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let statement = self.statement(sql)?;
        let values: Vec<Value<'_>> = args.iter().map(|a| a.value()).collect();
        let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v as _).collect();
        // All rows arrive before the first is visited: the connection is free again for
        // statements the visitor may run.
        let rows = block_on(self.client.query(&statement, &refs)).map_err(map_pg_err)?;
        // `INSERT … RETURNING` and the like changed as many rows as they returned.
        let verb = sql.trim_start().get(..6).unwrap_or_default().to_ascii_uppercase();
        if ["INSERT", "UPDATE", "DELETE"].contains(&verb.as_str()) {
            self.note_changes(rows.len() as u64);
        }
        for row in &rows {
            if let Some(found) = find(row)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Whether the connection is gone (the server closed it or the network failed).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// Seconds of silence before a connection is probed, seconds between probes, and probes
/// unanswered before it is given up for dead (by this process and by the server alike).
const KEEPALIVE_IDLE: u64 = 10;
const KEEPALIVE_INTERVAL: u64 = 5;
const KEEPALIVE_RETRIES: u32 = 3;

/// The driver's settings for a connection as `settings` ask.
fn client_config(
    settings: &PgSettings,
) -> Result<(tokio_postgres::Config, tokio_postgres_rustls::MakeRustlsConnect)> {
    let (url, tls) = super::postgres_tls::TlsWanted::split(&settings.url)?;
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| Error::internal(format!("DATABASE_URL is not a PostgreSQL URL: {e}")))?;
    config.ssl_mode(tls.driver_mode());
    config.application_name("mailroom");
    config.connect_timeout(settings.connect_timeout);
    // A connection the network dropped silently is noticed in about 25 s, not after the
    // system's two hours of keepalive silence: here, and by the server (the `tcp_keepalives_*`
    // options), which then drops the leader's lease, so after a partition another server
    // takes the lead that soon (docs/scale-out.md).
    config.keepalives_idle(Duration::from_secs(KEEPALIVE_IDLE));
    config.keepalives_interval(Duration::from_secs(KEEPALIVE_INTERVAL));
    config.keepalives_retries(KEEPALIVE_RETRIES);
    // Keepalives are not sent while data waits to be acknowledged: a statement sent into a
    // black hole gives up after this too, rather than after the system's 15 minutes.
    config.tcp_user_timeout(Duration::from_secs(
        KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * u64::from(KEEPALIVE_RETRIES),
    ));
    // The URL's own `options` come first; the statement timeout is this process's.
    let given = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
    config.options(format!(
        "{given}-c tcp_keepalives_idle={KEEPALIVE_IDLE} -c tcp_keepalives_interval={KEEPALIVE_INTERVAL} \
         -c tcp_keepalives_count={KEEPALIVE_RETRIES} -c statement_timeout={}",
        settings.statement_timeout_ms
    ));
    Ok((config, tls.connector()?))
}

/// A connection's socket half, TLS or not, which the caller drives.
type PgConnection = tokio_postgres::Connection<
    tokio_postgres::Socket,
    <tokio_postgres_rustls::MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<
        tokio_postgres::Socket,
    >>::Stream,
>;

/// Connects as `settings` ask, the whole connect bounded by their connect timeout (the
/// driver's own covers only TCP's: a server that accepts and then stalls in TLS or login is
/// given up on too).
async fn open(settings: &PgSettings) -> Result<(Client, PgConnection)> {
    let (config, tls) = client_config(settings)?;
    let limit = settings.connect_timeout;
    match tokio::time::timeout(limit, config.connect(tls)).await {
        Ok(connected) => connected.map_err(map_pg_err),
        Err(_) => Err(Error::new(
            Category::Retryable,
            "RESOURCE_BUSY",
            format!("connecting to PostgreSQL took over {} s", limit.as_secs_f64()),
        )),
    }
}

/// Hears what other sessions `NOTIFY` on [`CHANNEL`], on a connection of its own driven on the
/// I/O runtime, for as long as it lives. `heard` gets each payload, and `None` whenever the
/// connection is (re)established: notifications sent while it was down are lost, so the
/// listener must assume anything changed. A lost connection is opened again every second.
pub struct Listener {
    task: tokio::task::JoinHandle<()>,
}

/// What a [`Listener`] calls with each payload (`None`: connected anew).
pub type Heard = Arc<dyn Fn(Option<&str>) + Send + Sync>;

impl Listener {
    pub fn start(settings: &PgSettings, heard: Heard) -> Self {
        let settings = settings.clone();
        let task = IO_RUNTIME.spawn(async move {
            loop {
                if let Err(e) = listen_once(&settings, &*heard).await {
                    tracing::warn!(error = %e, "PostgreSQL listener lost; reconnecting");
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Self { task }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn listen_once(
    settings: &PgSettings,
    heard: &(dyn Fn(Option<&str>) + Send + Sync),
) -> Result<()> {
    let (client, mut connection) = open(settings).await?;
    let (sender, mut payloads) = tokio::sync::mpsc::unbounded_channel::<String>();
    // The connection's messages (notifications among them) come out of `poll_message`.
    let driver = tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                    if sender.send(n.payload().to_string()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "PostgreSQL listener connection failed");
                    return;
                }
            }
        }
    });
    let listening = client.batch_execute(&format!("LISTEN {CHANNEL}")).await.map_err(map_pg_err);
    if listening.is_ok() {
        heard(None);
        while let Some(payload) = payloads.recv().await {
            heard(Some(&payload));
        }
    }
    driver.abort();
    listening
}

/// The archive's leadership: a session-level advisory lock on a connection of its own, tried
/// every second by thread `mailroom-lease` while not held, and the connection checked every
/// second while held. Exactly one process on a database holds it; it is lost with the
/// connection (the process died, the network or the server went), and another process's
/// next try takes it.
pub struct Lease {
    held: std::sync::atomic::AtomicBool,
    /// Until when this process leaves the lease to others (it stepped aside).
    aside_until: std::sync::Mutex<Option<std::time::Instant>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// How often the lease is tried for, and its connection checked while held.
const LEASE_EVERY: Duration = Duration::from_secs(1);

impl Lease {
    /// Starts trying for the lease; `changed` hears each gain and loss.
    pub fn start(
        settings: &PgSettings,
        changed: Arc<dyn Fn(bool) + Send + Sync>,
    ) -> Result<Arc<Self>> {
        let lease = Arc::new(Self {
            held: std::sync::atomic::AtomicBool::new(false),
            aside_until: std::sync::Mutex::new(None),
            stop: Arc::default(),
            thread: std::sync::Mutex::new(None),
        });
        // The first try is made here, so a server that starts alone leads (and opens its
        // archive) before it serves.
        let mut session = None;
        lease.step(&mut session, settings, &*changed);
        let settings = settings.clone();
        let keeper = Arc::clone(&lease);
        let thread = std::thread::Builder::new()
            .name("mailroom-lease".to_string())
            .spawn(move || keeper.keep(session, &settings, &*changed))
            .map_err(|e| Error::internal(format!("cannot start the lease thread: {e}")))?;
        *lease.thread.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(thread);
        Ok(lease)
    }

    fn keep(
        &self,
        mut session: Option<PgSession>,
        settings: &PgSettings,
        changed: &(dyn Fn(bool) + Send + Sync),
    ) {
        let stopping = || self.stop.load(std::sync::atomic::Ordering::SeqCst);
        while !stopping() {
            let mut slept = Duration::ZERO;
            // A step aside asked for while held is taken at once.
            while slept < LEASE_EVERY && !stopping() && !(self.held() && self.aside()) {
                std::thread::sleep(Duration::from_millis(50));
                slept += Duration::from_millis(50);
            }
            if !stopping() {
                self.step(&mut session, settings, changed);
            }
        }
        // Dropping the session releases the lock.
        drop(session);
        if self.held.swap(false, std::sync::atomic::Ordering::SeqCst) {
            changed(false);
        }
    }

    /// One try for the lease (connecting first if need be), or one check of the connection
    /// that holds it.
    fn step(
        &self,
        session: &mut Option<PgSession>,
        settings: &PgSettings,
        changed: &(dyn Fn(bool) + Send + Sync),
    ) {
        let held = self.held();
        let outcome = if self.aside() {
            // Closing the connection releases the lock.
            *session = None;
            Ok(false)
        } else {
            match session.as_ref() {
                // The lock went with the connection; the next step tries again.
                Some(s) if s.is_closed() => Ok(false),
                None => {
                    *session = PgSession::connect(settings).ok();
                    session.as_ref().map_or(Ok(false), try_lead)
                }
                Some(s) if held => s.execute("SELECT 1", &[]).map(|_| true),
                Some(s) => try_lead(s),
            }
        };
        let now = match outcome {
            Ok(now) if session.as_ref().is_some_and(|s| !s.is_closed()) => now,
            _ => {
                // The lock, if held, went with the connection.
                *session = None;
                false
            }
        };
        if now != held {
            self.held.store(now, std::sync::atomic::Ordering::SeqCst);
            tracing::info!(leading = now, "archive leadership changed");
            changed(now);
        }
    }

    /// Whether this process leads now.
    pub fn held(&self) -> bool {
        self.held.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Gives the lease up and leaves it to the other servers for `pause` (a leader that
    /// cannot write the archive); blocks until it is given up, at most a few seconds.
    pub fn step_aside(&self, pause: Duration) {
        let until = std::time::Instant::now() + pause;
        *self.aside_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(until);
        for _ in 0..100 {
            if !self.held() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Tells the lease's thread to give it up and stop, without waiting for it.
    pub fn stop_soon(&self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether this process leaves the lease to others now.
    fn aside(&self) -> bool {
        let until = *self.aside_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        until.is_some_and(|until| std::time::Instant::now() < until)
    }

    /// Gives the lease up (its connection closes) and stops trying; blocks until done.
    pub fn stop(&self) {
        self.stop_soon();
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

/// One try for the leader's lock on `session`; whether it holds it now.
fn try_lead(session: &PgSession) -> Result<bool> {
    super::Db::on_postgres(session, false)
        .query_value("SELECT pg_try_advisory_lock(?1)", super::driver::args![LEADER_LOCK])
}

/// The cell at `index` of a PostgreSQL row.
pub(super) fn cell(row: &tokio_postgres::Row, index: usize) -> Result<Cell<'_>> {
    row.try_get::<_, PgCell<'_>>(index).map(|c| c.0).map_err(|e| {
        Error::new(Category::Internal, "DATABASE_ERROR", format!("column {index}: {e}"))
    })
}

/// A column read in any of the types the schema uses.
struct PgCell<'r>(Cell<'r>);

impl<'r> FromSql<'r> for PgCell<'r> {
    fn from_sql(
        ty: &Type,
        raw: &'r [u8],
    ) -> std::result::Result<Self, Box<dyn StdError + Sync + Send>> {
        let cell = match *ty {
            Type::INT8 => Cell::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Cell::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Cell::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Cell::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Cell::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Cell::Real(f32::from_sql(ty, raw)?.into()),
            Type::BYTEA => Cell::Blob(raw),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON => {
                Cell::Text(std::str::from_utf8(raw)?)
            }
            ref other => return Err(format!("a column of type {other} (cast it in SQL)").into()),
        };
        Ok(Self(cell))
    }

    fn from_sql_null(_: &Type) -> std::result::Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Self(Cell::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A value goes to PostgreSQL in the type the server inferred for its parameter.
impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn StdError + Sync + Send>> {
        let textual =
            matches!(*ty, Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN);
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(v), &Type::INT8) => v.to_sql(ty, out),
            (Value::Int(v), &Type::INT4) => i32::try_from(*v)?.to_sql(ty, out),
            (Value::Int(v), &Type::INT2) => i16::try_from(*v)?.to_sql(ty, out),
            (Value::Int(v), &Type::BOOL) => (*v != 0).to_sql(ty, out),
            #[allow(clippy::cast_precision_loss)]
            (Value::Int(v), &Type::FLOAT8) if (*v as f64) as i64 == *v => {
                (*v as f64).to_sql(ty, out)
            }
            (Value::Int(v), _) if textual => v.to_string().as_str().to_sql(&Type::TEXT, out),
            (Value::Real(v), &Type::FLOAT8) => v.to_sql(ty, out),
            (Value::Real(v), _) if textual => v.to_string().as_str().to_sql(&Type::TEXT, out),
            (Value::Text(v), &Type::INT8) => v.parse::<i64>()?.to_sql(ty, out),
            (Value::Text(v), &Type::JSON) => v.as_ref().to_sql(&Type::TEXT, out),
            (Value::Text(v), _) if textual => v.as_ref().to_sql(&Type::TEXT, out),
            (Value::Blob(v), &Type::BYTEA) => v.to_sql(&Type::BYTEA, out),
            // Anything else would reach the server in another type's binary form.
            (value, ty) => Err(format!("cannot bind {value:?} as {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Rewrites a statement in SQLite's spelling to PostgreSQL's, outside quoted text:
/// parameters `?N` become `$N`; `x IS ?N` (SQLite's null-safe equality) becomes
/// `x IS NOT DISTINCT FROM $N`; `json_each(?N)` (a bound JSON array's values) becomes
/// `json_array_elements_text(CAST($N AS json))`, whose column is also `value`; `instr(`
/// becomes `strpos(` (same arguments). Everything else must be written so both understand it.
pub(super) fn to_postgres(sql: &str) -> String {
    let sql = null_tests_last(sql);
    let sql = sql.as_str();
    const REWRITES: &[(&str, &str)] = &[
        (" IS ?", " IS NOT DISTINCT FROM ?"),
        ("json_each(?", "json_array_elements_text(CAST(?"),
        ("instr(", "strpos("),
    ];
    let mut out = String::with_capacity(sql.len() + 16);
    let mut quote: Option<char> = None;
    let mut rest = sql;
    // After a rewritten `json_each(?N`, the `)` that closes it gets ` AS json)` first.
    let mut close_json = false;
    while let Some(c) = rest.chars().next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if let Some(scalar) = scalar_max_or_min(&out, rest) {
            out.push_str(scalar);
            rest = &rest[4..];
            continue;
        }
        if let Some((from, to)) = REWRITES.iter().find(|(from, _)| rest.starts_with(from)) {
            out.push_str(&to.replace('?', "$"));
            close_json |= from.starts_with("json_each");
            rest = &rest[from.len()..];
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '?' => {
                out.push('$');
                rest = &rest[1..];
                continue;
            }
            ')' if close_json => {
                out.push_str(" AS json)");
                close_json = false;
            }
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// SQLite's scalar `max(a, b, …)` / `min(a, b, …)` (two or more arguments; one is the
/// aggregate) as PostgreSQL's `greatest(` / `least(`, when `rest` starts with one.
fn scalar_max_or_min(before: &str, rest: &str) -> Option<&'static str> {
    let name = rest.get(..4)?.to_ascii_lowercase();
    let replacement = match name.as_str() {
        "max(" => "greatest(",
        "min(" => "least(",
        _ => return None,
    };
    if before.chars().last().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let inner = &rest[4..];
    let close = matching_paren(inner)?;
    let top_level_comma = unquoted(&inner[..close]).any(|(_, c, depth)| c == ',' && depth == 0);
    top_level_comma.then_some(replacement)
}

/// Moves each optional filter's null test behind the test that gives its parameter a type:
/// `(?N IS NULL OR <test>)` becomes `(<test> OR ?N IS NULL)`, the same condition. PostgreSQL
/// types a parameter where it first meets it, and `?N IS NULL` alone says nothing.
fn null_tests_last(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    let mut skip_to = 0;
    for (i, c, _) in unquoted(sql) {
        if i < skip_to || c != '(' {
            continue;
        }
        let group = &sql[i + 1..];
        let digits = group.get(1..).map_or(0, |g| g.bytes().take_while(u8::is_ascii_digit).count());
        if !group.starts_with('?') || digits == 0 {
            continue;
        }
        let parameter = &group[..=digits];
        let test = format!("{parameter} IS NULL OR ");
        let Some(close) = group.starts_with(&test).then(|| matching_paren(group)).flatten() else {
            continue;
        };
        out.push_str(&sql[copied..i]);
        out.push_str(&format!("({} OR {parameter} IS NULL)", &group[test.len()..close]));
        copied = i + 1 + close + 1;
        skip_to = copied;
    }
    out.push_str(&sql[copied..]);
    out
}

/// The characters of `text` outside quoted strings and identifiers, each with its byte index
/// and its depth of parentheses (the depth before an opening one, after a closing one).
fn unquoted(text: &str) -> impl Iterator<Item = (usize, char, usize)> + '_ {
    let mut quote: Option<char> = None;
    let mut depth = 0_usize;
    text.char_indices().filter_map(move |(i, c)| {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => {
                depth += 1;
                return Some((i, c, depth - 1));
            }
            (None, ')') => {
                depth = depth.saturating_sub(1);
                return Some((i, c, depth));
            }
            (None, c) => return Some((i, c, depth)),
        }
        None
    })
}

/// The index of the `)` that closes a group whose `(` came just before `text` (quoted text
/// is passed over).
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0_usize;
    for (i, c, _) in unquoted(text) {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Converts a PostgreSQL error at the store boundary, as `map_err` does SQLite's: lock and
/// serialisation conflicts and a lost connection are retryable, a full disk or a read-only
/// server storage errors, the rest internal.
pub(crate) fn map_pg_err(e: tokio_postgres::Error) -> Error {
    use tokio_postgres::error::SqlState;
    let Some(db) = e.as_db_error() else {
        return if e.is_closed() {
            Error::new(Category::Retryable, "RESOURCE_BUSY", "the database connection closed")
        } else {
            // The cause too: "error performing TLS handshake" alone does not say the server's
            // certificate was refused, nor why.
            let mut message = format!("database error: {e}");
            let mut cause = StdError::source(&e);
            while let Some(inner) = cause {
                message.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            Error::new(Category::Internal, "DATABASE_ERROR", message)
        };
    };
    let code = db.code();
    let message = format!("database error: {} ({})", db.message(), code.code());
    if [
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::LOCK_NOT_AVAILABLE,
        SqlState::QUERY_CANCELED,
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::TOO_MANY_CONNECTIONS,
    ]
    .contains(code)
    {
        Error::new(Category::Retryable, "RESOURCE_BUSY", format!("Database is busy: {message}"))
    } else if [SqlState::CHARACTER_NOT_IN_REPERTOIRE, SqlState::UNTRANSLATABLE_CHARACTER]
        .contains(code)
    {
        // SQLite stores a NUL character in text; PostgreSQL refuses it.
        Error::invalid("a text value contains a NUL character (U+0000), which cannot be stored")
    } else if *code == SqlState::DISK_FULL {
        tracing::error!(error = %message, "the database's disk is full");
        Error::storage_full("the database")
    } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        tracing::error!(error = %message, "the database is read-only");
        Error::storage_read_only("the database")
    } else {
        Error::new(Category::Internal, "DATABASE_ERROR", message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ends probe a silent connection, the URL's own options are kept, and the
    /// statement timeout is the setting's.
    #[test]
    fn connections_ask_the_server_to_probe_them_and_keep_the_urls_options() {
        let settings = PgSettings {
            url: "postgres://u@db/m?options=-c%20work_mem%3D8MB".to_string(),
            pool_size: 1,
            statement_timeout_ms: 1234,
            connect_timeout: Duration::from_secs(1),
            may_lead: true,
        };
        let (config, _) = client_config(&settings).expect("config");
        assert_eq!(
            config.get_options(),
            Some(
                "-c work_mem=8MB -c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 \
                 -c tcp_keepalives_count=3 -c statement_timeout=1234"
            )
        );
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(10));
        let plain = PgSettings { url: "postgres://u@db/m".to_string(), ..settings };
        let options = client_config(&plain).expect("config").0.get_options().map(str::to_string);
        assert!(options.is_some_and(|o| o.starts_with("-c tcp_keepalives_idle=10 ")));
    }

    #[test]
    fn parameters_are_renumbered_outside_quotes() {
        assert_eq!(
            to_postgres("SELECT ?1, '?2', \"a?\" FROM t WHERE x = ?10 AND y LIKE ?2 ESCAPE '!'"),
            "SELECT $1, '?2', \"a?\" FROM t WHERE x = $10 AND y LIKE $2 ESCAPE '!'"
        );
    }

    #[test]
    fn sqlite_only_spellings_are_rewritten() {
        assert_eq!(
            to_postgres(
                "SELECT id FROM w WHERE a IS ?2 AND b IS NULL AND id IN \
                 (SELECT CAST(value AS BIGINT) FROM json_each(?3)) AND instr(x, ?1) > 0"
            ),
            "SELECT id FROM w WHERE a IS NOT DISTINCT FROM $2 AND b IS NULL AND id IN \
             (SELECT CAST(value AS BIGINT) FROM json_array_elements_text(CAST($3 AS json))) \
             AND strpos(x, $1) > 0"
        );
        assert_eq!(to_postgres("SELECT 'a IS ?1 instr(' FROM t"), "SELECT 'a IS ?1 instr(' FROM t");
        assert_eq!(
            to_postgres("SELECT max(a, coalesce(b, 0)), MAX(id), min(f(x, y)), summax(a, b)"),
            "SELECT greatest(a, coalesce(b, 0)), MAX(id), min(f(x, y)), summax(a, b)"
        );
        // Quoted parentheses and commas are text, not syntax.
        assert_eq!(
            to_postgres("SELECT max(CASE WHEN a THEN 'x,y' ELSE b END) FROM t"),
            "SELECT max(CASE WHEN a THEN 'x,y' ELSE b END) FROM t"
        );
        assert_eq!(
            to_postgres(
                "WHERE (?1 IS NULL OR name LIKE '%)%' OR id = ?1) AND x = '(?2 IS NULL OR'"
            ),
            "WHERE (name LIKE '%)%' OR id = $1 OR $1 IS NULL) AND x = '(?2 IS NULL OR'"
        );
        assert_eq!(
            to_postgres(
                "WHERE (?4 IS NULL OR m.ts > ?4) AND (?5 IS NULL OR f(m.x, ?5) OR (a)) AND (?6)"
            ),
            "WHERE (m.ts > $4 OR $4 IS NULL) AND (f(m.x, $5) OR (a) OR $5 IS NULL) AND ($6)"
        );
    }
}
