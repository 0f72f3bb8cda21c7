//! `mailroom service install | status | logs | uninstall`: keeps `mailroom serve` running for
//! the user, as a systemd user unit (`~/.config/systemd/user/mailroom.service`) on Linux or a
//! launchd agent (`~/Library/LaunchAgents/dev.mailroom.serve.plist`) on macOS, with the data
//! directory and environment file it was given. The file is written first; starting it is
//! then the service manager's (a machine without a user manager, such as a container, keeps
//! the file and is told how to start it).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};

use super::shared;

const UNIT: &str = "mailroom.service";
const LAUNCHD_LABEL: &str = "dev.mailroom.serve";

/// `mailroom service …`
#[derive(Args, Debug)]
pub struct ServiceArgs {
    #[command(subcommand)]
    command: ServiceCommand,
}

#[derive(Subcommand, Debug)]
enum ServiceCommand {
    /// Write the service file for `mailroom serve` and start it.
    Install(InstallArgs),
    /// Show whether the service runs (the service manager's own report).
    Status,
    /// Show the service's recent log lines.
    Logs {
        /// How many lines
        #[arg(long, short = 'n', default_value_t = 100)]
        lines: u32,
        /// Keep printing new lines
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Stop the service and remove its file.
    Uninstall,
}

#[derive(Args, Debug)]
struct InstallArgs {
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// A file of VAR=value lines the server reads at start (the settings of docs/compat/settings.md)
    #[arg(long, value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// Interface to listen on (else HTTP_HOST, else 127.0.0.1)
    #[arg(long)]
    host: Option<String>,
    /// Port to listen on (else HTTP_PORT, else 8765)
    #[arg(long)]
    port: Option<u16>,
    /// Print the file that would be written; write and start nothing
    #[arg(long)]
    dry_run: bool,
    /// Write the file but do not start the service
    #[arg(long)]
    no_start: bool,
}

/// What the service runs: this binary's absolute path and the absolute paths it was given.
struct Plan {
    exe: PathBuf,
    data_dir: PathBuf,
    env_file: Option<PathBuf>,
    flags: Vec<String>,
}

impl Plan {
    fn arguments(&self) -> Vec<String> {
        let mut arguments = vec![
            self.exe.to_string_lossy().into_owned(),
            "serve".to_string(),
            "--data-dir".to_string(),
            self.data_dir.to_string_lossy().into_owned(),
        ];
        arguments.extend(self.flags.iter().cloned());
        arguments
    }
}

pub fn run(args: ServiceArgs) -> Result<()> {
    let manager = Manager::of_this_system();
    match args.command {
        ServiceCommand::Install(args) => install(manager, &args),
        ServiceCommand::Status => manager.status(),
        ServiceCommand::Logs { lines, follow } => manager.logs(lines, follow),
        ServiceCommand::Uninstall => manager.uninstall(),
    }
}

fn install(manager: Manager, args: &InstallArgs) -> Result<()> {
    let data_dir = std::path::absolute(shared::data_dir(args.data_dir.clone()))
        .context("cannot resolve --data-dir")?;
    let env_file = match &args.env_file {
        Some(file) if !file.is_file() => bail!("--env-file {}: no such file", file.display()),
        Some(file) => Some(std::path::absolute(file).context("cannot resolve --env-file")?),
        None => None,
    };
    let mut flags = Vec::new();
    if let Some(host) = &args.host {
        flags.extend(["--host".to_string(), host.clone()]);
    }
    if let Some(port) = args.port {
        flags.extend(["--port".to_string(), port.to_string()]);
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let plan = Plan { exe, data_dir, env_file, flags };
    let text = manager.render(&plan);
    let path = manager.file()?;
    if args.dry_run {
        println!("would write {}:\n{text}", path.display());
        return Ok(());
    }
    std::fs::create_dir_all(&plan.data_dir)
        .with_context(|| format!("cannot create {}", plan.data_dir.display()))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    if args.no_start {
        println!("start it with: {}", manager.start_hint());
        return Ok(());
    }
    if let Err(e) = manager.start(&path) {
        println!("not started ({e:#}); start it with: {}", manager.start_hint());
    }
    Ok(())
}

/// The service manager of this system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Manager {
    /// systemd, the user's instance.
    Systemd,
    /// launchd, the user's agents.
    Launchd,
}

impl Manager {
    fn of_this_system() -> Self {
        if cfg!(target_os = "macos") { Self::Launchd } else { Self::Systemd }
    }

