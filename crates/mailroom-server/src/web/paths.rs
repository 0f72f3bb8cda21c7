//! The UI's URLs, each path segment percent-encoded (names and thread ids are user text).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but unreserved characters is encoded in a segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// A path segment or a query value: everything but unreserved characters encoded.
fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

pub fn project(slug: &str) -> String {
    format!("/mail/{}", segment(slug))
}

pub fn inbox(slug: &str, agent: &str) -> String {
    format!("/mail/{}/inbox/{}", segment(slug), segment(agent))
}

pub fn inbox_page(slug: &str, agent: &str, page: i64) -> String {
    format!("{}?page={page}", inbox(slug, agent))
}

pub fn message(slug: &str, id: i64) -> String {
    format!("/mail/{}/message/{id}", segment(slug))
}

pub fn reservations(slug: &str) -> String {
    format!("/mail/{}/file_reservations", segment(slug))
}

pub fn compose(slug: &str) -> String {
    format!("/mail/{}/overseer/compose", segment(slug))
}

pub fn overseer_send(slug: &str) -> String {
    format!("/mail/{}/overseer/send", segment(slug))
}

/// `POST /mail/api/projects/{project_id}/siblings/{other_id}`.
pub fn sibling_status(project_id: i64, other_id: i64) -> String {
    format!("/mail/api/projects/{project_id}/siblings/{other_id}")
}

pub fn thread(slug: &str, thread_id: &str) -> String {
    format!("/mail/{}/thread/{}", segment(slug), segment(thread_id))
}

pub fn attachments(slug: &str) -> String {
    format!("/mail/{}/attachments", segment(slug))
}

pub fn archive_commit(sha: &str) -> String {
    format!("/mail/archive/commit/{}", segment(sha))
}

/// The archive browser at `path`, inside a project's directory when one is named.
pub fn archive_browser(project: Option<&str>, path: &str) -> String {
    match (project, path) {
        (None, "") => "/mail/archive/browser".to_string(),
        (None, path) => format!("/mail/archive/browser?path={}", segment(path)),
        (Some(slug), "") => format!("/mail/archive/browser?project={}", segment(slug)),
        (Some(slug), path) => {
            format!("/mail/archive/browser?project={}&path={}", segment(slug), segment(path))
        }
    }
}

/// A file of a project's archive directory, as JSON.
pub fn archive_file(slug: &str, path: &str) -> String {
    format!("/mail/archive/browser/{}/file?path={}", segment(slug), segment(path))
}

/// An archive view (`timeline`, `network`, `activity`) of one project, or of all.
pub fn archive_view(view: &str, project: Option<&str>) -> String {
    match project {
        Some(slug) => format!("/mail/archive/{view}?project={}", segment(slug)),
        None => format!("/mail/archive/{view}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cannot_leave_their_place() {
        assert_eq!(thread("p", "../../x?y#z"), "/mail/p/thread/..%2F..%2Fx%3Fy%23z");
        assert_eq!(inbox("p", "Blue Lake"), "/mail/p/inbox/Blue%20Lake");
        assert_eq!(project("my-proj_1"), "/mail/my-proj_1");
        assert_eq!(
            archive_browser(Some("p"), "agents/A B&c=d"),
            "/mail/archive/browser?project=p&path=agents%2FA%20B%26c%3Dd"
        );
    }
}
