//! Installing and removing the guard's Git hooks (docs/compat/cli.md §4.1, §4.4).
//!
//! Layout in the hooks directory, shared with the reference so that either implementation
//! can take over the other's install:
//! * `<hook>` — the chain-runner, marked `mcp-agent-mail chain-runner (<hook>)`; ours is a
//!   POSIX `sh` script, so the user's machine needs no Python;
//! * `<hook>.orig` — the user's own hook, moved aside once and run last;
//! * `hooks.d/<hook>/50-agent-mail` — our plugin, which execs `mailroom guard check` with the
//!   reservations directory baked in (the reference's plugin is `50-agent-mail.py`), and the
//!   repository it was installed for: a hooks directory can be reached from other
//!   repositories (their `core.hooksPath`, or a global one), where this project's
//!   reservations mean nothing.

use std::fs;
use std::path::{Path, PathBuf};

use mailroom_git::write_atomically_with_mode;

use super::Hook;
use crate::error::{Error, Result};

/// Our plugin's file name in `hooks.d/<hook>/`.
pub const PLUGIN_NAME: &str = "50-agent-mail";
/// The reference's plugin name, recognised (and replaced) too.
pub const REFERENCE_PLUGIN_NAME: &str = "50-agent-mail.py";
/// Text that marks a chain-runner, ours or the reference's.
const CHAIN_MARKER: &str = "mcp-agent-mail chain-runner";
/// Texts that mark the reference's legacy single-file hooks.
const LEGACY_SENTINELS: [&str; 2] =
    ["mcp-agent-mail guard hook", "AGENT_NAME environment variable is required."];

/// The hooks directory Git uses for `repo` (docs/compat/cli.md §4.1): `core.hooksPath` (absolute,
/// `~`-expanded, or relative to the work tree's top level), else the common Git directory's
/// `hooks` (shared by every linked worktree, which is where Git looks), else
/// `<repo>/.git/hooks` when `repo` is not in a repository.
pub fn resolve_hooks_dir(repo: &Path) -> PathBuf {
    let Ok(repository) = git2::Repository::discover(repo) else {
        return repo.join(".git").join("hooks");
    };
    let configured = repository
        .config()
        .ok()
        .and_then(|config| config.get_string("core.hooksPath").ok())
        .filter(|value| !value.trim().is_empty());
    if let Some(value) = configured {
        let expanded = expand_home(&value);
        if expanded.is_absolute() {
            return expanded;
        }
        let top = repository.workdir().map(Path::to_path_buf).unwrap_or_else(|| repo.to_path_buf());
        return top.join(expanded);
    }
    repository.commondir().join("hooks")
}

/// The hooks directory of the Git repository containing `repo`, for installing: unlike
/// [`resolve_hooks_dir`], a path that is not an existing directory inside a repository is
/// refused (naming `field`), so no stray `.git/hooks` is created.
pub fn hooks_dir_for_install(repo: &Path, field: &str) -> Result<PathBuf> {
    if !repo.is_dir() {
        return Err(Error::invalid(format!(
            "{field} '{}' is not an existing directory; pass the path of a Git working tree",
            repo.display()
        )));
    }
    if git2::Repository::discover(repo).is_err() {
        return Err(Error::invalid(format!(
            "{field} '{}' is not inside a Git repository; run `git init` there first",
            repo.display()
        )));
    }
    Ok(resolve_hooks_dir(repo))
}

/// `~`-expands and absolutises a path typed by a user or an agent (relative paths count
/// from the current directory; symlinks are resolved when the path exists).
pub fn user_path(raw: &str) -> PathBuf {
    let absolute = lexical_user_path(raw);
    absolute.canonicalize().unwrap_or(absolute)
}

/// A path as typed (`~` expanded, made absolute) without resolving symlinks: how project keys
/// are spelled, since the server keys projects by the path as given, never its real path.
pub fn lexical_user_path(raw: &str) -> PathBuf {
    let expanded = expand_home(raw.trim());
    std::path::absolute(&expanded).unwrap_or(expanded)
}

fn expand_home(value: &str) -> PathBuf {
    crate::config::expand_home(value, &|name| std::env::var(name).ok())
}

