//! `mailroom amctl env [--path .] [--agent]`: the variables a build script keys its caches
//! and artifacts by (the reference's `amctl env`): `SLUG`, `PROJECT_UID`, `BRANCH`, `AGENT`,
//! `CACHE_KEY=am-cache-<uid>-<agent>-<branch>` and
//! `ARTIFACT_DIR=STORAGE_ROOT/projects/<slug>/artifacts/<agent>/<branch>`. `am-run` exports
//! the same to its child.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mailroom_core::ops::projects::identity::path_identity;

use super::shared;

/// `mailroom amctl`.
#[derive(Args, Debug)]
pub struct AmctlArgs {
    #[command(subcommand)]
    command: AmctlCommand,
}

#[derive(Subcommand, Debug)]
enum AmctlCommand {
    /// Print SLUG, PROJECT_UID, BRANCH, AGENT, CACHE_KEY and ARTIFACT_DIR
    Env(EnvArgs),
}

/// The project directory, the agent and the data directory the variables describe.
#[derive(Args, Debug, Clone)]
pub struct EnvArgs {
    /// The project directory
    #[arg(long, default_value = ".")]
    pub path: String,
    /// The agent [env: AGENT_NAME]
    #[arg(long)]
    pub agent: Option<String>,
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// One JSON object instead of NAME=value lines
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: AmctlArgs) -> Result<()> {
    let AmctlCommand::Env(env) = args.command;
    shared::agent_dotenv(env.data_dir.clone())?;
    let vars = BuildEnv::of(&env)?.variables();
    if env.json {
        let object: serde_json::Map<String, serde_json::Value> =
            vars.into_iter().map(|(k, v)| (k.to_string(), v.into())).collect();
        println!("{}", serde_json::Value::Object(object));
    } else {
        for (name, value) in vars {
            println!("{name}={value}");
        }
    }
    Ok(())
}

/// A project directory as build scripts see it.
pub struct BuildEnv {
    /// The project's key: the directory's absolute, normalised path.
    pub project: String,
    pub slug: String,
    pub project_uid: String,
    /// The branch checked out there, if a Git repository with one.
    pub branch: Option<String>,
    /// `--agent`, else `AGENT_NAME`.
    pub agent: Option<String>,
    storage_root: PathBuf,
}

impl BuildEnv {
    pub fn of(args: &EnvArgs) -> Result<Self> {
        let identity = path_identity(&args.path).context("--path")?;
        let storage_root =
            shared::core_config(&shared::data_dir(args.data_dir.clone()))?.storage_root;
        Ok(Self {
            project: identity.human_key,
            slug: identity.slug,
            project_uid: identity.identity.project_uid,
            branch: identity.identity.branch,
            agent: args.agent.clone().or_else(|| shared::env("AGENT_NAME")),
            storage_root: std::path::absolute(&storage_root).unwrap_or(storage_root),
        })
    }

    /// The variables, in the reference's order (`unknown` for a missing branch or agent).
    pub fn variables(&self) -> Vec<(&'static str, String)> {
        let unknown = || "unknown".to_string();
        let agent = self.agent.clone().unwrap_or_else(unknown);
        let branch = self.branch.clone().unwrap_or_else(unknown);
        let uid = &self.project_uid;
        let artifacts = self.storage_root.join("projects").join(&self.slug).join("artifacts");
        let artifacts = artifacts.join(&agent).join(&branch);
        let cache_key = format!("am-cache-{uid}-{agent}-{branch}");
        vec![
            ("SLUG", self.slug.clone()),
            ("PROJECT_UID", uid.clone()),
            ("BRANCH", branch),
            ("AGENT", agent),
            ("CACHE_KEY", cache_key),
            ("ARTIFACT_DIR", artifacts.to_string_lossy().into_owned()),
        ]
    }
}
