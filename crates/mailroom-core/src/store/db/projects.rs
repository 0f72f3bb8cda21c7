//! Queries on `projects`.

use super::Db;
use super::driver::{Row, args};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{Project, ProjectId};

const COLUMNS: &str = "id, slug, human_key, created_at, archived_at";

fn project(row: &Row<'_>) -> Result<Project> {
    Ok(Project {
        id: row.get(0)?,
        slug: row.get(1)?,
        human_key: row.get(2)?,
        created_at: row.get(3)?,
        archived_at: row.get(4)?,
    })
}

impl Db<'_> {
    /// The project whose slug or human key matches any of the given spellings: the slug's
    /// (unique) first, else the oldest with a matching human key.
    pub fn project_matching(&self, slug: &str, keys: &[&str]) -> Result<Option<Project>> {
        self.matching_project(COLUMNS, project, slug, keys)
    }

    /// The id of [`Self::project_matching`]'s project, without reading the rest of its row
    /// (an inbox read needs only the id).
    pub fn project_id_matching(&self, slug: &str, keys: &[&str]) -> Result<Option<ProjectId>> {
        self.matching_project("id", |row| row.get(0), slug, keys)
    }

    /// `columns` of the matching project, read by `read`.
    ///
    /// Two point lookups, not one query with `OR`: SQLite answers that with three index
    /// searches, a row set and a sort, on every tool call that names a project.
    fn matching_project<T>(
        &self,
        columns: &str,
        read: fn(&Row<'_>) -> Result<T>,
        slug: &str,
        keys: &[&str],
    ) -> Result<Option<T>> {
        let by_slug = format!("SELECT {columns} FROM projects WHERE slug = ?1");
        let found = self.query_opt(&by_slug, args![slug], read)?;
        if found.is_some() {
            return Ok(found);
        }
        let by_key = format!(
            "SELECT {columns} FROM projects WHERE human_key IN (?1, ?2) ORDER BY id LIMIT 1"
        );
        let key_a = keys.first().copied().unwrap_or(slug);
        let key_b = keys.get(1).copied().unwrap_or(key_a);
        self.query_opt(&by_key, args![key_a, key_b], read)
    }

    /// The project with this id.
    pub fn project_by_id(&self, id: ProjectId) -> Result<Option<Project>> {
        let sql = format!("SELECT {COLUMNS} FROM projects WHERE id = ?1");
        self.query_opt(&sql, args![id], project)
    }

    /// Inserts a project unless its slug exists; returns the stored row either way.
    pub fn insert_project_if_absent(
        &self,
        slug: &str,
        human_key: &str,
        now: Timestamp,
    ) -> Result<Project> {
        self.execute(
            "INSERT INTO projects (slug, human_key, created_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (slug) DO NOTHING",
            args![slug, human_key, now],
        )?;
        let sql = format!("SELECT {COLUMNS} FROM projects WHERE slug = ?1");
        self.query_row(&sql, args![slug], project)
    }

    /// Every project's slug and human key, for "did you mean" suggestions.
    pub fn project_keys(&self) -> Result<Vec<(String, String)>> {
        self.query_vec("SELECT slug, human_key FROM projects ORDER BY id", args![], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
    }

    /// Every project, oldest first.
    pub fn all_projects(&self) -> Result<Vec<Project>> {
        let sql = format!("SELECT {COLUMNS} FROM projects ORDER BY created_at, id");
        self.query_vec(&sql, args![], project)
    }
}
