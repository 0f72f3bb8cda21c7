//! The reference's notification signal files (`NOTIFICATIONS_*`, off by default): after a
//! delivery, each `to` and `cc` recipient's `<NOTIFICATIONS_SIGNALS_DIR>/projects/<slug>/
//! agents/<Name>.signal` is written (`{"timestamp", "project", "agent", "message": {"id",
//! "from", "subject", "importance"}}`, the message only with `NOTIFICATIONS_INCLUDE_METADATA`),
//! at most once per `NOTIFICATIONS_DEBOUNCE_MS` for one agent; fetch_inbox removes the reader's.
//! A file watcher (inotify, `fswatch`, a shell loop) can wake an agent that does not keep an
//! MCP session. Best effort: a failure is logged and never fails a call. The push watcher
//! (`mcp/subscriptions.rs`) hands over each committed message.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mailroom_core::ops::push::Committed;
use serde_json::json;

/// `NOTIFICATIONS_*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalSettings {
    /// `NOTIFICATIONS_ENABLED` (false).
    pub enabled: bool,
    /// `NOTIFICATIONS_SIGNALS_DIR` (`~/.mcp_agent_mail/signals`).
    pub dir: PathBuf,
    /// `NOTIFICATIONS_INCLUDE_METADATA` (true).
    pub include_metadata: bool,
    /// `NOTIFICATIONS_DEBOUNCE_MS` (100).
    pub debounce: Duration,
}

impl Default for SignalSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            dir: PathBuf::from("~/.mcp_agent_mail/signals"),
            include_metadata: true,
            debounce: Duration::from_millis(100),
        }
    }
}

impl SignalSettings {
    /// Reads the variables over `self`; a value that does not parse is an error naming it.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        let flag = |name: &str, current: bool| {
            lookup(name).map_or(Ok(current), |v| mailroom_core::config::parse_bool(name, &v))
        };
        self.enabled = flag("NOTIFICATIONS_ENABLED", self.enabled)?;
        self.include_metadata = flag("NOTIFICATIONS_INCLUDE_METADATA", self.include_metadata)?;
        if let Some(dir) = lookup("NOTIFICATIONS_SIGNALS_DIR") {
            self.dir = PathBuf::from(dir.trim());
        }
        if let Some(dir) = self.dir.to_str() {
            self.dir = mailroom_core::config::expand_home(dir, lookup);
        }
        if let Some(ms) = lookup("NOTIFICATIONS_DEBOUNCE_MS") {
            let ms: u64 = ms.trim().parse().map_err(|_| {
                format!(
                    "NOTIFICATIONS_DEBOUNCE_MS must be a whole number of milliseconds, got {ms:?}"
                )
            })?;
            self.debounce = Duration::from_millis(ms);
        }
        Ok(())
    }
}

/// The signal files and their debounce.
pub struct Signals {
    settings: SignalSettings,
    last: Mutex<HashMap<(String, String), Instant>>,
}

impl Signals {
    pub fn new(settings: SignalSettings) -> Self {
        Self { settings, last: Mutex::new(HashMap::new()) }
    }

    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// Writes the signal of each `to` and `cc` recipient of `messages` not signalled within
    /// the debounce (blocking file writes: call it off the async threads); how many were
    /// written. An agent with several of the messages is written once, with the newest: the
    /// file it would be left with had each been written in turn. So a burst read in one look
    /// costs a write per agent, not per message, and the writes cannot fall ever further
    /// behind the sends.
    pub fn emit(&self, messages: &[Committed]) -> usize {
        if !self.settings.enabled {
            return 0;
        }
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let mut written = 0;
        for message in messages.iter().rev() {
            let told = message.recipients.iter().filter(|r| !message.blind.contains(r));
            for agent in told {
                if seen.insert((&message.project_slug, agent))
                    && self.due(&message.project_slug, agent)
                {
                    self.write(message, agent);
                    written += 1;
                }
            }
        }
        written
    }

