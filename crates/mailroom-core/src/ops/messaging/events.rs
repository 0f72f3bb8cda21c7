//! fetch_inbox_events: what happened to an agent's mailbox since a cursor (deliveries, reads,
//! acknowledgements), oldest first, from the `mailbox_events` log that triggers write in the
//! same transaction as the change (store/db/mailbox_events.rs), and the upkeep's pruning of
//! that log.
//!
//! A cursor is a position in the whole database's log, not the agent's: `mb1.<database
//! id>.<event id>`, meaning "every event up to this id has been seen". So a quiet agent's
//! cursor still moves with the log (`next_cursor` reaches the newest id when the page ends
//! the agent's events), and only a cursor left unused past the retention window expires.

use serde::Serialize;

use crate::error::{Category, Error, Result};
use crate::model::time::Timestamp;
use crate::ops::output::MessageOut;
use crate::ops::{Mailroom, resolve};
use crate::records::{MailboxEventKind, MessageId};
use crate::store::Db;
use crate::store::db::mailbox_events::{EventLogState, MailboxEvent};

/// Events a page holds by default.
const DEFAULT_EVENTS_LIMIT: i64 = 100;
/// Most events one page holds.
pub const MAX_EVENTS_LIMIT: i64 = 1000;
/// The cursor's version prefix.
const CURSOR_PREFIX: &str = "mb1";
/// The cursor meaning "only what happens from now on".
pub const TAIL: &str = "tail";
/// Longest piece of a refused cursor an error quotes.
const QUOTED_CURSOR_CHARS: usize = 80;
/// Events one pruning step removes (one write job each).
const PRUNE_BATCH: i64 = 5000;
/// Pruning steps one upkeep run takes at most, so a long backlog cannot hold the writer.
const PRUNE_STEPS: usize = 20;

/// Arguments of fetch_inbox_events.
#[derive(Debug, Clone, Default)]
pub struct FetchInboxEvents {
    pub project_key: String,
    pub agent_name: String,
    /// A `next_cursor` or `tail_cursor` given out before, [`TAIL`], or `None` for the oldest
    /// event kept.
    pub cursor: Option<String>,
    /// Most events to return (1..=[`MAX_EVENTS_LIMIT`], default 100).
    pub limit: Option<i64>,
}

/// One event, as fetch_inbox_events lists it.
#[derive(Debug, Clone, Serialize)]
pub struct EventOut {
    pub id: i64,
    pub kind: MailboxEventKind,
    pub message_id: MessageId,
    pub ts: Timestamp,
    /// For a delivery: the message as fetch_inbox lists it (without its body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageOut>,
}

/// Result of fetch_inbox_events.
#[derive(Debug, Clone, Serialize)]
pub struct InboxEvents {
    pub events: Vec<EventOut>,
    /// Resume here: after the last event returned (or at the newest position when the page
    /// holds all of the agent's events so far).
    pub next_cursor: String,
    /// The newest position in the log: pass it to hear only of what happens from now on.
    pub tail_cursor: String,
}

/// Where a read starts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Start {
    /// The oldest event kept.
    Oldest,
    /// The newest position.
    Tail,
    /// After this event, in the database of this identity.
    After { database_id: String, id: i64 },
}

impl Start {
    fn parse(cursor: Option<&str>) -> Result<Start> {
        let Some(text) = cursor.map(str::trim).filter(|c| !c.is_empty()) else {
            return Ok(Start::Oldest);
        };
        if text.eq_ignore_ascii_case(TAIL) {
            return Ok(Start::Tail);
        }
        let mut parts = text.split('.');
        let (Some(CURSOR_PREFIX), Some(database_id), Some(id), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(not_a_cursor(text));
        };
        // Digits only, spelled as the server writes them (so `+5` or `05` are refused).
        let canonical = |digits: &str| {
            !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'))
        };
        let known_id =
            !database_id.is_empty() && database_id.bytes().all(|b| b.is_ascii_hexdigit());
        match id.parse::<i64>() {
            Ok(id_value) if known_id && canonical(id) => {
                Ok(Start::After { database_id: database_id.to_string(), id: id_value })
            }
            _ => Err(not_a_cursor(text)),
        }
    }

