//! The bytes of the Git archive: message files with JSON front matter, their names and paths,
//! thread digests, agent profiles and file-reservation artifacts (docs/compat/archive.md §2–6).
//!
//! Everything here is a pure function of its inputs. The archive is a public contract shared
//! with the Python reference, so the renderers reproduce its output byte for byte: an archive
//! written by either server diffs cleanly against the other, and replaying one into the other
//! finds nothing to change. The store decides when to write; this module only says what.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};

pub use super::python_json::python_json;
use crate::model::sha1::sha1_hex;
use crate::model::thread_id::is_valid_thread_id;
use crate::model::time::Timestamp;
use crate::records::{Agent, AgentId, Importance, MessageId, ProjectId, ReservationId};

/// The subject slug in a message file name is cut to this many characters, as in the reference.
const SUBJECT_SLUG_MAX_CHARS: usize = 80;

/// Digest entries quote at most this many characters of the body, so a digest stays readable.
const DIGEST_PREVIEW_MAX_CHARS: usize = 1200;

/// The line that opens a message file's front matter.
const FRONT_MATTER_OPEN: &str = "---json";

/// The line that closes a message file's front matter.
const FRONT_MATTER_CLOSE: &str = "---";

// ---------------------------------------------------------------------------------------------
// Python string stripping
// ---------------------------------------------------------------------------------------------

/// Whether Python's `str.isspace()` holds for `character`.
///
/// That is Unicode `White_Space` (Rust's `char::is_whitespace`) plus the four ASCII separators
/// U+001C..U+001F, which Python counts as whitespace because of their bidirectional class.
fn is_python_whitespace(character: char) -> bool {
    character.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&character)
}

/// Python's `str.strip()` with no arguments.
pub(crate) fn python_strip(text: &str) -> &str {
    text.trim_matches(is_python_whitespace)
}

/// Python's `str.rstrip()` with no arguments.
fn python_rstrip(text: &str) -> &str {
    text.trim_end_matches(is_python_whitespace)
}

// ---------------------------------------------------------------------------------------------
// Message documents
// ---------------------------------------------------------------------------------------------

/// Everything a message file says: its JSON front matter and its Markdown body.
///
/// The same bytes are written to the canonical copy, the sender's outbox and every recipient's
/// inbox, so the document is all one needs to rebuild a message row from the archive.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageDoc {
    /// The message id, also the last part of the file name.
    pub id: MessageId,
    /// The thread the message belongs to; written as `null` when it has none.
    pub thread_id: Option<String>,
    /// The target project's human key (its absolute path).
    pub project: String,
    /// The target project's slug, which names its directory under `projects/`.
    pub project_slug: String,
    /// The sender's agent name.
    pub from: String,
    /// The sender's own project, present only when it is not the target project.
    pub from_project: Option<SenderProject>,
    /// Names of the `to` recipients.
    pub to: Vec<String>,
    /// Names of the `cc` recipients.
    pub cc: Vec<String>,
    /// Names of the `bcc` recipients; the reference writes them into every copy.
    pub bcc: Vec<String>,
    /// The subject line.
    pub subject: String,
    pub importance: Importance,
    /// Whether recipients are asked to acknowledge the message.
    pub ack_required: bool,
    /// When the message was created; also names its `YYYY/MM` directories and its file.
    pub created: Timestamp,
    /// Attachment metadata objects (docs/compat/archive.md §7), written as given.
    pub attachments: Vec<Value>,
    /// The processed Markdown body. Files hold it stripped of surrounding whitespace.
    pub body_md: String,
}

/// The project of a sender who writes into another project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderProject {
    /// The sender project's human key, written as `from_project`.
    pub human_key: String,
    /// The sender project's slug, written as `from_project_slug` and inside `from_address`.
    pub slug: String,
}

