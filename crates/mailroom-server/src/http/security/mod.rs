//! Who may do what over HTTP, in front of every route but the health probes (MCP, REST and
//! the web UI alike), in the reference's order (docs/compat/http.md §4): the bearer token or
//! a JWT (401), then roles (403), then rate limits (429).
//!
//! A request from a loopback peer with no `X-Forwarded-*`/`Forwarded` header is local: it
//! needs no bearer token and has every role (`HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED`); with
//! JWTs on it needs a valid token too, as in the reference. Any other request has the roles
//! its JWT names, else the default role (`reader`): a reader may call the read-only tools and
//! read pages, but not call a tool that writes, over MCP or REST, nor change anything from
//! the UI. Rate limits count per client: the JWT's `sub`, else the peer's address, or, behind
//! a proxy on this machine (a loopback peer), the last address of `X-Forwarded-For`.

mod jwks;
mod jwt;
pub mod origin;
mod rate_limit;
mod redis_limit;
mod settings;

use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mailroom_core::model::sha1::sha1;
use serde::Deserialize;
use serde_json::json;

pub use self::jwt::JwtSettings;
use self::jwt::JwtVerifier;
use self::rate_limit::MemoryLimiter;
use self::redis_limit::RedisLimiter;
pub use self::settings::{RateLimits, SecuritySettings};
use super::metrics::Refusal;
use super::rest::RestRoute;
use crate::state::AppState;

/// The settings and the rate limiter's buckets.
pub struct Security {
    settings: SecuritySettings,
    /// The paths MCP is served at (a POST there is JSON-RPC).
    mcp_paths: Vec<String>,
    /// The tools served: a call naming another shares one bucket, so made-up names cannot
    /// each get a full one.
    tools: Vec<&'static str>,
    /// The REST routes and the tools they stand for (`rest::table`).
    rest_routes: Vec<RestRoute>,
    /// The bearer token's digest, computed once (see [`bearer_matches`]).
    token_digest: Option<[u8; 20]>,
    jwt: Option<JwtVerifier>,
    limiter: Option<(RateLimits, Limiter)>,
}

/// Where the buckets live.
enum Limiter {
    Memory(MemoryLimiter),
    Redis(RedisLimiter),
}

impl Limiter {
    async fn take(&self, bucket: (&str, &str), who: Identity<'_>, rate: f64, burst: f64) -> bool {
        match self {
            Limiter::Memory(memory) => memory.take((bucket, who), rate, burst, Instant::now()),
            Limiter::Redis(redis) => {
                let key = format!("{}:{}:{who}", bucket.0, bucket.1);
                redis.take(&key, (bucket, who), rate, burst).await
            }
        }
    }
}

impl Security {
    pub fn new(
        settings: SecuritySettings,
        mcp_paths: Vec<String>,
        tools: Vec<&'static str>,
    ) -> Result<Self, String> {
        let limiter = match (settings.rate_limit, &settings.rate_limit_redis) {
            (Some(limits), Some(url)) => Some((limits, Limiter::Redis(RedisLimiter::new(&url.0)?))),
            (Some(limits), None) => Some((limits, Limiter::Memory(MemoryLimiter::default()))),
            (None, _) => None,
        };
        let jwt = settings.jwt.clone().map(JwtVerifier::new).transpose()?;
        let token_digest = settings.bearer_token.as_ref().map(|t| sha1(&[t.0.as_bytes()]));
        let rest_routes = super::rest::table();
        Ok(Self { settings, mcp_paths, tools, rest_routes, token_digest, jwt, limiter })
    }

    /// Whether anything is checked at all (the middleware is skipped otherwise).
    pub fn is_active(&self) -> bool {
        self.settings.bearer_token.is_some()
            || self.jwt.is_some()
            || self.settings.rbac_enabled
            || self.limiter.is_some()
    }
}

