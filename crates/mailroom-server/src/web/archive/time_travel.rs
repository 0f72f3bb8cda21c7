//! Time travel (`/mail/archive/time-travel?project=&agent=&timestamp=`): an agent's inbox as
//! the archive held it at a past moment, the last commit at or before it; and the same
//! snapshot as JSON (`/mail/archive/time-travel/snapshot`).

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Response;
use mailroom_core::model::time::Timestamp;
use serde::Deserialize;
use serde_json::json;

use super::CommitRow;
use crate::state::AppState;
use crate::web::error::{PageError, bad_request, json_answer, page};
use crate::web::routes;
use crate::web::view::{ProjectLink, project_links, render};

#[derive(Template)]
#[template(path = "pages/archive/time_travel.html")]
struct TimeTravelPage {
    projects: Vec<ProjectLink>,
    project: String,
    agent: String,
    timestamp: String,
    /// The snapshot's commit, when one was asked for and found.
    commit: Option<CommitRow>,
    rows: Vec<SnapshotRow>,
    /// Why there is nothing to show, when something was asked.
    note: Option<String>,
}

/// A message of a time-travel snapshot.
struct SnapshotRow {
    id: i64,
    subject: String,
    from: String,
    created_iso: String,
}

#[derive(Deserialize, Default)]
pub struct SnapshotQuery {
    project: Option<String>,
    agent: Option<String>,
    timestamp: Option<String>,
}

/// The snapshot's fields, checked as the reference checks them (each error names its field).
fn snapshot_args(q: &SnapshotQuery) -> Result<(String, String, Timestamp, String), PageError> {
    let project = q.project.as_deref().unwrap_or_default().trim();
    if project.is_empty()
        || !project
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        return Err(bad_request(format!(
            "project: a project slug of a-z, 0-9, _ and - is needed, not {project:?}."
        )));
    }
    let agent = q.agent.as_deref().unwrap_or_default().trim();
    if agent.is_empty() || !agent.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(bad_request(format!(
            "agent: an agent name of letters and digits is needed, not {agent:?}."
        )));
    }
    let raw = q.timestamp.as_deref().unwrap_or_default().trim();
    let shaped = raw.len() >= 16
        && raw.as_bytes().iter().take(16).enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => *b == b'T',
            13 => *b == b':',
            _ => b.is_ascii_digit(),
        });
    let moment = shaped.then(|| Timestamp::parse_iso(raw)).flatten().ok_or_else(|| {
        bad_request(format!("timestamp: YYYY-MM-DDTHH:MM (UTC) is needed, not {raw:?}."))
    })?;
    Ok((project.to_string(), agent.to_string(), moment, raw.to_string()))
}

/// `GET /mail/archive/time-travel/snapshot?project=&agent=&timestamp=` →
/// `{messages, snapshot_time, commit_sha, requested_time}` (and `error` when the archive has
/// no commit that old).
pub async fn snapshot(State(state): State<AppState>, Query(q): Query<SnapshotQuery>) -> Response {
    let answer = async {
        let (project, agent, moment, raw) = snapshot_args(&q)?;
        let found = state.core.archive_snapshot(project, agent, moment).await?;
        Ok(match found {
            Some(s) => json!({
                "messages": s.messages.iter().map(|m| json!({
                    "id": m.id, "subject": m.subject, "from": m.from, "created": m.created.to_iso(),
                    "importance": m.importance, "thread_id": m.thread_id,
                })).collect::<Vec<_>>(),
                "snapshot_time": s.commit.authored_ts.to_iso(),
                "commit_sha": s.commit.sha,
                "requested_time": raw,
            }),
            None => json!({
                "messages": [], "snapshot_time": null, "commit_sha": null, "requested_time": raw,
                "error": "The archive has no commit at or before that moment.",
            }),
        })
    };
    json_answer(answer.await)
}

/// `GET /mail/archive/time-travel`: the form, and the snapshot when one is asked for.
pub async fn show(State(state): State<AppState>, Query(q): Query<SnapshotQuery>) -> Response {
    let answer = async {
        let now = Timestamp::now();
        let asked = q.agent.as_deref().is_some_and(|a| !a.trim().is_empty());
        let mut view = TimeTravelPage {
            projects: project_links(&state).await?,
            project: q.project.clone().unwrap_or_default(),
            agent: q.agent.clone().unwrap_or_default(),
            timestamp: q.timestamp.clone().unwrap_or_default(),
            commit: None,
            rows: Vec::new(),
            note: None,
        };
        if asked {
            let (project, agent, moment, _) = snapshot_args(&q)?;
            match state.core.archive_snapshot(project, agent, moment).await? {
                Some(s) => {
                    view.commit = Some(CommitRow::new(&s.commit, now));
                    view.rows = s
                        .messages
                        .iter()
                        .map(|m| SnapshotRow {
                            id: m.id.0,
                            subject: m.subject.clone(),
                            from: m.from.clone(),
                            created_iso: m.created.to_iso(),
                        })
                        .collect();
                }
                None => {
                    view.note = Some("The archive has no commit at or before that moment.".into())
                }
            }
        }
        Ok(render(&view))
    };
    page(answer.await)
}
