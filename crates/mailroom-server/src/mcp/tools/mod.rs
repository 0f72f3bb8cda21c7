//! The tool registry: one alphabetical table of every tool, built once at start-up with its
//! schema and a precomputed `tools/list` result.
//!
//! The registry owns argument decoding (lax coercion as pydantic does, unknown fields
//! rejected, missing fields named) and the result shape (text content + structuredContent).

mod acknowledge_message;
mod acquire_build_slot;
mod archive_project;
mod create_agent_identity;
mod deregister_agent;
mod ensure_product;
mod ensure_project;
mod expire_window;
mod fetch_inbox;
mod fetch_inbox_events;
mod fetch_inbox_product;
mod fetch_summary;
mod fetch_topic;
mod file_reservation_paths;
mod force_release_file_reservation;
mod hard_delete_agent;
mod hard_delete_project;
mod health_check;
mod install_precommit_guard;
mod list_agents;
mod list_contacts;
mod list_webhooks;
mod list_window_identities;
mod macro_contact_handshake;
mod macro_file_reservation_cycle;
mod macro_prepare_thread;
mod macro_start_session;
mod mark_message_read;
mod message_receipts;
mod products_link;
mod purge_old_messages;
mod register_agent;
mod register_webhook;
mod release_build_slot;
mod release_file_reservations;
mod remove_webhook;
mod rename_window;
mod renew_build_slot;
mod renew_file_reservations;
mod reply_message;
mod request_contact;
mod respond_contact;
mod retire_agent;
mod run_upkeep;
mod search_messages;
mod search_messages_product;
mod send_message;
mod set_contact_policy;
mod summarize_recent;
mod summarize_thread;
mod summarize_thread_product;
mod unarchive_project;
mod uninstall_precommit_guard;
mod unretire_agent;
mod webhook_deliveries;
mod whois;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use axum::body::Bytes;
use mailroom_core::ops::macros::{PreparedThread, SessionStarted};
use mailroom_core::ops::output::{AgentOut, JsonText};
use mailroom_core::records::{AgentId, ProjectId};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::catalog::{self, ToolFilter, ToolInfo};
use super::error::ToolError;
use super::json_string::push_json_string;
#[cfg(debug_assertions)]
use super::unique_keys;
use crate::state::AppState;

/// Every tool, alphabetically. Add a tool: one file, one line here, one row in the catalog.
/// Feature-gated tools are told apart by their catalog row ([`ToolInfo::worktrees_only`]);
/// `Registry::build` leaves them out.
fn all_tools() -> Vec<Tool> {
    vec![
        acknowledge_message::tool(),
        acquire_build_slot::tool(),
        archive_project::tool(),
        create_agent_identity::tool(),
        deregister_agent::tool(),
        ensure_product::tool(),
        ensure_project::tool(),
        expire_window::tool(),
        fetch_inbox::tool(),
        fetch_inbox_events::tool(),
        fetch_inbox_product::tool(),
        fetch_summary::tool(),
        fetch_topic::tool(),
        file_reservation_paths::tool(),
        force_release_file_reservation::tool(),
        hard_delete_agent::tool(),
        hard_delete_project::tool(),
        health_check::tool(),
        install_precommit_guard::tool(),
        list_agents::tool(),
        list_contacts::tool(),
        list_webhooks::tool(),
        list_window_identities::tool(),
        macro_contact_handshake::tool(),
        macro_file_reservation_cycle::tool(),
        macro_prepare_thread::tool(),
        macro_start_session::tool(),
        mark_message_read::tool(),
        message_receipts::tool(),
        products_link::tool(),
        purge_old_messages::tool(),
        register_agent::tool(),
        register_webhook::tool(),
        release_build_slot::tool(),
        release_file_reservations::tool(),
        remove_webhook::tool(),
        rename_window::tool(),
        renew_build_slot::tool(),
        renew_file_reservations::tool(),
        reply_message::tool(),
        request_contact::tool(),
        respond_contact::tool(),
        retire_agent::tool(),
        run_upkeep::tool(),
        search_messages::tool(),
        search_messages_product::tool(),
        send_message::tool(),
        set_contact_policy::tool(),
        summarize_recent::tool(),
        summarize_thread::tool(),
        summarize_thread_product::tool(),
        unarchive_project::tool(),
        uninstall_precommit_guard::tool(),
        unretire_agent::tool(),
        webhook_deliveries::tool(),
        whois::tool(),
    ]
}

