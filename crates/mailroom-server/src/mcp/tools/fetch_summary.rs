//! fetch_summary: summaries stored by summarize_recent, newest first.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List the summaries summarize_recent stored whose window ends within the last since_hours (default 24), newest first (limit 5 by default).";

/// Arguments of fetch_summary.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Look-back in hours (default 24).
    #[serde(default)]
    since_hours: Option<f64>,
    /// Most summaries to return (default 5).
    #[serde(default)]
    limit: Option<i64>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("fetch_summary", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .fetch_summary(
                args.project_key,
                args.since_hours.unwrap_or(24.0),
                args.limit.unwrap_or(5),
            )
            .await
    })
}
