//! The projects page (`/mail/projects`): every project with its archive button, and the
//! related-project suggestions; the buttons' requests (`POST
//! /mail/api/{archive,unarchive}-project`).

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::records::ProjectId;
use serde::Deserialize;
use serde_json::json;

use super::cache::cached;
use super::error::json_answer;
use super::routes;
use super::siblings::{SiblingLink, siblings};
use super::view::{ProjectLink, body, project_links, render};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "pages/projects.html")]
struct ProjectsPage {
    projects: Vec<ProjectLink>,
    siblings: Vec<SiblingLink>,
}

/// `GET /mail/projects`.
pub async fn show(State(state): State<AppState>, uri: Uri) -> Response {
    let answer = async {
        let projects = project_links(&state).await?;
        Ok(render(&ProjectsPage { projects, siblings: siblings(&state).await? }))
    };
    cached(&state, &uri, answer).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectIdBody {
    project_id: i64,
}

pub async fn archive(State(state): State<AppState>, bytes: Bytes) -> Response {
    set_archived(state, bytes, true).await
}

pub async fn unarchive(State(state): State<AppState>, bytes: Bytes) -> Response {
    set_archived(state, bytes, false).await
}

/// `POST /mail/api/{archive,unarchive}-project {project_id}` → `{success, project_id, status}`.
async fn set_archived(state: AppState, bytes: Bytes, archived: bool) -> Response {
    let answer = async {
        let b: ProjectIdBody = body(&bytes)?;
        let id = ProjectId(b.project_id);
        let changed = state.core.set_project_archived_by_id(id, archived).await?;
        Ok(json!({ "success": true, "project_id": b.project_id, "status": changed.status }))
    };
    json_answer(answer.await)
}
