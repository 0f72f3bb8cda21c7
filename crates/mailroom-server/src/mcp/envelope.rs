//! The MCP 2026-07-28 request envelope. That revision has no `initialize` and no session: each
//! request carries its protocol version and the client's capabilities in `params._meta`, and
//! over HTTP mirrors the version, the method and the name it acts on in headers
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`). This module tells a 2026-07-28 request
//! from an older one and checks its envelope rung by rung, the first failure answering
//! (docs/compat/http.md §2.1); what a checked request may call is `dispatch`'s.

use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use serde_json::{Map, Value, json};

use super::error::code;
use super::{SERVER_NAME, SUPPORTED_PROTOCOL_VERSIONS};

/// The stateless revisions we speak, newest first.
pub const MODERN_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"];

/// `_meta` keys of the envelope and of results and notifications.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

pub const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// Which generation of the protocol a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and older: `initialize`, optional sessions, the GET stream.
    Handshake,
    /// 2026-07-28: the per-request envelope, `server/discover`, `subscriptions/listen`.
    Modern,
}

/// An envelope the ladder refused: the JSON-RPC error to answer with.
#[derive(Debug, PartialEq)]
pub struct Rejection {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl Rejection {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }
}

/// Whether a POST speaks 2026-07-28: its `MCP-Protocol-Version` header names a stateless
/// version, or its `_meta` carries the envelope's version (a header that disagrees is then
/// refused by the ladder, and a version we do not know is refused naming ours).
pub fn era(headers: &HeaderMap, object: &Map<String, Value>) -> Era {
    let header = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    let enveloped = object
        .get("params")
        .and_then(|p| p.get("_meta"))
        .is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
    if enveloped || header.is_some_and(|v| MODERN_PROTOCOL_VERSIONS.contains(&v)) {
        Era::Modern
    } else {
        Era::Handshake
    }
}

/// Checks a 2026-07-28 request's envelope: the routing headers appear once; `_meta` carries
/// the protocol version and the client's capabilities (else invalid params); the headers
/// agree with the body (else `HEADER_MISMATCH`); the version is one we speak (else
/// `UNSUPPORTED_PROTOCOL_VERSION`, naming ours).
pub fn check(headers: &HeaderMap, method: &str, params: &Value) -> Result<(), Rejection> {
    for name in [VERSION_HEADER, METHOD_HEADER, NAME_HEADER] {
        if headers.get_all(name).iter().count() > 1 {
            return Err(Rejection::new(
                code::HEADER_MISMATCH,
                format!("The {name} header appears more than once."),
            ));
        }
    }
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        return Err(Rejection::new(
            code::INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying {PROTOCOL_VERSION_KEY} and \
                 {CLIENT_CAPABILITIES_KEY} (protocol 2026-07-28 has no initialize)."
            ),
        ));
    };
    let missing: Vec<&str> = [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect();
    if !missing.is_empty() {
        return Err(Rejection::new(
            code::INVALID_PARAMS,
            format!("params._meta is missing {}.", missing.join(" and ")),
        ));
    }
    let version = &meta[PROTOCOL_VERSION_KEY];
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header(VERSION_HEADER).is_none_or(|h| version.as_str() != Some(h)) {
        return Err(Rejection::new(
            code::HEADER_MISMATCH,
            format!(
                "The {VERSION_HEADER} header must equal params._meta's {PROTOCOL_VERSION_KEY}."
            ),
        ));
    }
    if header(METHOD_HEADER) != Some(method) {
        return Err(Rejection::new(
            code::HEADER_MISMATCH,
            format!("The {METHOD_HEADER} header must equal the request's method ({method})."),
        ));
    }
    if let Some(field) = named_field(method)
        && let Some(named) = params.get(field).and_then(Value::as_str)
        && header(NAME_HEADER).and_then(decode_header_value).as_deref() != Some(named)
    {
        return Err(Rejection::new(
            code::HEADER_MISMATCH,
            format!("The {NAME_HEADER} header must equal params.{field}."),
        ));
    }
    let version = version.as_str().unwrap_or_default();
    if !MODERN_PROTOCOL_VERSIONS.contains(&version) {
        return Err(Rejection {
            code: code::UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version".to_string(),
            data: Some(json!({ "supported": supported_versions(), "requested": version })),
        });
    }
    Ok(())
}

/// The body field a method's `Mcp-Name` header mirrors.
fn named_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// A header value as sent: verbatim, or `=?base64?…?=` around the UTF-8 bytes of a value that
/// would not survive as a header (`None` for a malformed one, which then matches nothing).
fn decode_header_value(value: &str) -> Option<String> {
    let Some(payload) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Some(value.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD.decode(payload).ok()?;
    String::from_utf8(bytes).ok()
}

/// Every version we speak, the stateless ones first (what `server/discover` lists).
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_PROTOCOL_VERSIONS.iter().chain(SUPPORTED_PROTOCOL_VERSIONS.iter()).copied().collect()
}

/// The HTTP status a 2026-07-28 error answers with: 400 for a malformed or refused request,
/// 404 for an unknown method, 200 otherwise.
pub fn status_of(error_code: i64) -> StatusCode {
    match error_code {
        code::PARSE_ERROR
        | code::INVALID_REQUEST
        | code::INVALID_PARAMS
        | code::HEADER_MISMATCH
        | code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The members every 2026-07-28 result carries (`resultType`, and the server named in
/// `_meta`), as JSON object members without braces; `cacheable` adds the caching hints the
/// revision requires on lists, reads and discovery (never cached: mail changes at any time).
pub fn result_members(cacheable: bool) -> &'static str {
    use std::sync::LazyLock;
    static PLAIN: LazyLock<String> = LazyLock::new(|| members(false));
    static CACHEABLE: LazyLock<String> = LazyLock::new(|| members(true));
    if cacheable { &CACHEABLE } else { &PLAIN }
}

/// `,` + [`result_members`] + `}}`: what follows a shared result whose closing brace was cut
/// (the result's, then the response's).
pub fn result_tail(cacheable: bool) -> &'static str {
    use std::sync::LazyLock;
    static PLAIN: LazyLock<String> = LazyLock::new(|| format!(",{}}}}}", members(false)));
    static CACHEABLE: LazyLock<String> = LazyLock::new(|| format!(",{}}}}}", members(true)));
    if cacheable { &CACHEABLE } else { &PLAIN }
}

fn members(cacheable: bool) -> String {
    let meta = json!({ SERVER_INFO_KEY: server_info() });
    let mut out = format!(r#""_meta":{meta},"resultType":"complete""#);
    if cacheable {
        out.push_str(r#","cacheScope":"private","ttlMs":0"#);
    }
    out
}

/// The server's `Implementation`.
pub fn server_info() -> Value {
    json!({ "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    fn params(version: &str, extra: Value) -> Value {
        let mut params = json!({ "_meta": {
            PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {} } });
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        params
    }

    #[test]
    fn era_follows_the_version_header_or_the_envelope() {
        let object = |p: Value| json!({ "params": p }).as_object().cloned().unwrap_or_default();
        let modern = params("2026-07-28", json!({}));
        assert_eq!(
            era(&headers(&[(VERSION_HEADER, "2026-07-28")]), &object(json!({}))),
            Era::Modern
        );
        assert_eq!(
            era(&headers(&[(VERSION_HEADER, "2031-01-01")]), &object(json!({}))),
            Era::Handshake
        );
        assert_eq!(
            era(&headers(&[(VERSION_HEADER, "2025-11-25")]), &object(json!({}))),
            Era::Handshake
        );
        assert_eq!(
            era(&headers(&[(VERSION_HEADER, "2025-11-25")]), &object(modern.clone())),
            Era::Modern
        );
        assert_eq!(era(&HeaderMap::new(), &object(modern)), Era::Modern);
        assert_eq!(era(&HeaderMap::new(), &object(json!({ "_meta": {} }))), Era::Handshake);
    }

    #[test]
    fn the_ladder_refuses_each_fault_with_its_code() {
        let good = headers(&[
            (VERSION_HEADER, "2026-07-28"),
            (METHOD_HEADER, "tools/call"),
            (NAME_HEADER, "send_message"),
        ]);
        let call = params("2026-07-28", json!({ "name": "send_message" }));
        assert_eq!(check(&good, "tools/call", &call), Ok(()));
        let refused = |h: &HeaderMap, p: &Value| check(h, "tools/call", p).map_err(|r| r.code);
        assert_eq!(refused(&good, &json!({})), Err(code::INVALID_PARAMS));
        let no_caps = json!({ "_meta": { PROTOCOL_VERSION_KEY: "2026-07-28" } });
        assert_eq!(refused(&good, &no_caps), Err(code::INVALID_PARAMS));
        let other_name = params("2026-07-28", json!({ "name": "fetch_inbox" }));
        assert_eq!(refused(&good, &other_name), Err(code::HEADER_MISMATCH));
        let mut twice = good.clone();
        twice.append(METHOD_HEADER, HeaderValue::from_static("tools/call"));
        assert_eq!(refused(&twice, &call), Err(code::HEADER_MISMATCH));
        let wrong_method =
            headers(&[(VERSION_HEADER, "2026-07-28"), (METHOD_HEADER, "tools/list")]);
        assert_eq!(refused(&wrong_method, &call), Err(code::HEADER_MISMATCH));
        let future = headers(&[
            (VERSION_HEADER, "2031-01-01"),
            (METHOD_HEADER, "tools/call"),
            (NAME_HEADER, "send_message"),
        ]);
        let rejection =
            check(&future, "tools/call", &params("2031-01-01", json!({ "name": "send_message" })))
                .expect_err("unknown version");
        assert_eq!(rejection.code, code::UNSUPPORTED_PROTOCOL_VERSION);
        let data = rejection.data.expect("data");
        assert_eq!(data["requested"], "2031-01-01");
        assert_eq!(data["supported"][0], "2026-07-28");
    }

    #[test]
    fn a_name_header_may_be_base64_wrapped() {
        let wrapped =
            format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode("résumé"));
        assert_eq!(decode_header_value(&wrapped).as_deref(), Some("résumé"));
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(decode_header_value("=?base64?!!?="), None);
    }

    #[test]
    fn result_members_are_valid_json_object_members() {
        for cacheable in [false, true] {
            let object: Value =
                serde_json::from_str(&format!("{{{}}}", result_members(cacheable))).expect("json");
            assert_eq!(object["resultType"], "complete");
            assert_eq!(object["_meta"][SERVER_INFO_KEY]["name"], SERVER_NAME);
            assert_eq!(object.get("ttlMs").is_some(), cacheable);
        }
    }
}
