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
mod value;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};

use clients::{Auth, Client, Edit, Home, Transport, Wiring};
use edit::{HOOK_MARK, Mode};
use files::{Record, Written};

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
    /// The server's name in each agent's settings (its tools then show as
    /// `mcp__<name>__send_message` and the like) [default: mcp-agent-mail, as the reference's
    /// installers name it]
    #[arg(long, default_value = "mcp-agent-mail")]
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
    #[arg(long)]
    agent: Option<String>,
    /// Leave out the reminder hooks
    #[arg(long)]
    no_hooks: bool,
}

#[derive(Args, Debug)]
struct UninstallArgs {
    #[command(flatten)]
    selection: Selection,
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// The server's name in each agent's settings
    #[arg(long, default_value = "mcp-agent-mail")]
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
            apply(&home, &args.selection, &wiring, Mode::Install)
        }
        SetupCommand::Uninstall(args) => {
            // Only the names and the hook mark matter for taking entries out.
            let wiring = Wiring {
                name: args.selection.name.clone(),
                transport: Transport::Http { url: String::new(), auth: Auth::None },
                hook: Some(HOOK_MARK.to_string()),
            };
            apply(&home, &args.selection, &wiring, Mode::Uninstall)
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

/// One file's planned change.
struct Planned {
    path: PathBuf,
    before: Option<String>,
    /// `None`: the file is removed (uninstall of a file setup created).
    after: Option<String>,
    /// What the user is told.
    outcome: Outcome,
}

enum Outcome {
    Unchanged,
    Added,
    Updated,
    /// Uninstall: the file is back as it was before setup.
    Restored,
    /// Uninstall: the file changed since setup; only mailroom's entries were taken out.
    TakenOut,
    /// Uninstall: nothing of mailroom's was there.
    Absent,
}

fn apply(home: &Home, selection: &Selection, wiring: &Wiring, mode: Mode) -> Result<()> {
    let chosen = selected(home, &selection.clients, mode)?;
    let mut record = Record::load(home)?;
    // The directories setup made: once every file is done, uninstall removes the empty ones.
    let made = record.dirs();
    let mut failed = Vec::new();
    let mut reported = 0;
    for client in chosen {
        match plan(client, home, wiring, mode, &record) {
            Ok(plans) => {
                for planned in &plans {
                    if selection.dry_run {
                        print_dry_run(planned, wiring);
                    } else {
                        commit(client, planned, mode, &mut record, wiring)?;
                    }
                }
                let idle = plans.iter().all(|p| matches!(p.outcome, Outcome::Absent));
                if selection.clients.is_empty() && idle {
                    continue;
                }
                report(client, &plans, mode, selection.dry_run);
                reported += 1;
            }
            Err(e) => {
                println!("{:<18} not changed: {e:#}", client.name);
                failed.push(client.name);
            }
        }
    }
    if !selection.dry_run {
        record.save()?;
        if mode == Mode::Uninstall {
            files::remove_dirs(made);
        }
    }
    if reported == 0 && failed.is_empty() {
        println!("mailroom is in no coding agent's settings; nothing to take out");
    }
    if !failed.is_empty() {
        bail!("not set up: {} (see above; nothing of theirs was changed)", failed.join(", "));
    }
    Ok(())
}

/// Every file `client` needs changed, computed before any is written, so that one unreadable
/// file leaves all of the client's files alone.
fn plan(
    client: &Client,
    home: &Home,
    wiring: &Wiring,
    mode: Mode,
    record: &Record,
) -> Result<Vec<Planned>> {
    let edits = (client.edits)(home, wiring)?;
    let mut plans = Vec::new();
    for Edit { path, format, changes } in edits {
        files::check_writable(&path)?;
        let shown = path.display().to_string();
        let before = files::read(&path)?;
        let planned = match mode {
            Mode::Install => {
                let after =
                    edit::apply(before.as_deref().unwrap_or(""), format, &changes, mode, &shown)?;
                let outcome = match &before {
                    Some(text) if *text == after => Outcome::Unchanged,
                    Some(text) if edit::holds(text, format, &changes, &shown)? => Outcome::Updated,
                    _ => Outcome::Added,
                };
                Planned { path, before, after: Some(after), outcome }
            }
            Mode::Uninstall => {
                let Some(text) = before.clone() else {
                    plans.push(Planned { path, before, after: None, outcome: Outcome::Absent });
                    continue;
                };
                let untouched = record.get(&path).filter(|w| w.digest == files::digest(&text));
                match untouched {
                    Some(written) if written.existed => {
                        let backup = files::backup_path(&path);
                        let original = files::read(&backup)?.with_context(|| {
                            format!("{} is missing; cannot restore {shown}", backup.display())
                        })?;
                        Planned { path, before, after: Some(original), outcome: Outcome::Restored }
                    }
                    Some(_) => Planned { path, before, after: None, outcome: Outcome::Restored },
                    None => {
                        let after = edit::apply(&text, format, &changes, mode, &shown)?;
                        let outcome =
                            if after == text { Outcome::Absent } else { Outcome::TakenOut };
                        Planned { path, before, after: Some(after), outcome }
                    }
                }
            }
        };
        plans.push(planned);
    }
    Ok(plans)
}

/// Writes one planned change, with the backup and the record that go with it.
fn commit(
    client: &Client,
    planned: &Planned,
    mode: Mode,
    record: &mut Record,
    wiring: &Wiring,
) -> Result<()> {
    let Planned { path, before, after, outcome } = planned;
    let backup = files::backup_path(path);
    match mode {
        Mode::Install => {
            let after = after.as_deref().unwrap_or_default();
            if matches!(outcome, Outcome::Unchanged) {
                return Ok(());
            }
            // The backup holds the file as it was before setup first wrote it. When the file
            // has changed since setup last wrote it (or setup never did), what is there now is
            // the new "before".
            let still_ours = record
                .get(path)
                .filter(|w| before.as_deref().map(files::digest).as_ref() == Some(&w.digest))
                .cloned();
            let (existed, mut dirs) = match (still_ours, before) {
                (Some(written), _) => (written.existed, written.dirs),
                (None, Some(text)) => {
                    files::write(&backup, text, true)?;
                    (true, Vec::new())
                }
                (None, None) => (false, Vec::new()),
            };
            let private = matches!(&wiring.transport, Transport::Http { auth: Auth::Token(_), .. });
            dirs.extend(files::write(path, after, private)?);
            let digest = files::digest(after);
            record.set(path, Written { client: client.id.to_string(), existed, digest, dirs });
        }
        Mode::Uninstall => {
            match (outcome, after) {
                (Outcome::Absent, _) => {}
                (Outcome::Restored, Some(original)) => {
                    files::write(path, original, false)?;
                    files::remove(&backup)?;
                }
                (Outcome::Restored, None) => files::remove(path)?,
                (_, Some(text)) => drop(files::write(path, text, false)?),
                (_, None) => {}
            }
            record.forget(path);
        }
    }
    Ok(())
}

fn print_dry_run(planned: &Planned, wiring: &Wiring) {
    if planned.before.as_deref() == planned.after.as_deref() {
        return;
    }
    let diff = files::diff(&planned.path, planned.before.as_deref(), planned.after.as_deref());
    print!("{}", masked(&diff, wiring));
}

/// `text` with the bearer token written as `<token>`.
fn masked(text: &str, wiring: &Wiring) -> String {
    match &wiring.transport {
        Transport::Http { auth: Auth::Token(token), .. } => text.replace(token.as_str(), "<token>"),
        _ => text.to_string(),
    }
}

fn report(client: &Client, plans: &[Planned], mode: Mode, dry_run: bool) {
    let would = if dry_run { "would be " } else { "" };
    for (i, planned) in plans.iter().enumerate() {
        let what = match planned.outcome {
            Outcome::Unchanged => "already set up".to_string(),
            Outcome::Added => format!("{would}added"),
            Outcome::Updated => format!("{would}updated"),
            Outcome::Restored if planned.after.is_none() => {
                format!("{would}removed (setup created it)")
            }
            Outcome::Restored => format!("{would}restored as it was before setup"),
            Outcome::TakenOut => format!(
                "{would}cleared of mailroom's entries (it changed since setup; the file before setup is {})",
                files::backup_path(&planned.path).display()
            ),
            Outcome::Absent => "nothing of mailroom's there".to_string(),
        };
        let name = if i == 0 { client.name } else { "" };
        println!("{name:<18} {}: {what}", tilde(&planned.path));
    }
    if let (Mode::Install, false, Some(after)) = (mode, dry_run, client.after) {
        println!("{:<18} → {after}", "");
    }
}

/// `path` with the home directory as `~`.
fn tilde(path: &Path) -> String {
    match (std::env::var_os("HOME"), path.to_str()) {
        (Some(home), Some(p)) => match p.strip_prefix(home.to_string_lossy().as_ref()) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => p.to_string(),
        },
        _ => path.display().to_string(),
    }
}

