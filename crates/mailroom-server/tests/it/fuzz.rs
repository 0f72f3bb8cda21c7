//! Hostile input at every tool (docs/compat/errors.md): random arguments, in the shapes each
//! tool's schema names and in others, sent through the MCP dispatch in process. No case may
//! panic or end in an internal error; a refused call says why and stores nothing; and after
//! each batch the server must still serve everyone else (`TestApp::assert_serves_everyone`:
//! a normal send, a reservation granted and released, the archive caught up and verified,
//! `/ready`).

use mailroom_server::mcp::dispatch::{self, Request, Response};
use mailroom_server::mcp::envelope::Era;
use mailroom_testkit::TestApp;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value, json};

/// Cases per tool (49 tools: some 10,000 calls a run).
const CASES_PER_TOOL: usize = 200;

/// Strings that have broken parsers elsewhere: traversal, NUL, control and right-to-left
/// characters, markup, huge and odd numbers as text, globs.
fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,24}",
        Just(String::new()),
        Just("../../../etc/passwd".to_string()),
        Just("/abs/path/../x".to_string()),
        Just("a\u{0}b".to_string()),
        Just("\u{202e}evil\u{202d}".to_string()),
        Just("<script>alert(1)</script>".to_string()),
        Just("**/*".to_string()),
        Just("[".to_string()),
        Just("x".repeat(5000)),
        Just("99999999999999999999999".to_string()),
        Just("2026-13-45T25:61:61Z".to_string()),
        Just("BlueLake".to_string()),
        Just("/work/fuzz".to_string()),
        Just("/".to_string()),
        Just("/tmp/../..".to_string()),
        Just("C:\\Windows".to_string()),
        Just("x ".repeat(50_000)),
    ]
}

/// Numbers that once reached the database unchecked: a TTL or extension of 10^12 or 10^15
/// seconds (years no timestamp can hold), negative and extreme ones.
fn hostile_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>(),
        Just(1_000_000_000_000i64),
        Just(1_000_000_000_000_000i64),
        Just(-5i64),
        Just(i64::MAX),
        Just(i64::MIN),
    ]
    .prop_map(Value::from)
}

