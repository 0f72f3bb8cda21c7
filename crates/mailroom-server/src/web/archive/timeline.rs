//! The archive's timeline (`/mail/archive/timeline?project=`): its commits day by day, for
//! every project or one.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::Uri;
use axum::response::Response;
use mailroom_core::archive::browse::CommitSummary;
use mailroom_core::model::time::Timestamp;

use super::{ArchiveQuery, CommitRow, named};
use crate::state::AppState;
use crate::web::cache::cached_archive_page;
use crate::web::routes;
use crate::web::view::{ProjectLink, project_links, render};

/// Commits the timeline reads.
const TIMELINE_COMMITS: usize = 300;

#[derive(Template)]
#[template(path = "pages/archive/timeline.html")]
struct TimelinePage {
    /// The project's slug, when the timeline is one project's (else empty).
    selected: String,
    days: Vec<Day>,
    projects: Vec<ProjectLink>,
}

/// A day of the timeline and its commits, newest first.
struct Day {
    date: String,
    commits: Vec<CommitRow>,
}

/// Groups commits (newest first) by their UTC day.
fn days(commits: &[CommitSummary], now: Timestamp) -> Vec<Day> {
    let mut days: Vec<Day> = Vec::new();
    for c in commits {
        let date = c.authored_ts.to_iso().chars().take(10).collect::<String>();
        match days.last_mut() {
            Some(day) if day.date == date => day.commits.push(CommitRow::new(c, now)),
            _ => days.push(Day { date, commits: vec![CommitRow::new(c, now)] }),
        }
    }
    days
}

/// `GET /mail/archive/timeline`.
pub async fn show(
    State(state): State<AppState>,
    uri: Uri,
    Query(q): Query<ArchiveQuery>,
) -> Response {
    let answer = async {
        let (project, commits) =
            state.core.archive_activity(TIMELINE_COMMITS, named(q.project)).await?;
        Ok(render(&TimelinePage {
            selected: project.map(|p| p.slug).unwrap_or_default(),
            days: days(&commits, Timestamp::now()),
            projects: project_links(&state).await?,
        }))
    };
    cached_archive_page(&state, &uri, answer).await
}
