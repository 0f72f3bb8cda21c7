//! The REST error shape: `{"error": {"type": <stable code>, "message": <text>}}` with a
//! status chosen by what the caller can do. Internal details are logged, never returned.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mailroom_core::{Category, Error};
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
        Category::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let message = if e.category == Category::Internal {
        tracing::error!(kind = e.kind, error = %e.message, "request failed");
        "Internal error; the server logged the details.".to_string()
    } else {
        e.message.clone()
    };
    (status, message)
}
