//! summarize_thread_product: one thread summarised across a product's linked projects.
//! Registered only when WORKTREES_ENABLED.

use mailroom_core::ops::products::{ProductViewer, SummarizeThreadProduct};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Summarise one thread across a product's linked projects \
     (participants, key points, action items, mentions), optionally with example messages.";

/// Arguments of summarize_thread_product.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Product uid or exact name.
    product_key: String,
    /// The thread id.
    thread_id: String,
    /// Include up to three example messages.
    #[serde(default)]
    include_examples: Option<bool>,
    /// Refine with the LLM when the server has one configured (default true).
    #[serde(default)]
    llm_mode: Option<bool>,
    /// LLM model override.
    #[serde(default)]
    llm_model: Option<String>,
    /// Most messages summarised.
    #[serde(default)]
    per_thread_limit: Option<i64>,
    /// Summarise as this agent (only what it sent or received).
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
    Tool::new("summarize_thread_product", DESCRIPTION, |state: AppState, args: Args| async move {
        let request = SummarizeThreadProduct {
            product_key: args.product_key,
            thread_id: args.thread_id,
            include_examples: args.include_examples.unwrap_or(false),
            llm_mode: args.llm_mode.unwrap_or(true),
            llm_model: args.llm_model,
            per_thread_limit: args.per_thread_limit,
            viewer: ProductViewer {
                agent_name: args.agent_name,
                registration_token: args.registration_token,
            },
        };
        state.core.summarize_thread_product(request).await
    })
}
