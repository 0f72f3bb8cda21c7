//! `mailroom archive restore FILE`: puts a saved state back as the data directory's database
//! and archive. The ZIP is checked whole before anything is written (every entry a plain
//! relative path of the saved-state layout, no links), the state is unpacked into folders
//! beside the targets, and only then are the current database (with its `-wal` and `-shm`)
//! and archive moved aside to `<path>.pre-restore-<time>` and the unpacked ones moved in.
//! Nothing is deleted. Refused while a server runs on the data directory.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::CoreConfig;
use mailroom_core::database_files;
use serde_json::{Value, json};
use zip::ZipArchive;

use super::states::{self, METADATA, SNAPSHOT, STORAGE_DIR};
use crate::commands::output;
use crate::commands::progress::Progress;
use crate::commands::shared;
use crate::commands::target::Common;

/// The name the moved-aside database and archive get, before the time.
const ASIDE: &str = "pre-restore";

/// Flags of `mailroom archive restore`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The saved state: a path, or a file name of DATA_DIR/archived_mailbox_states
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Restore without asking
    #[arg(long)]
    force: bool,
    /// Print what would be moved aside and restored, and change nothing
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: RestoreArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    shared::refuse_on_postgres(
        &config,
        "archive restore",
        &shared::restore_on_postgres("mailbox.sqlite3"),
    )?;
    states::check_layout(&data_dir, &config)?;
    let path = locate(&data_dir, &args.file)?;
    let mut state =
        SavedState::open(&path).with_context(|| format!("refusing {}", path.display()))?;
    shared::refuse_while_served(&data_dir, "restoring a saved state")?;
    if args.dry_run {
        let plan = Plan::new(&config);
        output::print(args.common.json, &plan.to_json(&state, true), |_| {
            plan.describe(&state, true)
        });
        return Ok(());
    }
    let question = format!(
        "Restore {}? The current database and archive are moved aside first.",
        path.display()
    );
    if !args.force && !shared::confirm(&question)? {
        bail!("not confirmed: nothing restored");
    }
    let _lock = shared::lock_data_dir(&data_dir)?;
    let _database_lock = shared::lock_database(&config.database_path, shared::Missing::Skip)?;
    let done = restore(&config, &mut state)?;
    output::print(args.common.json, &done.to_json(&state, false), |_| done.describe(&state, false));
    Ok(())
}

/// `file` as given, or else the saved state of that name in the data directory.
fn locate(data_dir: &Path, file: &Path) -> Result<PathBuf> {
    if file.is_file() {
        return Ok(file.to_path_buf());
    }
    let saved = states::states_dir(data_dir).join(file);
    if file.components().count() == 1 && saved.is_file() {
        return Ok(saved);
    }
    bail!(
        "no saved state at {} (nor in {})",
        file.display(),
        states::states_dir(data_dir).display()
    )
}

/// A saved state's ZIP, checked: which entries are the snapshot and the archive's files.
struct SavedState {
    zip: ZipArchive<File>,
    metadata: Value,
    snapshot: usize,
    /// Entry index and path inside the archive directory (a directory's ends with `/`).
    storage: Vec<(usize, String)>,
}

impl SavedState {
    /// Opens and checks the ZIP; refuses it whole when any entry is not part of a saved state
    /// or could land outside the directories it is unpacked to.
    fn open(path: &Path) -> Result<Self> {
        let mut zip = states::open_zip(path)?;
        let metadata = states::read_metadata(&mut zip)?;
        let mut snapshot = None;
        let mut storage = Vec::new();
        for index in 0..zip.len() {
            let entry = zip.by_index_raw(index)?;
            let name = entry.name()?.into_owned();
            if !states::is_plain_relative(&name) || entry.enclosed_name().is_none() {
                bail!(
                    "the entry {name:?} is not a plain relative path: it could be written outside the data directory"
                );
            }
            if entry.is_symlink() {
                bail!("the entry {name:?} is a symbolic link");
            }
            match name.as_str() {
                METADATA | "snapshot/" => {}
                SNAPSHOT => snapshot = Some(index),
                _ => match name.strip_prefix(&format!("{STORAGE_DIR}/")) {
                    Some("") => {}
                    Some(inside) => storage.push((index, inside.to_owned())),
                    None if name == format!("{STORAGE_DIR}/") => {}
                    None => bail!(
                        "the entry {name:?} is not part of a saved state ({METADATA}, \
                         {SNAPSHOT}, {STORAGE_DIR}/…)"
                    ),
                },
            }
        }
        let snapshot = snapshot.with_context(|| format!("no {SNAPSHOT}"))?;
        Ok(Self { zip, metadata, snapshot, storage })
    }

    fn files(&self) -> usize {
        self.storage.iter().filter(|(_, name)| !name.ends_with('/')).count()
    }
}

/// Where things go: the current database and archive, and the paths they are moved to.
struct Plan {
    database: PathBuf,
    database_aside: Option<PathBuf>,
    archive: PathBuf,
    archive_aside: Option<PathBuf>,
}