/// What the plugin runs: the `mailroom` executable and the reservations directory it checks.
#[derive(Debug, Clone)]
pub struct PluginTarget {
    /// Absolute path of the `mailroom` binary.
    pub program: PathBuf,
    /// `STORAGE_ROOT/projects/<slug>/file_reservations`.
    pub reservations_dir: PathBuf,
    /// The server's database, which the check reads first (it is ahead of the archive).
    pub database: Option<HookDatabase>,
}

/// How the plugin names the server's database.
#[derive(Debug, Clone)]
pub enum HookDatabase {
    /// SQLite's file (`--database FILE`).
    File(PathBuf),
    /// The server's data directory (`--data-dir DIR`): the check finds the database as the
    /// commands agents run do, from `DATABASE_URL` in the committing agent's environment or
    /// the `.env` beside the directory. A PostgreSQL URL may carry a password, which a hook
    /// file must not.
    DataDir(PathBuf),
}

/// The identity of a repository the plugin records and the check compares: its common Git
/// directory, canonical. Linked worktrees share it (and their hooks), so they count as the
/// repository they belong to.
pub fn repository_identity(repository: &git2::Repository) -> Option<PathBuf> {
    repository.commondir().canonicalize().ok()
}

/// [`install`] for the repository containing `repo`, which the plugin records: in any other
/// repository that reaches `hooks_dir` the check says so and passes.
pub fn install_for_repository(
    repo: &Path,
    hooks_dir: &Path,
    hook: Hook,
    target: &PluginTarget,
) -> Result<PathBuf> {
    let identity = git2::Repository::discover(repo)
        .ok()
        .and_then(|repository| repository_identity(&repository))
        .ok_or_else(|| {
            Error::invalid(format!("'{}' is not inside a Git repository", repo.display()))
        })?;
    install(hooks_dir, hook, target, Some(&identity))
}

/// Installs the chain-runner and our plugin for `hook` in `hooks_dir`, preserving a foreign
/// hook as `<hook>.orig` (or, when that is taken, `<hook>.replaced-<unix seconds>`, which is
/// not chained). Returns the chain-runner's path. The plugin records `installed_for` (a
/// [`repository_identity`]) when given, and then checks only there; without it, it checks
/// wherever it runs. Installers use [`install_for_repository`].
pub fn install(
    hooks_dir: &Path,
    hook: Hook,
    target: &PluginTarget,
    installed_for: Option<&Path>,
) -> Result<PathBuf> {
    let run_dir = hooks_dir.join("hooks.d").join(hook.name());
    fs::create_dir_all(&run_dir).map_err(|e| io_error("create", &run_dir, e))?;
    let chain = hooks_dir.join(hook.name());
    if let Ok(existing) = fs::read(&chain)
        && !is_chain_runner(&existing, hook)
    {
        let orig = hooks_dir.join(format!("{}.orig", hook.name()));
        // The reference overwrites a second foreign hook when `.orig` is taken; we set it
        // aside instead (not chained), so no user hook is ever destroyed.
        let keep = if orig.exists() {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            hooks_dir.join(format!("{}.replaced-{stamp}", hook.name()))
        } else {
            orig
        };
        fs::rename(&chain, &keep).map_err(|e| io_error("preserve", &chain, e))?;
    }
    write_executable(&chain, &chain_runner_script(hook))?;
    // The reference's plugin would check the same reservations a second time.
    remove_if_present(&run_dir.join(REFERENCE_PLUGIN_NAME))?;
    write_executable(&run_dir.join(PLUGIN_NAME), &plugin_script(hook, target, installed_for))?;
    Ok(chain)
}

