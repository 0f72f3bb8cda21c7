//! `--dataset`: the benchmark plan's standing data (10 projects × 100 agents × 100 messages per
//! agent; BENCHMARKS.md, "Current state"), created through the target's MCP tools before a run, so
//! scenarios run against a realistically filled database rather than an empty one.

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::scenario::Setup;
use crate::target::Target;

/// The dataset's size: `PROJECTSxAGENTSxMESSAGES` (messages sent by each agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetScale {
    pub projects: usize,
    pub agents: usize,
    pub messages_per_agent: usize,
}

impl Default for DatasetScale {
    /// The benchmark plan's: 10 projects × 100 agents × 100 messages.
    fn default() -> Self {
        Self { projects: 10, agents: 100, messages_per_agent: 100 }
    }
}

impl FromStr for DatasetScale {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split('x').collect();
        let numbers: Option<Vec<usize>> = parts.iter().map(|p| p.trim().parse().ok()).collect();
        match numbers.as_deref() {
            Some([projects, agents, messages]) if *projects > 0 && *agents > 1 => {
                Ok(Self { projects: *projects, agents: *agents, messages_per_agent: *messages })
            }
            _ => Err(format!(
                "invalid dataset '{s}': expected PROJECTSxAGENTSxMESSAGES, e.g. 10x100x100 \\
                 (at least one project and two agents)"
            )),
        }
    }
}

impl fmt::Display for DatasetScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.projects, self.agents, self.messages_per_agent)
    }
}

/// Every dataset message's body holds the common word `benchmark`; one message in
/// `RARE_EVERY` of each project has this rare one in its subject too (search at scale: a term
/// that matches everything, and one that matches a thousandth).
pub const RARE_WORD: &str = " quasar";
pub const RARE_EVERY: usize = 1000;

/// Creates the dataset: each project on its own connection, in parallel. In each project
/// every agent sends its messages to the next agent (a ring), so every inbox holds
/// `messages_per_agent` messages. Returns what was created.
pub async fn populate(target: &Target, scale: DatasetScale) -> Result<Value> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut tasks = Vec::with_capacity(scale.projects);
    for index in 0..scale.projects {
        let target = target.clone();
        let human_key = format!("/tmp/mailroom-bench/dataset-{stamp}/project-{index}");
        tasks.push(tokio::spawn(async move { populate_project(&target, &human_key, scale).await }));
    }
    let mut projects = Vec::with_capacity(scale.projects);
    for task in tasks {
        projects.push(task.await.context("dataset: a project's task failed")??);
    }
    Ok(json!({
        "scale": scale.to_string(),
        "projects": projects,
        "agents": scale.projects * scale.agents,
        "messages": scale.projects * scale.agents * scale.messages_per_agent,
    }))
}

async fn populate_project(target: &Target, human_key: &str, scale: DatasetScale) -> Result<String> {
    let mut setup = Setup::connect(target).await?;
    let project = setup.tool("ensure_project", json!({"human_key": human_key})).await?;
    let project =
        project["slug"].as_str().context("dataset: ensure_project gave no slug")?.to_string();
    let mut agents = Vec::with_capacity(scale.agents);
    for _ in 0..scale.agents {
        let agent = setup
            .tool(
                "register_agent",
                json!({"project_key": project, "program": "mailroom-bench",
                                           "model": "dataset", "task_description": "dataset"}),
            )
            .await?;
        let name = agent["name"].as_str().context("dataset: register_agent gave no name")?;
        setup
            .tool(
                "set_contact_policy",
                json!({"project_key": project, "agent_name": name,
                                               "policy": "open"}),
            )
            .await?;
        agents.push(name.to_string());
    }
    for n in 0..scale.messages_per_agent {
        for (index, sender) in agents.iter().enumerate() {
            let recipient = &agents[(index + 1) % agents.len()];
            // One message in RARE_EVERY carries the rare word (the first one among them).
            let rare = if (n * agents.len() + index) % RARE_EVERY == 0 { RARE_WORD } else { "" };
            let arguments = json!({
                "project_key": project, "sender_name": sender, "to": [recipient],
                "subject": format!("Dataset message {n} from {sender}{rare}"),
                "body_md": "Standing data for a benchmark (seed 000 §3.1).",
            });
            setup.tool("send_message", arguments).await?;
        }
    }
    Ok(project)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_parse() {
        assert_eq!("10x100x100".parse(), Ok(DatasetScale::default()));
        assert_eq!(
            "2x3x0".parse(),
            Ok(DatasetScale { projects: 2, agents: 3, messages_per_agent: 0 })
        );
        for bad in ["10x100", "0x5x5", "1x1x5", "axbxc", ""] {
            assert!(bad.parse::<DatasetScale>().is_err(), "{bad}");
        }
        assert_eq!(DatasetScale::default().to_string(), "10x100x100");
    }
}
