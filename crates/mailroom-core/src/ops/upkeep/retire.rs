//! Auto-retirement of agents idle past a threshold. The database knows when an agent last
//! registered or sent; the server knows every tool call it served (reading and acknowledging
//! too), which it passes as [`Seen`]: an agent is retired only when both say it has been idle
//! since before the cutoff, so an orchestrator that only reads and acknowledges is never
//! retired while it works.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::store::db::archive_queue::ArchiveKind;

/// Tool calls the server saw, by (project as the caller named it, agent name lowercased).
#[derive(Debug, Clone, Default)]
pub struct Seen(HashMap<(String, String), Timestamp>);

impl Seen {
    /// Notes that `agent` of `project` made a call at `at`.
    pub fn note(&mut self, project: &str, agent: &str, at: Timestamp) {
        let key = (project.to_string(), agent.to_lowercase());
        let last = self.0.entry(key).or_insert(at);
        if at > *last {
            *last = at;
        }
    }

    /// When `agent` was last seen in the project known by `slug` or `key`.
    fn last(&self, slug: &str, key: &str, agent: &str) -> Option<Timestamp> {
        let agent = agent.to_lowercase();
        [slug, key]
            .iter()
            .filter_map(|p| self.0.get(&(p.to_string(), agent.clone())).copied())
            .max()
    }

    /// Calls older than `cutoff` no longer matter.
    pub fn forget_before(&mut self, cutoff: Timestamp) {
        self.0.retain(|_, at| *at >= cutoff);
    }
}

/// One agent retired.
#[derive(Debug, Clone, Serialize)]
pub struct Retired {
    pub project: String,
    pub agent: String,
    pub last_active_ts: Timestamp,
}

/// What a retirement run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RetireReport {
    pub threshold_seconds: i64,
    pub retired: Vec<Retired>,
    /// Idle by the database but seen in tool calls since the cutoff: kept.
    pub kept_busy: usize,
}

impl Mailroom {
    /// Retires every agent idle longer than `threshold_seconds`, by the database and by `seen`;
    /// each retirement is re-checked in its write (a send meanwhile keeps the agent).
    pub(super) async fn retire_idle_agents(
        &self,
        threshold_seconds: i64,
        seen: &Seen,
    ) -> Result<RetireReport> {
        let now = Timestamp::now();
        let cutoff = now.plus_seconds(-threshold_seconds);
        let idle = self.store.read(move |db| db.idle_agents(cutoff)).await?;
        let mut report = RetireReport { threshold_seconds, ..RetireReport::default() };
        let (busy, quiet): (Vec<_>, Vec<_>) = idle.into_iter().partition(|a| {
            seen.last(&a.project_slug, &a.project_key, &a.name).is_some_and(|t| t >= cutoff)
        });
        report.kept_busy = busy.len();
        if quiet.is_empty() {
            return Ok(report);
        }
        self.admit_archive_work().await?;
        let retired = self
            .store
            .write(move |db| {
                let mut retired = Vec::new();
                for agent in quiet {
                    if db.retire_if_idle(agent.id, now, cutoff)? {
                        db.enqueue_archive(ArchiveKind::Profile, agent.id)?;
                        retired.push(Retired {
                            project: agent.project_slug,
                            agent: agent.name,
                            last_active_ts: agent.last_active_ts,
                        });
                    }
                }
                Ok(retired)
            })
            .await?;
        report.retired = retired;
        Ok(report)
    }
}
