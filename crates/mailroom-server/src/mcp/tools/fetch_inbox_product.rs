//! fetch_inbox_product: an agent's inboxes in every project of a product it is registered in,
//! merged newest first. Registered only when WORKTREES_ENABLED.

use mailroom_core::ops::messaging::InboxFilter;
use mailroom_core::ops::products::FetchInboxProduct;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Fetch an agent's inbox across a product's linked projects (where an \
     agent of that name is registered), newest first, limit 20 by default.";

/// Arguments of fetch_inbox_product.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Product uid or exact name.
    product_key: String,
    /// Your agent name (the same in each linked project).
    agent_name: String,
    /// Most messages to return (1-1000, default 20).
    #[serde(default)]
    limit: Option<i64>,
    /// Only importance "high" or "urgent".
    #[serde(default)]
    urgent_only: Option<bool>,
    /// Include message bodies.
    #[serde(default)]
    include_bodies: Option<bool>,
    /// Only messages created after this ISO-8601 timestamp.
    #[serde(default)]
    since_ts: Option<String>,
    /// Only messages you have not read.
    #[serde(default)]
    unread_only: Option<bool>,
    /// Mark the returned messages read (in the same step; nothing is marked without it).
    #[serde(default)]
    mark_read: Option<bool>,
    /// Your registration token; projects where it does not match are skipped.
    #[serde(default)]
    registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("fetch_inbox_product", DESCRIPTION, |state: AppState, args: Args| async move {
        let request = FetchInboxProduct {
            product_key: args.product_key,
            agent_name: args.agent_name,
            registration_token: args.registration_token,
            filter: InboxFilter {
                limit: args.limit,
                urgent_only: args.urgent_only.unwrap_or(false),
                include_bodies: args.include_bodies.unwrap_or(false),
                since_ts: args.since_ts,
                unread_only: args.unread_only.unwrap_or(false),
                mark_read: args.mark_read.unwrap_or(false),
            },
        };
        state.core.fetch_inbox_product(request).await
    })
}
