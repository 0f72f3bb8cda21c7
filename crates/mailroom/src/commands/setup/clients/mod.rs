//! The coding agents setup knows, one file each: where the agent keeps its MCP settings, in
//! what shape, and its reminder hooks where it has them. Every path and shape is cited in
//! docs/setup/clients.md. Home directories and the variables that move them come from
//! [`Home`], so tests run against a temporary home.

mod antigravity;
mod claude_code;
mod cline;
mod codex;
mod cursor;
mod droid;
mod gemini;
mod opencode;
mod vscode;
mod windsurf;
mod zed;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::edit::{Change, Format};
use crate::commands::shared::env;

/// How long setup waits for a client's `--version` or `--help`.
const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
use super::value::Value;

/// A coding agent setup can wire.
pub struct Client {
    /// The name `--client` takes.
    pub id: &'static str,
    /// The product's name.
    pub name: &'static str,
    /// Other names `--client` accepts.
    pub aliases: &'static [&'static str],
    /// Its command, when it has one: found on PATH, the client counts as present.
    pub binary: Option<&'static str>,
    /// Whether its settings directory shows it is used on this machine.
    pub present: fn(&Home) -> bool,
    /// The files to change for `wiring`, and what to keep in each.
    pub edits: fn(&Home, &Wiring) -> Result<Vec<Edit>>,
    /// What the user sees, or still has to do, after setup.
    pub after: &'static str,
    /// The same for the reminder hooks, for the clients that have them.
    pub after_hooks: Option<&'static str>,
}

/// Every client, in the order they are reported.
pub const ALL: &[&Client] = &[
    &claude_code::CLIENT,
    &codex::CLIENT,
    &gemini::CLIENT,
    &opencode::CLIENT,
    &cursor::CLIENT,
    &vscode::CLIENT,
    &windsurf::CLIENT,
    &cline::CLIENT,
    &droid::CLIENT,
    &antigravity::CLIENT,
    &zed::CLIENT,
];

/// The client `--client` names.
pub fn find(name: &str) -> Result<&'static Client> {
    let name = name.to_ascii_lowercase();
    ALL.iter().copied().find(|c| c.id == name || c.aliases.contains(&name.as_str())).with_context(
        || {
            let known: Vec<_> = ALL.iter().map(|c| c.id).collect();
            format!("--client: no coding agent called {name:?}; known: {}", known.join(", "))
        },
    )
}

impl Client {
    /// Whether the client is on this machine: its command on PATH or its settings present.
    pub fn detected(&self, home: &Home) -> bool {
        self.binary.is_some_and(|b| home.which(b).is_some()) || (self.present)(home)
    }
}

/// One file and what setup keeps in it.
#[derive(Clone, Debug)]
pub struct Edit {
    pub path: PathBuf,
    pub format: Format,
    pub changes: Vec<Change>,
}

impl Edit {
    fn new(path: PathBuf, format: Format, changes: Vec<Change>) -> Self {
        Self { path, format, changes }
    }
}

/// The user's home and the variables clients use to move their settings.
pub struct Home {
    home: PathBuf,
}

impl Home {
    /// From `HOME`.
    pub fn from_env() -> Result<Self> {
        let home =
            env("HOME").context("HOME is not set; setup writes the agents' user settings")?;
        Ok(Self { home: PathBuf::from(home) })
    }

