//! The archive as the web UI shows it: its history, a commit's diff, its files, an agent's
//! inbox at a past moment, and from the database, who writes to whom and the messages with
//! attachments. Git is read on a blocking thread, with a handle of its own.

use serde::Serialize;

use super::Mailroom;
use super::output::{MessageOut, ProjectOut};
use super::resolve::{self, project_agent};
use crate::archive::browse::{self, CommitDiff, CommitSummary, Node, Snapshot};
use crate::archive::format::canonical_message_path;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;

/// Most commits an activity list shows.
pub const MAX_ACTIVITY: usize = 500;
/// A commit's patch is cut here (the reference's limit).
pub const MAX_PATCH_BYTES: usize = 5 << 20;
/// Largest file the browser shows (the reference's limit).
pub const MAX_FILE_BYTES: usize = 10 << 20;
/// Messages the attachments page lists.
const ATTACHMENT_MESSAGES: i64 = 200;

/// A path of the archive and what HEAD holds there.
#[derive(Debug, Clone)]
pub struct Browsed {
    /// The project whose directory the path is in, when one was named.
    pub project: Option<ProjectOut>,
    /// The path, relative to the project's directory (or the archive's root).
    pub path: String,
    /// `None` when HEAD has no such path.
    pub node: Option<Node>,
}

/// Who wrote to whom in a project.
#[derive(Debug, Clone, Serialize)]
pub struct Network {
    pub project: ProjectOut,
    /// Every agent that sent or received, sorted.
    pub agents: Vec<String>,
    /// (sender, recipient, messages), most messages first.
    pub edges: Vec<(String, String, i64)>,
}

impl Mailroom {
    /// The archive's root, or an error saying it is off.
    fn archive_root(&self) -> Result<std::path::PathBuf> {
        match &self.archive {
            Some(archive) => Ok(archive.root().to_path_buf()),
            None => Err(Error::not_found("The Git archive is off on this server.")),
        }
    }

    /// The newest `limit` (1..=[`MAX_ACTIVITY`]) archive commits, of one project when named.
    pub async fn archive_activity(
        &self,
        limit: usize,
        project_key: Option<String>,
    ) -> Result<(Option<ProjectOut>, Vec<CommitSummary>)> {
        let root = self.archive_root()?;
        let project = match project_key {
            Some(key) => Some(self.project_by_key(key).await?),
            None => None,
        };
        let prefix = project.as_ref().map(|p| format!("projects/{}", p.slug));
        let limit = limit.clamp(1, MAX_ACTIVITY);
        let commits = blocking(move || browse::activity(&root, limit, prefix.as_deref())).await?;
        Ok((project, commits))
    }

    /// One archive commit and its diff (cut at [`MAX_PATCH_BYTES`]).
    pub async fn archive_commit(&self, sha: String) -> Result<CommitDiff> {
        let root = self.archive_root()?;
        blocking(move || browse::commit_diff(&root, sha.trim(), MAX_PATCH_BYTES)).await
    }

    /// What HEAD holds at `path`, inside the project's directory when one is named.
    pub async fn archive_browse(
        &self,
        project_key: Option<String>,
        path: String,
    ) -> Result<Browsed> {
        let root = self.archive_root()?;
        let path = browse::checked_path(&path)?.to_string();
        let project = match project_key {
            Some(key) => Some(self.project_by_key(key).await?),
            None => None,
        };
        let full = match (&project, path.as_str()) {
            (Some(p), "") => format!("projects/{}", p.slug),
            (Some(p), rest) => format!("projects/{}/{rest}", p.slug),
            (None, rest) => rest.to_string(),
        };
        let node = blocking(move || browse::browse(&root, &full, MAX_FILE_BYTES)).await?;
        Ok(Browsed { project, path, node })
    }

    /// An agent's inbox as the last archive commit at or before `moment` held it; `None`
    /// when the archive has no commit that old.
    pub async fn archive_snapshot(
        &self,
        project_key: String,
        agent_name: String,
        moment: Timestamp,
    ) -> Result<Option<Snapshot>> {
        let root = self.archive_root()?;
        // The agent as stored (names match whatever their case); unknown ones are 404.
        let (slug, name) = self
            .store
            .read_short(move |db| {
                let (project, agent) = project_agent(db, &project_key, &agent_name)?;
                Ok((project.slug, agent.name))
            })
            .await?;
        let inbox = format!("projects/{slug}/agents/{name}/inbox");
        blocking(move || browse::snapshot(&root, &inbox, moment)).await
    }

    /// Who wrote to whom in a project.
    pub async fn agent_network(&self, project_key: String) -> Result<Network> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let edges = db.message_network(project.id)?;
                let mut agents: Vec<String> =
                    edges.iter().flat_map(|(from, to, _)| [from.clone(), to.clone()]).collect();
                agents.sort();
                agents.dedup();
                Ok(Network { project: ProjectOut::from(&project), agents, edges })
            })
            .await
    }

    /// A project's agents' names, sorted.
    pub async fn project_agent_names(&self, project_key: String) -> Result<Vec<String>> {
        self.store
            .read_short(move |db| {
                let project = resolve::project(db, &project_key)?;
                let mut names: Vec<String> =
                    db.agents_of_project(project.id)?.into_iter().map(|a| a.name).collect();
                names.sort();
                Ok(names)
            })
            .await
    }

    /// The newest messages of a project that carry attachments (with their metadata).
    pub async fn attachment_messages(
        &self,
        project_key: String,
    ) -> Result<(ProjectOut, Vec<MessageOut>)> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let messages = db
                    .attachment_messages(project.id, ATTACHMENT_MESSAGES)?
                    .iter()
                    .map(|row| MessageOut::from_listing(row, false))
                    .collect();
                Ok((ProjectOut::from(&project), messages))
            })
            .await
    }

    /// The archive commit that last wrote a message's canonical file, when the archive is on
    /// and has committed it (best-effort: a failing lookup is logged and answers `None`).
    pub async fn message_commit(&self, project_slug: &str, message: &MessageOut) -> Option<String> {
        let path =
            canonical_message_path(project_slug, message.created_ts, &message.subject, message.id);
        let mut found = self.last_commits_of(vec![path.clone()]).await?;
        found.remove(&path).map(|commit| commit.hexsha)
    }
}

/// Runs a Git read on a blocking thread.
async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| Error::internal(format!("archive read stopped: {e}")))?
}
