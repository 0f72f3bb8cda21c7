//! Resource subscriptions and the notifications they get (`notifications/resources/updated`),
//! the moment a message that changes the resource commits: a session's, made with
//! `resources/subscribe` (protocol 2025-11-25 and earlier) and told on its GET stream, and a
//! 2026-07-28 `subscriptions/listen` stream's, made with the request and told on its response
//! (`listen.rs`) (docs/compat/http.md §2.4, §2.5).
//!
//! A subscription names a mailbox resource: an agent's inbox, outbox or mailbox, or a
//! thread, in a project. It is resolved once, when made, to the project's slug and the
//! agent's stored name; [`Subscriptions::notify`] matches committed messages against that.
//! The watcher ([`watch`]) looks at the messages committed after the last it saw whenever the
//! store reports a write, so every path a message takes (tools, REST, the web UI, macros)
//! notifies alike. Notifications for a session with no GET stream open are not kept. The same
//! watcher writes the reference's signal files when they are on (`signals.rs`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use mailroom_core::ops::push::Committed;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::envelope::SUBSCRIPTION_ID_KEY;

use crate::state::AppState;

/// Subscriptions one session may hold; more are refused.
pub const PER_SESSION: usize = 256;
/// Notifications a session's stream may have waiting; beyond that they are dropped (a client
/// that does not read its stream learns of the rest when it reads the resource).
const STREAM_BACKLOG: usize = 1024;

/// What a subscription watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// Messages delivered to the agent (its inbox).
    Received { project: String, agent: String },
    /// Messages the agent sent (its outbox).
    Sent { project: String, agent: String },
    /// Both (its mailbox).
    Either { project: String, agent: String },
    /// Messages of a thread.
    Thread { project: String, thread: String },
}

impl Watched {
    fn matches(&self, message: &Committed) -> bool {
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        let received = |project: &str, agent: &str| {
            same(project, &message.project_slug)
                && message.recipients.iter().any(|r| same(r, agent))
        };
        let sent = |project: &str, agent: &str| {
            same(project, &message.project_slug) && same(&message.sender, agent)
        };
        match self {
            Watched::Received { project, agent } => received(project, agent),
            Watched::Sent { project, agent } => sent(project, agent),
            Watched::Either { project, agent } => received(project, agent) || sent(project, agent),
            Watched::Thread { project, thread } => {
                same(project, &message.project_slug)
                    && (message.thread_id.as_deref() == Some(thread.as_str())
                        || message.message_id.to_string() == *thread)
            }
        }
    }
}

#[derive(Default)]
struct SessionSubscriptions {
    /// The URIs as the client subscribed to them, and what each watches.
    watched: Vec<(String, Watched)>,
    /// The session's open GET stream, or the listen stream, if any.
    stream: Option<mpsc::Sender<Bytes>>,
    /// A listen stream's request id, which stamps each of its notifications; `None` for a
    /// session.
    listen_id: Option<Value>,
}

/// Every session's and listen stream's subscriptions, keyed by session id or listen key.
#[derive(Default)]
pub struct Subscriptions {
    sessions: Mutex<HashMap<String, SessionSubscriptions>>,
    /// Numbers listen streams' keys (`listen:N`, never a session id, which is hex).
    listens: AtomicU64,
}

impl Subscriptions {
    /// Adds (or keeps) `uri` for `session`; false when the session holds too many already.
    pub fn subscribe(&self, session: &str, uri: &str, watched: Watched) -> bool {
        let mut sessions = self.lock();
        let entry = sessions.entry(session.to_string()).or_default();
        if entry.watched.iter().any(|(u, _)| u == uri) {
            return true;
        }
        if entry.watched.len() >= PER_SESSION {
            return false;
        }
        entry.watched.push((uri.to_string(), watched));
        true
    }

    /// Drops `uri` for `session` (nothing when it was not subscribed).
    pub fn unsubscribe(&self, session: &str, uri: &str) {
        if let Some(entry) = self.lock().get_mut(session) {
            entry.watched.retain(|(u, _)| u != uri);
        }
    }

    /// The session's notifications from now on, for its GET stream (a newer stream replaces
    /// an older one).
    pub fn open_stream(&self, session: &str) -> mpsc::Receiver<Bytes> {
        let (sender, receiver) = mpsc::channel(STREAM_BACKLOG);
        self.lock().entry(session.to_string()).or_default().stream = Some(sender);
        receiver
    }

    /// Opens a listen stream watching `watched` (the URIs as the client sent them, resolved),
    /// its notifications stamped with `listen_id`; its key (for [`Subscriptions::forget`]) and
    /// its notifications. `None` when `limit` listen streams are open already.
    pub fn open_listen(
        &self,
        listen_id: Value,
        watched: Vec<(String, Watched)>,
        limit: usize,
    ) -> Option<(String, mpsc::Receiver<Bytes>)> {
        let mut sessions = self.lock();
        if sessions.values().filter(|s| s.listen_id.is_some()).count() >= limit {
            return None;
        }
        let key = format!("listen:{}", self.listens.fetch_add(1, Ordering::Relaxed));
        let (sender, receiver) = mpsc::channel(STREAM_BACKLOG);
        let entry =
            SessionSubscriptions { watched, stream: Some(sender), listen_id: Some(listen_id) };
        sessions.insert(key.clone(), entry);
        Some((key, receiver))
    }

