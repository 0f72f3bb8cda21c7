//! install_precommit_guard / uninstall_precommit_guard: the Git commit guard's hooks in an
//! agent's code repository (docs/compat/tools.md §2.3–2.4, docs/compat/cli.md §4).

use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::guard::Hook;
use crate::guard::hooks::{self, HookDatabase, PluginTarget};
use crate::ops::{Mailroom, resolve};

/// Result of install_precommit_guard.
#[derive(Debug, Clone, Serialize)]
pub struct GuardInstalled {
    /// Absolute path of the installed `pre-commit` hook; empty when the guard is disabled.
    pub hook: String,
}

/// Result of uninstall_precommit_guard.
#[derive(Debug, Clone, Serialize)]
pub struct GuardRemoved {
    /// Whether any guard file was removed.
    pub removed: bool,
}

impl Mailroom {
    /// Installs the pre-commit chain-runner and the guard plugin in the repository at
    /// `code_repo_path`, checking the reservations of `project_key`. A no-op returning an
    /// empty hook path unless worktrees are enabled (as the reference).
    pub async fn install_precommit_guard(
        &self,
        project_key: String,
        code_repo_path: String,
    ) -> Result<GuardInstalled> {
        if !self.config.worktrees_enabled {
            return Ok(GuardInstalled { hook: String::new() });
        }
        let project = self.store.read(move |db| resolve::project(db, &project_key)).await?;
        // The hook runs this very binary: the server is the `mailroom` executable.
        let program = std::env::current_exe()
            .map_err(|e| Error::internal(format!("cannot locate the mailroom binary: {e}")))?;
        let target = PluginTarget {
            program,
            reservations_dir: reservations_dir(&self.config.storage_root, &project.slug),
            database: Some(hook_database(&self.config)),
        };
        let chain = tokio::task::spawn_blocking(move || {
            let repo = hooks::user_path(&code_repo_path);
            let hooks_dir = hooks::hooks_dir_for_install(&repo, "code_repo_path")?;
            hooks::install_for_repository(&repo, &hooks_dir, Hook::PreCommit, &target)
        })
        .await
        .map_err(|e| Error::internal(format!("guard install failed: {e}")))??;
        Ok(GuardInstalled { hook: chain.to_string_lossy().into_owned() })
    }

    /// Removes the guard from the repository at `code_repo_path` (docs/compat/cli.md §4.4).
    pub async fn uninstall_precommit_guard(&self, code_repo_path: String) -> Result<GuardRemoved> {
        let removed = tokio::task::spawn_blocking(move || {
            let repo = hooks::user_path(&code_repo_path);
            hooks::uninstall(&hooks::resolve_hooks_dir(&repo))
        })
        .await
        .map_err(|e| Error::internal(format!("guard uninstall failed: {e}")))??;
        Ok(GuardRemoved { removed })
    }
}

/// How the hooks name the server's database: SQLite's file, or on PostgreSQL the data
/// directory (whose settings name it), both absolute: the hook runs from the code repository.
pub fn hook_database(config: &crate::CoreConfig) -> HookDatabase {
    let file =
        std::path::absolute(&config.database_path).unwrap_or_else(|_| config.database_path.clone());
    match (&config.postgres, file.parent()) {
        (Some(_), Some(data_dir)) => HookDatabase::DataDir(data_dir.to_path_buf()),
        _ => HookDatabase::File(file),
    }
}

/// Where a project's reservation JSON files live in the archive (docs/compat/archive.md §6), as an
/// absolute path: the hook runs from the code repository, not from the server's directory.
pub fn reservations_dir(storage_root: &std::path::Path, slug: &str) -> PathBuf {
    let dir = storage_root.join("projects").join(slug).join("file_reservations");
    std::path::absolute(&dir).unwrap_or(dir)
}
