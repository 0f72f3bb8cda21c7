//! A project's attachments page (`/mail/{project}/attachments`): each message that carries
//! any, with its files (linked in the archive browser) and inline images (as thumbnails).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::output::MessageOut;
use serde_json::Value;

use super::cache::cached;
use super::view::{human_size, relative, render};
use super::{markdown, routes};
use crate::state::AppState;

#[derive(Template)]
#[template(path = "pages/attachments.html")]
struct AttachmentsPage {
    slug: String,
    project_href: String,
    messages: Vec<AttachmentMessage>,
}

/// A message with its attachments.
struct AttachmentMessage {
    href: String,
    subject: String,
    sender: String,
    created_iso: String,
    created_relative: String,
    items: Vec<AttachmentItem>,
}

impl AttachmentMessage {
    fn new(slug: &str, m: &MessageOut, now: Timestamp) -> Self {
        let items = match &m.attachments {
            Value::Array(list) => list.iter().map(|a| AttachmentItem::new(slug, a)).collect(),
            _ => Vec::new(),
        };
        Self {
            href: routes::MESSAGE.fill(&[slug, &m.id.0.to_string()]),
            subject: m.subject.clone(),
            sender: m.from.clone().unwrap_or_default(),
            created_iso: m.created_ts.to_iso(),
            created_relative: relative(m.created_ts, now),
            items,
        }
    }
}

/// An attachment of a message, as the attachments page lists it.
struct AttachmentItem {
    kind: String,
    media_type: String,
    size: String,
    dimensions: String,
    /// The archive path of a file attachment, with its browser link.
    path: Option<(String, String)>,
    /// An inline image's `data:` URL (WebP, base64), shown as a thumbnail.
    thumbnail: Option<String>,
}

impl AttachmentItem {
    fn new(slug: &str, value: &Value) -> Self {
        let text =
            |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let number = |key: &str| value.get(key).and_then(Value::as_u64);
        let media_type = text("media_type");
        let thumbnail = value
            .get("data_base64")
            .and_then(Value::as_str)
            .filter(|data| is_base64(data))
            .map(|data| format!("data:{media_type};base64,{data}"))
            .filter(|url| markdown::is_data_image(url));
        // A file attachment's path is the archive's, under the project's directory.
        let prefix = format!("projects/{slug}/");
        let path = value.get("path").and_then(Value::as_str).map(|p| {
            let inside = p.strip_prefix(&prefix).unwrap_or(p);
            (p.to_string(), routes::archive_browser(Some(slug), inside))
        });
        Self {
            kind: text("type"),
            size: number("bytes").map(|b| human_size(b as usize)).unwrap_or_default(),
            dimensions: match (number("width"), number("height")) {
                (Some(w), Some(h)) => format!("{w}×{h}"),
                _ => String::new(),
            },
            media_type,
            path,
            thumbnail,
        }
    }
}

/// Only base64's alphabet: a stored value cannot smuggle anything else into the URL.
fn is_base64(data: &str) -> bool {
    data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// `GET /mail/{project}/attachments`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Path(project): Path<String>,
) -> Response {
    let answer = async {
        let (project, messages) = state.core.attachment_messages(project).await?;
        let now = Timestamp::now();
        Ok(render(&AttachmentsPage {
            project_href: routes::PROJECT.fill(&[&project.slug]),
            messages: messages
                .iter()
                .map(|m| AttachmentMessage::new(&project.slug, m, now))
                .collect(),
            slug: project.slug,
        }))
    };
    cached(&state, &uri, answer).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_thumbnail_is_only_base64() {
        let good = serde_json::json!({"type": "inline", "media_type": "image/webp", "data_base64": "UklGRg=="});
        assert!(AttachmentItem::new("p", &good).thumbnail.is_some());
        let bad = serde_json::json!({"type": "inline", "media_type": "image/webp", "data_base64": "x\" onerror=\"alert(1)"});
        assert!(AttachmentItem::new("p", &bad).thumbnail.is_none());
        for media_type in ["text/html", "image/svg+xml", "application/x-image/png"] {
            let other = serde_json::json!({"type": "inline", "media_type": media_type, "data_base64": "PHNjcmlwdD4="});
            assert!(AttachmentItem::new("p", &other).thumbnail.is_none(), "{media_type}");
        }
    }
}
