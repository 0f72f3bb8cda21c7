//! Scenarios: what each request does, the data it needs (created in a setup phase through the
//! target's own MCP tools), and how an answer is judged.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::client::{Answer, Call, Connection};
use crate::sse::json_rpc_payload;
use crate::stats::Failure;
use crate::target::Target;

/// A load scenario: the benchmark plan's categories, the sequential run and the mixed load
/// (BENCHMARKS.md, "Current state"; README's "Load lab").
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
    /// MCP `tools/call file_reservation_paths`: one agent renewing its hold on a spread of
    /// paths (an identical pattern is updated in place, so holds do not pile up).
    Reserve,
    /// `send` from one client, one request at a time (the sequential run of BENCHMARKS.md).
    Sequential,
    /// Writers, readers and a hot "celebrity" inbox at once, each group with its own
    /// concurrency, as an earlier Python-against-Rust comparison ran them (README's "Load lab").
    Mixed,
    /// `GET /mail`: the web UI's unified inbox (the newest 500 messages of every project)
    /// over the seeded messages.
    UiInbox,
    /// `GET /mail/{project}/inbox/{agent}`: the web UI's first inbox page of the agent that
    /// received the seeded messages.
    UiAgentInbox,
    /// `send_message` to one random agent of many, each subscribed to its inbox in its own MCP
    /// session with its event stream open (or watching its signal file): the latency from a
    /// send's reply to that agent's notification (`push.rs`).
    Push,
}

impl Scenario {
    /// Every scenario, in the order reports list them.
    pub const ALL: [Scenario; 12] = [
        Scenario::Health,
        Scenario::Ready,
        Scenario::ToolsList,
        Scenario::Send,
        Scenario::Inbox,
        Scenario::Search,
        Scenario::Reserve,
        Scenario::Sequential,
        Scenario::Mixed,
        Scenario::UiInbox,
        Scenario::UiAgentInbox,
        Scenario::Push,
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
            Scenario::Reserve => "reserve",
            Scenario::Sequential => "sequential",
            Scenario::Mixed => "mixed",
            Scenario::UiInbox => "ui-inbox",
            Scenario::UiAgentInbox => "ui-agent-inbox",
            Scenario::Push => "push",
        }
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
        Expect::JsonRpc => crate::verdict::judge_json_rpc(body),
    }
}

/// What a group of workers sends, once its data exists: each worker cycles through `calls`
/// (several calls spread the load over many inboxes), or sends what `picker` chooses.
#[derive(Debug, Clone)]
pub struct Plan {
    pub calls: Vec<Call>,
    pub expect: Expect,
    pub picker: Option<Arc<dyn Picker>>,
}

impl Plan {
    fn one(call: Call, expect: Expect) -> Self {
        Self::new(vec![call], expect)
    }

    /// Workers cycle through `calls`.
    pub fn new(calls: Vec<Call>, expect: Expect) -> Self {
        Self { calls, expect, picker: None }
    }
}

/// Chooses the call of each request and hears how it went, for a plan whose calls are not
/// simply taken in turn (the push scenario: a random agent with no notification outstanding).
pub trait Picker: Send + Sync + fmt::Debug {
    /// What to send next.
    fn pick(&self) -> Choice;
    /// The request of `call` was answered (`ok`: with success) or given up at `done`.
    fn answered(&self, call: usize, done: Instant, ok: bool);
}

/// A [`Picker`]'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Send this call of the plan.
    Call(usize),
    /// Every call is busy for now: ask again shortly.
    Busy,
    /// Nothing is left to send: the worker stops.
    Exhausted,
}

/// Builds the requests of message scenarios for one target and transport.
struct Requests<'a> {
    target: &'a Target,
    via: Via,
    mcp: String,
}

