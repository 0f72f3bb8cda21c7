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

/// The most (project, agent) names the activity notes hold.
const SEEN_CAPACITY: usize = 65_536;

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
    recent: Mutex<Recent>,
}

/// What the dispatcher notes under one lock on every call.
#[derive(Default)]
struct Recent {
    ring: VecDeque<RecentCall>,
    /// When each agent (by project, then name, as the caller spelled them) last made a call:
    /// the upkeep's retirement counts reading and acknowledging as activity.
    seen: HashMap<String, HashMap<String, Timestamp>>,
    /// Agents in `seen`.
    seen_entries: usize,
}

impl Recent {
    fn see(&mut self, project: &str, agent: &str, at: Timestamp) {
        // Looked up by borrowed names: a known agent's call allocates nothing. Names arrive
        // unchecked (this runs before authentication), so new ones stop being noted at
        // SEEN_CAPACITY until the retirement's next look drops the old.
        if let Some(last) = self.seen.get_mut(project).and_then(|agents| agents.get_mut(agent)) {
            *last = at;
            return;
        }
        if self.seen_entries >= SEEN_CAPACITY {
            return;
        }
        self.seen_entries += 1;
        self.seen.entry(project.to_string()).or_default().insert(agent.to_string(), at);
    }
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
            recent: Mutex::new(Recent {
                ring: VecDeque::with_capacity(RECENT_CAPACITY),
                seen: HashMap::new(),
                seen_entries: 0,
            }),
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
        let mut recent = self.lock_recent();
        if let (Some(project), Some(agent)) = (&call.project, &call.agent) {
            recent.see(project, agent, call.at);
        }
        if recent.ring.len() == RECENT_CAPACITY {
            recent.ring.pop_front();
        }
        recent.ring.push_back(call);
    }

    /// Notes that `agent` of `project` (as the caller spelled them) did something other than
    /// a tool call: read a resource about its own mail, or called a REST route as itself.
    pub fn note_activity(&self, project: &str, agent: &str) {
        self.lock_recent().see(project, agent, Timestamp::now());
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

    /// The calls each agent made since `since`, for the upkeep's retirement; older notes are
    /// dropped.
    pub fn seen_since(&self, since: Timestamp) -> mailroom_core::ops::upkeep::Seen {
        let mut recent = self.lock_recent();
        let mut seen = mailroom_core::ops::upkeep::Seen::default();
        let mut kept = 0;
        recent.seen.retain(|project, agents| {
            agents.retain(|agent, at| {
                let keep = *at >= since;
                if keep {
                    seen.note(project, agent, *at);
                    kept += 1;
                }
                keep
            });
            !agents.is_empty()
        });
        recent.seen_entries = kept;
        seen
    }

    /// The ring and the activity notes; a poisoned lock only means a panic elsewhere.
    fn lock_recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(|p| p.into_inner())
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
        let recent = self.lock_recent();
        recent
            .ring
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
