//! `mailroom archive rebuild`: regenerates the archive's files from the database.
//!
//! Messages (canonical, outbox and inbox copies) and profiles are rendered exactly as the
//! archive writer renders them; thread digests are written from scratch (header, then one
//! entry per message of the thread and month in id order) instead of appended to, without
//! the entries an archive from before the monthly digests holds in the thread's flat digest.
//! Only files whose bytes differ from HEAD are kept, so the commit shows just what was
//! repaired; they are committed 64 MB at a time, so memory holds at most that (a lost archive
//! differs everywhere). A profile that differs only in `last_active_ts` counts as unchanged.
//! File-reservation artifacts missing from HEAD are written again. Files the database knows
//! nothing of are left alone.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use mailroom_git::{CommittedFiles, blob_id};

use super::format;
use super::maintenance::{Progress, for_each_message};
use super::verify::{CHECKS_PER_BATCH, DIGEST_CACHE_BYTES, Digests};
use super::{render, verify};
use crate::error::Result;
use crate::records::MessageId;
use crate::store::Db;

/// The commit message of a rebuild.
pub(super) const REBUILD_COMMIT_MESSAGE: &str = "chore: rebuild archive from database";

/// What `rebuild` regenerated and committed.
#[derive(Debug, Clone, Default)]
pub struct RebuildReport {
    /// Messages rendered.
    pub messages: usize,
    /// Message copies rendered (canonical, outbox and inbox).
    pub message_files: usize,
    /// Thread digests rendered.
    pub digests: usize,
    /// Profiles rendered.
    pub profiles: usize,
    /// File reservations whose artifacts were rendered.
    pub reservations: usize,
    /// Attachment files found in the work tree but not in HEAD (for a copy delivered to another
    /// project, in the sending project's directory), and committed again.
    pub attachments_restored: usize,
    /// Attachment files in neither HEAD nor the work tree: the database cannot recreate them.
    pub attachments_missing: Vec<String>,
    /// Files whose bytes differed from HEAD (or were absent) and were written.
    pub files_written: usize,
    /// Files HEAD already held with the right bytes.
    pub files_unchanged: usize,
    /// The rebuild commit, in hex; `None` when nothing had to change.
    pub commit: Option<String>,
}

/// Bytes of kept files past which a regeneration given a sink hands them over (`rebuild`
/// commits them): a rebuild of a lost archive keeps every file, and held until the end its
/// memory grew with the archive.
const CHUNK_BYTES: usize = if cfg!(test) { 1024 } else { 64 << 20 };

/// Bytes of rendered files (a message's once for all its copies) past which they are
/// compared with HEAD, before the kept ones count towards a chunk.
const OFFERED_BYTES: usize = if cfg!(test) { 256 } else { 64 << 20 };

/// Where a regeneration hands each chunk of kept files; `None`: they are all returned.
pub(super) type Chunks<'a> = Option<&'a mut dyn FnMut(Vec<(String, Vec<u8>)>) -> Result<()>>;

/// The files that differ from HEAD (those not handed to the sink), with the report's counts
/// filled in (but no commit yet).
pub(super) struct Regenerated {
    pub files: Vec<(String, Vec<u8>)>,
    pub report: RebuildReport,
}

/// Which projects' files a regeneration renders.
#[derive(Debug, Clone, Copy)]
pub(super) enum Projects<'a> {
    All,
    /// Only these (by slug): `projects adopt` renders the projects whose files it changes.
    Only(&'a [String]),
}

impl Projects<'_> {
    fn has_slug(self, slug: &str) -> bool {
        match self {
            Projects::All => true,
            Projects::Only(slugs) => slugs.iter().any(|s| s == slug),
        }
    }

    /// Whether `path` (repo-relative) lies in one of the projects.
    fn has_path(self, path: &str) -> bool {
        let slug = path.strip_prefix("projects/").and_then(|rest| rest.split('/').next());
        matches!(self, Projects::All) || slug.is_some_and(|slug| self.has_slug(slug))
    }
}

