//! The archive's pages (`/mail/archive/…`), one module a page: the guide, the activity, the
//! timeline, a commit's diff, the file browser, the agent network and time travel; and the
//! archive's lock files as JSON (`/mail/api/locks`). They read the Git history and the files of
//! HEAD (paths checked, read from Git's trees, so nothing outside the archive is reachable).
//! What they share: the query most of them read, and [`CommitRow`]
//! (`partials/commit_row.html`).

pub mod activity;
pub mod browser;
pub mod commit;
pub mod guide;
pub mod network;
pub mod time_travel;
pub mod timeline;

use axum::extract::State;
use axum::response::Response;
use mailroom_core::archive::browse::CommitSummary;
use mailroom_core::model::time::Timestamp;
use serde::Deserialize;

use super::error::{PageError, json_answer};
use super::routes;
use super::view::relative;
use crate::state::AppState;

#[derive(Deserialize, Default)]
pub struct ArchiveQuery {
    project: Option<String>,
    path: Option<String>,
    limit: Option<String>,
}

/// A project named in the query; empty means none.
fn named(project: Option<String>) -> Option<String> {
    project.map(|p| p.trim().to_string()).filter(|p| !p.is_empty())
}

/// A commit in a list.
pub struct CommitRow {
    pub href: String,
    pub short_sha: String,
    pub summary: String,
    pub author: String,
    pub when_iso: String,
    pub when_relative: String,
    /// What the commit carried, read from its subject: mail, batch, reservation, …
    pub kind: &'static str,
}

impl CommitRow {
    pub fn new(c: &CommitSummary, now: Timestamp) -> Self {
        Self {
            href: routes::ARCHIVE_COMMIT.fill(&[&c.sha]),
            short_sha: c.short_sha.clone(),
            summary: c.summary.clone(),
            author: c.author.clone(),
            when_iso: c.authored_ts.to_iso(),
            when_relative: relative(c.authored_ts, now),
            kind: commit_kind(&c.summary),
        }
    }
}

/// The kind of change a commit subject names, as the archive writes them.
fn commit_kind(summary: &str) -> &'static str {
    let starts = |prefix: &str| summary.starts_with(prefix);
    if starts("mail:") || starts("Human Overseer") {
        "mail"
    } else if starts("batch:") {
        "batch"
    } else if starts("delete:") {
        "delete"
    } else if starts("file_reservation") || summary.contains("reservation") {
        "reservation"
    } else if starts("agent:") || summary.contains("profile") {
        "profile"
    } else {
        "other"
    }
}

/// `GET /mail/api/locks`: the archive's lock files, as `resource://tooling/locks` shows them.
pub async fn locks(State(state): State<AppState>) -> Response {
    json_answer(state.core.archive_locks().await.map_err(PageError::from))
}
