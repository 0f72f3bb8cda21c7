//! `mailroom guard check|install|uninstall|status`: the Git commit guard
//! (docs/compat/cli.md §4). The hooks `install` writes exec `guard check`, which reads
//! the project's reservations in force from the server's database (read-only; the archive's
//! reservation files when there is none) and asks `git` what changed; on SQLite it starts no
//! async runtime, so a commit pays only for process start-up, one indexed query and the
//! match. On PostgreSQL the hooks name the data directory, not the URL (which may carry a
//! password): the check finds `DATABASE_URL` as the commands agents run do.
//!
//! The guard's environment (`WORKTREES_ENABLED`/`GIT_IDENTITY_ENABLED` gate,
//! `AGENT_MAIL_GUARD_MODE`, `AGENT_MAIL_BYPASS`, `AGENT_NAME`) is read here, per run, because
//! it is the committing agent's environment, not the server's configuration.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use mailroom_core::config::CoreConfig;
use mailroom_core::guard::hooks::{self, HookDatabase, PluginTarget};
use mailroom_core::guard::project::{ProjectKey, ProjectLookup, find_project};
use mailroom_core::guard::reservations::{BlockingSet, report};
use mailroom_core::guard::{Hook, changes, is_advisory_mode, is_truthy};
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::reservations::guard::{hook_database, reservations_dir};
use mailroom_core::{DatabaseAt, PgSettings};

use super::archive::Verdict;
use super::shared;

/// Flags of `mailroom guard`.
#[derive(Args, Debug)]
pub struct GuardArgs {
    #[command(subcommand)]
    pub command: GuardCommand,
}

impl GuardArgs {
    /// Whether this is `guard check`, which Git hooks run inside agents' repositories.
    pub fn is_check(&self) -> bool {
        matches!(self.command, GuardCommand::Check(_))
    }
}

/// The guard subcommands.
#[derive(Subcommand, Debug)]
pub enum GuardCommand {
    /// Check changed paths against other agents' active exclusive file reservations.
    ///
    /// Paths come from the index (`git diff --cached`), from NUL-separated stdin
    /// (--stdin-nul), or, with --pre-push, from the commits named by Git's pre-push input.
    /// Does nothing unless WORKTREES_ENABLED or GIT_IDENTITY_ENABLED is set; AGENT_MAIL_BYPASS=1,
    /// an unset AGENT_NAME or a repository other than --installed-for skip the check with a
    /// note. Exits 1 on conflicts unless advisory.
    Check(CheckArgs),
    /// Install the pre-commit guard (and with --prepush the pre-push guard) in a repository.
    ///
    /// A hook already there is kept as <hook>.orig and still runs after the guard. A no-op
    /// with a warning unless WORKTREES_ENABLED or GIT_IDENTITY_ENABLED is set; a project
    /// neither the database nor the archive knows is refused.
    Install(InstallArgs),
    /// Remove the guard from a repository, restoring the hooks it preserved.
    Uninstall(RepoArgs),
    /// Show the gate, the mode, the hooks directory and which guard hooks are installed.
    Status(RepoArgs),
}

/// Flags of `mailroom guard check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Read NUL-separated paths from stdin instead of asking Git for the staged ones
    #[arg(long, conflicts_with = "pre_push")]
    stdin_nul: bool,
    /// Report conflicts but exit 0 (as AGENT_MAIL_GUARD_MODE=warn)
    #[arg(long)]
    advisory: bool,
    /// Check the commits of a push: Git's pre-push lines on stdin, the remote as argument
    #[arg(long)]
    pre_push: bool,
    /// Repository to ask Git about [default: the current directory]
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,
    /// The project's file_reservations directory (what installed hooks pass)
    #[arg(long, value_name = "DIR", conflicts_with = "project")]
    reservations_dir: Option<PathBuf>,
    /// The server's database, read first (what installed hooks pass with --reservations-dir)
    #[arg(long, value_name = "FILE", requires = "reservations_dir")]
    database: Option<PathBuf>,
    /// Project slug or absolute path, to find its reservations under the data directory
    #[arg(long)]
    project: Option<String>,
    /// The common Git directory of the repository the hook guards (what installed hooks
    /// pass); in any other repository the check says so and passes
    #[arg(long, value_name = "GIT_DIR")]
    installed_for: Option<PathBuf>,
    /// Directory of the database and the archive [default: ./mailroom-data]; with
    /// --reservations-dir, the server's data directory whose database is read first (what
    /// hooks installed on PostgreSQL pass)
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Git's hook arguments (pre-push: remote name and URL)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    hook_args: Vec<String>,
}

