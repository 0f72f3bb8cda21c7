//! Copies of the database taken while a server may go on using it: before destructive
//! operations (the hard deletes from the command line), and the snapshots of saved states
//! (`mailroom archive save`), which may keep only some projects.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::records::Project;
use crate::store::{self, Reader};

/// Writes a consistent, compacted copy of the database at `database` to `dest`, which must not
/// exist, without locking out a server that uses it.
pub fn copy_database(database: &Path, dest: &Path) -> Result<()> {
    Reader::open(database)?.copy_to(dest)
}

/// A project a copy keeps, as a saved state's metadata names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptProject {
    pub slug: String,
    pub human_key: String,
}

/// What a copy holds after [`keep_projects`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyScope {
    /// The projects left, in the order they were created.
    pub kept: Vec<KeptProject>,
    /// How many projects were deleted from the copy.
    pub removed: usize,
    /// The agents left.
    pub agents: usize,
}

/// Keeps in the database copy at `copy` (one no server uses) only the projects `names` name,
/// by slug or human key, compared case-insensitively; every other project goes with all its
/// rows, as hard_delete_project deletes them, and the file is compacted so no trace of them
/// stays in its free pages. No names keeps every project and changes nothing. A name no
/// project has is an error, and the copy is left as it was.
pub fn keep_projects(copy: &Path, names: &[String]) -> Result<CopyScope> {
    let projects = Reader::open(copy)?.read(|db| db.all_projects())?;
    let mut keep = vec![names.is_empty(); projects.len()];
    for name in names {
        let lower = name.to_lowercase();
        let found = projects
            .iter()
            .position(|p| p.slug.to_lowercase() == lower || p.human_key.to_lowercase() == lower);
        match found {
            Some(index) => keep[index] = true,
            None => return Err(unknown_project(name, &projects)),
        }
    }
    let (kept, removed): (Vec<_>, Vec<_>) =
        projects.into_iter().zip(keep).partition(|(_, keep)| *keep);
    if !removed.is_empty() {
        store::edit_database(copy, |db| {
            removed.iter().try_for_each(|(project, _)| db.hard_delete_project(project.id).map(drop))
        })?;
    }
    let agents = Reader::open(copy)?.read(|db| db.agent_ids())?.len();
    Ok(CopyScope {
        kept: kept
            .into_iter()
            .map(|(p, _)| KeptProject { slug: p.slug, human_key: p.human_key })
            .collect(),
        removed: removed.len(),
        agents,
    })
}

fn unknown_project(name: &str, projects: &[Project]) -> Error {
    let known: Vec<&str> = projects.iter().map(|p| p.slug.as_str()).collect();
    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
    Error::not_found(format!("no project is named {name:?} (by slug or human key; known: {known})"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::CoreConfig;
    use crate::ops::Mailroom;

    /// A database in `dir` with `projects`, and the path of its copy (made once).
    async fn copied(dir: &Path, projects: &[&str]) -> (PathBuf, PathBuf) {
        let mut config = CoreConfig::for_data_dir(dir);
        config.archive.enabled = false;
        let database = config.database_path.clone();
        let core = Mailroom::open(config).expect("open");
        for project in projects {
            core.ensure_project(project).await.expect("project");
        }
        let copy = dir.join("copy.sqlite3");
        copy_database(&database, &copy).expect("copy");
        (database, copy)
    }

    #[tokio::test]
    async fn the_copy_holds_what_the_database_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (database, dest) = copied(dir.path(), &["/work/backed-up"]).await;
        let copied =
            Reader::open(&dest).expect("open copy").read(|db| db.all_projects()).expect("read");
        assert_eq!(copied.len(), 1);
        assert!(copy_database(&database, &dest).is_err(), "an existing file is not overwritten");
    }

    #[tokio::test]
    async fn a_scoped_copy_keeps_only_the_named_projects() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_, copy) = copied(dir.path(), &["/work/kept", "/work/dropped"]).await;

        let unknown = keep_projects(&copy, &["/work/nowhere".to_owned()]).expect_err("unknown");
        assert!(unknown.message.contains("work-kept, work-dropped"), "{}", unknown.message);
        let all = keep_projects(&copy, &[]).expect("no names");
        assert_eq!((all.kept.len(), all.removed), (2, 0));
        let scope = keep_projects(&copy, &["/WORK/KEPT".to_owned()]).expect("scope");
        let kept = KeptProject { slug: "work-kept".to_owned(), human_key: "/work/kept".to_owned() };
        assert_eq!((scope.kept, scope.removed, scope.agents), (vec![kept], 1, 0));
        let left = Reader::open(&copy).expect("open").read(|db| db.all_projects()).expect("read");
        assert_eq!(left.iter().map(|p| p.slug.as_str()).collect::<Vec<_>>(), ["work-kept"]);
    }
}
