//! What `install` and `uninstall` do to each file of a client: the plan (every file's new
//! text, computed before any is written, so that one unreadable file leaves all of the
//! client's files alone), then the writes with their backups and the record, then the report.
//!
//! The record decides how uninstall takes mailroom out. A file still exactly as setup last
//! wrote it, whose every change since its backup was setup's own, is put back from the backup
//! byte for byte (or removed, when setup created it). Any other file keeps what others wrote:
//! only mailroom's entries come out, and the backup stays for the user to compare. An entry
//! under mailroom's name that setup never wrote (the reference's installer's) is left alone
//! unless `--force`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::clients::{Client, Edit, Home};
use super::edit::{self, Format, Mode};
use super::files::{self, Record, Written};

/// One file's planned change.
pub struct Planned {
    pub path: PathBuf,
    pub before: Option<String>,
    /// `None`: the file is removed.
    pub after: Option<String>,
    pub outcome: Outcome,
}

pub enum Outcome {
    Unchanged,
    Added,
    Updated,
    /// Uninstall: put back from its backup.
    Restored,
    /// Uninstall: setup created the file; it goes.
    Removed,
    /// Uninstall: only mailroom's entries came out; the file before setup is in `backup`.
    TakenOut {
        backup: Option<PathBuf>,
    },
    /// Uninstall: an entry under mailroom's name that setup did not write, left alone.
    NotOurs,
    /// Uninstall: nothing of mailroom's there.
    Absent,
    /// Uninstall: a file setup never wrote and cannot read; left alone.
    Unreadable(String),
}

/// The plan for one client's files.
pub fn plan(
    client: &Client,
    home: &Home,
    wiring: &super::clients::Wiring,
    mode: Mode,
    record: &Record,
    force: bool,
) -> Result<Vec<Planned>> {
    let mut plans = Vec::new();
    for Edit { path, format, changes } in (client.edits)(home, wiring)? {
        files::check_writable(&path)?;
        let before = files::read(&path)?;
        let shown = path.display().to_string();
        let planned = match (mode, before) {
            (Mode::Install, before) => {
                let text = before.as_deref().unwrap_or_default();
                let after = edit::apply(text, format, &changes, mode, &shown)?;
                let outcome = if after == text {
                    Outcome::Unchanged
                } else if edit::holds(text, format, &changes, &shown)? {
                    Outcome::Updated
                } else {
                    Outcome::Added
                };
                Planned { path, before, after: Some(after), outcome }
            }
            (Mode::Uninstall, None) => {
                Planned { path, before: None, after: None, outcome: Outcome::Absent }
            }
            (Mode::Uninstall, Some(text)) => {
                let written = record.get(&path).filter(|w| w.names.contains(&wiring.name));
                uninstall_plan(path, text, format, &changes, written, force)?
            }
        };
        plans.push(planned);
    }
    Ok(plans)
}

fn uninstall_plan(
    path: PathBuf,
    text: String,
    format: Format,
    changes: &[edit::Change],
    written: Option<&Written>,
    force: bool,
) -> Result<Planned> {
    let shown = path.display().to_string();
    let untouched =
        written.filter(|w| w.pristine && w.names.len() == 1 && w.digest == files::digest(&text));
    if let Some(written) = untouched {
        let original = match &written.backup {
            None => {
                return Ok(Planned {
                    path,
                    before: Some(text),
                    after: None,
                    outcome: Outcome::Removed,
                });
            }
            Some(backup) => files::read(backup)?,
        };
        if let Some(original) = original {
            return Ok(Planned {
                path,
                before: Some(text),
                after: Some(original),
                outcome: Outcome::Restored,
            });
        }
    }
    let after = match edit::apply(&text, format, changes, Mode::Uninstall, &shown) {
        Ok(after) => after,
        Err(e) if written.is_none() => {
            let outcome = Outcome::Unreadable(format!("{e:#}"));
            return Ok(Planned { path, before: Some(text.clone()), after: Some(text), outcome });
        }
        Err(e) => return Err(e),
    };
    let outcome = match (after == text, written) {
        (true, _) => Outcome::Absent,
        (false, Some(w)) => Outcome::TakenOut { backup: w.backup.clone() },
        (false, None) if force => Outcome::TakenOut { backup: None },
        (false, None) => Outcome::NotOurs,
    };
    Ok(Planned { path, before: Some(text), after: Some(after), outcome })
}

