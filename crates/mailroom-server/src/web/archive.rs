//! The archive views (`/mail/archive/…`), a project's attachments page and agents list: the
//! Git history, a commit's diff, the files of HEAD (paths checked, read from Git's trees, so
//! nothing outside the archive is reachable), the agent network, and time travel.

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use mailroom_core::archive::browse::Node;
use mailroom_core::model::time::Timestamp;
use serde::Deserialize;
use serde_json::json;

use super::archive_pages::{
    ActivityPage, AttachmentMessage, AttachmentsPage, BrowserPage, CommitPage, CommitRow, EntryRow,
    GuidePage, NetworkPage, SnapshotRow, TimeTravelPage, TimelinePage, crumbs, days, network,
    patch_lines,
};
use super::{
    PageError, bad_request, cached, cached_archive_page, json_answer, number, page, paths,
    project_links, render,
};
use crate::state::AppState;

/// Commits the activity page lists by default.
const ACTIVITY_DEFAULT: i64 = 50;
/// Commits the timeline reads.
const TIMELINE_COMMITS: usize = 300;

#[derive(Deserialize, Default)]
pub(super) struct ArchiveQuery {
    project: Option<String>,
    path: Option<String>,
    limit: Option<String>,
}

/// A project named in the query; empty means none.
fn named(project: Option<String>) -> Option<String> {
    project.map(|p| p.trim().to_string()).filter(|p| !p.is_empty())
}

pub(super) async fn guide(State(state): State<AppState>) -> Response {
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

pub(super) async fn activity(
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

pub(super) async fn timeline(
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

pub(super) async fn commit(State(state): State<AppState>, Path(sha): Path<String>) -> Response {
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

pub(super) async fn browser(
    State(state): State<AppState>,
    Query(q): Query<ArchiveQuery>,
) -> Response {
    let answer = async {
        let project = named(q.project);
        let browsed = state.core.archive_browse(project, q.path.unwrap_or_default()).await?;
        let slug = browsed.project.as_ref().map(|p| p.slug.clone());
        let slug = slug.as_deref();
        let path = browsed.path.clone();
        let missing =
            || PageError(StatusCode::NOT_FOUND, format!("The archive holds no {path:?}."));
        let (entries, text, binary_note, raw_href) = match browsed.node {
            None => return Err(missing()),
            Some(Node::Directory { entries, total }) => {
                let rows = entries.iter().map(|e| EntryRow::new(slug, e, &path)).collect();
                let more = (total > entries.len())
                    .then(|| format!("The first {} of {total} entries.", entries.len()));
                (Some(rows), None, more, None)
            }
            Some(Node::File(bytes)) => {
                let raw = slug.map(|s| paths::archive_file(s, &path));
                match String::from_utf8(bytes) {
                    Ok(text) => (None, Some(text), None, raw),
                    Err(e) => {
                        let note = format!("A binary file of {} bytes.", e.as_bytes().len());
                        (None, None, Some(note), raw)
                    }
                }
            }
        };
        Ok(render(&BrowserPage {
            crumbs: crumbs(slug, &path),
            project: slug.map(str::to_string),
            path,
            entries,
            text,
            binary_note,
            raw_href,
        }))
    };
    page(answer.await)
}

#[derive(Deserialize, Default)]
pub(super) struct FileQuery {
    path: Option<String>,
}

/// `GET /mail/archive/browser/{project}/file?path=`: a file of the project's directory as a
/// JSON string (≤10 MB; a path that would leave its place → 400; missing or a directory →
/// 404).
pub(super) async fn file(
    State(state): State<AppState>,
    Path(project): Path<String>,
    Query(q): Query<FileQuery>,
) -> Response {
    let answer = async {
        let path = q.path.unwrap_or_default();
        if path.trim().is_empty() {
            return Err(bad_request("path: name a file of the project's archive.".into()));
        }
        let browsed = state.core.archive_browse(Some(project), path).await?;
        match browsed.node {
            Some(Node::File(bytes)) => Ok(json!(String::from_utf8_lossy(&bytes))),
            _ => Err(PageError(
                StatusCode::NOT_FOUND,
                format!("No file {:?} in the project's archive.", browsed.path),
            )),
        }
    };
    json_answer(answer.await)
}

pub(super) async fn network_page(
    State(state): State<AppState>,
    uri: Uri,
    Query(q): Query<ArchiveQuery>,
) -> Response {
    let answer = async {
        let projects = project_links(&state).await?;
        let key = match named(q.project) {
            Some(key) => key,
            // The first project, or a page saying there is none.
            None => match projects.first() {
                Some(p) => p.slug.clone(),
                None => return Err(PageError(StatusCode::NOT_FOUND, "No project yet.".into())),
            },
        };
        let net = state.core.agent_network(key).await?;
        let (nodes, edges) = network(&net.agents, &net.edges);
        Ok(render(&NetworkPage {
            project_href: paths::project(&net.project.slug),
            slug: net.project.slug,
            size: super::archive_pages::NETWORK_SIZE,
            nodes,
            edges,
            projects,
        }))
    };
    cached(&state, &uri, answer).await
}

#[derive(Deserialize, Default)]
pub(super) struct SnapshotQuery {
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
pub(super) async fn snapshot(
    State(state): State<AppState>,
    Query(q): Query<SnapshotQuery>,
) -> Response {
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
pub(super) async fn time_travel(
    State(state): State<AppState>,
    Query(q): Query<SnapshotQuery>,
) -> Response {
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

pub(super) async fn attachments(
    State(state): State<AppState>,
    uri: Uri,
    Path(project): Path<String>,
) -> Response {
    let answer = async {
        let (project, messages) = state.core.attachment_messages(project).await?;
        let now = Timestamp::now();
        Ok(render(&AttachmentsPage {
            project_href: paths::project(&project.slug),
            messages: messages
                .iter()
                .map(|m| AttachmentMessage::new(&project.slug, m, now))
                .collect(),
            slug: project.slug,
        }))
    };
    cached(&state, &uri, answer).await
}

/// `GET /mail/api/projects/{project}/agents` → `{agents: [names, sorted]}`.
pub(super) async fn agent_names(
    State(state): State<AppState>,
    Path(project): Path<String>,
) -> Response {
    let answer = async {
        let agents = state.core.project_agent_names(project).await?;
        Ok(json!({ "agents": agents }))
    };
    json_answer(answer.await)
}
