//! `mailroom setup install|uninstall|status`: wires the coding agents on this machine to
//! mailroom, each in its own settings file and format (clients/, one file per agent), over
//! Streamable HTTP (with the bearer token when one is set) or over stdio (this binary, by
//! absolute path), with reminder hooks where the agent has them. Every file is changed in
//! place (edit.rs keeps the user's other settings and comments) after a backup beside it;
//! `--dry-run` prints the diffs instead; running it again changes nothing; `uninstall` puts
//! back each file setup left untouched byte for byte, and otherwise takes out only mailroom's
//! entries.

mod clients;
mod edit;
mod files;
mod plan;
mod value;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};

use clients::{Auth, Client, Edit, Home, Transport, Wiring};
use edit::Mode;
use files::Record;

/// The server's name in each client's settings unless `--name`: the reference's installers'.
const DEFAULT_NAME: &str = "mcp-agent-mail";

/// `mailroom setup`.
#[derive(Args, Debug)]
pub struct SetupArgs {
    #[command(subcommand)]
    command: SetupCommand,
}

#[derive(Subcommand, Debug)]
enum SetupCommand {
    /// Add mailroom to each coding agent found (or each `--client`), with reminder hooks.
    Install(InstallArgs),
    /// Take mailroom out again: files setup left as they were are restored byte for byte.
    Uninstall(UninstallArgs),
    /// Which coding agents are here, where their settings are, and whether mailroom is in them.
    Status(StatusArgs),
}

/// Which clients and under what name.
#[derive(Args, Debug)]
struct Selection {
    /// A coding agent to wire (repeatable): claude-code, codex, gemini, opencode, cursor,
    /// vscode, windsurf, cline, droid, antigravity, zed [default: every one found here]
    #[arg(long = "client", value_name = "NAME")]
    clients: Vec<String>,
    /// The server's name in each agent's settings, its tools then being
    /// `mcp__<name>__send_message` and the like (the reference's installers' name by default)
    #[arg(long, default_value = DEFAULT_NAME)]
    name: String,
    /// Print each file's diff; change nothing
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
struct InstallArgs {
    #[command(flatten)]
    selection: Selection,
    /// `http`: the agents reach the running server at --url; `stdio`: each agent starts
    /// `mailroom serve --stdio`, which shares the data directory's server
    #[arg(long, value_enum, default_value_t = TransportKind::Http)]
    transport: TransportKind,
    /// The server's MCP URL [default: http://HTTP_HOST:HTTP_PORT/mcp, 127.0.0.1:8765]
    #[arg(long)]
    url: Option<String>,
    /// Have agents read the bearer token from this environment variable when they start,
    /// instead of writing HTTP_BEARER_TOKEN's value into their settings
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// The data directory (for stdio, and for the hooks' inbox check) [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The agent name the reminder hooks check mail for; without it they use AGENT_NAME from
    /// the agent's environment and stay silent when it is unset
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Leave out the reminder hooks
    #[arg(long)]
    no_hooks: bool,
}

#[derive(Args, Debug)]
struct UninstallArgs {
    #[command(flatten)]
    selection: Selection,
    /// Also take out entries of that name setup did not write (the reference's installer's)
    #[arg(long)]
    force: bool,
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// The server's name in each agent's settings
    #[arg(long, default_value = DEFAULT_NAME)]
    name: String,
    /// One JSON object per client, for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TransportKind {
    Http,
    Stdio,
}

/// Runs `mailroom setup`.
pub fn run(args: SetupArgs) -> Result<()> {
    let home = Home::from_env()?;
    match args.command {
        SetupCommand::Install(args) => {
            let wiring = wiring(&args)?;
            apply(&home, &args.selection, &wiring, Mode::Install, false)?;
            install_notes(&args, &wiring)
        }
        SetupCommand::Uninstall(args) => {
            let wiring = Wiring::matching(&args.selection.name);
            apply(&home, &args.selection, &wiring, Mode::Uninstall, args.force)
        }
        SetupCommand::Status(args) => status(&home, &args),
    }
}

/// The wiring `install`'s flags describe.
fn wiring(args: &InstallArgs) -> Result<Wiring> {
    check_name(&args.selection.name)?;
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find this program's path")?;
    let exe = exe.to_str().context("this program's path is not UTF-8")?.to_string();
    let data_dir = std::path::absolute(super::shared::data_dir(args.data_dir.clone()))
        .context("cannot resolve --data-dir")?;
    let data_dir = data_dir.to_str().context("--data-dir is not UTF-8")?.to_string();
    let transport = match args.transport {
        TransportKind::Http => {
            let url = match &args.url {
                Some(url) => check_url(url)?,
                None => default_url()?,
            };
            let auth = match (&args.token_env, super::shared::env("HTTP_BEARER_TOKEN")) {
                (Some(var), _) => {
                    check_var(var)?;
                    Auth::Env(var.clone())
                }
                (None, Some(token)) => Auth::Token(token),
                (None, None) => Auth::None,
            };
            Transport::Http { url, auth }
        }
        TransportKind::Stdio => {
            if args.url.is_some() || args.token_env.is_some() {
                bail!("--url and --token-env are for --transport http");
            }
            Transport::Stdio {
                command: exe.clone(),
                args: ["serve", "--stdio", "--data-dir", &data_dir].map(String::from).to_vec(),
            }
        }
    };
    let hook = (!args.no_hooks).then(|| {
        let mut words =
            vec![exe.as_str(), "check-inbox", "--format", "hook", "--data-dir", &data_dir];
        if let Some(agent) = &args.agent {
            words.extend(["--agent", agent]);
        }
        words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ")
    });
    Ok(Wiring { name: args.selection.name.clone(), transport, hook })
}

/// `http://HTTP_HOST:HTTP_PORT/mcp` as `mailroom serve` would listen (a wildcard host is
/// reached on loopback).
fn default_url() -> Result<String> {
    let host = super::shared::env("HTTP_HOST").unwrap_or_else(|| "127.0.0.1".into());
    let host = match host.as_str() {
        "0.0.0.0" | "::" | "[::]" => "127.0.0.1".to_string(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        _ => host,
    };
    let port = match super::shared::env("HTTP_PORT") {
        Some(port) => port
            .trim()
            .parse::<u16>()
            .with_context(|| format!("HTTP_PORT must be a port, got {port:?}"))?,
        None => 8765,
    };
    Ok(format!("http://{host}:{port}/mcp"))
}

fn check_url(url: &str) -> Result<String> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("--url: not a URL: {url:?}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        bail!("--url: give an http:// or https:// URL with a host, got {url:?}");
    }
    Ok(url.to_string())
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        bail!("--name: letters, digits, '-' and '_' only (at most 64), got {name:?}");
    }
    Ok(())
}

