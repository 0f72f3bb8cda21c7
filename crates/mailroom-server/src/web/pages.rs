//! The pages: askama templates (checked at build time, `templates/`) and the view models they
//! read. Every value a template prints is escaped by askama except a body's HTML, which
//! `markdown::render` has sanitised.

use askama::Template;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::agents::ListedAgent;
use mailroom_core::ops::output::{AddressedMessage, MessageOut, ProjectOut};
use mailroom_core::ops::projects::fleet::{FleetMessage, excerpt};
use mailroom_core::ops::projects::siblings::Sibling;
use mailroom_core::ops::reservations::ReservationStatus;
use mailroom_core::ops::search::SearchResult;

use super::markdown;
use super::paths;

/// A message in a list.
pub struct Row {
    pub id: i64,
    pub href: String,
    pub subject: String,
    pub sender: String,
    /// Recipients joined with commas.
    pub recipients: String,
    /// The project's slug, in fleet-wide lists only.
    pub project: String,
    pub excerpt: String,
    pub importance: String,
    pub important: bool,
    pub unread: bool,
    /// Shown with a check box, for the inbox's actions on selected messages.
    pub selectable: bool,
    pub created_iso: String,
    pub created_relative: String,
}

impl Row {
    pub fn from_fleet(m: &FleetMessage, now: Timestamp) -> Self {
        Self {
            id: m.id.0,
            href: paths::message(&m.project_slug, m.id.0),
            subject: m.subject.clone(),
            sender: m.sender.clone(),
            recipients: m.recipients.join(", "),
            project: m.project_slug.clone(),
            excerpt: markdown::plain_text(&m.excerpt),
            important: m.importance.is_urgent(),
            importance: m.importance.as_str().to_string(),
            unread: false,
            selectable: false,
            created_iso: m.created_ts.to_iso(),
            created_relative: relative(m.created_ts, now),
        }
    }

    pub fn from_message(slug: &str, m: &MessageOut, unread: bool, now: Timestamp) -> Self {
        Self {
            id: m.id.0,
            href: paths::message(slug, m.id.0),
            subject: m.subject.clone(),
            sender: m.from.clone().unwrap_or_default(),
            recipients: String::new(),
            project: String::new(),
            excerpt: m
                .body_md
                .as_deref()
                .map(|b| markdown::plain_text(&excerpt(b)))
                .unwrap_or_default(),
            important: m.importance.is_urgent(),
            importance: m.importance.as_str().to_string(),
            unread,
            selectable: false,
            created_iso: m.created_ts.to_iso(),
            created_relative: relative(m.created_ts, now),
        }
    }

    pub fn from_search(slug: &str, r: &SearchResult, now: Timestamp) -> Self {
        let item = &r.item;
        Self {
            id: item.id.0,
            href: paths::message(slug, item.id.0),
            subject: item.subject.clone(),
            sender: item.from.clone(),
            recipients: r.to.iter().chain(&r.cc).cloned().collect::<Vec<_>>().join(", "),
            project: String::new(),
            excerpt: String::new(),
            important: item.importance.is_urgent(),
            importance: item.importance.as_str().to_string(),
            unread: false,
            selectable: false,
            created_iso: item.created_ts.to_iso(),
            created_relative: relative(item.created_ts, now),
        }
    }
}

/// A project in a list.
pub struct ProjectLink {
    pub id: i64,
    pub href: String,
    pub slug: String,
    pub human_key: String,
    pub archived: bool,
    pub created_iso: String,
    pub created_relative: String,
}

impl ProjectLink {
    pub fn new(p: &ProjectOut, now: Timestamp) -> Self {
        Self {
            id: p.id.0,
            href: paths::project(&p.slug),
            slug: p.slug.clone(),
            human_key: p.human_key.clone(),
            archived: p.archived_at.is_some(),
            created_iso: p.created_at.to_iso(),
            created_relative: relative(p.created_at, now),
        }
    }
}

impl ProjectLink {
    /// The project's archive view `view` (`browser`, `timeline`, `network`, `activity`).
    pub fn archive_view(&self, view: &str) -> String {
        paths::archive_view(view, Some(&self.slug))
    }
}

/// A sibling-project suggestion, with its buttons' target.
pub struct SiblingLink {
    pub a: String,
    pub a_href: String,
    pub b: String,
    pub b_href: String,
    pub percent: i64,
    pub status: String,
    pub confirmed: bool,
    pub rationale: String,
    /// `POST /mail/api/projects/{a}/siblings/{b}`.
    pub action: String,
}

impl SiblingLink {
    pub fn new(row: &Sibling) -> Self {
        Self {
            a_href: paths::project(&row.project_slug),
            a: row.project_slug.clone(),
            b_href: paths::project(&row.other_slug),
            b: row.other_slug.clone(),
            percent: (row.score * 100.0).round() as i64,
            confirmed: row.status == "confirmed",
            status: row.status.clone(),
            rationale: row.rationale.clone(),
            action: paths::sibling_status(row.project_id.0, row.other_id.0),
        }
    }
}

/// An agent in a project's panel.
pub struct AgentLink {
    pub id: i64,
    pub href: String,
    pub name: String,
    pub program: String,
    pub model: String,
    pub unread: i64,
    pub retired: bool,
}

impl AgentLink {
    pub fn new(slug: &str, a: &ListedAgent) -> Self {
        Self {
            id: a.agent.id.0,
            href: paths::inbox(slug, &a.agent.name),
            name: a.agent.name.clone(),
            program: a.agent.program.clone(),
            model: a.agent.model.clone(),
            unread: a.unread_count,
            retired: a.agent.retired_at.is_some(),
        }
    }
}

