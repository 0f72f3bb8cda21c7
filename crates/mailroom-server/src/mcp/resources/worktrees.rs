//! Resources behind the worktrees gate (docs/compat/resources.md §6): a product with its linked
//! projects, and how a project path resolves to an identity.

use super::{Resource, boxed, path_var, to_json};

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(
            "resource://product/{key}{?format}",
            "product",
            "A product (uid or name) and its linked projects.",
            |state, params| {
                boxed(
                    async move { to_json(state.core.product_detail(path_var(&params, "key")).await?) },
                )
            },
        ),
        Resource::new(
            "resource://identity/{project}{?format}",
            "identity",
            "How a project path resolves to an identity (slug, uid, repository, branch, worktree).",
            |state, params| {
                boxed(async move {
                    to_json(state.core.project_identity(path_var(&params, "project")).await?)
                })
            },
        ),
    ]
}
