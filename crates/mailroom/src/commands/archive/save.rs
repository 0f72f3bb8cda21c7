//! `mailroom archive save`: the data directory's state in one ZIP file, lossless: a consistent
//! snapshot of the database (SQLite's `VACUUM INTO`, while a server may go on writing) and a
//! copy of every file of the archive, its Git repository included, in
//! `DATA_DIR/archived_mailbox_states/` (states.rs has the layout).
//!
//! With no server running, the data directory is held for the save, so the database and the
//! archive saved are exactly a pair. With one running, the archive is copied live after the
//! snapshot: its refs first, then the objects, so every commit the copied refs name is in a
//! copied pack (the server writes a commit's pack before it moves a ref, and a repack writes
//! the new pack before it deletes the old). A file of `.git` that vanishes before it is copied
//! (a repack deleted it) starts the copy over.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Read as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::CoreConfig;
use mailroom_core::DatabaseAt;
use mailroom_core::model::slug::slugify;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::backups::{self, CopyScope};
use serde_json::{Value, json};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::states::{
    self, ArchiveFile, DatabaseSnapshot, LOSSLESS_PRESET, METADATA, Metadata, SNAPSHOT,
    STORAGE_DIR, ScrubSummary, StorageCopy, Tooling, VERSION,
};
use crate::commands::output;
use crate::commands::progress::Progress;
use crate::commands::shared;
use crate::commands::target::Common;

/// How many times a live copy starts over before giving up.
const ATTEMPTS: usize = 3;
/// The longest label text kept in a file name.
const LABEL_IN_NAME: usize = 40;

/// Flags of `mailroom archive save`.
#[derive(Args, Debug)]
pub struct SaveArgs {
    /// Keep only this project (slug or human key; repeat for more) [default: every project]
    #[arg(short = 'p', long = "project", value_name = "PROJECT")]
    projects: Vec<String>,
    /// A note kept in the metadata and in the file name
    #[arg(long)]
    label: Option<String>,
    /// What to scrub from the copy: only `archive` (nothing: a lossless copy)
    #[arg(long, value_name = "PRESET", default_value = LOSSLESS_PRESET)]
    scrub_preset: String,
    #[command(flatten)]
    common: Common,
}

/// What to save.
pub struct SaveRequest<'a> {
    /// Projects to keep (none: all).
    pub projects: &'a [String],
    pub label: Option<&'a str>,
    /// Whether a server may be writing the data directory meanwhile.
    pub live: bool,
}

/// A saved state.
pub struct Saved {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub metadata: Value,
}

impl Saved {
    /// The JSON `--json` prints.
    pub fn to_json(&self) -> Value {
        json!({"path": self.path, "size_bytes": self.size_bytes, "metadata": self.metadata})
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let m = &self.metadata;
        let head = m["storage"]["git_head"].as_str().map_or("none", |h| h.get(..12).unwrap_or(h));
        format!(
            "saved {} ({}): {} project(s), a {} database snapshot, archive HEAD {head}",
            self.path.display(),
            states::human_size(self.size_bytes),
            output::items(&m["projects_included"]).len(),
            states::human_size(m["database"]["size_bytes"].as_u64().unwrap_or(0)),
        )
    }
}

pub fn run(args: SaveArgs) -> Result<()> {
    if args.scrub_preset != LOSSLESS_PRESET {
        bail!(
            "--scrub-preset {}: mailroom saves lossless states only; the one preset is \
             --scrub-preset {LOSSLESS_PRESET} (the default)",
            args.scrub_preset
        );
    }
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    require_database(&config)?;
    let live = shared::data_dir_in_use(&data_dir);
    // With no server, the data directory is held so that none starts halfway through.
    let _lock = if live { None } else { Some(shared::lock_data_dir(&data_dir)?) };
    let request = SaveRequest { projects: &args.projects, label: args.label.as_deref(), live };
    let saved = save(&data_dir, &config, &request)?;
    output::print(args.common.json, &saved.to_json(), |_| format!("{}\n", saved.describe()));
    Ok(())
}

/// Refuses a data directory without a database: a saved state holds one.
pub fn require_database(config: &CoreConfig) -> Result<()> {
    if config.postgres.is_none() && !config.database_path.is_file() {
        bail!("there is no database at {}: nothing to save", config.database_path.display());
    }
    Ok(())
}