impl Requests<'_> {
    fn rpc(&self, method: &str, params: Value) -> Call {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        Call::post_json(&self.target.authority, &self.mcp, &body)
    }

    fn tool(&self, name: &str, arguments: Value) -> Call {
        self.rpc("tools/call", json!({"name": name, "arguments": arguments}))
    }

    fn expect(&self) -> Expect {
        if self.via == Via::Rest { Expect::Rest } else { Expect::JsonRpc }
    }

    fn send(&self, project: &str, sender: &str, recipient: &str) -> Call {
        match self.via {
            Via::Rest => Call::post_json(
                &self.target.authority,
                self.target.path("/api/message/send"),
                &json!({"project_slug": project, "sender_name": sender,
                        "recipient_names": [recipient], "subject": "Load test",
                        "body_md": "A benchmark message."}),
            ),
            Via::Mcp => {
                self.tool("send_message", send_arguments(project, sender, recipient, "Load test"))
            }
        }
    }

    fn inbox(&self, project: &str, agent: &str) -> Call {
        match self.via {
            Via::Rest => Call::post_json(
                &self.target.authority,
                self.target.path("/api/inbox"),
                &json!({"project_slug": project, "agent_name": agent, "limit": 20}),
            ),
            Via::Mcp => self.tool(
                "fetch_inbox",
                json!({"project_key": project, "agent_name": agent, "limit": 20}),
            ),
        }
    }

    fn search(&self, project: &str, term: &str) -> Call {
        match self.via {
            Via::Rest => Call::post_json(
                &self.target.authority,
                self.target.path("/api/messages/search"),
                &json!({"project_slug": project, "query": term, "limit": 20}),
            ),
            Via::Mcp => self.tool(
                "search_messages",
                json!({"project_key": project, "query": term, "limit": 20}),
            ),
        }
    }
}

fn requests(target: &Target, via: Via) -> Result<Requests<'_>> {
    let implementation = target.implementation;
    if via == Via::Rest && !implementation.has_rest() {
        bail!("--via rest: {implementation} has no REST routes; drive it over MCP");
    }
    Ok(Requests { target, via, mcp: target.mcp() })
}

/// A scenario ready to run: its plan and what setup created (for the report).
pub struct Prepared {
    pub plan: Plan,
    pub setup: Option<Value>,
}

/// Creates what `scenario` needs and returns the request its workers repeat.
/// What the search scenario searches for: `term` (default `benchmark`, in every seeded and
/// dataset message), in `project` (the scenario's own seeded project when `None`; `mailroom
/// bench` names the first `--dataset` project).
#[derive(Debug, Clone)]
pub struct SearchOptions {
    pub term: String,
    pub project: Option<String>,
}

/// The search scenario's default query: a word in every seeded and dataset message.
pub const DEFAULT_SEARCH_TERM: &str = "benchmark";

impl Default for SearchOptions {
    fn default() -> Self {
        Self { term: DEFAULT_SEARCH_TERM.to_string(), project: None }
    }
}

/// What a scenario is prepared with: the messages seeded in its inbox, and the search's.
#[derive(Debug, Clone, Copy)]
pub struct Seeding<'a> {
    pub messages: usize,
    pub search: &'a SearchOptions,
}

pub async fn prepare(
    target: &Target,
    scenario: Scenario,
    via: Via,
    seeding: Seeding<'_>,
) -> Result<Prepared> {
    let requests = requests(target, via)?;
    let implementation = target.implementation;
    let plan = match scenario {
        Scenario::Health => {
            let path = target.path(implementation.health_path());
            Plan::one(Call::get(&target.authority, path), Expect::Status)
        }
        Scenario::Ready => {
            let path = target.path(implementation.ready_path());
            Plan::one(Call::get(&target.authority, path), Expect::Status)
        }
        Scenario::ToolsList => Plan::one(requests.rpc("tools/list", json!({})), Expect::JsonRpc),
        Scenario::Mixed => bail!("the mixed scenario is prepared by prepare_mixed"),
        Scenario::Push => bail!("the push scenario is prepared by push::run"),
        _ => return prepare_messages(&requests, scenario, seeding).await,
    };
    Ok(Prepared { plan, setup: None })
}

