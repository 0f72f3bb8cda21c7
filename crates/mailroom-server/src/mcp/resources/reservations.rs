//! `resource://file_reservations/{slug}` (docs/compat/resources.md §3.4): a project's
//! reservations with their staleness details. Reading it first runs the expiry and stale
//! sweep, as the reference does.

use super::{Resource, boxed, path_var, to_json};

pub fn resources() -> Vec<Resource> {
    vec![Resource::new(
        "resource://file_reservations/{slug}{?active_only,format}",
        "file_reservations",
        "A project's file reservations (active only by default) with staleness details.",
        |state, params| {
            boxed(async move {
                let active_only = params.bool("active_only", true);
                to_json(
                    state
                        .core
                        .list_file_reservations(path_var(&params, "slug"), active_only)
                        .await?,
                )
            })
        },
    )]
}