    /// Writes `agent`'s signal of `message`.
    fn write(&self, message: &Committed, agent: &str) {
        let mut signal = json!({"timestamp": mailroom_core::model::time::Timestamp::now().to_iso(),
            "project": message.project_slug, "agent": agent});
        if self.settings.include_metadata {
            signal["message"] = json!({"id": i64::from(message.message_id),
                "from": message.sender, "subject": message.subject,
                "importance": message.importance});
        }
        let Some(path) = self.path(&message.project_slug, agent) else { return };
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
            let text = serde_json::to_string_pretty(&signal).unwrap_or_default();
            overwrite(&path, text.as_bytes())
        });
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot write a notification signal");
        }
    }

    /// Removes `agent`'s signal in `project_slug` (it read its inbox); none there is no error.
    pub fn clear(&self, project_slug: &str, agent: &str) {
        let Some(path) = self.path(project_slug, agent) else { return };
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a notification signal");
            }
            _ => {}
        }
    }

    /// Whether `agent` may be signalled now (and, if so, notes it was).
    fn due(&self, project: &str, agent: &str) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let key = (project.to_string(), agent.to_string());
        if last.get(&key).is_some_and(|at| now.duration_since(*at) < self.settings.debounce) {
            return false;
        }
        last.insert(key, now);
        true
    }

    /// The signal file's path; `None` for a name that could leave the directory.
    fn path(&self, project_slug: &str, agent: &str) -> Option<PathBuf> {
        let safe = |part: &str| {
            !part.is_empty() && !part.starts_with('.') && !part.contains(['/', '\\', '\0'])
        };
        (safe(project_slug) && safe(agent)).then(|| {
            self.settings
                .dir
                .join("projects")
                .join(project_slug)
                .join("agents")
                .join(format!("{agent}.signal"))
        })
    }
}

/// Writes `bytes` over the file at `path` (created if missing), in place, as the reference's
/// `write_text` does, so a watcher sees the same events (a modification and a close after
/// writing). The new content is written first and the file cut to its length after, rather
/// than emptied first: on ext4 emptying a file that has data makes the next close write the
/// old blocks back first (its "replace by truncate" heuristic), a disk write per signal.
fn overwrite(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    file.write_all(bytes)?;
    file.set_len(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use mailroom_core::records::MessageId;
    use serde_json::Value;

    use super::*;

    fn message(id: i64, to: &[&str], bcc: &[&str]) -> Committed {
        Committed {
            message_id: MessageId(id),
            project_slug: "proj".to_string(),
            thread_id: None,
            subject: format!("message {id}"),
            importance: "normal".to_string(),
            sender: "BlueLake".to_string(),
            recipients: to.iter().chain(bcc).map(|r| (*r).to_string()).collect(),
            blind: bcc.iter().map(|r| (*r).to_string()).collect(),
        }
    }

    #[test]
    fn an_overwrite_leaves_exactly_the_new_content() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("a.signal");
        overwrite(&path, b"a longer first content").expect("first");
        overwrite(&path, b"short").expect("second");
        assert_eq!(std::fs::read(&path).expect("read"), b"short");
        overwrite(&path, b"longer than short").expect("third");
        assert_eq!(std::fs::read(&path).expect("read"), b"longer than short");
    }

    #[test]
    fn a_burst_writes_each_agent_once_with_its_newest_message_and_never_for_bcc() {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = SignalSettings {
            enabled: true,
            dir: dir.path().to_path_buf(),
            debounce: Duration::ZERO,
            ..SignalSettings::default()
        };
        let signals = Signals::new(settings.clone());
        let burst = [
            message(1, &["GreenCastle"], &["RedStone"]),
            message(2, &["GreenCastle", "GoldHill"], &[]),
            message(3, &["GreenCastle"], &[]),
        ];
        assert_eq!(signals.emit(&burst), 2, "GreenCastle and GoldHill, once each");
        let agents = dir.path().join("projects/proj/agents");
        let read = |agent: &str| -> Value {
            let text = std::fs::read_to_string(agents.join(format!("{agent}.signal")));
            serde_json::from_str(&text.expect("a signal")).expect("JSON")
        };
        assert_eq!(read("GreenCastle")["message"]["id"], 3, "the newest message");
        assert_eq!(read("GoldHill")["message"]["id"], 2);
        assert!(!agents.join("RedStone.signal").exists(), "no signal for a bcc recipient");

        // Within the debounce, an agent is not written again.
        let slow = Signals::new(SignalSettings { debounce: Duration::from_secs(3600), ..settings });
        assert_eq!(slow.emit(&[message(4, &["GreenCastle"], &[])]), 1);
        assert_eq!(slow.emit(&[message(5, &["GreenCastle"], &[])]), 0);
        assert_eq!(read("GreenCastle")["message"]["id"], 4);
    }
}
