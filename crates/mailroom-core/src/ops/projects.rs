//! ensure_project.

use serde::Serialize;

use super::Mailroom;
use super::conventions::{Conventions, ProjectKey};
use super::output::ProjectOut;
use super::project_identity::{ProjectIdentity, dir_identity};
use crate::error::{Error, Result};
use crate::model::slug::slugify;
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
        self.ensure_project_with(human_key, Conventions::Agent).await
    }

    /// [`Self::ensure_project`] under `conventions`: REST scripts may also name the project
    /// (an identifier kept as typed, with no directory behind it and so no Git identity).
    pub async fn ensure_project_with(
        &self,
        human_key: &str,
        conventions: Conventions,
    ) -> Result<EnsuredProject> {
        let key = conventions.project_key(human_key)?;
        let slug = slugify(key.as_str());
        let stored = key.as_str().to_string();
        let project = self
            .store
            .write(move |db| db.insert_project_if_absent(&slug, &stored, Timestamp::now()))
            .await?;
        let identity = match key {
            ProjectKey::Path(path) if self.config.worktrees_enabled => {
                let human_key = project.human_key.clone();
                let identity = tokio::task::spawn_blocking(move || dir_identity(&human_key))
                    .await
                    .map_err(|e| Error::internal(format!("identity resolution stopped: {e}")))?;
                Some(ProjectIdentity { canonical_path: path, ..identity })
            }
            _ => None,
        };
        Ok(EnsuredProject { project: ProjectOut::from(&project), identity })
    }
}
