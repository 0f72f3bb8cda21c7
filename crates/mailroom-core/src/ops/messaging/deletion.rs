//! Deleting messages from the web UI: the rows (recipients, message, search index) in one
//! transaction, and their archive copies in one commit `delete: N message(s) via web UI`,
//! queued with the deletion so that a crash between the two loses neither.

use serde::Serialize;

use crate::archive::message_files;
use crate::error::Result;
use crate::ops::Mailroom;
use crate::ops::messaging::inbox::check_ids;
use crate::ops::resolve::project_agent;
use crate::records::MessageId;
use crate::store::db::archive_queue::Deletion;

/// What a deletion did.
#[derive(Debug, Clone, Serialize)]
pub struct Deleted {
    pub success: bool,
    /// Messages deleted (ids that named no message, or none the inbox holds, are passed over).
    pub deleted_count: usize,
    /// Archive files the deletion's commit removes (canonical, outbox and inbox copies).
    pub git_files_removed: usize,
    /// The inbox deleted from, for a deletion from one agent's inbox.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// Whose messages a deletion may touch.
#[derive(Debug, Clone)]
pub enum DeleteScope {
    /// Any message, in any project.
    Any,
    /// Only messages this agent received in this project.
    Inbox { project_key: String, agent_name: String },
}

impl Mailroom {
    /// Deletes `ids` (1 to 500) within `scope`: their rows now, their archive files
    /// in one commit that follows.
    pub async fn delete_messages(
        &self,
        ids: Vec<MessageId>,
        scope: DeleteScope,
    ) -> Result<Deleted> {
        check_ids(&ids)?;
        self.admit_archive_work().await?;
        self.store
            .write(move |db| {
                let inbox = match &scope {
                    DeleteScope::Any => None,
                    DeleteScope::Inbox { project_key, agent_name } => {
                        Some(project_agent(db, project_key, agent_name)?)
                    }
                };
                let mut deleted = Vec::new();
                let mut paths = Vec::new();
                for id in ids {
                    if deleted.contains(&id) {
                        continue;
                    }
                    let Some((slug, files)) = message_files(db, id)? else { continue };
                    if let Some((project, agent)) = &inbox
                        && (slug != project.slug || db.receipt(id, agent.id)?.is_none())
                    {
                        continue;
                    }
                    db.delete_message(id)?;
                    paths.extend(files);
                    deleted.push(id);
                }
                let git_files_removed = if deleted.is_empty() || !db.archive_enabled() {
                    0
                } else {
                    paths.sort();
                    paths.dedup();
                    let count = paths.len();
                    db.enqueue_archive_deletion(
                        deleted.len() as i64,
                        &Deletion { paths, via: None },
                    )?;
                    count
                };
                Ok(Deleted {
                    success: true,
                    deleted_count: deleted.len(),
                    git_files_removed,
                    agent: inbox.as_ref().map(|(_, agent)| agent.name.clone()),
                    project: inbox.map(|(project, _)| project.slug),
                })
            })
            .await
    }
}