/// Flags of `mailroom guard install`.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Project slug or absolute path whose reservations the guard checks
    project: String,
    /// The code repository to install the hooks in
    repo: PathBuf,
    /// Also install the pre-push guard
    #[arg(long, overrides_with = "no_prepush")]
    prepush: bool,
    /// Install only the pre-commit guard (the default)
    #[arg(long)]
    no_prepush: bool,
    /// Directory of the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// Flags of `mailroom guard uninstall` and `status`.
#[derive(Args, Debug)]
pub struct RepoArgs {
    /// The code repository
    repo: PathBuf,
}

/// Runs one guard subcommand; `Differences` means blocking conflicts (exit 1).
pub fn run(args: GuardArgs) -> Result<Verdict> {
    match args.command {
        GuardCommand::Check(args) => check(args),
        GuardCommand::Install(args) => install(args).map(|()| Verdict::Clean),
        GuardCommand::Uninstall(args) => uninstall(&args.repo).map(|()| Verdict::Clean),
        GuardCommand::Status(args) => status(&args.repo).map(|()| Verdict::Clean),
    }
}

fn gate_enabled() -> bool {
    is_truthy(shared::env("WORKTREES_ENABLED").as_deref())
        || is_truthy(shared::env("GIT_IDENTITY_ENABLED").as_deref())
}

fn check(args: CheckArgs) -> Result<Verdict> {
    if !gate_enabled() {
        return Ok(Verdict::Clean);
    }
    let label = if args.pre_push { "[pre-push]" } else { "[pre-commit]" };
    let Some(agent_name) = agent_to_check(&args, label) else {
        drain_stdin_if(args.pre_push || args.stdin_nul);
        return Ok(Verdict::Clean);
    };
    let sources = match (&args.reservations_dir, &args.project) {
        (Some(dir), _) => {
            let database = match (&args.database, &args.data_dir) {
                (Some(file), _) => Some(DatabaseAt::Sqlite(file.clone())),
                (None, Some(data_dir)) => Some(database_of_data_dir(data_dir)?),
                (None, None) => None,
            };
            Sources { dir: dir.clone(), database }
        }
        (None, Some(project)) => project_sources(project, args.data_dir.clone())?,
        (None, None) => {
            bail!("pass --reservations-dir or --project to say whose reservations to check")
        }
    };
    let blocking = sources.blocking(&agent_name, changes::ignores_case(args.repo.as_deref()));
    // Nothing can conflict without reservations; skip asking Git.
    if blocking.is_empty() {
        drain_stdin_if(args.pre_push || args.stdin_nul);
        return Ok(Verdict::Clean);
    }
    let conflicts = blocking.conflicts(changed_paths(&args)?.iter().map(String::as_str));
    if conflicts.is_empty() {
        return Ok(Verdict::Clean);
    }
    let mut stderr = std::io::stderr().lock();
    stderr.write_all(report(&conflicts).as_bytes())?;
    let advisory =
        args.advisory || is_advisory_mode(shared::env("AGENT_MAIL_GUARD_MODE").as_deref());
    if advisory {
        writeln!(stderr, "{label} advisory mode: not blocking")?;
        return Ok(Verdict::Clean);
    }
    Ok(Verdict::Differences)
}

/// The agent whose commit or push is checked; `None`, after saying why in one line on stderr,
/// when this run checks nothing: the bypass is set, the hook runs in a repository it was not
/// installed for (reached through a `core.hooksPath`), or AGENT_NAME is unset. Without an
/// agent's name no reservation can be told apart from the committer's own, and refusing
/// every commit there would only teach agents to bypass the guard.
fn agent_to_check(args: &CheckArgs, label: &str) -> Option<String> {
    if is_truthy(shared::env("AGENT_MAIL_BYPASS").as_deref()) {
        eprintln!("{label} bypass enabled via AGENT_MAIL_BYPASS=1");
        return None;
    }
    if let Some(installed_for) = &args.installed_for
        && let Some(here) = other_repository(installed_for, args.repo.as_deref())
    {
        eprintln!(
            "{label} mailroom guard: installed for the repository at {}, not this one ({}); \
             not checking",
            installed_for.display(),
            here.display()
        );
        return None;
    }
    let agent_name = shared::env("AGENT_NAME");
    if agent_name.is_none() {
        eprintln!(
            "{label} mailroom guard: AGENT_NAME is not set; not checking (set it to the \
             committing agent's name)"
        );
    }
    agent_name
}

/// The identity of the repository the check runs in when it is not `installed_for`. When the
/// repository cannot be told, the check goes on as the hook was installed to.
fn other_repository(installed_for: &Path, repo: Option<&Path>) -> Option<PathBuf> {
    let here = changes::open_repository(repo).and_then(|r| hooks::repository_identity(&r))?;
    let recorded = installed_for.canonicalize().unwrap_or_else(|_| installed_for.to_path_buf());
    (here != recorded).then_some(here)
}