fn check_var(var: &str) -> Result<()> {
    let ok = var.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        bail!("--token-env: an environment variable's name (letters, digits, '_'), got {var:?}");
    }
    Ok(())
}

/// `word` as one shell word.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// The clients named, else every client found on this machine (every client setup knows,
/// for uninstall).
fn selected(home: &Home, names: &[String], mode: Mode) -> Result<Vec<&'static Client>> {
    if !names.is_empty() {
        let mut chosen: Vec<&'static Client> = Vec::new();
        for name in names {
            let client = clients::find(name)?;
            if !chosen.iter().any(|c| c.id == client.id) {
                chosen.push(client);
            }
        }
        return Ok(chosen);
    }
    if mode == Mode::Uninstall {
        return Ok(clients::ALL.to_vec());
    }
    let found: Vec<_> = clients::ALL.iter().copied().filter(|c| c.detected(home)).collect();
    if found.is_empty() {
        let known: Vec<_> = clients::ALL.iter().map(|c| c.id).collect();
        bail!(
            "no coding agent found on this machine; name one with --client ({})",
            known.join(", ")
        );
    }
    Ok(found)
}

/// One run of install or uninstall over the selected clients. A client that fails is
/// reported and skipped; the others go on.
struct Run<'a> {
    home: &'a Home,
    selection: &'a Selection,
    wiring: &'a Wiring,
    mode: Mode,
    force: bool,
    /// The token written into files, masked in diffs.
    token: Option<&'a str>,
}

