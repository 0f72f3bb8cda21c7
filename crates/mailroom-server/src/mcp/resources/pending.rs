//! Resources whose data layer (file reservations, products, worktree identity) is not built
//! in this server yet. They are listed so clients discover them, and reading one says
//! plainly that it is not available rather than answering with invented data.

use mailroom_core::Error;

use super::{Resource, boxed};

pub fn resources(worktrees_enabled: bool) -> Vec<Resource> {
    let mut all = vec![Resource::new(
        "resource://file_reservations/{slug}{?active_only,format}",
        "file_reservations",
        "A project's file reservations (active only by default) with staleness details.",
        |_, _| boxed(async { Err(not_available("file_reservations", "file reservations are")) }),
    )];
    if worktrees_enabled {
        all.push(Resource::new(
            "resource://product/{key}{?format}",
            "product",
            "A product and its linked projects.",
            |_, _| boxed(async { Err(not_available("product", "products are")) }),
        ));
        all.push(Resource::new(
            "resource://identity/{project}{?format}",
            "identity",
            "How a project path resolves to an identity (repository, branch, worktree).",
            |_, _| {
                boxed(async { Err(not_available("identity", "worktree identity resolution is")) })
            },
        ));
    }
    all
}

fn not_available(resource: &str, what: &str) -> Error {
    Error::invalid_kind(
        "FEATURE_DISABLED",
        format!("resource {resource} is not available yet: {what} not built in this server"),
    )
}
