//! The web UI at `/mail` (docs/compat/http.md §7): server-rendered pages for the people who
//! oversee the fleet. Pages are askama templates (`pages.rs`), bodies Markdown sanitised by
//! ammonia (`markdown.rs`); the stylesheet and script are compiled in (`/mail/static/…`), so
//! the UI works air-gapped. Every response carries a strict Content-Security-Policy, and
//! every request passes the same Origin and Host checks as MCP.

mod actions;
mod archive;
mod archive_pages;
mod cache;
mod csrf;
mod events;
mod markdown;
mod pages;
mod paths;

use std::future::Future;

use askama::Template;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use mailroom_core::Error;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::messaging::overseer::OVERSEER_NAME;
use mailroom_core::records::MessageId;
use serde::Deserialize;
use serde_json::json;

pub use self::cache::PageCache;
use self::cache::Stamp;
use self::pages::{
    AgentLink, Card, ComposePage, ErrorPage, FleetPage, InboxPage, MessagePage, ProjectLink,
    ProjectPage, ProjectsPage, ReservationRow, ReservationsPage, Row, SiblingLink, ThreadPage,
};
use crate::http::error::status_and_message;
use crate::http::security::origin::check_origin_and_host;
use crate::state::AppState;

/// Messages the unified inbox shows by default.
const FLEET_DEFAULT: i64 = 500;
/// Messages an agent's inbox page shows by default.
const INBOX_PAGE_DEFAULT: i64 = 50;
/// Search results a project page shows.
const SEARCH_LIMIT: i64 = 200;

/// No inline script or style, nothing from another origin, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' \
     data: https:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// The `/mail` routes.
pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/mail", get(fleet))
        .route("/mail/", get(fleet))
        .route("/mail/unified-inbox", get(fleet))
        .route("/mail/api/unified-inbox", get(fleet_json))
        .route("/mail/api/events", get(events::events))
        .route("/mail/projects", get(projects))
        .route("/mail/static/{file}", get(asset))
        .route("/mail/{project}", get(project))
        .route("/mail/{project}/search", get(project))
        .route("/mail/{project}/inbox/{agent}", get(inbox))
        .route("/mail/{project}/message/{id}", get(message))
        .route("/mail/{project}/thread/{thread_id}", get(thread))
        .route("/mail/{project}/file_reservations", get(reservations))
        .route("/mail/{project}/attachments", get(archive::attachments))
        .route("/mail/api/projects/{project}/agents", get(archive::agent_names))
        .route("/mail/archive/guide", get(archive::guide))
        .route("/mail/archive/activity", get(archive::activity))
        .route("/mail/archive/timeline", get(archive::timeline))
        .route("/mail/archive/commit/{sha}", get(archive::commit))
        .route("/mail/archive/browser", get(archive::browser))
        .route("/mail/archive/browser/{project}/file", get(archive::file))
        .route("/mail/archive/network", get(archive::network_page))
        .route("/mail/archive/time-travel", get(archive::time_travel))
        .route("/mail/archive/time-travel/snapshot", get(archive::snapshot))
        .route("/mail/api/locks", get(locks))
        .route("/mail/{project}/overseer/compose", get(compose))
        .route("/mail/{project}/overseer/send", post(actions::overseer_send))
        .route("/mail/{project}/inbox/{agent}/mark-read", post(actions::mark_read))
        .route("/mail/{project}/inbox/{agent}/mark-all-read", post(actions::mark_all_read))
        .route("/mail/{project}/inbox/{agent}/delete-messages", post(actions::delete_from_inbox))
        .route("/mail/api/delete-messages", post(actions::delete_messages))
        .route("/mail/api/retire-agent", post(actions::retire_agent))
        .route("/mail/api/unretire-agent", post(actions::unretire_agent))
        .route("/mail/api/archive-project", post(actions::archive_project))
        .route("/mail/api/projects/{project_id}/siblings/{other_id}", post(actions::sibling_status))
        .route("/mail/api/unarchive-project", post(actions::unarchive_project))
        .route_layer(middleware::from_fn_with_state(state, protect_page))
}

