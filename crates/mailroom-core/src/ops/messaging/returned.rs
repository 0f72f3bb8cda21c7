//! Errors a delivery returns inside a successful result instead of raising
//! (docs/compat/errors.md §3; send_message's result: docs/compat/tools.md §4.1): a blocked
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::Timestamp;
    use serde_json::json;

    fn blocked(project: &str) -> DeliveryError {
        let conflict = SurfaceConflict {
            surface: "messages/2025/03/*.md".into(),
            holder: "GreenCastle".into(),
            path_pattern: "messages/**".into(),
            exclusive: true,
            expires_ts: Timestamp::parse_iso("2025-03-09T10:00:00+00:00").expect("time"),
        };
        DeliveryError {
            project: project.into(),
            error: ReturnedError::reservation_conflict(vec![conflict]),
        }
    }

    #[test]
    fn one_failed_delivery_is_the_error_and_several_are_delivery_failed() {
        assert!(total_failure(&[]).is_none());
        let single = serde_json::to_value(total_failure(&[blocked("/a")])).expect("json");
        assert_eq!(
            single,
            json!({"type": "FILE_RESERVATION_CONFLICT",
                   "message": "Conflicting active file_reservations prevent message write.",
                   "conflicts": [{"surface": "messages/2025/03/*.md", "holder": "GreenCastle",
                                  "path_pattern": "messages/**", "exclusive": true,
                                  "expires_ts": "2025-03-09T10:00:00+00:00"}]})
        );
        let both = total_failure(&[blocked("/a"), blocked("/b")]).expect("failure");
        let both = serde_json::to_value(both).expect("json");
        assert_eq!(both["type"], "DELIVERY_FAILED");
        assert_eq!(both["message"], "Message delivery failed for all target projects.");
        assert_eq!(both["errors"][1]["project"], "/b");
        assert_eq!(both["errors"][1]["error"]["type"], "FILE_RESERVATION_CONFLICT");
        assert!(both.get("conflicts").is_none());
    }
}
