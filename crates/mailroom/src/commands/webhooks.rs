//! `mailroom webhooks add | list | remove | deliveries`: a project's webhooks from a shell,
//! for the operator (register_webhook, list_webhooks, remove_webhook, webhook_deliveries;
//! docs/compat/tools.md §4.13). `add` shows the signing secret once; nothing else shows it.
//! `deliveries` lists what has not arrived (pending or given up on) unless `--all`.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use mailroom_core::ops::webhooks::{MAX_LIST, Secret, parse_url};
use serde_json::{Value, json};

use super::output::{self, cell, fields, items};
use super::shared;
use super::target::{Common, Proof, project};

/// `mailroom webhooks`.
#[derive(Args, Debug)]
pub struct WebhooksArgs {
    #[command(subcommand)]
    command: WebhooksCommand,
    #[command(flatten)]
    common: Common,
}

/// The project a subcommand acts on, whose webhooks (an agent's, or the project-wide ones),
/// and the proof a server may ask for.
#[derive(Args, Debug)]
struct Scope {
    /// The project: its key (an absolute path) or slug [default: the current directory]
    #[arg(long)]
    project: Option<String>,
    /// This agent's webhooks (its own deliveries, bcc too; the server asks for its token)
    /// [default: the project-wide webhooks, every recipient's deliveries but bcc]
    #[arg(long)]
    agent: Option<String>,
    #[command(flatten)]
    proof: Proof,
}

#[derive(Subcommand, Debug)]
enum WebhooksCommand {
    /// Register a webhook and print its signing secret (shown this once)
    Add {
        #[command(flatten)]
        scope: Scope,
        /// Where deliveries are POSTed: https://…, or http:// to a loopback address
        #[arg(long)]
        url: String,
        /// The signing secret, `whsec_` and base64 [default: 32 random bytes]
        #[arg(long)]
        secret: Option<String>,
    },
    /// The project's webhooks with their pending and failed deliveries (never secrets)
    List {
        #[command(flatten)]
        scope: Scope,
    },
    /// Remove a webhook; its queued and kept deliveries go with it
    Remove {
        #[command(flatten)]
        scope: Scope,
        /// The webhook's id (`webhooks list` shows it)
        id: i64,
    },
    /// Deliveries not delivered (pending or failed), newest first: attempts, last error,
    /// next attempt
    Deliveries {
        #[command(flatten)]
        scope: Scope,
        /// Only this webhook's deliveries
        #[arg(long, value_name = "ID")]
        webhook: Option<i64>,
        /// Every kept delivery, delivered ones too
        #[arg(long)]
        all: bool,
        /// At most this many
        #[arg(long, default_value_t = 50,
              value_parser = clap::value_parser!(i64).range(1..=MAX_LIST))]
        limit: i64,
    },
}

impl WebhooksCommand {
    fn scope(&self) -> &Scope {
        match self {
            Self::Add { scope, .. }
            | Self::List { scope }
            | Self::Remove { scope, .. }
            | Self::Deliveries { scope, .. } => scope,
        }
    }
}

