//! install_precommit_guard: install the Git pre-commit guard in a code repository, so a
//! commit touching files another agent holds exclusively is refused before it is made.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Install the Agent Mail pre-commit guard in a Git repository: a \
     chain-runner hook (an existing hook is preserved and still runs) plus a plugin that refuses \
     commits touching paths under another agent's active exclusive file reservation. Set \
     AGENT_NAME in the committing environment; AGENT_MAIL_GUARD_MODE=warn only warns and \
     AGENT_MAIL_BYPASS=1 skips the check. Returns the hook path, or an empty one when \
     worktree support is disabled.";

/// Arguments of install_precommit_guard.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key) whose reservations the guard checks.
    project_key: String,
    /// Path of the code repository (a Git working tree) to install the hook in.
    code_repo_path: String,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("install_precommit_guard", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.install_precommit_guard(args.project_key, args.code_repo_path).await
    })
}
