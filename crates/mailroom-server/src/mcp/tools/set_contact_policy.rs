//! set_contact_policy: choose who may message you without a contact request.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Set how an agent accepts messages: \"open\" (anyone), \"auto\" \
     (default: recent correspondents and approved contacts), \"contacts_only\" or \"block_all\".";

/// Arguments of set_contact_policy.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// "open", "auto", "contacts_only" or "block_all" (anything else means "auto").
    policy: String,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("set_contact_policy", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.set_contact_policy(args.project_key, args.agent_name, args.policy).await
    })
}