/// The paths to check: NUL-separated on stdin, those of the pushed commits, or the staged ones.
fn changed_paths(args: &CheckArgs) -> Result<Vec<String>> {
    let repo = args.repo.as_deref();
    let paths = if args.stdin_nul {
        changes::split_nul(&read_stdin()?)
    } else if args.pre_push {
        let remote = args.hook_args.first().map_or("origin", String::as_str);
        let refs = String::from_utf8_lossy(&read_stdin()?).into_owned();
        changes::pushed_paths(repo, remote, &refs)?
    } else {
        changes::staged_paths(repo)?
    };
    Ok(paths)
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).context("cannot read stdin")?;
    Ok(input)
}

/// Consumes stdin we were given but do not need, so a writer (Git feeding pre-push refs)
/// never sees a broken pipe.
fn drain_stdin_if(wanted: bool) {
    if wanted {
        let _ = read_stdin();
    }
}

/// Where one project's reservations are recorded: the archive's directory of JSON files and,
/// when known, the server's database (read first: it is ahead of the archive).
struct Sources {
    /// `STORAGE_ROOT/projects/<slug>/file_reservations`.
    dir: PathBuf,
    database: Option<DatabaseAt>,
}

impl Sources {
    /// The reservations blocking `agent_name` now: the database's when it knows the project
    /// (the slug is the name of `dir`'s parent, as the archive lays it out), else the files'.
    /// A database that is there but unreadable is reported, and the files are read instead.
    fn blocking(&self, agent_name: &str, fold_case: bool) -> BlockingSet {
        let now = Timestamp::now();
        let slug = self.dir.parent().and_then(Path::file_name).map(|s| s.to_string_lossy());
        if let (Some(database), Some(slug)) = (&self.database, slug) {
            match BlockingSet::load_from_database(database, &slug, agent_name, now, fold_case) {
                Ok(Some(set)) => return set,
                Ok(None) => {}
                Err(e) => eprintln!(
                    "mailroom guard: cannot read {} ({}); checking the archive's files",
                    database.describe(),
                    e.message
                ),
            }
        }
        BlockingSet::load(&self.dir, agent_name, now, fold_case)
    }
}

/// The reservation sources of a project given by slug or absolute path, under the data
/// directory's configuration.
fn project_sources(project: &str, data_dir: Option<PathBuf>) -> Result<Sources> {
    let config = shared::core_config(&shared::data_dir(data_dir))?;
    let slug = ProjectKey::parse(project).slug;
    Ok(Sources {
        dir: reservations_dir(&config.storage_root, &slug),
        database: Some(database_of(&config)),
    })
}

/// The database of the server on `data_dir`, found as the commands agents run find it (the
/// environment, else the `.env` beside the directory): what hooks installed on PostgreSQL
/// pass, since the URL may carry a password.
fn database_of_data_dir(data_dir: &Path) -> Result<DatabaseAt> {
    shared::agent_dotenv(Some(data_dir.to_path_buf()))?;
    Ok(database_of(&shared::core_config(data_dir)?))
}

/// The server's database, SQLite's file as an absolute path (the hook runs from the code
/// repository); a commit waits at most a few seconds for PostgreSQL before the check reads
/// the archive's files instead.
fn database_of(config: &CoreConfig) -> DatabaseAt {
    match DatabaseAt::of(config) {
        DatabaseAt::Sqlite(file) => DatabaseAt::Sqlite(std::path::absolute(&file).unwrap_or(file)),
        DatabaseAt::Postgres(settings) => DatabaseAt::Postgres(PgSettings {
            connect_timeout: GUARD_DATABASE_WAIT,
            statement_timeout_ms: GUARD_DATABASE_WAIT.as_millis() as u64,
            ..settings
        }),
    }
}

/// The longest a check waits for PostgreSQL to connect, and then to answer.
const GUARD_DATABASE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