/// Why a message file could not be read back into a [`MessageDoc`].
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The text does not begin with the `---json` line.
    #[error("missing front matter: a message file must start with a '---json' line")]
    MissingFrontMatter,
    /// No `---` line ends the front matter.
    #[error("front matter is not closed by a '---' line")]
    UnclosedFrontMatter,
    /// The text between the two fences is not valid JSON.
    #[error("front matter is not JSON: {0}")]
    InvalidJson(#[source] serde_json::Error),
    /// The front matter is valid JSON but not an object.
    #[error("front matter is not a JSON object")]
    NotAnObject,
    /// A key every message file has is absent.
    #[error("missing key '{0}'")]
    MissingKey(&'static str),
    /// A key holds a value of the wrong JSON type.
    #[error("key '{key}' must be {expected}")]
    WrongType {
        /// The offending front-matter key.
        key: &'static str,
        /// What the key should hold, in words.
        expected: &'static str,
    },
    /// `created` is a string but not an ISO-8601 timestamp.
    #[error("key 'created' is not an ISO-8601 timestamp: {0:?}")]
    InvalidTimestamp(String),
}

/// Renders a message file: `---json`, the front matter as [`python_json`], `---`, a blank
/// line, the stripped body and a final newline, exactly as the reference writes it.
pub fn render_message(doc: &MessageDoc) -> String {
    let front_matter = python_json(&front_matter(doc));
    let body = python_strip(&doc.body_md);
    format!("{FRONT_MATTER_OPEN}\n{front_matter}\n{FRONT_MATTER_CLOSE}\n\n{body}\n")
}

/// The front-matter object of `doc`. `topic` is deliberately absent: the reference keeps it
/// only in the database.
fn front_matter(doc: &MessageDoc) -> Value {
    let mut map = Map::new();
    let mut put = |key: &str, value: Value| map.insert(key.to_owned(), value);
    put("id", doc.id.0.into());
    put("thread_id", doc.thread_id.clone().into());
    put("project", doc.project.clone().into());
    put("project_slug", doc.project_slug.clone().into());
    put("from", doc.from.clone().into());
    if let Some(sender) = &doc.from_project {
        put("from_project", sender.human_key.clone().into());
        put("from_project_slug", sender.slug.clone().into());
        put("from_address", format!("project:{}#{}", sender.slug, doc.from).into());
    }
    put("to", doc.to.clone().into());
    put("cc", doc.cc.clone().into());
    put("bcc", doc.bcc.clone().into());
    put("subject", doc.subject.clone().into());
    put("importance", doc.importance.as_str().into());
    put("ack_required", doc.ack_required.into());
    put("created", doc.created.to_iso().into());
    put("attachments", doc.attachments.clone().into());
    Value::Object(map)
}

/// Reads a message file back into a [`MessageDoc`].
///
/// Accepts what [`render_message`] writes and what hands and tools do to it: `\r\n` line ends
/// around the fences, a missing final newline, a leading byte-order mark, unknown extra keys
/// (ignored; `from_address` is derived, so it is ignored too), and `created` in any form
/// [`Timestamp::parse_iso`] reads (`+00:00` or `Z`, with or without a fraction). To replay
/// archives written by older versions, `thread_id`, `cc`, `bcc` and `attachments` may be
/// absent (read as none and empty). The body comes back stripped, as it was written.
pub fn parse_message(text: &str) -> Result<MessageDoc, FormatError> {
    let (json_text, body) = split_front_matter(text)?;
    let front_matter: Value = serde_json::from_str(json_text).map_err(FormatError::InvalidJson)?;
    let Value::Object(map) = front_matter else {
        return Err(FormatError::NotAnObject);
    };
    let keys = FrontMatter(&map);
    Ok(MessageDoc {
        id: MessageId(keys.integer("id")?),
        thread_id: keys.optional_string("thread_id")?,
        project: keys.string("project")?,
        project_slug: keys.string("project_slug")?,
        from: keys.string("from")?,
        from_project: keys.sender_project()?,
        to: keys.names("to")?,
        cc: keys.optional_names("cc")?,
        bcc: keys.optional_names("bcc")?,
        subject: keys.string("subject")?,
        importance: Importance(keys.string("importance")?),
        ack_required: keys.boolean("ack_required")?,
        created: keys.timestamp("created")?,
        attachments: keys.optional_list("attachments")?,
        body_md: python_strip(body).to_owned(),
    })
}

/// Splits a message file into its front-matter JSON and its raw body.
///
/// The front matter ends at the first line that is exactly `---`. JSON strings cannot hold a
/// raw line break, so such a line can never be inside the JSON, while the body may contain any
/// number of them.
fn split_front_matter(text: &str) -> Result<(&str, &str), FormatError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let after_open = text
        .strip_prefix(FRONT_MATTER_OPEN)
        .and_then(strip_line_break)
        .ok_or(FormatError::MissingFrontMatter)?;
    let mut line_start = 0;
    for line in after_open.split_inclusive('\n') {
        let line_end = line_start + line.len();
        if line.trim_end_matches(['\n', '\r']) == FRONT_MATTER_CLOSE {
            return Ok((&after_open[..line_start], &after_open[line_end..]));
        }
        line_start = line_end;
    }
    Err(FormatError::UnclosedFrontMatter)
}

