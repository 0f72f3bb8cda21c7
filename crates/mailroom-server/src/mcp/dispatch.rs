//! JSON-RPC 2.0 dispatch of MCP methods. The transport decides *how* a reply travels; this
//! module decides *what* it says.

use std::time::Instant;

use axum::body::Bytes;
use serde_json::{Value, json};

use super::SUPPORTED_PROTOCOL_VERSIONS;
use super::auth::{Claim, authorize};
use super::catalog::{AuthSpec, Rule};
use super::chunks::Chunks;
use super::envelope::{self, Era};
use super::error::{ToolError, code};
use super::format;
use super::resources::ReadError;
use super::tools::{Caller, Encoding, Output, Success, Tool, error_result, write_success_result};
use crate::state::AppState;

/// Instructions shown to agents on initialize.
const INSTRUCTIONS: &str = "Agent Mail: a mailbox, identities, threads, search and file \
     reservations for coding agents sharing a project. Start with ensure_project, then \
     register_agent; send_message / fetch_inbox to talk. Results are JSON by default; pass \
     format='toon' (tools) or ?format=toon (resources) for a compact TOON encoding.";

/// The log levels of `logging/setLevel` (RFC 5424 severities, as the MCP specification lists them).
const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// One parsed JSON-RPC request (a message with `method` and `id`).
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// A serialised JSON-RPC response.
pub enum Response {
    /// A success written whole for this request.
    Text(String),
    /// An error response, with its code (a 2026-07-28 error's HTTP status follows it).
    Error { code: i64, text: String },
    /// `head` (`{"jsonrpc":"2.0","id":…,"result":`, written for this request), then a result
    /// serialised once at start-up and shared rather than copied (a tools/list is 44 KB),
    /// then `tail` (`}`, or the 2026-07-28 result members and the closing braces, `result`
    /// then lacking its own closing brace).
    Shared { head: String, result: Bytes, tail: &'static str },
}

impl Response {
    /// The response's bytes in order, `before` and `after` it (an event stream's framing;
    /// empty chunks are skipped when sent).
    pub fn into_parts(self, before: &'static str, after: &'static str) -> Chunks {
        let framed = |text: String| {
            Chunks::new(vec![
                Bytes::from_static(before.as_bytes()),
                Bytes::from(text),
                Bytes::from_static(after.as_bytes()),
            ])
        };
        match self {
            Response::Text(text) | Response::Error { text, .. } => framed(text),
            Response::Shared { head, result, tail } => Chunks::new(vec![
                Bytes::from_static(before.as_bytes()),
                Bytes::from(head),
                result,
                Bytes::from_static(tail.as_bytes()),
                Bytes::from_static(after.as_bytes()),
            ]),
        }
    }

    /// The whole response as one string.
    pub fn into_text(self) -> String {
        match self {
            Response::Text(text) | Response::Error { text, .. } => text,
            Response::Shared { head, result, tail } => {
                format!("{head}{}{tail}", String::from_utf8_lossy(&result))
            }
        }
    }