/// Saves the state of `data_dir`; the caller holds its lock unless `request.live`.
pub fn save(data_dir: &Path, config: &CoreConfig, request: &SaveRequest<'_>) -> Result<Saved> {
    states::check_layout(data_dir, config)?;
    require_database(config)?;
    let dir = states::states_dir(data_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("cannot resolve {}", dir.display()))?;
    let created = Timestamp::now();
    let path = free_name(&dir, created, request.label);
    // Everything is made in a folder of its own beside the states and moved in when whole, so
    // no half-written state is ever listed; the folder goes when this returns.
    let staging = tempfile::Builder::new()
        .prefix(".saving-")
        .tempdir_in(&dir)
        .with_context(|| format!("cannot create a folder in {}", dir.display()))?;
    let snapshot = staging.path().join("mailbox.sqlite3");
    // A saved state holds the reference's kind of database whatever the server runs on.
    let database = DatabaseAt::of(config);
    backups::copy_database(&database, &snapshot)
        .with_context(|| format!("cannot snapshot the database {}", database.describe()))?;
    let scope = backups::keep_projects(&snapshot, request.projects)?;
    let snapshot_size = std::fs::metadata(&snapshot)?.len();
    let partial = staging.path().join("state.zip");
    let copy = copy_with_retries(&partial, &snapshot, config, &scope, created)?;
    let facts = Facts { config, request, scope: &scope, snapshot_size, copy: &copy, created };
    let text = serde_json::to_string_pretty(&metadata(&facts, &path))?;
    let metadata: Value = serde_json::from_str(&text)?;
    let mut zip = copy.zip;
    zip.start_file(METADATA, entry_options(created, 0o644, 0))?;
    zip.write_all(text.as_bytes())?;
    let file = zip.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    std::fs::rename(&partial, &path)
        .with_context(|| format!("cannot move the saved state to {}", path.display()))?;
    let size_bytes = std::fs::metadata(&path)?.len();
    Ok(Saved { path, size_bytes, metadata })
}

/// `mailbox-state-<time>[-<label>].zip` in `dir`, with `-2`, `-3`, … when taken.
fn free_name(dir: &Path, created: Timestamp, label: Option<&str>) -> PathBuf {
    let mut stem = format!("mailbox-state-{}", created.archive_stamp());
    let label = label.map(slugify).unwrap_or_default();
    if !label.is_empty() {
        let cut: String = label.chars().take(LABEL_IN_NAME).collect();
        stem = format!("{stem}-{}", cut.trim_end_matches('-'));
    }
    let mut path = dir.join(format!("{stem}.zip"));
    let mut attempt = 1;
    while path.exists() {
        attempt += 1;
        path = dir.join(format!("{stem}-{attempt}.zip"));
    }
    path
}

/// The ZIP so far (snapshot and archive copied) and what the copy found.
struct Copy {
    zip: ZipWriter<BufWriter<File>>,
    git_head: Option<String>,
    files: usize,
    symlinks_skipped: usize,
    archive_found: bool,
}

/// A file of the archive's Git directory vanished before it could be copied.
#[derive(Debug)]
struct Vanished(String);

impl std::fmt::Display for Vanished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} vanished while the archive was copied", self.0)
    }
}

impl std::error::Error for Vanished {}

/// Writes the snapshot and the archive's files to `partial`, starting over when the archive's
/// refs changed under the copy.
fn copy_with_retries(
    partial: &Path,
    snapshot: &Path,
    config: &CoreConfig,
    scope: &CopyScope,
    created: Timestamp,
) -> Result<Copy> {
    let progress = Progress::new("saving", 0);
    let mut attempt = 1;
    loop {
        match copy_into_zip(partial, snapshot, config, scope, created, &progress) {
            Err(e) if attempt < ATTEMPTS && e.downcast_ref::<Vanished>().is_some() => {
                tracing::debug!(error = %e, attempt, "copying the archive again");
                attempt += 1;
            }
            Err(e) if e.downcast_ref::<Vanished>().is_some() => {
                return Err(e.context(format!(
                    "the archive kept changing while it was copied ({ATTEMPTS} attempts); try \
                     again, or stop the server first"
                )));
            }
            outcome => return outcome,
        }
    }
}