fn apply(
    home: &Home,
    selection: &Selection,
    wiring: &Wiring,
    mode: Mode,
    force: bool,
) -> Result<()> {
    let token = match &wiring.transport {
        Transport::Http { auth: Auth::Token(token), .. } => Some(token.as_str()),
        _ => None,
    };
    let run = Run { home, selection, wiring, mode, force, token };
    let mut record = Record::load(home)?;
    // The directories setup made: once every file is done, uninstall removes the empty ones.
    let made = record.dirs();
    let (mut failed, mut reported) = (Vec::new(), 0);
    for client in selected(home, &selection.clients, mode)? {
        match run.client(client, &mut record) {
            Ok(shown) => reported += usize::from(shown),
            Err(e) => {
                println!("{:<18} failed: {e:#}", client.name);
                failed.push(client.name);
            }
        }
    }
    if mode == Mode::Uninstall && !selection.dry_run {
        files::remove_dirs(made);
    }
    if reported == 0 && failed.is_empty() {
        println!("mailroom is in no coding agent's settings; nothing to take out");
    }
    if !failed.is_empty() {
        bail!("not done for: {} (see above)", failed.join(", "));
    }
    Ok(())
}

impl Run<'_> {
    /// Plans, writes (or prints) and reports one client's files; whether it was reported.
    fn client(&self, client: &Client, record: &mut Record) -> Result<bool> {
        let plans = plan::plan(client, self.home, self.wiring, self.mode, record, self.force)?;
        if self.mode == Mode::Uninstall && self.selection.clients.is_empty() && plan::idle(&plans) {
            return Ok(false);
        }
        for planned in &plans {
            if self.selection.dry_run {
                plan::print_diff(planned, self.token);
            } else {
                let private = self.token.is_some();
                plan::commit(client, planned, self.mode, &self.wiring.name, private, record)?;
            }
        }
        plan::report(client, self.home, &plans, self.selection.dry_run);
        if self.mode == Mode::Install && !self.selection.dry_run {
            let hooks = client.after_hooks.filter(|_| self.wiring.hook.is_some());
            let after =
                hooks.map_or(client.after.to_string(), |h| format!("{}; {h}", client.after));
            println!("{:<18} → {after}", "");
        }
        Ok(true)
    }
}

/// Notes on what the hooks and stdio entries will find, printed after install.
fn install_notes(args: &InstallArgs, wiring: &Wiring) -> Result<()> {
    let data_dir = super::shared::data_dir(args.data_dir.clone());
    let database = super::shared::core_config(&data_dir)?.database_path;
    let uses_data_dir =
        wiring.hook.is_some() || matches!(wiring.transport, Transport::Stdio { .. });
    if uses_data_dir && !database.exists() {
        println!(
            "note: {} holds no mailroom database yet; the hooks (and stdio) read that data \
             directory: give --data-dir the server's if it is another",
            data_dir.display()
        );
    }
    if wiring.hook.is_some() && args.agent.is_none() {
        println!(
            "note: the reminder hooks count mail for the agent AGENT_NAME names in each agent's \
             environment (or --agent NAME here); without one they stay silent"
        );
    }
    Ok(())
}

fn status(home: &Home, args: &StatusArgs) -> Result<()> {
    let wiring = Wiring::matching(&args.name);
    for client in clients::ALL {
        let found = client.detected(home);
        let files: Vec<(PathBuf, &str)> = (client.edits)(home, &wiring)?
            .into_iter()
            .map(|Edit { path, format, changes }| {
                let state = plan::state(&path, format, &changes);
                (path, state)
            })
            .collect();
        if args.json {
            let files: Vec<_> = files
                .iter()
                .map(|(path, state)| serde_json::json!({"path": path, "state": state}))
                .collect();
            let line = serde_json::json!({"client": client.id, "name": client.name, "detected": found, "files": files});
            println!("{line}");
            continue;
        }
        for (i, (path, state)) in files.iter().enumerate() {
            let label = match (i, found) {
                (0, true) => format!("{} (found)", client.name),
                (0, false) => format!("{} (not found)", client.name),
                _ => String::new(),
            };
            println!("{label:<30} {}: {state}", home.tilde(path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_with_spaces_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("/usr/bin/mailroom"), "/usr/bin/mailroom");
        assert_eq!(shell_quote("/home/a b/data"), "'/home/a b/data'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn bad_names_urls_and_variables_are_refused() {
        assert!(check_name("mcp-agent-mail").is_ok());
        assert!(check_name("a.b").is_err() && check_name("").is_err());
        assert!(check_url("http://127.0.0.1:8765/mcp").is_ok());
        assert!(check_url("ftp://x/").is_err() && check_url("nope").is_err());
        assert!(check_var("MAILROOM_TOKEN").is_ok() && check_var("1X").is_err());
    }
}