/// Removes one leading `\n` or `\r\n`; `None` if the text does not start with a line break.
fn strip_line_break(text: &str) -> Option<&str> {
    text.strip_prefix("\r\n").or_else(|| text.strip_prefix('\n'))
}

/// Typed access to front-matter keys, turning absent or mistyped values into [`FormatError`]s.
struct FrontMatter<'a>(&'a Map<String, Value>);

impl FrontMatter<'_> {
    fn required(&self, key: &'static str) -> Result<&Value, FormatError> {
        self.0.get(key).ok_or(FormatError::MissingKey(key))
    }

    /// The value of `key`, treating an absent key like `null`.
    fn present(&self, key: &'static str) -> Option<&Value> {
        self.0.get(key).filter(|value| !value.is_null())
    }

    fn integer(&self, key: &'static str) -> Result<i64, FormatError> {
        self.required(key)?.as_i64().ok_or(FormatError::WrongType { key, expected: "an integer" })
    }

    fn boolean(&self, key: &'static str) -> Result<bool, FormatError> {
        self.required(key)?.as_bool().ok_or(FormatError::WrongType { key, expected: "a boolean" })
    }

    fn string(&self, key: &'static str) -> Result<String, FormatError> {
        as_string(key, self.required(key)?)
    }

    fn optional_string(&self, key: &'static str) -> Result<Option<String>, FormatError> {
        self.present(key).map(|value| as_string(key, value)).transpose()
    }

    fn names(&self, key: &'static str) -> Result<Vec<String>, FormatError> {
        as_names(key, self.required(key)?)
    }

    fn optional_names(&self, key: &'static str) -> Result<Vec<String>, FormatError> {
        self.present(key).map_or(Ok(Vec::new()), |value| as_names(key, value))
    }

    fn optional_list(&self, key: &'static str) -> Result<Vec<Value>, FormatError> {
        match self.present(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items.clone()),
            Some(_) => Err(FormatError::WrongType { key, expected: "a list" }),
        }
    }

    fn timestamp(&self, key: &'static str) -> Result<Timestamp, FormatError> {
        let text = self.string(key)?;
        Timestamp::parse_iso(&text).ok_or(FormatError::InvalidTimestamp(text))
    }

    /// The sender's project, when `from_project` is present; its slug is then required too.
    fn sender_project(&self) -> Result<Option<SenderProject>, FormatError> {
        let Some(human_key) = self.optional_string("from_project")? else {
            return Ok(None);
        };
        Ok(Some(SenderProject { human_key, slug: self.string("from_project_slug")? }))
    }
}

fn as_string(key: &'static str, value: &Value) -> Result<String, FormatError> {
    value.as_str().map(str::to_owned).ok_or(FormatError::WrongType { key, expected: "a string" })
}

fn as_names(key: &'static str, value: &Value) -> Result<Vec<String>, FormatError> {
    let wrong_type = || FormatError::WrongType { key, expected: "a list of strings" };
    let items = value.as_array().ok_or_else(wrong_type)?;
    items.iter().map(|item| item.as_str().map(str::to_owned).ok_or_else(wrong_type)).collect()
}

