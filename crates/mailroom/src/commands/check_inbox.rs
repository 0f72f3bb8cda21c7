//! `mailroom check-inbox`: an agent's unread mail in one line, for reminder hooks that run
//! after every tool call. Reads the database file read-only (no server needed, none
//! disturbed), counts only what fetch_inbox lists and is not marked read, and prints nothing
//! when there is none.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use mailroom_core::ops::messaging::inbox::{UnreadMail, unread_mail};

use super::setup::{self, env};

/// Flags of `mailroom check-inbox`.
#[derive(Args, Debug)]
pub struct CheckInboxArgs {
    /// The project: the key agents give it (an absolute path) or its slug [default: the
    /// current directory]
    #[arg(long)]
    project: Option<String>,
    /// The agent whose inbox is counted [env: AGENT_NAME]
    #[arg(long)]
    agent: Option<String>,
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// `text`: one line, nothing when all is read; `json`: the counts, always
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Prints the agent's unread mail. A data directory without a database has no mail yet.
pub fn run(args: CheckInboxArgs) -> Result<()> {
    let data_dir = setup::data_dir(args.data_dir);
    let database = setup::core_config(&data_dir)?.database_path;
    let agent = args
        .agent
        .or_else(|| env("AGENT_NAME"))
        .context("name the agent: --agent NAME or the AGENT_NAME environment variable")?;
    let project = match args.project {
        Some(project) => project,
        None => std::env::current_dir()
            .context("cannot read the current directory")?
            .to_string_lossy()
            .into_owned(),
    };
    if !database.is_file() {
        if args.format == Format::Json {
            println!("{}", serde_json::json!({"unread": 0, "urgent": 0}));
        }
        return Ok(());
    }
    let mail = unread_mail(&database, &project, &agent)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string(&mail)?),
        Format::Text => {
            if let Some(line) = notice(&mail) {
                println!("{line}");
            }
        }
    }
    Ok(())
}

/// The reminder line, `None` when nothing is unread.
fn notice(mail: &UnreadMail) -> Option<String> {
    let UnreadMail { project, agent, unread, urgent } = mail;
    if *unread == 0 {
        return None;
    }
    let (messages, them) = if *unread == 1 { ("message", "it") } else { ("messages", "them") };
    let urgent = if *urgent > 0 { format!(" ({urgent} urgent)") } else { String::new() };
    Some(format!(
        "mailroom: {agent} has {unread} unread {messages}{urgent} in project {project}; \
         read {them} with fetch_inbox."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(unread: i64, urgent: i64) -> UnreadMail {
        UnreadMail { project: "p".into(), agent: "BlueLake".into(), unread, urgent }
    }

    #[test]
    fn the_notice_says_how_many_and_is_silent_when_none() {
        assert_eq!(notice(&mail(0, 0)), None);
        assert_eq!(
            notice(&mail(1, 0)).as_deref(),
            Some("mailroom: BlueLake has 1 unread message in project p; read it with fetch_inbox.")
        );
        let two = notice(&mail(2, 1)).expect("a notice");
        assert!(two.contains("2 unread messages (1 urgent)"), "{two}");
    }
}
