//! The archive's guide (`/mail/archive/guide`): where it lives, how it is laid out, its
//! latest commit and each project's views.

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use mailroom_core::model::time::Timestamp;

use super::CommitRow;
use crate::state::AppState;
use crate::web::error::page;
use crate::web::routes;
use crate::web::view::{ProjectLink, project_links, render};

#[derive(Template)]
#[template(path = "pages/archive/guide.html")]
struct GuidePage {
    root: String,
    enabled: bool,
    latest: Option<CommitRow>,
    projects: Vec<ProjectLink>,
}

/// `GET /mail/archive/guide`.
pub async fn show(State(state): State<AppState>) -> Response {
    let answer = async {
        let now = Timestamp::now();
        let projects = project_links(&state).await?;
        let Some(archive) = state.core.archive() else {
            return Ok(render(&GuidePage {
                root: String::new(),
                enabled: false,
                latest: None,
                projects,
            }));
        };
        let root = archive.root().display().to_string();
        let (_, latest) = state.core.archive_activity(1, None).await?;
        Ok(render(&GuidePage {
            root,
            enabled: true,
            latest: latest.first().map(|c| CommitRow::new(c, now)),
            projects,
        }))
    };
    page(answer.await)
}
