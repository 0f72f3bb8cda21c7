//! Tool instrumentation (spec/tools.md §0.7): per-tool call and error counters and a ring of
//! the 4096 most recent calls, recorded by the dispatcher for every tool call; plus the tool
//! metadata (cluster, capabilities, complexity; §12) the tooling resources report.
//!
//! Counters are atomics; the ring takes a short mutex that is never held across `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use mailroom_core::model::time::Timestamp;
use serde_json::Value;

/// How many recent calls the ring keeps.
pub const RECENT_CAPACITY: usize = 4096;

/// Static facts about a tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolMeta {
    pub name: &'static str,
    pub cluster: &'static str,
    /// Sorted.
    pub capabilities: &'static [&'static str],
    pub complexity: &'static str,
}

const fn meta(
    name: &'static str,
    cluster: &'static str,
    capabilities: &'static [&'static str],
) -> ToolMeta {
    ToolMeta { name, cluster, capabilities, complexity: "medium" }
}

/// Every tool the reference knows (built or not yet), alphabetically (spec/tools.md §12).
const TOOL_METADATA: [ToolMeta; 34] = [
    meta("acknowledge_message", "messaging", &["ack", "messaging"]),
    meta("acquire_build_slot", "build_slots", &["build"]),
    meta("create_agent_identity", "identity", &["identity"]),
    meta("ensure_product", "product_bus", &["product"]),
    ToolMeta {
        complexity: "low",
        ..meta("ensure_project", "infrastructure", &["infrastructure", "storage"])
    },
    meta("fetch_inbox", "messaging", &["messaging", "read"]),
    meta("fetch_inbox_product", "product_bus", &["messaging", "read"]),
    meta("file_reservation_paths", "file_reservations", &["file_reservations", "repository"]),
    meta(
        "force_release_file_reservation",
        "file_reservations",
        &["file_reservations", "repository"],
    ),
    ToolMeta { complexity: "low", ..meta("health_check", "infrastructure", &["infrastructure"]) },
    meta("install_precommit_guard", "infrastructure", &["infrastructure", "repository"]),
    meta("list_contacts", "contact", &["audit", "contact"]),
    meta("macro_contact_handshake", "workflow_macros", &["contact", "messaging", "workflow"]),
    meta(
        "macro_file_reservation_cycle",
        "workflow_macros",
        &["file_reservations", "repository", "workflow"],
    ),
    meta("macro_prepare_thread", "workflow_macros", &["messaging", "summarization", "workflow"]),
    meta(
        "macro_start_session",
        "workflow_macros",
        &["file_reservations", "identity", "messaging", "workflow"],
    ),
    meta("mark_message_read", "messaging", &["messaging", "read"]),
    meta("products_link", "product_bus", &["product"]),
    meta("register_agent", "identity", &["identity"]),
    meta("release_build_slot", "build_slots", &["build"]),
    meta("release_file_reservations", "file_reservations", &["file_reservations"]),
    meta("renew_build_slot", "build_slots", &["build"]),
    meta("renew_file_reservations", "file_reservations", &["file_reservations"]),
    meta("reply_message", "messaging", &["messaging", "write"]),
    meta("request_contact", "contact", &["contact"]),
    meta("respond_contact", "contact", &["contact"]),
    meta("search_messages", "search", &["search"]),
    meta("search_messages_product", "product_bus", &["search"]),
    meta("send_message", "messaging", &["messaging", "write"]),
    meta("set_contact_policy", "contact", &["configure", "contact"]),
    meta("summarize_thread", "search", &["search", "summarization"]),
    meta("summarize_thread_product", "product_bus", &["search", "summarization"]),
    meta("uninstall_precommit_guard", "infrastructure", &["infrastructure", "repository"]),
    meta("whois", "identity", &["audit", "identity"]),
];

/// The metadata of a tool; tools outside the reference's table (mailroom's own, e.g.
/// list_agents) get the "other" cluster.
pub fn tool_meta(name: &str) -> ToolMeta {
    TOOL_METADATA
        .binary_search_by(|m| m.name.cmp(name))
        .map(|i| TOOL_METADATA[i])
        .unwrap_or(ToolMeta { name: "", cluster: "other", capabilities: &[], complexity: "medium" })
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    errors: AtomicU64,
}

