//! `mailroom projects adopt SOURCE TARGET`: merges a legacy project into another project of
//! the same Git repository, as the reference's command does. Two projects qualify when their
//! directories resolve to one Git common dir (a repository's main work tree and its `git
//! worktree add` checkouts, or paths inside one repository), which is what `WORKTREES_ENABLED`
//! projects are keyed by: a project made for one work tree before the gate was on is the
//! legacy one.
//!
//! The source's rows (agents, messages, reservations, contact links, window identities,
//! summaries, product links) move to the target and the source's project row goes, in one
//! transaction; inside it the archive's `projects/<old>/` moves to `projects/<new>/` in one
//! Git commit, and `projects/<new>/aliases.json` records the old slug (archive/adopt.rs). A
//! failed commit rolls the rows back. Agent names the two projects share (ignoring case)
//! abort it before anything changes.
//!
//! It must run with the server stopped: only the archive's owner may commit to it, and a
//! server's caches of projects and agents would go on naming the source. The plan (a dry
//! run) only reads, and may run beside a server.

use std::path::Path;

use serde::Serialize;

use super::identity::dir_identity;
use crate::archive::adopt::{self, MovedFiles};
use crate::config::CoreConfig;
use crate::error::{Category, Error, Result};
use crate::ops::resolve;
use crate::records::{Project, ProjectId};
use crate::store::db::adopt::{AdoptCounts, Adoption};
use crate::store::{DirectWriter, Reader};

/// A project of an adoption.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    #[serde(skip)]
    pub id: ProjectId,
    pub slug: String,
    pub human_key: String,
}

impl From<Project> for Side {
    fn from(project: Project) -> Self {
        Side { id: project.id, slug: project.slug, human_key: project.human_key }
    }
}

/// What an adoption would do (the dry run), or did.
#[derive(Debug, Clone, Serialize)]
pub struct AdoptPlan {
    pub source: Side,
    pub target: Side,
    /// The Git common dir both projects' directories resolve to.
    pub git_common_dir: String,
    /// Rows moved or dropped, per step (`*_dropped`: the target's stand).
    pub rows: RowCounts,
    /// Committed archive files under `projects/<source>/`.
    pub archive_files: usize,
    /// `aliases.json`'s `former_slugs` after the adoption.
    pub former_slugs: Vec<String>,
    /// The archive commit (applied only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<MovedFiles>,
}

/// The steps' rows in their order, serialised as an object.
#[derive(Debug, Clone, Default)]
pub struct RowCounts(pub AdoptCounts);

impl Serialize for RowCounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, n)| (*name, *n)))
    }
}

/// Works out what adopting `source` into `target` (each a project key or slug) would do;
/// refuses projects of different repositories, one project twice, and shared agent names.
/// Reads only.
pub fn plan_adopt(config: &CoreConfig, source: &str, target: &str) -> Result<AdoptPlan> {
    let mut reader = Reader::for_config(config)?;
    let (source, target) = reader.read(|db| {
        let source = Side::from(resolve::project(db, source)?);
        let target = Side::from(resolve::project(db, target)?);
        Ok((source, target))
    })?;
    if source.id == target.id {
        return Err(Error::invalid(format!("{} is one project, not two", source.slug)));
    }
    let git_common_dir = same_repository(&source, &target)?;
    let rows = reader.read(|db| {
        refuse_clashes(&db.agent_name_clashes(source.id, target.id)?, &source, &target)?;
        db.adoption_counts(&adoption(&source, &target))
    })?;
    let (archive_files, source_aliases) = if config.archive.enabled {
        adopt::project_files(&config.storage_root, &source.slug)?
    } else {
        (0, Vec::new())
    };
    let (_, mut former_slugs) = if config.archive.enabled {
        adopt::project_files(&config.storage_root, &target.slug)?
    } else {
        (0, Vec::new())
    };
    for slug in std::iter::once(source.slug.clone()).chain(source_aliases) {
        if !former_slugs.contains(&slug) && slug != target.slug {
            former_slugs.push(slug);
        }
    }
    Ok(AdoptPlan {
        source,
        target,
        git_common_dir,
        rows: RowCounts(rows),
        archive_files,
        former_slugs,
        archive: None,
    })
}

/// Carries out `plan` (from [`plan_adopt`]): the rows in one transaction, the archive's move
/// in one commit inside it. The caller holds the data directory's locks (no server runs).
pub fn adopt(config: &CoreConfig, plan: &AdoptPlan) -> Result<AdoptPlan> {
    let (source, target) = (&plan.source, &plan.target);
    let archive_on = config.archive.enabled;
    let mut done = plan.clone();
    DirectWriter::for_config(config, archive_on)?.write(|db| {
        let queued = db.queued_archive_work(0, 1)?;
        if !queued.is_empty() {
            return Err(Error::new(
                Category::Conflict,
                "ARCHIVE_WORK_QUEUED",
                "archive work is still queued in the database: start the server and stop it \
                 (it commits the queue when it stops), then adopt",
            ));
        }
        // Checked again inside the transaction: the plan may be older than the rows.
        refuse_clashes(&db.agent_name_clashes(source.id, target.id)?, source, target)?;
        let adoption = adoption(source, target);
        let touched = db.projects_touched_by_adoption(&adoption)?;
        done.rows = RowCounts(db.adopt_project(&adoption)?);
        if archive_on {
            let moved = adopt::move_project(config, db, &source.slug, &target.slug, &touched)?;
            done.archive = Some(moved);
        }
        Ok(())
    })?;
    Ok(done)
}

fn adoption<'a>(source: &'a Side, target: &'a Side) -> Adoption<'a> {
    Adoption {
        source: source.id,
        target: target.id,
        source_slug: &source.slug,
        target_slug: &target.slug,
    }
}

fn refuse_clashes(clashes: &[String], source: &Side, target: &Side) -> Result<()> {
    if clashes.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Category::Conflict,
        "AGENT_NAME_CLASH",
        format!(
            "{} and {} both have agents named {} (names are compared ignoring case): \
             nothing was changed; rename or delete one of each pair first",
            source.slug,
            target.slug,
            clashes.join(", ")
        ),
    ))
}

/// The Git common dir both projects' directories resolve to, or why they do not qualify.
fn same_repository(source: &Side, target: &Side) -> Result<String> {
    let common = |side: &Side| -> Result<String> {
        let dir = dir_identity(&side.human_key).git_common_dir.ok_or_else(|| {
            Error::invalid(format!(
                "{} ({}) is not inside a Git repository (or its directory is gone): adopt \
                 merges projects of one repository",
                side.slug, side.human_key
            ))
        })?;
        let canonical = Path::new(&dir).canonicalize().map_or(dir, |p| p.display().to_string());
        Ok(canonical)
    };
    let (from, to) = (common(source)?, common(target)?);
    if from != to {
        return Err(Error::invalid(format!(
            "{} and {} are not in the same Git repository (common dirs {from} and {to}): \
             adopt merges only a repository's own projects",
            source.slug, target.slug
        )));
    }
    Ok(from)
}