async fn prepare_messages(
    requests: &Requests<'_>,
    scenario: Scenario,
    seeding: Seeding<'_>,
) -> Result<Prepared> {
    let seed_messages = seeding.messages;
    let mut setup = Setup::connect(requests.target).await?;
    if scenario == Scenario::Reserve {
        return prepare_reservations(requests, &mut setup).await;
    }
    let fixture = setup.fixture(1).await?;
    let receiver = fixture.receivers[0].as_str();
    let reads = [Scenario::Inbox, Scenario::Search, Scenario::UiInbox, Scenario::UiAgentInbox];
    let seeded = if reads.contains(&scenario) { seed_messages } else { 0 };
    for n in 0..seeded {
        setup.send(&fixture, receiver, n).await?;
    }
    let (project, sender) = (fixture.project.as_str(), fixture.sender.as_str());
    let searched = seeding.search.project.as_deref().unwrap_or(project);
    let target = requests.target;
    let (call, expect) = match scenario {
        Scenario::Inbox => (requests.inbox(project, receiver), requests.expect()),
        Scenario::Search => (requests.search(searched, &seeding.search.term), requests.expect()),
        Scenario::UiInbox => (Call::get(&target.authority, target.path("/mail")), Expect::Status),
        Scenario::UiAgentInbox => {
            let path = target.path(&format!("/mail/{project}/inbox/{receiver}"));
            (Call::get(&target.authority, path), Expect::Status)
        }
        _ => (requests.send(project, sender, receiver), requests.expect()),
    };
    let mut setup = json!({"project": project, "sender": sender, "receiver": receiver,
                           "seeded_messages": seeded});
    if scenario == Scenario::Search {
        setup["search"] = json!({"project": searched, "term": seeding.search.term});
    }
    Ok(Prepared { plan: Plan::one(call, expect), setup: Some(setup) })
}

/// Paths the reserve scenario spreads its holds over.
const RESERVED_PATHS: usize = 100;

async fn prepare_reservations(requests: &Requests<'_>, setup: &mut Setup) -> Result<Prepared> {
    if requests.via == Via::Rest {
        bail!("--via rest: there is no REST route for file reservations; use MCP");
    }
    let fixture = setup.fixture(0).await?;
    let (project, agent) = (fixture.project.as_str(), fixture.sender.as_str());
    let calls = (0..RESERVED_PATHS)
        .map(|n| {
            requests.tool(
                "file_reservation_paths",
                json!({"project_key": project, "agent_name": agent,
                       "paths": [format!("src/bench/module_{n}.rs")], "ttl_seconds": 3600,
                       "exclusive": true, "reason": "load test"}),
            )
        })
        .collect();
    let setup = json!({"project": project, "agent": agent, "paths": RESERVED_PATHS});
    Ok(Prepared { plan: Plan::new(calls, Expect::JsonRpc), setup: Some(setup) })
}

/// Sizes of the mixed load: each group has its own concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixedLoad {
    /// Workers sending messages, spread over every inbox.
    pub writers: usize,
    /// Workers reading inboxes spread over `inboxes` agents.
    pub readers: usize,
    /// Workers reading the few hot ("celebrity") inboxes.
    pub celebrity_readers: usize,
    /// Ordinary agents whose inboxes the readers read.
    pub inboxes: usize,
    /// Celebrity agents (a pool of 5 by default).
    pub celebrities: usize,
}

impl Default for MixedLoad {
    /// The high-concurrency run of the comparison the mixed load comes from: writer 10, reader
    /// 60, celebrity 30, pool of 5.
    fn default() -> Self {
        Self { writers: 10, readers: 60, celebrity_readers: 30, inboxes: 20, celebrities: 5 }
    }
}

