//! ensure_product: find or create a product, a named group of projects (the product bus).
//! Registered only when WORKTREES_ENABLED.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Find or create a product (a group of projects searched together). \
     The key is a product uid (8-64 hex digits are kept as the uid) or an exact name.";

/// Arguments of ensure_product.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Product uid or exact name; either this or `name` is required.
    #[serde(default)]
    product_key: Option<String>,
    /// Display name (defaults to the key).
    #[serde(default)]
    name: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("ensure_product", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.ensure_product(args.product_key, args.name).await
    })
}
