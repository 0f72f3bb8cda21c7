//! Tool calls in tests: one typed builder per tool the tests call often (the required
//! arguments in `new`, the optional ones set by methods, any other by `arg`), sent through a
//! [`TestApp`] (`ok`, `call`) or to any server's URL (`ok_at`; the built binary's tests have
//! no `TestApp`); the message id read back from a send; plain JSON-RPC and tool calls to a URL.
//! A builder sends exactly the arguments set: an optional one never set is left out, not null.

mod contacts;
mod identity;
mod messaging;
mod reservations;
mod summaries;
mod webhooks;

use serde_json::{Value, json};

pub use contacts::{ContactRequestCall, ContactResponseCall, PolicyCall};
pub use identity::{ProjectCall, RegisterCall, WhoisCall};
pub use messaging::{AckCall, EventsCall, InboxCall, ReadCall, ReplyCall, SearchCall, SendCall};
pub use reservations::{ReleaseCall, RenewCall, ReserveCall};
pub use summaries::{RecentSummaryCall, ThreadSummaryCall};
pub use webhooks::{DeliveriesCall, RegisterWebhookCall};

/// Declares the builder of one tool, as a table: the struct's doc and name `=>` the tool;
/// then, optionally, `new(...)` with the required arguments (each parameter named as its
/// argument) and `with key = value, …` for arguments sent unless a method replaces them;
/// then one line per optional argument, `method(argument: type);`. Every builder gets `arg`
/// (any other argument), `arguments`, and the ways to send it: `call`, `ok`, `ok_at`. A builder
/// declared without `new` writes its own (`SendCall`: `to` is a list of one).
macro_rules! tool_call {
    (
        $(#[$doc:meta])* $name:ident => $tool:literal;
        $(#[$new_doc:meta])*
        new($($required:ident: $required_type:ty),+ $(,)?)
            $(with $($default:ident = $default_value:expr),+ $(,)?)?;
        $($(#[$setter_doc:meta])* $setter:ident($optional:ident: $optional_type:ty);)*
    ) => {
        tool_call! {
            $(#[$doc])* $name => $tool;
            $($(#[$setter_doc])* $setter($optional: $optional_type);)*
        }

        impl $name {
            $(#[$new_doc])*
            pub fn new($($required: $required_type),+) -> Self {
                let mut arguments = serde_json::Map::new();
                $(arguments.insert(stringify!($required).to_string(), $required.into());)+
                $($(arguments.insert(stringify!($default).to_string(), $default_value.into());)+)?
                Self { arguments: serde_json::Value::Object(arguments) }
            }
        }
    };
    (
        $(#[$doc:meta])* $name:ident => $tool:literal;
        $($(#[$setter_doc:meta])* $setter:ident($optional:ident: $optional_type:ty);)*
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            arguments: serde_json::Value,
        }

        impl $name {
            $(
                $(#[$setter_doc])*
                pub fn $setter(self, $optional: $optional_type) -> Self {
                    self.arg(stringify!($optional), $optional)
                }
            )*

            /// Sets the argument `name` to `value`: for an argument no method of this builder
            /// sets.
            pub fn arg(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
                self.arguments[name] = value.into();
                self
            }

            /// The tool's arguments, for a request the test builds itself.
            pub fn arguments(&self) -> serde_json::Value {
                self.arguments.clone()
            }

            /// Calls the tool through `app`: `Ok(result)`, or `Err(error text)` when the tool
            /// refuses.
            pub async fn call(&self, app: &$crate::TestApp) -> Result<serde_json::Value, String> {
                app.call_tool($tool, self.arguments()).await
            }

            /// Calls the tool through `app` and returns its result; fails the test when the
            /// tool refuses.
            pub async fn ok(&self, app: &$crate::TestApp) -> serde_json::Value {
                app.tool_ok($tool, self.arguments()).await
            }

            /// Calls the tool on the server at `base_url` with [`tool_at`](crate::tool_at) and
            /// returns its result; fails the test when the tool refuses.
            pub async fn ok_at(&self, base_url: &str) -> serde_json::Value {
                $crate::tool_at(base_url, $tool, self.arguments()).await
            }
        }
    };
}
use tool_call;

/// The id of the message a `send_message` or `reply_message` result (MCP or REST) delivered:
/// its first delivery's payload id. Fails the test when there is none.
pub fn sent_message_id(sent: &Value) -> i64 {
    sent["deliveries"][0]["payload"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no delivered message id in {sent}"))
}

/// POSTs a JSON-RPC request to `{base_url}/mcp` (no session) with `client` and returns the
/// parsed JSON response, error or not. [`TestApp::rpc`](crate::TestApp::rpc) is this for its
/// own server.
pub async fn rpc_at(
    client: &reqwest::Client,
    base_url: &str,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response =
        client.post(format!("{base_url}/mcp")).json(&body).send().await.expect("rpc request");
    response.json().await.expect("rpc json")
}

/// Calls the tool `name` on the server at `base_url` (`POST {base_url}/mcp`, no session) and
/// returns its parsed JSON result; fails the test when the call fails. For a server without
/// a [`TestApp`](crate::TestApp), such as the built binary.
pub async fn tool_at(base_url: &str, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    let response = rpc_at(&reqwest::Client::new(), base_url, "tools/call", params).await;
    tool_result(&response["result"]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A `tools/call` result read as the tool's answer: `Ok(its text content parsed)`, or
/// `Err(the text)` when it is an error result. Fails the test when the text is not JSON.
pub fn tool_result(result: &Value) -> Result<Value, String> {
    let text = result["content"][0]["text"].as_str().unwrap_or_default().to_string();
    if result["isError"].as_bool().unwrap_or(false) {
        return Err(text);
    }
    Ok(serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("tool text is not JSON ({e}): {text}")))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A builder sends its required arguments, its defaults and what its methods set, and
    /// nothing else: an optional argument never set is left out, not sent as null.
    #[test]
    fn builders_send_exactly_the_arguments_set() {
        let check = |built: Value, expected: Value| assert_eq!(built, expected);
        check(
            SendCall::new("p", "BlueLake", "GreenCastle", "s").arguments(),
            json!({"project_key": "p", "sender_name": "BlueLake", "to": ["GreenCastle"],
                "subject": "s", "body_md": "body"}),
        );
        check(
            RegisterCall::new("p", "BlueLake").program("x").arguments(),
            json!({"project_key": "p", "name": "BlueLake", "program": "x", "model": "gpt-5"}),
        );
        check(
            ReplyCall::new("p", "GreenCastle", 7).body("ok").arguments(),
            json!({"project_key": "p", "sender_name": "GreenCastle", "message_id": 7,
                "body_md": "ok"}),
        );
        check(
            InboxCall::new("p", "GreenCastle").limit(5).include_bodies(true).arguments(),
            json!({"project_key": "p", "agent_name": "GreenCastle", "limit": 5,
                "include_bodies": true}),
        );
        check(
            ReserveCall::new("p", "BlueLake", &["src/**"]).ttl(60).arguments(),
            json!({"project_key": "p", "agent_name": "BlueLake", "paths": ["src/**"],
                "ttl_seconds": 60}),
        );
        check(
            ReleaseCall::new("p", "BlueLake").arg("file_reservation_ids", json!([1])).arguments(),
            json!({"project_key": "p", "agent_name": "BlueLake", "file_reservation_ids": [1]}),
        );
    }
}
