//! Every URL of the web UI, written once. Each row of the table below names a route, gives
//! its pattern (axum's syntax, `/mail/{project}/inbox/{agent}`) and its handler; the router
//! (`mod.rs`) serves the table, and every link the pages print is filled from the same
//! constants ([`Route::fill`], or the route itself in a template when it has no
//! placeholder). Adding a route is one row here.
//!
//! A placeholder's value is percent-encoded as a path segment (names and thread ids are user
//! text and must not leave their place); a query value is encoded the same way by the
//! builders at the end.

use std::fmt;
use std::sync::LazyLock;

use axum::routing::{MethodRouter, get, post};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::{
    archive, assets, attachments, compose, events, fleet, inbox, message, project, projects,
    reservations, siblings, thread,
};
use crate::state::AppState;

/// A URL pattern of the UI with `N` placeholders; [`Route::fill`] takes exactly `N` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<const N: usize>(&'static str);

impl<const N: usize> Route<N> {
    /// The URL: each placeholder, in order, replaced by a value encoded as a path segment.
    pub fn fill(self, values: &[&str; N]) -> String {
        fill(self.0, values)
    }
}

/// A route without placeholders is its own URL, as a template prints it.
impl fmt::Display for Route<0> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Declares each row's name as a [`Route`] constant and lists the rows in [`table`].
macro_rules! routes {
    ($($name:ident = $pattern:literal => $handler:expr;)*) => {
        $(pub const $name: Route<{ placeholders($pattern) }> = Route($pattern);)*

        /// Every route with its handler, in the table's order.
        pub fn table() -> Vec<(&'static str, MethodRouter<AppState>)> {
            vec![$(($name.0, $handler)),*]
        }
    };
}

routes! {
    FLEET = "/mail" => get(fleet::show);
    FLEET_SLASH = "/mail/" => get(fleet::show);
    UNIFIED_INBOX = "/mail/unified-inbox" => get(fleet::show);
    UNIFIED_INBOX_JSON = "/mail/api/unified-inbox" => get(fleet::json);
    EVENTS = "/mail/api/events" => get(events::events);
    PROJECTS = "/mail/projects" => get(projects::show);
    ASSET = "/mail/static/{file}" => get(assets::asset);
    PROJECT = "/mail/{project}" => get(project::show);
    PROJECT_SEARCH = "/mail/{project}/search" => get(project::show);
    INBOX = "/mail/{project}/inbox/{agent}" => get(inbox::show);
    MESSAGE = "/mail/{project}/message/{id}" => get(message::show);
    THREAD = "/mail/{project}/thread/{thread_id}" => get(thread::show);
    RESERVATIONS = "/mail/{project}/file_reservations" => get(reservations::show);
    ATTACHMENTS = "/mail/{project}/attachments" => get(attachments::show);
    AGENT_NAMES = "/mail/api/projects/{project}/agents" => get(project::agent_names);
    ARCHIVE_GUIDE = "/mail/archive/guide" => get(archive::guide::show);
    ARCHIVE_ACTIVITY = "/mail/archive/activity" => get(archive::activity::show);
    ARCHIVE_TIMELINE = "/mail/archive/timeline" => get(archive::timeline::show);
    ARCHIVE_COMMIT = "/mail/archive/commit/{sha}" => get(archive::commit::show);
    ARCHIVE_BROWSER = "/mail/archive/browser" => get(archive::browser::show);
    ARCHIVE_FILE = "/mail/archive/browser/{project}/file" => get(archive::browser::file);
    ARCHIVE_NETWORK = "/mail/archive/network" => get(archive::network::show);
    TIME_TRAVEL = "/mail/archive/time-travel" => get(archive::time_travel::show);
    TIME_TRAVEL_SNAPSHOT = "/mail/archive/time-travel/snapshot"
        => get(archive::time_travel::snapshot);
    LOCKS = "/mail/api/locks" => get(archive::locks);
    COMPOSE = "/mail/{project}/overseer/compose" => get(compose::show);
    OVERSEER_SEND = "/mail/{project}/overseer/send" => post(compose::send);
    MARK_READ = "/mail/{project}/inbox/{agent}/mark-read" => post(inbox::mark_read);
    MARK_ALL_READ = "/mail/{project}/inbox/{agent}/mark-all-read" => post(inbox::mark_all_read);
    INBOX_DELETE = "/mail/{project}/inbox/{agent}/delete-messages"
        => post(inbox::delete_messages);
    DELETE_MESSAGES = "/mail/api/delete-messages" => post(message::delete_messages);
    RETIRE_AGENT = "/mail/api/retire-agent" => post(project::retire_agent);
    UNRETIRE_AGENT = "/mail/api/unretire-agent" => post(project::unretire_agent);
    ARCHIVE_PROJECT = "/mail/api/archive-project" => post(projects::archive);
    UNARCHIVE_PROJECT = "/mail/api/unarchive-project" => post(projects::unarchive);
    SIBLING_STATUS = "/mail/api/projects/{project_id}/siblings/{other_id}"
        => post(siblings::set_status);
}

