//! list_contacts: the agent's contact links (requests it made and approvals it holds).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List an agent's contacts: the links it requested (pending, approved \
     or blocked) and the agents it approved, newest first.";

/// Arguments of list_contacts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("list_contacts", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.list_contacts(args.project_key, args.agent_name).await
    })
}
