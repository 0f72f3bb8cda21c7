//! `mailroom config set-port PORT` and `mailroom config show-port`: `HTTP_PORT` in a `.env`
//! file (default `./.env`, the one mailroom reads), as the reference's commands. Setting it
//! rewrites only that line (or adds one); every other line stays as it was.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use super::shared;

/// `mailroom config`.
#[derive(Args, Debug)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Subcommand, Debug)]
enum ConfigCommand {
    /// Write HTTP_PORT into the .env file
    #[command(alias = "set_port")]
    SetPort {
        port: u16,
        #[arg(long, default_value = shared::DOTENV, alias = "env_file")]
        env_file: PathBuf,
    },
    /// Print HTTP_PORT from the .env file (8765 when it has none)
    #[command(alias = "show_port")]
    ShowPort {
        #[arg(long, default_value = shared::DOTENV, alias = "env_file")]
        env_file: PathBuf,
    },
}

pub fn run(args: ConfigArgs) -> Result<()> {
    match args.command {
        ConfigCommand::SetPort { port, env_file } => {
            let text = match std::fs::read_to_string(&env_file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", env_file.display()));
                }
            };
            write_whole(&env_file, &with_port(&text, port))?;
            println!("HTTP_PORT={port} in {}", env_file.display());
        }
        ConfigCommand::ShowPort { env_file } => {
            let text = std::fs::read_to_string(&env_file).unwrap_or_default();
            let port = shared::env_file_variables(&text)
                .into_iter()
                .rev()
                .find(|(name, _)| name == "HTTP_PORT")
                .map_or_else(|| "8765".to_string(), |(_, port)| port);
            println!("{port}");
        }
    }
    Ok(())
}

/// `text` with every `HTTP_PORT` line set to `port` (one appended when it has none), its line
/// endings kept.
fn with_port(text: &str, port: u16) -> String {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let is_port = |line: &str| {
        let line = line.trim_start();
        let line = line.strip_prefix("export ").unwrap_or(line);
        line.split_once('=').is_some_and(|(name, _)| name.trim() == "HTTP_PORT")
    };
    let mut found = false;
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| {
            if is_port(line) {
                found = true;
                format!("HTTP_PORT={port}")
            } else {
                line.to_string()
            }
        })
        .collect();
    if !found {
        lines.push(format!("HTTP_PORT={port}"));
    }
    lines.join(newline) + newline
}

/// Replaces `path` with `text` through a temporary file beside it and a rename, so a crash
/// never leaves half a file.
fn write_whole(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let dir =
        path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    temp.write_all(text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.persist(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_port_line_changes() {
        assert_eq!(with_port("", 9000), "HTTP_PORT=9000\n");
        assert_eq!(
            with_port("# mine\nHTTP_PORT=8765\nA=b\n", 9000),
            "# mine\nHTTP_PORT=9000\nA=b\n"
        );
        assert_eq!(with_port("A=b", 9000), "A=b\nHTTP_PORT=9000\n");
        assert_eq!(with_port("export HTTP_PORT=1\n", 2), "HTTP_PORT=2\n");
        assert_eq!(
            with_port("HTTP_PORT=1\r\nA=b\r\nHTTP_PORT=2\r\n", 9),
            "HTTP_PORT=9\r\nA=b\r\nHTTP_PORT=9\r\n",
            "every line (the last wins when read), CRLF kept"
        );
    }
}
