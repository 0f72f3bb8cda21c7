//! A project's page (`/mail/{project}`, and `/mail/{project}/search?q=`): its newest messages
//! or the messages a search finds, its agents with their retire buttons (`POST
//! /mail/api/{retire,unretire}-agent`), links to its other pages; and its agents' names as
//! JSON (`/mail/api/projects/{project}/agents`).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::agents::ListedAgent;
use mailroom_core::ops::agents::lifecycle::AgentChange;
use mailroom_core::records::AgentId;
use serde::Deserialize;
use serde_json::json;

use super::cache::cached;
use super::error::json_answer;
use super::message::Row;
use super::routes;
use super::view::{body, render};
use crate::state::AppState;

/// Search results a project page shows.
const SEARCH_LIMIT: i64 = 200;

#[derive(Template)]
#[template(path = "pages/project.html")]
struct ProjectPage {
    slug: String,
    compose_href: String,
    reservations_href: String,
    attachments_href: String,
    archive_href: String,
    timeline_href: String,
    network_href: String,
    human_key: String,
    href: String,
    query: String,
    searched: bool,
    rows: Vec<Row>,
    agents: Vec<AgentLink>,
}

/// An agent in a project's panel.
struct AgentLink {
    id: i64,
    href: String,
    name: String,
    program: String,
    model: String,
    unread: i64,
    retired: bool,
}

impl AgentLink {
    fn new(slug: &str, a: &ListedAgent) -> Self {
        Self {
            id: a.agent.id.0,
            href: routes::INBOX.fill(&[slug, &a.agent.name]),
            name: a.agent.name.clone(),
            program: a.agent.program.clone(),
            model: a.agent.model.clone(),
            unread: a.unread_count,
            retired: a.agent.retired_at.is_some(),
        }
    }
}

#[derive(Deserialize, Default)]
pub struct SearchQuery {
    q: Option<String>,
}

/// `GET /mail/{project}` and `GET /mail/{project}/search`, with `?q=` a search.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Path(project): Path<String>,
    Query(q): Query<SearchQuery>,
) -> Response {
    let answer = async {
        let overview = state.core.project_overview(project).await?;
        let slug = overview.project.slug.clone();
        let query = q.q.unwrap_or_default().trim().to_string();
        let now = Timestamp::now();
        let rows = if query.is_empty() {
            overview.messages.iter().map(|m| Row::from_message(&slug, m, false, now)).collect()
        } else {
            let found = state.core.search_messages(slug.clone(), query.clone(), SEARCH_LIMIT, None);
            found.await?.result.iter().map(|r| Row::from_search(&slug, r, now)).collect()
        };
        Ok(render(&ProjectPage {
            href: routes::PROJECT.fill(&[&slug]),
            compose_href: routes::COMPOSE.fill(&[&slug]),
            reservations_href: routes::RESERVATIONS.fill(&[&slug]),
            attachments_href: routes::ATTACHMENTS.fill(&[&slug]),
            archive_href: routes::archive_browser(Some(&slug), ""),
            timeline_href: routes::for_project(routes::ARCHIVE_TIMELINE, Some(&slug)),
            network_href: routes::for_project(routes::ARCHIVE_NETWORK, Some(&slug)),
            human_key: overview.project.human_key.clone(),
            searched: !query.is_empty(),
            query,
            rows,
            agents: overview.agents.iter().map(|a| AgentLink::new(&slug, a)).collect(),
            slug,
        }))
    };
    cached(&state, &uri, answer).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentIdBody {
    agent_id: i64,
}

pub async fn retire_agent(State(state): State<AppState>, bytes: Bytes) -> Response {
    change_agent(state, bytes, AgentChange::Retire).await
}

pub async fn unretire_agent(State(state): State<AppState>, bytes: Bytes) -> Response {
    change_agent(state, bytes, AgentChange::Unretire).await
}

/// `POST /mail/api/{retire,unretire}-agent {agent_id}` → `{success, agent_id, status}`.
async fn change_agent(state: AppState, bytes: Bytes, change: AgentChange) -> Response {
    let answer = async {
        let b: AgentIdBody = body(&bytes)?;
        let changed = state.core.change_agent_by_id(AgentId(b.agent_id), change).await?;
        Ok(json!({ "success": true, "agent_id": b.agent_id, "status": changed.status }))
    };
    json_answer(answer.await)
}

/// `GET /mail/api/projects/{project}/agents` → `{agents: [names, sorted]}`.
pub async fn agent_names(State(state): State<AppState>, Path(project): Path<String>) -> Response {
    let answer = async {
        let agents = state.core.project_agent_names(project).await?;
        Ok(json!({ "agents": agents }))
    };
    json_answer(answer.await)
}
