//! Rendered pages kept between writes. A page of the UI is a function of the database (and,
//! for the archive's pages, of the Git archive) and of the clock (its relative times), so a
//! copy stays exact until the next committed write (the store's change count moves, or the
//! archive's progress) and is at most [`CLOCK_STEP`] old in its relative times.
//! Reads far outnumber writes when people watch a fleet: most page views are served from
//! here instead of rendering hundreds of rows again. A page handler opts in by answering
//! through [`cached`] (or [`cached_archive_page`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};

use super::error::{PageError, page};
use crate::state::AppState;

/// How stale a cached page's relative times ("5 min ago") may be, in seconds.
const CLOCK_STEP: u64 = 15;
/// Pages kept at most; the cache is emptied when it would hold more.
const MAX_PAGES: usize = 256;

/// What a cached page was rendered against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    changes: u64,
    /// Rows the Git archive has committed, for pages that show the archive (else 0).
    archived: u64,
    clock: u64,
}

impl Stamp {
    /// The database's change count now, the archive's progress (for a page showing the
    /// archive; 0 for others) and the clock's current step.
    fn now(changes: u64, archived: u64) -> Self {
        let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Self { changes, archived, clock: seconds / CLOCK_STEP }
    }
}

/// Rendered pages by request URI.
#[derive(Default)]
pub struct PageCache {
    pages: Mutex<HashMap<String, (Stamp, Bytes)>>,
}

impl PageCache {
    /// The page rendered for `uri` against `stamp`, if it is still there.
    fn get(&self, uri: &str, stamp: Stamp) -> Option<Bytes> {
        let pages = self.pages.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pages.get(uri).filter(|(kept, _)| *kept == stamp).map(|(_, page)| page.clone())
    }

    /// Keeps a page rendered for `uri` against `stamp`.
    fn put(&self, uri: &str, stamp: Stamp, page: Bytes) {
        let mut pages = self.pages.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pages.len() >= MAX_PAGES && !pages.contains_key(uri) {
            pages.clear();
        }
        pages.insert(uri.to_string(), (stamp, page));
    }
}

/// A page from the cache when nothing was written since it was rendered, else rendered now
/// and kept. Only pages that answered 200 are kept.
pub async fn cached(
    state: &AppState,
    uri: &Uri,
    make: impl Future<Output = Result<Response, PageError>>,
) -> Response {
    let stamp = Stamp::now(*state.core.changes().borrow(), 0);
    cached_against(state, uri, stamp, make).await
}

/// [`cached`] for a page that shows the Git archive: a commit also makes it stale.
pub async fn cached_archive_page(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_lasts_until_the_next_write() {
        let cache = PageCache::default();
        let before = Stamp { changes: 7, archived: 0, clock: 1 };
        cache.put("/mail", before, Bytes::from_static(b"page"));
        assert_eq!(cache.get("/mail", before), Some(Bytes::from_static(b"page")));
        assert_eq!(cache.get("/mail", Stamp { changes: 8, ..before }), None, "a write");
        assert_eq!(cache.get("/mail", Stamp { archived: 3, ..before }), None, "a Git commit");
        assert_eq!(cache.get("/mail", Stamp { clock: 2, ..before }), None, "the clock");
        assert_eq!(cache.get("/mail?limit=5", before), None, "another page");
        for n in 0..MAX_PAGES + 1 {
            cache.put(&format!("/mail/p{n}"), before, Bytes::new());
        }
        assert!(cache.pages.lock().expect("lock").len() <= MAX_PAGES);
    }
}