/// What a request does, for roles and rate limits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A tool call (MCP `tools/call`, or the REST route standing for the tool).
    Tool(String),
    /// A reading tool asked to mark what it lists read (`mark_read`): a change, so a writer's,
    /// though the tool reads for readers.
    MarkingRead(String),
    /// An MCP `resources/*` request.
    Resources,
    /// Any other POST: a state change of the web UI, or a route not classified here (needs a
    /// writer, so a route added later is closed to readers until classified).
    Change,
    /// Anything else: pages, `initialize`, `tools/list`, event streams.
    Other,
}

/// The middleware: token, roles, rate limit, then the route.
pub async fn check_request(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let security = &state.security;
    // The health probes: never authenticated, never limited.
    if request.method() == Method::OPTIONS || super::health::is_probe(request.uri().path()) {
        return next.run(request).await;
    }
    let settings = &security.settings;
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    let local = settings.allow_localhost && is_local(peer, request.headers());
    let claims = match authenticate(security, local, request.headers()).await {
        Ok(claims) => claims,
        Err(()) => {
            state.metrics.record_refusal(Refusal::Unauthorized);
            return refuse(StatusCode::UNAUTHORIZED, "Unauthorized");
        }
    };
    let enforce_roles = settings.rbac_enabled && !local;
    if !enforce_roles && security.limiter.is_none() {
        return next.run(request).await;
    }
    let (request, kind) = match classify(security, request, state.config.max_body_bytes).await {
        Ok(classified) => classified,
        Err(response) => return *response,
    };
    if enforce_roles {
        let roles = match &claims {
            Some(claims) if !claims.roles.is_empty() => claims.roles.as_slice(),
            _ => std::slice::from_ref(&settings.default_role),
        };
        if !allowed(settings, roles, &kind) {
            state.metrics.record_refusal(Refusal::Forbidden);
            return refuse(StatusCode::FORBIDDEN, "Forbidden");
        }
    }
    let subject = claims.as_ref().and_then(|c| c.subject.as_deref());
    if let Err(bucket) = within_limits(security, &kind, subject, peer, request.headers()).await {
        state.metrics.record_refusal(Refusal::RateLimited(bucket));
        return refuse(StatusCode::TOO_MANY_REQUESTS, "Rate limit exceeded");
    }
    next.run(request).await
}

/// Takes a token from the request's bucket (its JWT's subject's, else its client's); when it
/// is empty, the kind of bucket (`tools`, `resources`, `other`).
async fn within_limits(
    security: &Security,
    kind: &Kind,
    subject: Option<&str>,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> Result<(), &'static str> {
    let Some((limits, limiter)) = &security.limiter else { return Ok(()) };
    let who = match subject {
        Some(subject) => Identity::Subject(subject),
        None => Identity::Client(client_identity(peer, headers)),
    };
    let (bucket, per_minute, burst) = bucket(limits, kind, &security.tools);
    if per_minute <= 0.0 || limiter.take(bucket, who, per_minute, burst).await {
        Ok(())
    } else {
        Err(bucket.0)
    }
}

/// The bearer token (local requests need none) or the JWT (every request needs one): the
/// JWT's claims, or `Err` for a 401.
async fn authenticate(
    security: &Security,
    local: bool,
    headers: &HeaderMap,
) -> Result<Option<jwt::Claims>, ()> {
    if let Some(digest) = &security.token_digest
        && !local
        && !bearer_matches(headers, digest)
    {
        return Err(());
    }
    let Some(jwt) = &security.jwt else { return Ok(None) };
    jwt.verify(bearer(headers)).await.map(Some).map_err(|why| {
        tracing::debug!(%why, "JWT refused");
    })
}

