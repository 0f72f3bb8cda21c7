//! REST routes for scripts and load tools (docs/compat/http.md §5). Each mirrors one tool: same op,
//! same JSON result; bodies are strict (unknown fields rejected, errors name the field). The
//! ops run under [`Conventions::Script`]: a project may be named rather than be a path, agent
//! names are taken as given, and a first message needs no contact handshake.
//! With `MAILROOM_TOOL_AUTH` on, a route authenticates like its tool (no session: the token
//! travels in every body).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use mailroom_core::Error;
use mailroom_core::ops::conventions::Conventions;
use mailroom_core::ops::identity::Registration;
use mailroom_core::ops::messaging::{FetchInbox, SendMessage};
use mailroom_core::ops::output::JsonText;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::error::ApiError;
use crate::state::AppState;

fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError(Error::invalid(format!("Invalid request body: {e}"))))
}

/// Authenticates a route as its tool would be, from the tool's arguments (`args`).
async fn authorize(
    state: &AppState,
    tool: &str,
    mut args: serde_json::Value,
) -> Result<(), ApiError> {
    if !state.config.tool_auth {
        return Ok(());
    }
    let Some(info) = crate::mcp::catalog::lookup(tool) else { return Ok(()) };
    crate::mcp::auth::authorize(state, tool, &info.auth, &mut args, None).await.map_err(|e| match e
    {
        crate::mcp::error::ToolError::Domain(e) => ApiError(e),
        crate::mcp::error::ToolError::InvalidArguments(text) => ApiError(Error::invalid(text)),
    })
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

/// `POST /api/project/ensure {human_key}`.
pub async fn ensure_project(State(state): State<AppState>, body: Bytes) -> Response {
    match parse::<EnsureProjectBody>(&body) {
        Ok(b) => reply(state.core.ensure_project_with(&b.human_key, Conventions::Script).await),
        Err(e) => e.into_response(),
    }
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

/// `POST /api/agent/register {project_slug, name, program, model, task_description?}`.
pub async fn register_agent(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed = parse::<RegisterBody>(&body);
    if let Ok(b) = &parsed {
        let args = json!({"project_key": b.project_slug, "name": b.name,
            "registration_token": b.registration_token});
        if let Err(e) = authorize(&state, "register_agent", args).await {
            return e.into_response();
        }
    }
    match parsed {
        Ok(b) => reply(
            state
                .core
                .register_agent(Registration {
                    project_key: b.project_slug,
                    program: b.program,
                    model: b.model,
                    name: b.name,
                    task_description: b.task_description,
                    attachments_policy: None,
                    conventions: Conventions::Script,
                })
                .await,
        ),
        Err(e) => e.into_response(),
    }
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
}

/// `POST /api/message/send` → the send_message result.
pub async fn send_message(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed = parse::<SendBody>(&body);
    if let Ok(b) = &parsed {
        let args = json!({"project_key": b.project_slug, "sender_name": b.sender_name,
            "sender_token": b.sender_token});
        if let Err(e) = authorize(&state, "send_message", args).await {
            return e.into_response();
        }
    }
    match parsed {
        Ok(b) => reply(
            state
                .core
                .send_message(SendMessage {
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
                })
                .await,
        ),
        Err(e) => e.into_response(),
    }
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
    registration_token: Option<String>,
}

/// `POST /api/inbox` → the fetch_inbox result.
pub async fn inbox(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed = parse::<InboxBody>(&body);
    if let Ok(b) = &parsed {
        let args = json!({"project_key": b.project_slug, "agent_name": b.agent_name,
            "registration_token": b.registration_token});
        if let Err(e) = authorize(&state, "fetch_inbox", args).await {
            return e.into_response();
        }
    }
    match parsed {
        Ok(b) => reply_text(
            state
                .core
                .fetch_inbox_json(FetchInbox {
                    project_key: b.project_slug,
                    agent_name: b.agent_name,
                    limit: b.limit,
                    include_bodies: b.include_bodies,
                    since_ts: b.since_ts,
                    ..FetchInbox::default()
                })
                .await,
        ),
        Err(e) => e.into_response(),
    }
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

/// `POST /api/messages/search` → the search_messages result.
pub async fn search_messages(State(state): State<AppState>, body: Bytes) -> Response {
    let parsed = parse::<SearchBody>(&body);
    if let Ok(b) = &parsed {
        let args = json!({"project_key": b.project_slug, "agent_name": b.agent_name,
            "registration_token": b.registration_token});
        if let Err(e) = authorize(&state, "search_messages", args).await {
            return e.into_response();
        }
    }
    match parsed {
        Ok(b) => {
            // Authenticated above: with authentication on, the results are the viewer's.
            let viewer = state.authenticated_viewer(b.agent_name);
            let limit = b.limit.unwrap_or(20);
            reply(state.core.search_messages(b.project_slug, b.query, limit, viewer).await)
        }
        Err(e) => e.into_response(),
    }
}
