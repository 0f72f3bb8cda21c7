//! products_link: add a project to a product, so product-wide tools cover it. Registered only
//! when WORKTREES_ENABLED.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Link a project to a product (idempotent), so product-wide search, \
     inbox and summaries include it.";

/// Arguments of products_link.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Product uid or exact name.
    product_key: String,
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("products_link", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.products_link(args.product_key, args.project_key).await
    })
}
