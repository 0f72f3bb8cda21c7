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
    let vars = variables(&env)?;
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

/// The variables, in the reference's order.
pub fn variables(args: &EnvArgs) -> Result<Vec<(&'static str, String)>> {
    let identity =
        path_identity(&args.path).map_err(|e| anyhow::anyhow!(e.message)).context("--path")?;
    let agent = args
        .agent
        .clone()
        .or_else(|| shared::env("AGENT_NAME"))
        .unwrap_or_else(|| "unknown".into());
    let branch = identity.identity.branch.clone().unwrap_or_else(|| "unknown".into());
    let uid = identity.identity.project_uid.clone();
    let storage = shared::core_config(&shared::data_dir(args.data_dir.clone()))?.storage_root;
    let storage = std::path::absolute(&storage).unwrap_or(storage);
    let artifacts =
        storage.join("projects").join(&identity.slug).join("artifacts").join(&agent).join(&branch);
    Ok(vec![
        ("SLUG", identity.slug.clone()),
        ("PROJECT_UID", uid.clone()),
        ("BRANCH", branch.clone()),
        ("AGENT", agent.clone()),
        ("CACHE_KEY", format!("am-cache-{uid}-{agent}-{branch}")),
        ("ARTIFACT_DIR", artifacts.to_string_lossy().into_owned()),
    ])
}