    /// Forgets a session that ended, or a listen stream that closed.
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Whether any session has a stream to tell.
    pub fn any_listening(&self) -> bool {
        self.lock().values().any(|s| s.stream.is_some() && !s.watched.is_empty())
    }

    /// Sends `notifications/resources/updated` for every subscribed URI a message changed,
    /// once per URI per call; streams whose client went away are let go. A listen stream whose
    /// client reads nothing is ended at its backlog's bound (its client listens again and
    /// reads what changed: nothing is lost unseen), a session's GET stream drops the excess.
    pub fn notify(&self, messages: &[Committed]) {
        let mut sessions = self.lock();
        for entry in sessions.values_mut() {
            let Some(stream) = &entry.stream else { continue };
            let mut ended = false;
            for (uri, watched) in &entry.watched {
                if !messages.iter().any(|m| watched.matches(m)) {
                    continue;
                }
                let event = updated_event(uri, entry.listen_id.as_ref());
                match stream.try_send(event) {
                    Err(mpsc::error::TrySendError::Closed(_)) => ended = true,
                    Err(mpsc::error::TrySendError::Full(_)) => ended = entry.listen_id.is_some(),
                    Ok(()) => {}
                }
                if ended {
                    break;
                }
            }
            if ended {
                entry.stream = None;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionSubscriptions>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One `notifications/resources/updated` event, stamped with the listen stream's id when it
/// goes to one.
fn updated_event(uri: &str, listen_id: Option<&Value>) -> Bytes {
    let params = match listen_id {
        Some(id) => json!({ "uri": uri, "_meta": { SUBSCRIPTION_ID_KEY: id } }),
        None => json!({ "uri": uri }),
    };
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params});
    Bytes::from(format!("event: message\ndata: {note}\n\n"))
}

/// What `uri` watches, resolved against the database: the project's slug and the agent's
/// stored name. An error names what is wrong (an unsupported resource, a missing project, an
/// unknown agent).
pub async fn resolve(state: &AppState, uri: &str) -> Result<Watched, String> {
    let supported = "subscriptions are offered for resource://inbox/{agent}, \
                     resource://outbox/{agent}, resource://mailbox/{agent} and \
                     resource://thread/{thread_id}, each with ?project=";
    let Some((name, params)) = state.resources.matched(uri) else {
        return Err(format!("Unknown resource: {uri}"));
    };
    let Some(project_key) = params.string("project") else {
        return Err(format!("{uri}: the project parameter is required; {supported}"));
    };
    let owner = |agent: String| async move {
        state.core.mailbox_owner(project_key.clone(), agent).await.map_err(|e| e.message)
    };
    match name {
        "inbox" | "outbox" | "mailbox" | "mailbox-with-commits" => {
            let agent = params.string("agent").unwrap_or_default();
            let (project, agent) = owner(agent).await?;
            Ok(match name {
                "inbox" => Watched::Received { project, agent },
                "outbox" => Watched::Sent { project, agent },
                _ => Watched::Either { project, agent },
            })
        }
        "thread" => {
            let thread = params.string("thread_id").unwrap_or_default();
            let project = state
                .core
                .project_slug(params.string("project").unwrap_or_default())
                .await
                .map_err(|e| e.message)?;
            Ok(Watched::Thread { project, thread })
        }
        _ => Err(format!("{uri}: {supported}")),
    }
}

/// Tells subscribed sessions of the messages each write commits, until the server stops.
pub async fn watch(state: AppState) {
    let mut changes = state.core.changes();
    let mut stopping = state.stopping.subscribe();
    let mut seen = match state.core.last_message_id().await {
        Ok(id) => id,
        Err(e) => {
            tracing::error!(error = %e.message, "push notifications off: cannot read messages");
            return;
        }
    };
    loop {
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = stopping.changed() => return,
        }
        if !state.subscriptions.any_listening() && !state.signals.enabled() {
            // Nobody to tell: only the watermark moves.
            if let Ok(id) = state.core.last_message_id().await {
                seen = id;
            }
            continue;
        }
        loop {
            let committed = match state.core.messages_after(seen).await {
                Ok(committed) => committed,
                Err(e) => {
                    tracing::warn!(error = %e.message, "push notifications: cannot read messages");
                    break;
                }
            };
            let Some(last) = committed.last() else { break };
            seen = i64::from(last.message_id);
            // A page short of the limit was the last: no second look for nothing.
            let more = committed.len() >= mailroom_core::ops::push::LOOK_LIMIT;
            state.subscriptions.notify(&committed);
            if state.signals.enabled() {
                let signalled = state.clone();
                let _ =
                    tokio::task::spawn_blocking(move || signalled.signals.emit(&committed)).await;
            }
            if !more {
                break;
            }
        }
    }
}
