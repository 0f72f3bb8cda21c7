//! Queries on `file_reservations`.

use std::sync::atomic::{AtomicI64, Ordering};

use rusqlite::functions::FunctionFlags;

use super::driver::{Dialect, Param, Row, args};
use super::{Db, map_err};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::ReservationId;
use crate::records::{AgentId, ProjectId, Reservation};

/// Registers `mailroom_reservation_tick()`, the process-wide counter the change counters'
/// triggers draw from (see `Db::reservation_stamp`). Done once, when the connection opens:
/// SQLite refuses to replace a function while a statement of the connection is running.
pub(in crate::store) fn register_reservation_tick(conn: &rusqlite::Connection) -> Result<()> {
    static NEXT_TICK: AtomicI64 = AtomicI64::new(1);
    conn.create_scalar_function("mailroom_reservation_tick", 0, FunctionFlags::SQLITE_UTF8, |_| {
        Ok(NEXT_TICK.fetch_add(1, Ordering::Relaxed))
    })
    .map_err(map_err)
}

const SELECT: &str = "SELECT r.id, r.project_id, r.agent_id, a.name, r.path_pattern, \
     r.\"exclusive\", r.reason, r.created_ts, r.expires_ts, r.released_ts \
     FROM file_reservations r JOIN agents a ON a.id = r.agent_id";

fn reservation(row: &Row<'_>) -> Result<Reservation> {
    Ok(Reservation {
        id: row.get(0)?,
        project_id: row.get(1)?,
        agent_id: row.get(2)?,
        agent_name: row.get(3)?,
        path_pattern: row.get(4)?,
        exclusive: row.get(5)?,
        reason: row.get(6)?,
        created_ts: row.get(7)?,
        expires_ts: row.get(8)?,
        released_ts: row.get(9)?,
    })
}

/// A reservation in force, as [`Db::scan_active_reservations`] visits it.
pub struct ActiveRow<'a> {
    pub id: ReservationId,
    pub agent_id: AgentId,
    pub pattern: &'a str,
    pub exclusive: bool,
    /// The stored text (compared as text by SQL).
    pub expires_ts: &'a str,
}

/// Where a project's reservation rows stand, for caches of them (ops/reservations/active.rs).
/// Two equal stamps read on the writer connection mean the project's rows are the same:
/// `changes` counts this connection's inserts, updates and deletes of the project's rows and
/// `tick` names the last of them (transactionally: a rolled-back change takes both back);
/// `token` is new whenever the counters are (re)installed; `data_version` moves when another
/// connection commits. Ticks come from a process-wide counter that no rollback rewinds, so a
/// stamp read inside a transaction that later rolls back never recurs with other rows: a
/// cache may keep the set of an uncommitted state, which only a job seeing that very state
/// (the next in its batch) can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReservationStamp {
    token: i64,
    changes: i64,
    tick: i64,
    data_version: i64,
}

impl ReservationStamp {
    /// Whether this stamp is `base` moved by exactly `changes` row changes of this connection.
    pub fn follows(self, base: Self, changes: usize) -> bool {
        self.token == base.token
            && self.data_version == base.data_version
            && i64::try_from(changes).is_ok_and(|n| self.changes == base.changes + n)
    }
}

/// Fields of a new reservation row.
pub struct NewReservation<'a> {
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    pub path_pattern: &'a str,
    pub exclusive: bool,
    pub reason: &'a str,
    pub created_ts: Timestamp,
    pub expires_ts: Timestamp,
}