/// Removes the guard from `hooks_dir` (docs/compat/cli.md §4.4): our plugins and the reference's;
/// each chain-runner no other plugin needs (restoring `<hook>.orig` over it when present) with the
/// reference's Windows shims; legacy single-file guard hooks. Returns whether anything was removed.
pub fn uninstall(hooks_dir: &Path) -> Result<bool> {
    let mut removed = false;
    for hook in Hook::ALL {
        let run_dir = hooks_dir.join("hooks.d").join(hook.name());
        for name in [PLUGIN_NAME, REFERENCE_PLUGIN_NAME] {
            removed |= remove_if_present(&run_dir.join(name))?;
        }
        let chain = hooks_dir.join(hook.name());
        let Ok(content) = fs::read(&chain) else { continue };
        let text = String::from_utf8_lossy(&content);
        if text.contains(CHAIN_MARKER) {
            if has_other_plugins(&run_dir) {
                continue;
            }
            let orig = hooks_dir.join(format!("{}.orig", hook.name()));
            if orig.exists() {
                fs::rename(&orig, &chain).map_err(|e| io_error("restore", &orig, e))?;
            } else {
                remove_if_present(&chain)?;
            }
        } else if LEGACY_SENTINELS.iter().any(|s| text.contains(s)) {
            remove_if_present(&chain)?;
        } else {
            continue;
        }
        remove_shims(hooks_dir, hook)?;
        removed = true;
    }
    Ok(removed)
}

/// What `mailroom guard status` reports about one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookStatus {
    /// The hook.
    pub hook: Hook,
    /// A chain-runner (ours or the reference's) is installed.
    pub chain_runner: bool,
    /// Our plugin (or the reference's) is installed.
    pub plugin: bool,
    /// A preserved user hook (`<hook>.orig`) exists.
    pub preserved_original: bool,
}

/// The state of both hooks in `hooks_dir`.
pub fn status(hooks_dir: &Path) -> Vec<HookStatus> {
    Hook::ALL
        .into_iter()
        .map(|hook| {
            let run_dir = hooks_dir.join("hooks.d").join(hook.name());
            HookStatus {
                hook,
                chain_runner: fs::read(hooks_dir.join(hook.name()))
                    .is_ok_and(|c| is_chain_runner(&c, hook)),
                plugin: [PLUGIN_NAME, REFERENCE_PLUGIN_NAME]
                    .iter()
                    .any(|name| run_dir.join(name).is_file()),
                preserved_original: hooks_dir.join(format!("{}.orig", hook.name())).exists(),
            }
        })
        .collect()
}

fn is_chain_runner(content: &[u8], hook: Hook) -> bool {
    let marker = format!("{CHAIN_MARKER} ({})", hook.name());
    String::from_utf8_lossy(content).contains(&marker)
}

fn has_other_plugins(run_dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(run_dir) else { return false };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        entry.path().is_file() && name != PLUGIN_NAME && name != REFERENCE_PLUGIN_NAME
    })
}

/// Deletes the reference's `<hook>.cmd` / `<hook>.ps1` shims, recognised by their content.
fn remove_shims(hooks_dir: &Path, hook: Hook) -> Result<()> {
    let name = hook.name();
    let shims = [
        (format!("{name}.cmd"), format!("python \"%DIR%{name}\" %*")),
        (format!("{name}.ps1"), format!("Join-Path $PSScriptRoot '{name}'")),
    ];
    for (file, signature) in shims {
        let path = hooks_dir.join(file);
        if fs::read_to_string(&path).is_ok_and(|c| c.contains(&signature)) {
            remove_if_present(&path)?;
        }
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error("remove", path, e)),
    }
}

/// Writes `content` with mode 0755 through a temporary file renamed over `path`, so Git never
/// runs a half-written hook.
fn write_executable(path: &Path, content: &str) -> Result<()> {
    write_atomically_with_mode(path, content.as_bytes(), Some(0o755))
        .map_err(|e| io_error("write", path, e))
}

fn io_error(action: &str, path: &Path, error: std::io::Error) -> Error {
    Error::internal(format!("cannot {action} {}: {error}", path.display()))
}

