//! The unified inbox (`/mail`, `/mail/`, `/mail/unified-inbox`): the newest messages of every
//! project, the project list and the related-project suggestions; and the same messages as
//! JSON for scripts and polling (`/mail/api/unified-inbox`).

use askama::Template;
use axum::extract::{Query, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use serde::Deserialize;
use serde_json::json;

use super::cache::cached;
use super::error::{PageError, json_answer};
use super::message::Row;
use super::routes;
use super::siblings::{SiblingLink, siblings};
use super::view::{ProjectLink, number, project_links, render};
use crate::state::AppState;

/// Messages the unified inbox shows by default.
const FLEET_DEFAULT: i64 = 500;

#[derive(Template)]
#[template(path = "pages/fleet.html")]
struct FleetPage {
    rows: Vec<Row>,
    projects: Vec<ProjectLink>,
    siblings: Vec<SiblingLink>,
    /// The importance filter, empty for none.
    filter: String,
}

#[derive(Deserialize, Default)]
pub struct FleetQuery {
    limit: Option<String>,
    filter_importance: Option<String>,
    include_projects: Option<String>,
}

/// `GET /mail?limit=&filter_importance=`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Query(q): Query<FleetQuery>,
) -> Response {
    cached(&state.clone(), &uri, fleet_page(state, q)).await
}

async fn fleet_page(state: AppState, q: FleetQuery) -> Result<Response, PageError> {
    let limit = number("limit", q.limit.as_deref())?.unwrap_or(FLEET_DEFAULT);
    let filter = q.filter_importance.unwrap_or_default().trim().to_ascii_lowercase();
    let importance = (!filter.is_empty()).then(|| filter.clone());
    let messages = state.core.fleet_messages(limit, importance).await?;
    let now = Timestamp::now();
    Ok(render(&FleetPage {
        rows: messages.iter().map(|m| Row::from_fleet(m, now)).collect(),
        projects: project_links(&state).await?,
        siblings: siblings(&state).await?,
        filter,
    }))
}

/// `GET /mail/api/unified-inbox`: `{messages, projects}` for scripts and polling.
pub async fn json(State(state): State<AppState>, Query(q): Query<FleetQuery>) -> Response {
    let answer = async {
        let limit = number("limit", q.limit.as_deref())?.unwrap_or(FLEET_DEFAULT);
        let messages = state.core.fleet_messages(limit, None).await?;
        let with_projects = !matches!(
            q.include_projects.as_deref().map(str::trim),
            Some("false" | "0" | "no" | "off")
        );
        let projects = if with_projects { state.core.list_projects().await? } else { Vec::new() };
        Ok(json!({ "messages": messages, "projects": projects }))
    };
    json_answer(answer.await)
}
