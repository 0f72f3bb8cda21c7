//! uninstall_precommit_guard: remove the Git guard from a code repository, restoring the
//! hook it preserved.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Remove the Agent Mail pre-commit/pre-push guard from a Git \
     repository: the guard plugins, and each chain-runner no other plugin needs (the hook it \
     preserved is put back). Returns whether anything was removed.";

/// Arguments of uninstall_precommit_guard.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Path of the code repository to remove the guard from.
    code_repo_path: String,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("uninstall_precommit_guard", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.uninstall_precommit_guard(args.code_repo_path).await
    })
}
