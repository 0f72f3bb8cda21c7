//! Turns queued archive work into file contents, from the database as it is now.
//!
//! Rendering reads the rows rather than a copy taken at queue time, so a replay after a crash
//! produces the same bytes as the first attempt would have (idempotent), and `archive
//! rebuild` can reuse the same functions.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use mailroom_git::ArchiveRepo;
use serde_json::Value;

use super::format::{self, AgentBase, MessageDoc, SenderProject};
use crate::error::{Error, Result};
use crate::model::names::OVERSEER_NAME;
use crate::records::{AgentId, MessageId, ReservationId};
use crate::store::Db;
use crate::store::db::archive_queue::{ArchiveKind, QueuedWork};
use crate::store::db::messages::RecipientLists;

/// Files to commit (repo-relative path → bytes) and the commit message.
pub(super) struct Rendered {
    pub files: Vec<(String, Vec<u8>)>,
    /// Files to take out of the archive (deleted messages' copies).
    pub removals: Vec<String>,
    pub message: String,
}

/// One change's commit line and, for a single-change commit, its body.
struct Entry {
    line: String,
    body: String,
    /// `<agent> <pattern>` for a reservation artifact, whose commits follow their own
    /// convention (docs/compat/archive.md §10).
    reservation: Option<String>,
}

/// Committed thread digests by path, kept by the writer so that appending to a digest does
/// not read it back out of Git (a lookup through large trees) for every batch. Rendering takes
/// a digest out (no copy of a long thread's text); the writer puts it back once committed.
pub(super) type DigestCache = HashMap<String, Vec<u8>>;

/// Where a digest's current text comes from (this batch, the cache, or HEAD), and which work
/// may already be in it.
struct Sources<'a> {
    repo: &'a ArchiveRepo,
    digests: &'a mut DigestCache,
    /// Rows up to this queue id may have been committed before (a replay after a crash or a
    /// failed attempt): their digest entry is looked for before appending. Later rows are new,
    /// and searching a long thread's digest for each of them would cost O(thread) per message.
    replay_horizon: i64,
    /// Canonical paths whose digest entry this batch has appended.
    appended: HashSet<String>,
}

/// Why a batch did not render: the first item that failed (its index in the batch) and its
/// error. The items before it render, so the writer can commit them and deal with it alone.
pub(super) struct RenderFailure {
    pub index: usize,
    pub error: Error,
}

/// Renders a batch of work into one commit's files. Work whose row is gone (deleted since)
/// renders nothing. An item that fails stops the batch there ([`RenderFailure`]); a failure
/// of the database itself fails the whole read.
pub(super) fn render(
    db: &Db<'_>,
    work: &[QueuedWork],
    repo: &ArchiveRepo,
    digests: &mut DigestCache,
    replay_horizon: i64,
) -> Result<Result<Rendered, RenderFailure>> {
    let mut sources = Sources { repo, digests, replay_horizon, appended: HashSet::new() };
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut entries = Vec::new();
    let mut removals = Vec::new();
    for (index, item) in work.iter().enumerate() {
        let entry = match item.kind {
            ArchiveKind::Message => render_message(db, item, &mut sources, &mut files),
            ArchiveKind::Profile => render_profile(db, AgentId(item.ref_id), &mut files),
            ArchiveKind::Reservation => {
                render_reservation(db, ReservationId(item.ref_id), false, &mut files)
            }
            ArchiveKind::ReservationGrant => {
                render_reservation(db, ReservationId(item.ref_id), true, &mut files)
            }
            ArchiveKind::Deletion => render_deletion(db, item, &mut removals),
            ArchiveKind::Unknown => Ok(None),
        };
        match entry {
            Ok(entry) => entries.extend(entry),
            Err(error) => {
                // A database that cannot answer at all is no fault of this item.
                db.last_queued_archive_id()?;
                return Ok(Err(RenderFailure { index, error }));
            }
        }
    }
    let message = commit_message(&entries);
    Ok(Ok(Rendered { files: files.into_iter().collect(), removals, message }))
}

