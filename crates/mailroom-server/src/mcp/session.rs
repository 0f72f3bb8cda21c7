//! MCP sessions of clients that initialize. Clients that do not are served statelessly,
//! as the reference serves everyone. Servers sharing a PostgreSQL database also record each
//! session there (`ops/sessions.rs`), and a session another server opened is adopted here
//! on first use ([`Sessions::adopt`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// One initialized client.
#[derive(Debug, Clone)]
pub struct Session {
    pub protocol_version: String,
    pub last_seen: Instant,
    /// When this server last wrote the session's use to a shared database.
    pub recorded: Instant,
}

/// How often a shared session's use is written to the database (it is forgotten a week
/// after the last write).
pub const RECORD_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// The session table, bounded: beyond `capacity` the least recently seen session is dropped.
pub struct Sessions {
    table: Mutex<HashMap<String, Session>>,
    capacity: usize,
}

impl Sessions {
    /// An empty table holding at most `capacity` sessions.
    pub fn new(capacity: usize) -> Self {
        Self { table: Mutex::new(HashMap::new()), capacity: capacity.max(1) }
    }

    /// Opens a session and returns its id (128 random bits, hex), with the id of the session
    /// dropped to make room, if one was (its bindings and subscriptions go with it).
    pub fn open(&self, protocol_version: &str) -> (String, Option<String>) {
        let id = new_session_id();
        let evicted = self.adopt(&id, protocol_version);
        (id, evicted)
    }

    /// Takes session `id` (opened on another server sharing the database) into the table;
    /// the id of the session dropped to make room, if one was.
    pub fn adopt(&self, id: &str, protocol_version: &str) -> Option<String> {
        let now = Instant::now();
        let session = Session {
            protocol_version: protocol_version.to_string(),
            last_seen: now,
            recorded: now,
        };
        let mut table = self.lock();
        let mut evicted = None;
        if table.len() >= self.capacity && !table.contains_key(id) {
            evicted = table.iter().min_by_key(|(_, s)| s.last_seen).map(|(k, _)| k.clone());
            if let Some(oldest) = &evicted {
                table.remove(oldest);
            }
        }
        table.insert(id.to_string(), session);
        evicted
    }

    /// Whether the session's use is due to be written to a shared database again; if so, it
    /// counts as written from now.
    pub fn due_for_record(&self, id: &str) -> bool {
        let mut table = self.lock();
        let Some(session) = table.get_mut(id) else { return false };
        if session.recorded.elapsed() < RECORD_EVERY {
            return false;
        }
        session.recorded = Instant::now();
        true
    }

    /// Marks the session seen; `None` if it does not exist (expired or deleted).
    pub fn touch(&self, id: &str) -> Option<Session> {
        let mut table = self.lock();
        let session = table.get_mut(id)?;
        session.last_seen = Instant::now();
        Some(session.clone())
    }

    /// Ends a session; false if it did not exist.
    pub fn close(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// Number of open sessions.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts
        // and removes), so a poisoned lock is still safe to use.
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `id` has the form of the ids sessions get (32 lowercase hex digits): only such an id
/// is looked up in, or ended in, a shared database, so a client's arbitrary header costs no
/// query and no oversized notice.
pub fn has_issued_form(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Uniqueness, not secrecy, is what a session id needs; fall back to time + counter.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        bytes[..8].copy_from_slice(&t.to_le_bytes());
        bytes[8..].copy_from_slice(&n.to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_open_touch_close_and_stay_bounded() {
        let sessions = Sessions::new(2);
        let (a, none) = sessions.open("2025-06-18");
        assert_eq!((a.len(), none), (32, None));
        assert!(sessions.touch(&a).is_some());
        let _b = sessions.open("2025-06-18");
        let (_c, evicted) = sessions.open("2025-11-25");
        assert_eq!(evicted.as_deref(), Some(a.as_str()));
        assert_eq!(sessions.len(), 2);
        assert!(sessions.touch("nope").is_none());
        assert!(sessions.touch(&a).is_none(), "the least recently seen session is dropped");
        assert!(!sessions.close("nope"));
        assert!(has_issued_form(&a));
        for other in ["", "nope", &a.to_uppercase(), &format!("{a}0"), &"x".repeat(32)] {
            assert!(!has_issued_form(other), "{other:?}");
        }
    }

    /// Adopting a session already in a full table drops no other.
    #[test]
    fn adopting_a_session_held_already_evicts_nobody() {
        let sessions = Sessions::new(2);
        let (a, _) = sessions.open("2025-06-18");
        let (b, _) = sessions.open("2025-06-18");
        assert_eq!(sessions.adopt(&b, "2025-06-18"), None);
        assert!(sessions.touch(&a).is_some() && sessions.touch(&b).is_some());
        assert_eq!(sessions.adopt("c".repeat(32).as_str(), "2025-06-18"), Some(a));
    }
}
