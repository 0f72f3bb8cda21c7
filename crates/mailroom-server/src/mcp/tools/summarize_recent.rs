//! summarize_recent: a stored digest of the project's recent messages.

use mailroom_core::ops::search::summaries::SummarizeRecent;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Summarise the project's messages of the last since_hours (default 1): participants, key points, action items and totals per thread, refined by the LLM when configured. The summary is stored (see fetch_summary); a summary of about the same window is reused.";

/// Arguments of summarize_recent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Window length in hours (default 1.0).
    #[serde(default)]
    since_hours: Option<f64>,
    /// Refine with the LLM when the server has one configured (default true).
    #[serde(default)]
    llm_mode: Option<bool>,
    /// LLM model override.
    #[serde(default)]
    llm_model: Option<String>,
    /// Most messages summarised (at most 500, the default).
    #[serde(default)]
    max_messages: Option<i64>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("summarize_recent", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .summarize_recent(SummarizeRecent {
                project_key: args.project_key,
                since_hours: args.since_hours.unwrap_or(1.0),
                llm_mode: args.llm_mode.unwrap_or(true),
                llm_model: args.llm_model,
                max_messages: args.max_messages.unwrap_or(500),
            })
            .await
    })
}