impl Db<'_> {
    fn reservations_where(&self, clause: &str, args: &[&dyn Param]) -> Result<Vec<Reservation>> {
        let sql = format!("{SELECT} WHERE {clause}");
        self.query_vec(&sql, args, reservation)
    }

    /// Visits the project's reservations in force at `now`, in index order (not by id: the
    /// caller sorts, which costs less than SQLite's sorter), with only what the conflict
    /// check needs: id, holder id, pattern (borrowed, not copied), whether it is exclusive and
    /// its expiry as stored (borrowed text). The covering index answers it alone.
    pub fn scan_active_reservations(
        &self,
        project_id: ProjectId,
        now: Timestamp,
        mut visit: impl FnMut(ActiveRow<'_>),
    ) -> Result<()> {
        self.query_each(
            "SELECT id, agent_id, path_pattern, \"exclusive\", expires_ts FROM file_reservations \
             WHERE project_id = ?1 AND released_ts IS NULL AND expires_ts > ?2",
            args![project_id, now],
            |row| {
                visit(ActiveRow {
                    id: row.get(0)?,
                    agent_id: row.get(1)?,
                    pattern: row.get(2)?,
                    exclusive: row.get(3)?,
                    expires_ts: row.get(4)?,
                });
                Ok(())
            },
        )
    }

    /// The state of a project's reservations as this connection sees it, inside its current
    /// transaction: equal stamps mean no reservation row of the project changed in between
    /// (see [`ReservationStamp`]). Installs the change counters on first use.
    pub fn reservation_stamp(&self, project_id: ProjectId) -> Result<ReservationStamp> {
        if self.dialect() == Dialect::Postgres {
            // Other instances change rows this one never hears of: every stamp is new, so a
            // cached set is never taken for the database's (each job reads the rows).
            static NEXT_TOKEN: AtomicI64 = AtomicI64::new(i64::MIN);
            let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
            return Ok(ReservationStamp { token, changes: 0, tick: 0, data_version: -1 });
        }
        const SQL: &str = "SELECT t.token, coalesce(c.changes, 0), coalesce(c.tick, 0), \
             (SELECT data_version FROM pragma_data_version()) \
             FROM temp.mailroom_reservation_token t \
             LEFT JOIN temp.mailroom_reservation_changes c ON c.project_id = ?1";
        let read = || {
            self.query_row(SQL, args![project_id], |r| {
                Ok(ReservationStamp {
                    token: r.get(0)?,
                    changes: r.get(1)?,
                    tick: r.get(2)?,
                    data_version: r.get(3)?,
                })
            })
        };
        match read() {
            Ok(stamp) => Ok(stamp),
            // The counters are missing: never installed on this connection, or their
            // installation was rolled back with the job that made it.
            Err(e) if e.message.contains("no such table") => {
                self.install_reservation_counters()?;
                read()
            }
            Err(e) => Err(e),
        }
    }

    /// Creates this connection's change counters: a temporary table of changes per project,
    /// bumped by temporary triggers on every insert, update and delete of a reservation row
    /// (whoever makes it on this connection), each change stamped with the next tick of a
    /// process-wide counter, and a token unique in the process, so that counters installed
    /// anew never repeat an old stamp. Temporary objects belong to the connection and to its
    /// transaction: a rolled-back job takes its counts with it, but not the ticks it drew.
    fn install_reservation_counters(&self) -> Result<()> {
        static NEXT_TOKEN: AtomicI64 = AtomicI64::new(1);
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        let bump = |id: &str, guard: &str| {
            format!(
                "INSERT INTO mailroom_reservation_changes (project_id, changes, tick) \
                 SELECT {id}, 1, mailroom_reservation_tick() WHERE {guard} \
                 ON CONFLICT (project_id) DO UPDATE SET changes = changes + 1, tick = excluded.tick;"
            )
        };
        let sql = format!(
            "DROP TABLE IF EXISTS temp.mailroom_reservation_token;
             DROP TABLE IF EXISTS temp.mailroom_reservation_changes;
             CREATE TEMP TABLE mailroom_reservation_token (token INTEGER NOT NULL);
             INSERT INTO temp.mailroom_reservation_token (token) VALUES ({token});
             CREATE TEMP TABLE mailroom_reservation_changes (
                 project_id INTEGER PRIMARY KEY, changes INTEGER NOT NULL, tick INTEGER NOT NULL);
             CREATE TEMP TRIGGER IF NOT EXISTS mailroom_reservation_inserted
                 AFTER INSERT ON main.file_reservations BEGIN {insert} END;
             CREATE TEMP TRIGGER IF NOT EXISTS mailroom_reservation_updated
                 AFTER UPDATE ON main.file_reservations BEGIN {update_new} {update_old} END;
             CREATE TEMP TRIGGER IF NOT EXISTS mailroom_reservation_deleted
                 AFTER DELETE ON main.file_reservations BEGIN {delete} END;",
            insert = bump("NEW.project_id", "true"),
            update_new = bump("NEW.project_id", "true"),
            update_old = bump("OLD.project_id", "OLD.project_id IS NOT NEW.project_id"),
            delete = bump("OLD.project_id", "true"),
        );
        self.execute_batch(&sql)
    }

    /// Reservations in force at `now` held by agents other than `except_agent_id` whose
    /// pattern names a mail-archive path: it begins with `agents/`, `messages/`,
    /// `attachments/`, `threads/` or `file_reservations/` once surrounding spaces and leading
    /// `.` and `/` are stripped (`\` read as `/`). The range scan of the (project, released,
    /// expires) index finds none in most projects, which keeps the check on every delivery
    /// cheap (docs/compat/tools.md §6.7).
    pub fn archive_surface_reservations(
        &self,
        project_id: ProjectId,
        except_agent_id: AgentId,
        now: Timestamp,
    ) -> Result<Vec<Reservation>> {
        // The first segment (up to and including the first `/`) of the normalised pattern is
        // compared, case-sensitively as the reference's `startswith`.
        const NORMALISED: &str = "ltrim(replace(trim(r.path_pattern), '\\', '/'), './')";
        let clause = format!(
            "r.project_id = ?1 AND r.released_ts IS NULL AND r.expires_ts > ?2 \
             AND r.agent_id <> ?3 AND substr({NORMALISED}, 1, instr({NORMALISED}, '/')) \
             IN ('agents/', 'messages/', 'attachments/', 'threads/', 'file_reservations/') \
             ORDER BY r.id"
        );
        self.reservations_where(&clause, args![project_id, now, except_agent_id])
    }

    /// A project's reservations in force at `now` (neither released nor expired), by id: what
    /// the commit guard blocks on.
    pub fn project_reservations_in_force(
        &self,
        project_id: ProjectId,
        now: Timestamp,
    ) -> Result<Vec<Reservation>> {
        self.reservations_where(
            "r.project_id = ?1 AND r.released_ts IS NULL AND r.expires_ts > ?2 ORDER BY r.id",
            args![project_id, now],
        )
    }

    /// Every reservation of a project (released and expired included), by id.
    pub fn project_reservations(&self, project_id: ProjectId) -> Result<Vec<Reservation>> {
        self.reservations_where("r.project_id = ?1 ORDER BY r.id", args![project_id])
    }

    /// An agent's reservations in force at `now`, soonest expiry first.
    pub fn agent_active_reservations(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
        now: Timestamp,
    ) -> Result<Vec<Reservation>> {
        self.reservations_where(
            "r.project_id = ?1 AND r.agent_id = ?2 AND r.released_ts IS NULL \
             AND r.expires_ts > ?3 ORDER BY r.expires_ts, r.id",
            args![project_id, agent_id, now],
        )
    }

    /// Unreleased reservations of a project whose holder has been inactive since before
    /// `cutoff`: the only ones the staleness heuristic can find stale.
    pub fn reservations_of_inactive_holders(
        &self,
        project_id: ProjectId,
        cutoff: Timestamp,
    ) -> Result<Vec<Reservation>> {
        // Driven by the (few) inactive agents, each through the (project, agent, released)
        // index: asking of every unreleased reservation whether its holder is inactive
        // walked them all on every request of a busy project.
        self.query_vec(
            "SELECT r.id, r.project_id, r.agent_id, a.name, r.path_pattern, \
             r.\"exclusive\", r.reason, r.created_ts, r.expires_ts, r.released_ts \
             FROM agents a CROSS JOIN file_reservations r \
             WHERE a.project_id = ?1 AND a.last_active_ts < ?2 \
             AND r.project_id = ?1 AND r.agent_id = a.id AND r.released_ts IS NULL \
             ORDER BY r.id",
            args![project_id, cutoff],
            reservation,
        )
    }

    /// The reservation with this id.
    pub fn reservation_by_id(&self, id: ReservationId) -> Result<Option<Reservation>> {
        let sql = format!("{SELECT} WHERE r.id = ?1");
        self.query_opt(&sql, args![id], reservation)
    }

    /// Ids of every reservation (for `archive rebuild`).
    pub fn reservation_ids(&self) -> Result<Vec<ReservationId>> {
        self.query_vec("SELECT id FROM file_reservations ORDER BY id", args![], |r| r.get(0))
    }

    /// Inserts a reservation; returns its id.
    pub fn insert_reservation(&self, new: &NewReservation<'_>) -> Result<ReservationId> {
        self.insert_returning_id(
            "INSERT INTO file_reservations (project_id, agent_id, path_pattern, \"exclusive\", \
             reason, created_ts, expires_ts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            args![
                new.project_id,
                new.agent_id,
                new.path_pattern,
                new.exclusive,
                new.reason,
                new.created_ts,
                new.expires_ts
            ],
        )
        .map(ReservationId)
    }

    /// Refreshes a reservation in place (same agent, same pattern asked again).
    pub fn refresh_reservation(
        &self,
        id: ReservationId,
        exclusive: bool,
        reason: &str,
        expires_ts: Timestamp,
    ) -> Result<()> {
        self.execute(
            "UPDATE file_reservations SET \"exclusive\" = ?2, reason = ?3, expires_ts = ?4 \
             WHERE id = ?1",
            args![id, exclusive, reason, expires_ts],
        )?;
        Ok(())
    }

    /// Moves a reservation's expiry (renew).
    pub fn set_reservation_expiry(&self, id: ReservationId, expires_ts: Timestamp) -> Result<()> {
        self.execute(
            "UPDATE file_reservations SET expires_ts = ?2 WHERE id = ?1",
            args![id, expires_ts],
        )?;
        Ok(())
    }

    /// Releases a reservation at `now` unless it is released already; says whether it was.
    pub fn release_reservation(&self, id: ReservationId, now: Timestamp) -> Result<bool> {
        let changed = self.execute(
            "UPDATE file_reservations SET released_ts = ?2 WHERE id = ?1 AND released_ts IS NULL",
            args![id, now],
        )?;
        Ok(changed > 0)
    }

    /// Whether the project holds reservations expired but not released.
    pub fn has_expired_reservations(&self, project_id: ProjectId, now: Timestamp) -> Result<bool> {
        self.query_value(
            "SELECT EXISTS (SELECT 1 FROM file_reservations WHERE project_id = ?1 \
             AND released_ts IS NULL AND expires_ts < ?2)",
            args![project_id, now],
        )
    }

    /// Releases, at `now`, every unreleased reservation of the project that expired before
    /// `now`; returns their ids.
    pub fn release_expired_reservations(
        &self,
        project_id: ProjectId,
        now: Timestamp,
    ) -> Result<Vec<ReservationId>> {
        // Every delivery sweeps, and there is seldom anything to release: a read of the
        // covering index first costs far less than an UPDATE that finds nothing (a write
        // statement opens its own statement journal).
        if !self.has_expired_reservations(project_id, now)? {
            return Ok(Vec::new());
        }
        self.query_vec(
            "UPDATE file_reservations SET released_ts = ?2 WHERE project_id = ?1 \
             AND released_ts IS NULL AND expires_ts < ?2 RETURNING id",
            args![project_id, now],
            |r| r.get(0),
        )
    }

    /// The agent's latest mail activity in the project: the newest of the messages it sent
    /// there and of its read and acknowledgement times on the project's messages.
    pub fn last_mail_activity(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
    ) -> Result<Option<Timestamp>> {
        self.query_row(
            "SELECT max( \
                   coalesce((SELECT max(created_ts) FROM messages \
                             WHERE project_id = ?1 AND sender_id = ?2), ''), \
                   coalesce((SELECT max(mr.ack_ts) FROM message_recipients mr \
                             JOIN messages m ON m.id = mr.message_id \
                             WHERE m.project_id = ?1 AND mr.agent_id = ?2), ''), \
                   coalesce((SELECT max(mr.read_ts) FROM message_recipients mr \
                             JOIN messages m ON m.id = mr.message_id \
                             WHERE m.project_id = ?1 AND mr.agent_id = ?2), ''))",
            args![project_id, agent_id],
            |r| {
                let text: Option<&str> = r.get(0)?;
                Ok(text.filter(|t| !t.is_empty()).and_then(Timestamp::parse_db))
            },
        )
    }
}
