//! request_contact: ask another agent for permission to message it. Creates a pending link
//! and an intro message in the target's inbox.

use mailroom_core::ops::contacts::{ContactRequest, REQUEST_TTL_SECONDS};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Ask another agent for permission to contact it: records a pending \
     request (7 days by default) and sends it an intro message it can approve with \
     respond_contact.";

/// Arguments of request_contact.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key) of the requester.
    project_key: String,
    /// The requesting agent (you).
    from_agent: String,
    /// The agent to contact (or "project:<slug>#<Name>").
    to_agent: String,
    /// The target's project when it differs.
    #[serde(default)]
    to_project: Option<String>,
    /// Why you want to talk (becomes the intro message body).
    #[serde(default)]
    reason: String,
    /// Lifetime of the request in seconds (default 604800, at least 60).
    #[serde(default)]
    ttl_seconds: Option<i64>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Create the target when it does not exist and its name is valid (default true).
    #[serde(default)]
    register_if_missing: Option<bool>,
    /// Program of an auto-created target.
    #[serde(default)]
    program: Option<String>,
    /// Model of an auto-created target.
    #[serde(default)]
    model: Option<String>,
    /// Task of an auto-created target.
    #[serde(default)]
    task_description: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("request_contact", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .request_contact(ContactRequest {
                project_key: args.project_key,
                from_agent: args.from_agent,
                to_agent: args.to_agent,
                to_project: args.to_project,
                reason: args.reason,
                ttl_seconds: args.ttl_seconds.unwrap_or(REQUEST_TTL_SECONDS),
                register_if_missing: args.register_if_missing.unwrap_or(true),
                program: args.program,
                model: args.model,
                task_description: args.task_description,
            })
            .await
    })
}
