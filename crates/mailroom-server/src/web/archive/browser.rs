//! The archive's files as of HEAD: the browser (`/mail/archive/browser?project=&path=`), a
//! directory listed or a file shown, and a file of a project's directory as JSON
//! (`/mail/archive/browser/{project}/file?path=`).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use mailroom_core::archive::browse::{DirEntry, Node};
use serde::Deserialize;
use serde_json::json;

use super::{ArchiveQuery, named};
use crate::state::AppState;
use crate::web::error::{PageError, bad_request, json_answer, page};
use crate::web::routes;
use crate::web::view::{human_size, render};

#[derive(Template)]
#[template(path = "pages/archive/browser.html")]
struct BrowserPage {
    project: Option<String>,
    path: String,
    crumbs: Vec<Crumb>,
    /// A directory's entries, or `None` for a file.
    entries: Option<Vec<EntryRow>>,
    /// A file's text, or a note (a binary file, a directory listed in part).
    text: Option<String>,
    binary_note: Option<String>,
    raw_href: Option<String>,
}

/// A step of the path shown above a listing, with its link.
struct Crumb {
    name: String,
    href: String,
}

/// The breadcrumbs of `path` under the archive root or a project's directory.
fn crumbs(project: Option<&str>, path: &str) -> Vec<Crumb> {
    let mut crumbs = vec![Crumb {
        name: project.unwrap_or("archive").to_string(),
        href: routes::archive_browser(project, ""),
    }];
    let mut so_far = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if !so_far.is_empty() {
            so_far.push('/');
        }
        so_far.push_str(part);
        crumbs.push(Crumb {
            name: part.to_string(),
            href: routes::archive_browser(project, &so_far),
        });
    }
    crumbs
}

/// An entry of a listed directory.
struct EntryRow {
    name: String,
    href: String,
    is_dir: bool,
    size: String,
}

impl EntryRow {
    fn new(project: Option<&str>, entry: &DirEntry, base: &str) -> Self {
        let path =
            if base.is_empty() { entry.name.clone() } else { format!("{base}/{}", entry.name) };
        Self {
            name: entry.name.clone(),
            href: routes::archive_browser(project, &path),
            is_dir: entry.is_dir,
            size: entry.size.map(human_size).unwrap_or_default(),
        }
    }
}

/// `GET /mail/archive/browser`.
pub async fn show(State(state): State<AppState>, Query(q): Query<ArchiveQuery>) -> Response {
    let answer = async {
        let project = named(q.project);
        let browsed = state.core.archive_browse(project, q.path.unwrap_or_default()).await?;
        let slug = browsed.project.as_ref().map(|p| p.slug.clone());
        let slug = slug.as_deref();
        let path = browsed.path.clone();
        let missing =
            || PageError(StatusCode::NOT_FOUND, format!("The archive holds no {path:?}."));
        let (entries, text, binary_note, raw_href) = match browsed.node {
            None => return Err(missing()),
            Some(Node::Directory { entries, total }) => {
                let rows = entries.iter().map(|e| EntryRow::new(slug, e, &path)).collect();
                let more = (total > entries.len())
                    .then(|| format!("The first {} of {total} entries.", entries.len()));
                (Some(rows), None, more, None)
            }
            Some(Node::File(bytes)) => {
                let raw = slug.map(|s| routes::archive_file(s, &path));
                match String::from_utf8(bytes) {
                    Ok(text) => (None, Some(text), None, raw),
                    Err(e) => {
                        let note = format!("A binary file of {} bytes.", e.as_bytes().len());
                        (None, None, Some(note), raw)
                    }
                }
            }
        };
        Ok(render(&BrowserPage {
            crumbs: crumbs(slug, &path),
            project: slug.map(str::to_string),
            path,
            entries,
            text,
            binary_note,
            raw_href,
        }))
    };
    page(answer.await)
}

#[derive(Deserialize, Default)]
pub struct FileQuery {
    path: Option<String>,
}

/// `GET /mail/archive/browser/{project}/file?path=`: a file of the project's directory as a
/// JSON string (≤10 MB; a path that would leave its place → 400; missing or a directory →
/// 404).
pub async fn file(
    State(state): State<AppState>,
    Path(project): Path<String>,
    Query(q): Query<FileQuery>,
) -> Response {
    let answer = async {
        let path = q.path.unwrap_or_default();
        if path.trim().is_empty() {
            return Err(bad_request("path: name a file of the project's archive.".into()));
        }
        let browsed = state.core.archive_browse(Some(project), path).await?;
        match browsed.node {
            Some(Node::File(bytes)) => Ok(json!(String::from_utf8_lossy(&bytes))),
            _ => Err(PageError(
                StatusCode::NOT_FOUND,
                format!("No file {:?} in the project's archive.", browsed.path),
            )),
        }
    };
    json_answer(answer.await)
}
