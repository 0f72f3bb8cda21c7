//! The reference's notification signal files (`NOTIFICATIONS_*`, off by default): after a
//! delivery, each `to` and `cc` recipient's `<NOTIFICATIONS_SIGNALS_DIR>/projects/<slug>/
//! agents/<Name>.signal` is written (`{"timestamp", "project", "agent", "message": {"id",
//! "from", "subject", "importance"}}`, the message only with `NOTIFICATIONS_INCLUDE_METADATA`),
//! at most once per `NOTIFICATIONS_DEBOUNCE_MS` for one agent; fetch_inbox removes the reader's.
//! A file watcher (inotify, `fswatch`, a shell loop) can wake an agent that does not keep an
//! MCP session. Best effort: a failure is logged and never fails a call. The push watcher
//! (`mcp/subscriptions.rs`) hands over each committed message.

use std::collections::HashMap;
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
    /// the debounce (blocking file writes: call it off the async threads).
    pub fn emit(&self, messages: &[Committed]) {
        if !self.settings.enabled {
            return;
        }
        for message in messages {
            let told = message.recipients.iter().filter(|r| !message.blind.contains(r));
            for agent in told {
                if !self.due(&message.project_slug, agent) {
                    continue;
                }
                let mut signal = json!({"timestamp": mailroom_core::model::time::Timestamp::now().to_iso(),
                    "project": message.project_slug, "agent": agent});
                if self.settings.include_metadata {
                    signal["message"] = json!({"id": i64::from(message.message_id),
                        "from": message.sender, "subject": message.subject,
                        "importance": message.importance});
                }
                let Some(path) = self.path(&message.project_slug, agent) else { continue };
                let written =
                    path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
                        let text = serde_json::to_string_pretty(&signal).unwrap_or_default();
                        std::fs::write(&path, text)
                    });
                if let Err(e) = written {
                    tracing::warn!(path = %path.display(), error = %e, "cannot write a notification signal");
                }
            }
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
