//! Projects: ensure_project, the project list and a project's detail (docs/compat/resources.md
//! §3), with their identity, lifecycle, fleet view and siblings in the modules below.

pub mod adopt;
pub mod fleet;
pub mod identity;
pub mod lifecycle;
pub mod siblings;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::fnmatch::fnmatch;
use crate::model::slug::slugify;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::conventions::{Conventions, ProjectKey};
use crate::ops::output::{AgentBase, ProjectOut};
use crate::ops::projects::identity::{ProjectIdentity, dir_identity};
use crate::ops::resolve;
use crate::records::Project;

/// Result of ensure_project.
#[derive(Debug, Clone, Serialize)]
pub struct EnsuredProject {
    #[serde(flatten)]
    pub project: ProjectOut,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ProjectIdentity>,
}

/// A project with every agent (retired ones included), in id order.
#[derive(Debug, Serialize)]
pub struct ProjectDetail {
    #[serde(flatten)]
    pub project: ProjectOut,
    pub agents: Vec<AgentBase>,
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

    /// Every project, oldest first, except those whose slug or human key matches one of
    /// `RETENTION_IGNORE_PROJECT_PATTERNS` (demo and test projects, by default).
    pub async fn list_projects(&self) -> Result<Vec<ProjectOut>> {
        let hidden = self.config.retention_ignore_project_patterns.clone();
        let shown = move |p: &Project| {
            !hidden
                .iter()
                .any(|pattern| fnmatch(&p.slug, pattern) || fnmatch(&p.human_key, pattern))
        };
        self.store
            .read(move |db| {
                Ok(db.all_projects()?.iter().filter(|p| shown(p)).map(ProjectOut::from).collect())
            })
            .await
    }

    /// A project (by slug, human key or path) with all its agents.
    pub async fn project_detail(&self, project_key: String) -> Result<ProjectDetail> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agents =
                    db.agents_of_project(project.id)?.iter().map(AgentBase::from).collect();
                Ok(ProjectDetail { project: ProjectOut::from(&project), agents })
            })
            .await
    }
}
