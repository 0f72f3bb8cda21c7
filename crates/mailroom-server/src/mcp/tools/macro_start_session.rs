//! macro_start_session: the first call of a working session. Ensures the project, registers
//! (or refreshes) the agent and returns its inbox, so an agent is ready in one round trip.

use mailroom_core::ops::macros::StartSession;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Start a session in one call: ensure the project for human_key, \
     register or refresh your agent (program, model, task), optionally reserve \
     file_reservation_paths exclusively, and return your newest inbox messages (inbox_limit, \
     default 10, without bodies).";

/// Arguments of macro_start_session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The project's working directory (or identifier).
    human_key: String,
    /// The coding tool, e.g. "claude-code" or "codex-cli".
    program: String,
    /// The model, e.g. "gpt-5".
    model: String,
    /// What this agent is working on (replaces the stored description).
    #[serde(default)]
    task_description: String,
    /// Adjective+noun name such as "BlueLake"; omitted or invalid names are generated.
    #[serde(default)]
    agent_name: Option<String>,
    /// Token returned by an earlier registration of this name.
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Paths or globs to reserve exclusively for this session (optional).
    #[serde(default)]
    file_reservation_paths: Option<Vec<String>>,
    /// Reason recorded on the reservations (default "macro-session").
    #[serde(default)]
    file_reservation_reason: Option<String>,
    /// Lifetime of the reservations in seconds (default 3600).
    #[serde(default)]
    file_reservation_ttl_seconds: Option<i64>,
    /// Most inbox messages to return (default 10).
    #[serde(default)]
    inbox_limit: Option<i64>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::registration(
        "macro_start_session",
        DESCRIPTION,
        |state: AppState, args: Args| async move {
            let steps = state.instruments.nested_calls(&args.human_key, args.agent_name.as_deref());
            let request = StartSession {
                human_key: args.human_key,
                program: args.program,
                model: args.model,
                task_description: args.task_description,
                agent_name: args.agent_name,
                file_reservation_paths: args.file_reservation_paths,
                file_reservation_reason: args
                    .file_reservation_reason
                    .unwrap_or_else(|| "macro-session".to_string()),
                file_reservation_ttl_seconds: args.file_reservation_ttl_seconds.unwrap_or(3600),
                inbox_limit: args.inbox_limit.unwrap_or(10),
            };
            state.core.macro_start_session(request, &steps).await
        },
    )
}