/// Writes one planned change, with the backup and the record that go with it (saved at once,
/// so a later failure cannot lose it).
pub fn commit(
    client: &Client,
    planned: &Planned,
    mode: Mode,
    name: &str,
    private: bool,
    record: &mut Record,
) -> Result<()> {
    let Planned { path, before, after, outcome } = planned;
    match (mode, outcome, after) {
        (Mode::Install, Outcome::Added | Outcome::Updated, Some(after)) => {
            let untouched = record
                .get(path)
                .is_some_and(|w| before.as_deref().map(files::digest) == Some(w.digest.clone()));
            let mut written = match record.get(path).cloned() {
                Some(prior) => Written { pristine: prior.pristine && untouched, ..prior },
                None => Written {
                    client: client.id.to_string(),
                    backup: before
                        .as_deref()
                        .map(|text| files::write_backup(path, text))
                        .transpose()?,
                    pristine: true,
                    names: Default::default(),
                    digest: String::new(),
                    dirs: Vec::new(),
                },
            };
            written.dirs.extend(files::write(path, after, private)?);
            written.names.insert(name.to_string());
            written.digest = files::digest(after);
            record.set(path, written);
        }
        (Mode::Uninstall, Outcome::Restored, Some(original)) => {
            files::write(path, original, false)?;
            if let Some(backup) = record.get(path).and_then(|w| w.backup.clone()) {
                files::remove(&backup)?;
            }
            record.forget(path);
        }
        (Mode::Uninstall, Outcome::Removed, _) => {
            files::remove(path)?;
            record.forget(path);
        }
        (Mode::Uninstall, Outcome::TakenOut { .. }, Some(after)) => {
            files::write(path, after, false)?;
            record.taken_out(path, name, &files::digest(after));
        }
        _ => return Ok(()),
    }
    record.save()
}

/// Prints what happened (or would) to each of the client's files.
pub fn report(client: &Client, home: &Home, plans: &[Planned], dry_run: bool) {
    let would = if dry_run { "would be " } else { "" };
    for (i, planned) in plans.iter().enumerate() {
        let what = match &planned.outcome {
            Outcome::Unchanged => "already set up".to_string(),
            Outcome::Added => format!("{would}added"),
            Outcome::Updated => format!("{would}updated"),
            Outcome::Restored => format!("{would}restored as it was before setup"),
            Outcome::Removed => format!("{would}removed (setup created it)"),
            Outcome::TakenOut { backup } => {
                let kept = backup
                    .as_deref()
                    .filter(|b| b.exists())
                    .map(|b| format!("; the file before setup is {}", home.tilde(b)));
                format!(
                    "{would}cleared of mailroom's entries (it changed since setup){}",
                    kept.unwrap_or_default()
                )
            }
            Outcome::NotOurs => {
                "holds an entry of that name setup did not write; left alone (--force takes it out)"
                    .to_string()
            }
            Outcome::Absent => "nothing of mailroom's there".to_string(),
            Outcome::Unreadable(why) => format!("left alone: {why}"),
        };
        let name = if i == 0 { client.name } else { "" };
        println!("{name:<18} {}: {what}", home.tilde(&planned.path));
    }
}

/// Whether nothing in `plans` concerns mailroom (an uninstall of a client it was never in).
pub fn idle(plans: &[Planned]) -> bool {
    plans.iter().all(|p| matches!(p.outcome, Outcome::Absent | Outcome::Unreadable(_)))
}

/// Prints `--dry-run`'s diff of one file, the token written `<token>`.
pub fn print_diff(planned: &Planned, token: Option<&str>) {
    if planned.before.as_deref() == planned.after.as_deref()
        || matches!(planned.outcome, Outcome::NotOurs)
    {
        return;
    }
    let diff = files::diff(&planned.path, planned.before.as_deref(), planned.after.as_deref());
    match token {
        Some(token) => print!("{}", diff.replace(token, "<token>")),
        None => print!("{diff}"),
    }
}

/// The state of one client file for `status`.
pub fn state(path: &Path, format: Format, changes: &[edit::Change]) -> &'static str {
    match files::read(path) {
        Err(_) => "unreadable",
        Ok(None) => "no file",
        Ok(Some(text)) => match edit::holds(&text, format, changes, &path.display().to_string()) {
            Ok(true) => "set up",
            Ok(false) => "not set up",
            Err(_) => "unreadable",
        },
    }
}
