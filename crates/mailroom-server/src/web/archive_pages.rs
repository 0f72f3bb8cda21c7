//! The archive's pages (`/mail/archive/…`) and a project's attachments page: askama
//! templates and their view models. The agent network is drawn as inline SVG, computed here,
//! so no diagram library is needed.

use askama::Template;
use mailroom_core::archive::browse::{CommitSummary, DirEntry};
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::output::MessageOut;
use serde_json::Value;

use super::pages::{ProjectLink, relative};
use super::{markdown, paths};

/// A commit in a list.
pub struct CommitRow {
    pub href: String,
    pub short_sha: String,
    pub summary: String,
    pub author: String,
    pub when_iso: String,
    pub when_relative: String,
    /// What the commit carried, read from its subject: mail, batch, reservation, …
    pub kind: &'static str,
}

impl CommitRow {
    pub fn new(c: &CommitSummary, now: Timestamp) -> Self {
        Self {
            href: paths::archive_commit(&c.sha),
            short_sha: c.short_sha.clone(),
            summary: c.summary.clone(),
            author: c.author.clone(),
            when_iso: c.authored_ts.to_iso(),
            when_relative: relative(c.authored_ts, now),
            kind: commit_kind(&c.summary),
        }
    }
}

/// The kind of change a commit subject names, as the archive writes them.
fn commit_kind(summary: &str) -> &'static str {
    let starts = |prefix: &str| summary.starts_with(prefix);
    if starts("mail:") || starts("Human Overseer") {
        "mail"
    } else if starts("batch:") {
        "batch"
    } else if starts("delete:") {
        "delete"
    } else if starts("file_reservation") || summary.contains("reservation") {
        "reservation"
    } else if starts("agent:") || summary.contains("profile") {
        "profile"
    } else {
        "other"
    }
}

#[derive(Template)]
#[template(path = "archive_guide.html")]
pub struct GuidePage {
    pub root: String,
    pub enabled: bool,
    pub latest: Option<CommitRow>,
    pub projects: Vec<ProjectLink>,
}

#[derive(Template)]
#[template(path = "archive_activity.html")]
pub struct ActivityPage {
    pub commits: Vec<CommitRow>,
    pub limit: usize,
}

/// A day of the timeline and its commits, newest first.
pub struct Day {
    pub date: String,
    pub commits: Vec<CommitRow>,
}

#[derive(Template)]
#[template(path = "archive_timeline.html")]
pub struct TimelinePage {
    /// The project's slug, when the timeline is one project's (else empty).
    pub selected: String,
    pub days: Vec<Day>,
    pub projects: Vec<ProjectLink>,
}

/// Groups commits (newest first) by their UTC day.
pub fn days(commits: &[CommitSummary], now: Timestamp) -> Vec<Day> {
    let mut days: Vec<Day> = Vec::new();
    for c in commits {
        let date = c.authored_ts.to_iso().chars().take(10).collect::<String>();
        match days.last_mut() {
            Some(day) if day.date == date => day.commits.push(CommitRow::new(c, now)),
            _ => days.push(Day { date, commits: vec![CommitRow::new(c, now)] }),
        }
    }
    days
}

/// A line of a patch, classed for its colour.
pub struct PatchLine {
    pub class: &'static str,
    pub text: String,
}