/// Origin and Host checks first, then the CSRF token of a state-changing request; the
/// security headers (and a CSRF cookie where the browser has none) on whatever the route
/// answers.
async fn protect_page(State(state): State<AppState>, request: Request, next: Next) -> Response {
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

/// A failed page: its status and a message a person can read.
struct PageError(StatusCode, String);

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

fn bad_request(message: String) -> PageError {
    PageError(StatusCode::BAD_REQUEST, message)
}

fn render(page: &impl Template) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a page failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "The page failed to render.").into_response()
        }
    }
}

/// An optional whole-number query parameter; anything else is an error naming it.
fn number(field: &str, raw: Option<&str>) -> Result<Option<i64>, PageError> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| bad_request(format!("{field} must be a whole number, not {text:?}."))),
    }
}

#[derive(Deserialize, Default)]
struct FleetQuery {
    limit: Option<String>,
    filter_importance: Option<String>,
    include_projects: Option<String>,
}

async fn fleet(State(state): State<AppState>, uri: Uri, Query(q): Query<FleetQuery>) -> Response {
    cached(&state.clone(), &uri, fleet_page(state, q)).await
}

async fn fleet_page(state: AppState, q: FleetQuery) -> Result<Response, PageError> {
    let limit = number("limit", q.limit.as_deref())?.unwrap_or(FLEET_DEFAULT);
    let filter = q.filter_importance.unwrap_or_default().trim().to_ascii_lowercase();
    let importance = (!filter.is_empty()).then(|| filter.clone());
    let messages = state.core.fleet_messages(limit, importance).await?;
    let now = Timestamp::now();
    Ok(render(&FleetPage {
        rows: messages.iter().map(|m| Row::from_fleet(m, now)).collect(),
        projects: project_links(&state).await?,
        siblings: siblings(&state).await?,
        filter,
    }))
}

/// `GET /mail/api/unified-inbox`: `{messages, projects}` for scripts and polling.
async fn fleet_json(State(state): State<AppState>, Query(q): Query<FleetQuery>) -> Response {
    let answer = async {
        let limit = number("limit", q.limit.as_deref())?.unwrap_or(FLEET_DEFAULT);
        let messages = state.core.fleet_messages(limit, None).await?;
        let with_projects = !matches!(
            q.include_projects.as_deref().map(str::trim),
            Some("false" | "0" | "no" | "off")
        );
        let projects = if with_projects { state.core.list_projects().await? } else { Vec::new() };
        Ok(json!({ "messages": messages, "projects": projects }))
    };
    json_answer(answer.await)
}

async fn projects(State(state): State<AppState>, uri: Uri) -> Response {
    let answer = async {
        let projects = project_links(&state).await?;
        Ok(render(&ProjectsPage { projects, siblings: siblings(&state).await? }))
    };
    cached(&state, &uri, answer).await
}

/// Every project, as the pages list them.
async fn project_links(state: &AppState) -> Result<Vec<ProjectLink>, PageError> {
    let now = Timestamp::now();
    Ok(state.core.list_projects().await?.iter().map(|p| ProjectLink::new(p, now)).collect())
}

/// Pairs of related projects to show (scored in the background: `ops/projects/siblings.rs`).
async fn siblings(state: &AppState) -> Result<Vec<SiblingLink>, PageError> {
    let shown = state.core.shown_siblings().await?;
    Ok(shown.iter().map(SiblingLink::new).collect())
}

#[derive(Deserialize, Default)]
struct SearchQuery {
    q: Option<String>,
}

async fn project(
    State(state): State<AppState>,
    uri: Uri,
    Path(project): Path<String>,
    Query(q): Query<SearchQuery>,
) -> Response {
    let answer = async {
        let overview = state.core.project_overview(project).await?;
        let slug = overview.project.slug.clone();
        let query = q.q.unwrap_or_default().trim().to_string();
        let now = Timestamp::now();
        let rows = if query.is_empty() {
            overview.messages.iter().map(|m| Row::from_message(&slug, m, false, now)).collect()
        } else {
            let found = state.core.search_messages(slug.clone(), query.clone(), SEARCH_LIMIT, None);
            found.await?.result.iter().map(|r| Row::from_search(&slug, r, now)).collect()
        };
        Ok(render(&ProjectPage {
            href: paths::project(&slug),
            compose_href: paths::compose(&slug),
            reservations_href: paths::reservations(&slug),
            attachments_href: paths::attachments(&slug),
            archive_href: paths::archive_browser(Some(&slug), ""),
            timeline_href: paths::archive_view("timeline", Some(&slug)),
            network_href: paths::archive_view("network", Some(&slug)),
            human_key: overview.project.human_key.clone(),
            searched: !query.is_empty(),
            query,
            rows,
            agents: overview.agents.iter().map(|a| AgentLink::new(&slug, a)).collect(),
            slug,
        }))
    };
    cached(&state, &uri, answer).await
}

