//! `mailroom archive verify`: does the archive's HEAD hold what the database says it should?
//!
//! Every message is rendered from the database as the archive writer would render it now,
//! and its canonical, outbox and inbox copies are compared with HEAD by blob id (so unchanged
//! files are never read); thread digests must link every message of their thread; profiles
//! must carry the agent's identity; attachment files must be committed. In the other
//! direction, every canonical message file must name a message of its own project.
//!
//! Work still queued in `archive_queue` is not yet archived by design (the server commits it
//! moments later, or replays it at its next start), so the messages and profiles it names are
//! counted, not compared.

use std::collections::{HashMap, HashSet};
use std::fmt;

use mailroom_git::CommittedFiles;
use serde_json::Value;

use super::format::{self, MessageDoc};
use super::maintenance::{ArchivePath, classify_path, for_each_message};
use super::render;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::MessageId;
use crate::store::Db;
use crate::store::db::archive_queue::{ArchiveKind, QueuedWork, SetAside};

/// Profile fields that identify an agent. `last_active_ts` is left out: it moves with every
/// send, and the archive rewrites a profile only when the agent registers again.
const PROFILE_IDENTITY_FIELDS: [&str; 8] = [
    "id",
    "name",
    "program",
    "model",
    "task_description",
    "project_id",
    "attachments_policy",
    "inception_ts",
];

/// What `verify` found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// Every difference, forward ones in message and agent id order, then stray files by path.
    pub differences: Vec<Difference>,
    /// Messages compared with the archive.
    pub messages_checked: usize,
    /// Agents whose profile was compared.
    pub agents_checked: usize,
    /// Files in the HEAD tree.
    pub committed_files: usize,
    /// The HEAD commit, in hex.
    pub head: Option<String>,
    /// Rows in `archive_queue`: work the archive has not committed yet.
    pub queued_rows: i64,
    /// Messages skipped because their archive work is still queued.
    pub queued_messages: usize,
    /// Profiles skipped because their archive work is still queued.
    pub queued_profiles: usize,
}

impl VerifyReport {
    /// Whether database and archive agree.
    pub fn is_clean(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Which copy of a message a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyRole {
    /// `projects/<slug>/messages/YYYY/MM/…`
    Canonical,
    /// The sender's `outbox/YYYY/MM/…`.
    Outbox,
    /// A recipient's `inbox/YYYY/MM/…`.
    Inbox,
}

impl fmt::Display for CopyRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CopyRole::Canonical => "canonical copy",
            CopyRole::Outbox => "outbox copy",
            CopyRole::Inbox => "inbox copy",
        })
    }
}

/// One way the archive differs from the database. Displayed as one line that starts with
/// what is wrong and the repo-relative path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// A copy of a message is not committed.
    MissingCopy { path: String, role: CopyRole, message_id: MessageId },
    /// A copy is committed with other bytes than the database renders now.
    ChangedCopy { path: String, role: CopyRole, message_id: MessageId },
    /// A thread has messages but no digest.
    MissingDigest { path: String, thread_id: String },
    /// A digest does not link to one of its thread's messages.
    MissingDigestEntry { path: String, message_id: MessageId },
    /// An agent has no `profile.json`.
    MissingProfile { path: String, agent: String },
    /// A profile's identity fields differ from the agent's row.
    ChangedProfile { path: String, agent: String, fields: Vec<&'static str> },
    /// A profile is not a JSON object.
    UnreadableProfile { path: String, agent: String },
    /// A file of a message's stored image is not committed.
    MissingAttachment { path: String, message_id: MessageId },
    /// A canonical message file names an id the database does not have.
    UnknownMessage { path: String, message_id: MessageId },
    /// A canonical message file sits in another project than its message.
    MisplacedMessage { path: String, message_id: MessageId, project: String },
    /// Archive work the writer set aside because it could not render it.
    SetAside { queue_id: i64, kind: ArchiveKind, ref_id: i64, error: String },
    /// A row of the database that cannot be rendered as the archive would hold it.
    Unrenderable { what: String, error: String },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::MissingCopy { path, role, message_id } => {
                write!(f, "missing: {path} ({role} of message {message_id})")
            }
            Difference::ChangedCopy { path, role, message_id } => {
                write!(f, "differs: {path} ({role} of message {message_id})")
            }
            Difference::MissingDigest { path, thread_id } => {
                write!(f, "missing: {path} (digest of thread {thread_id})")
            }
            Difference::MissingDigestEntry { path, message_id } => {
                write!(f, "incomplete: {path} (digest lacks message {message_id})")
            }
            Difference::MissingProfile { path, agent } => {
                write!(f, "missing: {path} (profile of {agent})")
            }
            Difference::ChangedProfile { path, agent, fields } => {
                write!(f, "differs: {path} (profile of {agent}: {})", fields.join(", "))
            }
            Difference::UnreadableProfile { path, agent } => {
                write!(f, "differs: {path} (profile of {agent} is not a JSON object)")
            }
            Difference::MissingAttachment { path, message_id } => {
                write!(f, "missing: {path} (attachment of message {message_id})")
            }
            Difference::UnknownMessage { path, message_id } => {
                write!(f, "extra: {path} (message {message_id} is not in the database)")
            }
            Difference::MisplacedMessage { path, message_id, project } => {
                write!(f, "misplaced: {path} (message {message_id} belongs to project {project})")
            }
            Difference::SetAside { queue_id, kind, ref_id, error } => write!(
                f,
                "set aside: archive work {queue_id} ({kind:?} {ref_id}) was not archived: {error}"
            ),
            Difference::Unrenderable { what, error } => {
                write!(f, "unreadable: {what} cannot be rendered: {error}")
            }
        }
    }
}