/// What a tool call resolves to.
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<Success, ToolError>> + Send>>;
type Handler = Box<dyn Fn(AppState, Value, Caller, Encoding) -> ToolFuture + Send + Sync>;
type Validator = Box<dyn Fn(&Value) -> Result<(), ToolError> + Send + Sync>;

/// How the dispatcher wants a successful result encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Compact JSON text serialised straight from the op's output, members in the output
    /// type's declaration order (the reference's order): no `Value` tree is built.
    Json,
    /// A `Value` tree, for the TOON format, which re-encodes it.
    Value,
}

/// A successful result, as [`Encoding`] asked.
#[derive(Debug)]
pub enum Output {
    Json(String),
    Value(Value),
}

/// A successful call: its result and, for a registration tool, the agent the result names
/// (the caller's session has proved itself as that agent).
#[derive(Debug)]
pub struct Success {
    pub output: Output,
    pub agent: Option<AgentRef>,
}

/// An agent by id, as a session binding holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRef {
    pub project_id: ProjectId,
    pub agent_id: AgentId,
}

/// The result of a registration tool: it names the agent registered or refreshed.
pub trait NamesAgent {
    fn agent(&self) -> AgentRef;
}

impl NamesAgent for AgentOut {
    fn agent(&self) -> AgentRef {
        AgentRef { project_id: self.base.project_id, agent_id: self.base.id }
    }
}

impl NamesAgent for SessionStarted {
    fn agent(&self) -> AgentRef {
        self.agent.agent()
    }
}

impl NamesAgent for PreparedThread {
    fn agent(&self) -> AgentRef {
        self.agent.agent()
    }
}

/// Who is calling, for the few tools whose behaviour depends on it (authentication).
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The request's MCP session id; `None` for a stateless request.
    pub session: Option<String>,
}

/// One tool: its public contract, its catalog row (cluster, capabilities, authentication:
/// docs/compat/tools.md §11 and §1.7, from [`catalog::CATALOG`]) and its glue.
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub info: &'static ToolInfo,
    handler: Handler,
    validator: Validator,
}