// ---------------------------------------------------------------------------------------------
// File names and paths
// ---------------------------------------------------------------------------------------------

/// The subject part of a message file name, as the reference computes it:
/// `re.sub(r"[^a-zA-Z0-9._-]+", "-", subject).strip("-_").lower()[:80] or "message"`.
pub fn subject_slug(subject: &str) -> String {
    let mut replaced = String::with_capacity(subject.len());
    let mut in_replaced_run = false;
    for character in subject.chars() {
        if character.is_ascii_alphanumeric() || matches!(character, '.' | '_' | '-') {
            replaced.push(character.to_ascii_lowercase());
            in_replaced_run = false;
        } else if !in_replaced_run {
            replaced.push('-');
            in_replaced_run = true;
        }
    }
    let stripped = replaced.trim_matches(['-', '_']);
    // The slug is ASCII, so cutting at a byte offset is cutting at a character.
    let cut = stripped.get(..SUBJECT_SLUG_MAX_CHARS).unwrap_or(stripped);
    if cut.is_empty() { "message".to_owned() } else { cut.to_owned() }
}

/// The file name shared by all copies of a message: `<YYYY-MM-DDTHH-MM-SSZ>__<slug>__<id>.md`,
/// which sorts chronologically and is valid on every filesystem.
pub fn message_file_name(created: Timestamp, subject: &str, id: MessageId) -> String {
    format!("{}__{}__{id}.md", created.archive_stamp(), subject_slug(subject))
}

/// The message id in a message file name, from the current `<stamp>__<slug>__<id>.md` form or
/// the legacy `<id>.md`; `None` for any other name.
///
/// Accepts a bare name or a path (only the last component is read). Thread digests
/// (`messages/threads/<thread_id>.md`) can look like legacy names, so apply this only to files
/// under `messages/YYYY/MM/` or a mailbox.
pub fn parse_message_file_name(name: &str) -> Option<MessageId> {
    let file_name = name.rsplit('/').next().unwrap_or(name);
    let stem = file_name.strip_suffix(".md")?;
    let id = match stem.rsplit_once("__") {
        Some((stamp_and_slug, id)) if stamp_and_slug.contains("__") => id,
        Some(_) => return None,
        None => stem,
    };
    if id.is_empty() || !id.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    id.parse().ok().map(MessageId)
}

/// Where one message is written, as repo-relative paths with `/` separators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessagePaths {
    /// `projects/<slug>/messages/YYYY/MM/<file>`, the copy the read side trusts.
    pub canonical: String,
    /// The sender's outbox copy; only for senders registered in the target project.
    pub outbox: Option<String>,
    /// One inbox copy per distinct recipient, in `to`, `cc`, `bcc` order.
    pub inboxes: Vec<String>,
}

impl MessagePaths {
    /// Every copy: the canonical one, then the outbox copy (if any), then the inbox copies.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.canonical).chain(&self.outbox).chain(&self.inboxes)
    }
}

/// Every path a delivery of `doc` writes, apart from the thread digest.
///
/// A name listed more than once (say in both `to` and `cc`) gets a single inbox path, since
/// every copy has the same name and bytes. `YYYY/MM` is the UTC month of `created`.
pub fn message_paths(doc: &MessageDoc, sender_is_local: bool) -> MessagePaths {
    let file_name = message_file_name(doc.created, &doc.subject, doc.id);
    let month = month_directory(doc.created);
    let project = project_directory(&doc.project_slug);
    let canonical = canonical_message_path(&doc.project_slug, doc.created, &doc.subject, doc.id);
    let mailbox =
        |agent: &str, kind: &str| format!("{project}/agents/{agent}/{kind}/{month}/{file_name}");
    let mut seen = HashSet::new();
    let inboxes = recipients(doc)
        .filter(|name| seen.insert(*name))
        .map(|name| mailbox(name, "inbox"))
        .collect();
    MessagePaths {
        canonical,
        outbox: sender_is_local.then(|| mailbox(&doc.from, "outbox")),
        inboxes,
    }
}

