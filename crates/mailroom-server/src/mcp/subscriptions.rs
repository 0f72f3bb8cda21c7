//! Resource subscriptions and the notifications they get (`notifications/resources/updated`),
//! the moment a message that changes the resource commits: a session's, made with
//! `resources/subscribe` (protocol 2025-11-25 and earlier) and told on its GET stream, and a
//! 2026-07-28 `subscriptions/listen` stream's, made with the request and told on its response
//! (`listen.rs`) (docs/compat/http.md §2, §2.1).
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
use mailroom_core::ops::push::{Committed, ReservationMark};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::envelope::SUBSCRIPTION_ID_KEY;

use crate::state::AppState;

/// Subscriptions one session may hold; more are refused.
pub const PER_SESSION: usize = 256;
/// The longest URI a subscription may name (query parameters are kept as part of it).
const MAX_URI_BYTES: usize = 2048;
/// How long the watcher waits without a write before it looks for reservations that expired.
const EXPIRY_LOOK: std::time::Duration = std::time::Duration::from_secs(5);
/// Notifications a session's stream may have waiting; beyond that they are dropped (a client
/// that does not read its stream learns of the rest when it reads the resource).
const STREAM_BACKLOG: usize = 1024;

/// What a subscription watches.
#[derive(Debug, Clone, PartialEq)]
pub enum Watched {
    /// Messages delivered to the agent (its inbox).
    Received { project: String, agent: String },
    /// Messages the agent sent (its outbox).
    Sent { project: String, agent: String },
    /// Both (its mailbox).
    Either { project: String, agent: String },
    /// Messages of a thread.
    Thread { project: String, thread: String },
    /// A project's file reservations (made, renewed, released or expired), with their mark
    /// when last told (taken when subscribing, so a change right after is not missed).
    Reservations { project: String, mark: Option<ReservationMark> },
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
            // Told by the reservations' marks, not by messages.
            Watched::Reservations { .. } => false,
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

impl SessionSubscriptions {
    /// Whether it has a stream to tell: one whose client went away without ending its
    /// session is nobody to tell, and keeps no watch alive.
    fn listening(&self) -> bool {
        self.stream.as_ref().is_some_and(|stream| !stream.is_closed())
    }
}

/// Every session's and listen stream's subscriptions, keyed by session id or listen key.
#[derive(Default)]
pub struct Subscriptions {
    sessions: Mutex<HashMap<String, SessionSubscriptions>>,
    /// Numbers listen streams' keys (`listen:N`, never a session id, which is hex).
    listens: AtomicU64,
    /// Wakes the watcher when a watch is added, so it starts looking for reservations that
    /// expire even on a server nobody writes to.
    added: tokio::sync::Notify,
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
        drop(sessions);
        self.added.notify_one();
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
        drop(sessions);
        self.added.notify_one();
        Some((key, receiver))
    }

    /// How many listen streams are open.
    pub fn listen_streams(&self) -> usize {
        self.lock().values().filter(|s| s.listen_id.is_some()).count()
    }

    /// Forgets a session that ended, or a listen stream that closed.
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Whether any session has a stream to tell.
    pub fn any_listening(&self) -> bool {
        self.lock().values().any(|s| s.listening() && !s.watched.is_empty())
    }

    /// Sends `notifications/resources/updated` for every subscribed URI a message changed,
    /// once per URI per call; streams whose client went away are let go. A listen stream whose
    /// client reads nothing is ended at its backlog's bound (its client listens again and
    /// reads what changed: nothing is lost unseen), a session's GET stream drops the excess.
    pub fn notify(&self, messages: &[Committed]) {
        self.tell(|watched| messages.iter().any(|m| watched.matches(m)));
    }

    /// The projects whose file reservations some stream watches (slugs, each once).
    pub fn watched_reservations(&self) -> Vec<String> {
        let sessions = self.lock();
        let mut slugs: Vec<String> = sessions
            .values()
            .filter(|s| s.listening())
            .flat_map(|s| s.watched.iter())
            .filter_map(|(_, w)| match w {
                Watched::Reservations { project, .. } => Some(project.clone()),
                _ => None,
            })
            .collect();
        slugs.sort_unstable();
        slugs.dedup();
        slugs
    }