impl Tool {
    /// Declares a tool whose arguments decode into `A` and whose op returns `O`.
    pub fn new<A, O, F, Fut>(name: &'static str, description: &'static str, run: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + 'static,
        F: Fn(AppState, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = mailroom_core::Result<O>> + Send + 'static,
    {
        Self::with_caller(name, description, move |state, args, _caller| run(state, args))
    }

    /// Declares a tool that also sees its [`Caller`].
    pub fn with_caller<A, O, F, Fut>(name: &'static str, description: &'static str, run: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + 'static,
        F: Fn(AppState, A, Caller) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = mailroom_core::Result<O>> + Send + 'static,
    {
        Self::build(name, description, run, |output: O, encoding| {
            encode(&output, encoding).map(|output| Success { output, agent: None })
        })
    }

    /// Declares a registration tool: a session calling it is bound to the agent its result
    /// names (when tool authentication is on).
    pub fn registration<A, O, F, Fut>(name: &'static str, description: &'static str, run: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + NamesAgent + 'static,
        F: Fn(AppState, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = mailroom_core::Result<O>> + Send + 'static,
    {
        let run = move |state, args, _caller| run(state, args);
        Self::build(name, description, run, |output: O, encoding| {
            let agent = Some(output.agent());
            encode(&output, encoding).map(|output| Success { output, agent })
        })
    }

    /// Declares a tool whose op writes its result's JSON text itself (a long list read
    /// straight from the database): the text is sent as it is.
    pub fn json_text<A, F, Fut>(name: &'static str, description: &'static str, run: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(AppState, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = mailroom_core::Result<JsonText>> + Send + 'static,
    {
        let run = move |state, args, _caller| run(state, args);
        Self::build(name, description, run, |text, encoding| {
            encode_text(text, encoding).map(|output| Success { output, agent: None })
        })
    }

    fn build<A, O, F, Fut>(
        name: &'static str,
        description: &'static str,
        run: F,
        encode: fn(O, Encoding) -> Result<Success, ToolError>,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: 'static,
        F: Fn(AppState, A, Caller) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = mailroom_core::Result<O>> + Send + 'static,
    {
        let input_schema = input_schema::<A>();
        let schema_for_decode = input_schema.clone();
        let schema_for_check = input_schema.clone();
        let validator: Validator = Box::new(move |arguments: &Value| {
            decode::<A>(name, &schema_for_check, arguments.clone()).map(drop)
        });
        let handler: Handler = Box::new(move |state, arguments, caller, encoding| {
            match decode::<A>(name, &schema_for_decode, arguments) {
                Err(e) => Box::pin(std::future::ready(Err(e))),
                Ok(args) => {
                    let pending = run(state, args, caller);
                    Box::pin(async move { encode(pending.await?, encoding) })
                }
            }
        });
        let info = catalog::info_of(name);
        Self { name, description, input_schema, info, handler, validator }
    }

    /// Checks raw JSON arguments as the call would decode them, without running the tool
    /// (authentication runs after argument validation, as in the reference).
    pub fn validate(&self, arguments: &Value) -> Result<(), ToolError> {
        (self.validator)(arguments)
    }

    /// Runs the tool on raw JSON arguments; its result comes encoded as `encoding` asks.
    pub fn call(
        &self,
        state: AppState,
        arguments: Value,
        caller: Caller,
        encoding: Encoding,
    ) -> ToolFuture {
        (self.handler)(state, arguments, caller, encoding)
    }
}

/// Encodes an op's output once, as the dispatcher asked.
fn encode<O: Serialize>(output: &O, encoding: Encoding) -> Result<Output, ToolError> {
    let encoded = match encoding {
        Encoding::Json => serde_json::to_string(output).map(Output::Json),
        Encoding::Value => serde_json::to_value(output).map(Output::Value),
    };
    let encoded = encoded.map_err(|e| {
        ToolError::Domain(mailroom_core::Error::internal(format!("cannot encode result: {e}")))
    })?;
    // The text skips the `Value` tree, which would have folded a key written twice (a
    // `#[serde(flatten)]` member overlapping its parent) into one: debug builds, so every test
    // run, check that no output writes a key twice and that the text says what the tree says.
    #[cfg(debug_assertions)]
    if let Output::Json(text) = &encoded {
        if let Err(e) = serde_json::from_str::<unique_keys::Checked>(text) {
            panic!("a tool result writes a key twice ({e}): {text}");
        }
        let parsed: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let tree = serde_json::to_value(output).unwrap_or(Value::Null);
        assert!(unique_keys::same(&parsed, &tree), "text {text} differs from its Value {tree}");
    }
    Ok(encoded)
}

/// Passes a result written as JSON text on (parsed into a tree only for TOON).
fn encode_text(JsonText(text): JsonText, encoding: Encoding) -> Result<Output, ToolError> {
    #[cfg(debug_assertions)]
    if let Err(e) = serde_json::from_str::<unique_keys::Checked>(&text) {
        panic!("a tool result is not JSON or writes a key twice ({e}): {text}");
    }
    match encoding {
        Encoding::Json => Ok(Output::Json(text)),
        Encoding::Value => serde_json::from_str(&text).map(Output::Value).map_err(|e| {
            ToolError::Domain(mailroom_core::Error::internal(format!("result is not JSON: {e}")))
        }),
    }
}

/// The registry and the `tools/list` result, serialised once.
pub struct Registry {
    by_name: HashMap<&'static str, Tool>,
    list_result: Bytes,
}

impl Registry {
    /// Builds every tool enabled by the configuration and kept by the filter, and serialises
    /// the `tools/list` answer once (start-up only). Product-bus and build-slot tools exist
    /// only with WORKTREES_ENABLED, as in the reference (their catalog clusters say so).
    pub fn build(worktrees_enabled: bool, filter: &ToolFilter) -> Self {
        let tools: Vec<Tool> = all_tools()
            .into_iter()
            .filter(|t| worktrees_enabled || !t.info.worktrees_only())
            .filter(|t| filter.keeps(t.name, t.info.cluster))
            .collect();
        let listed: Vec<Value> = tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
            .collect();
        let list_result = Bytes::from(json!({ "tools": listed }).to_string());
        let by_name = tools.into_iter().map(|t| (t.name, t)).collect();
        Self { by_name, list_result }
    }

    /// The tool of this name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.by_name.keys().copied().collect();
        names.sort_unstable();
        names
    }

    /// The precomputed `tools/list` result (shared, not copied, by each answer).
    pub fn list_result(&self) -> &Bytes {
        &self.list_result
    }
}

/// The JSON schema of an argument struct, without the meta-schema key.
fn input_schema<A: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Null);
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.entry("properties").or_insert_with(|| json!({}));
    }
    schema
}

/// Decodes arguments: absent/null means `{}`; numeric and boolean strings are coerced where
/// the schema wants numbers or booleans (pydantic's lax mode); errors name the field.
fn decode<A: DeserializeOwned>(
    tool: &str,
    schema: &Value,
    arguments: Value,
) -> Result<A, ToolError> {
    let mut arguments = match arguments {
        Value::Null => Value::Object(Map::new()),
        Value::Object(map) => Value::Object(map),
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "1 validation error for call[{tool}]\n  Arguments must be an object, got {}",
                json_type(&other)
            )));
        }
    };
    validate_format(tool, &arguments)?;
    coerce_lax(schema, &mut arguments);
    check_types(tool, schema, &arguments)?;
    serde_json::from_value(arguments).map_err(|e| {
        ToolError::InvalidArguments(format!(
            "1 validation error for call[{tool}]\n  {}",
            describe(&e)
        ))
    })
}