/// How many `{…}` placeholders a pattern has: the `N` of its [`Route`].
const fn placeholders(pattern: &str) -> usize {
    let bytes = pattern.as_bytes();
    let (mut i, mut count) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b'{' {
            count += 1;
        }
        i += 1;
    }
    count
}

/// The static files every page links (`partials/base.html`), filled once.
pub static ICON: LazyLock<String> = LazyLock::new(|| ASSET.fill(&["icon.svg"]));
pub static STYLESHEET: LazyLock<String> = LazyLock::new(|| ASSET.fill(&["app.css"]));
pub static SCRIPT: LazyLock<String> = LazyLock::new(|| ASSET.fill(&["app.js"]));

/// `pattern` with its placeholders replaced, in order, by `values` encoded as segments.
fn fill(pattern: &str, values: &[&str]) -> String {
    let mut url = String::with_capacity(pattern.len() + 32);
    let mut values = values.iter();
    let mut rest = pattern;
    while let Some(start) = rest.find('{') {
        url.push_str(&rest[..start]);
        url.extend(utf8_percent_encode(values.next().copied().unwrap_or_default(), SEGMENT));
        rest = rest[start..].find('}').map_or("", |end| &rest[start + end + 1..]);
    }
    url.push_str(rest);
    url
}

/// Everything but unreserved characters is encoded in a segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// A path segment or a query value: everything but unreserved characters encoded.
fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// A page of an agent's inbox.
pub fn inbox_page(slug: &str, agent: &str, page: i64) -> String {
    format!("{}?page={page}", INBOX.fill(&[slug, agent]))
}

/// The archive browser at `path`, inside a project's directory when one is named.
pub fn archive_browser(project: Option<&str>, path: &str) -> String {
    let url = for_project(ARCHIVE_BROWSER, project);
    match (project, path) {
        (_, "") => url,
        (None, path) => format!("{url}?path={}", segment(path)),
        (Some(_), path) => format!("{url}&path={}", segment(path)),
    }
}

/// A file of a project's archive directory, as JSON.
pub fn archive_file(slug: &str, path: &str) -> String {
    format!("{}?path={}", ARCHIVE_FILE.fill(&[slug]), segment(path))
}

