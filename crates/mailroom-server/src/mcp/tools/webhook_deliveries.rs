//! webhook_deliveries: the project's webhook deliveries that have not arrived, pending or
//! given up on, with their attempts and last error (mailroom extension): where to look when
//! a receiver says it missed something.

use mailroom_core::ops::webhooks::DeliveryFilter;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List the deliveries of the project-wide webhooks (with agent_name: \
     of that agent's), newest first: by default \
     those not delivered (pending, or failed after the last attempt), each with its webhook-id, \
     message, recipient, attempts, last error and next attempt; with counts by status.";

/// Arguments of webhook_deliveries.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Only this webhook's deliveries.
    #[serde(default)]
    webhook_id: Option<i64>,
    /// "undelivered" (default: pending and failed), "pending", "failed", "delivered" or "all".
    #[serde(default)]
    status: Option<String>,
    /// Most deliveries to list (1-500, default 50).
    #[serde(default)]
    limit: Option<i64>,
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
    Tool::new("webhook_deliveries", DESCRIPTION, |state: AppState, args: Args| async move {
        let filter = DeliveryFilter::parse(args.status.as_deref())?;
        let (project, agent) = (args.project_key, args.agent_name);
        state.core.webhook_deliveries(project, agent, args.webhook_id, filter, args.limit).await
    })
}