/// Quotes `text` for `sh` (single quotes; an embedded `'` becomes `'\''`).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The chain-runner: every executable in `hooks.d/<hook>/` in the shell's glob order (lexical),
/// stopping at the first failure with its status, then the preserved `<hook>.orig` when it is
/// executable. Git's arguments go to every child; for pre-push, Git's stdin (the refs) is read
/// once and fed to each child.
pub fn chain_runner_script(hook: Hook) -> String {
    let name = hook.name();
    let (prepare, feed) = match hook {
        Hook::PrePush => (
            "refs=$(mktemp \"${TMPDIR:-/tmp}/mailroom-pre-push.XXXXXX\") || exit 1\n\
             trap 'rm -f \"$refs\"' EXIT\n\
             cat > \"$refs\"\n",
            " < \"$refs\"",
        ),
        Hook::PreCommit => ("", ""),
    };
    format!(
        "#!/bin/sh\n\
         # mcp-agent-mail chain-runner ({name})\n\
         # Installed by mailroom. Runs the executables in hooks.d/{name}/ in lexical order,\n\
         # stops at the first failure, then runs the preserved {name}.orig.\n\
         hook_dir=$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd) || exit 1\n\
         {prepare}\
         for child in \"$hook_dir/hooks.d/{name}\"/*; do\n\
         \x20 if [ -f \"$child\" ] && [ -x \"$child\" ]; then\n\
         \x20   \"$child\" \"$@\"{feed} || exit $?\n\
         \x20 fi\n\
         done\n\
         if [ -f \"$hook_dir/{name}.orig\" ] && [ -x \"$hook_dir/{name}.orig\" ]; then\n\
         \x20 \"$hook_dir/{name}.orig\" \"$@\"{feed} || exit $?\n\
         fi\n\
         exit 0\n"
    )
}

