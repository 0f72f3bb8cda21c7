//! `mailroom`: the coordination server for fleets of AI coding agents.
//!
//! Thin on purpose: parse the command line, run one subcommand, pick the exit code.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use commands::archive::{ArchiveCommand, Verdict};

/// Coordination server for fleets of AI coding agents: identities, mailboxes, threads,
/// search and file reservations over MCP and REST.
#[derive(Parser)]
#[command(name = "mailroom", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (MCP at /mcp, REST under /api, health at /health); with --stdio, MCP
    /// over stdin/stdout through the data directory's server.
    Serve(commands::serve::ServeArgs),
    /// MCP over stdin/stdout: `serve --stdio`.
    ServeStdio(commands::serve::ServeArgs),
    /// Check the Git archive against the database, or rebuild one from the other; save,
    /// list and restore the whole state of the data directory.
    Archive(commands::archive::ArchiveArgs),
    /// Delete the database and empty the archive (after saving them, unless --no-archive).
    #[command(alias = "clear_and_reset_everything")]
    ClearAndResetEverything(commands::clear_and_reset::ClearAndResetArgs),
    /// An agent's unread mail in one line (nothing when all is read), for reminder hooks.
    CheckInbox(commands::check_inbox::CheckInboxArgs),
    /// The agent-mail section of a repository's AGENTS.md, CLAUDE.md and GEMINI.md.
    Docs(commands::docs::DocsArgs),
    /// Git hooks that refuse commits and pushes touching files other agents reserved.
    Guard(commands::guard::GuardArgs),
    /// Wire the coding agents on this machine (Claude Code, Codex, Gemini CLI, OpenCode,
    /// Cursor, VS Code, Windsurf, Cline, Droid, Antigravity, Zed) to mailroom.
    Setup(commands::setup::SetupArgs),
    /// Mail from a shell, as a named agent: send, inbox, read, ack, reply.
    Mail(commands::mail::MailArgs),
    /// A project's agents.
    Agents(commands::agents::AgentsArgs),
    /// An agent's contact links.
    Contacts(commands::contacts::ContactsArgs),
    /// Every project (with --include-agents, their agents).
    #[command(alias = "list_projects")]
    ListProjects(commands::list_projects::ListProjectsArgs),
    /// The acknowledgements an agent owes.
    #[command(alias = "list_acks")]
    ListAcks(commands::acks::ListAcksArgs),
    /// Acknowledgements pending, to remind of, or overdue.
    Acks(commands::acks::AcksArgs),
    /// A project's file reservations: list, active, soon.
    #[command(alias = "file_reservations")]
    FileReservations(commands::file_reservations::FileReservationsArgs),
    /// Delete an agent with all its mail (the database backed up first).
    #[command(alias = "hard_delete_agent")]
    HardDeleteAgent(commands::hard_delete::HardDeleteAgentArgs),
    /// Delete a project with its agents and all their mail (the database backed up first).
    #[command(alias = "hard_delete_project")]
    HardDeleteProject(commands::hard_delete::HardDeleteProjectArgs),
    /// HTTP_PORT in .env: set-port, show-port.
    Config(commands::config::ConfigArgs),
    /// The variables build scripts key caches and artifacts by (`amctl env`).
    Amctl(commands::amctl::AmctlArgs),
    /// Run a command holding a build slot, renewed while it runs, released after.
    #[command(alias = "am_run")]
    AmRun(commands::am_run::AmRunArgs),
    /// Projects: the files that pin a repository's identity (mark-identity, discovery-init);
    /// a legacy project merged into another (adopt).
    Projects(commands::projects::ProjectsArgs),
    /// The product bus: ensure, link, status, search, inbox, summarize-thread.
    Products(commands::products::ProductsArgs),
    /// Diagnose the data directory (locks, integrity, orphans, index, reservations, WAL),
    /// repair it after a backup, list and restore backups.
    Doctor(commands::doctor::DoctorArgs),
    /// Bring the database to the current schema.
    Migrate(commands::migrate::MigrateArgs),
    /// Copy every row of the data directory's database into a new one (SQLite to PostgreSQL
    /// or back), leaving the source as it was.
    CopyDatabase(commands::copy_database::CopyDatabaseArgs),
    /// Bring a mailbox of the Python reference over: its database and Git archive, copied
    /// into the data directory or converted in place.
    Import(commands::import::ImportArgs),
    /// Run the server's background upkeep now: retire idle agents, sweep reservations,
    /// report overdue acknowledgements.
    Upkeep(commands::upkeep::UpkeepArgs),
    /// A project's webhooks: add (the secret shown once), list, remove, deliveries.
    Webhooks(commands::webhooks::WebhooksArgs),
    /// Keep `mailroom serve` running as a systemd user service (launchd on macOS).
    Service(commands::service::ServiceArgs),
    /// Load-test any Agent Mail server (mailroom or the Python reference); compare results,
    /// check budgets, serve a baseline.
    Bench(Box<commands::bench::BenchArgs>),
}