/// Renders every archive file the database accounts for (in `projects`) and keeps those HEAD
/// lacks; with `chunks`, they are handed there each time they reach [`CHUNK_BYTES`].
pub(super) fn regenerate(
    db: &Db<'_>,
    root: &Path,
    head: &CommittedFiles,
    projects: Projects<'_>,
    progress: Progress<'_>,
    mut chunks: Chunks<'_>,
) -> Result<Regenerated> {
    let mut out = Collector {
        head,
        files: Vec::new(),
        bytes: 0,
        report: RebuildReport::default(),
        legacy_digests: Digests::new(DIGEST_CACHE_BYTES),
        offered: Vec::new(),
        offered_bytes: 0,
    };
    // A thread's digest of a month is kept only until its last message of that month is in
    // it, and messages are read a page at a time: memory follows the threads open at once,
    // not the archive.
    let mut digests: HashMap<String, String> = HashMap::new();
    let last_of_thread = db.last_message_of_each_thread_month()?;
    let mut attachments_seen = HashSet::new();
    let total = db.message_count()?;
    let mut done = 0;
    for_each_message(db, |id, slug| {
        progress(done.min(total), total);
        done += 1;
        if projects.has_slug(&slug) {
            out.message(db, root, id, &mut digests, &last_of_thread, &mut attachments_seen)?;
            if out.offered.len() >= CHECKS_PER_BATCH || out.offered_bytes >= OFFERED_BYTES {
                out.settle()?;
            }
            if out.bytes >= CHUNK_BYTES
                && let Some(sink) = chunks.as_mut()
            {
                out.bytes = 0;
                sink(std::mem::take(&mut out.files))?;
            }
        }
        Ok(())
    })?;
    progress(total, total);
    // Threads whose last message did not render.
    let mut left: Vec<(String, String)> = digests.into_iter().collect();
    left.sort();
    for (path, text) in left {
        out.digest(path, text);
    }
    out.settle()?;
    for agent_id in db.agent_ids()? {
        if let Some((path, bytes, _)) = render::profile_file(db, agent_id)?
            && projects.has_path(&path)
        {
            out.offer_profile(path, bytes)?;
            out.report.profiles += 1;
        }
    }
    // Reservation artifacts are only restored when missing: a committed one may name the
    // code repo's branch at grant time, which the database does not keep.
    let mut reservation_files = BTreeMap::new();
    for id in db.reservation_ids()? {
        if let Some(artifact) = render::reservation_files(db, id, false)?
            && artifact.files.iter().all(|(path, _)| projects.has_path(path))
        {
            // Ids ascend, so the pattern-named file ends up with the newest reservation.
            reservation_files.extend(artifact.files);
            out.report.reservations += 1;
        }
    }
    for (path, bytes) in reservation_files {
        out.keep_unless(head.contains(&path), path, bytes);
    }
    Ok(Regenerated { files: out.files, report: out.report })
}

struct Collector<'a> {
    head: &'a CommittedFiles,
    /// Files kept and not yet handed over, and their bytes.
    files: Vec<(String, Vec<u8>)>,
    bytes: usize,
    report: RebuildReport,
    /// The reference's flat digests read (archives from before the monthly digests).
    legacy_digests: Digests,
    /// Rendered files not yet compared with HEAD, and their bytes (a message's once):
    /// compared in batches, each directory read once per batch (see
    /// `verify::CHECKS_PER_BATCH`).
    offered: Vec<Offered>,
    offered_bytes: usize,
}

/// A rendered file not yet compared with HEAD: its bytes (a message's shared by its
/// copies) and their blob id, computed once.
struct Offered {
    path: String,
    bytes: Rc<Vec<u8>>,
    id: Option<git2::Oid>,
}

