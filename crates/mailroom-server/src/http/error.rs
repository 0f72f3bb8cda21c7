//! The REST error shape: `{"error": {"type": <stable code>, "message": <text>}}` with a
//! status chosen by what the caller can do. Internal details are logged, never returned.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mailroom_core::{Category, Error, StorageFault};
use serde_json::json;

/// A failed REST call.
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let (status, message) = status_and_message(&e);
        (status, Json(json!({ "error": { "type": e.kind, "message": message } }))).into_response()
    }
}

/// The status a core error answers with, and the message a caller may see (an internal
/// error's details are logged instead).
pub fn status_and_message(e: &Error) -> (StatusCode, String) {
    let status = match e.category {
        Category::InvalidArgument => StatusCode::BAD_REQUEST,
        Category::NotFound => StatusCode::NOT_FOUND,
        Category::Conflict => StatusCode::CONFLICT,
        Category::PermissionDenied => StatusCode::FORBIDDEN,
        Category::Retryable => StatusCode::SERVICE_UNAVAILABLE,
        Category::Storage(StorageFault::Full) => StatusCode::INSUFFICIENT_STORAGE,
        Category::Storage(StorageFault::ReadOnly) => StatusCode::SERVICE_UNAVAILABLE,
        Category::Internal | Category::Archive => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let message = if e.category.is_internal() {
        tracing::error!(kind = e.kind, error = %e.message, "request failed");
        "Internal error; the server logged the details.".to_string()
    } else {
        e.message.clone()
    };
    (status, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_are_shown_with_their_own_status() {
        let (status, message) = status_and_message(&Error::storage_full("the database"));
        assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE);
        assert!(message.starts_with("storage full: the database"), "{message}");
        let (status, message) = status_and_message(&Error::storage_read_only("the database"));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(message.starts_with("storage read-only: the database"), "{message}");
        let (status, message) = status_and_message(&Error::internal("secret detail"));
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!message.contains("secret"), "internal details stay in the log");
    }
}
