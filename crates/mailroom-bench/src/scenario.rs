//! Scenarios: what each request does, the data it needs (created in a setup phase through the
//! target's own MCP tools), and how an answer is judged.

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::client::{Call, Connection};
use crate::stats::Failure;
use crate::target::Target;

/// A load scenario (seed 000 §4, seed 003).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `GET` liveness: the HTTP stack alone.
    Health,
    /// `GET` readiness: one database round trip.
    Ready,
    /// MCP `tools/list`: JSON-RPC processing without the database.
    ToolsList,
    /// MCP `tools/call send_message` (or `POST /api/message/send` with `--via rest`).
    Send,
    /// MCP `tools/call fetch_inbox` on an inbox holding the seeded messages.
    Inbox,
    /// MCP `tools/call search_messages` over the seeded messages.
    Search,
    /// `send` from one client, one request at a time (seed 003's sequential benchmark).
    Sequential,
}

impl Scenario {
    /// Every scenario, in the order reports list them.
    pub const ALL: [Scenario; 7] = [
        Scenario::Health,
        Scenario::Ready,
        Scenario::ToolsList,
        Scenario::Send,
        Scenario::Inbox,
        Scenario::Search,
        Scenario::Sequential,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Health => "health",
            Scenario::Ready => "ready",
            Scenario::ToolsList => "tools-list",
            Scenario::Send => "send",
            Scenario::Inbox => "inbox",
            Scenario::Search => "search",
            Scenario::Sequential => "sequential",
        }
    }

    /// Whether the scenario needs a project, agents and messages first.
    fn needs_data(self) -> bool {
        matches!(self, Scenario::Send | Scenario::Inbox | Scenario::Search | Scenario::Sequential)
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Scenario::ALL.into_iter().find(|scenario| scenario.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
            format!("unknown scenario '{s}' ({})", names.join(", "))
        })
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How message operations reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Mcp,
    Rest,
}

impl FromStr for Via {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mcp" => Ok(Via::Mcp),
            "rest" => Ok(Via::Rest),
            _ => Err(format!("unknown transport '{s}' (mcp, rest)")),
        }
    }
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Via::Mcp => "mcp",
            Via::Rest => "rest",
        })
    }
}

/// How an answer is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Any 2xx.
    Status,
    /// A 2xx JSON-RPC answer with a `result` (no `error`, no `isError: true`).
    JsonRpc,
    /// A 2xx REST answer (error bodies come with 4xx/5xx).
    Rest,
}

/// Judges one answer.
pub fn judge(expect: Expect, status: u16, body: &Bytes) -> Result<(), Failure> {
    if !(200..300).contains(&status) {
        return Err(Failure::Status(status));
    }
    match expect {
        Expect::Status | Expect::Rest => Ok(()),
        Expect::JsonRpc => judge_json_rpc(body),
    }
}

/// The members of a JSON-RPC answer that decide success; everything else is skipped
/// without being built (IgnoredAny), so judging a large tools/list stays cheap.
#[derive(Deserialize)]
struct Envelope {
    result: Option<ResultHead>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ResultHead {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

fn judge_json_rpc(body: &Bytes) -> Result<(), Failure> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|_| Failure::BadBody)?;
    match (envelope.error, envelope.result) {
        (Some(_), _) => Err(Failure::JsonRpcError),
        (None, Some(ResultHead { is_error: true })) => Err(Failure::ToolError),
        (None, Some(_)) => Ok(()),
        (None, None) => Err(Failure::BadBody),
    }
}

/// What a scenario's workers send, once its data exists.
#[derive(Debug, Clone)]
pub struct Plan {
    pub call: Call,
    pub expect: Expect,
    /// What setup created, for the report.
    pub setup: Option<Value>,
}

/// The data of a message scenario.
struct Fixture {
    project: String,
    sender: String,
    receiver: String,
}

