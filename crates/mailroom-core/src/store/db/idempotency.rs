//! The first answers of keyed writes (ops/messaging/idempotency.rs): looked up, kept, and
//! forgotten once their window has passed.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ProjectId};

/// Whose key it is: one project, one acting agent, one tool.
#[derive(Debug, Clone, Copy)]
pub struct KeyScope<'a> {
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    pub tool: &'a str,
    pub key: &'a str,
}

/// A kept answer: the fingerprint of the call that gave it, its JSON text, when it was given.
#[derive(Debug, Clone)]
pub struct KeptAnswer {
    pub fingerprint: String,
    pub result_json: String,
    pub created_ts: Timestamp,
}

impl Db<'_> {
    /// The answer kept under `scope`, expired or not.
    pub fn kept_answer(&self, scope: KeyScope<'_>) -> Result<Option<KeptAnswer>> {
        self.query_opt(
            "SELECT fingerprint, result_json, created_ts FROM idempotency_keys \
             WHERE project_id = ?1 AND agent_id = ?2 AND tool = ?3 AND idempotency_key = ?4",
            args![scope.project_id, scope.agent_id, scope.tool, scope.key],
            |row| {
                Ok(KeptAnswer {
                    fingerprint: row.get(0)?,
                    result_json: row.get(1)?,
                    created_ts: row.get(2)?,
                })
            },
        )
    }

    /// Keeps `answer` under `scope`, replacing an expired one.
    pub fn keep_answer(&self, scope: KeyScope<'_>, answer: &KeptAnswer) -> Result<()> {
        self.execute(
            "INSERT INTO idempotency_keys (project_id, agent_id, tool, \
             idempotency_key, fingerprint, result_json, created_ts) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (project_id, agent_id, tool, idempotency_key) DO UPDATE SET \
             fingerprint = excluded.fingerprint, result_json = excluded.result_json, \
             created_ts = excluded.created_ts",
            args![
                scope.project_id,
                scope.agent_id,
                scope.tool,
                scope.key,
                answer.fingerprint,
                answer.result_json,
                answer.created_ts,
            ],
        )
        .map(drop)
    }

    /// Deletes the answers kept before `cutoff`; how many.
    pub fn forget_answers_before(&self, cutoff: Timestamp) -> Result<usize> {
        self.execute("DELETE FROM idempotency_keys WHERE created_ts < ?1", args![cutoff])
    }
}