/// Rewrites serde's wording into the reference's (pydantic) vocabulary, keeping the field name.
fn describe(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if let Some(rest) = text.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or_default();
        return format!("{field}\n  Missing required argument [type=missing_argument]");
    }
    if let Some(rest) = text.strip_prefix("unknown field `") {
        let field = rest.split('`').next().unwrap_or_default();
        return format!(
            "{field}\n  Unexpected keyword argument [type=unexpected_keyword_argument]"
        );
    }
    format!("Invalid arguments: {text}")
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The optional `format` argument (docs/compat/tools.md §1.3): validated here with the other
/// arguments; the dispatcher applies it to the result (`mcp::format`).
fn validate_format(tool: &str, arguments: &Value) -> Result<(), ToolError> {
    match arguments.get("format") {
        None | Some(Value::Null | Value::String(_)) => {
            super::format::from_argument(arguments.get("format"))
                .map(drop)
                .map_err(|message| ToolError::Domain(mailroom_core::Error::invalid(message)))
        }
        Some(_) => Err(ToolError::InvalidArguments(format!(
            "1 validation error for call[{tool}]\nformat\n  Input should be a valid string"
        ))),
    }
}

/// Coerces `"5"` → 5 and `"true"` → true where the schema asks for integers or booleans.
fn coerce_lax(schema: &Value, arguments: &mut Value) {
    let (Some(properties), Some(args)) = (schema.get("properties"), arguments.as_object_mut())
    else {
        return;
    };
    for (field, value) in args.iter_mut() {
        let Some(text) = value.as_str() else { continue };
        let Some(wanted) = properties.get(field).map(schema_types) else { continue };
        if wanted.contains(&"integer")
            && let Ok(n) = text.trim().parse::<i64>()
        {
            *value = Value::from(n);
            continue;
        }
        if wanted.contains(&"boolean") {
            match text.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" | "t" | "y" => *value = Value::Bool(true),
                "false" | "0" | "no" | "off" | "f" | "n" => *value = Value::Bool(false),
                _ => {}
            }
        }
    }
}

/// Names the first argument whose JSON type the schema does not allow (serde's own message
/// would not say which field it was).
fn check_types(tool: &str, schema: &Value, arguments: &Value) -> Result<(), ToolError> {
    let (Some(properties), Some(args)) = (schema.get("properties"), arguments.as_object()) else {
        return Ok(());
    };
    for (field, value) in args {
        let Some(wanted) = properties.get(field).map(schema_types) else { continue };
        if wanted.is_empty() || wanted.iter().any(|t| type_matches(t, value)) {
            continue;
        }
        return Err(ToolError::InvalidArguments(format!(
            "1 validation error for call[{tool}]\n{field}\n  Input should be a valid {} \
             [type={}_type, input_value={value}]",
            wanted.iter().find(|t| **t != "null").unwrap_or(&"value"),
            wanted.iter().find(|t| **t != "null").unwrap_or(&"value"),
        )));
    }
    Ok(())
}