/// Compares the database (`db`, one read snapshot) with the files of HEAD. `queued` is the
/// archive work still queued in that snapshot.
pub(super) fn check(
    db: &Db<'_>,
    files: &CommittedFiles,
    queued: &[QueuedWork],
) -> Result<VerifyReport> {
    let set_aside = db.set_aside_archive_work()?;
    // What was set aside is not in the archive: reported once, not as missing copies.
    let pending = || queued.iter().chain(set_aside.iter().map(|s| &s.work));
    let queued_of =
        |kind| -> HashSet<i64> { pending().filter(|w| w.kind == kind).map(|w| w.ref_id).collect() };
    let (queued_messages, queued_profiles) =
        (queued_of(ArchiveKind::Message), queued_of(ArchiveKind::Profile));
    // Copies a queued deletion will remove are expected in HEAD until its commit.
    let mut deleting = HashSet::new();
    for work in queued.iter().filter(|w| w.kind == ArchiveKind::Deletion) {
        if let Some(Ok(deletion)) = db.archive_deletion(work.id)? {
            deleting.extend(deletion.paths);
        }
    }
    // A deletion set aside did not remove its files: they are its one difference, not extras.
    for aside in set_aside.iter().filter(|s| s.work.kind == ArchiveKind::Deletion) {
        if let Some(Ok(deletion)) = db.set_aside_deletion(aside.work.id)? {
            deleting.extend(deletion.paths);
        }
    }
    let mut checker = Checker {
        files,
        report: VerifyReport::default(),
        digests: Digests::new(DIGEST_CACHE_BYTES),
        missing_digests: HashSet::new(),
        pending: Vec::new(),
    };
    for aside in set_aside {
        let SetAside { work, error, .. } = aside;
        let (queue_id, kind, ref_id) = (work.id, work.kind, work.ref_id);
        checker.differ(Difference::SetAside { queue_id, kind, ref_id, error });
    }
    for_each_message(db, |id, _| {
        if queued_messages.contains(&id.0) {
            checker.report.queued_messages += 1;
            return Ok(());
        }
        match render::message_doc(db, id) {
            Ok(Some((doc, sender_is_local))) => {
                checker.message(&doc, sender_is_local);
                checker.report.messages_checked += 1;
            }
            Ok(None) => {}
            Err(e) => checker.unrenderable(format!("message {id}"), e),
        }
        if checker.pending.len() >= CHECKS_PER_BATCH {
            checker.settle()?;
        }
        Ok(())
    })?;
    checker.settle()?;
    for agent_id in db.agent_ids()? {
        if queued_profiles.contains(&agent_id.0) {
            checker.report.queued_profiles += 1;
            continue;
        }
        match render::profile_file(db, agent_id) {
            Ok(Some((path, bytes, name))) => {
                checker.profile(path, &bytes, name);
                checker.report.agents_checked += 1;
            }
            Ok(None) => {}
            Err(e) => checker.unrenderable(format!("agent {}", agent_id.0), e),
        }
    }
    let committed_files = checker.stray_messages(db, &deleting)?;
    let mut report = checker.report;
    report.committed_files = committed_files;
    report.head = files.head().map(|id| id.to_string());
    // `queued` is every queued row of this snapshot, so its length is the backlog.
    report.queued_rows = queued.len() as i64;
    Ok(report)
}

