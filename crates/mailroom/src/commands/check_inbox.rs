//! `mailroom check-inbox`: an agent's unread mail in one line, for reminder hooks that run
//! after every tool call. Reads the database file read-only (no server needed, none
//! disturbed), counts only what fetch_inbox lists and is not marked read, and prints nothing
//! when there is none. `--format hook` speaks the hook protocol Claude Code, Codex, Gemini
//! CLI and Factory Droid share (docs/setup/clients.md): it reads the hook's JSON input from
//! stdin (`hook_event_name`, `cwd`) and answers `hookSpecificOutput.additionalContext`, the
//! form every event passes on to the model.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use mailroom_core::ops::messaging::inbox::{UnreadMail, unread_mail};

use super::shared::{self, env};

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
    /// `text`: one line, nothing when all is read; `json`: the counts, always; `hook`: a
    /// coding agent's hook answer (the line as additional context), nothing when all is read
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    Hook,
}

/// Most bytes of hook input read from stdin (the input is a small JSON object).
const HOOK_INPUT_LIMIT: u64 = 1 << 20;

/// Prints the agent's unread mail. A data directory without a database has no mail yet.
pub fn run(args: CheckInboxArgs) -> Result<()> {
    let data_dir = std::path::absolute(shared::data_dir(args.data_dir))
        .context("cannot resolve --data-dir")?;
    shared::use_dotenv(shared::operator_dir(&data_dir))?;
    let config = shared::core_config(&data_dir)?;
    let agent = match args.agent.or_else(|| env("AGENT_NAME")) {
        Some(agent) => agent,
        // A hook set up for every session of a coding agent runs in sessions that never named
        // their agent: it must stay quiet there, not fail the agent's tool call.
        None if args.format == Format::Hook => return Ok(()),
        None => bail!("name the agent: --agent NAME or the AGENT_NAME environment variable"),
    };
    let hook = (args.format == Format::Hook).then(read_hook_input).unwrap_or_default();
    let project = match args.project.or_else(|| hook["cwd"].as_str().map(str::to_string)) {
        Some(project) => project,
        None => std::env::current_dir()
            .context("cannot read the current directory")?
            .to_string_lossy()
            .into_owned(),
    };
    if config.postgres.is_none() && !config.database_path.is_file() {
        if args.format == Format::Json {
            println!("{}", serde_json::json!({"unread": 0, "urgent": 0}));
        }
        return Ok(());
    }
    let mail = unread_mail(&config, &project, &agent)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string(&mail)?),
        Format::Text => {
            if let Some(line) = notice(&mail) {
                println!("{line}");
            }
        }
        Format::Hook => {
            if let Some(line) = notice(&mail) {
                let event = hook["hook_event_name"].as_str().unwrap_or("PostToolUse");
                println!("{}", hook_answer(event, &line));
            }
        }
    }
    Ok(())
}

/// The hook's JSON input on stdin (`{}` when there is none or it is not JSON).
fn read_hook_input() -> serde_json::Value {
    use std::io::{IsTerminal, Read};
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return serde_json::Value::Null;
    }
    let mut text = String::new();
    let _ = stdin.lock().take(HOOK_INPUT_LIMIT).read_to_string(&mut text);
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

/// A hook's answer adding `context` for the model after `event`.
fn hook_answer(event: &str, context: &str) -> serde_json::Value {
    serde_json::json!({
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": context}
    })
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