    /// Tells each stream watching a project's reservations whose mark moved from the one it
    /// was last told of (`current`: the projects' marks now), and keeps the new mark.
    pub fn notify_reservations(&self, current: &[(String, Option<ReservationMark>)]) {
        self.tell(|watched| {
            let Watched::Reservations { project, mark } = watched else { return false };
            match current.iter().find(|(slug, _)| slug == project) {
                Some((_, now)) if now != mark => {
                    mark.clone_from(now);
                    true
                }
                _ => false,
            }
        });
    }

    /// Sends `notifications/resources/updated` for every subscribed URI whose watch `changed`
    /// says changed (it may note what it saw in the watch); streams whose client went away,
    /// or a listen stream that reads nothing, are let go.
    fn tell(&self, mut changed: impl FnMut(&mut Watched) -> bool) {
        let mut sessions = self.lock();
        let mut gone = Vec::new();
        for (key, entry) in sessions.iter_mut() {
            let SessionSubscriptions { watched, stream: Some(stream), listen_id } = entry else {
                continue;
            };
            let ended = watched.iter_mut().any(|(uri, w)| {
                changed(w)
                    && !sent(stream, updated_event(uri, listen_id.as_ref()), listen_id.is_some())
            });
            if ended {
                let_go(key, entry, &mut gone);
            }
        }
        for key in gone {
            sessions.remove(&key);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionSubscriptions>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Lets a stream go: a session keeps its subscriptions for its next GET stream; a listen
/// stream's entry goes at once (its slot is free before its connection is seen to close).
fn let_go(key: &str, entry: &mut SessionSubscriptions, gone: &mut Vec<String>) {
    entry.stream = None;
    if entry.listen_id.is_some() {
        gone.push(key.to_string());
    }
}

/// Puts `event` on a stream; false when the stream is to be let go: its client went away, or
/// (`end_when_full`, a listen stream) it has read nothing for too long.
fn sent(stream: &mpsc::Sender<Bytes>, event: Bytes, end_when_full: bool) -> bool {
    match stream.try_send(event) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Closed(_)) => false,
        Err(mpsc::error::TrySendError::Full(_)) => !end_when_full,
    }
}

/// One `notifications/resources/updated` event, stamped with the listen stream's id when it
/// goes to one.
fn updated_event(uri: &str, listen_id: Option<&Value>) -> Bytes {
    let params = match listen_id {
        Some(id) => json!({ "uri": uri, "_meta": { SUBSCRIPTION_ID_KEY: id } }),
        None => json!({ "uri": uri }),
    };
    event(&json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params}))
}