/// Our plugin: execs `mailroom guard check` on the baked-in reservations directory (and the
/// repository it guards, when known). A missing binary is reported by name rather than as the
/// shell's bare "not found".
pub fn plugin_script(hook: Hook, target: &PluginTarget, installed_for: Option<&Path>) -> String {
    let program = shell_quote(&target.program.to_string_lossy());
    let dir = shell_quote(&target.reservations_dir.to_string_lossy());
    let option = |flag: &str, value: Option<&Path>| {
        value.map(|v| format!(" {flag} {}", shell_quote(&v.to_string_lossy()))).unwrap_or_default()
    };
    let database = match &target.database {
        Some(HookDatabase::File(file)) => option("--database", Some(file)),
        Some(HookDatabase::DataDir(dir)) => option("--data-dir", Some(dir)),
        None => String::new(),
    };
    let repository = option("--installed-for", installed_for);
    let mode = match hook {
        Hook::PreCommit => "",
        Hook::PrePush => " --pre-push",
    };
    format!(
        "#!/bin/sh\n\
         # mailroom guard plugin ({name})\n\
         mailroom={program}\n\
         if [ ! -x \"$mailroom\" ]; then\n\
         \x20 echo \"mailroom guard: $mailroom is missing; reinstall with 'mailroom guard install' \
         (AGENT_MAIL_BYPASS=1 skips the check)\" >&2\n\
         \x20 exit 1\n\
         fi\n\
         exec \"$mailroom\" guard check{mode} --reservations-dir {dir}{database}{repository} \
         -- \"$@\"\n",
        name = hook.name()
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::process::Command;

    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git");
        assert!(
            status.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }

    fn init_repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q"]);
        dir
    }

    fn canonical(path: &Path) -> PathBuf {
        path.canonicalize().expect("canonical")
    }

    #[test]
    fn hooks_dir_defaults_to_the_git_dir() {
        let repo = init_repo();
        let resolved = resolve_hooks_dir(&repo.path().join("."));
        assert_eq!(
            canonical(resolved.parent().expect("parent")),
            canonical(&repo.path().join(".git"))
        );
        assert!(resolved.ends_with("hooks"));
    }

    #[test]
    fn hooks_dir_from_a_subdirectory_and_outside_a_repository() {
        let repo = init_repo();
        std::fs::create_dir_all(repo.path().join("src/deep")).expect("mkdir");
        let resolved = resolve_hooks_dir(&repo.path().join("src/deep"));
        assert_eq!(
            canonical(resolved.parent().expect("parent")),
            canonical(&repo.path().join(".git"))
        );
        let plain = tempfile::tempdir().expect("tempdir");
        // A temp dir is not inside a repository on test machines; the reference falls back to
        // <repo>/.git/hooks.
        if git2::Repository::discover(plain.path()).is_err() {
            assert_eq!(resolve_hooks_dir(plain.path()), plain.path().join(".git/hooks"));
        }
    }

    #[test]
    fn hooks_dir_honours_core_hooks_path() {
        let repo = init_repo();
        git(repo.path(), &["config", "core.hooksPath", ".githooks"]);
        let relative = resolve_hooks_dir(repo.path());
        assert!(relative.ends_with(".githooks"), "{}", relative.display());
        assert_eq!(canonical(relative.parent().expect("parent")), canonical(repo.path()));
        let absolute = tempfile::tempdir().expect("tempdir");
        let absolute_text = absolute.path().to_string_lossy().into_owned();
        git(repo.path(), &["config", "core.hooksPath", &absolute_text]);
        assert_eq!(resolve_hooks_dir(repo.path()), absolute.path());
        git(repo.path(), &["config", "core.hooksPath", "~/my-hooks"]);
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME"));
        assert_eq!(resolve_hooks_dir(repo.path()), home.join("my-hooks"));
    }

    #[test]
    fn hooks_dir_of_a_linked_worktree_is_the_common_one() {
        let repo = init_repo();
        git(
            repo.path(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "root",
            ],
        );
        let linked = repo.path().join("linked");
        git(repo.path(), &["worktree", "add", "-q", &linked.to_string_lossy(), "-b", "side"]);
        let resolved = resolve_hooks_dir(&linked);
        assert_eq!(
            canonical(resolved.parent().expect("parent")),
            canonical(&repo.path().join(".git"))
        );
    }

    fn target() -> PluginTarget {
        PluginTarget {
            program: PathBuf::from("/opt/mail room/mailroom"),
            reservations_dir: PathBuf::from("/data/projects/it's/file_reservations"),
            database: Some(HookDatabase::File(PathBuf::from("/data/mail room.sqlite3"))),
        }
    }

    #[test]
    fn install_preserves_a_foreign_hook_once_and_uninstall_restores_it() {
        let hooks = tempfile::tempdir().expect("tempdir");
        let chain = hooks.path().join("pre-commit");
        std::fs::write(&chain, "#!/bin/sh\necho mine\n").expect("write");
        install(hooks.path(), Hook::PreCommit, &target(), None).expect("install");
        install(hooks.path(), Hook::PreCommit, &target(), None).expect("reinstall");
        let orig = std::fs::read_to_string(hooks.path().join("pre-commit.orig")).expect("orig");
        assert_eq!(orig, "#!/bin/sh\necho mine\n");
        let runner = std::fs::read_to_string(&chain).expect("runner");
        assert!(runner.contains("mcp-agent-mail chain-runner (pre-commit)"));
        let mode = std::fs::metadata(&chain).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let plugin = std::fs::read_to_string(hooks.path().join("hooks.d/pre-commit/50-agent-mail"))
            .expect("plugin");
        assert!(plugin.contains("mailroom='/opt/mail room/mailroom'"), "{plugin}");
        assert!(plugin.contains("'/data/projects/it'\\''s/file_reservations'"), "{plugin}");
        assert!(uninstall(hooks.path()).expect("uninstall"));
        assert_eq!(std::fs::read_to_string(&chain).expect("restored"), orig);
        assert!(!hooks.path().join("pre-commit.orig").exists());
        assert!(!uninstall(hooks.path()).expect("second uninstall"), "nothing left to remove");
    }

    fn plugin(hooks: &Path) -> String {
        std::fs::read_to_string(hooks.join("hooks.d/pre-commit/50-agent-mail")).expect("plugin")
    }

    #[test]
    fn the_plugin_records_the_repository_it_guards() {
        let repo = init_repo();
        let git_dir = canonical(&repo.path().join(".git"));
        let recorded = format!("--installed-for '{}'", git_dir.display());
        let default_hooks = resolve_hooks_dir(repo.path());
        install_for_repository(repo.path(), &default_hooks, Hook::PreCommit, &target())
            .expect("install");
        assert!(plugin(&default_hooks).contains(&recorded), "{}", plugin(&default_hooks));

        // A hooks directory outside any Git directory records the repository it is installed
        // for, as the installer names it.
        let shared = tempfile::tempdir().expect("tempdir");
        install(shared.path(), Hook::PreCommit, &target(), None).expect("install");
        assert!(!plugin(shared.path()).contains("--installed-for"), "{}", plugin(shared.path()));
        let subdir = repo.path().join("src");
        std::fs::create_dir(&subdir).expect("mkdir");
        install_for_repository(&subdir, shared.path(), Hook::PreCommit, &target())
            .expect("install for");
        assert!(plugin(shared.path()).contains(&recorded), "{}", plugin(shared.path()));
        let outside = tempfile::tempdir().expect("tempdir");
        if git2::Repository::discover(outside.path()).is_err() {
            let refused =
                install_for_repository(outside.path(), shared.path(), Hook::PreCommit, &target());
            assert!(refused.is_err());
        }
    }

    #[test]
    fn a_second_foreign_hook_is_set_aside_not_destroyed() {
        let hooks = tempfile::tempdir().expect("tempdir");
        std::fs::write(hooks.path().join("pre-commit.orig"), "first\n").expect("write");
        std::fs::write(hooks.path().join("pre-commit"), "second\n").expect("write");
        install(hooks.path(), Hook::PreCommit, &target(), None).expect("install");
        let orig = std::fs::read_to_string(hooks.path().join("pre-commit.orig")).expect("orig");
        assert_eq!(orig, "first\n");
        let set_aside: Vec<String> = std::fs::read_dir(hooks.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pre-commit.replaced-"))
            .collect();
        assert_eq!(set_aside.len(), 1, "{set_aside:?}");
        let kept = std::fs::read_to_string(hooks.path().join(&set_aside[0])).expect("kept");
        assert_eq!(kept, "second\n");
    }

    #[test]
    fn uninstall_keeps_a_chain_runner_other_plugins_need() {
        let hooks = tempfile::tempdir().expect("tempdir");
        install(hooks.path(), Hook::PrePush, &target(), None).expect("install");
        std::fs::write(hooks.path().join("hooks.d/pre-push/10-lint"), "#!/bin/sh\n").expect("w");
        assert!(uninstall(hooks.path()).expect("uninstall"));
        assert!(hooks.path().join("pre-push").exists(), "runner kept for 10-lint");
        assert!(!hooks.path().join("hooks.d/pre-push/50-agent-mail").exists());
    }

    #[test]
    fn uninstall_recognises_the_reference_install_and_legacy_hooks() {
        let hooks = tempfile::tempdir().expect("tempdir");
        let run_dir = hooks.path().join("hooks.d/pre-commit");
        std::fs::create_dir_all(&run_dir).expect("mkdir");
        std::fs::write(run_dir.join("50-agent-mail.py"), "#!/usr/bin/env python3\n").expect("w");
        std::fs::write(
            hooks.path().join("pre-commit"),
            "#!/usr/bin/env python3\n# mcp-agent-mail chain-runner (pre-commit)\n",
        )
        .expect("w");
        std::fs::write(
            hooks.path().join("pre-commit.cmd"),
            "@echo off\r\npython \"%DIR%pre-commit\" %*\r\n",
        )
        .expect("w");
        std::fs::write(
            hooks.path().join("pre-push"),
            "#!/usr/bin/env python3\n# mcp-agent-mail guard hook (pre-push)\n",
        )
        .expect("w");
        assert!(uninstall(hooks.path()).expect("uninstall"));
        for gone in
            ["pre-commit", "pre-commit.cmd", "pre-push", "hooks.d/pre-commit/50-agent-mail.py"]
        {
            assert!(!hooks.path().join(gone).exists(), "{gone} removed");
        }
    }

    #[test]
    fn uninstall_leaves_foreign_hooks_alone() {
        let hooks = tempfile::tempdir().expect("tempdir");
        std::fs::write(hooks.path().join("pre-commit"), "#!/bin/sh\nexit 0\n").expect("w");
        assert!(!uninstall(hooks.path()).expect("uninstall"));
        assert!(hooks.path().join("pre-commit").exists());
        let listed = status(hooks.path());
        assert!(listed.iter().all(|s| !s.chain_runner && !s.plugin));
    }
}
