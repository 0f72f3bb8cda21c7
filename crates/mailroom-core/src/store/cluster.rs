//! Several servers on one PostgreSQL database (docs/scale-out.md): what they tell each other
//! and who among them writes the archive.
//!
//! Each write batch that changed something another server cares about ends, inside its
//! transaction, with a `NOTIFY` ([`Notice`]), so PostgreSQL delivers it exactly when the batch
//! commits; every server listens (`postgres::Listener`) and turns the notices of the others
//! into what its own commits do: its views' change count moves, its archive hears of queued
//! work and of the leader's progress. The archive is written by one server, the holder of
//! the lease (`postgres::Lease`); on SQLite the one server always leads ([`Leadership::Sole`]).

use std::sync::Arc;

use super::db::postgres::Lease;

/// What a committed batch tells the other servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Notice {
    /// The server that committed it (random per start), so it can skip its own.
    pub instance: u64,
    /// It changed rows a view shows.
    pub views: bool,
    /// Archive rows it queued.
    pub queued: usize,
    /// Archive rows it took off the queue (the leader's progress).
    pub archived: usize,
}

impl Notice {
    /// Whether there is anything to tell.
    pub fn worth_sending(&self) -> bool {
        self.views || self.queued > 0 || self.archived > 0
    }

    /// The payload: four numbers.
    pub fn encode(&self) -> String {
        format!("{} {} {} {}", self.instance, u8::from(self.views), self.queued, self.archived)
    }

    /// The notice a payload carries; `None` for anything else on the channel.
    pub fn parse(payload: &str) -> Option<Self> {
        let mut fields = payload.split(' ');
        let mut next = || fields.next().and_then(|f| f.parse::<u64>().ok());
        let notice = Notice {
            instance: next()?,
            views: next()? != 0,
            queued: usize::try_from(next()?).ok()?,
            archived: usize::try_from(next()?).ok()?,
        };
        fields.next().is_none().then_some(notice)
    }
}

/// What another server said on the channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Heard {
    /// A batch it committed.
    Commit(Notice),
    /// An MCP session it ended (`DELETE /mcp`): whichever server still holds it drops it.
    SessionEnded(String),
}

/// The payload that tells the other servers session `id` ended.
pub(crate) fn session_ended(id: &str) -> String {
    format!("end {id}")
}

impl Heard {
    /// What a payload says; `None` for anything else on the channel.
    pub fn parse(payload: &str) -> Option<Self> {
        match payload.strip_prefix("end ") {
            Some(id) if !id.is_empty() => Some(Heard::SessionEnded(id.to_string())),
            Some(_) => None,
            None => Notice::parse(payload).map(Heard::Commit),
        }
    }
}

/// A random number naming this server among those on its database.
pub(crate) fn new_instance_id() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        // Distinct, not secret: the process id and the clock do.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        (u64::from(std::process::id()) << 32) | u64::from(nanos)
    })
}

/// Whether this server writes the archive and runs the upkeep.
#[derive(Clone)]
pub enum Leadership {
    /// The only server on its database (SQLite): always.
    Sole,
    /// One of several on PostgreSQL: while it holds the lease.
    Lease(Arc<Lease>),
    /// On PostgreSQL, never: a command that opens the database for one call leaves the
    /// archive and the upkeep to the servers.
    Never,
}

impl Leadership {
    /// Whether this server leads now.
    pub fn held(&self) -> bool {
        match self {
            Leadership::Sole => true,
            Leadership::Lease(lease) => lease.held(),
            Leadership::Never => false,
        }
    }

    /// Leaves the lead to the other servers for `pause`, when it can move (a leader that
    /// cannot write the archive); the only server keeps it.
    pub fn step_aside(&self, pause: std::time::Duration) {
        if let Leadership::Lease(lease) = self {
            lease.step_aside(pause);
        }
    }

    /// Gives the lead up for good (the server stops): another server may take it at once.
    pub fn release(&self) {
        if let Leadership::Lease(lease) = self {
            lease.stop();
        }
    }

    /// Whether leadership can move between servers (several may share the database).
    pub fn shared(&self) -> bool {
        !matches!(self, Leadership::Sole)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_and_foreign_payloads_are_ignored() {
        let notice = Notice { instance: u64::MAX, views: true, queued: 3, archived: 0 };
        assert_eq!(Notice::parse(&notice.encode()), Some(notice));
        assert!(notice.worth_sending());
        let quiet = Notice { instance: 1, views: false, queued: 0, archived: 0 };
        assert!(!quiet.worth_sending());
        for foreign in ["", "hello", "1 1 1", "1 1 1 1 1", "-1 0 0 0", "1 x 0 0"] {
            assert_eq!(Notice::parse(foreign), None, "{foreign:?}");
        }
        assert_eq!(Heard::parse(&notice.encode()), Some(Heard::Commit(notice)));
        let ended = Heard::parse(&session_ended("ab12"));
        assert_eq!(ended, Some(Heard::SessionEnded("ab12".to_string())));
        assert_eq!(Heard::parse("end "), None);
    }
}