impl Plan {
    /// What a restore now would move aside.
    fn new(config: &CoreConfig) -> Self {
        let database = config.database_path.clone();
        let present = database_files::database_files(&database).iter().any(|p| p.exists());
        let database_aside = present.then(|| {
            database_files::aside_path(&database, ASIDE, |target| {
                database_files::database_files(target).iter().any(|p| p.exists())
            })
        });
        let archive = config.storage_root.clone();
        let archive_aside =
            archive.exists().then(|| database_files::aside_path(&archive, ASIDE, |p| p.exists()));
        Self { database, database_aside, archive, archive_aside }
    }

    /// Where the previous database and archive are, for an error after they were moved.
    fn moved_so_far(&self) -> String {
        let place = |aside: &Option<PathBuf>| {
            aside.as_ref().map_or_else(|| "-".to_owned(), |p| p.display().to_string())
        };
        format!(
            "restore interrupted; the previous database is at {}, the previous archive at {}",
            place(&self.database_aside),
            place(&self.archive_aside)
        )
    }

    fn to_json(&self, state: &SavedState, dry_run: bool) -> Value {
        let m = &state.metadata;
        json!({
            "dry_run": dry_run,
            "saved_state": {
                "created_at": m["created_at"],
                "label": m["label"],
                "git_head": m["storage"]["git_head"],
                "projects": m["projects_included"],
            },
            "database": {"path": self.database, "moved_aside_to": self.database_aside},
            "archive": {
                "path": self.archive,
                "moved_aside_to": self.archive_aside,
                "files": state.files(),
            },
        })
    }

    fn describe(&self, state: &SavedState, dry_run: bool) -> String {
        let (move_verb, put_verb) =
            if dry_run { ("would move", "would restore") } else { ("moved", "restored") };
        let mut text = String::new();
        for (what, from, to) in [
            ("database", &self.database, &self.database_aside),
            ("archive", &self.archive, &self.archive_aside),
        ] {
            if let Some(to) = to {
                text.push_str(&format!(
                    "{move_verb} the {what} {} to {}\n",
                    from.display(),
                    to.display()
                ));
            }
        }
        let m = &state.metadata;
        text.push_str(&format!(
            "{put_verb} the state saved at {}{}: the database at {} and {} archive files at {}\n",
            output::cell(&m["created_at"]),
            m["label"].as_str().map(|l| format!(" ({l})")).unwrap_or_default(),
            self.database.display(),
            state.files(),
            self.archive.display(),
        ));
        text
    }
}

/// Unpacks the state beside the targets, then moves the current ones aside and the unpacked
/// ones in. The caller holds the data directory and the database.
fn restore(config: &CoreConfig, state: &mut SavedState) -> Result<Plan> {
    let database_dir = parent(&config.database_path)?;
    let archive_dir = parent(&config.storage_root)?;
    let progress = Progress::new("restoring", state.files() + 1);
    // Each folder is removed when this returns; what was moved out of it by then stays.
    let database_staging = staging(&database_dir)?;
    let database = database_staging.path().join("database");
    let entry = state.zip.by_index(state.snapshot)?;
    write_file(entry, &database, 0o644)?;
    progress.step();
    let archive_staging = staging(&archive_dir)?;
    let archive = archive_staging.path().join("archive");
    for (index, name) in &state.storage {
        let target = archive.join(name);
        if name.ends_with('/') {
            std::fs::create_dir_all(&target)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let entry = state.zip.by_index(*index)?;
        let mode = entry.unix_mode().unwrap_or(0o644);
        write_file(entry, &target, mode)?;
        progress.step();
    }
    drop(progress);
    // Cursors the replaced database gave out must not read on in the restored one.
    mailroom_core::ops::backups::renew_identity(&database)
        .context("cannot prepare the restored database")?;
    let database_aside = database_files::move_aside(&config.database_path, ASIDE)?;
    let mut plan = Plan {
        database: config.database_path.clone(),
        database_aside,
        archive: config.storage_root.clone(),
        archive_aside: None,
    };
    if config.storage_root.exists() {
        let aside = database_files::aside_path(&config.storage_root, ASIDE, |p| p.exists());
        rename(&config.storage_root, &aside).with_context(|| plan.moved_so_far())?;
        plan.archive_aside = Some(aside);
    }
    rename(&database, &config.database_path).with_context(|| plan.moved_so_far())?;
    if !state.storage.is_empty() {
        rename(&archive, &config.storage_root).with_context(|| plan.moved_so_far())?;
    }
    Ok(plan)
}

/// A folder in `dir` to unpack into, on the target's file system so a rename moves it in.
fn staging(dir: &Path) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(".mailroom-restoring-")
        .tempdir_in(dir)
        .with_context(|| format!("cannot create a folder in {}", dir.display()))
}

/// Writes one entry to a new file (never through an existing one), with its mode's
/// permission bits (at least readable and writable by the owner).
fn write_file(mut entry: impl std::io::Read, target: &Path, mode: u32) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode & 0o777 | 0o600)
        .open(target)
        .with_context(|| format!("cannot create {}", target.display()))?;
    std::io::copy(&mut entry, &mut file)
        .with_context(|| format!("cannot write {}", target.display()))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777 | 0o600))?;
    Ok(())
}

/// The directory holding `path` (created when missing).
fn parent(path: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let parent = absolute.parent().map(Path::to_path_buf).unwrap_or(absolute);
    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    Ok(parent)
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    Ok(database_files::rename(from, to)?)
}