/// The snapshot, then the archive's files; object files that vanished (a repack deleted their
/// pack after writing their objects into a new one) are made up for by copying the object
/// files that appeared since, until none vanishes.
fn copy_into_zip(
    partial: &Path,
    snapshot: &Path,
    config: &CoreConfig,
    scope: &CopyScope,
    created: Timestamp,
    progress: &Progress,
) -> Result<Copy> {
    let root = &config.storage_root;
    let keep: Option<HashSet<&str>> =
        (scope.removed > 0).then(|| scope.kept.iter().map(|p| p.slug.as_str()).collect());
    let listing =
        if root.is_dir() { list_archive(root, "", keep.as_ref())? } else { Listing::default() };
    progress.restart(listing.files.len() + 1);
    let mut writer = StateWriter::create(partial, root, created)?;
    let size = std::fs::metadata(snapshot)?.len();
    writer.zip.start_file(SNAPSHOT, entry_options(created, 0o644, size))?;
    std::io::copy(&mut File::open(snapshot)?, &mut writer.zip)?;
    progress.step();
    writer.add(&listing, progress)?;
    for _ in 0..ATTEMPTS {
        if !writer.objects_vanished {
            break;
        }
        writer.objects_vanished = false;
        let objects = list_archive(root, ".git/objects", None)?;
        progress.grow(objects.files.len());
        writer.add(&objects, progress)?;
    }
    if writer.objects_vanished {
        return Err(Vanished(".git/objects".to_owned()).into());
    }
    Ok(Copy {
        git_head: head_commit(&writer.refs),
        files: writer.files,
        symlinks_skipped: listing.symlinks_skipped,
        archive_found: root.is_dir(),
        zip: writer.zip,
    })
}

/// The ZIP being written and what went into it.
struct StateWriter<'a> {
    zip: ZipWriter<BufWriter<File>>,
    root: &'a Path,
    created: Timestamp,
    /// Archive paths already in the ZIP (a name can be added once).
    copied: HashSet<String>,
    /// The copied refs, to read HEAD from.
    refs: BTreeMap<String, Vec<u8>>,
    files: usize,
    objects_vanished: bool,
}

impl<'a> StateWriter<'a> {
    fn create(partial: &Path, root: &'a Path, created: Timestamp) -> Result<Self> {
        let file = File::create(partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        Ok(Self {
            zip: ZipWriter::new(BufWriter::new(file)),
            root,
            created,
            copied: HashSet::new(),
            refs: BTreeMap::new(),
            files: 0,
            objects_vanished: false,
        })
    }

    /// Adds the listed directories and files not added yet.
    fn add(&mut self, listing: &Listing, progress: &Progress) -> Result<()> {
        for dir in &listing.dirs {
            if self.copied.insert(dir.clone()) {
                let options = entry_options(self.created, 0o755, 0);
                self.zip.add_directory(format!("{STORAGE_DIR}/{dir}/"), options)?;
            }
        }
        for relative in &listing.files {
            if !self.copied.contains(relative) {
                self.add_file(relative)?;
            }
            progress.step();
        }
        Ok(())
    }

    /// Copies one archive file. A work-tree file that is gone was removed by the server since
    /// the listing and is passed over; a vanished object file is noted; any other file of
    /// `.git` vanishing starts the copy over.
    fn add_file(&mut self, relative: &str) -> Result<()> {
        let path = self.root.join(relative);
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if relative.starts_with(".git/objects/") {
                    self.objects_vanished = true;
                } else if relative.starts_with(".git/") {
                    return Err(Vanished(relative.to_owned()).into());
                }
                return Ok(());
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let meta = file.metadata()?;
        let mut options = entry_options(self.created, meta.permissions().mode(), meta.len());
        if relative.ends_with(".pack") {
            // Git packs are compressed already.
            options = options.compression_method(CompressionMethod::Stored);
        }
        self.zip.start_file(format!("{STORAGE_DIR}/{relative}"), options)?;
        if ref_rank(relative) < OTHER_FILES {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)?;
            self.zip.write_all(&bytes)?;
            self.refs.insert(relative.to_owned(), bytes);
        } else {
            std::io::copy(&mut file, &mut self.zip)
                .with_context(|| format!("cannot copy {}", path.display()))?;
        }
        self.copied.insert(relative.to_owned());
        self.files += 1;
        Ok(())
    }
}

/// Options of one entry: deflated, its Unix mode, dated at the save, ZIP64 when large.
fn entry_options(created: Timestamp, mode: u32, size: u64) -> SimpleFileOptions {
    let mut options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .unix_permissions(mode & 0o777)
        .large_file(size >= u64::from(u32::MAX));
    if let Some(time) = zip_time(created) {
        options = options.last_modified_time(time);
    }
    options
}