/// The canonical copy of a message: `projects/<slug>/messages/YYYY/MM/<file>`.
pub fn canonical_message_path(
    project_slug: &str,
    created: Timestamp,
    subject: &str,
    id: MessageId,
) -> String {
    let file_name = message_file_name(created, subject, id);
    format!("{}/messages/{}/{file_name}", project_directory(project_slug), month_directory(created))
}

/// The path of an agent's profile: `projects/<slug>/agents/<Name>/profile.json`.
pub fn profile_path(project_slug: &str, agent_name: &str) -> String {
    format!("{}/agents/{agent_name}/profile.json", project_directory(project_slug))
}

/// The path of a thread's digest for the messages of one month:
/// `projects/<slug>/messages/threads/YYYY/MM/<thread_id>.md` (docs/compat/archive.md §4).
/// The reference keeps one flat directory of digests, which grows with every thread ever
/// started; Git rewrites a directory's whole tree on each commit that touches it, so that
/// cost grew with the archive. A month's directory holds only the threads written that month,
/// and leaves the work tree with the month's other directories.
///
/// The thread id is used verbatim; callers must have checked it against the thread-id rule
/// (alphanumeric start, then letters, digits, `.`, `_`, `-`), which keeps it one path component.
pub fn thread_digest_path(project_slug: &str, thread_id: &str, created: Timestamp) -> String {
    format!(
        "{}/messages/threads/{}/{thread_id}.md",
        project_directory(project_slug),
        month_directory(created)
    )
}

/// The reference's path of a thread's digest, `projects/<slug>/messages/threads/<thread_id>.md`:
/// archives written before the monthly digests have their threads' earlier entries there.
/// Nothing is appended to it any more; `archive verify` and `rebuild` accept an entry found in
/// it.
pub fn legacy_thread_digest_path(project_slug: &str, thread_id: &str) -> String {
    format!("{}/messages/threads/{thread_id}.md", project_directory(project_slug))
}

/// The message's thread id, when it passes the thread-id rule (other messages get no digest).
pub fn digest_thread_id(doc: &MessageDoc) -> Option<&str> {
    doc.thread_id.as_deref().filter(|t| is_valid_thread_id(t))
}

/// The path of the digest the message's entry goes to; `None` when the message has no thread
/// id that passes the thread-id rule.
pub fn digest_path(doc: &MessageDoc) -> Option<String> {
    Some(thread_digest_path(&doc.project_slug, digest_thread_id(doc)?, doc.created))
}

/// The reference's flat digest of the message's thread, where an archive from before the
/// monthly digests may hold its entry.
pub fn legacy_digest_path(doc: &MessageDoc) -> Option<String> {
    Some(legacy_thread_digest_path(&doc.project_slug, digest_thread_id(doc)?))
}

/// The two artifacts of a file reservation: the legacy one named by the SHA-1 of its pattern
/// (overwritten by the latest reservation of that exact pattern) and the stable `id-<id>` one.
///
/// The pattern is hashed after Python-style whitespace stripping, because the reference strips
/// it before hashing; the record written into both files should hold the stripped pattern too.
pub fn reservation_paths(project_slug: &str, id: ReservationId, path_pattern: &str) -> [String; 2] {
    let directory = format!("{}/file_reservations", project_directory(project_slug));
    let digest = sha1_hex(python_strip(path_pattern).as_bytes());
    [format!("{directory}/{digest}.json"), format!("{directory}/id-{id}.json")]
}

fn project_directory(project_slug: &str) -> String {
    format!("projects/{project_slug}")
}

/// The `YYYY/MM` directory of a UTC instant.
fn month_directory(created: Timestamp) -> String {
    let (year, month) = created.year_month();
    format!("{year:04}/{month:02}")
}

/// All recipient names of a message in file order: `to`, then `cc`, then `bcc`.
fn recipients(doc: &MessageDoc) -> impl Iterator<Item = &str> {
    doc.to.iter().chain(&doc.cc).chain(&doc.bcc).map(String::as_str)
}

// ---------------------------------------------------------------------------------------------
// Thread digests
// ---------------------------------------------------------------------------------------------

