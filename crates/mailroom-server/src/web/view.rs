//! What the pages share: rendering a template, reading a number from the query or a JSON
//! body, relative times and sizes as a person reads them, and the project list several pages
//! show. Every value a template prints is escaped by askama except a body's HTML, which
//! `markdown::render` has sanitised.

use askama::Template;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::output::ProjectOut;

use super::error::{PageError, bad_request};
use super::routes::{self, Route};
use crate::state::AppState;

pub fn render(page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a page failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "The page failed to render.").into_response()
        }
    }
}

/// An optional whole-number query parameter; anything else is an error naming it.
pub fn number(field: &str, raw: Option<&str>) -> Result<Option<i64>, PageError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| bad_request(format!("{field} must be a whole number, not {text:?}."))),
    }
}

/// A strict JSON body: unknown fields refused, errors naming the field.
pub fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, PageError> {
    serde_json::from_slice(bytes).map_err(|e| bad_request(format!("Invalid request body: {e}")))
}

/// "just now", "5 min ago", "3 h ago", "2 d ago", then the date.
pub fn relative(then: Timestamp, now: Timestamp) -> String {
    let seconds = (now.as_micros() - then.as_micros()) / 1_000_000;
    match seconds {
        ..45 => "just now".to_string(),
        45..3_600 => format!("{} min ago", (seconds + 30) / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        86_400..2_592_000 => format!("{} d ago", seconds / 86_400),
        _ => then.to_iso().chars().take(10).collect(),
    }
}

/// "512 B", "1.5 KB", "2.0 MB".
pub fn human_size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// A project in a list.
pub struct ProjectLink {
    pub id: i64,
    pub href: String,
    pub slug: String,
    pub human_key: String,
    pub archived: bool,
    pub created_iso: String,
    pub created_relative: String,
}

impl ProjectLink {
    pub fn new(p: &ProjectOut, now: Timestamp) -> Self {
        Self {
            id: p.id.0,
            href: routes::PROJECT.fill(&[&p.slug]),
            slug: p.slug.clone(),
            human_key: p.human_key.clone(),
            archived: p.archived_at.is_some(),
            created_iso: p.created_at.to_iso(),
            created_relative: relative(p.created_at, now),
        }
    }

    /// The project's view of the archive: the browser, the timeline, the network, …
    pub fn archive_view(&self, view: Route<0>) -> String {
        routes::for_project(view, Some(&self.slug))
    }
}

/// Every project, as the pages list them.
pub async fn project_links(state: &AppState) -> Result<Vec<ProjectLink>, PageError> {
    let now = Timestamp::now();
    Ok(state.core.list_projects().await?.iter().map(|p| ProjectLink::new(p, now)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_as_a_person_says_them() {
        let now = Timestamp::from_micros(10_000_000_000_000);
        let ago = |seconds: i64| {
            relative(Timestamp::from_micros(now.as_micros() - seconds * 1_000_000), now)
        };
        assert_eq!(ago(5), "just now");
        assert_eq!(ago(-30), "just now", "a clock slightly ahead");
        assert_eq!(ago(300), "5 min ago");
        assert_eq!(ago(7_300), "2 h ago");
        assert_eq!(ago(3 * 86_400), "3 d ago");
        assert_eq!(ago(90 * 86_400).len(), 10, "a date");
    }
}
