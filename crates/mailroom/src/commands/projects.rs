//! `mailroom projects mark-identity | discovery-init PATH`: the files that pin a repository's
//! project identity (the reference's commands): `.agent-mail-project-id` (its first line is
//! the project uid, committed so every clone and worktree resolves to one project) and
//! `.agent-mail.yaml` (`project_uid:` and optionally `product_uid:`), at the repository's root.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use mailroom_core::ops::projects::identity::path_identity;

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
    }
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