/// Creates what `scenario` needs and returns the request its workers repeat.
pub async fn prepare(
    target: &Target,
    scenario: Scenario,
    via: Via,
    seed_messages: usize,
) -> Result<Plan> {
    let implementation = target.implementation;
    if via == Via::Rest && !implementation.has_rest() {
        bail!("--via rest: {implementation} has no REST routes; drive it over MCP");
    }
    let mcp = target.mcp();
    let rpc = |method: &str, params: Value| {
        Call::post_json(
            &mcp,
            &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
    };
    let tool = |name: &str, arguments: Value| {
        rpc("tools/call", json!({"name": name, "arguments": arguments}))
    };
    if !scenario.needs_data() {
        let (call, expect) = match scenario {
            Scenario::Health => {
                (Call::get(target.path(implementation.health_path())), Expect::Status)
            }
            Scenario::Ready => {
                (Call::get(target.path(implementation.ready_path())), Expect::Status)
            }
            _ => (rpc("tools/list", json!({})), Expect::JsonRpc),
        };
        return Ok(Plan { call, expect, setup: None });
    }
    let mut setup = Setup::connect(target).await?;
    let fixture = setup.fixture().await?;
    let seeded =
        if matches!(scenario, Scenario::Inbox | Scenario::Search) { seed_messages } else { 0 };
    for n in 0..seeded {
        setup.send(&fixture, n).await?;
    }
    let setup_json = json!({
        "project": fixture.project, "sender": fixture.sender,
        "receiver": fixture.receiver, "seeded_messages": seeded,
    });
    let (call, expect) = match (scenario, via) {
        (Scenario::Inbox, Via::Rest) => (
            Call::post_json(
                target.path("/api/inbox"),
                &json!({
                    "project_slug": fixture.project, "agent_name": fixture.receiver, "limit": 20,
                }),
            ),
            Expect::Rest,
        ),
        (Scenario::Inbox, Via::Mcp) => (
            tool(
                "fetch_inbox",
                json!({
                    "project_key": fixture.project, "agent_name": fixture.receiver, "limit": 20,
                }),
            ),
            Expect::JsonRpc,
        ),
        (Scenario::Search, Via::Rest) => (
            Call::post_json(
                target.path("/api/messages/search"),
                &json!({
                    "project_slug": fixture.project, "query": "benchmark", "limit": 20,
                }),
            ),
            Expect::Rest,
        ),
        (Scenario::Search, Via::Mcp) => (
            tool(
                "search_messages",
                json!({
                    "project_key": fixture.project, "query": "benchmark", "limit": 20,
                }),
            ),
            Expect::JsonRpc,
        ),
        (_, Via::Rest) => (
            Call::post_json(
                target.path("/api/message/send"),
                &json!({
                    "project_slug": fixture.project, "sender_name": fixture.sender,
                    "recipient_names": [fixture.receiver], "subject": "Load test",
                    "body_md": "A benchmark message.",
                }),
            ),
            Expect::Rest,
        ),
        (_, Via::Mcp) => {
            (tool("send_message", send_arguments(&fixture, "Load test")), Expect::JsonRpc)
        }
    };
    Ok(Plan { call, expect, setup: Some(setup_json) })
}

fn send_arguments(fixture: &Fixture, subject: &str) -> Value {
    json!({
        "project_key": fixture.project, "sender_name": fixture.sender,
        "to": [fixture.receiver], "subject": subject, "body_md": "A benchmark message.",
    })
}

/// A connection for the setup phase, speaking MCP tools/call.
struct Setup {
    connection: Connection,
    mcp: String,
}

impl Setup {
    async fn connect(target: &Target) -> Result<Self> {
        let connection = Connection::open(&target.authority)
            .await
            .with_context(|| format!("setup: cannot connect to {}", target.authority))?;
        Ok(Self { connection, mcp: target.mcp() })
    }

    /// Calls a tool and returns its parsed text content; tool errors become errors.
    async fn tool(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": name, "arguments": arguments}});
        let call = Call::post_json(&self.mcp, &request);
        let (status, body) = self
            .connection
            .send(&call)
            .await
            .map_err(|e| anyhow::anyhow!("setup: {name}: {e:?}"))?;
        if !status.is_success() {
            bail!("setup: {name} answered HTTP {status} at {}", self.mcp);
        }
        let answer: Value = serde_json::from_slice(&body)
            .with_context(|| format!("setup: {name} did not answer JSON"))?;
        if let Some(error) = answer.get("error") {
            bail!("setup: {name}: JSON-RPC error {error}");
        }
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"].as_bool().unwrap_or(false) {
            bail!("setup: {name}: {text}");
        }
        serde_json::from_str(text).with_context(|| format!("setup: {name} answered non-JSON text"))
    }

    /// A fresh project (unique per run, so runs never share inboxes) with a sender and a
    /// receiver that accepts messages from anyone.
    async fn fixture(&mut self) -> Result<Fixture> {
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let human_key = format!("/tmp/mailroom-bench/run-{stamp}");
        let project = self.tool("ensure_project", json!({"human_key": human_key})).await?;
        let project = project["slug"].as_str().context("setup: ensure_project gave no slug")?;
        let mut names = Vec::new();
        for task in ["bench sender", "bench receiver"] {
            let agent = self
                .tool(
                    "register_agent",
                    json!({"project_key": project, "program": "mailroom-bench",
                                               "model": "load", "task_description": task}),
                )
                .await?;
            names.push(
                agent["name"].as_str().context("setup: register_agent gave no name")?.to_string(),
            );
        }
        let receiver = names.pop().unwrap_or_default();
        let sender = names.pop().unwrap_or_default();
        self.tool(
            "set_contact_policy",
            json!({"project_key": project, "agent_name": receiver,
                                               "policy": "open"}),
        )
        .await?;
        Ok(Fixture { project: project.to_string(), sender, receiver })
    }

    async fn send(&mut self, fixture: &Fixture, n: usize) -> Result<()> {
        let subject = format!("Seeded benchmark message {n}");
        self.tool("send_message", send_arguments(fixture, &subject)).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expect: Expect, status: u16, body: &str, want: Result<(), Failure>) {
        assert_eq!(judge(expect, status, &Bytes::from(body.to_string())), want, "{status} {body}");
    }

    #[test]
    fn answers_are_judged_by_kind() {
        check(Expect::Status, 200, "ok", Ok(()));
        check(Expect::Status, 503, "", Err(Failure::Status(503)));
        check(Expect::Rest, 400, "{\"error\":{}}", Err(Failure::Status(400)));
        check(Expect::JsonRpc, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#, Ok(()));
        check(
            Expect::JsonRpc,
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}"#,
            Ok(()),
        );
        check(
            Expect::JsonRpc,
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#,
            Err(Failure::ToolError),
        );
        check(
            Expect::JsonRpc,
            200,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#,
            Err(Failure::JsonRpcError),
        );
        check(Expect::JsonRpc, 200, "event: message\ndata: {}", Err(Failure::BadBody));
        check(Expect::JsonRpc, 200, r#"{"jsonrpc":"2.0","id":1}"#, Err(Failure::BadBody));
    }

    #[test]
    fn scenario_names_round_trip() {
        for scenario in Scenario::ALL {
            assert_eq!(scenario.name().parse::<Scenario>(), Ok(scenario));
        }
        assert!("nope".parse::<Scenario>().expect_err("an error").contains("tools-list"));
    }
}