/// Drops the `UnknownMessage` differences whose message exists in a newer snapshot (it was
/// sent after the first snapshot and committed before HEAD was read), and turns those that
/// exist in another project into `MisplacedMessage`.
pub(super) fn recheck_unknown(db: &Db<'_>, report: &mut VerifyReport) -> Result<()> {
    let mut kept = Vec::with_capacity(report.differences.len());
    for difference in std::mem::take(&mut report.differences) {
        let Difference::UnknownMessage { path, message_id } = &difference else {
            kept.push(difference);
            continue;
        };
        let Some(project) = db.message_project_slug(*message_id)? else {
            kept.push(difference);
            continue;
        };
        if !matches!(classify_path(path), Some(ArchivePath::Canonical { slug, .. }) if slug == project)
        {
            let (path, message_id) = (path.clone(), *message_id);
            kept.push(Difference::MisplacedMessage { path, message_id, project });
        }
    }
    report.differences = kept;
    Ok(())
}

/// Bytes of digest texts kept for the next messages of their threads.
pub(super) const DIGEST_CACHE_BYTES: usize = 32 << 20;

/// Paths of messages' files checked together ([`CommittedFiles::blob_ids`]): each directory
/// they name is read once per batch. A month's directories together (its canonical copies,
/// every mailbox's copies, its digests) outgrow any cache of single lookups in a busy month:
/// 543k messages of one month kept a check re-reading the 38 MB canonical directory for
/// every message. About 50 MB of paths.
pub(super) const CHECKS_PER_BATCH: usize = 256 * 1024;

struct Checker<'a> {
    files: &'a CommittedFiles,
    report: VerifyReport,
    /// The reference's flat digests read (archives from before the monthly digests).
    digests: Digests,
    /// Digests reported missing.
    missing_digests: HashSet<String>,
    /// The messages' checks not settled yet, in message order.
    pending: Vec<Pending>,
}

/// A file a message should have in HEAD, checked in the next batch.
struct Pending {
    path: String,
    message_id: MessageId,
    check: Check,
}

enum Check {
    /// A copy of the message, with the blob id of its rendered bytes.
    Copy { role: CopyRole, expected: Option<git2::Oid> },
    /// The month's digest of its thread, which must link `canonical`; else the flat one at
    /// `legacy` (an archive from before the monthly digests) must.
    Digest { thread_id: String, canonical: String, legacy: Option<String> },
    /// A file of its stored image.
    Attachment,
}

/// The digests read: a thread's messages are mostly close together, so its digest is kept
/// for the next ones, in two generations of at most its budget together. When the newer
/// fills, the older is dropped (a digest needed again is read again), so memory does not
/// grow with the number of threads. `rebuild` reads the reference's flat digests with it.
pub(super) struct Digests {
    /// Bytes of text kept, both generations together.
    budget: usize,
    newer: HashMap<String, String>,
    older: HashMap<String, String>,
    newer_bytes: usize,
    /// Digests found missing (each reported once).
    missing: HashSet<String>,
}

impl Digests {
    pub(super) fn new(budget: usize) -> Self {
        Self {
            budget,
            newer: HashMap::new(),
            older: HashMap::new(),
            newer_bytes: 0,
            missing: HashSet::new(),
        }
    }

    /// The committed text of the digest at `path` (`None`: not committed; a missing one is
    /// looked for once).
    pub(super) fn text(&mut self, files: &CommittedFiles, path: &str) -> Option<&str> {
        if self.missing.contains(path) {
            return None;
        }
        if !self.newer.contains_key(path) {
            let text = match self.older.remove(path) {
                Some(text) => text,
                // An unreadable blob counts as missing; the error would say no more.
                None => match files.read(path).ok().flatten() {
                    Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    None => {
                        self.missing.insert(path.to_owned());
                        return None;
                    }
                },
            };
            if self.newer_bytes + text.len() > self.budget / 2 {
                self.older = std::mem::take(&mut self.newer);
                self.newer_bytes = 0;
            }
            self.newer_bytes += text.len();
            self.newer.insert(path.to_owned(), text);
        }
        self.newer.get(path).map(String::as_str)
    }

    /// Whether the reference's flat digest of the message's thread (where an archive from
    /// before the monthly digests has its entries) holds the message's entry.
    pub(super) fn legacy_holds(
        &mut self,
        files: &CommittedFiles,
        doc: &MessageDoc,
        canonical: &str,
    ) -> bool {
        format::legacy_digest_path(doc)
            .is_some_and(|legacy| self.flat_digest_holds(files, &legacy, canonical))
    }

