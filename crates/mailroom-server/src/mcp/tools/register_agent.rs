//! register_agent: give an agent its identity in a project (or refresh it). Names are
//! adjective+noun pairs such as "BlueLake"; omit `name` to get one generated.

use mailroom_core::ops::agents::Registration;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Register an agent in a project, or update the existing agent of that \
     name (program, model, task). Returns the agent profile and its registration token.";

/// Arguments of register_agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The coding tool, e.g. "claude-code" or "codex-cli".
    program: String,
    /// The model, e.g. "gpt-5".
    model: String,
    /// Adjective+noun name such as "BlueLake"; omitted or invalid names are generated.
    #[serde(default)]
    name: Option<String>,
    /// What this agent is working on.
    #[serde(default)]
    task_description: String,
    /// How attachments are delivered: "auto", "inline" or "file".
    #[serde(default)]
    attachments_policy: Option<String>,
    /// Token returned by an earlier registration of this name.
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::registration("register_agent", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .register_agent(Registration {
                project_key: args.project_key,
                program: args.program,
                model: args.model,
                name: args.name,
                task_description: args.task_description,
                attachments_policy: args.attachments_policy,
                ..Registration::default()
            })
            .await
    })
}
