//! A thread's page (`/mail/{project}/thread/{thread_id}`): its messages whole, oldest first.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;

use super::cache::cached;
use super::message::Card;
use super::routes;
use super::view::render;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "pages/thread.html")]
struct ThreadPage {
    slug: String,
    project_href: String,
    thread_id: String,
    messages: Vec<Card>,
}

/// `GET /mail/{project}/thread/{thread_id}`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Path((project, thread_id)): Path<(String, String)>,
) -> Response {
    let answer = async {
        let detail = state.core.project_by_key(project.clone()).await?;
        let view = state.core.thread_view(project, thread_id.clone(), true, None).await?;
        let now = Timestamp::now();
        Ok(render(&ThreadPage {
            project_href: routes::PROJECT.fill(&[&detail.slug]),
            thread_id,
            messages: view.messages.iter().map(|m| Card::new(m, None, now)).collect(),
            slug: detail.slug,
        }))
    };
    cached(&state, &uri, answer).await
}
