//! search_messages_product: full-text search across every project linked to a product, as
//! the named agent sees them. Registered only when WORKTREES_ENABLED.

use mailroom_core::ops::products::ProductViewer;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Search messages across a product's linked projects (FTS5 syntax), \
     best match first. With agent_name, only projects where that agent is registered and only \
     messages it sent or received.";

/// Arguments of search_messages_product.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Product uid or exact name.
    product_key: String,
    /// The search query.
    query: String,
    /// Most results (default 20).
    #[serde(default)]
    limit: Option<i64>,
    /// Search as this agent (same name in each linked project).
    #[serde(default)]
    agent_name: Option<String>,
    /// That agent's registration token; projects where it does not match are skipped.
    #[serde(default)]
    registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("search_messages_product", DESCRIPTION, |state: AppState, args: Args| async move {
        let viewer = ProductViewer {
            agent_name: args.agent_name,
            registration_token: args.registration_token,
        };
        let limit = args.limit.unwrap_or(20);
        state.core.search_messages_product(args.product_key, args.query, limit, viewer).await
    })
}