    /// Whether the flat digest at `legacy` is committed and links `canonical`.
    fn flat_digest_holds(&mut self, files: &CommittedFiles, legacy: &str, canonical: &str) -> bool {
        files.contains(legacy)
            && self.text(files, legacy).is_some_and(|text| format::digest_contains(text, canonical))
    }
}

impl Checker<'_> {
    fn differ(&mut self, difference: Difference) {
        self.report.differences.push(difference);
    }

    fn unrenderable(&mut self, what: String, error: crate::error::Error) {
        self.differ(Difference::Unrenderable { what, error: error.message });
    }

    /// Queues the checks of a message's files for the next batch.
    fn message(&mut self, doc: &MessageDoc, sender_is_local: bool) {
        let bytes = format::render_message(doc).into_bytes();
        let expected = mailroom_git::blob_id(&bytes);
        let paths = format::message_paths(doc, sender_is_local);
        let message_id = doc.id;
        let mut check = |path: String, check: Check| {
            self.pending.push(Pending { path, message_id, check });
        };
        check(paths.canonical.clone(), Check::Copy { role: CopyRole::Canonical, expected });
        if let Some(outbox) = paths.outbox {
            check(outbox, Check::Copy { role: CopyRole::Outbox, expected });
        }
        for inbox in paths.inboxes {
            check(inbox, Check::Copy { role: CopyRole::Inbox, expected });
        }
        if let (Some(path), Some(thread_id)) = (format::digest_path(doc), doc.thread_id.as_deref())
        {
            let thread_id = thread_id.to_owned();
            let legacy = format::legacy_digest_path(doc);
            check(path, Check::Digest { thread_id, canonical: paths.canonical, legacy });
        }
        for path in render::attachment_files(doc) {
            check(path, Check::Attachment);
        }
    }

    /// Looks up the pending checks' files in one batch and reports what differs, in the
    /// order the checks were queued.
    fn settle(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        let paths: Vec<&str> = pending.iter().map(|p| p.path.as_str()).collect();
        let found = self.files.blob_ids(&paths)?;
        drop(paths);
        let mut differences: Vec<(usize, Difference)> = Vec::new();
        let mut digests: Vec<usize> = Vec::new();
        for (at, (check, id)) in pending.iter_mut().zip(&found).enumerate() {
            let message_id = check.message_id;
            // A copy's or attachment's path is needed again only by its difference.
            let mut path = || std::mem::take(&mut check.path);
            let difference = match (&check.check, id) {
                (Check::Copy { role, .. }, None) => {
                    Difference::MissingCopy { path: path(), role: *role, message_id }
                }
                (Check::Copy { role, expected }, Some(id)) if Some(*id) != *expected => {
                    Difference::ChangedCopy { path: path(), role: *role, message_id }
                }
                (Check::Attachment, None) => {
                    Difference::MissingAttachment { path: path(), message_id }
                }
                (Check::Digest { .. }, _) => {
                    digests.push(at);
                    continue;
                }
                _ => continue,
            };
            differences.push((at, difference));
        }
        // Each digest read once for the messages of its thread in the batch.
        digests.sort_by(|a, b| pending[*a].path.cmp(&pending[*b].path).then(a.cmp(b)));
        for group in digests.chunk_by(|a, b| pending[*a].path == pending[*b].path) {
            let text = match found[group[0]] {
                // An unreadable blob counts as missing; the error would say no more.
                Some(id) => {
                    self.files.read_blob(id).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
                }
                None => None,
            };
            for at in group {
                if let Some(difference) = self.digest_entry(&pending[*at], text.as_deref()) {
                    differences.push((*at, difference));
                }
            }
        }
        differences.sort_by_key(|(at, _)| *at);
        self.report.differences.extend(differences.into_iter().map(|(_, d)| d));
        Ok(())
    }

    /// What a message's digest check finds, its month's digest being `text` (`None`: not
    /// committed): its entry must be there, or else in its thread's flat digest of the
    /// reference's layout (an archive from before the monthly digests, read only when the
    /// month's digest lacks the entry).
    fn digest_entry(&mut self, pending: &Pending, text: Option<&str>) -> Option<Difference> {
        let Check::Digest { thread_id, canonical, legacy } = &pending.check else { return None };
        let found = text.map(|t| format::digest_contains(t, canonical));
        let files = self.files;
        let in_flat = |flat: &String| self.digests.flat_digest_holds(files, flat, canonical);
        if found == Some(true) || legacy.as_ref().is_some_and(in_flat) {
            return None;
        }
        let (path, message_id) = (pending.path.clone(), pending.message_id);
        // A missing digest is reported once, by the first message it lacks (messages whose
        // entry is in the flat digest may come between).
        match found {
            None if self.missing_digests.insert(path.clone()) => {
                Some(Difference::MissingDigest { path, thread_id: thread_id.clone() })
            }
            None => None,
            Some(_) => Some(Difference::MissingDigestEntry { path, message_id }),
        }
    }

    fn profile(&mut self, path: String, expected: &[u8], agent: String) {
        if self.files.holds(&path, expected) {
            return;
        }
        let committed = match self.files.read(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) | Err(_) => {
                self.differ(Difference::MissingProfile { path, agent });
                return;
            }
        };
        match changed_identity_fields(expected, &committed) {
            None => self.differ(Difference::UnreadableProfile { path, agent }),
            Some(fields) if !fields.is_empty() => {
                self.differ(Difference::ChangedProfile { path, agent, fields });
            }
            Some(_) => {}
        }
    }

    /// Canonical message files whose id the database lacks, or holds in another project,
    /// found walking HEAD (in path order) and asking the database about each; the number
    /// of committed files.
    fn stray_messages(&mut self, db: &Db<'_>, deleting: &HashSet<String>) -> Result<usize> {
        let (mut files, mut strays, mut failed) = (0, Vec::new(), None);
        self.files.for_each_file("", |path, _| {
            files += 1;
            if failed.is_some() || deleting.contains(path) {
                return;
            }
            let Some(ArchivePath::Canonical { slug, message_id }) = classify_path(path) else {
                return;
            };
            let path = path.to_owned();
            match db.message_project_slug(message_id) {
                Ok(None) => strays.push(Difference::UnknownMessage { path, message_id }),
                Ok(Some(project)) if project != slug => {
                    strays.push(Difference::MisplacedMessage { path, message_id, project });
                }
                Ok(Some(_)) => {}
                Err(e) => failed = Some(e),
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        self.report.differences.extend(strays);
        Ok(files)
    }
}

/// The identity fields in which a committed profile differs from the expected one; `None`
/// when the committed one is not a JSON object.
pub(super) fn changed_identity_fields(
    expected: &[u8],
    committed: &[u8],
) -> Option<Vec<&'static str>> {
    let expected: Value = serde_json::from_slice(expected).unwrap_or_default();
    let Ok(Value::Object(committed)) = serde_json::from_slice::<Value>(committed) else {
        return None;
    };
    let differs = |field: &&str| !same_field(field, expected.get(field), committed.get(*field));
    Some(PROFILE_IDENTITY_FIELDS.into_iter().filter(differs).collect())
}

/// Whether a profile field holds the same value; timestamps compare as instants, so a
/// profile written with another ISO spelling of the same time is not a difference.
fn same_field(field: &str, expected: Option<&Value>, committed: Option<&Value>) -> bool {
    if expected == committed {
        return true;
    }
    if !field.ends_with("_ts") {
        return false;
    }
    let instant =
        |value: Option<&Value>| value.and_then(Value::as_str).and_then(Timestamp::parse_iso);
    let (expected, committed) = (instant(expected), instant(committed));
    expected.is_some() && expected == committed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose HEAD holds `files`, committed with the `git` command line.
    fn committed(files: &[(&str, &str)]) -> (tempfile::TempDir, CommittedFiles) {
        let dir = tempfile::tempdir().expect("temp dir");
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .status()
                .expect("git");
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, text).expect("write");
        }
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "files"]);
        let files = CommittedFiles::open(dir.path()).expect("opened").expect("a repository");
        (dir, files)
    }

    /// Past its budget the cache drops its older generation: a digest needed again is read
    /// again, with the same text, and a missing one is looked for once however often asked.
    #[test]
    fn digests_are_read_again_past_the_budget_and_missing_ones_looked_for_once() {
        let (_dir, files) = committed(&[("t/a.md", "aaaa"), ("t/b.md", "bbbbbb")]);
        let mut digests = Digests::new(8);
        for round in 0..3 {
            assert_eq!(digests.text(&files, "t/a.md"), Some("aaaa"));
            assert_eq!(digests.text(&files, "t/b.md"), Some("bbbbbb"));
            assert_eq!(digests.text(&files, "t/none.md"), None, "round {round}");
            let kept: usize =
                digests.newer.values().chain(digests.older.values()).map(String::len).sum();
            assert!(kept <= 8 + 6, "{kept} bytes kept");
        }
        assert_eq!(digests.missing.len(), 1);
    }
}
