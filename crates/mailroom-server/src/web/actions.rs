//! The web UI's state-changing requests (POST, JSON in and out): the overseer's messages,
//! read marks, deletions, agents retired and projects archived. `protect_page` in `mod.rs` has
//! checked the CSRF token before any of these runs.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use mailroom_core::ops::agents::lifecycle::AgentChange;
use mailroom_core::ops::messaging::deletion::DeleteScope;
use mailroom_core::ops::messaging::overseer::OverseerMessage;
use mailroom_core::records::{AgentId, MessageId, ProjectId};
use serde::Deserialize;
use serde_json::json;

use super::{PageError, bad_request, body, json_answer};
use crate::state::AppState;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverseerBody {
    recipients: Vec<String>,
    subject: String,
    body_md: String,
    #[serde(default)]
    thread_id: Option<String>,
}

/// `POST /mail/{project}/overseer/send` → `{success, message_id, recipients, sent_at}`.
pub(super) async fn overseer_send(
    State(state): State<AppState>,
    Path(project): Path<String>,
    bytes: Bytes,
) -> Response {
    let answer = async {
        let b: OverseerBody = body(&bytes)?;
        let message = OverseerMessage {
            project_key: project,
            recipients: b.recipients,
            subject: b.subject,
            body_md: b.body_md,
            thread_id: b.thread_id,
        };
        Ok(state.core.overseer_send(message).await?)
    };
    json_answer(answer.await)
}

/// `POST /mail/{project}/inbox/{agent}/mark-read {message_ids}`.
pub(super) async fn mark_read(
    State(state): State<AppState>,
    Path((project, agent)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    let answer = async {
        let b: MessageIdsBody = body(&bytes)?;
        let ids = b.message_ids.into_iter().map(MessageId).collect();
        Ok(state.core.mark_read_from_ui(project, agent, Some(ids)).await?)
    };
    json_answer(answer.await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentIdBody {
    agent_id: i64,
}

pub(super) async fn retire_agent(State(state): State<AppState>, bytes: Bytes) -> Response {
    change_agent(state, bytes, AgentChange::Retire).await
}

pub(super) async fn unretire_agent(State(state): State<AppState>, bytes: Bytes) -> Response {
    change_agent(state, bytes, AgentChange::Unretire).await
}

/// `POST /mail/api/{retire,unretire}-agent {agent_id}` → `{success, agent_id, status}`.
async fn change_agent(state: AppState, bytes: Bytes, change: AgentChange) -> Response {
    let answer = async {
        let b: AgentIdBody = body(&bytes)?;
        let changed = state.core.change_agent_by_id(AgentId(b.agent_id), change).await?;
        Ok(json!({ "success": true, "agent_id": b.agent_id, "status": changed.status }))
    };
    json_answer(answer.await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectIdBody {
    project_id: i64,
}

pub(super) async fn archive_project(State(state): State<AppState>, bytes: Bytes) -> Response {
    set_archived(state, bytes, true).await
}

pub(super) async fn unarchive_project(State(state): State<AppState>, bytes: Bytes) -> Response {
    set_archived(state, bytes, false).await
}

/// `POST /mail/api/{archive,unarchive}-project {project_id}` → `{success, project_id, status}`.
async fn set_archived(state: AppState, bytes: Bytes, archived: bool) -> Response {
    let answer = async {
        let b: ProjectIdBody = body(&bytes)?;
        let id = ProjectId(b.project_id);
        let changed = state.core.set_project_archived_by_id(id, archived).await?;
        Ok(json!({ "success": true, "project_id": b.project_id, "status": changed.status }))
    };
    json_answer(answer.await)
}

/// `POST /mail/{project}/inbox/{agent}/mark-all-read`.
pub(super) async fn mark_all_read(
    State(state): State<AppState>,
    Path((project, agent)): Path<(String, String)>,
) -> Response {
    json_answer(state.core.mark_read_from_ui(project, agent, None).await.map_err(PageError::from))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageIdsBody {
    message_ids: Vec<i64>,
}

/// `POST /mail/api/delete-messages {message_ids}` → `{success, deleted_count,
/// git_files_removed}`: messages of any project.
pub(super) async fn delete_messages(State(state): State<AppState>, bytes: Bytes) -> Response {
    delete(state, bytes, DeleteScope::Any).await
}

/// `POST /mail/{project}/inbox/{agent}/delete-messages {message_ids}`: only messages that
/// agent received in that project; the answer names both.
pub(super) async fn delete_from_inbox(
    State(state): State<AppState>,
    Path((project_key, agent_name)): Path<(String, String)>,
    bytes: Bytes,
) -> Response {
    delete(state, bytes, DeleteScope::Inbox { project_key, agent_name }).await
}

async fn delete(state: AppState, bytes: Bytes, scope: DeleteScope) -> Response {
    let answer = async {
        let b: MessageIdsBody = body(&bytes)?;
        let ids = b.message_ids.into_iter().map(MessageId).collect();
        Ok(state.core.delete_messages(ids, scope).await?)
    };
    json_answer(answer.await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SiblingBody {
    status: String,
}

/// `POST /mail/api/projects/{project_id}/siblings/{other_id} {status}` → `{success,
/// project_id, other_id, status, score}` (the pair is created when missing).
pub(super) async fn sibling_status(
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