    /// The JSON-RPC error code, for an error response.
    pub fn error_code(&self) -> Option<i64> {
        match self {
            Response::Error { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Adds the 2026-07-28 result members (`envelope::result_members`) to a success's result,
    /// which every success writes as its last member; an error is left as it is.
    fn with_result_members(self, cacheable: bool) -> Response {
        match self {
            Response::Text(mut text) => {
                // `…,"result":{…}}`: the result's closing brace is the second last byte.
                let result_close = text.len().saturating_sub(2);
                debug_assert!(text.ends_with("}}"), "a success ends with its result: {text}");
                if text.as_bytes().get(result_close) == Some(&b'}') {
                    let members = envelope::result_members(cacheable);
                    let empty = text[..result_close].trim_end().ends_with('{');
                    let insert = if empty { members.to_string() } else { format!(",{members}") };
                    text.insert_str(result_close, &insert);
                }
                Response::Text(text)
            }
            // A shared result (a list) is a non-empty object: its closing brace gives way to
            // the members' tail, and the bytes stay shared.
            Response::Shared { head, result, tail: "}" }
                if result.ends_with(b"}") && !result.ends_with(b"{}") =>
            {
                let open = result.slice(..result.len() - 1);
                Response::Shared { head, result: open, tail: envelope::result_tail(cacheable) }
            }
            Response::Shared { .. } => {
                Response::Text(self.into_text()).with_result_members(cacheable)
            }
            error @ Response::Error { .. } => error,
        }
    }
}

/// The protocol version to answer an initialize with.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| SUPPORTED_PROTOCOL_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(SUPPORTED_PROTOCOL_VERSIONS[0])
}

/// Answers one request. `session` is the request's MCP session id (`None` for a stateless
/// request, which is then a session of its own for tool authentication); `era` the protocol
/// generation it speaks (a 2026-07-28 request's envelope is checked by the transport).
pub async fn handle(
    state: &AppState,
    request: Request,
    session: Option<&str>,
    era: Era,
) -> Response {
    match era {
        Era::Handshake => handshake(state, request, session).await,
        Era::Modern => modern(state, request).await,
    }
}

/// 2025-11-25 and older: `initialize`, `ping`, `logging/setLevel` and the session's
/// resource subscriptions beside the methods both generations share.
async fn handshake(state: &AppState, request: Request, session: Option<&str>) -> Response {
    let Request { id, method, params } = request;
    match method.as_str() {
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            ok(&id, &initialize_result(negotiate_version(requested)))
        }
        "ping" => ok(&id, &json!({})),
        // Accepted and not acted on (no tool logs to the client), but the level must be one of
        // the MCP specification's: an invalid one is invalid params.
        "logging/setLevel" => match params.get("level").and_then(Value::as_str) {
            Some(level) if LOG_LEVELS.contains(&level) => ok(&id, &json!({})),
            _ => error(
                &id,
                code::INVALID_PARAMS,
                &format!("Invalid log level; expected one of: {}.", LOG_LEVELS.join(", ")),
            ),
        },
        "resources/subscribe" | "resources/unsubscribe" => {
            subscription(state, &id, &method, &params, session).await
        }
        "server/discover" | "subscriptions/listen" => error(
            &id,
            code::METHOD_NOT_FOUND,
            &format!(
                "Method not found: {method} (protocol 2026-07-28; send its envelope in \
                 params._meta and the MCP-Protocol-Version header)"
            ),
        ),
        _ => shared(state, id, method, params, session).await,
    }
}

/// 2026-07-28: `server/discover` beside the shared methods, every result carrying
/// `resultType` and the server's name (and the caching hints where the revision asks for
/// them). `subscriptions/listen` is an event stream, served by the transport (`listen.rs`).
async fn modern(state: &AppState, request: Request) -> Response {
    let Request { id, method, params } = request;
    let cacheable = matches!(
        method.as_str(),
        "server/discover"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
    );
    let response = match method.as_str() {
        "server/discover" => ok(&id, &discover_result()),
        "initialize"
        | "ping"
        | "logging/setLevel"
        | "resources/subscribe"
        | "resources/unsubscribe" => error(
            &id,
            code::METHOD_NOT_FOUND,
            &format!(
                "Method not found: {method} (removed in protocol 2026-07-28; resource \
                 subscriptions are made with subscriptions/listen)"
            ),
        ),
        "subscriptions/listen" => error(
            &id,
            code::INVALID_REQUEST,
            "subscriptions/listen answers with an event stream: send it over HTTP with \
             Accept: text/event-stream.",
        ),
        _ => shared(state, id, method, params, None).await,
    };
    response.with_result_members(cacheable)
}

/// The methods both generations answer alike.
async fn shared(
    state: &AppState,
    id: Value,
    method: String,
    params: Value,
    session: Option<&str>,
) -> Response {
    match method.as_str() {
        "tools/list" => ok_raw(&id, state.tools.list_result()),
        // A call without a tool name is a malformed request (a protocol error, as the
        // reference's SDK answers it); an unknown name is a tool error result, as the reference.
        "tools/call" if !params.get("name").is_some_and(Value::is_string) => error(
            &id,
            code::INVALID_PARAMS,
            "Invalid params: tools/call needs params.name, the tool to call.",
        ),
        "tools/call" => match call_tool(state, params, session).await {
            Answer::Success(json) => ok_tool(&id, &json),
            Answer::Failure(result) => ok(&id, &result),
            Answer::Storage(message) => error(&id, code::STORAGE, &message),
        },
        "resources/list" => ok_raw(&id, state.resources.list_result()),
        "resources/templates/list" => ok_raw(&id, state.resources.templates_result()),
        "prompts/list" => ok(&id, &json!({ "prompts": [] })),
        // The prompts capability is declared (as the reference does) with no prompt in it, so
        // every name is unknown: invalid params, as the MCP specification asks for an invalid
        // prompt name.
        "prompts/get" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
            error(&id, code::INVALID_PARAMS, &format!("Unknown prompt: {name}"))
        }
        "resources/read" => read_resource(state, &id, &params).await,
        _ => error(&id, code::METHOD_NOT_FOUND, &format!("Method not found: {method}")),
    }
}

/// `resources/subscribe` and `resources/unsubscribe`: kept per session (a stateless request
/// has none to notify), answered `{}`; what cannot be watched is refused as invalid params.
async fn subscription(
    state: &AppState,
    id: &Value,
    method: &str,
    params: &Value,
    session: Option<&str>,
) -> Response {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return error(id, code::INVALID_PARAMS, "Missing required parameter: uri");
    };
    let Some(session) = session else {
        return error(
            id,
            code::INVALID_REQUEST,
            "Subscriptions need a session: initialize first and send its Mcp-Session-Id.",
        );
    };
    if method == "resources/unsubscribe" {
        state.subscriptions.unsubscribe(session, uri);
        return ok(id, &json!({}));
    }
    let watched = match super::subscriptions::resolve(state, uri).await {
        Ok(watched) => watched,
        Err(message) => return error(id, code::INVALID_PARAMS, &message),
    };
    if !state.subscriptions.subscribe(session, uri, watched) {
        let limit = super::subscriptions::PER_SESSION;
        let message =
            format!("A session holds at most {limit} subscriptions; unsubscribe from some first.");
        return error(id, code::INVALID_PARAMS, &message);
    }
    ok(id, &json!({}))
}

