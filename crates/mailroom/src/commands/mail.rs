//! `mailroom mail send | inbox | read | ack | reply`: mail from a shell, as a named agent
//! (`--agent` or `$AGENT_NAME`, in `--project` or the current directory's project), through
//! the same tools an agent calls. Listing the inbox never marks anything read; `--mark-read`
//! asks for it.

use std::io::{IsTerminal as _, Read as _};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::output::{self, cell, fields, items};
use super::shared;
use super::target::{AsAgent, Common, Proof};

/// `mailroom mail`.
#[derive(Args, Debug)]
pub struct MailArgs {
    #[command(subcommand)]
    command: MailCommand,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum MailCommand {
    #[command(flatten)]
    AsAgent(Box<AgentMail>),
    /// How a project directory is routed: the identity gate, mode, remote, slug and uid
    Status {
        /// The project directory
        #[arg(default_value = ".")]
        path: String,
    },
}

/// What an agent does with its mail, through the server.
#[derive(Subcommand, Debug)]
enum AgentMail {
    /// Send a message (the body from --body or standard input)
    Send(SendArgs),
    /// The agent's inbox, newest first (marks nothing read unless --mark-read)
    Inbox(InboxArgs),
    /// One message whole (marks it read only with --mark-read)
    Read(ReadArgs),
    /// Acknowledge a message (which marks it read too)
    Ack(MessageArgs),
    /// Reply to a message, in its thread (the body from --body or standard input)
    Reply(ReplyArgs),
}

#[derive(Args, Debug)]
struct SendArgs {
    #[command(flatten)]
    who: AsAgent,
    #[command(flatten)]
    proof: Proof,
    /// A recipient (repeatable)
    #[arg(long, required = true)]
    to: Vec<String>,
    /// A carbon-copy recipient (repeatable)
    #[arg(long)]
    cc: Vec<String>,
    /// A blind-copy recipient (repeatable)
    #[arg(long)]
    bcc: Vec<String>,
    #[arg(long)]
    subject: String,
    /// The Markdown body [default: standard input]
    #[arg(long)]
    body: Option<String>,
    /// low, normal, high or urgent
    #[arg(long)]
    importance: Option<String>,
    /// Ask the recipients to acknowledge it
    #[arg(long)]
    ack_required: bool,
    /// The thread it joins
    #[arg(long)]
    thread: Option<String>,
    /// The topic it is filed under
    #[arg(long)]
    topic: Option<String>,
}

#[derive(Args, Debug)]
struct InboxArgs {
    #[command(flatten)]
    who: AsAgent,
    #[command(flatten)]
    proof: Proof,
    /// At most this many messages
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Only high and urgent ones
    #[arg(long)]
    urgent_only: bool,
    /// Show their bodies
    #[arg(long)]
    bodies: bool,
    /// Only messages after this time (ISO 8601)
    #[arg(long)]
    since: Option<String>,
    /// Mark the messages listed as read
    #[arg(long)]
    mark_read: bool,
}

/// One message, acted on as an agent.
#[derive(Args, Debug)]
struct MessageArgs {
    #[command(flatten)]
    who: AsAgent,
    #[command(flatten)]
    proof: Proof,
    /// The message's id
    id: i64,
}

#[derive(Args, Debug)]
struct ReadArgs {
    #[command(flatten)]
    m: MessageArgs,
    /// Also mark it read
    #[arg(long)]
    mark_read: bool,
}

#[derive(Args, Debug)]
struct ReplyArgs {
    #[command(flatten)]
    m: MessageArgs,
    /// The Markdown body [default: standard input]
    #[arg(long)]
    body: Option<String>,
}

/// Runs `mailroom mail …`.
pub fn run(args: MailArgs) -> Result<()> {
    match args.command {
        MailCommand::Status { path } => status(&path, &args.common),
        MailCommand::AsAgent(mail) => act(*mail, &args.common),
    }
}

fn act(mail: AgentMail, common: &Common) -> Result<()> {
    let backend = common.backend()?;
    let json = common.json;
    match mail {
        AgentMail::Send(a) => {
            // Options not given go as null, which the tool reads as absent.
            let call = json!({"project_key": a.who.project()?, "sender_name": a.who.agent()?,
                "to": a.to, "cc": a.cc, "bcc": a.bcc, "subject": a.subject, "body_md": body(a.body)?,
                "ack_required": a.ack_required, "importance": a.importance,
                "thread_id": a.thread, "topic": a.topic, "sender_token": a.proof.token(&a.who, common)?});
            let sent = backend.call_tool("send_message", call)?;
            output::print(json, &sent, delivered);
        }
        AgentMail::Inbox(a) => {
            // fetch_inbox marks what it lists read in the same write when asked.
            let call = json!({"project_key": a.who.project()?, "agent_name": a.who.agent()?,
                "limit": a.limit, "urgent_only": a.urgent_only, "include_bodies": a.bodies,
                "since_ts": a.since, "mark_read": a.mark_read.then_some(true),
                "registration_token": a.proof.token(&a.who, common)?});
            let inbox = backend.call_tool("fetch_inbox", call)?;
            output::print(json, &inbox, |v| inbox_table(v, a.bodies));
        }
        AgentMail::Read(ReadArgs { m, mark_read }) => {
            let (project, agent) = (m.who.project()?, m.who.agent()?);
            let uri = format!(
                "resource://message/{}?project={}&agent={}",
                m.id,
                encode(&project),
                encode(&agent)
            );
            let message = backend.read_resource(&uri)?;
            output::print(json, &message, show);
            if mark_read {
                let call = json!({"project_key": project, "agent_name": agent,
                    "message_id": m.id, "registration_token": m.proof.token(&m.who, common)?});
                backend.call_tool("mark_message_read", call)?;
            }
        }
        AgentMail::Ack(a) => {
            let call = json!({"project_key": a.who.project()?, "agent_name": a.who.agent()?,
                "message_id": a.id, "registration_token": a.proof.token(&a.who, common)?});
            let acked = backend.call_tool("acknowledge_message", call)?;
            output::print(json, &acked, |v| {
                format!("acknowledged message {} at {}\n", a.id, cell(&v["acknowledged_at"]))
            });
        }
        AgentMail::Reply(ReplyArgs { m, body: text }) => {
            let call = json!({"project_key": m.who.project()?, "sender_name": m.who.agent()?,
                "message_id": m.id, "body_md": body(text)?,
                "sender_token": m.proof.token(&m.who, common)?});
            let sent = backend.call_tool("reply_message", call)?;
            output::print(json, &sent, delivered);
        }
    }
    Ok(())
}

/// `mail status`: what a project directory resolves to, read locally (the reference's routing
/// diagnostics), with the identity gate as the data directory's settings have it.
fn status(path: &str, common: &Common) -> Result<()> {
    shared::agent_dotenv(common.data_dir.clone())?;
    let gate = shared::core_config(&shared::data_dir(common.data_dir.clone()))?.worktrees_enabled;
    let report = mailroom_core::ops::projects::identity::path_identity(path)?;
    let mut value = serde_json::to_value(&report)?;
    value["worktrees_enabled"] = json!(gate);
    output::print(common.json, &value, |v| {
        let fields = [
            "worktrees_enabled",
            "identity_mode_used",
            "human_key",
            "slug",
            "project_uid",
            "normalized_remote",
            "repo_root",
            "branch",
        ];
        fields.iter().map(|f| format!("{f:<20} {}\n", cell(&v[*f]))).collect()
    });
    Ok(())
}

/// `--body`, else standard input (which must not be a terminal nobody will type into).
fn body(flag: Option<String>) -> Result<String> {
    if let Some(body) = flag {
        return Ok(body);
    }
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("give the body with --body TEXT or on standard input");
    }
    let mut text = String::new();
    stdin.read_to_string(&mut text).context("cannot read the body from standard input")?;
    Ok(text)
}