/// A deletion: the files its payload names leave the commit (a deletion is always a commit of
/// its own: `writer.rs`), its line counts the messages (`ref_id`).
fn render_deletion(
    db: &Db<'_>,
    item: &QueuedWork,
    removals: &mut Vec<String>,
) -> Result<Option<Entry>> {
    let deletion = match db.archive_deletion(item.id)? {
        Some(Ok(deletion)) => deletion,
        None => return Ok(None),
        // Retrying cannot mend it, and it must not hold up the work behind it.
        Some(Err(e)) => {
            tracing::error!(error = %e, "archive deletion skipped: its payload does not parse");
            return Ok(None);
        }
    };
    // The engine passes over paths HEAD does not hold as files (a replay finds them gone).
    removals.extend(deletion.paths);
    let via = deletion.via.as_deref().unwrap_or("web UI");
    let line = format!("delete: {} message(s) via {via}", item.ref_id);
    Ok(Some(Entry { line, body: String::new(), reservation: None }))
}

/// The archive files of a message whose sender is gone (a row `doctor repair` deletes): its
/// canonical copy and its recipients' inbox copies. The outbox copy is not named: its owner's
/// name went with the sender's row. `None` when the message or its project does not exist.
pub fn orphaned_message_files(db: &Db<'_>, id: MessageId) -> Result<Option<Vec<String>>> {
    let Some(message) = db.message_by_id(id)? else { return Ok(None) };
    let Some(project) = db.project_by_id(message.project_id)? else { return Ok(None) };
    let RecipientLists { to, cc, bcc } = db.recipient_lists(id)?;
    let doc = MessageDoc {
        id,
        thread_id: None,
        project: project.human_key,
        project_slug: project.slug,
        from: String::new(),
        from_project: None,
        to,
        cc,
        bcc,
        subject: message.subject,
        importance: message.importance,
        ack_required: message.ack_required,
        created: message.created_ts,
        attachments: Vec::new(),
        body_md: String::new(),
    };
    Ok(Some(format::message_paths(&doc, false).all().cloned().collect()))
}

/// A message's project (its slug) and its archive files as it is stored now (canonical,
/// outbox and inbox copies); `None` when it does not exist.
pub fn message_files(db: &Db<'_>, id: MessageId) -> Result<Option<(String, Vec<String>)>> {
    let Some((doc, sender_is_local)) = message_doc(db, id)? else { return Ok(None) };
    let paths = format::message_paths(&doc, sender_is_local).all().cloned().collect();
    Ok(Some((doc.project_slug, paths)))
}

/// Loads a message as its archive document; `None` when it no longer exists. The flag says
/// whether the sender belongs to the message's project (only then is there an outbox copy).
pub(super) fn message_doc(db: &Db<'_>, id: MessageId) -> Result<Option<(MessageDoc, bool)>> {
    let Some(listed) = db.listed_message(id)? else { return Ok(None) };
    let message = &listed.message;
    let sender_is_local = listed.sender_project_id == message.project_id;
    // A local sender's project is the message's: no second lookup on the writer's path.
    let (project_human_key, project_slug) = if sender_is_local {
        (listed.sender_project_human_key.clone(), listed.sender_project_slug.clone())
    } else {
        let project = db
            .project_by_id(message.project_id)?
            .ok_or_else(|| Error::internal(format!("message {id} has no project")))?;
        (project.human_key, project.slug)
    };
    let RecipientLists { to, cc, bcc } = db.recipient_lists(id)?;
    let from_project = (!sender_is_local).then(|| SenderProject {
        human_key: listed.sender_project_human_key.clone(),
        slug: listed.sender_project_slug.clone(),
    });
    let attachments = message.attachments.to_list();
    let doc = MessageDoc {
        id,
        thread_id: message.thread_id.clone(),
        project: project_human_key,
        project_slug,
        from: listed.sender_name.clone(),
        from_project,
        to,
        cc,
        bcc,
        subject: message.subject.clone(),
        importance: message.importance.clone(),
        ack_required: message.ack_required,
        created: message.created_ts,
        attachments,
        body_md: message.body_md.clone(),
    };
    Ok(Some((doc, sender_is_local)))
}

