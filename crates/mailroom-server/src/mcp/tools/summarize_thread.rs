//! summarize_thread: participants, key points and action items of one thread, or of several
//! (comma-separated ids) with an aggregate.

use mailroom_core::ops::search::SummarizeThread;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Summarise a thread (participants, key points, action items, mentions). \
     Several comma-separated thread ids give per-thread summaries and an aggregate.";

/// Arguments of summarize_thread.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Thread id, or several separated by commas.
    thread_id: String,
    /// Include up to three example messages (single thread).
    #[serde(default)]
    include_examples: Option<bool>,
    /// Refine with the LLM when the server has one configured (default true).
    #[serde(default)]
    llm_mode: Option<bool>,
    /// LLM model override.
    #[serde(default)]
    llm_model: Option<String>,
    /// Messages per thread in multi-thread mode (default 50).
    #[serde(default)]
    per_thread_limit: Option<i64>,
    /// Restrict to what this agent can see (when authentication is on).
    #[serde(default)]
    agent_name: Option<String>,
    /// That agent's registration token.
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("summarize_thread", DESCRIPTION, |state: AppState, args: Args| async move {
        // As search_messages: the authenticated viewer scopes the summary when auth is on.
        let viewer = state.authenticated_viewer(args.agent_name);
        state
            .core
            .summarize_thread(SummarizeThread {
                project_key: args.project_key,
                thread_id: args.thread_id,
                include_examples: args.include_examples.unwrap_or(false),
                per_thread_limit: args.per_thread_limit.unwrap_or(50),
                llm_mode: args.llm_mode.unwrap_or(true),
                llm_model: args.llm_model,
                viewer,
            })
            .await
    })
}
