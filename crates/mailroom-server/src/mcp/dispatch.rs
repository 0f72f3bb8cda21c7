//! JSON-RPC 2.0 dispatch of MCP methods. The transport decides *how* a reply travels; this
//! module decides *what* it says.

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::auth::{authorize, bind_result};
use super::error::code;
use super::tools::{Caller, error_result, success_result};
use super::{SERVER_NAME, SUPPORTED_PROTOCOL_VERSIONS};
use crate::state::AppState;

/// Instructions shown to agents on initialize.
const INSTRUCTIONS: &str = "Agent Mail: a mailbox, identities, threads, search and file \
     reservations for coding agents sharing a project. Start with ensure_project, then \
     register_agent; send_message / fetch_inbox to talk. Results are JSON by default.";

/// One parsed JSON-RPC request (a message with `method` and `id`).
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// A serialised JSON-RPC response.
pub type Response = String;

/// The protocol version to answer an initialize with.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|v| SUPPORTED_PROTOCOL_VERSIONS.iter().find(|s| **s == v))
        .copied()
        .unwrap_or(SUPPORTED_PROTOCOL_VERSIONS[0])
}

/// Answers one request. `session` is the request's MCP session id (`None` for a stateless
/// request, which is then a session of its own for tool authentication).
pub async fn handle(state: &AppState, request: Request, session: Option<&str>) -> Response {
    let Request { id, method, params } = request;
    match method.as_str() {
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            ok(&id, &initialize_result(negotiate_version(requested)))
        }
        "ping" | "logging/setLevel" => ok(&id, &json!({})),
        "tools/list" => ok_raw(&id, state.tools.list_result()),
        "tools/call" => ok(&id, &call_tool(state, params, session).await),
        "resources/list" => ok(&id, &json!({ "resources": [] })),
        "resources/templates/list" => ok(&id, &json!({ "resourceTemplates": [] })),
        "prompts/list" => ok(&id, &json!({ "prompts": [] })),
        "resources/read" => error(&id, code::INVALID_PARAMS, &unknown_resource(&params)),
        _ => error(&id, code::METHOD_NOT_FOUND, &format!("Method not found: {method}")),
    }
}

fn initialize_result(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": { "listChanged": false },
            "resources": { "subscribe": false, "listChanged": false },
            "prompts": { "listChanged": false },
            "logging": {}
        },
        "serverInfo": { "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") },
        "instructions": INSTRUCTIONS
    })
}

fn unknown_resource(params: &Value) -> String {
    let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
    format!("Unknown resource: {uri}")
}

async fn call_tool(state: &AppState, params: Value, session: Option<&str>) -> Value {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return error_result("tools/call needs params.name, the tool to call.".to_string());
    };
    let Some(tool) = state.tools.get(name) else {
        return error_result(format!("Unknown tool: {name}"));
    };
    let mut arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
    let auth = state.config.tool_auth.then_some(&tool.info.auth);
    if let Some(spec) = auth {
        let checked = match tool.validate(&arguments) {
            Ok(()) => authorize(state, name, spec, &mut arguments, session).await,
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            return error_result(e.result_text(name));
        }
    }
    let caller = Caller { session: session.map(str::to_string) };
    match tool.call(state.clone(), arguments, caller).await {
        Ok(value) => {
            if let Some(spec) = auth {
                bind_result(state, spec, &value, session);
            }
            success_result(value)
        }
        Err(e) => error_result(e.result_text(name)),
    }
}

/// A success response.
pub fn ok(id: &Value, result: &Value) -> Response {
    json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
}

/// A success response around an already serialised result (no re-encoding).
fn ok_raw(id: &Value, result: &RawValue) -> Response {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#, result.get())
}

/// An error response; `id` is null when the request could not be read.
pub fn error(id: &Value, code: i64, message: &str) -> Response {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }).to_string()
}
