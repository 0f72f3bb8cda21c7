//! `mailroom list-projects [--include-agents]`: every project (resource://projects), with its
//! agents when asked, as the reference's `list-projects`.

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use super::output::{self, cell, fields, items};
use super::target::Common;

/// `mailroom list-projects`.
#[derive(Args, Debug)]
pub struct ListProjectsArgs {
    /// Also list each project's agents
    #[arg(long, alias = "include_agents")]
    include_agents: bool,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: ListProjectsArgs) -> Result<()> {
    let backend = args.common.backend()?;
    let mut projects = backend.read_resource("resource://projects")?;
    if args.include_agents {
        for project in projects.as_array_mut().into_iter().flatten() {
            let key = project["slug"].as_str().unwrap_or_default().to_string();
            let agents = backend.call_tool("list_agents", json!({"project_key": key}))?;
            project["agents"] = agents["agents"].clone();
        }
    }
    output::print(args.common.json, &projects, |v| {
        let rows = items(v)
            .iter()
            .map(|p| {
                let mut row = fields(p, &["id", "slug", "human_key", "created_at"]);
                if args.include_agents {
                    row.push(names(&p["agents"]));
                }
                row
            })
            .collect();
        let mut headers = vec!["id", "slug", "human key", "created"];
        if args.include_agents {
            headers.push("agents");
        }
        output::table(&headers, rows)
    });
    Ok(())
}

fn names(agents: &Value) -> String {
    items(agents).iter().map(|a| cell(&a["name"])).collect::<Vec<_>>().join(", ")
}
