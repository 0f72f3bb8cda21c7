//! macro_contact_handshake: establish contact between two agents in one call. Files the
//! request, approves it on the target's behalf with auto_accept, and can send a welcome.

use mailroom_core::ops::contacts::REQUEST_TTL_SECONDS;
use mailroom_core::ops::macros::{ContactHandshake, TargetProof};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Caller, Tool};
use crate::state::AppState;

const DESCRIPTION: &str = "Set up contact between two agents: file a contact request from \
     requester to target and, with auto_accept, approve it at once; optionally send a welcome \
     message. A missing requester/target is inferred when the project has one/two agents.";

/// Arguments of macro_contact_handshake.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key) of the requester.
    project_key: String,
    /// The requesting agent (you).
    #[serde(default)]
    requester: Option<String>,
    /// Alias of requester.
    #[serde(default)]
    agent_name: Option<String>,
    /// The agent to contact (or "project:<slug>#<Name>").
    #[serde(default)]
    target: Option<String>,
    /// Alias of target.
    #[serde(default)]
    to_agent: Option<String>,
    /// The target's project when it differs.
    #[serde(default)]
    to_project: Option<String>,
    /// Why you want to talk (the intro message body).
    #[serde(default)]
    reason: String,
    /// Lifetime of the request and approval in seconds (default 604800).
    #[serde(default)]
    ttl_seconds: Option<i64>,
    /// Approve the request on the target's behalf (default false).
    #[serde(default)]
    auto_accept: Option<bool>,
    /// Subject of a welcome message sent once approved (needs welcome_body and auto_accept).
    #[serde(default)]
    welcome_subject: Option<String>,
    /// Body of the welcome message.
    #[serde(default)]
    welcome_body: Option<String>,
    /// Thread of the welcome message.
    #[serde(default)]
    thread_id: Option<String>,
    /// The requester's registration token (needed only when authentication is on).
    #[serde(default, rename = "requester_registration_token")]
    _requester_registration_token: Option<String>,
    /// The target's registration token (needed only when authentication is on).
    #[serde(default)]
    target_registration_token: Option<String>,
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
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::with_caller(
        "macro_contact_handshake",
        DESCRIPTION,
        |state: AppState, args: Args, caller: Caller| async move {
            // With authentication on, auto_accept needs proof of the target (its token or a
            // session bound to it), checked by the op after the request is filed.
            let target_proof = state.config.tool_auth.then(|| TargetProof {
                token: args.target_registration_token.clone(),
                session_agents: state.bindings.session_agents(caller.session.as_deref()),
            });
            state
                .core
                .macro_contact_handshake(ContactHandshake {
                    project_key: args.project_key,
                    requester: args.requester,
                    agent_name: args.agent_name,
                    target: args.target,
                    to_agent: args.to_agent,
                    to_project: args.to_project,
                    reason: args.reason,
                    ttl_seconds: args.ttl_seconds.unwrap_or(REQUEST_TTL_SECONDS),
                    auto_accept: args.auto_accept.unwrap_or(false),
                    welcome_subject: args.welcome_subject,
                    welcome_body: args.welcome_body,
                    thread_id: args.thread_id,
                    register_if_missing: args.register_if_missing.unwrap_or(true),
                    program: args.program,
                    model: args.model,
                    task_description: args.task_description,
                    target_proof,
                })
                .await
        },
    )
}