fn install(args: InstallArgs) -> Result<()> {
    if !gate_enabled() {
        eprintln!(
            "mailroom guard: not installed: set WORKTREES_ENABLED=1 or GIT_IDENTITY_ENABLED=1 \
             to enable the guard"
        );
        return Ok(());
    }
    let program = std::env::current_exe().context("cannot locate the mailroom binary")?;
    let program = program.canonicalize().unwrap_or(program);
    let config = shared::core_config(&shared::data_dir(args.data_dir))?;
    let slug = known_project(&args.project, &config)?;
    let target = PluginTarget {
        program,
        reservations_dir: reservations_dir(&config.storage_root, &slug),
        database: Some(hook_database(&config)),
    };
    if let Some(HookDatabase::DataDir(dir)) = &target.database {
        println!(
            "the hooks read the reservations from the PostgreSQL database DATABASE_URL names \
             in the committing agent's environment or in {} (the URL is not written into \
             them); without it, from the archive's files",
            shared::operator_dir(dir).join(shared::DOTENV).display()
        );
    }
    if !target.reservations_dir.is_dir() {
        eprintln!(
            "mailroom guard: note: {} does not exist yet (no reservations archived for this \
             project so far)",
            target.reservations_dir.display()
        );
    }
    let repo = hooks::user_path(&args.repo.to_string_lossy());
    let hooks_dir = hooks::hooks_dir_for_install(&repo, "repo")?;
    let mut wanted = vec![Hook::PreCommit];
    if args.prepush && !args.no_prepush {
        wanted.push(Hook::PrePush);
    }
    for hook in wanted {
        let chain = hooks::install_for_repository(&repo, &hooks_dir, hook, &target)?;
        println!("installed {} guard: {}", hook.name(), chain.display());
    }
    Ok(())
}

/// The slug of `project` as the database (read-only) or else the archive knows it. A project
/// neither knows is refused, with the known projects most like it: the guard would never
/// block, since no reservation can be recorded for it.
fn known_project(project: &str, config: &CoreConfig) -> Result<String> {
    let database = database_of(config);
    let root = &config.storage_root;
    let lookup = find_project(&database, root, &ProjectKey::parse(project))
        .with_context(|| format!("cannot read the database {}", database.describe()))?;
    let similar = match lookup {
        ProjectLookup::Known(slug) => return Ok(slug),
        ProjectLookup::Unknown(similar) => similar,
        ProjectLookup::NoRecords => bail!(
            "project '{project}': neither a database ({}) nor an archive ({}) exists; nothing \
             installed. Pass --data-dir with the server's data directory",
            database.describe(),
            root.display()
        ),
    };
    let hint = if similar.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = similar.iter().map(|s| format!("'{s}'")).collect();
        format!(" Did you mean: {}?", list.join(", "))
    };
    bail!(
        "project '{project}' is not known: neither the database ({}) nor the archive ({}) has \
         it; nothing installed.{hint} Create it with ensure_project first, or pass --data-dir \
         with its server's data directory",
        database.describe(),
        root.display()
    )
}

fn uninstall(repo: &Path) -> Result<()> {
    let repo = hooks::user_path(&repo.to_string_lossy());
    let hooks_dir = hooks::resolve_hooks_dir(&repo);
    if hooks::uninstall(&hooks_dir)? {
        println!("removed the guard from {}", hooks_dir.display());
    } else {
        println!("no guard installed in {}", hooks_dir.display());
    }
    Ok(())
}

fn status(repo: &Path) -> Result<()> {
    let repo = hooks::user_path(&repo.to_string_lossy());
    let hooks_dir = hooks::resolve_hooks_dir(&repo);
    let gate = if gate_enabled() { "enabled" } else { "disabled (set WORKTREES_ENABLED=1)" };
    let advisory = is_advisory_mode(shared::env("AGENT_MAIL_GUARD_MODE").as_deref());
    println!("gate: {gate}");
    println!("mode: {}", if advisory { "advisory" } else { "block" });
    println!("hooks dir: {}", hooks_dir.display());
    for hook in hooks::status(&hooks_dir) {
        let state = match (hook.chain_runner, hook.plugin) {
            (true, true) => "installed",
            (false, false) => "not installed",
            (true, false) => "chain-runner only (no guard plugin)",
            (false, true) => "guard plugin without chain-runner (inactive)",
        };
        let orig = if hook.preserved_original {
            format!(" (chains {}.orig)", hook.hook.name())
        } else {
            String::new()
        };
        println!("{}: {state}{orig}", hook.hook.name());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use mailroom_core::model::slug::slugify;

    use super::*;

    /// The server keys a project by the path as given (symlinks not resolved), so the guard
    /// must look in the directory of that spelling, not of the real path.
    #[test]
    fn a_symlinked_project_path_keeps_its_own_slug() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = dir.path().join("real-project");
        std::fs::create_dir(&real).expect("project dir");
        let link = dir.path().join("linked-project");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let data = dir.path().join("data");
        let found = project_sources(&link.to_string_lossy(), Some(data)).expect("dir").dir;
        let expected_slug = slugify(&link.to_string_lossy());
        assert!(
            found.ends_with(Path::new("projects").join(&expected_slug).join("file_reservations")),
            "{} should be under the symlink's slug {expected_slug}",
            found.display()
        );
    }
}
