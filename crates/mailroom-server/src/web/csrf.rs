//! Cross-site request forgery protection for the UI's state-changing requests: a double-submit
//! token. A page answer gives the browser a random token in the `mailroom_csrf` cookie
//! (`SameSite=Strict`, scoped to `/mail`); the UI's script sends it back in the
//! `X-CSRF-Token` header of every POST, and a POST whose header does not match its cookie is
//! refused with 403. Another site can neither read the cookie nor set the header (and the
//! Origin check refuses its requests first); a script of the operator's reads the token from
//! any page's cookie.

use axum::http::{HeaderMap, HeaderValue, header};
use mailroom_core::ops::agents::credentials::constant_time_eq;

/// The cookie that carries the token.
pub const COOKIE: &str = "mailroom_csrf";
/// The header a POST repeats it in.
pub const HEADER: &str = "x-csrf-token";
const TOKEN_BYTES: usize = 32;

/// The token of the request's cookie, when it has a well-formed one.
pub fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|value| is_token(value))
}

fn is_token(value: &str) -> bool {
    value.len() == 2 * TOKEN_BYTES && value.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether a state-changing request proves it comes from the UI: its header repeats its
/// cookie.
pub fn verified(headers: &HeaderMap) -> bool {
    let Some(cookie) = cookie_token(headers) else { return false };
    let Some(sent) = headers.get(HEADER).and_then(|h| h.to_str().ok()) else { return false };
    constant_time_eq(cookie.as_bytes(), sent.trim().as_bytes())
}

/// A `Set-Cookie` value with a fresh token; `None` if the system's randomness failed.
pub fn fresh_cookie() -> Option<HeaderValue> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).ok()?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    HeaderValue::from_str(&format!("{COOKIE}={token}; Path=/mail; SameSite=Strict")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(cookie: Option<&str>, sent: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(cookie) = cookie {
            headers.insert(header::COOKIE, HeaderValue::from_str(cookie).expect("cookie"));
        }
        if let Some(sent) = sent {
            headers.insert(HEADER, HeaderValue::from_str(sent).expect("header"));
        }
        headers
    }

    #[test]
    fn the_header_must_repeat_the_cookie() {
        let token = "ab".repeat(TOKEN_BYTES);
        let cookie = format!("other=1; {COOKIE}={token}");
        assert!(verified(&headers(Some(&cookie), Some(&token))));
        assert!(!verified(&headers(Some(&cookie), None)));
        assert!(!verified(&headers(None, Some(&token))));
        assert!(!verified(&headers(Some(&cookie), Some(&"cd".repeat(TOKEN_BYTES)))));
        let short = format!("{COOKIE}=abc");
        assert!(!verified(&headers(Some(&short), Some("abc"))), "a malformed token is none");
        let fresh = fresh_cookie().expect("cookie");
        let fresh = fresh.to_str().expect("text");
        assert!(fresh.starts_with("mailroom_csrf=") && fresh.contains("SameSite=Strict"));
    }
}