fn refuse(status: StatusCode, detail: &str) -> Response {
    (status, axum::Json(json!({ "detail": detail }))).into_response()
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The proxy headers that make a loopback request not local (a proxy on this machine is
/// passing on someone else's). Names built once: a name given as text is parsed per lookup.
const FORWARDED: [HeaderName; 6] = [
    X_FORWARDED_FOR,
    HeaderName::from_static("x-forwarded-proto"),
    HeaderName::from_static("x-forwarded-host"),
    HeaderName::from_static("x-real-ip"),
    header::FORWARDED,
    header::VIA,
];

/// A loopback peer, no proxy between, and not a page of another site (which a browser on
/// this machine could be made to send from anywhere on the web).
fn is_local(peer: Option<IpAddr>, headers: &HeaderMap) -> bool {
    peer.is_some_and(is_loopback)
        && !FORWARDED.iter().any(|name| headers.contains_key(name))
        && !origin::has_foreign_origin(headers)
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// `Authorization: Bearer <token>` exactly, `wanted` being the token's digest. The digests
/// are compared, in constant time: neither the token's bytes nor its length show in how long
/// a refusal takes.
fn bearer_matches(headers: &HeaderMap, wanted: &[u8; 20]) -> bool {
    let Some(given) = bearer(headers) else { return false };
    let given = sha1(&[given]);
    given.iter().zip(wanted).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The credentials of `Authorization: Bearer <credentials>`.
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    headers.get(header::AUTHORIZATION)?.as_bytes().strip_prefix(b"Bearer ")
}

/// Who a request counts against: its JWT's subject, else its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Identity<'a> {
    Subject(&'a str),
    Client(Client),
}

/// As Redis keys name it: `sub:<sub>`, or the client's address.
impl std::fmt::Display for Identity<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Subject(subject) => write!(f, "sub:{subject}"),
            Identity::Client(Client::Addr(ip)) => write!(f, "{ip}"),
            Identity::Client(Client::Unreadable) => f.write_str("unreadable"),
            Identity::Client(Client::Unknown) => f.write_str("unknown"),
        }
    }
}

/// Where a request comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Client {
    /// An IPv4 address, or an IPv6 one cut to its /64 (one host's usual share).
    Addr(IpAddr),
    /// A proxy on this machine forwarded a client address that does not parse: these share
    /// a bucket of their own, never the local agents'.
    Unreadable,
    Unknown,
}

/// The peer, or (from a proxy on this machine) the last address of the last
/// `X-Forwarded-For` line: the one that proxy added, which its client cannot choose.
fn client_identity(peer: Option<IpAddr>, headers: &HeaderMap) -> Client {
    let forwarded = || {
        let line = headers.get_all(X_FORWARDED_FOR).iter().next_back()?;
        let last = line.to_str().ok().and_then(|v| v.rsplit(',').next()).map(str::trim);
        Some(last.and_then(|a| a.parse::<IpAddr>().ok()).map_or(Client::Unreadable, client))
    };
    match peer {
        Some(ip) if is_loopback(ip) => forwarded().unwrap_or(client(ip)),
        Some(ip) => client(ip),
        None => Client::Unknown,
    }
}

fn client(ip: IpAddr) -> Client {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Client::Addr(IpAddr::V4(v4)),
            None => Client::Addr(IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into())),
        },
        v4 => Client::Addr(v4),
    }
}

/// What the request does; a JSON-RPC POST's body is read (and put back) to know.
async fn classify(
    security: &Security,
    request: Request,
    max_body: usize,
) -> Result<(Request, Kind), Box<Response>> {
    let path = request.uri().path();
    if request.method() != Method::POST {
        return Ok((request, Kind::Other));
    }
    let rest = if security.mcp_paths.iter().any(|p| p == path) {
        None
    } else {
        match security.rest_routes.iter().find(|route| route.path == path) {
            // Only a route whose tool can mark what it reads needs its body read.
            Some(route) if MARKING_TOOLS.contains(&route.tool) => Some(route.tool),
            Some(route) => return Ok((request, Kind::Tool(route.tool.to_string()))),
            None => return Ok((request, Kind::Change)),
        }
    };
    let (parts, body) = request.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, max_body)
        .await
        .map_err(|_| Box::new(refuse(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")))?;
    let kind = match rest {
        Some(tool) => tool_kind(tool, rest_marks_read(&bytes)),
        None => rpc_kind(&bytes),
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), kind))
}