fn render_message(
    db: &Db<'_>,
    item: &QueuedWork,
    sources: &mut Sources<'_>,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<Option<Entry>> {
    let Some((doc, sender_is_local)) = message_doc(db, MessageId(item.ref_id))? else {
        return Ok(None);
    };
    let content = format::render_message(&doc).into_bytes();
    let paths = format::message_paths(&doc, sender_is_local);
    for path in paths.all() {
        files.insert(path.clone(), content.clone());
    }
    if let (Some(path), Some(thread_id)) = (format::digest_path(&doc), doc.thread_id.as_deref()) {
        let maybe_present =
            item.id <= sources.replay_horizon || sources.appended.contains(&paths.canonical);
        append_digest(&doc, path, thread_id, &paths.canonical, maybe_present, sources, files)?;
        sources.appended.insert(paths.canonical.clone());
    }
    for path in attachment_files(&doc) {
        match attachment_bytes(sources.repo.root(), &path, &doc) {
            Ok(bytes) => {
                files.insert(path, bytes);
            }
            Err(e) => tracing::warn!(path, error = %e, "attachment file missing from the archive"),
        }
    }
    Ok(Some(Entry { line: mail_line(&doc), body: mail_body(&doc), reservation: None }))
}

/// Appends the message's digest entry; when the entry `maybe_present` (a replay), only if the
/// digest does not have it yet.
fn append_digest(
    doc: &MessageDoc,
    path: String,
    thread_id: &str,
    canonical: &str,
    maybe_present: bool,
    sources: &mut Sources<'_>,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<()> {
    // A replay of work an earlier version committed may have its entry in the thread's flat
    // digest of the reference's layout.
    if maybe_present
        && let Some(legacy) = format::legacy_digest_path(doc)
        && let Some(text) = sources.repo.committed_file(&legacy)?
        && format::digest_contains(&String::from_utf8_lossy(&text), canonical)
    {
        return Ok(());
    }
    let mut digest = match files.remove(&path) {
        Some(bytes) => bytes,
        None => match sources.digests.remove(&path) {
            Some(cached) => cached,
            None => sources
                .repo
                .committed_file(&path)?
                .unwrap_or_else(|| format::digest_header(thread_id).into_bytes()),
        },
    };
    if !(maybe_present && format::digest_contains(&String::from_utf8_lossy(&digest), canonical)) {
        digest.extend_from_slice(format::digest_entry(doc, canonical).as_bytes());
    }
    files.insert(path, digest);
    Ok(())
}

/// The bytes of one of the message's attachment files, for the writer and for `rebuild`.
/// Images are stored once, under the sending project; a copy of the message delivered to
/// another project has its own copy of them there (docs/compat/archive.md §7), written into
/// the work tree here from the sender's, since the engine leaves attachment files in the work
/// tree to whoever stores them.
pub(super) fn attachment_bytes(
    root: &Path,
    path: &str,
    doc: &MessageDoc,
) -> std::io::Result<Vec<u8>> {
    let target = root.join(path);
    let missing = match std::fs::read(&target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => e,
        read => return read,
    };
    let own = format!("projects/{}/", doc.project_slug);
    let (Some(from), Some(rest)) = (&doc.from_project, path.strip_prefix(&own)) else {
        return Err(missing);
    };
    let bytes = std::fs::read(root.join("projects").join(&from.slug).join(rest))?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)?;
    }
    mailroom_git::write_atomically(&target, &bytes)?;
    Ok(bytes)
}

/// Repo-relative files of the message's stored images (webp, manifest, audit log).
pub(super) fn attachment_files(doc: &MessageDoc) -> Vec<String> {
    let mut paths = Vec::new();
    for meta in &doc.attachments {
        let Some(sha1) = meta.get("sha1").and_then(Value::as_str) else { continue };
        if sha1.len() < 2 || !sha1.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let base = format!("projects/{}/attachments", doc.project_slug);
        paths.push(format!("{base}/{}/{sha1}.webp", &sha1[..2]));
        paths.push(format!("{base}/_manifests/{sha1}.json"));
        paths.push(format!("{base}/_audit/{sha1}.log"));
        if let Some(original) = meta.get("original_path").and_then(Value::as_str) {
            paths.push(original.to_string());
        }
    }
    paths
}

