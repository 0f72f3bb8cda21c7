//! The archive's activity (`/mail/archive/activity?project=&limit=`): its newest commits.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;

use super::{ArchiveQuery, CommitRow, named};
use crate::state::AppState;
use crate::web::cache::cached_archive_page;
use crate::web::error::bad_request;
use crate::web::routes;
use crate::web::view::{number, render};

/// Commits the activity page lists by default.
const ACTIVITY_DEFAULT: i64 = 50;

#[derive(Template)]
#[template(path = "pages/archive/activity.html")]
struct ActivityPage {
    commits: Vec<CommitRow>,
    limit: usize,
}

/// `GET /mail/archive/activity`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Query(q): Query<ArchiveQuery>,
) -> Response {
    let answer = async {
        let limit = number("limit", q.limit.as_deref())?.unwrap_or(ACTIVITY_DEFAULT);
        if limit < 1 {
            return Err(bad_request("limit must be at least 1.".into()));
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let (_, commits) = state.core.archive_activity(limit, named(q.project)).await?;
        let now = Timestamp::now();
        let limit = limit.min(mailroom_core::ops::archive_views::MAX_ACTIVITY);
        Ok(render(&ActivityPage {
            commits: commits.iter().map(|c| CommitRow::new(c, now)).collect(),
            limit,
        }))
    };
    cached_archive_page(&state, &uri, answer).await
}
