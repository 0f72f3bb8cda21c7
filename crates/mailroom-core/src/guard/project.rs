//! Which project a guard is installed for (docs/compat/cli.md §4.3): found where the check
//! will look for its reservations, the server's database (read-only) first, then the archive.
//!
//! An install for a project neither knows would give a guard that never blocks, since no
//! reservation can ever be recorded under its slug; it is refused instead, naming the known
//! projects that look like what was typed.

use std::path::Path;

use crate::error::Result;
use crate::model::similarity::close_matches;
use crate::model::slug::{looks_like_path, normalize_absolute_path, slugify};
use crate::store::copy::DatabaseAt;

use super::hooks::lexical_user_path;

/// How many near matches an unknown project lists, and how alike they must be (the
/// thresholds of the tools' "did you mean").
const SUGGESTIONS: usize = 3;
const SIMILARITY_CUTOFF: f64 = 0.4;

/// A project as the guard is given it: by slug, or by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectKey {
    /// The slug it is archived under, as the server derives it.
    pub slug: String,
    /// The spelling the database may know it by: a path made absolute and normalised
    /// (symlinks not resolved, as the server keys projects), anything else as typed.
    pub human_key: String,
}

impl ProjectKey {
    /// Reads a project key typed by a user: a path (absolute, `~`, `.` or with a separator)
    /// is keyed as the server keys it; anything else is taken as a slug.
    pub fn parse(raw: &str) -> Self {
        let typed = raw.trim();
        if !looks_like_path(typed) {
            return Self { slug: typed.to_string(), human_key: typed.to_string() };
        }
        let absolute = lexical_user_path(typed).to_string_lossy().into_owned();
        let human_key = normalize_absolute_path(&absolute).unwrap_or(absolute);
        Self { slug: slugify(&human_key), human_key }
    }
}

/// What the database and the archive say about a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectLookup {
    /// Known, under this slug (the database's spelling when it knows the project).
    Known(String),
    /// Unknown; the known projects' slugs and human keys most like the key, best first.
    Unknown(Vec<String>),
    /// Neither a database file nor an archive directory exists.
    NoRecords,
}

/// Looks `key` up in the database at `database` (read-only, by slug or human key), then in
/// the archive at `storage_root` (a `projects/<slug>/` directory, for an archive written
/// by another implementation or before the database). A database that exists but cannot
/// be read is an error.
pub fn find_project(
    database: &DatabaseAt,
    storage_root: &Path,
    key: &ProjectKey,
) -> Result<ProjectLookup> {
    let has_database = match database {
        DatabaseAt::Sqlite(path) => path.is_file(),
        DatabaseAt::Postgres(_) => true,
    };
    if !has_database && !storage_root.is_dir() {
        return Ok(ProjectLookup::NoRecords);
    }
    let mut candidates = Vec::new();
    if has_database {
        match database_lookup(database, key)? {
            InDatabase::Known(slug) => return Ok(ProjectLookup::Known(slug)),
            InDatabase::Others(keys) => candidates.extend(keys),
        }
    }
    let projects = storage_root.join("projects");
    if projects.join(&key.slug).is_dir() {
        return Ok(ProjectLookup::Known(key.slug.clone()));
    }
    candidates.extend(archived_slugs(&projects));
    candidates.sort_unstable();
    candidates.dedup();
    let similar = close_matches(
        &key.human_key,
        candidates.iter().map(String::as_str),
        SUGGESTIONS,
        SIMILARITY_CUTOFF,
    );
    Ok(ProjectLookup::Unknown(similar.into_iter().map(str::to_string).collect()))
}

/// What the database says about a project key.
enum InDatabase {
    /// It knows the project, under this slug.
    Known(String),
    /// It does not; every project's slug and human key, for near matches.
    Others(Vec<String>),
}

fn database_lookup(database: &DatabaseAt, key: &ProjectKey) -> Result<InDatabase> {
    let Some(mut reader) = database.reader()? else { return Ok(InDatabase::Others(Vec::new())) };
    reader.read(|db| {
        if let Some(project) = db.project_matching(&key.slug, &[&key.human_key])? {
            return Ok(InDatabase::Known(project.slug));
        }
        let keys = db.project_keys()?;
        Ok(InDatabase::Others(keys.into_iter().flat_map(|(slug, human)| [slug, human]).collect()))
    })
}

/// The names of the archive's project directories (their slugs).
fn archived_slugs(projects: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(projects) else { return Vec::new() };
    entries
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_spelled_as_the_server_spells_them() {
        let by_path = ProjectKey::parse(" /abs//guarded/./x/.. ");
        assert_eq!(
            by_path,
            ProjectKey { slug: "abs-guarded".into(), human_key: "/abs/guarded".into() }
        );
        let by_slug = ProjectKey::parse("abs-guarded");
        assert_eq!(
            by_slug,
            ProjectKey { slug: "abs-guarded".into(), human_key: "abs-guarded".into() }
        );
    }

    #[test]
    fn the_archive_alone_knows_its_project_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let database = DatabaseAt::Sqlite(dir.path().join("none.sqlite3"));
        let root = dir.path().join("archive");
        let key = ProjectKey::parse("/abs/guarded");
        assert_eq!(find_project(&database, &root, &key).expect("lookup"), ProjectLookup::NoRecords);
        std::fs::create_dir_all(root.join("projects/abs-guarded")).expect("mkdir");
        std::fs::create_dir_all(root.join("projects/far-away")).expect("mkdir");
        let found = find_project(&database, &root, &key).expect("lookup");
        assert_eq!(found, ProjectLookup::Known("abs-guarded".into()));
        let typo =
            find_project(&database, &root, &ProjectKey::parse("/abs/guardd")).expect("lookup");
        assert_eq!(typo, ProjectLookup::Unknown(vec!["abs-guarded".into()]));
    }
}
