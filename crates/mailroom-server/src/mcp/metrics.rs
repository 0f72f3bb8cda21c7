//! Tool instrumentation (docs/compat/tools.md §1.8): per-tool call and error counters and a ring of
//! the 4096 most recent calls, recorded by the dispatcher for every tool call. The tool
//! metadata the tooling resources report beside them (cluster, capabilities, complexity;
//! docs/compat/tools.md §11) is the catalog's (`mcp/catalog.rs`).
//!
//! Counters are atomics; the ring takes a short mutex that is never held across `.await`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mailroom_core::model::time::Timestamp;
use serde_json::Value;

/// How many recent calls the ring keeps.
pub const RECENT_CAPACITY: usize = 4096;

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

    /// Records a tool call a macro made on the caller's behalf, as the reference's registry
    /// counts them (docs/compat/tools.md §1.8).
    pub fn record_nested(&self, tool: &'static str, arguments: &Value, succeeded: bool) {
        self.record_call(tool, arguments);
        if !succeeded {
            self.record_error(tool);
        }
    }

    /// The recorder a macro op reports its nested tool calls to, with the project and agent
    /// the recent-call ring shows for them.
    pub fn nested_calls(
        self: &Arc<Self>,
        project: &str,
        agent: Option<&str>,
    ) -> impl Fn(&'static str, bool) + Sync + use<> {
        let instruments = Arc::clone(self);
        let ring = serde_json::json!({"project_key": project, "agent_name": agent});
        move |tool, succeeded| instruments.record_nested(tool, &ring, succeeded)
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
