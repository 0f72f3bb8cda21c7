//! The web UI at `/mail` (docs/compat/http.md §7): server-rendered pages for the people who
//! oversee the fleet. One module a page family holds its handlers, its view models and its
//! askama template structs (`templates/pages/`, sharing `templates/partials/`); a POST goes
//! with the page whose button sends it. Bodies are Markdown sanitised by ammonia
//! (`markdown.rs`); the stylesheet and script are compiled in (`assets.rs`), so the UI works
//! air-gapped. Every answer passes `protect.rs` (the same Origin and Host checks as MCP, the
//! CSRF token of a POST, a strict Content-Security-Policy).

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
mod paths;
mod project;
mod projects;
mod protect;
mod reservations;
mod siblings;
mod thread;
mod view;

use axum::Router;
use axum::middleware;
use axum::routing::{get, post};

pub use self::cache::PageCache;
use crate::state::AppState;

/// The `/mail` routes.
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/mail", get(fleet::show))
        .route("/mail/", get(fleet::show))
        .route("/mail/unified-inbox", get(fleet::show))
        .route("/mail/api/unified-inbox", get(fleet::json))
        .route("/mail/api/events", get(events::events))
        .route("/mail/projects", get(projects::show))
        .route("/mail/static/{file}", get(assets::asset))
        .route("/mail/{project}", get(project::show))
        .route("/mail/{project}/search", get(project::show))
        .route("/mail/{project}/inbox/{agent}", get(inbox::show))
        .route("/mail/{project}/message/{id}", get(message::show))
        .route("/mail/{project}/thread/{thread_id}", get(thread::show))
        .route("/mail/{project}/file_reservations", get(reservations::show))
        .route("/mail/{project}/attachments", get(attachments::show))
        .route("/mail/api/projects/{project}/agents", get(project::agent_names))
        .route("/mail/archive/guide", get(archive::guide::show))
        .route("/mail/archive/activity", get(archive::activity::show))
        .route("/mail/archive/timeline", get(archive::timeline::show))
        .route("/mail/archive/commit/{sha}", get(archive::commit::show))
        .route("/mail/archive/browser", get(archive::browser::show))
        .route("/mail/archive/browser/{project}/file", get(archive::browser::file))
        .route("/mail/archive/network", get(archive::network::show))
        .route("/mail/archive/time-travel", get(archive::time_travel::show))
        .route("/mail/archive/time-travel/snapshot", get(archive::time_travel::snapshot))
        .route("/mail/api/locks", get(archive::locks))
        .route("/mail/{project}/overseer/compose", get(compose::show))
        .route("/mail/{project}/overseer/send", post(compose::send))
        .route("/mail/{project}/inbox/{agent}/mark-read", post(inbox::mark_read))
        .route("/mail/{project}/inbox/{agent}/mark-all-read", post(inbox::mark_all_read))
        .route("/mail/{project}/inbox/{agent}/delete-messages", post(inbox::delete_messages))
        .route("/mail/api/delete-messages", post(message::delete_messages))
        .route("/mail/api/retire-agent", post(project::retire_agent))
        .route("/mail/api/unretire-agent", post(project::unretire_agent))
        .route("/mail/api/archive-project", post(projects::archive))
        .route("/mail/api/projects/{project_id}/siblings/{other_id}", post(siblings::set_status))
        .route("/mail/api/unarchive-project", post(projects::unarchive))
        .route_layer(middleware::from_fn_with_state(state, protect::protect_page))
}
