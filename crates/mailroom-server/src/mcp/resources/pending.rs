//! Resources whose data layer (file reservations) is not built in this server yet. They are
//! listed so clients discover them, and reading one says
//! plainly that it is not available rather than answering with invented data.

use mailroom_core::Error;

use super::{Resource, boxed};

pub fn resources() -> Vec<Resource> {
    vec![Resource::new(
        "resource://file_reservations/{slug}{?active_only,format}",
        "file_reservations",
        "A project's file reservations (active only by default) with staleness details.",
        |_, _| boxed(async { Err(not_available("file_reservations", "file reservations are")) }),
    )]
}

fn not_available(resource: &str, what: &str) -> Error {
    Error::invalid_kind(
        "FEATURE_DISABLED",
        format!("resource {resource} is not available yet: {what} not built in this server"),
    )
}