#[derive(Template)]
#[template(path = "archive_commit.html")]
pub struct CommitPage {
    pub commit: CommitRow,
    pub sha: String,
    pub message: String,
    pub files: Vec<(String, &'static str)>,
    pub insertions: usize,
    pub deletions: usize,
    pub lines: Vec<PatchLine>,
    pub truncated: bool,
}

pub fn patch_lines(patch: &str) -> Vec<PatchLine> {
    patch
        .lines()
        .map(|line| {
            let class = if line.starts_with("diff --git") || line.starts_with("index ") {
                "meta"
            } else if line.starts_with("+++") || line.starts_with("---") {
                "file"
            } else if line.starts_with("@@") {
                "hunk"
            } else if line.starts_with('+') {
                "add"
            } else if line.starts_with('-') {
                "del"
            } else {
                "ctx"
            };
            PatchLine { class, text: line.to_string() }
        })
        .collect()
}

/// A step of the path shown above a listing, with its link.
pub struct Crumb {
    pub name: String,
    pub href: String,
}

/// An entry of a listed directory.
pub struct EntryRow {
    pub name: String,
    pub href: String,
    pub is_dir: bool,
    pub size: String,
}

impl EntryRow {
    pub fn new(project: Option<&str>, entry: &DirEntry, base: &str) -> Self {
        let path =
            if base.is_empty() { entry.name.clone() } else { format!("{base}/{}", entry.name) };
        Self {
            name: entry.name.clone(),
            href: paths::archive_browser(project, &path),
            is_dir: entry.is_dir,
            size: entry.size.map(human_size).unwrap_or_default(),
        }
    }
}

fn human_size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

#[derive(Template)]
#[template(path = "archive_browser.html")]
pub struct BrowserPage {
    pub project: Option<String>,
    pub path: String,
    pub crumbs: Vec<Crumb>,
    /// A directory's entries, or `None` for a file.
    pub entries: Option<Vec<EntryRow>>,
    /// A file's text, or a note (a binary file, a directory listed in part).
    pub text: Option<String>,
    pub binary_note: Option<String>,
    pub raw_href: Option<String>,
}

/// The breadcrumbs of `path` under the archive root or a project's directory.
pub fn crumbs(project: Option<&str>, path: &str) -> Vec<Crumb> {
    let mut crumbs = vec![Crumb {
        name: project.unwrap_or("archive").to_string(),
        href: paths::archive_browser(project, ""),
    }];
    let mut so_far = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        if !so_far.is_empty() {
            so_far.push('/');
        }
        so_far.push_str(part);
        crumbs
            .push(Crumb { name: part.to_string(), href: paths::archive_browser(project, &so_far) });
    }
    crumbs
}

/// An agent placed on the network's circle.
pub struct NodeDot {
    pub name: String,
    pub x: f64,
    pub y: f64,
    pub label_x: f64,
    pub anchor: &'static str,
}

/// An arrow of the network: who wrote to whom, and how much.
pub struct EdgeLine {
    pub from: String,
    pub to: String,
    pub count: i64,
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub width: f64,
}

#[derive(Template)]
#[template(path = "archive_network.html")]
pub struct NetworkPage {
    pub slug: String,
    pub project_href: String,
    pub size: f64,
    pub nodes: Vec<NodeDot>,
    pub edges: Vec<EdgeLine>,
    pub projects: Vec<ProjectLink>,
}

/// Side of the network's square drawing, in SVG units.
pub const NETWORK_SIZE: f64 = 640.0;

/// Agents on a circle, arrows between them (a self-message is left out of the drawing but
/// stays in the table).
pub fn network(
    agents: &[String],
    edges: &[(String, String, i64)],
) -> (Vec<NodeDot>, Vec<EdgeLine>) {
    let centre = NETWORK_SIZE / 2.0;
    let radius = NETWORK_SIZE / 2.0 - 110.0;
    let n = agents.len().max(1) as f64;
    let place = |i: usize| {
        let angle = std::f64::consts::TAU * i as f64 / n - std::f64::consts::FRAC_PI_2;
        (centre + radius * angle.cos(), centre + radius * angle.sin())
    };
    let nodes: Vec<NodeDot> = agents
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (x, y) = place(i);
            let right = x >= centre - 1.0;
            NodeDot {
                name: name.clone(),
                x,
                y,
                label_x: if right { x + 12.0 } else { x - 12.0 },
                anchor: if right { "start" } else { "end" },
            }
        })
        .collect();
    let at = |name: &str| agents.iter().position(|a| a == name).map(place);
    let most = edges.iter().map(|e| e.2).max().unwrap_or(1).max(1) as f64;
    let edges = edges
        .iter()
        .filter_map(|(from, to, count)| {
            let ((x1, y1), (x2, y2)) = (at(from)?, at(to)?);
            // Stop short of the target's dot, so the arrowhead shows.
            let (dx, dy) = (x2 - x1, y2 - y1);
            let length = (dx * dx + dy * dy).sqrt();
            if length < 1.0 {
                return None;
            }
            let shorten = 10.0 / length;
            Some(EdgeLine {
                from: from.clone(),
                to: to.clone(),
                count: *count,
                x1,
                y1,
                x2: x2 - dx * shorten,
                y2: y2 - dy * shorten,
                width: 1.0 + 4.0 * (*count as f64).ln_1p() / most.ln_1p(),
            })
        })
        .collect();
    (nodes, edges)
}

/// A message of a time-travel snapshot.
pub struct SnapshotRow {
    pub id: i64,
    pub subject: String,
    pub from: String,
    pub created_iso: String,
}