    /// The event id to read after, checked against where the log stands.
    fn resolve(&self, log: &EventLogState, raw: &str) -> Result<i64> {
        match self {
            Start::Oldest => Ok(log.pruned_through),
            Start::Tail => Ok(log.newest),
            Start::After { database_id, id } => {
                if *database_id != log.database_id || *id > log.newest {
                    Err(ahead(raw, log))
                } else if *id < log.pruned_through {
                    Err(expired(raw))
                } else {
                    Ok(*id)
                }
            }
        }
    }
}

/// The cursor for a position of this database's log.
fn cursor_at(log: &EventLogState, id: i64) -> String {
    format!("{CURSOR_PREFIX}.{}.{id}", log.database_id)
}

fn quoted(cursor: &str) -> String {
    let mut text: String = cursor.chars().take(QUOTED_CURSOR_CHARS).collect();
    if cursor.chars().count() > QUOTED_CURSOR_CHARS {
        text.push('…');
    }
    text
}

const START_AGAIN: &str = "pass cursor \"tail\" to hear only of what happens from now on, or \
     leave cursor out to read every event still kept";

fn not_a_cursor(cursor: &str) -> Error {
    Error::invalid_kind(
        "INVALID_CURSOR",
        format!(
            "cursor '{}' is not a cursor fetch_inbox_events gave out: pass its next_cursor or \
             tail_cursor as given; {START_AGAIN}.",
            quoted(cursor)
        ),
    )
}

fn ahead(cursor: &str, log: &EventLogState) -> Error {
    Error::new(
        Category::Conflict,
        "CURSOR_AHEAD",
        format!(
            "cursor '{}' is ahead of this mailbox's event log (its newest position is {}): it \
             comes from another database or one restored from an older copy, so events since \
             it cannot be told apart; {START_AGAIN}.",
            quoted(cursor),
            cursor_at(log, log.newest)
        ),
    )
}

fn expired(cursor: &str) -> Error {
    Error::new(
        Category::Conflict,
        "CURSOR_EXPIRED",
        format!(
            "cursor '{}' has expired: events after it were pruned \
             (MAILBOX_EVENTS_RETENTION_DAYS), so some may be missing; read the inbox with \
             fetch_inbox to catch up, then {START_AGAIN}.",
            quoted(cursor)
        ),
    )
}

fn events_limit(limit: Option<i64>) -> Result<i64> {
    match limit {
        Some(l) if l < 1 => {
            Err(Error::invalid_kind("INVALID_LIMIT", format!("limit must be at least 1 (got {l})")))
        }
        Some(l) => Ok(l.min(MAX_EVENTS_LIMIT)),
        None => Ok(DEFAULT_EVENTS_LIMIT),
    }
}

impl Mailroom {
    /// An agent's mailbox events after a cursor, oldest first.
    pub async fn fetch_inbox_events(&self, req: FetchInboxEvents) -> Result<InboxEvents> {
        let limit = events_limit(req.limit)?;
        let raw = req.cursor.clone().unwrap_or_default();
        let start = Start::parse(req.cursor.as_deref())?;
        self.store
            .read(move |db| {
                let project = resolve::project(db, &req.project_key)?;
                let agent = resolve::agent(db, &project, &req.agent_name, "agent_name")?;
                let log = db.mailbox_event_log()?;
                let after = start.resolve(&log, raw.trim())?;
                // Bounded by the newest id read above: later events may still be committing.
                let rows = db.mailbox_events(agent.id, after, log.newest, limit)?;
                // The reads run outside one transaction: if pruning passed the start meanwhile,
                // the page may lack events, so it is refused as expired.
                if db.mailbox_event_log()?.pruned_through > after {
                    return Err(expired(&raw));
                }
                let full = usize::try_from(limit).is_ok_and(|l| rows.len() >= l);
                let next = match rows.last() {
                    Some(last) if full => last.id,
                    _ => log.newest,
                };
                Ok(InboxEvents {
                    events: rows.into_iter().map(event_out).collect(),
                    next_cursor: cursor_at(&log, next),
                    tail_cursor: cursor_at(&log, log.newest),
                })
            })
            .await
    }

