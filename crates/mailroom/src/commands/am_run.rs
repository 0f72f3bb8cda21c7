//! `mailroom am-run SLOT -- CMD…`: runs a command holding a build slot (the reference's
//! `am-run`): acquires the slot (acquire_build_slot, on the running server or the data
//! directory), prints the other holders, refuses to start with `--block-on-conflicts` when
//! there are any, renews the lease every half TTL while the command runs, releases it when the
//! command ends, and exits with the command's exit code. The command gets `amctl env`'s
//! variables. Build slots exist with `WORKTREES_ENABLED`.

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};

use super::amctl::{BuildEnv, EnvArgs};
use super::backend::Backend;
use super::output::{cell, items};
use super::shared;

/// `mailroom am-run`.
#[derive(Args, Debug)]
pub struct AmRunArgs {
    /// The slot, e.g. frontend-build
    slot: String,
    /// The command and its arguments (after `--`)
    #[arg(last = true, required = true)]
    command: Vec<String>,
    #[command(flatten)]
    env: EnvArgs,
    /// The agent's registration token, when the server asks for one
    #[arg(long, alias = "registration_token")]
    registration_token: Option<String>,
    /// The lease's lifetime, renewed every half of it while the command runs
    #[arg(long, default_value_t = 3600, alias = "ttl_seconds")]
    ttl_seconds: i64,
    /// Share the slot instead of holding it alone
    #[arg(long)]
    shared: bool,
    /// Do not start the command when another agent holds the slot
    #[arg(long, alias = "block_on_conflicts")]
    block_on_conflicts: bool,
}

/// Runs the command in the slot; its exit code.
pub fn run(args: AmRunArgs) -> Result<ExitCode> {
    shared::agent_dotenv(args.env.data_dir.clone())?;
    let env = BuildEnv::of(&args.env)?;
    let agent = env
        .agent
        .clone()
        .context("name the agent: --agent NAME or the AGENT_NAME environment variable")?;
    let lease = json!({"project_key": env.project, "agent_name": agent, "slot": args.slot,
        "branch": env.branch, "registration_token": args.registration_token});
    let vars = env.variables();
    let slot = Slot { data_dir: shared::data_dir(args.env.data_dir.clone()), lease };
    let mut acquire = slot.lease.clone();
    acquire["ttl_seconds"] = json!(args.ttl_seconds);
    acquire["exclusive"] = json!(!args.shared);
    let granted = slot.call("acquire_build_slot", acquire).map_err(|e| {
        if format!("{e:#}").contains("Unknown tool") {
            e.context(
                "build slots need WORKTREES_ENABLED=true where the server (or this command) runs",
            )
        } else {
            e
        }
    })?;
    let conflicts = items(&granted["conflicts"]);
    for other in conflicts {
        eprintln!(
            "am-run: slot {} also held by {} ({}) until {}",
            args.slot,
            cell(&other["agent"]),
            cell(&other["branch"]),
            cell(&other["expires_ts"])
        );
    }
    if args.block_on_conflicts && !conflicts.is_empty() {
        slot.call("release_build_slot", slot.lease.clone())?;
        bail!("slot {} is held by others; not running (--block-on-conflicts)", args.slot);
    }
    let code = run_renewing(&slot, &args, &vars);
    if let Err(e) = slot.call("release_build_slot", slot.lease.clone()) {
        eprintln!("am-run: could not release slot {}: {e:#}", args.slot);
    }
    code
}

/// The lease held, and where to ask about it.
struct Slot {
    data_dir: std::path::PathBuf,
    lease: Value,
}

impl Slot {
    /// One call, on a backend opened for it: with no server running, the data directory is
    /// held only for the call, never while the command runs (a server may start meanwhile).
    fn call(&self, tool: &str, arguments: Value) -> Result<Value> {
        Backend::open(&self.data_dir, false)?.call_tool(tool, arguments)
    }
}

/// Runs the command with the variables, renewing the lease every half TTL until it ends;
/// SIGINT, SIGTERM and SIGHUP go on to the command, whose end releases the slot as usual.
fn run_renewing(slot: &Slot, args: &AmRunArgs, vars: &[(&str, String)]) -> Result<ExitCode> {
    let signals = Signals::listen()?;
    let mut child = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .spawn()
        .with_context(|| format!("cannot run {}", args.command[0]))?;
    signals.forward_to(child.id());
    let every = Duration::from_secs(u64::try_from((args.ttl_seconds / 2).max(1)).unwrap_or(1));
    let (done, ended) = mpsc::channel::<std::io::Result<std::process::ExitStatus>>();
    let waiter = std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = loop {
        match ended.recv_timeout(every) {
            Ok(status) => break status.context("waiting for the command failed")?,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let mut renew = slot.lease.clone();
                renew["extend_seconds"] = json!(args.ttl_seconds.max(60));
                if let Err(e) = slot.call("renew_build_slot", renew) {
                    eprintln!("am-run: could not renew slot {}: {e:#}", args.slot);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("lost track of the command"),
        }
    };
    let _ = waiter.join();
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Killed by a signal: the shell's convention, 128 + the signal.
        None => {
            use std::os::unix::process::ExitStatusExt as _;
            ExitCode::from(u8::try_from(128 + status.signal().unwrap_or(0)).unwrap_or(1))
        }
    })
}

/// SIGINT, SIGTERM and SIGHUP taken over from their default (which would end am-run with
/// the slot still held), to be passed on to the command.
struct Signals {
    runtime: tokio::runtime::Runtime,
    streams: [tokio::signal::unix::Signal; 3],
}

impl Signals {
    fn listen() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let streams = runtime.block_on(async {
            Ok::<_, std::io::Error>([
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
                signal(SignalKind::hangup())?,
            ])
        })?;
        Ok(Self { runtime, streams })
    }

    /// Passes every signal that comes on to `pid`, on a thread of its own.
    fn forward_to(self, pid: u32) {
        let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
            return;
        };
        let Self { runtime, streams: [mut int, mut term, mut hup] } = self;
        std::thread::spawn(move || {
            runtime.block_on(async move {
                loop {
                    let signal = tokio::select! {
                        _ = int.recv() => rustix::process::Signal::INT,
                        _ = term.recv() => rustix::process::Signal::TERM,
                        _ = hup.recv() => rustix::process::Signal::HUP,
                    };
                    let _ = rustix::process::kill_process(pid, signal);
                }
            });
        });
    }
}
