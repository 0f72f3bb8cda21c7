//! The REST error shape: `{"error": {"type": <stable code>, "message": <text>}}` with a
//! status chosen by what the caller can do, and `Retry-After` on a retryable failure's 503.
//! Internal details are logged, never returned.

use axum::Json;
use axum::http::{StatusCode, header};
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

/// Seconds a client is told to wait before retrying a call that failed for a passing reason
/// (the archive or the database busy): a `Retry-After` header on its 503.
const RETRY_AFTER_SECONDS: &str = "5";

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let (status, message) = status_and_message(&e);
        let body = Json(json!({ "error": { "type": e.kind, "message": message } }));
        if e.category == Category::Retryable {
            return (status, [(header::RETRY_AFTER, RETRY_AFTER_SECONDS)], body).into_response();
        }
        (status, body).into_response()
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

    #[test]
    fn a_retryable_failure_says_when_to_retry() {
        let busy = Error::new(Category::Retryable, "ARCHIVE_BACKLOG", "behind");
        let response = ApiError(busy).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "5");
        let response = ApiError(Error::internal("x")).into_response();
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
    }
}