/// The save's time for the entries (ZIP times are local dates without a zone; UTC here).
fn zip_time(created: Timestamp) -> Option<zip::DateTime> {
    // `YYYY-MM-DDTHH-MM-SSZ`
    let stamp = created.archive_stamp();
    let numbers: Vec<u16> =
        stamp.trim_end_matches('Z').split(['-', 'T']).filter_map(|n| n.parse().ok()).collect();
    let [year, month, day, hour, minute, second] = numbers[..] else { return None };
    let small = |n: u16| u8::try_from(n).ok();
    zip::DateTime::from_date_and_time(
        year,
        small(month)?,
        small(day)?,
        small(hour)?,
        small(minute)?,
        small(second)?,
    )
    .ok()
}

/// The archive's directories and files to copy.
#[derive(Default)]
struct Listing {
    dirs: Vec<String>,
    /// Refs first (see [`ref_rank`]), then the rest in path order.
    files: Vec<String>,
    symlinks_skipped: usize,
}

/// Rank of the files that say which commits exist, copied before the objects.
const OTHER_FILES: u8 = 3;

fn ref_rank(relative: &str) -> u8 {
    match relative {
        ".git/HEAD" => 0,
        ".git/packed-refs" => 1,
        _ if relative.starts_with(".git/refs/") => 2,
        _ => OTHER_FILES,
    }
}

/// Lists the archive under `root` (from its folder `start`, "" for all of it): every
/// directory and file but lock files (`*.lock`, `*.owner.json`, a server's pid file), which
/// belong to the processes that held them, and symbolic links, which could name anything.
/// With `keep`, only those projects' directories under `projects/`.
fn list_archive(root: &Path, start: &str, keep: Option<&HashSet<&str>>) -> Result<Listing> {
    let mut listing = Listing::default();
    let mut pending = vec![start.to_owned()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(root.join(&dir)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !dir.starts_with(".git") => {
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Vanished(dir).into()),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot list {}/{dir}", root.display()));
            }
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                bail!("{}: a file name that is not UTF-8", entry.path().display());
            };
            let relative = if dir.is_empty() { name.to_owned() } else { format!("{dir}/{name}") };
            let kind = entry.file_type()?;
            if kind.is_symlink() {
                listing.symlinks_skipped += 1;
            } else if kind.is_dir() {
                if is_kept_dir(&relative, keep) {
                    listing.dirs.push(relative.clone());
                    pending.push(relative);
                }
            } else if kind.is_file() && !is_lock_file(name) {
                listing.files.push(relative);
            }
        }
    }
    listing.dirs.sort();
    listing.files.sort_by(|a, b| (ref_rank(a), a).cmp(&(ref_rank(b), b)));
    Ok(listing)
}

fn is_kept_dir(relative: &str, keep: Option<&HashSet<&str>>) -> bool {
    match (keep, relative.strip_prefix("projects/")) {
        (Some(keep), Some(slug)) if !slug.contains('/') => keep.contains(slug),
        _ => true,
    }
}

fn is_lock_file(name: &str) -> bool {
    name.ends_with(".lock") || name.ends_with(".owner.json") || name == "server.pid"
}

/// The commit HEAD names in the copied refs: `.git/HEAD` holds an id, or `ref: <name>` of a
/// loose ref file or a `packed-refs` line.
fn head_commit(refs: &BTreeMap<String, Vec<u8>>) -> Option<String> {
    let text = |path: &str| refs.get(path).map(|bytes| String::from_utf8_lossy(bytes).into_owned());
    let is_id = |id: &str| id.len() >= 40 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let head = text(".git/HEAD")?;
    let head = head.trim();
    let Some(name) = head.strip_prefix("ref: ") else {
        return is_id(head).then(|| head.to_owned());
    };
    if let Some(id) = text(&format!(".git/{name}")) {
        return is_id(id.trim()).then(|| id.trim().to_owned());
    }
    text(".git/packed-refs")?.lines().find_map(|line| {
        let (id, reference) = line.split_once(' ')?;
        (reference.trim() == name && is_id(id)).then(|| id.to_owned())
    })
}

/// What the metadata is made of.
struct Facts<'a> {
    config: &'a CoreConfig,
    request: &'a SaveRequest<'a>,
    scope: &'a CopyScope,
    snapshot_size: u64,
    copy: &'a Copy,
    created: Timestamp,
}

