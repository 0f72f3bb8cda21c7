//! remove_webhook: stops a webhook (mailroom extension). Its queued deliveries are dropped
//! with it, and an attempt in flight is not recorded.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Remove a project-wide webhook by id, or with agent_name one of that \
     agent's (list_webhooks shows them). Its pending deliveries are dropped; nothing more is \
     posted to it.";

/// Arguments of remove_webhook.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The webhook's id.
    webhook_id: i64,
    /// Act on this agent's webhooks only (it must prove itself when authentication is on);
    /// leave out for the project-wide webhooks.
    #[serde(default)]
    agent_name: Option<String>,
    /// A registration token of an agent of the project (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("remove_webhook", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.remove_webhook(args.project_key, args.agent_name, args.webhook_id).await
    })
}