#[derive(Deserialize, Default)]
struct InboxQuery {
    page: Option<String>,
    limit: Option<String>,
}

async fn inbox(
    State(state): State<AppState>,
    uri: Uri,
    Path((project, agent)): Path<(String, String)>,
    Query(q): Query<InboxQuery>,
) -> Response {
    let answer = async {
        let page = number("page", q.page.as_deref())?.unwrap_or(1);
        let size = number("limit", q.limit.as_deref())?.unwrap_or(INBOX_PAGE_DEFAULT);
        if page < 1 || size < 1 {
            return Err(bad_request("page and limit must be at least 1.".into()));
        }
        let view = state.core.agent_inbox_page(project, agent, page, size).await?;
        let slug = view.project.slug.clone();
        let name = view.agent.name.clone();
        let now = Timestamp::now();
        let pages = view.pages();
        let link = |n: i64| paths::inbox_page(&slug, &name, n);
        Ok(render(&InboxPage {
            project_href: paths::project(&slug),
            inbox_href: paths::inbox(&slug, &name),
            agent: name.clone(),
            total: if view.total_is_capped() {
                format!("more than {}", view.total - 1)
            } else {
                view.total.to_string()
            },
            capped: view.total_is_capped(),
            page: view.page,
            pages,
            rows: view
                .messages
                .iter()
                .map(|e| Row {
                    selectable: true,
                    ..Row::from_message(&slug, &e.message, !e.read, now)
                })
                .collect(),
            prev_href: (view.page > 1).then(|| link(view.page - 1)),
            // Past the count's cap, a full page is the sign of another.
            next_href: if view.total_is_capped() {
                (view.messages.len() as i64 == view.page_size).then(|| link(view.page + 1))
            } else {
                (view.page < pages).then(|| link(view.page + 1))
            },
            slug: slug.clone(),
        }))
    };
    cached(&state, &uri, answer).await
}

async fn message(
    State(state): State<AppState>,
    Path((project, id)): Path<(String, String)>,
) -> Response {
    let answer = async {
        let id: i64 = id
            .trim()
            .parse()
            .map_err(|_| bad_request(format!("A message id is a whole number, not {id:?}.")))?;
        let detail = state.core.project_by_key(project.clone()).await?;
        let m = state.core.message_detail(project, MessageId(id), None).await?;
        let commit = state.core.message_commit(&detail.slug, &m.message).await;
        let thread_href = m.message.thread_id.as_deref().map(|t| paths::thread(&detail.slug, t));
        Ok(render(&MessagePage {
            project_href: paths::project(&detail.slug),
            delete_body: json!({ "message_ids": [id] }).to_string(),
            thread_href,
            m: Card::new(&m, commit, Timestamp::now()),
            slug: detail.slug,
        }))
    };
    page(answer.await)
}

async fn thread(
    State(state): State<AppState>,
    uri: Uri,
    Path((project, thread_id)): Path<(String, String)>,
) -> Response {
    let answer = async {
        let detail = state.core.project_by_key(project.clone()).await?;
        let view = state.core.thread_view(project, thread_id.clone(), true, None).await?;
        let now = Timestamp::now();
        Ok(render(&ThreadPage {
            project_href: paths::project(&detail.slug),
            thread_id,
            messages: view.messages.iter().map(|m| Card::new(m, None, now)).collect(),
            slug: detail.slug,
        }))
    };
    cached(&state, &uri, answer).await
}

