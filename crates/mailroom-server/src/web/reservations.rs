//! A project's file reservations (`/mail/{project}/file_reservations`): those in force, and
//! those released or expired.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::reservations::ReservationStatus;

use super::cache::cached;
use super::routes;
use super::view::render;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "pages/reservations.html")]
struct ReservationsPage {
    slug: String,
    project_href: String,
    active: Vec<ReservationRow>,
    past: Vec<ReservationRow>,
}

/// A file reservation in a table.
struct ReservationRow {
    pattern: String,
    agent: String,
    /// "exclusive" or "shared".
    kind: &'static str,
    reason: String,
    expires_iso: String,
    /// When it was released, or expired.
    ended_iso: String,
    stale: bool,
}

impl ReservationRow {
    fn new(r: &ReservationStatus) -> Self {
        let ended = r.released_ts.unwrap_or(r.expires_ts);
        Self {
            pattern: r.path_pattern.clone(),
            agent: r.agent.clone(),
            kind: if r.exclusive { "exclusive" } else { "shared" },
            reason: r.reason.clone(),
            expires_iso: r.expires_ts.to_iso(),
            ended_iso: ended.to_iso(),
            stale: r.staleness.stale,
        }
    }
}

/// `GET /mail/{project}/file_reservations`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Path(project): Path<String>,
) -> Response {
    let answer = async {
        let slug = state.core.project_by_key(project).await?.slug;
        let all = state.core.list_file_reservations(slug.clone(), false).await?;
        let now = Timestamp::now();
        let (active, past): (Vec<_>, Vec<_>) =
            all.iter().partition(|r| r.released_ts.is_none() && r.expires_ts > now);
        Ok(render(&ReservationsPage {
            project_href: routes::PROJECT.fill(&[&slug]),
            active: active.into_iter().map(ReservationRow::new).collect(),
            past: past.into_iter().map(ReservationRow::new).collect(),
            slug,
        }))
    };
    cached(&state, &uri, answer).await
}
