//! What setup does to files on disk: reading them, writing them whole (through a temporary
//! file and a rename, into the target of a symlink, keeping the file's permissions), the
//! backup it leaves beside each file it changes, the diff `--dry-run` prints, and its record
//! of what it wrote (`~/.config/mailroom/setup.json`), by which `uninstall` knows whether a
//! file is still as setup left it and can be put back byte for byte.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha1::{Digest as _, Sha1};

use super::clients::Home;

/// Writes `text` (the file as it was before setup) beside `file`: `FILE.mailroom-backup`, or
/// `FILE.mailroom-backup.2` and so on when that name is taken (a backup is never overwritten).
pub fn write_backup(file: &Path, text: &str) -> Result<PathBuf> {
    let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let free = (1..)
        .map(|n| match n {
            1 => file.with_file_name(format!("{name}.mailroom-backup")),
            n => file.with_file_name(format!("{name}.mailroom-backup.{n}")),
        })
        .find(|path| std::fs::symlink_metadata(path).is_err())
        .context("no free backup name")?;
    write(&free, text, true)?;
    Ok(free)
}

/// The file's text, `None` when there is no file.
pub fn read(path: &Path) -> Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text; not changing it", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Replaces `path`'s contents with `text`. A symlink is followed (a dotfile manager's link
/// stays a link); an existing file keeps its permissions, but when `private` (it holds a
/// token) neither it nor a new file is readable by others. Returns the directories it had to
/// create, outermost first.
pub fn write(path: &Path, text: &str, private: bool) -> Result<Vec<PathBuf>> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path)
            .with_context(|| format!("{} is a symlink to nowhere", path.display()))?,
        _ => path.to_path_buf(),
    };
    let dir = target.parent().context("a settings file has a directory")?;
    let created = missing_dirs(dir);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mode = match std::fs::metadata(&target) {
        Ok(meta) => meta.permissions().mode() & 0o7777,
        Err(_) => 0o644,
    };
    let mode = if private { mode & 0o700 } else { mode };
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    temp.write_all(text.as_bytes())?;
    temp.as_file().sync_all()?;
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(mode))?;
    temp.persist(&target).with_context(|| format!("cannot replace {}", target.display()))?;
    Ok(created)
}

/// `dir` and those of its ancestors that do not exist yet, outermost first.
fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> =
        dir.ancestors().take_while(|d| !d.exists()).map(Path::to_path_buf).collect();
    missing.reverse();
    missing
}

/// Removes those of `dirs` (directories setup created) that are empty again, deepest first.
pub fn remove_dirs(mut dirs: Vec<PathBuf>) {
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for dir in dirs {
        // A directory something else now uses is not empty, and stays.
        let _ = std::fs::remove_dir(dir);
    }
}

/// Removes a file setup created.
pub fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

/// The unified diff from `before` (`None`: no file) to `after` (`None`: file removed).
pub fn diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let shown = path.display().to_string();
    let old_name = if before.is_some() { shown.clone() } else { "/dev/null".into() };
    let new_name = if after.is_some() { shown } else { "/dev/null".into() };
    similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string()
}

/// SHA-1 of a file's text, in hex.
pub fn digest(text: &str) -> String {
    Sha1::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Setup's record of the files it wrote.
#[derive(Default, Serialize, Deserialize)]
pub struct Record {
    /// By absolute path.
    files: BTreeMap<PathBuf, Written>,
    /// The directories setup created for this record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    dirs: Vec<PathBuf>,
    #[serde(skip)]
    path: PathBuf,
}

/// One file setup wrote.
#[derive(Clone, Serialize, Deserialize)]
pub struct Written {
    /// The client it belongs to.
    pub client: String,
    /// The file as it was before setup first wrote it; `None`: there was no file.
    pub backup: Option<PathBuf>,
    /// Whether every change since the backup was setup's own (so putting the backup back
    /// loses nothing of anyone else's).
    pub pristine: bool,
    /// The server names setup wrote in it.
    pub names: std::collections::BTreeSet<String>,
    /// The digest of what setup last wrote.
    pub digest: String,
    /// The directories setup created for the file, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<PathBuf>,
}

impl Record {
    /// `$XDG_CONFIG_HOME/mailroom/setup.json` (else `~/.config/...`); empty when missing.
    pub fn load(home: &Home) -> Result<Self> {
        let path = home.xdg_config().join("mailroom/setup.json");
        let mut record: Self = match read(&path)? {
            Some(text) => serde_json::from_str(&text).with_context(|| {
                format!("{} is damaged; move it away to start afresh", path.display())
            })?,
            None => Self::default(),
        };
        record.path = path;
        Ok(record)
    }

    /// The directories setup created for the files it wrote (and for this record).
    pub fn dirs(&self) -> Vec<PathBuf> {
        let files = self.files.values().flat_map(|w| w.dirs.iter());
        files.chain(&self.dirs).cloned().collect()
    }

    pub fn get(&self, file: &Path) -> Option<&Written> {
        self.files.get(file)
    }

    pub fn set(&mut self, file: &Path, written: Written) {
        self.files.insert(file.to_path_buf(), written);
    }

    pub fn forget(&mut self, file: &Path) {
        self.files.remove(file);
    }

    /// Uninstall took `name`'s entries out of `file`, which now has `digest`: the record of
    /// the file goes with its last name (its backup stays, for the user).
    pub fn taken_out(&mut self, file: &Path, name: &str, digest: &str) {
        let Some(written) = self.files.get_mut(file) else { return };
        written.names.remove(name);
        written.digest = digest.to_string();
        written.pristine = false;
        if written.names.is_empty() {
            self.files.remove(file);
        }
    }

    /// Writes the record; removes it, and the directories setup made for it, when it holds
    /// nothing.
    pub fn save(&mut self) -> Result<()> {
        if self.files.is_empty() {
            remove(&self.path)?;
            remove_dirs(std::mem::take(&mut self.dirs));
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            self.dirs.extend(missing_dirs(dir));
        }
        let text = serde_json::to_string_pretty(self)? + "\n";
        write(&self.path, &text, true).map(drop)
    }
}

/// Checks that `path` can be written: a directory in its place, or a symlink to nowhere, is
/// an error.
pub fn check_writable(path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!("{} is a directory; not changing it", path.display());
    }
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if link && !path.exists() {
        bail!("{} is a symlink to nowhere; not changing it", path.display());
    }
    Ok(())
}