/// The reading tools that take `mark_read`.
const MARKING_TOOLS: [&str; 3] = ["fetch_inbox", "fetch_topic", "fetch_inbox_product"];

/// A call of `tool`: a reading tool asked to mark what it lists read is a change.
fn tool_kind(tool: &str, marks_read: bool) -> Kind {
    if marks_read && MARKING_TOOLS.contains(&tool) {
        Kind::MarkingRead(tool.to_string())
    } else {
        Kind::Tool(tool.to_string())
    }
}

/// Whether a REST body asks to mark read, decoded as the route decodes it (escapes and all);
/// a body the route would refuse marks nothing.
fn rest_marks_read(body: &[u8]) -> bool {
    serde_json::from_slice::<Flags>(body).ok().and_then(|f| f.mark_read).unwrap_or(false)
}

/// The arguments that make a reading call a change.
#[derive(Deserialize)]
struct Flags {
    #[serde(default)]
    mark_read: Option<bool>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Flags>,
}

/// A JSON-RPC request's kind: `tools/call` with its tool, `resources/*` or
/// `subscriptions/listen`, else other. A body that is not JSON, or a batch (which the
/// transport refuses), is left to the transport.
fn rpc_kind(body: &[u8]) -> Kind {
    // Without an escape, each of those methods appears literally; a body with none
    // (`tools/list`, `initialize`, …) needs no parse.
    static NEEDLES: LazyLock<[memchr::memmem::Finder<'static>; 3]> = LazyLock::new(|| {
        ["tools/call", "resources/", "subscriptions/listen"].map(memchr::memmem::Finder::new)
    });
    let escaped = memchr::memchr(b'\\', body).is_some();
    if !escaped && NEEDLES.iter().all(|needle| needle.find(body).is_none()) {
        return Kind::Other;
    }
    match serde_json::from_slice::<Envelope<'_>>(body) {
        Ok(Envelope { method, params }) => {
            let (name, arguments) = params.map_or((None, None), |p| (p.name, p.arguments));
            let marks = arguments.and_then(|a| a.mark_read).unwrap_or(false);
            kind_of(method.as_deref(), name.as_deref(), marks)
        }
        // The typed read refuses a key given twice, where the transport's (a `Value`) keeps
        // the last: read it the transport's way, so that `{"method":"tools/list",
        // "method":"tools/call",…}` is judged as what will run.
        Err(_) => match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => kind_of(
                value.get("method").and_then(serde_json::Value::as_str),
                value.pointer("/params/name").and_then(serde_json::Value::as_str),
                value
                    .pointer("/params/arguments/mark_read")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false),
            ),
            Err(_) => Kind::Other,
        },
    }
}

fn kind_of(method: Option<&str>, tool: Option<&str>, marks_read: bool) -> Kind {
    match method {
        Some("tools/call") => tool_kind(tool.unwrap_or_default(), marks_read),
        // A listen stream resolves and watches resources (2026-07-28): the resources bucket.
        Some(method) if method.starts_with("resources/") || method == "subscriptions/listen" => {
            Kind::Resources
        }
        _ => Kind::Other,
    }
}

/// Whether `roles` may do `kind`: read-only tools need a reader or writer role, other tools
/// and the UI's changes a writer role; the rest is open to every role.
fn allowed(settings: &SecuritySettings, roles: &[String], kind: &Kind) -> bool {
    let writer = roles.iter().any(|role| settings.writer_roles.contains(role));
    match kind {
        Kind::Tool(name) if settings.readonly_tools.contains(name) => {
            writer || roles.iter().any(|role| settings.reader_roles.contains(role))
        }
        Kind::Tool(_) | Kind::MarkingRead(_) | Kind::Change => writer,
        Kind::Resources | Kind::Other => true,
    }
}

