//! How a request of the UI fails: [`PageError`], a status and a message a person can read,
//! answered as the error page to a browser and as `{success: false, error}` to a script.
//! Domain errors take their status from `http/error.rs`, as REST answers do.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mailroom_core::Error;
use serde_json::json;

use super::routes;
use super::view::render;
use crate::http::error::status_and_message;

/// A failed page: its status and a message a person can read.
pub struct PageError(pub StatusCode, pub String);

impl From<Error> for PageError {
    fn from(e: Error) -> Self {
        let (status, message) = status_and_message(&e);
        Self(status, message)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let PageError(status, message) = self;
        let page = ErrorPage { status: status.to_string(), message };
        (status, render(&page)).into_response()
    }
}

#[derive(Template)]
#[template(path = "pages/error.html")]
struct ErrorPage {
    status: String,
    message: String,
}

pub fn bad_request(message: String) -> PageError {
    PageError(StatusCode::BAD_REQUEST, message)
}

/// A page's answer, or its error page.
pub fn page(answer: Result<Response, PageError>) -> Response {
    answer.unwrap_or_else(IntoResponse::into_response)
}

pub fn json_error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({ "success": false, "error": message }))).into_response()
}

/// A JSON answer, or the error as `{success: false, error}` with its status.
pub fn json_answer<T: serde::Serialize>(answer: Result<T, PageError>) -> Response {
    match answer {
        Ok(value) => axum::Json(value).into_response(),
        Err(PageError(status, message)) => json_error(status, message),
    }
}