#[derive(Template)]
#[template(path = "archive_time_travel.html")]
pub struct TimeTravelPage {
    pub projects: Vec<ProjectLink>,
    pub project: String,
    pub agent: String,
    pub timestamp: String,
    /// The snapshot's commit, when one was asked for and found.
    pub commit: Option<CommitRow>,
    pub rows: Vec<SnapshotRow>,
    /// Why there is nothing to show, when something was asked.
    pub note: Option<String>,
}

/// An attachment of a message, as the attachments page lists it.
pub struct AttachmentItem {
    pub kind: String,
    pub media_type: String,
    pub size: String,
    pub dimensions: String,
    /// The archive path of a file attachment, with its browser link.
    pub path: Option<(String, String)>,
    /// An inline image's `data:` URL (WebP, base64), shown as a thumbnail.
    pub thumbnail: Option<String>,
}

impl AttachmentItem {
    pub fn new(slug: &str, value: &Value) -> Self {
        let text =
            |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let number = |key: &str| value.get(key).and_then(Value::as_u64);
        let media_type = text("media_type");
        let thumbnail = value
            .get("data_base64")
            .and_then(Value::as_str)
            .filter(|data| is_base64(data))
            .map(|data| format!("data:{media_type};base64,{data}"))
            .filter(|url| markdown::is_data_image(url));
        // A file attachment's path is the archive's, under the project's directory.
        let prefix = format!("projects/{slug}/");
        let path = value.get("path").and_then(Value::as_str).map(|p| {
            let inside = p.strip_prefix(&prefix).unwrap_or(p);
            (p.to_string(), paths::archive_browser(Some(slug), inside))
        });
        Self {
            kind: text("type"),
            size: number("bytes").map(|b| human_size(b as usize)).unwrap_or_default(),
            dimensions: match (number("width"), number("height")) {
                (Some(w), Some(h)) => format!("{w}×{h}"),
                _ => String::new(),
            },
            media_type,
            path,
            thumbnail,
        }
    }
}

/// Only base64's alphabet: a stored value cannot smuggle anything else into the URL.
fn is_base64(data: &str) -> bool {
    data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// A message with its attachments.
pub struct AttachmentMessage {
    pub href: String,
    pub subject: String,
    pub sender: String,
    pub created_iso: String,
    pub created_relative: String,
    pub items: Vec<AttachmentItem>,
}

impl AttachmentMessage {
    pub fn new(slug: &str, m: &MessageOut, now: Timestamp) -> Self {
        let items = match &m.attachments {
            Value::Array(list) => list.iter().map(|a| AttachmentItem::new(slug, a)).collect(),
            _ => Vec::new(),
        };
        Self {
            href: paths::message(slug, m.id.0),
            subject: m.subject.clone(),
            sender: m.from.clone().unwrap_or_default(),
            created_iso: m.created_ts.to_iso(),
            created_relative: relative(m.created_ts, now),
            items,
        }
    }
}

#[derive(Template)]
#[template(path = "attachments.html")]
pub struct AttachmentsPage {
    pub slug: String,
    pub project_href: String,
    pub messages: Vec<AttachmentMessage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_places_every_agent_and_draws_each_pair() {
        let agents = vec!["A".to_string(), "B".to_string(), "C".to_string()];
        let edges = vec![
            ("A".into(), "B".into(), 5),
            ("B".into(), "A".into(), 1),
            ("C".into(), "C".into(), 2),
        ];
        let (nodes, lines) = network(&agents, &edges);
        assert_eq!(nodes.len(), 3);
        assert_eq!(lines.len(), 2, "a self-message is not drawn");
        assert!(lines[0].width > lines[1].width, "more messages, a thicker arrow");
        for node in &nodes {
            assert!(
                (0.0..=NETWORK_SIZE).contains(&node.x) && (0.0..=NETWORK_SIZE).contains(&node.y)
            );
        }
    }

    #[test]
    fn an_inline_thumbnail_is_only_base64() {
        let good = serde_json::json!({"type": "inline", "media_type": "image/webp", "data_base64": "UklGRg=="});
        assert!(AttachmentItem::new("p", &good).thumbnail.is_some());
        let bad = serde_json::json!({"type": "inline", "media_type": "image/webp", "data_base64": "x\" onerror=\"alert(1)"});
        assert!(AttachmentItem::new("p", &bad).thumbnail.is_none());
        for media_type in ["text/html", "image/svg+xml", "application/x-image/png"] {
            let other = serde_json::json!({"type": "inline", "media_type": media_type, "data_base64": "PHNjcmlwdD4="});
            assert!(AttachmentItem::new("p", &other).thumbnail.is_none(), "{media_type}");
        }
    }
}