/// A URI query value, percent-encoded.
pub fn encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// "sent message N to …" for each delivery of send_message or reply_message.
fn delivered(answer: &Value) -> String {
    let mut out = String::new();
    for delivery in items(&answer["deliveries"]) {
        let message = &delivery["payload"];
        let to: Vec<String> = items(&message["to"]).iter().map(cell).collect();
        out.push_str(&format!(
            "sent message {} to {} in {}\n",
            cell(&message["id"]),
            to.join(", "),
            cell(&delivery["project"])
        ));
    }
    if out.is_empty() { format!("{answer}\n") } else { out }
}

fn inbox_table(inbox: &Value, bodies: bool) -> String {
    let rows = items(inbox)
        .iter()
        .map(|m| {
            let mut row = fields(m, &["id", "created_ts", "from", "importance"]);
            row.push(if m["ack_required"].as_bool() == Some(true) { "ack" } else { "" }.into());
            row.push(cell(&m["subject"]));
            row
        })
        .collect();
    let mut out = output::table(&["id", "sent", "from", "importance", "", "subject"], rows);
    if bodies {
        for m in items(inbox) {
            out.push_str(&format!(
                "\n--- {} {}\n{}\n",
                cell(&m["id"]),
                cell(&m["subject"]),
                cell(&m["body_md"])
            ));
        }
    }
    out
}

/// One message, headers then body.
fn show(message: &Value) -> String {
    let to: Vec<String> = items(&message["to"]).iter().map(cell).collect();
    format!(
        "id:         {}\nfrom:       {}\nto:         {}\nsent:       {}\nimportance: {}\nthread:     {}\nsubject:    {}\n\n{}\n",
        cell(&message["id"]),
        cell(&message["from"]),
        to.join(", "),
        cell(&message["created_ts"]),
        cell(&message["importance"]),
        cell(&message["thread_id"]),
        cell(&message["subject"]),
        cell(&message["body_md"])
    )
}