    /// Removes mailbox events older than `retention_days`, oldest first, in bounded steps;
    /// returns how many it removed.
    pub async fn prune_mailbox_events(&self, retention_days: i64) -> Result<usize> {
        let cutoff = Timestamp::now().plus_seconds(-retention_days.saturating_mul(86_400));
        let prune = move |db: &Db<'_>, batch| db.prune_mailbox_events(cutoff, batch);
        self.store.write_in_steps(PRUNE_BATCH, PRUNE_STEPS, prune).await
    }
}

fn event_out(event: MailboxEvent) -> EventOut {
    EventOut {
        id: event.id,
        kind: event.kind,
        message_id: event.message_id,
        ts: event.ts,
        message: event.message.as_ref().map(|m| MessageOut::from_listing(m, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> EventLogState {
        EventLogState { database_id: "00ff".into(), pruned_through: 10, newest: 20 }
    }

    #[test]
    fn cursors_parse_and_resolve() {
        let check = |cursor: Option<&str>, expected: std::result::Result<i64, &str>| {
            let got = Start::parse(cursor).and_then(|s| s.resolve(&log(), cursor.unwrap_or("")));
            match (got, expected) {
                (Ok(id), Ok(want)) => assert_eq!(id, want, "{cursor:?}"),
                (Err(e), Err(kind)) => assert_eq!(e.kind, kind, "{cursor:?}: {}", e.message),
                (got, want) => panic!("{cursor:?}: got {got:?}, want {want:?}"),
            }
        };
        check(None, Ok(10));
        check(Some("  "), Ok(10));
        check(Some("tail"), Ok(20));
        check(Some("TAIL"), Ok(20));
        check(Some("mb1.00ff.10"), Ok(10));
        check(Some("mb1.00ff.15"), Ok(15));
        check(Some("mb1.00ff.20"), Ok(20));
        check(Some("mb1.00ff.9"), Err("CURSOR_EXPIRED"));
        check(Some("mb1.00ff.21"), Err("CURSOR_AHEAD"));
        check(Some("mb1.abcd.15"), Err("CURSOR_AHEAD"));
        for garbage in ["x", "mb1.00ff", "mb1.00ff.-1", "mb1.00ff.+5", "mb1.00ff.05", "mb2.00ff.5"]
        {
            check(Some(garbage), Err("INVALID_CURSOR"));
        }
        check(Some("mb1.zz.5"), Err("INVALID_CURSOR"));
        check(Some("mb1.00ff.5.1"), Err("INVALID_CURSOR"));
        check(Some("mb1.00ff.99999999999999999999"), Err("INVALID_CURSOR"));
    }

    #[test]
    fn errors_quote_a_bounded_cursor() {
        let long = "x".repeat(10_000);
        let err = Start::parse(Some(&long)).expect_err("garbage");
        assert!(err.message.len() < 600, "{}", err.message);
        assert!(err.message.contains("cursor 'xxx"), "{}", err.message);
    }

    #[test]
    fn limits_are_bounded() {
        assert_eq!(events_limit(None).expect("default"), DEFAULT_EVENTS_LIMIT);
        assert_eq!(events_limit(Some(i64::MAX)).expect("huge"), MAX_EVENTS_LIMIT);
        assert_eq!(events_limit(Some(0)).expect_err("zero").kind, "INVALID_LIMIT");
    }
}
