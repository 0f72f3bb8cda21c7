//! The web UI at `/mail` (docs/compat/http.md §7): server-rendered pages for the people who
//! oversee the fleet. `routes.rs` is the one table of its URLs and their handlers, which the
//! router below serves and every link is filled from. One module a page family holds its
//! handlers, its view models and its askama template structs (`templates/pages/`, sharing
//! `templates/partials/`; a template names a URL as `routes::NAME`, so each of these modules
//! imports `routes`); a POST goes with the page whose button sends it. Bodies are Markdown
//! sanitised by ammonia (`markdown.rs`); the stylesheet and script are compiled in
//! (`assets.rs`), so the UI works air-gapped. Every answer passes `protect.rs` (the same
//! Origin and Host checks as MCP, the CSRF token of a POST, a strict Content-Security-Policy).

mod archive;
mod assets;
mod attachments;
mod cache;
mod compose;
mod csrf;
mod error;
mod events;
mod fleet;
mod inbox;
mod markdown;
mod message;
mod project;
mod projects;
mod protect;
mod reservations;
mod routes;
mod siblings;
mod thread;
mod view;

use axum::Router;
use axum::middleware;

pub use self::cache::PageCache;
use crate::state::AppState;

/// The `/mail` routes' patterns (`routes.rs`).
pub fn patterns() -> Vec<&'static str> {
    routes::table().into_iter().map(|(pattern, _)| pattern).collect()
}

/// The `/mail` routes (`routes.rs`), each answer passing `protect_page`.
pub fn router(state: AppState) -> Router<AppState> {
    let router = routes::table()
        .into_iter()
        .fold(Router::new(), |router, (pattern, handler)| router.route(pattern, handler));
    router.route_layer(middleware::from_fn_with_state(state, protect::protect_page))
}