    /// `rel` under the home directory.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.home.join(rel)
    }

    /// A path from a variable, if set.
    pub fn var_path(&self, name: &str) -> Option<PathBuf> {
        env(name).map(PathBuf::from)
    }

    /// `path` with the home directory written `~`.
    pub fn tilde(&self, path: &Path) -> String {
        match path.strip_prefix(&self.home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        }
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config` (the place Linux tools and several cross-platform
    /// ones, OpenCode and Zed, use on macOS too).
    pub fn xdg_config(&self) -> PathBuf {
        self.var_path("XDG_CONFIG_HOME").unwrap_or_else(|| self.join(".config"))
    }

    /// Where desktop applications keep settings: `~/Library/Application Support` on macOS,
    /// the XDG config directory elsewhere.
    pub fn app_config(&self) -> PathBuf {
        if cfg!(target_os = "macos") {
            self.join("Library/Application Support")
        } else {
            self.xdg_config()
        }
    }

    /// `binary` on PATH.
    pub fn which(&self, binary: &str) -> Option<PathBuf> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|dir| dir.join(binary)).find(|p| is_executable(p))
    }

    /// What `binary ARGS` prints on stdout, if the binary is on PATH and answers within
    /// [`ASK_TIMEOUT`]. It runs in a throwaway home: asked only for its version, a client
    /// still writes state files (Gemini) or whole settings directories (OpenCode), which in
    /// the user's home would change it, or make a client look installed.
    pub fn ask(&self, binary: &str, args: &[&str]) -> Option<String> {
        use std::io::Read as _;
        let scratch = tempfile::tempdir().ok()?;
        let mut command = std::process::Command::new(self.which(binary)?);
        command.env("HOME", scratch.path()).env_remove("GEMINI_CLI_HOME");
        for var in ["XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"] {
            command.env(var, scratch.path().join(var));
        }
        let mut child = command
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let deadline = std::time::Instant::now() + ASK_TIMEOUT;
        while child.try_wait().ok()?.is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let mut out = String::new();
        child.stdout.take()?.read_to_string(&mut out).ok()?;
        Some(out)
    }

    /// The first `major.minor.patch` in `binary --version`.
    pub fn semver_of(&self, binary: &str) -> Option<(u64, u64, u64)> {
        parse_semver(&self.ask(binary, &["--version"])?)
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first `a.b.c` in `text` (`codex-cli 0.171.0`, `2.1.197 (Claude Code)`).
pub fn parse_semver(text: &str) -> Option<(u64, u64, u64)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.')).find_map(|word| {
        let mut parts = word.split('.').map(str::parse::<u64>);
        match (parts.next(), parts.next(), parts.next()) {
            (Some(Ok(a)), Some(Ok(b)), Some(Ok(c))) => Some((a, b, c)),
            _ => None,
        }
    })
}

/// How an agent reaches mailroom, and the reminder its hooks run.
pub struct Wiring {
    /// The key of mailroom's entry in each server map.
    pub name: String,
    pub transport: Transport,
    /// The reminder hook's command line; `None` with `--no-hooks`.
    pub hook: Option<String>,
}

pub enum Transport {
    /// Streamable HTTP at `url`.
    Http { url: String, auth: Auth },
    /// This binary, started by the client: `command args…`.
    Stdio { command: String, args: Vec<String> },
}

/// The bearer token a client sends over HTTP.
pub enum Auth {
    None,
    /// Written into the file as is (`HTTP_BEARER_TOKEN` when setup ran).
    Token(String),
    /// Read by the client from this environment variable when it starts (`--token-env`).
    Env(String),
}

impl Wiring {
    /// The wiring that finds what setup wrote under `name` (uninstall, status): only the
    /// name and the hooks' mark matter there.
    pub fn matching(name: &str) -> Self {
        Self {
            name: name.to_string(),
            transport: Transport::Http { url: String::new(), auth: Auth::None },
            hook: Some(super::edit::HOOK_MARK.to_string()),
        }
    }

    /// The `Authorization` header's value over HTTP, if any. `reference` spells a variable
    /// reference in the client's own syntax; `None` when the client has none, which makes
    /// `--token-env` an error for it.
    fn bearer(
        &self,
        auth: &Auth,
        reference: Option<fn(&str) -> String>,
        client: &str,
    ) -> Result<Option<String>> {
        Ok(match auth {
            Auth::None => None,
            Auth::Token(token) => Some(format!("Bearer {token}")),
            Auth::Env(name) => match reference {
                Some(reference) => Some(format!("Bearer {}", reference(name))),
                None => bail!(
                    "{client} cannot read a token from the environment; drop --token-env \
                     (setup then writes HTTP_BEARER_TOKEN's value) or leave {client} out"
                ),
            },
        })
    }

    /// The server entry most clients share: `http` (`url`, `headers`) or `stdio`
    /// (`command`, `args`), with `type` named as the client spells it.
    fn typed_entry(
        &self,
        http_type: &str,
        url_key: &str,
        reference: Option<fn(&str) -> String>,
        client: &str,
    ) -> Result<Value> {
        Ok(match &self.transport {
            Transport::Http { url, auth } => {
                let mut entry = Value::map([]);
                if !http_type.is_empty() {
                    entry = entry.with("type", Value::Str(http_type.into()));
                }
                entry = entry.with(url_key, Value::Str(url.clone()));
                if let Some(bearer) = self.bearer(auth, reference, client)? {
                    entry = entry.with("headers", authorization(bearer));
                }
                entry
            }
            Transport::Stdio { command, args } => {
                let entry = if http_type.is_empty() {
                    Value::map([])
                } else {
                    Value::map([("type", Value::Str("stdio".into()))])
                };
                entry
                    .with("command", Value::Str(command.clone()))
                    .with("args", Value::strings(args))
            }
        })
    }

    /// The reminder hooks in the Claude Code hook shape (Codex, Droid and Gemini share it),
    /// at session start and after each tool call (`after_tool`, as the client names it);
    /// `timeout` in the client's unit. With `--no-hooks`, changes that take mailroom's out.
    fn hooks(&self, after_tool: &'static str, timeout: i64, named: bool) -> Vec<Change> {
        let handler = self.hook.as_ref().map(|command| {
            let mut handler = Value::map([]);
            if named {
                handler = handler.with("name", Value::Str("mailroom".into()));
            }
            handler
                .with("type", Value::Str("command".into()))
                .with("command", Value::Str(command.clone()))
                .with("timeout", Value::Int(timeout))
        });
        ["SessionStart", after_tool]
            .into_iter()
            .map(|event| Change::Hook { event, handler: handler.clone() })
            .collect()
    }
}

/// `{"Authorization": bearer}`.
fn authorization(bearer: String) -> Value {
    Value::map([("Authorization", Value::Str(bearer))])
}

/// A server map entry under `table`.
fn server(table: Vec<&'static str>, wiring: &Wiring, entry: Value) -> Change {
    Change::Server { table, name: wiring.name.clone(), entry }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_each_clients_banner() {
        assert_eq!(parse_semver("codex-cli 0.171.0"), Some((0, 171, 0)));
        assert_eq!(parse_semver("2.1.197 (Claude Code)"), Some((2, 1, 197)));
        assert_eq!(parse_semver("0.61.0"), Some((0, 61, 0)));
        assert_eq!(parse_semver("no version"), None);
    }

    #[test]
    fn every_client_has_a_unique_name() {
        let mut names: Vec<&str> = ALL
            .iter()
            .flat_map(|c| std::iter::once(c.id).chain(c.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        assert_eq!(ALL.len(), 11);
        assert!(find("Claude").is_ok() && find("nope").is_err());
    }
}