/// `server/discover` (2026-07-28): the versions we speak and what we offer.
fn discover_result() -> Value {
    json!({
        "supportedVersions": envelope::supported_versions(),
        "capabilities": capabilities(Era::Modern),
        "instructions": INSTRUCTIONS
    })
}

fn initialize_result(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(Era::Handshake),
        "serverInfo": envelope::server_info(),
        "instructions": INSTRUCTIONS
    })
}

/// What we offer. Logging is declared to the handshake generation only: 2026-07-28 deprecates
/// it, and no tool logs to the client.
fn capabilities(era: Era) -> Value {
    let mut capabilities = json!({
        "tools": { "listChanged": false },
        "resources": { "subscribe": true, "listChanged": false },
        "prompts": { "listChanged": false }
    });
    if era == Era::Handshake {
        capabilities["logging"] = json!({});
    }
    capabilities
}

/// `resources/read`: one JSON text content, or a JSON-RPC error (code 0 for a failing
/// resource, as the reference's MCP SDK answers; invalid params for an unknown URI).
async fn read_resource(state: &AppState, id: &Value, params: &Value) -> Response {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return error(id, code::INVALID_PARAMS, "resources/read needs params.uri.");
    };
    match state.resources.read(state.clone(), uri).await {
        Ok(value) => ok(
            id,
            &json!({ "contents": [{ "uri": uri, "mimeType": "application/json",
                "text": value.to_string() }] }),
        ),
        // The URI in `data`, as the MCP specification asks for a resource that is not found.
        Err(ReadError::Unknown(message)) => {
            error_with_data(id, code::INVALID_PARAMS, &message, json!({ "uri": uri }))
        }
        Err(ReadError::Failed(message)) => error(id, code::RESOURCE_FAILED, &message),
    }
}

