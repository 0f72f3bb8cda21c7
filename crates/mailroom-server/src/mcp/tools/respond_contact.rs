//! respond_contact: approve (or block) a contact request addressed to you.

use mailroom_core::ops::contacts::{APPROVAL_TTL_SECONDS, ContactResponse};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Approve or reject a contact request from another agent. An approval \
     lets that agent message you for ttl_seconds (30 days by default).";

/// Arguments of respond_contact.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Your project's slug or absolute path (human_key).
    project_key: String,
    /// You, the agent that was asked.
    to_agent: String,
    /// The agent that asked.
    from_agent: String,
    /// true to approve, false to block.
    accept: bool,
    /// The asking agent's project when it differs.
    #[serde(default)]
    from_project: Option<String>,
    /// Lifetime of an approval in seconds (default 2592000, at least 60).
    #[serde(default)]
    ttl_seconds: Option<i64>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("respond_contact", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .respond_contact(ContactResponse {
                project_key: args.project_key,
                to_agent: args.to_agent,
                from_agent: args.from_agent,
                from_project: args.from_project,
                accept: args.accept,
                ttl_seconds: args.ttl_seconds.unwrap_or(APPROVAL_TTL_SECONDS),
            })
            .await
    })
}
