//! What the operator's and agents' shell commands share: the data directory and `--json`, the
//! project (default: the working directory, as agents name it) and the acting agent (default:
//! `$AGENT_NAME`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use mailroom_core::ops::agents::credentials;

use super::backend::Backend;
use super::shared;

/// `--data-dir` and `--json`.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Print JSON (the server's own answer) instead of a table
    #[arg(long, global = true)]
    pub json: bool,
}

impl Common {
    /// The data directory's server, or the data directory itself. A command agents run in
    /// their projects has not read a `.env` yet: it reads the one beside the data directory
    /// (for the others this changes nothing).
    pub fn backend(&self) -> Result<Backend> {
        shared::agent_dotenv(self.data_dir.clone())?;
        Backend::open(&shared::data_dir(self.data_dir.clone()), false)
    }
}

/// `--project` and `--agent` of commands that act as an agent.
#[derive(Args, Debug, Clone)]
pub struct AsAgent {
    /// The project: its key (an absolute path) or slug [default: the current directory]
    #[arg(long)]
    pub project: Option<String>,
    /// The agent acting [env: AGENT_NAME]
    #[arg(long)]
    pub agent: Option<String>,
}

/// `--registration-token` of commands whose tools may ask for proof of the agent.
#[derive(Args, Debug, Clone)]
pub struct Proof {
    /// The acting agent's registration token, for a server that asks for proof
    /// (MAILROOM_TOOL_AUTH) [env: AGENT_MAIL_REGISTRATION_TOKEN; default: the token the data
    /// directory's database keeps for the agent (for a project's webhooks: for an agent of
    /// the project)]
    #[arg(long, alias = "registration_token", value_name = "TOKEN")]
    pub registration_token: Option<String>,
}

impl Proof {
    /// The token to prove `who` with: the flag, else `$AGENT_MAIL_REGISTRATION_TOKEN`, else
    /// the one stored for the agent in the data directory's database (none when it cannot be
    /// read there: the server then decides whether proof is needed).
    pub fn token(&self, who: &AsAgent, common: &Common) -> Result<Option<String>> {
        self.agent_token(&who.project()?, &who.agent()?, common)
    }

    /// As [`Proof::token`], for `agent` of `project`.
    pub fn agent_token(
        &self,
        project: &str,
        agent: &str,
        common: &Common,
    ) -> Result<Option<String>> {
        self.given_or_stored(common, |database| {
            Ok(credentials::stored_token(database, project, agent).ok().flatten())
        })
    }

    /// The token for a tool any agent of `project` may call (the project admin rule,
    /// docs/compat/tools.md §1.7): as [`Proof::token`], but the stored token is one the
    /// database keeps for an agent of the project.
    pub fn project_token(&self, project: &str, common: &Common) -> Result<Option<String>> {
        self.given_or_stored(common, |database| {
            Ok(credentials::stored_project_token(database, project).ok().flatten())
        })
    }

    /// The flag, else `$AGENT_MAIL_REGISTRATION_TOKEN`, else what `stored` finds in the data
    /// directory's database.
    fn given_or_stored(
        &self,
        common: &Common,
        stored: impl FnOnce(&Path) -> Result<Option<String>>,
    ) -> Result<Option<String>> {
        let given = self
            .registration_token
            .clone()
            .or_else(|| shared::env("AGENT_MAIL_REGISTRATION_TOKEN"));
        if given.is_some() {
            return Ok(given);
        }
        stored(&shared::core_config(&shared::data_dir(common.data_dir.clone()))?.database_path)
    }
}

impl AsAgent {
    pub fn project(&self) -> Result<String> {
        project(self.project.clone())
    }

    pub fn agent(&self) -> Result<String> {
        self.agent
            .clone()
            .or_else(|| shared::env("AGENT_NAME"))
            .context("name the agent: --agent NAME or the AGENT_NAME environment variable")
    }
}

/// `project` or the working directory.
pub fn project(project: Option<String>) -> Result<String> {
    match project {
        Some(project) => Ok(project),
        None => Ok(std::env::current_dir()
            .context("cannot read the current directory")?
            .to_string_lossy()
            .into_owned()),
    }
}