/// What a `tools/call` answers: a successful result's JSON text, an `isError` result, or
/// (storage refused the write) a JSON-RPC error.
enum Answer {
    Success(String),
    Failure(Value),
    Storage(String),
}

async fn call_tool(state: &AppState, mut params: Value, session: Option<&str>) -> Answer {
    // `handle` has checked that the name is a string.
    let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
    let Some(tool) = state.tools.get(name) else {
        return Answer::Failure(error_result(format!("Unknown tool: {name}")));
    };
    let name = tool.name;
    let arguments =
        params.as_object_mut().and_then(|p| p.remove("arguments")).unwrap_or(Value::Null);
    // Every call is counted here, once, whatever the tool (docs/compat/tools.md §1.8), before
    // authentication (the ring records the arguments as the caller sent them).
    state.instruments.record_call(name, &arguments);
    let started = Instant::now();
    let outcome = run_tool(state, tool, arguments, session).await;
    let error = outcome.as_ref().err().map(ToolError::kind);
    state.metrics.record_tool_call(name, started.elapsed(), error);
    match outcome {
        Ok(json) => Answer::Success(json),
        Err(e) => {
            state.instruments.record_error(name);
            match e.storage_message() {
                Some(message) => Answer::Storage(message.to_string()),
                None => Answer::Failure(error_result(e.result_text(name))),
            }
        }
    }
}

/// Authenticates a call (with tool authentication on), runs it and encodes its result.
async fn run_tool(
    state: &AppState,
    tool: &Tool,
    mut arguments: Value,
    session: Option<&str>,
) -> Result<String, ToolError> {
    let name = tool.name;
    // An invalid format fails argument validation inside `call`; here it is known good.
    let requested = format::from_argument(arguments.get("format")).ok().flatten();
    let chosen = requested.unwrap_or(state.config.default_format);
    let auth = state.config.tool_auth.then_some(&tool.info.auth);
    // Open tools need no check, so their arguments are decoded once, by the call itself.
    if let Some(spec) = auth.filter(|spec| spec.rule != Rule::Open) {
        tool.validate(&arguments)?;
        let claim = Claim::from_arguments(spec, &arguments);
        let viewer = authorize(state, name, spec, claim, session).await?;
        fill_in_viewer(&mut arguments, spec, viewer);
    }
    let caller = Caller { session: session.map(str::to_string) };
    // JSON results are serialised once, straight from the op's output; TOON re-encodes a tree.
    let encoding =
        if chosen == format::OutputFormat::Json { Encoding::Json } else { Encoding::Value };
    let Success { output, agent } = tool.call(state.clone(), arguments, caller, encoding).await?;
    // A registration binds the session (with authentication on) to the agent it names.
    if let (Some(_), Some(agent)) = (auth, agent) {
        state.bindings.bind(session, agent.project_id, agent.agent_id);
    }
    Ok(match output {
        Output::Json(json) => json,
        Output::Value(value) => {
            format::apply(value, requested, state.config.default_format).to_string()
        }
    })
}

/// Names the session's agent as the viewer of a call that named none (see [`authorize`]).
fn fill_in_viewer(arguments: &mut Value, spec: &AuthSpec, viewer: Option<String>) {
    if let (Some(viewer), Some(field), Some(object)) =
        (viewer, spec.agent.first(), arguments.as_object_mut())
    {
        object.insert((*field).to_string(), Value::from(viewer));
    }
}