/// Runs `mailroom webhooks …`.
pub fn run(args: WebhooksArgs) -> Result<()> {
    // Flags are checked by the server's own rules before anything is asked, so an error
    // names the flag rather than the tool's argument.
    if let WebhooksCommand::Add { url, secret, .. } = &args.command {
        // The data directory's settings say whether private addresses are allowed: the
        // operator's `.env` too, read as the backend reads it.
        shared::agent_dotenv(args.common.data_dir.clone())?;
        let config = shared::core_config(&shared::data_dir(args.common.data_dir.clone()))?;
        check_flags(url, secret.as_deref(), config.webhooks.allow_private)?;
    }
    let scope = args.command.scope();
    let project = project(scope.project.clone())?;
    let backend = args.common.backend()?;
    let agent = scope.agent.clone();
    let token = match &agent {
        Some(agent) => scope.proof.agent_token(&project, agent, &args.common)?,
        None => scope.proof.project_token(&project, &args.common)?,
    };
    let base = json!({"project_key": project, "agent_name": agent, "registration_token": token});
    let json = args.common.json;
    match args.command {
        WebhooksCommand::Add { url, secret, .. } => {
            let call = with(base, json!({"url": url, "secret": secret}));
            let added = backend.call_tool("register_webhook", call)?;
            output::print(json, &added, added_text);
            if json {
                eprintln!("Keep the secret: it will not be shown again.");
            }
        }
        WebhooksCommand::List { .. } => {
            let listed = backend.call_tool("list_webhooks", base)?;
            output::print(json, &listed, list_table);
        }
        WebhooksCommand::Remove { id, .. } => {
            let removed =
                backend.call_tool("remove_webhook", with(base, json!({"webhook_id": id})))?;
            output::print(json, &removed, |_| format!("removed webhook {id}\n"));
        }
        WebhooksCommand::Deliveries { webhook, all, limit, .. } => {
            let status = if all { "all" } else { "undelivered" };
            let call = with(base, json!({"webhook_id": webhook, "status": status, "limit": limit}));
            let view = backend.call_tool("webhook_deliveries", call)?;
            output::print(json, &view, deliveries_table);
        }
    }
    Ok(())
}

/// `--url` and `--secret` by the rules register_webhook applies (an empty secret is absent).
fn check_flags(url: &str, secret: Option<&str>, allow_private: bool) -> Result<()> {
    if let Err(e) = parse_url(url, allow_private) {
        bail!("--url: {}", e.message);
    }
    if let Some(secret) = secret.filter(|s| !s.trim().is_empty())
        && let Err(e) = Secret::parse(secret)
    {
        bail!("--secret: {}", e.message);
    }
    Ok(())
}

/// `base`'s arguments and `more`'s (options not given are null, which the tools read as
/// absent).
fn with(mut base: Value, more: Value) -> Value {
    if let (Some(base), Value::Object(more)) = (base.as_object_mut(), more) {
        base.extend(more);
    }
    base
}

fn added_text(added: &Value) -> String {
    format!(
        "registered webhook {} of {} for {}: {}\nsecret: {}\nKeep the secret: it will not be \
         shown again.\n",
        cell(&added["id"]),
        cell(&added["project"]),
        scope(&added["agent"], "every recipient"),
        cell(&added["url"]),
        cell(&added["secret"]),
    )
}

/// Whose deliveries a webhook receives: the agent's, or (`all`) every recipient's.
fn scope(agent: &Value, all: &str) -> String {
    match agent {
        Value::String(name) => name.clone(),
        _ => all.to_string(),
    }
}

fn list_table(listed: &Value) -> String {
    let rows = items(&listed["webhooks"])
        .iter()
        .map(|w| {
            let mut row = vec![cell(&w["id"]), scope(&w["agent"], "(all)")];
            row.extend(fields(w, &["pending", "failed", "created_ts", "url"]));
            row
        })
        .collect();
    output::table(&["id", "agent", "pending", "failed", "created", "url"], rows)
}

fn deliveries_table(view: &Value) -> String {
    let counts = &view["counts"];
    let keys = [
        "id",
        "webhook_id",
        "message_id",
        "recipient",
        "status",
        "attempts",
        "next_attempt_ts",
        "last_error",
    ];
    let rows = items(&view["deliveries"]).iter().map(|d| fields(d, &keys)).collect();
    format!(
        "pending {}, failed {}, delivered {}\n{}",
        cell(&counts["pending"]),
        cell(&counts["failed"]),
        cell(&counts["delivered"]),
        output::table(
            &[
                "delivery",
                "webhook",
                "message",
                "recipient",
                "status",
                "attempts",
                "next attempt",
                "last error"
            ],
            rows
        )
    )
}