/// The stylesheet, script and icon, compiled into the binary.
async fn asset(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "app.css" => (include_str!("../../static/app.css"), "text/css; charset=utf-8"),
        "app.js" => (include_str!("../../static/app.js"), "text/javascript; charset=utf-8"),
        "icon.svg" => (include_str!("../../static/icon.svg"), "image/svg+xml"),
        _ => return PageError(StatusCode::NOT_FOUND, "No such file.".into()).into_response(),
    };
    // Compiled in, so they change only with the binary: an hour in the browser's cache.
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "max-age=3600")], body).into_response()
}

fn page(answer: Result<Response, PageError>) -> Response {
    answer.unwrap_or_else(IntoResponse::into_response)
}

/// A page from the cache when nothing was written since it was rendered (`cache.rs`), else
/// rendered now and kept. Only pages that answered 200 are kept.
async fn cached(
    state: &AppState,
    uri: &Uri,
    make: impl Future<Output = Result<Response, PageError>>,
) -> Response {
    let stamp = Stamp::now(*state.core.changes().borrow(), 0);
    cached_against(state, uri, stamp, make).await
}

/// [`cached`] for a page that shows the Git archive: a commit also makes it stale.
async fn cached_archive_page(
    state: &AppState,
    uri: &Uri,
    make: impl Future<Output = Result<Response, PageError>>,
) -> Response {
    let archived = state.core.archive().map_or(0, |a| *a.progress().borrow());
    let stamp = Stamp::now(*state.core.changes().borrow(), archived);
    cached_against(state, uri, stamp, make).await
}

async fn cached_against(
    state: &AppState,
    uri: &Uri,
    stamp: Stamp,
    make: impl Future<Output = Result<Response, PageError>>,
) -> Response {
    let key = uri.to_string();
    if let Some(html) = state.pages.get(&key, stamp) {
        return Html(html).into_response();
    }
    let response = page(make.await);
    if response.status() != StatusCode::OK {
        return response;
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, usize::MAX).await {
        Ok(html) => {
            state.pages.put(&key, stamp, html.clone());
            Response::from_parts(parts, axum::body::Body::from(html))
        }
        Err(e) => PageError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn json_error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({ "success": false, "error": message }))).into_response()
}

/// A JSON answer, or the error as `{success: false, error}` with its status.
fn json_answer<T: serde::Serialize>(answer: Result<T, PageError>) -> Response {
    match answer {
        Ok(value) => axum::Json(value).into_response(),
        Err(PageError(status, message)) => json_error(status, message),
    }
}

/// A strict JSON body: unknown fields refused, errors naming the field.
fn body<T: serde::de::DeserializeOwned>(bytes: &Bytes) -> Result<T, PageError> {
    serde_json::from_slice(bytes).map_err(|e| bad_request(format!("Invalid request body: {e}")))
}

async fn reservations(
    State(state): State<AppState>,
    uri: Uri,
    Path(project): Path<String>,
) -> Response {
    let answer = async {
        let slug = state.core.project_by_key(project).await?.slug;
        let all = state.core.list_file_reservations(slug.clone(), false).await?;
        let now = Timestamp::now();
        let (active, past): (Vec<_>, Vec<_>) =
            all.iter().partition(|r| r.released_ts.is_none() && r.expires_ts > now);
        Ok(render(&ReservationsPage {
            project_href: paths::project(&slug),
            active: active.into_iter().map(ReservationRow::new).collect(),
            past: past.into_iter().map(ReservationRow::new).collect(),
            slug,
        }))
    };
    cached(&state, &uri, answer).await
}

/// `GET /mail/api/locks`: the archive's lock files, as `resource://tooling/locks` shows them.
async fn locks(State(state): State<AppState>) -> Response {
    json_answer(state.core.archive_locks().await.map_err(PageError::from))
}

async fn compose(State(state): State<AppState>, Path(project): Path<String>) -> Response {
    let answer = async {
        let overview = state.core.project_overview(project).await?;
        let slug = overview.project.slug.clone();
        let agents = overview
            .agents
            .iter()
            .filter(|a| a.agent.name != OVERSEER_NAME && a.agent.retired_at.is_none())
            .map(|a| a.agent.name.clone())
            .collect();
        Ok(render(&ComposePage {
            project_href: paths::project(&slug),
            action: paths::overseer_send(&slug),
            agents,
            slug,
        }))
    };
    page(answer.await)
}
