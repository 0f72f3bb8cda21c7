//! REST routes for scripts and load tools (docs/compat/http.md §5). Each mirrors one tool: same op,
//! same JSON result; bodies are strict (unknown fields rejected, errors name the field). The
//! ops run under [`Conventions::Script`]: a project may be named rather than be a path, agent
//! names are taken as given, and a first message needs no contact handshake.
//! With `MAILROOM_TOOL_AUTH` on, a route authenticates like its tool (no session: the token
//! travels in every body). The routes pass MCP's Origin and Host checks first: a page of
//! another site may POST here without a preflight (as `text/plain`), and is refused.

use std::future::Future;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use axum::{Json, Router};
use mailroom_core::Error;
use mailroom_core::ops::agents::Registration;
use mailroom_core::ops::conventions::Conventions;
use mailroom_core::ops::messaging::events::FetchInboxEvents;
use mailroom_core::ops::messaging::{FetchInbox, InboxFilter, SendMessage};
use mailroom_core::ops::output::JsonText;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::mcp::auth::{Claim, authorize};
use crate::mcp::catalog;
use crate::mcp::error::ToolError;
use crate::state::AppState;

/// One REST route as the router and the security classification see it: a POST to `path`
/// stands for a call of `tool` (its role and rate-limit bucket are the tool's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestRoute {
    pub path: &'static str,
    pub tool: &'static str,
}

/// Every REST route, with its handler: the one table the router ([`router`]) and the security
/// middleware ([`table`]) read. Adding a route: its body type (a [`RouteBody`] naming its
/// path and tool), its handler, one row here.
fn routes() -> [(RestRoute, MethodRouter<AppState>); 6] {
    [
        row::<EnsureProjectBody>(post(ensure_project)),
        row::<RegisterBody>(post(register_agent)),
        row::<SendBody>(post(send_message)),
        row::<InboxBody>(post(inbox)),
        row::<InboxEventsBody>(post(inbox_events)),
        row::<SearchBody>(post(search_messages)),
    ]
}

fn row<B: RouteBody>(handler: MethodRouter<AppState>) -> (RestRoute, MethodRouter<AppState>) {
    (RestRoute { path: B::PATH, tool: B::TOOL }, handler)
}

/// The REST routes' paths and tools, for the security classification.
pub fn table() -> Vec<RestRoute> {
    routes().into_iter().map(|(route, _)| route).collect()
}

/// The REST routes, behind MCP's Origin and Host checks.
pub fn router(state: &AppState) -> Router<AppState> {
    let router = routes()
        .into_iter()
        .fold(Router::new(), |router, (route, handler)| router.route(route.path, handler));
    let origin_and_host = crate::http::security::origin::origin_and_host;
    router.route_layer(axum::middleware::from_fn_with_state(state.clone(), origin_and_host))
}

/// A route's body: where it is posted, which tool it mirrors and who it says is acting.
trait RouteBody: DeserializeOwned {
    const PATH: &'static str;
    const TOOL: &'static str;
    fn claim(&self) -> Claim<'_>;
}

/// The steps every route takes: parse the body, authenticate it as its tool would be, run.
async fn route<B, Fut>(
    state: AppState,
    body: Bytes,
    run: impl FnOnce(AppState, B) -> Fut,
) -> Response
where
    B: RouteBody,
    Fut: Future<Output = Response>,
{
    let body = match serde_json::from_slice::<B>(&body) {
        Ok(body) => body,
        Err(e) => {
            return ApiError(Error::invalid(format!("Invalid request body: {e}"))).into_response();
        }
    };
    // A route that acts as an agent is activity, for the upkeep's retirement as a tool call is.
    if let Claim { project_key: Some(project), agent: Some((_, agent)), .. } = body.claim() {
        state.instruments.note_activity(project, agent);
    }
    if state.config.tool_auth
        && let Some(info) = catalog::lookup(B::TOOL)
        && let Err(e) = authorize(&state, B::TOOL, &info.auth, body.claim(), None).await
    {
        return match e {
            ToolError::Domain(e) => ApiError(e),
            ToolError::InvalidArguments(text) => ApiError(Error::invalid(text)),
        }
        .into_response();
    }
    run(state, body).await
}

fn reply<T: serde::Serialize>(outcome: mailroom_core::Result<T>) -> Response {
    match outcome {
        Ok(value) => Json(value).into_response(),
        Err(e) => ApiError(e).into_response(),
    }
}