fn type_matches(wanted: &str, value: &Value) -> bool {
    match wanted {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

fn schema_types(property: &Value) -> Vec<&str> {
    match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Writes a successful result the way the reference's clients see it, around the result's
/// JSON text (serialised once): the text as the content item, the same bytes as
/// structuredContent (lists wrapped as `{"result": [...]}`). Members in the order a
/// `Value` would write them (sorted), as before the text skipped the tree.
pub fn write_success_result(out: &mut String, json: &str) {
    out.push_str(r#"{"content":[{"text":"#);
    push_json_string(out, json);
    out.push_str(r#","type":"text"}],"isError":false,"structuredContent":"#);
    if json.starts_with('{') {
        out.push_str(json);
    } else {
        out.push_str(r#"{"result":"#);
        out.push_str(json);
        out.push('}');
    }
    out.push('}');
}

/// An `isError` result with one text item.
pub fn error_result(text: String) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_registered_once_and_alphabetically() {
        let names: Vec<&str> = all_tools().iter().map(|t| t.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "registry must be alphabetical without duplicates");
        let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/mcp/tools"))
            .expect("tools dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
            .filter(|f| f != "mod")
            .count();
        assert_eq!(files, names.len(), "every tool file must be registered");
        for name in names {
            assert!(catalog::lookup(name).is_some(), "{name} needs a row in mcp/catalog.rs");
        }
    }

    #[test]
    fn lax_coercion_follows_the_schema() {
        let schema = json!({"properties": {"limit": {"type": ["integer", "null"]},
            "urgent_only": {"type": "boolean"}, "name": {"type": "string"}}});
        let mut args = json!({"limit": "5", "urgent_only": "true", "name": "5"});
        coerce_lax(&schema, &mut args);
        assert_eq!(args, json!({"limit": 5, "urgent_only": true, "name": "5"}));
    }

    #[test]
    fn a_success_result_matches_the_value_built_one_byte_for_byte() {
        let value_built = |value: Value| {
            let text = value.to_string();
            let structured = if value.is_object() { value } else { json!({ "result": value }) };
            json!({ "content": [{ "type": "text", "text": text }],
                "structuredContent": structured, "isError": false })
            .to_string()
        };
        for value in [json!({"b": "x\"y\n", "a": [1, 2.5, null]}), json!([{"id": 1}]), json!([])] {
            let mut out = String::new();
            write_success_result(&mut out, &value.to_string());
            assert_eq!(out, value_built(value));
        }
    }

    #[test]
    fn the_text_follows_the_output_type_and_the_tree_sorts() {
        #[derive(Serialize)]
        struct Out {
            zeta: i64,
            alpha: &'static str,
        }
        let out = Out { zeta: 1, alpha: "a" };
        let Ok(Output::Json(text)) = encode(&out, Encoding::Json) else { panic!("json") };
        assert_eq!(text, r#"{"zeta":1,"alpha":"a"}"#);
        let Ok(Output::Value(tree)) = encode(&out, Encoding::Value) else { panic!("value") };
        assert_eq!(tree.to_string(), r#"{"alpha":"a","zeta":1}"#);
    }

    #[cfg(debug_assertions)]
    #[test]
    fn a_flattened_member_repeating_a_key_is_caught() {
        #[derive(Serialize)]
        struct Inner {
            id: i64,
        }
        #[derive(Serialize)]
        struct Outer {
            #[serde(flatten)]
            inner: Inner,
            id: i64,
        }
        let text = serde_json::to_string(&Outer { inner: Inner { id: 1 }, id: 2 }).expect("json");
        assert!(serde_json::from_str::<unique_keys::Checked>(&text).is_err(), "{text}");
        assert!(serde_json::from_str::<unique_keys::Checked>(r#"{"a":{"a":[{"a":1}]}}"#).is_ok());
        let caught = std::panic::catch_unwind(|| {
            encode(&Outer { inner: Inner { id: 1 }, id: 2 }, Encoding::Json).map(drop)
        });
        assert!(caught.is_err(), "encode must refuse a repeated key in debug builds");
    }
}