/// The bucket a request takes from (kind and tool; the client completes the key), its rate
/// and its burst.
fn bucket<'k>(
    limits: &RateLimits,
    kind: &'k Kind,
    tools: &[&str],
) -> ((&'static str, &'k str), f64, f64) {
    let burst = |burst: f64, rate: f64| if burst > 0.0 { burst } else { rate };
    match kind {
        Kind::Tool(name) | Kind::MarkingRead(name) => (
            ("tools", if tools.contains(&name.as_str()) { name.as_str() } else { "?" }),
            limits.tools_per_minute,
            burst(limits.tools_burst, limits.tools_per_minute),
        ),
        Kind::Resources => (
            ("resources", "*"),
            limits.resources_per_minute,
            burst(limits.resources_burst, limits.resources_per_minute),
        ),
        Kind::Change | Kind::Other => {
            (("other", "*"), limits.other_per_minute, limits.other_per_minute)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every REST route stands for a tool the catalogue knows, and a POST to it is classified
    /// as that tool's call (so a reader may use the reading ones); any other POST outside MCP
    /// needs a writer.
    #[tokio::test]
    async fn every_rest_route_is_classified_as_its_tool() {
        let security = Security::new(SecuritySettings::default(), vec!["/mcp".into()], vec![])
            .expect("security");
        let routes = crate::http::rest::table();
        assert!(!routes.is_empty());
        for route in routes {
            assert!(crate::mcp::catalog::lookup(route.tool).is_some(), "{route:?}");
            let request = Request::post(route.path).body(Body::empty()).expect("request");
            let (_, kind) = classify(&security, request, 1024).await.expect("classified");
            assert_eq!(kind, Kind::Tool(route.tool.to_string()), "{route:?}");
        }
        let request = Request::post("/mail/api/retire-agent").body(Body::empty()).expect("post");
        let (_, kind) = classify(&security, request, 1024).await.expect("classified");
        assert_eq!(kind, Kind::Change);
    }

    #[test]
    fn json_rpc_requests_are_told_apart() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"x":[1,{"y":2}]}}}"#;
        assert_eq!(rpc_kind(call), Kind::Tool("send_message".into()));
        let escaped = br#"{"method":"tools\/call","params":{"name":"fetch_\u0069nbox"}}"#;
        assert_eq!(rpc_kind(escaped), Kind::Tool("fetch_inbox".into()));
        assert_eq!(rpc_kind(br#"{"method":"resources/read","params":{}}"#), Kind::Resources);
        let listen = br#"{"method":"subscriptions/listen","params":{"notifications":{}}}"#;
        assert_eq!(rpc_kind(listen), Kind::Resources);
        assert_eq!(rpc_kind(br#"{"method":"tools/list"}"#), Kind::Other);
        let hidden = br#"{"method":"\u0074ools/call","params":{"name":"send_message"}}"#;
        assert_eq!(rpc_kind(hidden), Kind::Tool("send_message".into()), "escapes are read");
        assert_eq!(rpc_kind(br#"[{"method":"tools/call"}]"#), Kind::Other, "a batch");
        assert_eq!(rpc_kind(b"not json"), Kind::Other);
        assert_eq!(rpc_kind(br#"{"method":"tools/call"}"#), Kind::Tool(String::new()));
        // A key given twice counts as the transport reads it: the last one.
        let twice = br#"{"method":"tools/list","method":"tools/call","params":{"name":"whois","name":"send_message"}}"#;
        assert_eq!(rpc_kind(twice), Kind::Tool("send_message".into()));
    }

    #[test]
    fn readers_read_and_writers_write() {
        let settings = SecuritySettings::default();
        let tool = |name: &str| Kind::Tool(name.to_string());
        let roles = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let reader = roles(&["reader"]);
        assert!(allowed(&settings, &reader, &tool("fetch_inbox")));
        assert!(!allowed(&settings, &reader, &tool("send_message")));
        assert!(!allowed(&settings, &reader, &tool("")), "a call naming no tool needs a writer");
        assert!(!allowed(&settings, &reader, &Kind::Change));
        assert!(allowed(&settings, &reader, &Kind::Resources));
        assert!(allowed(&settings, &reader, &Kind::Other));
        let writer = roles(&["ro", "rw"]);
        assert!(allowed(&settings, &writer, &tool("send_message")));
        assert!(allowed(&settings, &writer, &Kind::Change));
        assert!(!allowed(&settings, &roles(&["nobody"]), &tool("fetch_inbox")), "no tools");
    }

    #[test]
    fn local_means_a_loopback_peer_no_proxy_between() {
        let mut headers = HeaderMap::new();
        let v4: IpAddr = "127.0.0.1".parse().expect("ip");
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert!(is_local(Some(v4), &headers) && is_local(Some(mapped), &headers));
        assert!(!is_local(Some("10.0.0.5".parse().expect("ip")), &headers));
        assert!(!is_local(None, &headers));
        headers.insert("origin", "http://localhost:3000".parse().expect("value"));
        assert!(is_local(Some(v4), &headers), "a page of this machine");
        headers.insert("origin", "https://evil.example".parse().expect("value"));
        assert!(!is_local(Some(v4), &headers), "a page of another site, through the browser");
        headers.remove("origin");
        headers.insert("x-forwarded-for", "203.0.113.9".parse().expect("value"));
        assert!(!is_local(Some(v4), &headers), "a forged or proxied request is remote");
        let addr = |text: &str| Client::Addr(text.parse().expect("ip"));
        assert_eq!(client_identity(Some(v4), &headers), addr("203.0.113.9"));
        headers.insert("x-forwarded-for", "1.1.1.1, 203.0.113.7".parse().expect("value"));
        assert_eq!(client_identity(Some(v4), &headers), addr("203.0.113.7"), "the proxy's entry");
        // A client's own line comes first; the proxy appends its line last.
        headers.append("x-forwarded-for", "198.51.100.1".parse().expect("value"));
        assert_eq!(client_identity(Some(v4), &headers), addr("198.51.100.1"), "the last line");
        headers.insert("x-forwarded-for", "not an address".parse().expect("value"));
        assert_eq!(client_identity(Some(v4), &headers), Client::Unreadable, "never the peer's");
        headers.insert(
            "x-forwarded-for",
            axum::http::HeaderValue::from_bytes(b"\xff").expect("bytes"),
        );
        assert_eq!(client_identity(Some(v4), &headers), Client::Unreadable);
        let remote: IpAddr = "198.51.100.4".parse().expect("ip");
        assert_eq!(client_identity(Some(remote), &headers), Client::Addr(remote), "not trusted");
        let v6: IpAddr = "2001:db8:1:2:3:4:5:6".parse().expect("ip");
        assert_eq!(client_identity(Some(v6), &headers), addr("2001:db8:1:2::"), "by /64");
    }

    #[test]
    fn tokens_compare_whole() {
        let mut headers = HeaderMap::new();
        let wanted = sha1(&[b"s3cret"]);
        assert!(!bearer_matches(&headers, &wanted));
        for (value, ok) in [
            ("Bearer s3cret", true),
            ("Bearer s3cre", false),
            ("Bearer s3cret ", false),
            ("bearer s3cret", false),
            ("s3cret", false),
            ("Bearer S3cret", false),
        ] {
            headers.insert(header::AUTHORIZATION, value.parse().expect("value"));
            assert_eq!(bearer_matches(&headers, &wanted), ok, "{value}");
        }
    }

    #[test]
    fn buckets_per_kind_tool_and_client() {
        let limits = RateLimits { tools_burst: 5.0, ..RateLimits::default() };
        let tools = ["send_message"];
        let send = Kind::Tool("send_message".into());
        assert_eq!(bucket(&limits, &send, &tools), (("tools", "send_message"), 60.0, 5.0));
        let made_up = Kind::Tool("no_such_tool_8131".into());
        assert_eq!(bucket(&limits, &made_up, &tools).0, ("tools", "?"), "one bucket for all");
        assert_eq!(bucket(&limits, &Kind::Resources, &tools), (("resources", "*"), 120.0, 120.0));
        assert_eq!(bucket(&limits, &Kind::Change, &tools), (("other", "*"), 60.0, 60.0));
    }
}