/// [`reply`] for a result the op wrote as JSON text itself.
fn reply_text(outcome: mailroom_core::Result<JsonText>) -> Response {
    match outcome {
        Ok(JsonText(text)) => ([(header::CONTENT_TYPE, "application/json")], text).into_response(),
        Err(e) => ApiError(e).into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnsureProjectBody {
    human_key: String,
}

impl RouteBody for EnsureProjectBody {
    const PATH: &'static str = "/api/project/ensure";
    const TOOL: &'static str = "ensure_project";
    fn claim(&self) -> Claim<'_> {
        Claim::default()
    }
}

/// `POST /api/project/ensure {human_key}`.
async fn ensure_project(State(state): State<AppState>, body: Bytes) -> Response {
    route(state, body, |state, b: EnsureProjectBody| async move {
        reply(state.core.ensure_project_with(&b.human_key, Conventions::Script).await)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegisterBody {
    project_slug: String,
    name: Option<String>,
    program: String,
    model: String,
    #[serde(default)]
    task_description: String,
    registration_token: Option<String>,
}

impl RouteBody for RegisterBody {
    const PATH: &'static str = "/api/agent/register";
    const TOOL: &'static str = "register_agent";
    fn claim(&self) -> Claim<'_> {
        let token = self.registration_token.as_deref();
        Claim::new(&self.project_slug, "name", self.name.as_deref(), token)
    }
}

/// `POST /api/agent/register {project_slug, name, program, model, task_description?}`.
async fn register_agent(State(state): State<AppState>, body: Bytes) -> Response {
    route(state, body, |state, b: RegisterBody| async move {
        let registration = Registration {
            project_key: b.project_slug,
            program: b.program,
            model: b.model,
            name: b.name,
            task_description: b.task_description,
            attachments_policy: None,
            conventions: Conventions::Script,
        };
        reply(state.core.register_agent(registration).await)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendBody {
    project_slug: String,
    sender_name: String,
    recipient_names: Vec<String>,
    #[serde(default)]
    cc_names: Vec<String>,
    #[serde(default)]
    bcc_names: Vec<String>,
    subject: String,
    body_md: String,
    thread_id: Option<String>,
    importance: Option<String>,
    #[serde(default)]
    ack_required: bool,
    sender_token: Option<String>,
    /// As send_message's (docs/compat/tools.md §4.10).
    idempotency_key: Option<String>,
}

impl RouteBody for SendBody {
    const PATH: &'static str = "/api/message/send";
    const TOOL: &'static str = "send_message";
    fn claim(&self) -> Claim<'_> {
        let token = self.sender_token.as_deref();
        Claim::new(&self.project_slug, "sender_name", Some(&self.sender_name), token)
    }
}

/// `POST /api/message/send` → the send_message result.
async fn send_message(State(state): State<AppState>, body: Bytes) -> Response {
    route(state, body, |state, b: SendBody| async move {
        let message = SendMessage {
            project_key: b.project_slug,
            sender_name: b.sender_name,
            to: b.recipient_names,
            cc: b.cc_names,
            bcc: b.bcc_names,
            subject: b.subject,
            body_md: b.body_md,
            importance: b.importance,
            ack_required: b.ack_required,
            thread_id: b.thread_id,
            conventions: Conventions::Script,
            ..SendMessage::default()
        };
        reply(state.core.send_message_keyed(message, b.idempotency_key).await)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InboxBody {
    project_slug: String,
    agent_name: String,
    limit: Option<i64>,
    since_ts: Option<String>,
    #[serde(default)]
    include_bodies: bool,
    #[serde(default)]
    unread_only: bool,
    #[serde(default)]
    mark_read: bool,
    registration_token: Option<String>,
}

impl RouteBody for InboxBody {
    const PATH: &'static str = "/api/inbox";
    const TOOL: &'static str = "fetch_inbox";
    fn claim(&self) -> Claim<'_> {
        let token = self.registration_token.as_deref();
        Claim::new(&self.project_slug, "agent_name", Some(&self.agent_name), token)
    }
}

/// `POST /api/inbox` → the fetch_inbox result.
async fn inbox(State(state): State<AppState>, body: Bytes) -> Response {
    route(state, body, |state, b: InboxBody| async move {
        let request = FetchInbox {
            project_key: b.project_slug,
            agent_name: b.agent_name,
            filter: InboxFilter {
                limit: b.limit,
                include_bodies: b.include_bodies,
                since_ts: b.since_ts,
                urgent_only: false,
                unread_only: b.unread_only,
                mark_read: b.mark_read,
            },
            topic: None,
        };
        reply_text(state.core.fetch_inbox_json(request).await)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InboxEventsBody {
    project_slug: String,
    agent_name: String,
    cursor: Option<String>,
    limit: Option<i64>,
    registration_token: Option<String>,
}

impl RouteBody for InboxEventsBody {
    const PATH: &'static str = "/api/inbox/events";
    const TOOL: &'static str = "fetch_inbox_events";
    fn claim(&self) -> Claim<'_> {
        let token = self.registration_token.as_deref();
        Claim::new(&self.project_slug, "agent_name", Some(&self.agent_name), token)
    }
}

/// `POST /api/inbox/events` → the fetch_inbox_events result.
async fn inbox_events(State(state): State<AppState>, body: Bytes) -> Response {
    route(state, body, |state, b: InboxEventsBody| async move {
        let request = FetchInboxEvents {
            project_key: b.project_slug,
            agent_name: b.agent_name,
            cursor: b.cursor,
            limit: b.limit,
        };
        reply(state.core.fetch_inbox_events(request).await)
    })
    .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchBody {
    project_slug: String,
    query: String,
    limit: Option<i64>,
    agent_name: Option<String>,
    registration_token: Option<String>,
}

impl RouteBody for SearchBody {
    const PATH: &'static str = "/api/messages/search";
    const TOOL: &'static str = "search_messages";
    fn claim(&self) -> Claim<'_> {
        let token = self.registration_token.as_deref();
        Claim::new(&self.project_slug, "agent_name", self.agent_name.as_deref(), token)
    }
}

/// `POST /api/messages/search` → the search_messages result.
async fn search_messages(State(state): State<AppState>, body: Bytes) -> Response {
    route(state, body, |state, b: SearchBody| async move {
        // Authenticated: with authentication on, the results are the viewer's.
        let viewer = state.authenticated_viewer(b.agent_name);
        let limit = b.limit.unwrap_or(20);
        reply(state.core.search_messages(b.project_slug, b.query, limit, viewer).await)
    })
    .await
}
