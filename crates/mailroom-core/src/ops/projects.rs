//! ensure_project.

use serde::Serialize;

use super::Mailroom;
use super::output::ProjectOut;
use super::project_identity::{ProjectIdentity, dir_identity};
use crate::error::{Error, Result};
use crate::model::slug::{normalize_absolute_path, slugify};
use crate::model::time::Timestamp;

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
        let identity = if self.config.worktrees_enabled {
            let human_key = project.human_key.clone();
            let identity = tokio::task::spawn_blocking(move || dir_identity(&human_key))
                .await
                .map_err(|e| Error::internal(format!("identity resolution stopped: {e}")))?;
            Some(ProjectIdentity { canonical_path: path, ..identity })
        } else {
            None
        };
        Ok(EnsuredProject { project: ProjectOut::from(&project), identity })
    }
}
