//! An agent's inbox (`/mail/{project}/inbox/{agent}?page=&limit=`), a page at a time, and
//! its buttons' requests: mark read (selected or all) and delete the selected messages.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::messaging::deletion::DeleteScope;
use serde::Deserialize;

use super::cache::cached;
use super::error::{PageError, bad_request, json_answer};
use super::message::{Row, delete, message_ids};
use super::routes::{self, Route};
use super::view::{number, render};
use crate::state::AppState;

/// Messages an agent's inbox page shows by default.
const INBOX_PAGE_DEFAULT: i64 = 50;

#[derive(Template)]
#[template(path = "pages/inbox.html")]
struct InboxPage {
    slug: String,
    project_href: String,
    agent: String,
    /// "42", or "more than 10000".
    total: String,
    /// Whether `pages` is a lower bound.
    capped: bool,
    page: i64,
    pages: i64,
    rows: Vec<Row>,
    prev_href: Option<String>,
    next_href: Option<String>,
}

impl InboxPage {
    /// The URL of one of this inbox's actions (mark read, mark all read, delete).
    fn action(&self, route: Route<2>) -> String {
        route.fill(&[&self.slug, &self.agent])
    }
}

#[derive(Deserialize, Default)]
pub struct InboxQuery {
    page: Option<String>,
    limit: Option<String>,
}

/// `GET /mail/{project}/inbox/{agent}`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Path((project, agent)): Path<(String, String)>,
    Query(q): Query<InboxQuery>,
) -> Response {
    let answer = async {
        let page = number("page", q.page.as_deref())?.unwrap_or(1);
        let size = number("limit", q.limit.as_deref())?.unwrap_or(INBOX_PAGE_DEFAULT);
        if page < 1 || size < 1 {
            return Err(bad_request("page and limit must be at least 1.".into()));
        }
        let view = state.core.agent_inbox_page(project, agent, page, size).await?;
        let slug = view.project.slug.clone();
        let name = view.agent.name.clone();
        let now = Timestamp::now();
        let pages = view.pages();
        let capped = view.total_is_capped();
        let link = |n: i64| routes::inbox_page(&slug, &name, n);
        Ok(render(&InboxPage {
            project_href: routes::PROJECT.fill(&[&slug]),
            agent: name.clone(),
            total: if capped {
                format!("more than {}", view.total - 1)
            } else {
                view.total.to_string()
            },
            capped,
            page: view.page,
            pages,
            rows: view
                .messages
                .iter()
                .map(|e| Row {
                    selectable: true,
                    ..Row::from_message(&slug, &e.message, !e.read, now)
                })
                .collect(),
            prev_href: (view.page > 1).then(|| link(view.page - 1)),
            // Past the count's cap, a full page is the sign of another.
            next_href: if capped {
                (view.messages.len() as i64 == view.page_size).then(|| link(view.page + 1))
            } else {
                (view.page < pages).then(|| link(view.page + 1))
            },
            slug: slug.clone(),
        }))
    };
    cached(&state, &uri, answer).await
}

/// `POST /mail/{project}/inbox/{agent}/mark-read {message_ids}`.
pub async fn mark_read(
    State(state): State<AppState>,
    Path((project, agent)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    let answer = async {
        Ok(state.core.mark_read_from_ui(project, agent, Some(message_ids(&bytes)?)).await?)
    };
    json_answer(answer.await)
}

/// `POST /mail/{project}/inbox/{agent}/mark-all-read`.
pub async fn mark_all_read(
    State(state): State<AppState>,
    Path((project, agent)): Path<(String, String)>,
) -> Response {
    json_answer(state.core.mark_read_from_ui(project, agent, None).await.map_err(PageError::from))
}

/// `POST /mail/{project}/inbox/{agent}/delete-messages {message_ids}`: only messages that
/// agent received in that project; the answer names both.
pub async fn delete_messages(
    State(state): State<AppState>,
    Path((project_key, agent_name)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    delete(state, bytes, DeleteScope::Inbox { project_key, agent_name }).await
}
