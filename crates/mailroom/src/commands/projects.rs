//! `mailroom projects mark-identity | discovery-init PATH`: the files that pin a repository's
//! project identity (the reference's commands): `.agent-mail-project-id` (its first line is
//! the project uid, committed so every clone and worktree resolves to one project) and
//! `.agent-mail.yaml` (`project_uid:` and optionally `product_uid:`), at the repository's root.
//! And `projects adopt SOURCE TARGET`: a legacy project of a repository merged into another
//! of the same repository (ops/projects/adopt.rs), a dry run unless `--apply`, which needs
//! the server stopped and backs the data directory up first.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use mailroom_core::DatabaseAt;
use mailroom_core::ops::backups::{self, BACKUPS_DIR, BackupRequest};
use mailroom_core::ops::projects::adopt::{self, AdoptPlan};
use mailroom_core::ops::projects::identity::path_identity;

use serde_json::Value;

use super::target::Common;
use super::{output, shared};

/// `mailroom projects`.
#[derive(Args, Debug)]
pub struct ProjectsArgs {
    #[command(subcommand)]
    command: ProjectsCommand,
}

#[derive(Subcommand, Debug)]
enum ProjectsCommand {
    /// Write .agent-mail-project-id (the project uid) at the repository's root
    #[command(alias = "mark_identity")]
    MarkIdentity {
        #[arg(default_value = ".")]
        path: String,
        /// Also `git add` it and commit it ("chore: add .agent-mail-project-id")
        #[arg(long, overrides_with = "no_commit")]
        commit: bool,
        #[arg(long)]
        no_commit: bool,
    },
    /// Write .agent-mail.yaml (project_uid, and product_uid with --product)
    #[command(alias = "discovery_init")]
    DiscoveryInit {
        #[arg(default_value = ".")]
        path: String,
        /// The product's uid
        #[arg(long)]
        product: Option<String>,
        /// Replace an existing .agent-mail.yaml
        #[arg(long)]
        force: bool,
    },
    /// Merge a legacy project into another of the same Git repository (a dry run unless
    /// --apply)
    Adopt {
        /// The project merged and removed (its key or slug)
        source: String,
        /// The project that receives its agents, mail and archive files
        target: String,
        /// Only print what would move (the default)
        #[arg(long, conflicts_with = "apply")]
        dry_run: bool,
        /// Move it (the server must be stopped; the data directory is backed up first)
        #[arg(long)]
        apply: bool,
        #[command(flatten)]
        common: Common,
    },
}

pub fn run(args: ProjectsArgs) -> Result<()> {
    match args.command {
        ProjectsCommand::MarkIdentity { path, commit, .. } => {
            let (root, uid) = identity(&path)?;
            let marker = root.join(".agent-mail-project-id");
            std::fs::write(&marker, format!("{uid}\n"))
                .with_context(|| format!("cannot write {}", marker.display()))?;
            println!("{}: {uid}", marker.display());
            if commit {
                git(&root, &["add", ".agent-mail-project-id"])?;
                git(
                    &root,
                    &[
                        "commit",
                        "-m",
                        "chore: add .agent-mail-project-id",
                        "--",
                        ".agent-mail-project-id",
                    ],
                )?;
                println!("committed");
            }
        }
        ProjectsCommand::DiscoveryInit { path, product, force } => {
            let (root, uid) = identity(&path)?;
            let file = root.join(".agent-mail.yaml");
            if file.exists() && !force {
                bail!("{} exists; --force replaces it", file.display());
            }
            let mut text = format!("project_uid: {uid}\n");
            if let Some(product) = product {
                text.push_str(&format!("product_uid: {product}\n"));
            }
            std::fs::write(&file, &text)
                .with_context(|| format!("cannot write {}", file.display()))?;
            print!("{}:\n{text}", file.display());
        }
        ProjectsCommand::Adopt { source, target, apply, common, .. } => {
            run_adopt(&source, &target, apply, &common)?;
        }
    }
    Ok(())
}

fn run_adopt(source: &str, target: &str, apply: bool, common: &Common) -> Result<()> {
    let data_dir = shared::data_dir(common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    if config.postgres.is_none() && !config.database_path.is_file() {
        bail!("{} holds no mailroom database", config.database_path.display());
    }
    let plan = adopt::plan_adopt(&config, source, target)?;
    if !apply {
        print_adoption(common.json, &plan, false)?;
        return Ok(());
    }
    let why = "adopt moves the archive's files in a Git commit, which only the archive's \
               owner may make, and rewrites rows the server holds in use";
    shared::refuse_running_server(&data_dir, why)?;
    let _lock = shared::lock_data_dir(&data_dir)?;
    let _database_lock = shared::lock_database(&config.database_path, shared::Missing::Skip)?;
    let parent = data_dir.join(BACKUPS_DIR);
    let database = DatabaseAt::of(&config);
    let request = BackupRequest {
        database: &database,
        storage_root: config.archive.enabled.then_some(config.storage_root.as_path()),
        parent: &parent,
        reason: "adopt",
        project: Some(&plan.source.slug),
    };
    let (backup, _) = backups::create_backup(&request).context("backup failed: nothing adopted")?;
    eprintln!("backed up to {}", backup.display());
    let done = adopt::adopt(&config, &plan)?;
    print_adoption(common.json, &done, true)
}

fn print_adoption(json: bool, plan: &AdoptPlan, applied: bool) -> Result<()> {
    let value = serde_json::to_value(plan)?;
    output::print(json, &value, |v| {
        let (source, target) = (&v["source"], &v["target"]);
        let verb = if applied { "adopted" } else { "would adopt" };
        let mut text = format!(
            "{verb} {} ({}) into {} ({})\nGit common dir: {}\n",
            output::cell(&source["slug"]),
            output::cell(&source["human_key"]),
            output::cell(&target["slug"]),
            output::cell(&target["human_key"]),
            output::cell(&v["git_common_dir"]),
        );
        let rows = v["rows"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, n)| vec![name.clone(), n.to_string()])
            .collect();
        text.push_str(&output::table(&["rows", "count"], rows));
        text.push_str(&format!(
            "archive files under projects/{}/: {}\n",
            output::cell(&source["slug"]),
            v["archive_files"]
        ));
        text.push_str(&format!("aliases.json former_slugs: {}\n", v["former_slugs"]));
        match (&v["archive"]["commit"], applied) {
            (Value::String(commit), true) => text.push_str(&format!("archive commit {commit}\n")),
            (_, true) => {}
            (_, false) => text.push_str("dry run: nothing changed (--apply adopts)\n"),
        }
        text
    });
    Ok(())
}

/// The repository's root (the directory itself outside Git) and the project uid it resolves to.
fn identity(path: &str) -> Result<(PathBuf, String)> {
    let report = path_identity(path)?;
    let root = report.identity.repo_root.clone().unwrap_or(report.human_key.clone());
    if !Path::new(&root).is_dir() {
        bail!("{root} is not a directory");
    }
    Ok((PathBuf::from(root), report.identity.project_uid))
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .status()
        .context("cannot run git")?;
    if !status.success() {
        bail!("git {} failed in {}", args.join(" "), dir.display());
    }
    Ok(())
}
