//! Related projects (`partials/siblings.html`, on the unified inbox and the projects page):
//! the pairs the background scorer suggests (`ops/projects/siblings.rs`) and their buttons, which set a
//! pair's status (`POST /mail/api/projects/{project_id}/siblings/{other_id}`).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use mailroom_core::ops::projects::siblings::Sibling;
use mailroom_core::records::ProjectId;
use serde::Deserialize;

use super::error::{PageError, bad_request, json_answer};
use super::routes;
use super::view::body;
use crate::state::AppState;

/// A sibling-project suggestion, with its buttons' target.
pub struct SiblingLink {
    pub a: String,
    pub a_href: String,
    pub b: String,
    pub b_href: String,
    pub percent: i64,
    pub status: String,
    pub confirmed: bool,
    pub rationale: String,
    /// `POST /mail/api/projects/{a}/siblings/{b}`.
    pub action: String,
}

impl SiblingLink {
    pub fn new(row: &Sibling) -> Self {
        Self {
            a_href: routes::PROJECT.fill(&[&row.project_slug]),
            a: row.project_slug.clone(),
            b_href: routes::PROJECT.fill(&[&row.other_slug]),
            b: row.other_slug.clone(),
            percent: (row.score * 100.0).round() as i64,
            confirmed: row.status == "confirmed",
            status: row.status.clone(),
            rationale: row.rationale.clone(),
            action: routes::SIBLING_STATUS
                .fill(&[&row.project_id.0.to_string(), &row.other_id.0.to_string()]),
        }
    }
}

/// Pairs of related projects to show.
pub async fn siblings(state: &AppState) -> Result<Vec<SiblingLink>, PageError> {
    let shown = state.core.shown_siblings().await?;
    Ok(shown.iter().map(SiblingLink::new).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SiblingBody {
    status: String,
}

/// `POST /mail/api/projects/{project_id}/siblings/{other_id} {status}` → `{success,
/// project_id, other_id, status, score}` (the pair is created when missing).
pub async fn set_status(
    State(state): State<AppState>,
    Path((project_id, other_id)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    let answer = async {
        let id = |field: &str, raw: &str| {
            raw.trim().parse().map(ProjectId).map_err(|_| {
                bad_request(format!("{field}: a project id is a whole number, not {raw:?}."))
            })
        };
        let (project_id, other_id) = (id("project_id", &project_id)?, id("other_id", &other_id)?);
        let b: SiblingBody = body(&bytes)?;
        Ok(state.core.set_sibling_status(project_id, other_id, b.status).await?)
    };
    json_answer(answer.await)
}