/// Ten thousand names that exist nowhere: an error must not list them all.
fn crowd() -> Value {
    Value::Array((0..10_000).map(|i| Value::from(format!("Nobody{i}"))).collect())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        10 => Just(Value::Null),
        10 => any::<bool>().prop_map(Value::from),
        10 => hostile_number(),
        10 => prop_oneof![Just(-1.5f64), Just(1e300), Just(0.0)].prop_map(Value::from),
        10 => nasty_string().prop_map(Value::from),
        1 => Just(crowd()),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The seeded project and agents, for arguments that name them: half the time such an
/// argument is valid, so that the hostile values of the others reach the state they could
/// poison (a huge `extend_seconds` does harm only to a reservation that exists).
fn known_value(property: &str) -> Option<Value> {
    Some(match property {
        "project_key" | "human_key" | "project_slug" => json!("/work/fuzz"),
        "agent_name" | "sender_name" | "from_agent" | "name" | "requester" => json!("BlueLake"),
        "to_agent" | "target" => json!("GreenCastle"),
        "to" | "recipient_names" => json!(["GreenCastle"]),
        "paths" | "file_reservation_paths" => json!(["src/**"]),
        _ => return None,
    })
}

/// Arguments for a tool: each of its schema's properties with a chance, random values (or,
/// half the time, the seeded names: [`known_value`]), and now and then a key it does not know.
fn arguments(properties: Vec<String>) -> impl Strategy<Value = Value> {
    let count = properties.len();
    (
        prop::collection::vec((any::<bool>(), any::<bool>(), json_value()), count),
        prop::option::of(("[a-z_]{1,10}", json_value())),
    )
        .prop_map(move |(values, extra)| {
            let mut map = Map::new();
            for (name, (present, known, value)) in properties.iter().zip(values) {
                if present {
                    let value = known.then(|| known_value(name)).flatten().unwrap_or(value);
                    map.insert(name.clone(), value);
                }
            }
            if let Some((key, value)) = extra {
                map.insert(key, value);
            }
            Value::Object(map)
        })
}

#[tokio::test]
async fn random_arguments_never_panic_nor_fail_inside() {
    let app = TestApp::start().await;
    app.seed_pair("/work/fuzz", "BlueLake", "GreenCastle").await;
    let listed: Value = serde_json::from_slice(app.state.tools.list_result()).expect("tools");
    let tools = listed["tools"].as_array().expect("tools").clone();
    assert!(tools.len() > 30, "every tool is fuzzed");
    // The same cases every run: CI must not turn red by chance; widen CASES_PER_TOOL to look further.
    let mut runner = TestRunner::deterministic();
    for tool in &tools {
        let name = tool["name"].as_str().expect("name").to_string();
        let properties: Vec<String> = tool["inputSchema"]["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let strategy = arguments(properties);
        for _ in 0..CASES_PER_TOOL {
            let args = strategy.new_tree(&mut runner).expect("case").current();
            let before = *app.core.changes().borrow();
            let request = Request {
                id: json!(1),
                method: "tools/call".to_string(),
                params: json!({"name": name, "arguments": args}),
            };
            let response = dispatch::handle(&app.state, request, None, Era::Handshake).await;
            assert!(
                !matches!(response, Response::Shared { .. }),
                "{name}: a tools/call answers with its own text"
            );
            let text = response.into_text();
            let answer: Value = serde_json::from_str(&text).expect("JSON-RPC");
            let shown: String = args.to_string().chars().take(400).collect();
            let case = format!("{name} {shown}: {text:.400}");
            let internal = text.contains("Internal error") || text.contains("Unexpected error");
            assert!(!internal, "bad input is never internal: {case}");
            let refused = answer.get("error").is_some() || answer["result"]["isError"] == true;
            if refused {
                let said = answer["error"]["message"]
                    .as_str()
                    .or_else(|| answer["result"]["content"][0]["text"].as_str())
                    .unwrap_or_default();
                assert!(said.len() > 10, "a refusal says why: {case}");
                // The store's change count moves with every committed write that changed rows.
                assert_eq!(
                    *app.core.changes().borrow(),
                    before,
                    "a refusal stores nothing: {case}"
                );
            }
        }
        let context = format!("{CASES_PER_TOOL} random calls of {name}");
        fuzzed_project_still_works(&app, &context).await;
        app.assert_serves_everyone(&context).await;
        // New projects (the health check's, the calls') are scored in the background a second
        // later: over before the next tool's refusals are checked for writes.
        app.siblings_scored().await;
    }
}

/// Every value a well-formed call of each tool needs beside the hostile one: the seeded
/// names ([`known_value`]) and plain text for the rest.
fn valid_value(property: &str) -> Option<Value> {
    known_value(property).or_else(|| {
        Some(match property {
            "subject" | "body_md" | "query" | "reason" | "program" | "model" => json!("fuzz"),
            "task_description" | "topic" | "slot" | "product_key" => json!("fuzz"),
            "policy" => json!("open"),
            "thread_id" => json!("T-1"),
            "message_id" | "file_reservation_id" => json!(1),
            "code_repo_path" => json!("/work/fuzz"),
            _ => return None,
        })
    })
}

/// Each numeric argument of each tool, in an otherwise valid call, given the numbers that once
/// reached the database (10^12 and 10^15 seconds, negatives, the extremes, a float): the call
/// answers or refuses naming that argument, and after each tool the server still serves
/// everyone (the random cases above reach these states only by chance).
#[tokio::test]
async fn hostile_numbers_in_otherwise_valid_calls() {
    let app = TestApp::start().await;
    app.seed_pair("/work/fuzz", "BlueLake", "GreenCastle").await;
    fuzzed_project_still_works(&app, "seeding").await;
    let listed: Value = serde_json::from_slice(app.state.tools.list_result()).expect("tools");
    let numbers =
        [json!(1_000_000_000_000i64), json!(1_000_000_000_000_000i64), json!(-5), json!(0)];
    let extremes = [json!(i64::MAX), json!(i64::MIN), json!(1e12), json!(1e300)];
    for tool in listed["tools"].as_array().expect("tools") {
        let name = tool["name"].as_str().expect("name");
        let properties = tool["inputSchema"]["properties"].as_object().expect("properties");
        let numeric = properties.iter().filter(|(_, schema)| {
            let kind = schema["type"].to_string();
            kind.contains("integer") || kind.contains("number")
        });
        for (property, _) in numeric {
            for number in numbers.iter().chain(&extremes) {
                let mut args: Map<String, Value> = properties
                    .keys()
                    .filter_map(|p| valid_value(p).map(|v| (p.clone(), v)))
                    .collect();
                args.insert(property.clone(), number.clone());
                let result = app.call_tool_raw(name, Value::Object(args)).await;
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                let case = format!("{name} {property}={number}: {text:.300}");
                assert!(!text.contains("Unexpected error"), "{case}");
            }
        }
        let context = format!("hostile numbers at {name}");
        fuzzed_project_still_works(&app, &context).await;
        app.assert_serves_everyone(&context).await;
    }
}

/// The fuzzed project itself, whatever the calls did to it: its reservations can be listed
/// and their holders can release them (the issue was a holder unable to undo a bad call);
/// then BlueLake holds `src/**` again, for the next tool's calls to act on.
async fn fuzzed_project_still_works(app: &TestApp, context: &str) {
    let listed = app.read_resource("resource://file_reservations/work-fuzz").await;
    assert!(listed.is_ok(), "the fuzzed project's reservations after {context}: {listed:?}");
    for agent in ["BlueLake", "GreenCastle"] {
        let release = json!({"project_key": "/work/fuzz", "agent_name": agent});
        let released = app.call_tool_raw("release_file_reservations", release).await;
        let text = released["content"][0]["text"].as_str().unwrap_or_default();
        // The agent may have been retired or deleted by the calls; it must not be internal.
        assert!(!text.contains("Unexpected error"), "{agent} after {context}: {text}");
    }
    let reserve =
        json!({"project_key": "/work/fuzz", "agent_name": "BlueLake", "paths": ["src/**"]});
    let granted = app.call_tool_raw("file_reservation_paths", reserve).await;
    let text = granted["content"][0]["text"].as_str().unwrap_or_default();
    assert!(!text.contains("Unexpected error"), "a grant after {context}: {text}");
}

/// Resource URIs built from the templates' pieces and hostile strings, with and without a
/// query: an answer or a clear error, never a panic or an internal error.
#[tokio::test]
async fn random_resource_uris_never_fail_inside() {
    let app = TestApp::start().await;
    app.seed_pair("/work/fuzz", "BlueLake", "GreenCastle").await;
    let segment = prop_oneof![
        nasty_string(),
        Just("project".to_string()),
        Just("agent".to_string()),
        Just("work-fuzz".to_string()),
        Just("%2e%2e".to_string()),
    ];
    let family = prop_oneof![
        Just("projects"),
        Just("project"),
        Just("agents"),
        Just("inbox"),
        Just("outbox"),
        Just("mailbox"),
        Just("thread"),
        Just("message"),
        Just("file_reservations"),
        Just("views"),
        Just("tooling"),
        Just("config"),
        Just("identity"),
        Just("product"),
        Just("nonsense"),
    ];
    let query = prop::option::of(("[a-z_]{1,10}", nasty_string()));
    let strategy = (family, prop::collection::vec(segment, 0..4), query).prop_map(
        |(family, segments, query)| {
            let mut uri = format!("resource://{family}");
            for segment in segments {
                uri.push('/');
                uri.push_str(&segment);
            }
            if let Some((key, value)) = query {
                uri.push_str(&format!("?{key}={value}"));
            }
            uri
        },
    );
    let mut runner = TestRunner::deterministic();
    for _ in 0..3000 {
        let uri = strategy.new_tree(&mut runner).expect("case").current();
        let request = Request {
            id: json!(1),
            method: "resources/read".to_string(),
            params: json!({"uri": uri}),
        };
        let text = match dispatch::handle(&app.state, request, None, Era::Handshake).await {
            Response::Shared { .. } => continue,
            response => response.into_text(),
        };
        let answer: Value = serde_json::from_str(&text).expect("JSON-RPC");
        let internal = text.contains("Internal error") || text.contains("Unexpected error");
        assert!(!internal, "{uri}: {text:.300}");
        assert!(answer.get("result").is_some() || answer["error"]["message"].is_string(), "{uri}");
    }
    app.assert_serves_everyone("3,000 random resource URIs").await;
}

/// The REST routes' bodies: random JSON over HTTP; a clear 4xx or an answer, never a 5xx.
#[tokio::test]
async fn random_rest_bodies_never_fail_inside() {
    let app = TestApp::start().await;
    app.seed_pair("/work/fuzz", "BlueLake", "GreenCastle").await;
    let routes = [
        ("/api/project/ensure", vec!["human_key", "registration_token"]),
        (
            "/api/agent/register",
            vec!["project_slug", "name", "program", "model", "task_description"],
        ),
        (
            "/api/message/send",
            vec![
                "project_slug",
                "sender_name",
                "recipient_names",
                "subject",
                "body_md",
                "thread_id",
            ],
        ),
        ("/api/inbox", vec!["project_slug", "agent_name", "limit", "since_ts"]),
        ("/api/messages/search", vec!["project_slug", "query", "limit"]),
    ];
    let mut runner = TestRunner::deterministic();
    for (route, fields) in routes {
        let strategy = arguments(fields.into_iter().map(str::to_string).collect());
        for _ in 0..150 {
            let body = strategy.new_tree(&mut runner).expect("case").current();
            let (status, answer) = app.post(route, body.clone()).await;
            assert!(status < 500, "{route} {body}: {status} {answer}");
            if status >= 400 {
                let said = answer.to_string();
                assert!(said.len() > 20 && !said.contains("Internal error"), "{route}: {said}");
            }
        }
        app.assert_serves_everyone(&format!("150 random bodies at {route}")).await;
    }
}

/// The JSON-RPC envelope as the transport reads it, over HTTP: random bytes, random JSON and
/// envelopes with each member of the wrong type or missing, under random content types. A
/// clear 4xx or a JSON-RPC answer, never a 5xx, and nothing stored by what is refused.
#[tokio::test]
async fn random_envelopes_never_fail_inside() {
    let app = TestApp::start().await;
    app.seed_pair("/work/fuzz", "BlueLake", "GreenCastle").await;
    let method = prop_oneof![
        Just(json!("tools/call")),
        Just(json!("tools/list")),
        Just(json!("resources/read")),
        Just(json!("initialize")),
        Just(json!("notifications/initialized")),
        nasty_string().prop_map(Value::from),
        json_value(),
    ];
    let member = |value: BoxedStrategy<Value>| prop::option::of(value);
    let envelope = (
        member(prop_oneof![Just(json!("2.0")), json_value()].boxed()),
        member(prop_oneof![Just(json!(1)), Just(json!("a")), json_value()].boxed()),
        member(method.boxed()),
        member(json_value().boxed()),
    )
        .prop_map(|(jsonrpc, id, method, params)| {
            let mut map = Map::new();
            for (key, value) in
                [("jsonrpc", jsonrpc), ("id", id), ("method", method), ("params", params)]
            {
                if let Some(value) = value {
                    map.insert(key.to_string(), value);
                }
            }
            Value::Object(map).to_string().into_bytes()
        });
    let body = prop_oneof![
        4 => envelope,
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
        1 => Just(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]".to_vec()),
    ];
    let content_type = prop_oneof![
        Just("application/json"),
        Just("text/plain"),
        Just("application/json; charset=utf-8"),
    ];
    let mut runner = TestRunner::deterministic();
    let strategy = (body, content_type);
    for _ in 0..1500 {
        let (body, content_type) = strategy.new_tree(&mut runner).expect("case").current();
        let before = *app.core.changes().borrow();
        let response = app
            .client
            .post(format!("{}/mcp", app.base_url))
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .body(body.clone())
            .send()
            .await
            .expect("post");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let case = format!("{:.300} → {status} {text:.300}", String::from_utf8_lossy(&body));
        assert!(status < 500, "{case}");
        assert!(!text.contains("Internal error") && !text.contains("Unexpected error"), "{case}");
        let refused =
            status >= 400 || text.contains("\"error\"") || text.contains("\"isError\":true");
        if refused {
            assert_eq!(*app.core.changes().borrow(), before, "a refusal stores nothing: {case}");
        }
    }
    app.assert_serves_everyone("random JSON-RPC envelopes").await;
}

/// Attachment paths, the one argument that names files on the server: traversal, absolute
/// paths, URLs, NUL, odd encodings (none names a file the project holds). Each is refused
/// naming `attachment_paths[0]`, echoes nothing it read, and stores no message.
#[tokio::test]
async fn hostile_attachment_paths_are_refused_by_name() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/fuzz", "BlueLake", "GreenCastle").await;
    let piece = prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just("etc".to_string()),
        Just("passwd".to_string()),
        Just("%2e%2e".to_string()),
        Just("..%2f".to_string()),
        Just("a\u{0}b".to_string()),
        Just("\\..\\".to_string()),
        Just("~".to_string()),
        Just("x.png".to_string()),
        "[a-z.]{1,8}",
    ];
    let path = (
        prop_oneof![Just(""), Just("/"), Just("file://"), Just("http://127.0.0.1/"), Just("~/")],
        prop::collection::vec(piece, 1..6),
    )
        .prop_map(|(prefix, pieces)| format!("{prefix}{}", pieces.join("/")));
    let mut runner = TestRunner::deterministic();
    for _ in 0..400 {
        let path = path.new_tree(&mut runner).expect("case").current();
        let before = *app.core.changes().borrow();
        let arguments = json!({"project_key": slug, "sender_name": "BlueLake",
            "to": ["GreenCastle"], "subject": "attachment", "body_md": "see attached",
            "attachment_paths": [path]});
        let result = app.call_tool("send_message", arguments).await;
        match result {
            Err(text) => {
                assert!(text.contains("attachment_paths[0]"), "{path:?}: {text}");
                assert!(!text.contains("root:"), "{path:?}: nothing read is echoed: {text}");
                assert_eq!(*app.core.changes().borrow(), before, "{path:?}: nothing stored");
            }
            Ok(sent) => panic!("{path:?} names no file of the project, yet was sent: {sent}"),
        }
    }
    app.assert_serves_everyone("400 hostile attachment paths").await;
}
