//! Listening by MCP event streams: per agent, an MCP session (`initialize`), its GET event
//! stream open on a connection of its own, and `resources/subscribe` to the agent's inbox
//! (docs/compat/http.md §2.4). The sessions' requests share one setup connection; each
//! stream is read by a task of its own that wakes only when bytes arrive, so a thousand idle
//! streams cost the client nothing between notifications.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bytes::BytesMut;
use hyper::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{SharedLedger, Tasks};
use crate::client::{Call, Connection, EventStream};
use crate::scenario::Setup;
use crate::sse::{complete_events, events, json_rpc_payload};
use crate::target::Target;

/// The protocol version the sessions ask for (the newest with resource subscriptions).
const PROTOCOL_VERSION: &str = "2025-06-18";

/// Opens every agent's session, stream and subscription; the returned tasks read the streams
/// and tell `ledger` of each agent's notifications.
pub(crate) async fn subscribe(
    target: &Target,
    project: &str,
    agents: &[String],
    ledger: &Arc<SharedLedger>,
) -> Result<(Tasks, Sessions)> {
    let mut control = Setup::connect(target).await?;
    let mut tasks = Tasks::default();
    let mut sessions = Vec::with_capacity(agents.len());
    for (index, agent) in agents.iter().enumerate() {
        let session = initialize(&mut control).await?;
        let call = Call::event_stream(&target.authority, target.mcp(), &session_headers(&session));
        let stream = Connection::open(&target.authority)
            .await
            .with_context(|| format!("push setup: cannot connect to {}", target.authority))?
            .open_event_stream(&call)
            .await
            .with_context(|| format!("push setup: {agent}'s event stream"))?;
        // The stream is open before the subscription, so no notification can precede it.
        let uri = format!("resource://inbox/{agent}?project={project}");
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                               "params": {"uri": uri}});
        let call = control.mcp_call(&session_headers(&session), &subscribe);
        let reply = parse(&control.exchange(&call, "resources/subscribe").await?.body)?;
        if let Some(error) = reply.get("error") {
            bail!("push setup: resources/subscribe {uri}: {error}");
        }
        sessions.push(session);
        tasks.push(tokio::spawn(listen(stream, index, uri, ledger.clone())));
    }
    Ok((tasks, Sessions { control, ids: sessions }))
}

fn session_headers(session: &str) -> [(&'static str, &str); 2] {
    [("Mcp-Session-Id", session), ("MCP-Protocol-Version", PROTOCOL_VERSION)]
}

/// A new session's id, after `initialize` and `notifications/initialized`.
async fn initialize(control: &mut Setup) -> Result<String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "mailroom-bench", "version": env!("CARGO_PKG_VERSION")}}});
    let answer = control.exchange(&control.mcp_call(&[], &body), "initialize").await?;
    let session = answer
        .header("mcp-session-id")
        .context("push setup: initialize gave no Mcp-Session-Id: the server keeps no sessions")?;
    let reply = parse(&answer.body)?;
    if reply["result"]["capabilities"]["resources"]["subscribe"] != json!(true) {
        bail!("push setup: the server does not offer resource subscriptions: {reply}");
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let call = control.mcp_call(&session_headers(&session), &note);
    control.exchange(&call, "notifications/initialized").await?;
    Ok(session)
}

/// The sessions [`subscribe`] opened.
pub(crate) struct Sessions {
    control: Setup,
    ids: Vec<String>,
}

impl Sessions {
    /// Ends every session (DELETE), as a client that is done does, so the server forgets
    /// their subscriptions (a later phase or run starts with nobody listening). Their
    /// streams' readers must be stopped first: the server ends the streams too.
    pub(crate) async fn end(mut self) -> Result<()> {
        for id in &self.ids {
            let call = self.control.bodiless_call(Method::DELETE, &session_headers(id));
            self.control.exchange(&call, "ending a session").await?;
        }
        Ok(())
    }
}

fn parse(body: &[u8]) -> Result<Value> {
    let payload =
        json_rpc_payload(body).context("push setup: the event stream held no response")?;
    serde_json::from_slice(&payload).context("push setup: an answer was not JSON")
}

/// Reads one agent's stream until it ends, telling `ledger` of each notification for `uri`
/// at the moment its bytes arrived.
async fn listen(mut stream: EventStream, agent: usize, uri: String, ledger: Arc<SharedLedger>) {
    let mut pending = BytesMut::with_capacity(512);
    loop {
        match stream.read(&mut pending).await {
            Ok(true) => {}
            Ok(false) | Err(_) => {
                ledger.stream_lost(agent);
                return;
            }
        }
        let arrived = Instant::now();
        let end = complete_events(&pending);
        if end == 0 {
            continue;
        }
        let complete = pending.split_to(end);
        for data in events(&complete) {
            if is_update_of(&data, &uri) {
                ledger.notified(agent, arrived);
            }
        }
    }
}

/// Whether an event's data is `notifications/resources/updated` for `uri`.
fn is_update_of(data: &[u8], uri: &str) -> bool {
    #[derive(Deserialize)]
    struct Note<'a> {
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        uri: std::borrow::Cow<'a, str>,
    }
    serde_json::from_slice::<Note<'_>>(data).is_ok_and(|note| {
        note.method == "notifications/resources/updated"
            && note.params.is_some_and(|p| p.uri == uri)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_update_of_the_subscribed_uri_counts() {
        let uri = "resource://inbox/BlueLake?project=p";
        let note = |method: &str, uri: &str| {
            json!({"jsonrpc": "2.0", "method": method, "params": {"uri": uri}}).to_string()
        };
        assert!(is_update_of(note("notifications/resources/updated", uri).as_bytes(), uri));
        let other = "resource://inbox/RedStone?project=p";
        assert!(!is_update_of(note("notifications/resources/updated", other).as_bytes(), uri));
        assert!(!is_update_of(note("notifications/message", uri).as_bytes(), uri));
        assert!(!is_update_of(b"{\"method\":\"notifications/resources/updated\"}", uri));
        assert!(!is_update_of(b"not json", uri));
    }
}