    /// Where the service file lives.
    fn file(self) -> Result<PathBuf> {
        let home = || shared::env("HOME").map(PathBuf::from).context("HOME is not set");
        Ok(match self {
            Self::Systemd => shared::env("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .map_or_else(|| home().map(|h| h.join(".config")), Ok)?
                .join("systemd/user")
                .join(UNIT),
            Self::Launchd => {
                home()?.join("Library/LaunchAgents").join(format!("{LAUNCHD_LABEL}.plist"))
            }
        })
    }

    fn render(self, plan: &Plan) -> String {
        match self {
            Self::Systemd => systemd_unit(plan),
            Self::Launchd => launchd_plist(plan),
        }
    }

    fn start(self, path: &Path) -> Result<()> {
        match self {
            Self::Systemd => {
                command("systemctl", &["--user", "daemon-reload"])?;
                command("systemctl", &["--user", "enable", "--now", UNIT])
            }
            Self::Launchd => command("launchctl", &["load", "-w", &path.to_string_lossy()]),
        }
    }

    fn start_hint(self) -> String {
        match self {
            Self::Systemd => {
                format!("systemctl --user daemon-reload && systemctl --user enable --now {UNIT}")
            }
            Self::Launchd => {
                format!("launchctl load -w ~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist")
            }
        }
    }

    fn status(self) -> Result<()> {
        let path = self.file()?;
        if !path.is_file() {
            println!("not installed ({} does not exist)", path.display());
            return Ok(());
        }
        println!("installed: {}", path.display());
        match self {
            Self::Systemd => passthrough("systemctl", &["--user", "status", "--no-pager", UNIT]),
            Self::Launchd => passthrough("launchctl", &["list", LAUNCHD_LABEL]),
        }
    }

    fn logs(self, lines: u32, follow: bool) -> Result<()> {
        match self {
            Self::Systemd => {
                let lines = lines.to_string();
                let mut args = vec!["--user", "-u", UNIT, "-n", &lines, "--no-pager"];
                if follow {
                    args.push("-f");
                }
                passthrough("journalctl", &args)
            }
            Self::Launchd => {
                let log = launchd_log(&self.file()?);
                let lines = lines.to_string();
                let mut args = vec!["-n", &lines];
                if follow {
                    args.push("-f");
                }
                let log = log.to_string_lossy().into_owned();
                args.push(&log);
                passthrough("tail", &args)
            }
        }
    }

    fn uninstall(self) -> Result<()> {
        let path = self.file()?;
        if !path.is_file() {
            println!("not installed ({} does not exist)", path.display());
            return Ok(());
        }
        let stopped = match self {
            Self::Systemd => command("systemctl", &["--user", "disable", "--now", UNIT]),
            Self::Launchd => command("launchctl", &["unload", "-w", &path.to_string_lossy()]),
        };
        if let Err(e) = stopped {
            println!("could not stop it ({e:#}); removing its file anyway");
        }
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        if self == Self::Systemd {
            let _ = command("systemctl", &["--user", "daemon-reload"]);
        }
        println!("removed {}", path.display());
        Ok(())
    }
}

/// A systemd user unit running `mailroom serve` (SIGTERM is its graceful stop).
fn systemd_unit(plan: &Plan) -> String {
    let exec = plan.arguments().iter().map(|a| systemd_quote(a)).collect::<Vec<_>>().join(" ");
    let env_file = plan
        .env_file
        .as_ref()
        .map(|file| format!("EnvironmentFile={}\n", systemd_path(&file.to_string_lossy())))
        .unwrap_or_default();
    format!(
        "# Written by `mailroom service install`; `mailroom service uninstall` removes it.\n\
         [Unit]\n\
         Description=mailroom: coordination server for AI coding agents\n\
         After=network.target\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={exec}\n\
         WorkingDirectory={dir}\n\
         {env_file}\
         Restart=on-failure\n\
         RestartSec=2\n\
         KillSignal=SIGTERM\n\
         TimeoutStopSec=120\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        // The directory holding the data directory: where its `.env` is read, as the stdio
        // bridges' servers read it (shared::operator_dir).
        dir = systemd_path(&super::shared::operator_dir(&plan.data_dir).to_string_lossy()),
    )
}

/// A path setting (`WorkingDirectory=`, `EnvironmentFile=`): written as it is (these settings
/// take no quotes; spaces are fine), only `%` (a specifier) escaped.
fn systemd_path(path: &str) -> String {
    path.replace('%', "%%")
}

/// A word of a systemd command line or path setting: quoted when it holds anything but
/// plain characters, with `\`, `"` and `%` (a specifier) escaped.
fn systemd_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=:+,@".contains(c));
    if plain {
        return word.to_string();
    }
    let escaped = word.replace('\\', "\\\\").replace('"', "\\\"").replace('%', "%%");
    format!("\"{escaped}\"")
}

/// A launchd agent running `mailroom serve`, kept alive, logging beside the data directory.
fn launchd_plist(plan: &Plan) -> String {
    let xml = |text: &str| {
        text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
    };
    let arguments: String =
        plan.arguments().iter().map(|a| format!("    <string>{}</string>\n", xml(a))).collect();
    // launchd has no environment file: its variables are copied in at install.
    let variables: String = plan
        .env_file
        .as_ref()
        .map(|file| {
            super::shared::env_file_variables(&std::fs::read_to_string(file).unwrap_or_default())
        })
        .unwrap_or_default()
        .iter()
        .map(|(name, value)| {
            format!("    <key>{}</key><string>{}</string>\n", xml(name), xml(value))
        })
        .collect();
    let environment = if variables.is_empty() {
        String::new()
    } else {
        format!("  <key>EnvironmentVariables</key>\n  <dict>\n{variables}  </dict>\n")
    };
    let log = xml(&launchd_log_in(&plan.data_dir).to_string_lossy());
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
         \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n  \
         <key>Label</key><string>{LAUNCHD_LABEL}</string>\n  \
         <key>ProgramArguments</key>\n  <array>\n{arguments}  </array>\n\
         {environment}  \
         <key>WorkingDirectory</key><string>{dir}</string>\n  \
         <key>RunAtLoad</key><true/>\n  \
         <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n  \
         <key>StandardErrorPath</key><string>{log}</string>\n\
         </dict>\n</plist>\n",
        dir = xml(&super::shared::operator_dir(&plan.data_dir).to_string_lossy()),
    )
}