/// An archive view (the timeline, the network, the activity) of one project, or of all.
pub fn for_project(view: Route<0>, project: Option<&str>) -> String {
    match project {
        Some(slug) => format!("{view}?project={}", segment(slug)),
        None => view.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::extract::RawPathParams;
    use axum::http::Request;
    use axum::routing::any;
    use tower::Service;

    use super::*;

    #[test]
    fn segments_cannot_leave_their_place() {
        assert_eq!(THREAD.fill(&["p", "../../x?y#z"]), "/mail/p/thread/..%2F..%2Fx%3Fy%23z");
        assert_eq!(INBOX.fill(&["p", "Blue Lake"]), "/mail/p/inbox/Blue%20Lake");
        assert_eq!(PROJECT.fill(&["my-proj_1"]), "/mail/my-proj_1");
        assert_eq!(
            archive_browser(Some("p"), "agents/A B&c=d"),
            "/mail/archive/browser?project=p&path=agents%2FA%20B%26c%3Dd"
        );
    }

    /// The URLs the UI printed before the table existed, for the same inputs.
    #[test]
    fn links_are_the_ones_the_pages_always_printed() {
        let odd = "Blue Lake/ü?#%&=+~._-";
        let odd_encoded = "Blue%20Lake%2F%C3%BC%3F%23%25%26%3D%2B~._-";
        let cases = [
            (INBOX.fill(&["p", odd]), format!("/mail/p/inbox/{odd_encoded}")),
            (inbox_page("p", odd, 3), format!("/mail/p/inbox/{odd_encoded}?page=3")),
            (MESSAGE.fill(&[odd, "42"]), format!("/mail/{odd_encoded}/message/42")),
            (RESERVATIONS.fill(&[odd]), format!("/mail/{odd_encoded}/file_reservations")),
            (COMPOSE.fill(&["p"]), "/mail/p/overseer/compose".into()),
            (OVERSEER_SEND.fill(&["p"]), "/mail/p/overseer/send".into()),
            (MARK_READ.fill(&["p", "A"]), "/mail/p/inbox/A/mark-read".into()),
            (MARK_ALL_READ.fill(&["p", "A"]), "/mail/p/inbox/A/mark-all-read".into()),
            (INBOX_DELETE.fill(&["p", "A"]), "/mail/p/inbox/A/delete-messages".into()),
            (SIBLING_STATUS.fill(&["3", "14"]), "/mail/api/projects/3/siblings/14".into()),
            (THREAD.fill(&["p", odd]), format!("/mail/p/thread/{odd_encoded}")),
            (ATTACHMENTS.fill(&["p"]), "/mail/p/attachments".into()),
            (ARCHIVE_COMMIT.fill(&["0a1b"]), "/mail/archive/commit/0a1b".into()),
            (archive_browser(None, ""), "/mail/archive/browser".into()),
            (archive_browser(None, "a b"), "/mail/archive/browser?path=a%20b".into()),
            (archive_browser(Some("p"), ""), "/mail/archive/browser?project=p".into()),
            (archive_file("p", "a/b c"), "/mail/archive/browser/p/file?path=a%2Fb%20c".into()),
            (
                for_project(ARCHIVE_TIMELINE, Some("p q")),
                "/mail/archive/timeline?project=p%20q".into(),
            ),
            (for_project(ARCHIVE_NETWORK, None), "/mail/archive/network".into()),
            (FLEET.to_string(), "/mail".into()),
        ];
        for (built, expected) in cases {
            assert_eq!(built, expected);
        }
    }

    /// Each route filled with awkward values reaches that route, with the values intact.
    #[tokio::test]
    async fn every_route_filled_round_trips_through_the_router() {
        let rows = table();
        let mut router = rows.iter().fold(Router::new(), |router, &(pattern, _)| {
            router.route(pattern, any(move |params: RawPathParams| echo(pattern, params)))
        });
        for &(pattern, _) in &rows {
            let values: Vec<String> =
                (0..placeholders(pattern)).map(|i| format!("{i} Blue Lake/../ü?#%&=+")).collect();
            let url = fill(pattern, &values.iter().map(String::as_str).collect::<Vec<_>>());
            let request = Request::get(&url).body(Body::empty()).expect("request");
            let response = router.call(request).await.expect("infallible");
            let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
            let expected = std::iter::once(pattern.to_string()).chain(values).collect::<Vec<_>>();
            assert_eq!(String::from_utf8_lossy(&body), expected.join("\n"), "{url}");
        }
    }

    /// The route's pattern and the decoded values it was reached with, one a line.
    async fn echo(pattern: &'static str, params: RawPathParams) -> String {
        let values = params.iter().map(|(_, value)| value.to_string());
        std::iter::once(pattern.to_string()).chain(values).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn every_pattern_is_whole_segments() {
        for (pattern, _) in table() {
            assert!(pattern.starts_with("/mail"), "{pattern}");
            for part in pattern.split('/') {
                let placeholder = part.starts_with('{') && part.ends_with('}');
                let literal = !part.contains(['{', '}']);
                assert!(placeholder || literal, "{pattern}: {part}");
            }
        }
    }
}
