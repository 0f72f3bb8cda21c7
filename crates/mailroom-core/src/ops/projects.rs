//! ensure_project.

use serde::Serialize;

use super::Mailroom;
use super::output::ProjectOut;
use crate::error::{Error, Result};
use crate::model::slug::{normalize_absolute_path, project_uid_for_path, slugify};
use crate::model::time::Timestamp;

/// The identity fields the reference adds when worktrees are enabled (semantics §1).
/// Git-based identity modes arrive with the worktrees issue; `dir` mode fills these.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectIdentity {
    pub identity_mode_used: &'static str,
    pub canonical_path: String,
    pub repo_root: Option<String>,
    pub git_common_dir: Option<String>,
    pub branch: Option<String>,
    pub worktree_name: Option<String>,
    pub core_ignorecase: Option<bool>,
    pub normalized_remote: Option<String>,
    pub project_uid: String,
    pub discovery: Option<serde_json::Value>,
}

/// Result of ensure_project.
#[derive(Debug, Clone, Serialize)]
pub struct EnsuredProject {
    #[serde(flatten)]
    pub project: ProjectOut,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ProjectIdentity>,
}

impl Mailroom {
    /// Creates the project for an absolute directory path, or returns the existing one.
    pub async fn ensure_project(&self, human_key: &str) -> Result<EnsuredProject> {
        let Some(path) = normalize_absolute_path(human_key.trim()) else {
            return Err(Error::value_error(format!(
                "human_key must be an absolute directory path (got '{human_key}'); pass the \
                 absolute path of your project's working directory"
            )));
        };
        let slug = slugify(&path);
        let key = path.clone();
        let project = self
            .store
            .write(move |db| db.insert_project_if_absent(&slug, &key, Timestamp::now()))
            .await?;
        let identity = self.config.worktrees_enabled.then(|| ProjectIdentity {
            identity_mode_used: "dir",
            project_uid: project_uid_for_path(&project.human_key),
            canonical_path: path,
            repo_root: None,
            git_common_dir: None,
            branch: None,
            worktree_name: None,
            core_ignorecase: None,
            normalized_remote: None,
            discovery: None,
        });
        Ok(EnsuredProject { project: ProjectOut::from(&project), identity })
    }
}
