//! `GET /mail/static/{file}`: the stylesheet, the script and the icon, compiled into the
//! binary, so the UI works air-gapped.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::PageError;

/// The stylesheet, script and icon, compiled into the binary.
pub async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "app.css" => (include_str!("../../static/app.css"), "text/css; charset=utf-8"),
        "app.js" => (include_str!("../../static/app.js"), "text/javascript; charset=utf-8"),
        "icon.svg" => (include_str!("../../static/icon.svg"), "image/svg+xml"),
        _ => return PageError(StatusCode::NOT_FOUND, "No such file.".into()).into_response(),
    };
    // Compiled in, so they change only with the binary: an hour in the browser's cache.
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "max-age=3600")], body).into_response()
}
