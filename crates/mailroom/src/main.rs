//! `mailroom`: the coordination server for fleets of AI coding agents.
//!
//! Thin on purpose: parse the command line, run one subcommand, pick the exit code.

mod commands;

use clap::{Parser, Subcommand};

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
    /// Run the server (MCP at /mcp, REST under /api, health at /health).
    Serve(commands::serve::ServeArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => commands::serve::run(args),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mailroom: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