/// The three groups of the mixed scenario, named, with their concurrency.
pub struct PreparedMixed {
    pub groups: Vec<(String, usize, Plan)>,
    pub setup: Value,
}

/// Creates one project with `inboxes + celebrities` receivers, each seeded with
/// `seed_messages` messages, and the writer, reader and celebrity plans.
pub async fn prepare_mixed(
    target: &Target,
    via: Via,
    load: MixedLoad,
    seed_messages: usize,
) -> Result<PreparedMixed> {
    if load.inboxes == 0 || load.celebrities == 0 {
        bail!("the mixed scenario needs at least one inbox and one celebrity");
    }
    let requests = requests(target, via)?;
    let mut setup = Setup::connect(target).await?;
    let fixture = setup.fixture(load.inboxes + load.celebrities).await?;
    for receiver in &fixture.receivers {
        for n in 0..seed_messages {
            setup.send(&fixture, receiver, n).await?;
        }
    }
    let (project, sender) = (fixture.project.as_str(), fixture.sender.as_str());
    let (ordinary, celebrities) = fixture.receivers.split_at(load.inboxes);
    let expect = requests.expect();
    let writes = fixture.receivers.iter().map(|r| requests.send(project, sender, r)).collect();
    let reads = ordinary.iter().map(|r| requests.inbox(project, r)).collect();
    let hot = celebrities.iter().map(|r| requests.inbox(project, r)).collect();
    let groups = vec![
        ("writers".to_string(), load.writers, Plan::new(writes, expect)),
        ("readers".to_string(), load.readers, Plan::new(reads, expect)),
        ("celebrity".to_string(), load.celebrity_readers, Plan::new(hot, expect)),
    ];
    let setup = json!({"project": project, "sender": sender, "inboxes": load.inboxes,
                       "celebrities": celebrities, "seeded_messages_per_inbox": seed_messages});
    Ok(PreparedMixed { groups: groups.into_iter().filter(|g| g.1 > 0).collect(), setup })
}

/// The send of each of `fixture`'s receivers, for `via`, and how its answer is judged.
pub(crate) fn send_plan(
    target: &Target,
    via: Via,
    fixture: &Fixture,
) -> Result<(Vec<Call>, Expect)> {
    let requests = requests(target, via)?;
    let (project, sender) = (fixture.project.as_str(), fixture.sender.as_str());
    let calls = fixture.receivers.iter().map(|r| requests.send(project, sender, r)).collect();
    Ok((calls, requests.expect()))
}

/// The data of a message scenario.
pub(crate) struct Fixture {
    pub(crate) project: String,
    pub(crate) sender: String,
    pub(crate) receivers: Vec<String>,
}

fn send_arguments(project: &str, sender: &str, recipient: &str, subject: &str) -> Value {
    json!({
        "project_key": project, "sender_name": sender,
        "to": [recipient], "subject": subject, "body_md": "A benchmark message.",
    })
}

/// A connection for the setup phase, speaking MCP tools/call.
pub(crate) struct Setup {
    connection: Connection,
    authority: String,
    mcp: String,
}

impl Setup {
    pub(crate) async fn connect(target: &Target) -> Result<Self> {
        let connection = Connection::open(&target.authority)
            .await
            .with_context(|| format!("setup: cannot connect to {}", target.authority))?;
        Ok(Self { connection, authority: target.authority.clone(), mcp: target.mcp() })
    }

    /// A POST of `body` to the MCP endpoint, with more headers.
    pub(crate) fn mcp_call(&self, headers: &[(&str, &str)], body: &Value) -> Call {
        Call::post_json_with(&self.authority, &self.mcp, headers, body)
    }

    /// A request to the MCP endpoint without a body (`DELETE`, say).
    pub(crate) fn bodiless_call(&self, method: hyper::Method, headers: &[(&str, &str)]) -> Call {
        Call::bodiless(method, &self.authority, &self.mcp, headers)
    }