/// `metadata.json` for this save.
fn metadata<'a>(facts: &'a Facts<'a>, path: &'a Path) -> Metadata<'a> {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    Metadata {
        version: VERSION,
        created_at: facts.created.to_iso(),
        archive: ArchiveFile {
            filename: path.file_name().map(|n| n.to_string_lossy()),
            directory: path.parent(),
        },
        projects_requested: facts.request.projects,
        projects_included: &facts.scope.kept,
        projects_removed: facts.scope.removed,
        scrub_preset: LOSSLESS_PRESET,
        scrub_summary: ScrubSummary::lossless(facts.scope.agents),
        fts_enabled: true,
        database: DatabaseSnapshot {
            source_path: absolute(&facts.config.database_path),
            snapshot: SNAPSHOT,
            size_bytes: facts.snapshot_size,
        },
        storage: StorageCopy {
            source_path: absolute(&facts.config.storage_root),
            git_head: facts.copy.git_head.as_deref(),
            archive_dir: STORAGE_DIR,
        },
        label: facts.request.label,
        tooling: Tooling { package: "mailroom", version: env!("CARGO_PKG_VERSION") },
        notes: notes(facts),
    }
}

fn notes(facts: &Facts<'_>) -> Vec<String> {
    let Facts { config, request, scope, copy, .. } = facts;
    let mut notes = vec![format!(
        "lossless: every row of the database and {} archive files, as they were",
        copy.files
    )];
    if request.live {
        notes.push(
            "saved while a server ran: the database is one consistent snapshot; the archive \
             was copied after it and may also hold commits of mail sent during the save"
                .to_owned(),
        );
    }
    if scope.removed > 0 {
        notes.push(format!(
            "{} other project(s) left out: their rows and projects/<slug> directories; the \
             archive's Git history still holds their files",
            scope.removed
        ));
    }
    if !copy.archive_found {
        notes.push(format!("there was no archive at {}", config.storage_root.display()));
    }
    if copy.symlinks_skipped > 0 {
        notes.push(format!("{} symbolic link(s) in the archive left out", copy.symlinks_skipped));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_is_read_from_a_loose_ref_or_packed_refs() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        let refs = |pairs: &[(&str, &str)]| {
            pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect()
        };
        let loose = refs(&[(".git/HEAD", "ref: refs/heads/main\n"), (".git/refs/heads/main", id)]);
        assert_eq!(head_commit(&loose).as_deref(), Some(id));
        let packed_refs = format!("# pack-refs with: peeled\n{id} refs/heads/main\n");
        let packed =
            refs(&[(".git/HEAD", "ref: refs/heads/main\n"), (".git/packed-refs", &packed_refs)]);
        assert_eq!(head_commit(&packed).as_deref(), Some(id));
        assert_eq!(head_commit(&refs(&[(".git/HEAD", id)])).as_deref(), Some(id));
        assert_eq!(head_commit(&refs(&[(".git/HEAD", "ref: refs/heads/none\n")])), None);
    }

    #[test]
    fn a_vanished_file_is_passed_over_noted_or_a_reason_to_start_over() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("archive");
        std::fs::create_dir_all(root.join(".git/refs/heads")).expect("dirs");
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        let partial = dir.path().join("state.zip");
        let mut writer = StateWriter::create(&partial, &root, Timestamp::now()).expect("create");
        let progress = Progress::new("test", 0);
        let listing = |files: &[&str]| Listing {
            files: files.iter().map(|f| f.to_string()).collect(),
            ..Listing::default()
        };
        let gone = listing(&[".git/HEAD", "projects/p/gone.md", ".git/objects/pack/gone.pack"]);
        writer.add(&gone, &progress).expect("a work-tree file or an object may vanish");
        assert!(writer.objects_vanished);
        assert_eq!(writer.files, 1);
        writer.add(&listing(&[".git/HEAD"]), &progress).expect("added once");
        assert_eq!(writer.files, 1);
        let error = writer.add(&listing(&[".git/refs/heads/main"]), &progress);
        assert!(error.is_err_and(|e| e.downcast_ref::<Vanished>().is_some()));
    }

    #[test]
    fn lock_files_and_other_projects_are_left_out() {
        assert!(is_lock_file("archive.lock") && is_lock_file("archive.lock.owner.json"));
        assert!(!is_lock_file("profile.json"));
        let keep = HashSet::from(["kept"]);
        assert!(is_kept_dir("projects/kept", Some(&keep)));
        assert!(!is_kept_dir("projects/other", Some(&keep)));
        assert!(is_kept_dir(".git", Some(&keep)) && is_kept_dir("projects/other", None));
    }

    #[test]
    fn refs_come_before_objects() {
        let mut files = vec![".git/objects/pack/p.pack", ".git/refs/heads/main", ".git/HEAD"];
        files.sort_by(|a, b| (ref_rank(a), a).cmp(&(ref_rank(b), b)));
        assert_eq!(files, [".git/HEAD", ".git/refs/heads/main", ".git/objects/pack/p.pack"]);
    }
}