fn main() -> ExitCode {
    mailroom_core::fix_mmap_threshold();
    // SAFETY: first thing in `main`: no other thread exists yet.
    #[allow(unsafe_code)]
    if let Err(e) = unsafe { mailroom_core::limit_git_mappings() } {
        eprintln!("mailroom: warning: {e}");
    }
    let cli = Cli::parse();
    // `.env` in the working directory, as the reference reads it; not for the commands coding
    // agents run inside their projects (a project's `.env` belongs to the project): those read
    // the one beside their data directory (stdio.rs, shared::agent_dotenv), the Git hooks none;
    // nor for `import`, which reads the reference's `.env` as the reference's own settings.
    let skip_dotenv = match &cli.command {
        Command::Serve(args) => args.stdio,
        Command::Guard(args) => args.is_check(),
        Command::ServeStdio(_)
        | Command::CheckInbox(_)
        | Command::Mail(_)
        | Command::Amctl(_)
        | Command::AmRun(_)
        | Command::Import(_) => true,
        _ => false,
    };
    if !skip_dotenv && let Err(e) = commands::shared::use_dotenv(std::path::Path::new(".")) {
        return failed(&e, 1);
    }
    match cli.command {
        Command::Serve(args) => done(commands::serve::run(args)),
        Command::ServeStdio(mut args) => {
            args.stdio = true;
            done(commands::serve::run(args))
        }
        Command::Archive(args) => {
            // `verify` keeps 1 for "differences found", so its errors exit 2 (as diff does).
            let on_error = if matches!(args.command, ArchiveCommand::Verify(_)) { 2 } else { 1 };
            exit_code(commands::archive::run(args), on_error)
        }
        Command::ClearAndResetEverything(args) => done(commands::clear_and_reset::run(args)),
        Command::Guard(args) => exit_code(commands::guard::run(args), 1),
        Command::Service(args) => done(commands::service::run(args)),
        Command::Mail(args) => done(commands::mail::run(args)),
        Command::Agents(args) => done(commands::agents::run(args)),
        Command::Contacts(args) => done(commands::contacts::run(args)),
        Command::ListProjects(args) => done(commands::list_projects::run(args)),
        Command::ListAcks(args) => done(commands::acks::run_list(args)),
        Command::Acks(args) => done(commands::acks::run(args)),
        Command::FileReservations(args) => done(commands::file_reservations::run(args)),
        Command::HardDeleteAgent(args) => done(commands::hard_delete::run_agent(args)),
        Command::HardDeleteProject(args) => done(commands::hard_delete::run_project(args)),
        Command::Config(args) => done(commands::config::run(args)),
        Command::Amctl(args) => done(commands::amctl::run(args)),
        Command::AmRun(args) => commands::am_run::run(args).unwrap_or_else(|e| failed(&e, 1)),
        Command::Projects(args) => done(commands::projects::run(args)),
        Command::Products(args) => done(commands::products::run(args)),
        Command::Doctor(args) => {
            // A failed check exits 1, so check's own errors exit 2 as verify's do.
            let on_error = if args.is_check() { 2 } else { 1 };
            exit_code(commands::doctor::run(args), on_error)
        }
        Command::Migrate(args) => done(commands::migrate::run(args)),
        Command::CopyDatabase(args) => done(commands::copy_database::run(args)),
        Command::Import(args) => done(commands::import::run(args)),
        Command::Upkeep(args) => done(commands::upkeep::run(args)),
        Command::Webhooks(args) => done(commands::webhooks::run(args)),
        Command::Setup(args) => done(commands::setup::run(args)),
        Command::Docs(args) => done(commands::docs::run(args)),
        Command::CheckInbox(args) => done(commands::check_inbox::run(args)),
        Command::Bench(args) => {
            // `bench check` exits 1 on a regression, so its errors exit 2 as verify's do.
            let on_error = if args.is_check() { 2 } else { 1 };
            exit_code(commands::bench::run(*args), on_error)
        }
    }
}

/// The exit code of a command that either works (0) or fails (1).
fn done(outcome: anyhow::Result<()>) -> ExitCode {
    exit_code(outcome.map(|()| Verdict::Clean), 1)
}

fn exit_code(outcome: anyhow::Result<Verdict>, on_error: u8) -> ExitCode {
    match outcome {
        Ok(Verdict::Clean) => ExitCode::SUCCESS,
        Ok(Verdict::Differences) => ExitCode::from(1),
        Err(e) => failed(&e, on_error),
    }
}

/// Reports `error` and exits with `code`.
fn failed(error: &anyhow::Error, code: u8) -> ExitCode {
    eprintln!("mailroom: {error:#}");
    ExitCode::from(code)
}
