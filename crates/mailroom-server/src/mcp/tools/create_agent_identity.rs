//! create_agent_identity: always create a brand-new agent (never reuse an existing one),
//! e.g. for a second window working in the same project.

use mailroom_core::ops::agents::Registration;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Create a new, unique agent identity in a project. A taken or invalid \
     name_hint yields a generated adjective+noun name.";

/// Arguments of create_agent_identity.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The coding tool, e.g. "claude-code".
    program: String,
    /// The model, e.g. "gpt-5".
    model: String,
    /// Preferred adjective+noun name such as "OrangeFox".
    #[serde(default)]
    name_hint: Option<String>,
    /// What this agent is working on.
    #[serde(default)]
    task_description: String,
    /// How attachments are delivered: "auto", "inline" or "file".
    #[serde(default)]
    attachments_policy: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::registration(
        "create_agent_identity",
        DESCRIPTION,
        |state: AppState, args: Args| async move {
            state
                .core
                .create_agent_identity(Registration {
                    project_key: args.project_key,
                    program: args.program,
                    model: args.model,
                    name: args.name_hint,
                    task_description: args.task_description,
                    attachments_policy: args.attachments_policy,
                    ..Registration::default()
                })
                .await
        },
    )
}
