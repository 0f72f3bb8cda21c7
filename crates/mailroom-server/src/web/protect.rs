//! Page protection: the middleware every answer of the UI passes (`protect_page`). The MCP
//! Origin and Host checks first, then the CSRF token of a state-changing request
//! (`csrf.rs`); the Content-Security-Policy and the other security headers (and a CSRF
//! cookie where the browser has none) on whatever the route answers.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::csrf;
use super::error::json_error;
use crate::http::security::origin::check_origin_and_host;
use crate::state::AppState;

/// No inline script or style, nothing from another origin, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' \
     data: https:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// Origin and Host checks first, then the CSRF token of a state-changing request; the
/// security headers (and a CSRF cookie where the browser has none) on whatever the route
/// answers.
pub async fn protect_page(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Err(refused) = check_origin_and_host(&state, request.headers()) {
        return *refused;
    }
    let safe = request.method().is_safe();
    if !safe && !csrf::verified(request.headers()) {
        let message = "CSRF token missing or wrong: send the mailroom_csrf cookie's value in \
                       the X-CSRF-Token header.";
        return json_error(StatusCode::FORBIDDEN, message.to_string());
    }
    let needs_cookie = safe && csrf::cookie_token(request.headers()).is_none();
    let mut response = next.run(request).await;
    if let Some(cookie) = needs_cookie.then(csrf::fresh_cookie).flatten() {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
