//! Writing as the Human Overseer: the form (`/mail/{project}/overseer/compose`) and its
//! request (`POST /mail/{project}/overseer/send` → `{success, message_id, recipients,
//! sent_at}`).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use mailroom_core::ops::messaging::overseer::{OVERSEER_NAME, OverseerMessage};
use serde::Deserialize;

use super::error::{json_answer, page};
use super::routes;
use super::view::{body, render};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "pages/compose.html")]
struct ComposePage {
    slug: String,
    project_href: String,
    action: String,
    /// Agents that can be written to, by name.
    agents: Vec<String>,
}

/// `GET /mail/{project}/overseer/compose`: the project's active agents to pick from.
pub async fn show(State(state): State<AppState>, Path(project): Path<String>) -> Response {
    let answer = async {
        let overview = state.core.project_overview(project).await?;
        let slug = overview.project.slug.clone();
        let agents = overview
            .agents
            .iter()
            .filter(|a| a.agent.name != OVERSEER_NAME && a.agent.retired_at.is_none())
            .map(|a| a.agent.name.clone())
            .collect();
        Ok(render(&ComposePage {
            project_href: routes::PROJECT.fill(&[&slug]),
            action: routes::OVERSEER_SEND.fill(&[&slug]),
            agents,
            slug,
        }))
    };
    page(answer.await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverseerBody {
    recipients: Vec<String>,
    subject: String,
    body_md: String,
    #[serde(default)]
    thread_id: Option<String>,
}

/// `POST /mail/{project}/overseer/send` → `{success, message_id, recipients, sent_at}`.
pub async fn send(
    State(state): State<AppState>,
    Path(project): Path<String>,
    bytes: Bytes,
) -> Response {
    let answer = async {
        let b: OverseerBody = body(&bytes)?;
        let message = OverseerMessage {
            project_key: project,
            recipients: b.recipients,
            subject: b.subject,
            body_md: b.body_md,
            thread_id: b.thread_id,
        };
        Ok(state.core.overseer_send(message).await?)
    };
    json_answer(answer.await)
}
