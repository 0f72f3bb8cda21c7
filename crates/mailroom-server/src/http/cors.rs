//! CORS (docs/compat/http.md §4, item 1): which other origins' pages may call the server from
//! a browser. Outermost, so a preflight is answered before any token is asked for (a browser
//! sends none with it). On by default when `APP_ENVIRONMENT` is `development` (the default),
//! as in the reference; with no `HTTP_CORS_ORIGINS` no other origin is allowed anyway.
//!
//! The Origin check against DNS rebinding (mcp/transport.rs) still refuses requests from
//! origins not listed; this layer only adds the headers that let a listed origin's page read
//! the answer. A request without `Origin` (agents, scripts, same-origin page loads) is not a
//! CORS request and passes by untouched: the headers would be of no use to it, and building
//! them cost a fifth of a `tools/list`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{HeaderName, HeaderValue, Method, Request, Response, header};
use futures_util::future::Either;
use tower::{Layer, Service};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

use crate::config::csv;

/// `HTTP_CORS_*` (origins are `ServerConfig::allowed_origins`, `HTTP_CORS_ORIGINS`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorsSettings {
    /// `HTTP_CORS_ALLOW_CREDENTIALS` (default false).
    pub allow_credentials: bool,
    /// `HTTP_CORS_ALLOW_METHODS` (default `*`).
    pub methods: Vec<Method>,
    /// `HTTP_CORS_ALLOW_HEADERS` (default `*`).
    pub headers: Vec<HeaderName>,
}

impl CorsSettings {
    /// `None` when CORS is off (`HTTP_CORS_ENABLED`, by default on only in development).
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let environment = lookup("APP_ENVIRONMENT").unwrap_or_else(|| "development".into());
        let enabled = match lookup("HTTP_CORS_ENABLED") {
            Some(v) => mailroom_core::config::parse_bool("HTTP_CORS_ENABLED", &v)?,
            None => environment.trim().eq_ignore_ascii_case("development"),
        };
        if !enabled {
            return Ok(None);
        }
        let allow_credentials = match lookup("HTTP_CORS_ALLOW_CREDENTIALS") {
            Some(v) => mailroom_core::config::parse_bool("HTTP_CORS_ALLOW_CREDENTIALS", &v)?,
            None => false,
        };
        // A `*` anywhere in a list means every one (an empty list).
        let list = |name: &str| {
            let items = csv(&lookup(name).unwrap_or_default());
            if items.iter().any(|i| i == "*") { Vec::new() } else { items }
        };
        let methods = list("HTTP_CORS_ALLOW_METHODS")
            .iter()
            .map(|m| m.to_ascii_uppercase().parse::<Method>())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("HTTP_CORS_ALLOW_METHODS: {e}"))?;
        let headers = list("HTTP_CORS_ALLOW_HEADERS")
            .iter()
            .map(|h| HeaderName::try_from(h.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("HTTP_CORS_ALLOW_HEADERS: {e}"))?;
        Ok(Some(Self { allow_credentials, methods, headers }))
    }

    /// `HTTP_CORS_ORIGINS` as this layer needs it: each a valid header value, and `*` not
    /// with credentials (browsers refuse that pair, and any site could then send the
    /// user's credentials).
    pub fn check_origins(&self, origins: &[String]) -> Result<(), String> {
        if let Some(bad) = origins.iter().find(|o| HeaderValue::from_str(o).is_err()) {
            return Err(format!("HTTP_CORS_ORIGINS: {bad:?} is not an origin"));
        }
        if self.allow_credentials && origins.iter().any(|o| o == "*") {
            return Err("HTTP_CORS_ALLOW_CREDENTIALS cannot go with HTTP_CORS_ORIGINS=*: name \
                        the origins"
                .to_string());
        }
        Ok(())
    }

    /// The layer for `origins` (`*` allows every origin). An empty method or header list
    /// stands for `*`: the request's own are echoed, which browsers accept with credentials
    /// too (a literal `*` they do not).
    pub fn layer(&self, origins: &[String]) -> CorsLayer {
        let origin = if origins.iter().any(|o| o == "*") {
            AllowOrigin::mirror_request()
        } else {
            AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
        };
        let methods = match self.methods.is_empty() {
            true => AllowMethods::mirror_request(),
            false => AllowMethods::list(self.methods.iter().cloned()),
        };
        let headers = match self.headers.is_empty() {
            true => AllowHeaders::mirror_request(),
            false => AllowHeaders::list(self.headers.iter().cloned()),
        };
        CorsLayer::new()
            .allow_origin(origin)
            .allow_methods(methods)
            .allow_headers(headers)
            .allow_credentials(self.allow_credentials)
            // A browser MCP client must read its session id.
            .expose_headers([HeaderName::from_static("mcp-session-id")])
            .max_age(std::time::Duration::from_secs(600))
    }
}

/// The whole application behind CORS, for requests with an `Origin` header only. It wraps
/// the finished router, not each route (a layer on a router is cloned with every route's
/// service per request, CORS settings and all).
#[derive(Clone)]
pub struct CorsForOrigins<S> {
    cors: Option<Arc<CorsLayer>>,
    inner: S,
}

impl<S> CorsForOrigins<S> {
    /// `inner` behind `cors` (`None`: CORS off, every request goes straight through).
    pub fn new(cors: Option<CorsLayer>, inner: S) -> Self {
        Self { cors: cors.map(Arc::new), inner }
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for CorsForOrigins<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    ReqBody: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = Either<BoxFuture<Result<Response<ResBody>, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let Some(cors) =
            self.cors.as_ref().filter(|_| request.headers().contains_key(header::ORIGIN))
        else {
            return Either::Right(self.inner.call(request));
        };
        let mut cors = cors.layer(self.inner.clone());
        Either::Left(Box::pin(async move {
            std::future::poll_fn(|cx| cors.poll_ready(cx)).await?;
            cors.call(request).await
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Option<CorsSettings>, String> {
        CorsSettings::from_env(&|name| {
            pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_string())
        })
    }

    #[test]
    fn on_in_development_off_elsewhere_unless_asked() {
        let default = with(&[]).expect("valid").expect("on in development");
        assert_eq!(default, CorsSettings::default());
        assert_eq!(with(&[("APP_ENVIRONMENT", "production")]).expect("valid"), None);
        let asked = with(&[("APP_ENVIRONMENT", "production"), ("HTTP_CORS_ENABLED", "1")]);
        assert!(asked.expect("valid").is_some());
        assert_eq!(with(&[("HTTP_CORS_ENABLED", "false")]).expect("valid"), None);
        let listed =
            with(&[("HTTP_CORS_ALLOW_METHODS", "get, POST"), ("HTTP_CORS_ALLOW_HEADERS", "x-a")])
                .expect("valid")
                .expect("on");
        assert_eq!(listed.methods, [Method::GET, Method::POST]);
        assert_eq!(listed.headers, [HeaderName::from_static("x-a")]);
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (name, value) in [
            ("HTTP_CORS_ENABLED", "maybe"),
            ("HTTP_CORS_ALLOW_CREDENTIALS", "sometimes"),
            ("HTTP_CORS_ALLOW_METHODS", "GET,PO ST"),
            ("HTTP_CORS_ALLOW_HEADERS", "bad header"),
        ] {
            let error = with(&[(name, value)]).expect_err(name);
            assert!(error.contains(name), "{error}");
        }
    }
}
