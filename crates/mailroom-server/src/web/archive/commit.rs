//! A commit of the archive (`/mail/archive/commit/{sha}`): its message, the files it changed
//! and its diff, each line classed for its colour.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use mailroom_core::model::time::Timestamp;

use super::CommitRow;
use crate::state::AppState;
use crate::web::error::page;
use crate::web::routes;
use crate::web::view::render;

#[derive(Template)]
#[template(path = "pages/archive/commit.html")]
struct CommitPage {
    commit: CommitRow,
    sha: String,
    message: String,
    files: Vec<(String, &'static str)>,
    insertions: usize,
    deletions: usize,
    lines: Vec<PatchLine>,
    truncated: bool,
}

/// A line of a patch, classed for its colour.
struct PatchLine {
    class: &'static str,
    text: String,
}

fn patch_lines(patch: &str) -> Vec<PatchLine> {
    patch
        .lines()
        .map(|line| {
            let class = if line.starts_with("diff --git") || line.starts_with("index ") {
                "meta"
            } else if line.starts_with("+++") || line.starts_with("---") {
                "file"
            } else if line.starts_with("@@") {
                "hunk"
            } else if line.starts_with('+') {
                "add"
            } else if line.starts_with('-') {
                "del"
            } else {
                "ctx"
            };
            PatchLine { class, text: line.to_string() }
        })
        .collect()
}

/// `GET /mail/archive/commit/{sha}`.
pub async fn show(State(state): State<AppState>, Path(sha): Path<String>) -> Response {
    let answer = async {
        let diff = state.core.archive_commit(sha).await?;
        Ok(render(&CommitPage {
            commit: CommitRow::new(&diff.commit, Timestamp::now()),
            sha: diff.commit.sha.clone(),
            message: diff.message,
            files: diff.files.into_iter().map(|f| (f.path, f.status)).collect(),
            insertions: diff.insertions,
            deletions: diff.deletions,
            lines: patch_lines(&diff.patch),
            truncated: diff.truncated,
        }))
    };
    page(answer.await)
}
