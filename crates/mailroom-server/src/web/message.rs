//! A message: its page (`/mail/{project}/message/{id}`), its deletion (`POST
//! /mail/api/delete-messages`, the page's button, for messages of any project; the inbox's
//! deletion shares [`delete`]), and the two ways the pages show messages: [`Row`] in a list
//! (`partials/message_row.html`) and [`Card`] whole (`partials/message_card.html`).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::messaging::deletion::DeleteScope;
use mailroom_core::ops::output::{AddressedMessage, MessageOut};
use mailroom_core::ops::projects::fleet::{FleetMessage, excerpt};
use mailroom_core::ops::search::SearchResult;
use mailroom_core::records::MessageId;
use serde::Deserialize;
use serde_json::json;

use super::error::{PageError, bad_request, json_answer, page};
use super::view::{body, relative, render};
use super::{markdown, routes};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "pages/message.html")]
struct MessagePage {
    slug: String,
    project_href: String,
    /// `{"message_ids":[id]}`, the delete button's request.
    delete_body: String,
    thread_href: Option<String>,
    m: Card,
}

/// `GET /mail/{project}/message/{id}`.
pub async fn show(
    State(state): State<AppState>,
    Path((project, id)): Path<(String, String)>,
) -> Response {
    let answer = async {
        let id: i64 = id
            .trim()
            .parse()
            .map_err(|_| bad_request(format!("A message id is a whole number, not {id:?}.")))?;
        let detail = state.core.project_by_key(project.clone()).await?;
        let m = state.core.message_detail(project, MessageId(id), None).await?;
        let commit = state.core.message_commit(&detail.slug, &m.message).await;
        let thread_href =
            m.message.thread_id.as_deref().map(|t| routes::THREAD.fill(&[&detail.slug, t]));
        Ok(render(&MessagePage {
            project_href: routes::PROJECT.fill(&[&detail.slug]),
            delete_body: json!({ "message_ids": [id] }).to_string(),
            thread_href,
            m: Card::new(&m, commit, Timestamp::now()),
            slug: detail.slug,
        }))
    };
    page(answer.await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageIdsBody {
    message_ids: Vec<i64>,
}

/// The messages a `{message_ids}` body names (delete and mark read send it).
pub fn message_ids(bytes: &Bytes) -> Result<Vec<MessageId>, PageError> {
    let b: MessageIdsBody = body(bytes)?;
    Ok(b.message_ids.into_iter().map(MessageId).collect())
}

/// `POST /mail/api/delete-messages {message_ids}` → `{success, deleted_count,
/// git_files_removed}`: messages of any project.
pub async fn delete_messages(State(state): State<AppState>, bytes: Bytes) -> Response {
    delete(state, bytes, DeleteScope::Any).await
}

/// Deletes the messages a `{message_ids}` body names, within `scope`.
pub async fn delete(state: AppState, bytes: Bytes, scope: DeleteScope) -> Response {
    let answer = async { Ok(state.core.delete_messages(message_ids(&bytes)?, scope).await?) };
    json_answer(answer.await)
}

/// A message in a list.
pub struct Row {
    pub id: i64,
    pub href: String,
    pub subject: String,
    pub sender: String,
    /// Recipients joined with commas.
    pub recipients: String,
    /// The project's slug, in fleet-wide lists only.
    pub project: String,
    pub excerpt: String,
    pub importance: String,
    pub important: bool,
    pub unread: bool,
    /// Shown with a check box, for the inbox's actions on selected messages.
    pub selectable: bool,
    pub created_iso: String,
    pub created_relative: String,
}

impl Row {
    pub fn from_fleet(m: &FleetMessage, now: Timestamp) -> Self {
        Self {
            id: m.id.0,
            href: routes::MESSAGE.fill(&[&m.project_slug, &m.id.0.to_string()]),
            subject: m.subject.clone(),
            sender: m.sender.clone(),
            recipients: m.recipients.join(", "),
            project: m.project_slug.clone(),
            excerpt: markdown::plain_text(&m.excerpt),
            important: m.importance.is_urgent(),
            importance: m.importance.as_str().to_string(),
            unread: false,
            selectable: false,
            created_iso: m.created_ts.to_iso(),
            created_relative: relative(m.created_ts, now),
        }
    }

    pub fn from_message(slug: &str, m: &MessageOut, unread: bool, now: Timestamp) -> Self {
        Self {
            id: m.id.0,
            href: routes::MESSAGE.fill(&[slug, &m.id.0.to_string()]),
            subject: m.subject.clone(),
            sender: m.from.clone().unwrap_or_default(),
            recipients: String::new(),
            project: String::new(),
            excerpt: m
                .body_md
                .as_deref()
                .map(|b| markdown::plain_text(&excerpt(b)))
                .unwrap_or_default(),
            important: m.importance.is_urgent(),
            importance: m.importance.as_str().to_string(),
            unread,
            selectable: false,
            created_iso: m.created_ts.to_iso(),
            created_relative: relative(m.created_ts, now),
        }
    }

    pub fn from_search(slug: &str, r: &SearchResult, now: Timestamp) -> Self {
        let item = &r.item;
        Self {
            id: item.id.0,
            href: routes::MESSAGE.fill(&[slug, &item.id.0.to_string()]),
            subject: item.subject.clone(),
            sender: item.from.clone(),
            recipients: r.to.iter().chain(&r.cc).cloned().collect::<Vec<_>>().join(", "),
            project: String::new(),
            excerpt: String::new(),
            important: item.importance.is_urgent(),
            importance: item.importance.as_str().to_string(),
            unread: false,
            selectable: false,
            created_iso: item.created_ts.to_iso(),
            created_relative: relative(item.created_ts, now),
        }
    }
}

/// A message shown whole.
pub struct Card {
    pub id: i64,
    pub subject: String,
    pub sender: String,
    pub to: String,
    pub cc: String,
    pub bcc: String,
    pub thread_id: Option<String>,
    pub commit: Option<String>,
    pub importance: String,
    pub important: bool,
    pub ack_required: bool,
    pub created_iso: String,
    pub created_relative: String,
    /// Sanitised HTML.
    pub body_html: String,
}

impl Card {
    pub fn new(m: &AddressedMessage, commit: Option<String>, now: Timestamp) -> Self {
        let message = &m.message;
        Self {
            id: message.id.0,
            subject: message.subject.clone(),
            sender: message.from.clone().unwrap_or_default(),
            to: m.to.join(", "),
            cc: m.cc.join(", "),
            bcc: m.bcc.join(", "),
            thread_id: message.thread_id.clone(),
            commit,
            important: message.importance.is_urgent(),
            importance: message.importance.as_str().to_string(),
            ack_required: message.ack_required,
            created_iso: message.created_ts.to_iso(),
            created_relative: relative(message.created_ts, now),
            body_html: markdown::render(message.body_md.as_deref().unwrap_or_default()),
        }
    }
}
