//! `mailroom products ensure | link | status | search | inbox | summarize-thread`: the product
//! bus from a shell (the reference's `products` commands), through the product tools and
//! `resource://product/{key}`, which exist with `WORKTREES_ENABLED`.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::backend::Backend;
use super::mail::encode;
use super::output::{self, fields};
use super::target::Common;

/// `mailroom products`.
#[derive(Args, Debug)]
pub struct ProductsArgs {
    #[command(subcommand)]
    command: ProductsCommand,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum ProductsCommand {
    /// Create a product (or find it) by key or name
    Ensure {
        product_key: Option<String>,
        #[arg(long)]
        name: Option<String>,
    },
    /// Link a project to a product
    Link { product: String, project: String },
    /// A product and its linked projects
    Status { product: String },
    /// Search the messages of every project of a product
    Search {
        product: String,
        query: String,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, alias = "registration_token")]
        registration_token: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// An agent's inbox across a product's projects
    Inbox {
        product: String,
        agent: String,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        #[arg(long, alias = "urgent_only")]
        urgent_only: bool,
        #[arg(long, alias = "include_bodies")]
        include_bodies: bool,
        #[arg(long, alias = "since_ts")]
        since_ts: Option<String>,
        #[arg(long, alias = "registration_token")]
        registration_token: Option<String>,
    },
    /// A thread's summary across a product's projects
    #[command(alias = "summarize_thread")]
    SummarizeThread {
        product: String,
        thread: String,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, default_value_t = 50, alias = "per_thread_limit")]
        per_thread_limit: u32,
        /// Without the LLM, even when one is set up
        #[arg(long, alias = "no_llm")]
        no_llm: bool,
        #[arg(long, alias = "registration_token")]
        registration_token: Option<String>,
    },
}

pub fn run(args: ProductsArgs) -> Result<()> {
    let backend = args.common.backend()?;
    let json = args.common.json;
    let answer = call(&backend, args.command)?;
    output::print(json, &answer, |v| match v {
        Value::Array(rows) => {
            let keys = ["id", "project", "created_ts", "from", "subject"];
            let rows = rows.iter().map(|m| fields(m, &keys)).collect();
            output::table(&["id", "project", "sent", "from", "subject"], rows)
        }
        other => format!("{}\n", serde_json::to_string_pretty(other).unwrap_or_default()),
    });
    Ok(())
}

/// The tool call (or resource read) a subcommand means. Options not given go as null, which
/// the tools read as absent.
fn call(backend: &Backend, command: ProductsCommand) -> Result<Value> {
    match command {
        ProductsCommand::Ensure { product_key, name } => {
            backend.call_tool("ensure_product", json!({"product_key": product_key, "name": name}))
        }
        ProductsCommand::Link { product, project } => backend
            .call_tool("products_link", json!({"product_key": product, "project_key": project})),
        ProductsCommand::Status { product } => {
            backend.read_resource(&format!("resource://product/{}", encode(&product)))
        }
        ProductsCommand::Search { product, query, agent, registration_token, limit } => {
            let found = backend.call_tool(
                "search_messages_product",
                json!({"product_key": product, "query": query, "limit": limit,
                    "agent_name": agent, "registration_token": registration_token}),
            )?;
            Ok(found.get("result").cloned().unwrap_or(found))
        }
        ProductsCommand::Inbox {
            product,
            agent,
            limit,
            urgent_only,
            include_bodies,
            since_ts,
            registration_token,
        } => backend.call_tool(
            "fetch_inbox_product",
            json!({"product_key": product, "agent_name": agent, "limit": limit,
                "urgent_only": urgent_only, "include_bodies": include_bodies,
                "since_ts": since_ts, "registration_token": registration_token}),
        ),
        ProductsCommand::SummarizeThread {
            product,
            thread,
            agent,
            per_thread_limit,
            no_llm,
            registration_token,
        } => backend.call_tool(
            "summarize_thread_product",
            json!({"product_key": product, "thread_id": thread,
                "per_thread_limit": per_thread_limit, "agent_name": agent,
                "registration_token": registration_token, "llm_mode": no_llm.then_some(false)}),
        ),
    }
}