fn launchd_log_in(data_dir: &Path) -> PathBuf {
    data_dir.join(super::shared::LOG_FILE)
}

/// The log file a launchd plist names (its `StandardErrorPath`).
fn launchd_log(plist: &Path) -> PathBuf {
    let text = std::fs::read_to_string(plist).unwrap_or_default();
    let after = text.split("<key>StandardErrorPath</key><string>").nth(1).unwrap_or_default();
    PathBuf::from(after.split("</string>").next().unwrap_or_default().replace("&amp;", "&"))
}

/// Runs a service-manager command; its failure (with its stderr) is an error.
fn command(program: &str, args: &[&str]) -> Result<()> {
    let output = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    if output.status.success() {
        return Ok(());
    }
    bail!("{program} {} failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim())
}

/// Runs a command with this process's stdout and stderr (its report is the answer).
fn passthrough(program: &str, args: &[&str]) -> Result<()> {
    Command::new(program).args(args).status().with_context(|| format!("cannot run {program}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            exe: PathBuf::from("/opt/mail room/mailroom"),
            data_dir: PathBuf::from("/srv/agent mail/100%"),
            env_file: Some(PathBuf::from("/srv/agent mail/.env")),
            flags: vec!["--port".to_string(), "9000".to_string()],
        }
    }

    #[test]
    fn the_unit_quotes_paths_and_names_the_env_file() {
        let unit = systemd_unit(&plan());
        assert!(
            unit.contains(
                "ExecStart=\"/opt/mail room/mailroom\" serve --data-dir \"/srv/agent mail/100%%\" \
             --port 9000\n"
            ),
            "{unit}"
        );
        assert!(unit.contains("EnvironmentFile=/srv/agent mail/.env\n"), "{unit}");
        assert!(unit.contains("WorkingDirectory=/srv/agent mail\n"), "the .env beside it: {unit}");
        assert!(unit.contains("WantedBy=default.target"));
    }

    #[test]
    fn environment_files_read_as_systemd_reads_them() {
        let text = "# settings\nHTTP_PORT=9000\n\nexport LOG_LEVEL=debug\nTOKEN=\"a b\"\n";
        let pairs = super::shared::env_file_variables(text);
        let expected = [("HTTP_PORT", "9000"), ("LOG_LEVEL", "debug"), ("TOKEN", "a b")];
        let expected: Vec<_> =
            expected.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        assert_eq!(pairs, expected);
    }

    #[test]
    fn the_plist_escapes_xml_and_names_its_log() {
        let mut plan = plan();
        plan.data_dir = PathBuf::from("/srv/a&b");
        let plist = launchd_plist(&plan);
        assert!(plist.contains("<string>/srv/a&amp;b</string>"), "{plist}");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.plist");
        std::fs::write(&path, &plist).expect("write");
        assert_eq!(launchd_log(&path), PathBuf::from("/srv/a&b/server.log"));
    }
}