fn status(home: &Home, args: &StatusArgs) -> Result<()> {
    let wiring = Wiring {
        name: args.name.clone(),
        transport: Transport::Http { url: String::new(), auth: Auth::None },
        hook: Some(HOOK_MARK.to_string()),
    };
    for client in clients::ALL {
        let detected = client.detected(home);
        let mut files_json = Vec::new();
        for Edit { path, format, changes } in (client.edits)(home, &wiring)? {
            let text = files::read(&path).ok().flatten();
            let state = match &text {
                None => "no file",
                Some(text) => {
                    match edit::holds(text, format, &changes, &path.display().to_string()) {
                        Ok(true) => "set up",
                        Ok(false) => "not set up",
                        Err(_) => "unreadable",
                    }
                }
            };
            files_json.push(serde_json::json!({"path": path, "state": state}));
        }
        if args.json {
            println!(
                "{}",
                serde_json::json!({"client": client.id, "name": client.name, "detected": detected, "files": files_json})
            );
        } else {
            let found = if detected { "found" } else { "not found" };
            for (i, file) in files_json.iter().enumerate() {
                let name =
                    if i == 0 { format!("{} ({found})", client.name) } else { String::new() };
                let path = PathBuf::from(file["path"].as_str().unwrap_or_default());
                println!(
                    "{name:<30} {}: {}",
                    tilde(&path),
                    file["state"].as_str().unwrap_or_default()
                );
            }
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