/// `mail: A -> B, C | subject`, the reference's plain commit line.
fn mail_line(doc: &MessageDoc) -> String {
    if doc.from == OVERSEER_NAME && doc.from_project.is_none() {
        return format!("Human Overseer message: {}", doc.subject);
    }
    let sender = match &doc.from_project {
        Some(p) => format!("{}@{}", doc.from, p.slug),
        None => doc.from.clone(),
    };
    let recipients: Vec<&str> =
        doc.to.iter().chain(&doc.cc).chain(&doc.bcc).map(String::as_str).collect();
    format!("mail: {sender} -> {} | {}", recipients.join(", "), doc.subject)
}

fn mail_body(doc: &MessageDoc) -> String {
    let thread = doc.thread_id.clone().unwrap_or_else(|| doc.id.to_string());
    format!(
        "Agent: {}\nProject: {}\nStarted: {}\nStatus: SUCCESS\nThread: {thread}\n",
        doc.from,
        doc.project,
        doc.created.to_iso()
    )
}

fn render_profile(
    db: &Db<'_>,
    agent_id: AgentId,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<Option<Entry>> {
    let Some((path, content, name)) = profile_file(db, agent_id)? else { return Ok(None) };
    files.insert(path, content);
    Ok(Some(Entry {
        line: format!("agent: profile {name}"),
        body: String::new(),
        reservation: None,
    }))
}

/// An agent's `profile.json`: path, bytes and the agent's name; `None` when it is gone.
pub(super) fn profile_file(
    db: &Db<'_>,
    agent_id: AgentId,
) -> Result<Option<(String, Vec<u8>, String)>> {
    let Some(agent) = db.agent_by_id(agent_id)? else { return Ok(None) };
    let project = db
        .project_by_id(agent.project_id)?
        .ok_or_else(|| Error::internal(format!("agent {agent_id} has no project")))?;
    let profile = serde_json::to_value(AgentBase::from(&agent))
        .map_err(|e| Error::internal(format!("profile of {}: {e}", agent.name)))?;
    let path = format::profile_path(&project.slug, &agent.name);
    Ok(Some((path, format::render_profile(&profile).into_bytes(), agent.name)))
}

fn render_reservation(
    db: &Db<'_>,
    id: ReservationId,
    grant: bool,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<Option<Entry>> {
    let Some(artifact) = reservation_files(db, id, grant)? else { return Ok(None) };
    for (path, bytes) in artifact.files {
        files.insert(path, bytes);
    }
    let who = format!("{} {}", artifact.agent, artifact.pattern);
    Ok(Some(Entry {
        line: format!("file_reservation: {who}"),
        body: String::new(),
        reservation: Some(who),
    }))
}

/// A reservation's two artifact files, its holder and its (stripped) pattern.
pub(super) struct ReservationFiles {
    pub files: [(String, Vec<u8>); 2],
    pub agent: String,
    pub pattern: String,
}

/// Renders a reservation's artifacts (docs/compat/archive.md §6); `None` when it no longer exists.
/// A released reservation's `expires_ts` is clamped to its release. On `grant`, the branch and
/// worktree of the code repository at the project's path are added when there is one.
pub(super) fn reservation_files(
    db: &Db<'_>,
    id: ReservationId,
    grant: bool,
) -> Result<Option<ReservationFiles>> {
    let Some(reservation) = db.reservation_by_id(id)? else { return Ok(None) };
    let project = db
        .project_by_id(reservation.project_id)?
        .ok_or_else(|| Error::internal(format!("reservation {id} has no project")))?;
    let pattern = format::python_strip(&reservation.path_pattern).to_string();
    let expires = match reservation.released_ts {
        Some(released) => reservation.expires_ts.min(released),
        None => reservation.expires_ts,
    };
    let mut record = serde_json::json!({
        "id": reservation.id,
        "project": project.human_key,
        "agent": reservation.agent_name,
        "path_pattern": pattern,
        "exclusive": reservation.exclusive,
        "reason": reservation.reason,
        "created_ts": reservation.created_ts.to_iso(),
        "expires_ts": expires.to_iso(),
    });
    if let Some(released) = reservation.released_ts {
        record["released_ts"] = Value::String(released.to_iso());
    }
    if grant && let Some((branch, worktree)) = code_repo_branch(&project.human_key) {
        record["branch"] = Value::String(branch);
        record["worktree"] = Value::String(worktree);
    }
    let bytes = format::render_reservation(&record).into_bytes();
    let [legacy, by_id] = format::reservation_paths(&project.slug, id, &pattern);
    Ok(Some(ReservationFiles {
        files: [(legacy, bytes.clone()), (by_id, bytes)],
        agent: reservation.agent_name,
        pattern,
    }))
}

/// The current branch and worktree directory name of the Git repository holding `path`,
/// best effort (no repository, detached or unborn HEAD: `None`).
fn code_repo_branch(path: &str) -> Option<(String, String)> {
    let directory = std::path::Path::new(path);
    if !directory.is_dir() {
        return None;
    }
    let repo = git2::Repository::discover(directory).ok()?;
    let head = repo.head().ok()?;
    let branch = head.shorthand().ok()?.to_string();
    let worktree = repo.workdir()?.file_name()?.to_string_lossy().into_owned();
    Some((branch, worktree))
}

/// Reservation entries only: `file_reservation: <agent> <pattern> (+N more)` and a line per
/// entry (docs/compat/archive.md §10). `None` when any entry is something else.
fn reservation_commit_message(entries: &[Entry]) -> Option<String> {
    let whos: Vec<&str> =
        entries.iter().map(|e| e.reservation.as_deref()).collect::<Option<_>>()?;
    let (first, rest) = whos.split_first()?;
    if rest.is_empty() {
        return Some(format!("file_reservation: {first}\n"));
    }
    let mut message = format!("file_reservation: {first} (+{} more)\n\n", rest.len());
    for who in &whos {
        message.push_str(&format!("- {who}\n"));
    }
    Some(message)
}

/// One change: its line and body. Several: `batch: N commits` and a line per change.
fn commit_message(entries: &[Entry]) -> String {
    if let Some(message) = reservation_commit_message(entries) {
        return message;
    }
    match entries {
        [] => "chore: archive replay (no changes)".to_string(),
        [one] if one.body.is_empty() => format!("{}\n", one.line),
        [one] => format!("{}\n\n{}", one.line, one.body),
        many => {
            let mut message = format!("batch: {} commits\n\n", many.len());
            for entry in many {
                message.push_str("- ");
                message.push_str(&entry.line);
                message.push('\n');
            }
            message
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::Timestamp;

    fn doc(project_slug: &str, from_project: Option<&str>) -> MessageDoc {
        MessageDoc {
            id: MessageId(7),
            thread_id: None,
            project: format!("/work/{project_slug}"),
            project_slug: project_slug.into(),
            from: "BlueLake".into(),
            from_project: from_project.map(|slug| SenderProject {
                human_key: format!("/work/{slug}"),
                slug: slug.into(),
            }),
            to: vec!["GreenCastle".into()],
            cc: Vec::new(),
            bcc: Vec::new(),
            subject: "Diagram".into(),
            importance: "normal".into(),
            ack_required: false,
            created: Timestamp::now(),
            attachments: Vec::new(),
            body_md: String::new(),
        }
    }

    /// A copy delivered to another project takes the sender's stored file, and leaves its
    /// own copy in the work tree; a local copy has no other place to look.
    #[test]
    fn a_delivered_copy_takes_its_images_from_the_sending_project() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let stored = "attachments/ab/abcd.webp";
        let sender_file = root.join("projects/alpha").join(stored);
        std::fs::create_dir_all(sender_file.parent().expect("dir")).expect("mkdir");
        std::fs::write(&sender_file, b"RIFF-webp").expect("write");

        let target = format!("projects/beta/{stored}");
        let bytes = attachment_bytes(root, &target, &doc("beta", Some("alpha"))).expect("copied");
        assert_eq!(bytes, b"RIFF-webp");
        assert_eq!(std::fs::read(root.join(&target)).expect("work tree copy"), b"RIFF-webp");

        let local = format!("projects/gamma/{stored}");
        let missing = attachment_bytes(root, &local, &doc("gamma", None)).expect_err("none");
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        assert!(!root.join(&local).exists());
    }
}