/// The first lines of a new thread digest.
pub fn digest_header(thread_id: &str) -> String {
    format!("# Thread {thread_id}\n\n")
}

/// The digest entry appended for one message of a thread.
///
/// Follows the reference: an `### <subject>` line when the stripped subject is not empty, a
/// `## <created> — <from> → <recipients>` line (recipients as written in `to`, `cc`, `bcc`,
/// repeats kept), a link to the canonical copy, a body preview and a `---` separator. The
/// preview is the stripped body, or when that is longer than 1200 characters its first 1200
/// characters with trailing whitespace removed, then `\n...`.
pub fn digest_entry(doc: &MessageDoc, canonical_path: &str) -> String {
    let subject = python_strip(&doc.subject);
    let subject_line =
        if subject.is_empty() { String::new() } else { format!("### {subject}\n\n") };
    let recipients = recipients(doc).collect::<Vec<_>>().join(", ");
    let created = doc.created.to_iso();
    let preview = digest_preview(&doc.body_md);
    format!(
        "{subject_line}## {created} \u{2014} {from} \u{2192} {recipients}\n\n{link}\n\n{preview}\n\n---\n\n",
        from = doc.from,
        link = canonical_link(canonical_path),
    )
}

/// Whether `digest` already has the entry linking to `canonical_path`, so that replaying a
/// delivery does not append it twice.
///
/// It looks for the link as a whole line. A body that quotes that exact line would also match;
/// the cost is one missing digest entry, never a wrong one.
pub fn digest_contains(digest: &str, canonical_path: &str) -> bool {
    // A substring search (fast, and digests grow with their thread) confirmed per hit as a
    // whole line.
    let link = canonical_link(canonical_path);
    digest.match_indices(&link).any(|(start, _)| {
        let end = start + link.len();
        let line_starts = start == 0 || digest[..start].ends_with('\n');
        let rest = &digest[end..];
        let line_ends = rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n");
        line_starts && line_ends
    })
}

fn canonical_link(canonical_path: &str) -> String {
    format!("[View canonical]({canonical_path})")
}

fn digest_preview(body_md: &str) -> String {
    let body = python_strip(body_md);
    match body.char_indices().nth(DIGEST_PREVIEW_MAX_CHARS) {
        None => body.to_owned(),
        Some((cut, _)) => format!("{}\n...", python_rstrip(&body[..cut])),
    }
}

// ---------------------------------------------------------------------------------------------
// Profiles and reservation artifacts
// ---------------------------------------------------------------------------------------------

/// The agent fields every view shares: the whole of an agent's `profile.json`, and the base
/// of every agent a tool result shows (`ops::output` builds on it).
#[derive(Debug, Clone, Serialize)]
pub struct AgentBase {
    pub id: AgentId,
    pub name: String,
    pub program: String,
    pub model: String,
    pub task_description: String,
    pub inception_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub project_id: ProjectId,
    pub attachments_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<Timestamp>,
}

impl From<&Agent> for AgentBase {
    fn from(a: &Agent) -> Self {
        Self {
            id: a.id,
            name: a.name.clone(),
            program: a.program.clone(),
            model: a.model.clone(),
            task_description: a.task_description.clone(),
            inception_ts: a.inception_ts,
            last_active_ts: a.last_active_ts,
            project_id: a.project_id,
            attachments_policy: a.attachments_policy.clone(),
            retired_at: a.retired_at,
        }
    }
}

/// An agent's `profile.json`: the caller's object as [`python_json`] plus a final newline.
pub fn render_profile(profile: &Value) -> String {
    json_file(profile)
}

/// A file-reservation artifact: the caller's record as [`python_json`] plus a final newline.
pub fn render_reservation(reservation: &Value) -> String {
    json_file(reservation)
}

/// A project's `aliases.json` (`{"former_slugs": [...]}`, written by `projects adopt`), in
/// the layout of the archive's other JSON files.
pub fn render_aliases(aliases: &Value) -> String {
    json_file(aliases)
}

/// The reference's `_write_json` layout, shared by every JSON file in the archive.
fn json_file(value: &Value) -> String {
    let mut text = python_json(value);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;
