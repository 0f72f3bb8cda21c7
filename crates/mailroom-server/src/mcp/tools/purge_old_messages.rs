//! purge_old_messages: count (dry run, the default) or delete a project's old messages.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Count (dry_run=true, the default) or delete the project's messages older than max_age_days (default 180). Database only: archive files stay.";

/// Arguments of purge_old_messages.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Age in days beyond which messages go (default 180).
    #[serde(default)]
    max_age_days: Option<i64>,
    /// Only count (default true).
    #[serde(default)]
    dry_run: Option<bool>,
}

pub fn tool() -> Tool {
    Tool::new("purge_old_messages", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .purge_old_messages(args.project_key, args.max_age_days, args.dry_run.unwrap_or(true))
            .await
    })
}