impl Collector<'_> {
    /// Renders message `id`'s files and its entry in its thread's digest, which is offered
    /// once `id` is the thread's last message; restores its attachments HEAD lacks.
    fn message(
        &mut self,
        db: &Db<'_>,
        root: &Path,
        id: MessageId,
        digests: &mut HashMap<String, String>,
        last_of_thread: &HashSet<MessageId>,
        attachments_seen: &mut HashSet<String>,
    ) -> Result<()> {
        let Some((doc, sender_is_local)) = render::message_doc(db, id)? else { return Ok(()) };
        let bytes = Rc::new(format::render_message(&doc).into_bytes());
        self.offered_bytes += bytes.len();
        let blob = blob_id(&bytes);
        let paths = format::message_paths(&doc, sender_is_local);
        for path in paths.all() {
            let (path, bytes) = (path.clone(), Rc::clone(&bytes));
            self.offered.push(Offered { path, bytes, id: blob });
            self.report.message_files += 1;
        }
        if let (Some(path), Some(thread_id)) =
            (format::digest_path(&doc), format::digest_thread_id(&doc))
        {
            // An archive from before the monthly digests has the entry in the thread's flat
            // digest: it stays there, and the month's digest is not written for it.
            if !self.legacy_digests.legacy_holds(self.head, &doc, &paths.canonical) {
                let digest =
                    digests.entry(path.clone()).or_insert_with(|| format::digest_header(thread_id));
                digest.push_str(&format::digest_entry(&doc, &paths.canonical));
            }
            if last_of_thread.contains(&id)
                && let Some(text) = digests.remove(&path)
            {
                self.digest(path, text);
            }
        }
        for path in render::attachment_files(&doc) {
            if attachments_seen.insert(path.clone()) && !self.head.contains(&path) {
                let read = render::attachment_bytes(root, &path, &doc);
                self.restore_attachment(path, read);
            }
        }
        self.report.messages += 1;
        Ok(())
    }

    /// Offers a thread's complete digest.
    fn digest(&mut self, path: String, text: String) {
        self.report.digests += 1;
        self.offered_bytes += text.len();
        let bytes = Rc::new(text.into_bytes());
        self.offered.push(Offered { path, id: blob_id(&bytes), bytes });
    }

    /// Keeps each offered file unless HEAD already holds exactly its bytes.
    fn settle(&mut self) -> Result<()> {
        let offered = std::mem::take(&mut self.offered);
        self.offered_bytes = 0;
        let paths: Vec<&str> = offered.iter().map(|offer| offer.path.as_str()).collect();
        let committed = self.head.blob_ids(&paths)?;
        drop(paths);
        for (Offered { path, bytes, id }, committed) in offered.into_iter().zip(committed) {
            if committed.is_some() && committed == id {
                self.report.files_unchanged += 1;
                continue;
            }
            let bytes = Rc::try_unwrap(bytes).unwrap_or_else(|shared| (*shared).clone());
            self.keep_unless(false, path, bytes);
        }
        Ok(())
    }

    /// Keeps a rendered profile unless HEAD's has the same identity. Like the archive writer,
    /// a rebuild does not rewrite a profile only because `last_active_ts` moved on.
    fn offer_profile(&mut self, path: String, bytes: Vec<u8>) -> Result<()> {
        let unchanged = self.head.holds(&path, &bytes)
            || self.head.read(&path)?.is_some_and(|committed| {
                verify::changed_identity_fields(&bytes, &committed).is_some_and(|f| f.is_empty())
            });
        self.keep_unless(unchanged, path, bytes);
        Ok(())
    }

    /// Counts an unchanged file, or keeps it to be written.
    fn keep_unless(&mut self, unchanged: bool, path: String, bytes: Vec<u8>) {
        if unchanged {
            self.report.files_unchanged += 1;
        } else {
            self.report.files_written += 1;
            self.bytes += path.len() + bytes.len();
            self.files.push((path, bytes));
        }
    }

    /// Attachment bytes cannot be rendered from the database; the work tree may still have
    /// them (deleted from Git only), in which case they are committed again.
    fn restore_attachment(&mut self, path: String, read: std::io::Result<Vec<u8>>) {
        match read {
            Ok(bytes) => {
                self.keep_unless(false, path, bytes);
                self.report.attachments_restored += 1;
            }
            Err(_) => self.report.attachments_missing.push(path),
        }
    }
}