/// One server-sent event carrying a JSON-RPC message.
pub fn event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// What `uri` watches, resolved against the database: the project's slug and the agent's
/// stored name. An error names what is wrong (an unsupported resource, a missing project, an
/// unknown agent).
pub async fn resolve(state: &AppState, uri: &str) -> Result<Watched, String> {
    let supported = "subscriptions are offered for resource://inbox/{agent}, \
                     resource://outbox/{agent}, resource://mailbox/{agent} and \
                     resource://thread/{thread_id}, each with ?project=, and for \
                     resource://file_reservations/{slug}";
    if uri.len() > MAX_URI_BYTES {
        return Err(format!("a subscribed URI is at most {MAX_URI_BYTES} bytes"));
    }
    let Some((name, params)) = state.resources.matched(uri) else {
        return Err(format!("Unknown resource: {uri}"));
    };
    if name == "file_reservations" {
        let key = params.string("slug").unwrap_or_default();
        let project = state.core.project_slug(key).await.map_err(|e| e.message)?;
        let marks = state.core.reservation_marks(vec![project.clone()]).await;
        let mark = marks.map_err(|e| e.message)?.pop().and_then(|(_, mark)| mark);
        return Ok(Watched::Reservations { project, mark });
    }
    let Some(project_key) = params.string("project") else {
        return Err(format!("{uri}: the project parameter is required; {supported}"));
    };
    match name {
        "inbox" | "outbox" | "mailbox" | "mailbox-with-commits" => {
            let agent = params.string("agent").unwrap_or_default();
            let (project, agent) =
                state.core.mailbox_owner(project_key, agent).await.map_err(|e| e.message)?;
            Ok(match name {
                "inbox" => Watched::Received { project, agent },
                "outbox" => Watched::Sent { project, agent },
                _ => Watched::Either { project, agent },
            })
        }
        "thread" => {
            let thread = params.string("thread_id").unwrap_or_default();
            let project = state.core.project_slug(project_key).await.map_err(|e| e.message)?;
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
        // Reservations also change by expiring, which no write announces: while some are
        // watched, their marks are also looked at after a quiet spell.
        let expiries = !state.subscriptions.watched_reservations().is_empty();
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = stopping.changed() => return,
            () = tokio::time::sleep(EXPIRY_LOOK), if expiries => {}
            // A new watch: look again whether reservations are watched.
            () = state.subscriptions.added.notified() => {}
        }
        // The newest id is read before asking who listens: a message committed after a
        // subscription is made is then never passed over by the watermark.
        let newest = state.core.last_message_id().await;
        if !state.subscriptions.any_listening() && !state.signals.enabled() {
            // Nobody to tell: only the watermark moves.
            if let Ok(id) = newest {
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
        let watched = state.subscriptions.watched_reservations();
        if !watched.is_empty() {
            match state.core.reservation_marks(watched).await {
                Ok(current) => state.subscriptions.notify_reservations(&current),
                Err(e) => {
                    tracing::warn!(error = %e.message, "push notifications: cannot read reservations");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use mailroom_core::records::MessageId;

    use super::*;

    fn message(id: i64, sender: &str, to: &[&str], thread: Option<&str>) -> Committed {
        Committed {
            message_id: MessageId(id),
            project_slug: "proj".to_string(),
            thread_id: thread.map(str::to_string),
            subject: "s".to_string(),
            importance: "normal".to_string(),
            sender: sender.to_string(),
            recipients: to.iter().map(|r| (*r).to_string()).collect(),
            blind: Vec::new(),
        }
    }

    fn owned(project: &str, agent: &str) -> (String, String) {
        (project.to_string(), agent.to_string())
    }

    #[test]
    fn each_watch_matches_only_its_own_messages() {
        let (project, agent) = owned("proj", "GreenCastle");
        let inbox = Watched::Received { project: project.clone(), agent: agent.clone() };
        let outbox = Watched::Sent { project: project.clone(), agent: agent.clone() };
        let mailbox = Watched::Either { project: project.clone(), agent };
        let thread = Watched::Thread { project: project.clone(), thread: "T-1".to_string() };
        let reservations = Watched::Reservations { project, mark: None };
        let to_green = message(1, "BlueLake", &["greencastle"], None);
        let from_green = message(2, "GreenCastle", &["BlueLake"], Some("T-1"));
        let elsewhere = message(3, "BlueLake", &["RedStone"], Some("T-2"));
        let mut other_project = message(4, "BlueLake", &["GreenCastle"], None);
        other_project.project_slug = "other".to_string();
        let thread_root = message(9, "BlueLake", &["RedStone"], None);
        let root_watch = Watched::Thread { project: "proj".to_string(), thread: "9".to_string() };
        assert!(inbox.matches(&to_green), "names match whatever their case");
        assert!(!inbox.matches(&from_green) && !inbox.matches(&elsewhere));
        assert!(!inbox.matches(&other_project), "another project's agent of that name");
        assert!(outbox.matches(&from_green) && !outbox.matches(&to_green));
        assert!(mailbox.matches(&to_green) && mailbox.matches(&from_green));
        assert!(!mailbox.matches(&elsewhere));
        assert!(thread.matches(&from_green) && !thread.matches(&elsewhere));
        assert!(root_watch.matches(&thread_root), "a thread is named by its first message too");
        assert!(!reservations.matches(&to_green), "reservations are told by their marks");
    }

    fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<Value> {
        let mut notes = Vec::new();
        while let Ok(event) = rx.try_recv() {
            let text = String::from_utf8_lossy(&event).to_string();
            let data = text.lines().find_map(|l| l.strip_prefix("data: ")).expect("data line");
            notes.push(serde_json::from_str(data).expect("json"));
        }
        notes
    }

    #[test]
    fn notify_tells_each_stream_once_per_uri_stamped_for_listen_streams() {
        let subscriptions = Subscriptions::default();
        let inbox = Watched::Received { project: "proj".into(), agent: "GreenCastle".into() };
        assert!(subscriptions.subscribe("s1", "uri:inbox", inbox.clone()));
        let mut session = subscriptions.open_stream("s1");
        let (key, mut listen) = subscriptions
            .open_listen(json!("listen:1"), vec![("uri:inbox".into(), inbox)], 4)
            .expect("a listen stream");
        let batch = [
            message(1, "BlueLake", &["GreenCastle"], None),
            message(2, "RedStone", &["GreenCastle"], None),
            message(3, "BlueLake", &["RedStone"], None),
        ];
        subscriptions.notify(&batch);
        let told = drain(&mut session);
        assert_eq!(told.len(), 1, "one notification per URI per batch: {told:?}");
        assert_eq!(told[0]["params"], json!({ "uri": "uri:inbox" }));
        let heard = drain(&mut listen);
        assert_eq!(heard.len(), 1);
        assert_eq!(heard[0]["params"]["_meta"][SUBSCRIPTION_ID_KEY], "listen:1");
        subscriptions.notify(&[message(4, "BlueLake", &["RedStone"], None)]);
        assert!(drain(&mut session).is_empty() && drain(&mut listen).is_empty());
        drop(session);
        drop(listen);
        assert!(!subscriptions.any_listening(), "streams whose clients went away tell nobody");
        subscriptions.forget(&key);
        assert!(subscriptions.open_listen(json!(2), Vec::new(), 1).is_some());
        assert!(subscriptions.open_listen(json!(3), Vec::new(), 1).is_none(), "the bound holds");
    }

    #[test]
    fn a_listen_stream_that_reads_nothing_is_ended_at_its_bound() {
        let subscriptions = Subscriptions::default();
        let inbox = Watched::Received { project: "proj".into(), agent: "GreenCastle".into() };
        let (_, mut listen) = subscriptions
            .open_listen(json!(1), vec![("uri".into(), inbox)], 4)
            .expect("a listen stream");
        for id in 0..=STREAM_BACKLOG {
            subscriptions.notify(&[message(id as i64, "BlueLake", &["GreenCastle"], None)]);
        }
        assert!(!subscriptions.any_listening(), "the overflowing listen stream is let go");
        assert_eq!(drain(&mut listen).len(), STREAM_BACKLOG, "what was queued is still read");
        assert!(listen.try_recv().is_err());
    }

    #[test]
    fn reservation_watches_are_told_when_their_mark_moves() {
        let subscriptions = Subscriptions::default();
        let mark =
            |made| ReservationMark { made, newest: made, released: 0, expiries: 0.0, active: made };
        let watch = Watched::Reservations { project: "proj".into(), mark: Some(mark(1)) };
        assert!(subscriptions.subscribe("s1", "uri:res", watch));
        let mut session = subscriptions.open_stream("s1");
        assert_eq!(subscriptions.watched_reservations(), ["proj"]);
        subscriptions.notify_reservations(&[("proj".into(), Some(mark(1)))]);
        assert!(drain(&mut session).is_empty(), "an unmoved mark tells nothing");
        subscriptions.notify_reservations(&[("other".into(), Some(mark(5)))]);
        assert!(drain(&mut session).is_empty(), "another project's mark tells nothing");
        subscriptions.notify_reservations(&[("proj".into(), Some(mark(2)))]);
        assert_eq!(drain(&mut session).len(), 1);
        subscriptions.notify_reservations(&[("proj".into(), Some(mark(2)))]);
        assert!(drain(&mut session).is_empty(), "the new mark is kept");
    }
}
