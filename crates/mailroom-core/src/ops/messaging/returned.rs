//! Errors a delivery returns inside a successful result instead of raising
//! (spec/semantics.md §0.1 "returned error objects", spec/tools.md send_message): a blocked
//! delivery to one project does not undo the deliveries to the others.

use serde::Serialize;

use crate::ops::reservations::mail_surfaces::{
    CONFLICT_MESSAGE, FILE_RESERVATION_CONFLICT, SurfaceConflict,
};

/// An error object as the reference returns it: `{"type", "message", ...details}`.
#[derive(Debug, Clone, Serialize)]
pub struct ReturnedError {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// FILE_RESERVATION_CONFLICT: the surfaces and the reservations covering them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<SurfaceConflict>,
    /// DELIVERY_FAILED: each project's error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<DeliveryError>,
}

impl ReturnedError {
    /// The error of a delivery blocked by reservations on its archive surfaces.
    pub fn reservation_conflict(conflicts: Vec<SurfaceConflict>) -> Self {
        Self {
            kind: FILE_RESERVATION_CONFLICT.to_string(),
            message: CONFLICT_MESSAGE.to_string(),
            conflicts,
            errors: Vec::new(),
        }
    }
}

/// A delivery that failed: the target project's human key and its error.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryError {
    pub project: String,
    pub error: ReturnedError,
}

/// The error of a send none of whose deliveries went through: the one error itself when
/// there was a single target project, else DELIVERY_FAILED listing them all. `None` when
/// nothing failed.
pub fn total_failure(errors: &[DeliveryError]) -> Option<ReturnedError> {
    match errors {
        [] => None,
        [only] => Some(only.error.clone()),
        all => Some(ReturnedError {
            kind: "DELIVERY_FAILED".to_string(),
            message: "Message delivery failed for all target projects.".to_string(),
            conflicts: Vec::new(),
            errors: all.to_vec(),
        }),
    }
}
