//! Project-level resources (docs/compat/resources.md §3.1–3.3): every project, one project with its
//! agents, and a project's agent directory with unread counts. No auth.

use super::{Resource, boxed, path_var, to_json};

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(
            "resource://tooling/projects{?format}",
            "tooling_projects",
            "Every project, oldest first.",
            |state, _| boxed(async move { to_json(state.core.list_projects().await?) }),
        ),
        Resource::new(
            "resource://projects{?format}",
            "projects",
            "Every project, oldest first (the reference's older name).",
            |state, _| boxed(async move { to_json(state.core.list_projects().await?) }),
        ),
        Resource::new(
            "resource://project/{slug}{?format}",
            "project",
            "A project (slug or human key) with all its agents.",
            |state, params| {
                boxed(async move {
                    to_json(state.core.project_detail(path_var(&params, "slug")).await?)
                })
            },
        ),
        Resource::new(
            "resource://agents/{project_key}{?format}",
            "agents",
            "A project's agents with their unread message counts.",
            |state, params| {
                boxed(async move {
                    to_json(state.core.list_agents(path_var(&params, "project_key")).await?)
                })
            },
        ),
    ]
}