/// One recorded call.
#[derive(Debug, Clone)]
pub struct RecentCall {
    pub at: Timestamp,
    pub tool: &'static str,
    pub project: Option<String>,
    pub agent: Option<String>,
}

/// Counters per tool and the recent-call ring.
pub struct Instruments {
    counters: HashMap<&'static str, Counters>,
    recent: Mutex<VecDeque<RecentCall>>,
}

/// Counts of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCounts {
    pub name: &'static str,
    pub calls: u64,
    pub errors: u64,
}

impl Instruments {
    /// Counters for these tools (the registry's, fixed at start-up).
    pub fn new(tools: &[&'static str]) -> Self {
        Self {
            counters: tools.iter().map(|t| (*t, Counters::default())).collect(),
            recent: Mutex::new(VecDeque::with_capacity(RECENT_CAPACITY)),
        }
    }

    /// Records the start of a call: counts it and remembers who made it, with the project
    /// and agent arguments as the caller spelled them.
    pub fn record_call(&self, tool: &'static str, arguments: &Value) {
        if let Some(counters) = self.counters.get(tool) {
            counters.calls.fetch_add(1, Ordering::Relaxed);
        }
        let text = |keys: &[&str]| {
            keys.iter().find_map(|k| arguments.get(*k)?.as_str().map(str::to_string))
        };
        let call = RecentCall {
            at: Timestamp::now(),
            tool,
            project: text(&["project_key", "human_key", "project"]),
            agent: text(&["agent_name", "sender_name", "requester", "from_agent", "name"]),
        };
        // A poisoned ring only means a panic elsewhere; keep recording into it.
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() == RECENT_CAPACITY {
            recent.pop_front();
        }
        recent.push_back(call);
    }

    /// Counts a failed call.
    pub fn record_error(&self, tool: &'static str) {
        if let Some(counters) = self.counters.get(tool) {
            counters.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Tools called at least once, by name.
    pub fn called(&self) -> Vec<ToolCounts> {
        let mut out: Vec<ToolCounts> = self
            .counters
            .iter()
            .map(|(name, c)| ToolCounts {
                name,
                calls: c.calls.load(Ordering::Relaxed),
                errors: c.errors.load(Ordering::Relaxed),
            })
            .filter(|c| c.calls > 0)
            .collect();
        out.sort_by_key(|c| c.name);
        out
    }

    /// Calls made at or after `since`, oldest first, matching the given project and agent
    /// arguments exactly when those filters are set.
    pub fn recent(
        &self,
        since: Timestamp,
        project: Option<&str>,
        agent: Option<&str>,
    ) -> Vec<RecentCall> {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        recent
            .iter()
            .filter(|c| c.at >= since)
            .filter(|c| project.is_none_or(|p| c.project.as_deref() == Some(p)))
            .filter(|c| agent.is_none_or(|a| c.agent.as_deref() == Some(a)))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_table_is_sorted_for_lookup() {
        assert!(TOOL_METADATA.windows(2).all(|w| w[0].name < w[1].name));
        assert_eq!(tool_meta("health_check").complexity, "low");
        assert_eq!(tool_meta("whois").capabilities, ["audit", "identity"]);
        assert_eq!(tool_meta("list_agents").cluster, "other");
    }

    #[test]
    fn counts_calls_errors_and_keeps_a_bounded_ring() {
        let instruments = Instruments::new(&["send_message", "whois"]);
        let args = json!({"project_key": "p", "sender_name": "BlueLake"});
        for _ in 0..(RECENT_CAPACITY + 5) {
            instruments.record_call("send_message", &args);
        }
        instruments.record_error("send_message");
        assert_eq!(
            instruments.called(),
            [ToolCounts { name: "send_message", calls: RECENT_CAPACITY as u64 + 5, errors: 1 }]
        );
        let all = instruments.recent(Timestamp::from_micros(0), None, None);
        assert_eq!(all.len(), RECENT_CAPACITY);
        assert_eq!(all[0].agent.as_deref(), Some("BlueLake"));
        assert!(instruments.recent(Timestamp::from_micros(0), Some("q"), None).is_empty());
        assert_eq!(
            instruments.recent(Timestamp::from_micros(0), Some("p"), Some("BlueLake")).len(),
            RECENT_CAPACITY
        );
    }
}