    /// Sends `call` (`what`, in errors) and returns its answer, which must be a 2xx.
    pub(crate) async fn exchange(&mut self, call: &Call, what: &str) -> Result<Answer> {
        let answer = self
            .connection
            .send_with_head(call)
            .await
            .map_err(|e| anyhow::anyhow!("setup: {what}: {e:?}"))?;
        if !answer.status.is_success() {
            bail!("setup: {what} answered HTTP {} at {}", answer.status, self.mcp);
        }
        Ok(answer)
    }

    /// Calls a tool and returns its parsed text content; tool errors become errors.
    pub(crate) async fn tool(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": name, "arguments": arguments}});
        let call = self.mcp_call(&[], &request);
        let body = self.exchange(&call, name).await?.body;
        let payload = json_rpc_payload(&body)
            .with_context(|| format!("setup: {name}: the event stream held no response"))?;
        let answer: Value = serde_json::from_slice(&payload)
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

    async fn agent(&mut self, project: &str, task: &str) -> Result<String> {
        let agent = self
            .tool(
                "register_agent",
                json!({"project_key": project, "program": "mailroom-bench",
                                           "model": "load", "task_description": task}),
            )
            .await?;
        Ok(agent["name"].as_str().context("setup: register_agent gave no name")?.to_string())
    }

    /// A fresh project (unique per run, so runs never share inboxes) with a sender and
    /// `receivers` agents that accept messages from anyone. Names are generated by the
    /// server, so they are valid for every implementation.
    pub(crate) async fn fixture(&mut self, receivers: usize) -> Result<Fixture> {
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let human_key = format!("/tmp/mailroom-bench/run-{stamp}");
        let project = self.tool("ensure_project", json!({"human_key": human_key})).await?;
        let project =
            project["slug"].as_str().context("setup: ensure_project gave no slug")?.to_string();
        let sender = self.agent(&project, "bench sender").await?;
        let mut names = Vec::with_capacity(receivers);
        for _ in 0..receivers {
            let receiver = self.agent(&project, "bench receiver").await?;
            self.tool(
                "set_contact_policy",
                json!({"project_key": project, "agent_name": receiver,
                                                   "policy": "open"}),
            )
            .await?;
            names.push(receiver);
        }
        Ok(Fixture { project, sender, receivers: names })
    }

    async fn send(&mut self, fixture: &Fixture, receiver: &str, n: usize) -> Result<()> {
        let subject = format!("Seeded benchmark message {n}");
        let arguments = send_arguments(&fixture.project, &fixture.sender, receiver, &subject);
        self.tool("send_message", arguments).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expect: Expect, status: u16, body: &str, want: Result<(), Failure>) {
        assert_eq!(judge(expect, status, &Bytes::from(body.to_string())), want, "{status} {body}");
    }

    /// The status decides first; a JSON-RPC body is then judged by `verdict` (whose tests
    /// cover the body's kinds and SSE framing).
    #[test]
    fn answers_are_judged_by_kind() {
        check(Expect::Status, 200, "ok", Ok(()));
        check(Expect::Status, 503, "", Err(Failure::Status(503)));
        check(Expect::Rest, 400, "{\"error\":{}}", Err(Failure::Status(400)));
        check(Expect::Rest, 200, "not json", Ok(()));
        check(
            Expect::JsonRpc,
            500,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            Err(Failure::Status(500)),
        );
        check(Expect::JsonRpc, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#, Ok(()));
        check(
            Expect::JsonRpc,
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#,
            Err(Failure::ToolError),
        );
    }

    #[test]
    fn scenario_names_round_trip() {
        for scenario in Scenario::ALL {
            assert_eq!(scenario.name().parse::<Scenario>(), Ok(scenario));
        }
        assert!("nope".parse::<Scenario>().expect_err("an error").contains("tools-list"));
    }
}