/// A message shown whole.
pub struct Card {
    pub id: i64,
    pub subject: String,
    pub sender: String,
    pub to: String,
    pub cc: String,
    pub bcc: String,
    pub thread_id: Option<String>,
    pub commit: Option<String>,
    pub importance: String,
    pub important: bool,
    pub ack_required: bool,
    pub created_iso: String,
    pub created_relative: String,
    /// Sanitised HTML.
    pub body_html: String,
}

impl Card {
    pub fn new(m: &AddressedMessage, commit: Option<String>, now: Timestamp) -> Self {
        let message = &m.message;
        Self {
            id: message.id.0,
            subject: message.subject.clone(),
            sender: message.from.clone().unwrap_or_default(),
            to: m.to.join(", "),
            cc: m.cc.join(", "),
            bcc: m.bcc.join(", "),
            thread_id: message.thread_id.clone(),
            commit,
            important: message.importance.is_urgent(),
            importance: message.importance.as_str().to_string(),
            ack_required: message.ack_required,
            created_iso: message.created_ts.to_iso(),
            created_relative: relative(message.created_ts, now),
            body_html: markdown::render(message.body_md.as_deref().unwrap_or_default()),
        }
    }
}

#[derive(Template)]
#[template(path = "fleet.html")]
pub struct FleetPage {
    pub rows: Vec<Row>,
    pub projects: Vec<ProjectLink>,
    pub siblings: Vec<SiblingLink>,
    /// The importance filter, empty for none.
    pub filter: String,
}

#[derive(Template)]
#[template(path = "projects.html")]
pub struct ProjectsPage {
    pub projects: Vec<ProjectLink>,
    pub siblings: Vec<SiblingLink>,
}

#[derive(Template)]
#[template(path = "project.html")]
pub struct ProjectPage {
    pub slug: String,
    pub compose_href: String,
    pub reservations_href: String,
    pub attachments_href: String,
    pub archive_href: String,
    pub timeline_href: String,
    pub network_href: String,
    pub human_key: String,
    pub href: String,
    pub query: String,
    pub searched: bool,
    pub rows: Vec<Row>,
    pub agents: Vec<AgentLink>,
}

#[derive(Template)]
#[template(path = "inbox.html")]
pub struct InboxPage {
    pub slug: String,
    /// The inbox's own URL; its actions are below it (`/mark-read`, `/delete-messages`, …).
    pub inbox_href: String,
    pub project_href: String,
    pub agent: String,
    /// "42", or "more than 10000".
    pub total: String,
    /// Whether `pages` is a lower bound.
    pub capped: bool,
    pub page: i64,
    pub pages: i64,
    pub rows: Vec<Row>,
    pub prev_href: Option<String>,
    pub next_href: Option<String>,
}

#[derive(Template)]
#[template(path = "message.html")]
pub struct MessagePage {
    pub slug: String,
    pub project_href: String,
    /// `{"message_ids":[id]}`, the delete button's request.
    pub delete_body: String,
    pub thread_href: Option<String>,
    pub m: Card,
}

#[derive(Template)]
#[template(path = "thread.html")]
pub struct ThreadPage {
    pub slug: String,
    pub project_href: String,
    pub thread_id: String,
    pub messages: Vec<Card>,
}

#[derive(Template)]
#[template(path = "compose.html")]
pub struct ComposePage {
    pub slug: String,
    pub project_href: String,
    pub action: String,
    /// Agents that can be written to, by name.
    pub agents: Vec<String>,
}

/// A file reservation in a table.
pub struct ReservationRow {
    pub pattern: String,
    pub agent: String,
    /// "exclusive" or "shared".
    pub kind: &'static str,
    pub reason: String,
    pub expires_iso: String,
    /// When it was released, or expired.
    pub ended_iso: String,
    pub stale: bool,
}

impl ReservationRow {
    pub fn new(r: &ReservationStatus) -> Self {
        let ended = r.released_ts.unwrap_or(r.expires_ts);
        Self {
            pattern: r.path_pattern.clone(),
            agent: r.agent.clone(),
            kind: if r.exclusive { "exclusive" } else { "shared" },
            reason: r.reason.clone(),
            expires_iso: r.expires_ts.to_iso(),
            ended_iso: ended.to_iso(),
            stale: r.staleness.stale,
        }
    }
}

#[derive(Template)]
#[template(path = "reservations.html")]
pub struct ReservationsPage {
    pub slug: String,
    pub project_href: String,
    pub active: Vec<ReservationRow>,
    pub past: Vec<ReservationRow>,
}

#[derive(Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub status: String,
    pub message: String,
}

/// "just now", "5 min ago", "3 h ago", "2 d ago", then the date.
pub fn relative(then: Timestamp, now: Timestamp) -> String {
    let seconds = (now.as_micros() - then.as_micros()) / 1_000_000;
    match seconds {
        ..45 => "just now".to_string(),
        45..3_600 => format!("{} min ago", (seconds + 30) / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        86_400..2_592_000 => format!("{} d ago", seconds / 86_400),
        _ => then.to_iso().chars().take(10).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_read_as_a_person_says_them() {
        let now = Timestamp::from_micros(10_000_000_000_000);
        let ago = |seconds: i64| {
            relative(Timestamp::from_micros(now.as_micros() - seconds * 1_000_000), now)
        };
        assert_eq!(ago(5), "just now");
        assert_eq!(ago(-30), "just now", "a clock slightly ahead");
        assert_eq!(ago(300), "5 min ago");
        assert_eq!(ago(7_300), "2 h ago");
        assert_eq!(ago(3 * 86_400), "3 d ago");
        assert_eq!(ago(90 * 86_400).len(), 10, "a date");
    }
}