/// A success response.
pub fn ok(id: &Value, result: &Value) -> Response {
    Response::Text(json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string())
}

/// A successful tool call's response, written around the result's JSON text; the bytes a
/// `Value`-built response would have (members sorted).
fn ok_tool(id: &Value, json: &str) -> Response {
    // The text is written twice, once quoted: a result's JSON has a quote in every eight
    // bytes or so (an inbox of 20: 13 %), each escaped, so a quarter more keeps the answer
    // from being copied into a larger buffer halfway.
    let mut out = String::with_capacity(2 * json.len() + json.len() / 4 + 128);
    out.push_str(r#"{"id":"#);
    out.push_str(&id.to_string());
    out.push_str(r#","jsonrpc":"2.0","result":"#);
    write_success_result(&mut out, json);
    out.push('}');
    Response::Text(out)
}

/// A success response around a result serialised once and shared (no re-encoding, no copy).
fn ok_raw(id: &Value, result: &Bytes) -> Response {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#);
    Response::Shared { head, result: result.clone(), tail: "}" }
}

/// An error response; `id` is null when the request could not be read.
pub fn error(id: &Value, code: i64, message: &str) -> Response {
    let error =
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    Response::Error { code, text: error.to_string() }
}

/// An error response with `data`.
pub fn error_with_data(id: &Value, code: i64, message: &str, data: Value) -> Response {
    let error = json!({ "jsonrpc": "2.0", "id": id,
        "error": { "code": code, "message": message, "data": data } });
    Response::Error { code, text: error.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(response: Response, cacheable: bool) -> Value {
        let text = response.with_result_members(cacheable).into_text();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    #[test]
    fn result_members_join_every_kind_of_success_and_leave_errors_alone() {
        let id = json!(3);
        let plain = stamped(ok(&id, &json!({ "prompts": [] })), true);
        assert_eq!(plain["result"]["prompts"], json!([]));
        assert_eq!(
            (plain["result"]["resultType"].clone(), plain["result"]["ttlMs"].clone()),
            (json!("complete"), json!(0))
        );
        let empty = stamped(ok(&id, &json!({})), false);
        assert_eq!(empty["result"]["resultType"], "complete");
        assert!(empty["result"].get("ttlMs").is_none());
        let failure = stamped(ok(&id, &error_result("boom".to_string())), false);
        assert_eq!(failure["result"]["isError"], true);
        assert_eq!(failure["result"]["resultType"], "complete");
        let tool = stamped(ok_tool(&id, r#"{"status":"ok"}"#), false);
        assert_eq!(tool["result"]["structuredContent"]["status"], "ok");
        assert_eq!(tool["result"]["resultType"], "complete");
        let shared = Bytes::from_static(br#"{"tools":[{"name":"a"}]}"#);
        let listed = stamped(ok_raw(&id, &shared), true);
        assert_eq!(listed["result"]["tools"][0]["name"], "a");
        assert_eq!(listed["result"]["cacheScope"], "private");
        let shared_empty = stamped(ok_raw(&id, &Bytes::from_static(b"{}")), true);
        assert_eq!(shared_empty["result"]["resultType"], "complete");
        for parsed in [&plain, &empty, &tool, &listed] {
            assert_eq!(parsed["id"], 3);
            assert_eq!(
                parsed["result"]["_meta"][envelope::SERVER_INFO_KEY]["name"],
                "mcp-agent-mail"
            );
        }
        let refused = error(&id, code::METHOD_NOT_FOUND, "nope").with_result_members(true);
        assert_eq!(refused.error_code(), Some(code::METHOD_NOT_FOUND));
        let refused: Value = serde_json::from_str(&refused.into_text()).expect("json");
        assert!(refused.get("result").is_none() && refused["error"]["code"] == -32601);
    }
}
