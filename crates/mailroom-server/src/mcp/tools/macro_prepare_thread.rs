//! macro_prepare_thread: catch up before joining a thread. Registers (or checks) the agent,
//! then returns its inbox and a summary of the thread, refined by the LLM when configured.

use mailroom_core::ops::macros::PrepareThread;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Prepare to work on a thread in one call: register your agent (or \
     check it exists when register_if_missing is false), then return your inbox and the \
     thread's summary (participants, key points, action items, examples).";

/// Arguments of macro_prepare_thread.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The thread to summarise.
    thread_id: String,
    /// The coding tool, e.g. "claude-code" or "codex-cli".
    program: String,
    /// The model, e.g. "gpt-5".
    model: String,
    /// Your agent name; required when register_if_missing is false.
    #[serde(default)]
    agent_name: Option<String>,
    /// Token returned by an earlier registration of this name.
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// What this agent is working on (replaces the stored description when registering).
    #[serde(default)]
    task_description: String,
    /// Register the agent (or refresh it) first (default true).
    #[serde(default)]
    register_if_missing: Option<bool>,
    /// Include up to three example messages of the thread (default true).
    #[serde(default)]
    include_examples: Option<bool>,
    /// Most inbox messages to return (default 10).
    #[serde(default)]
    inbox_limit: Option<i64>,
    /// Include inbox message bodies (default false).
    #[serde(default)]
    include_inbox_bodies: Option<bool>,
    /// Refine the summary with the LLM when the server has one configured (default true).
    #[serde(default)]
    llm_mode: Option<bool>,
    /// LLM model override.
    #[serde(default)]
    llm_model: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::registration(
        "macro_prepare_thread",
        DESCRIPTION,
        |state: AppState, args: Args| async move {
            state
                .core
                .macro_prepare_thread(PrepareThread {
                    project_key: args.project_key,
                    thread_id: args.thread_id,
                    program: args.program,
                    model: args.model,
                    agent_name: args.agent_name,
                    task_description: args.task_description,
                    register_if_missing: args.register_if_missing.unwrap_or(true),
                    include_examples: args.include_examples.unwrap_or(true),
                    inbox_limit: args.inbox_limit.unwrap_or(10),
                    include_inbox_bodies: args.include_inbox_bodies.unwrap_or(false),
                    llm_mode: args.llm_mode.unwrap_or(true),
                    llm_model: args.llm_model,
                })
                .await
        },
    )
}
