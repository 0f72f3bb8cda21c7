//! `mailroom bench archive-growth`: fills a data directory with N messages through the core's
//! own write path in this process (the ops, the database writer, the archive writer and its
//! Git engine: the server's code without HTTP), then times how long batches of messages take
//! to reach Git. The mix is fixed by each message's number, so a run to 1,000,000 continues
//! one to 100,000 where it stopped (the state file counts what was generated, written after
//! each chunk is committed: a run killed mid-chunk sends that chunk's messages again when
//! resumed, so the database then holds up to a chunk more than the state file says).
//!
//! scripts/bench-archive-sizes measures the server on the data directories this makes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::Mailroom;
use mailroom_core::ops::agents::Registration;
use mailroom_core::ops::messaging::SendMessage;
use serde::{Deserialize, Serialize};

use super::shared;

/// The generator's record of what it wrote, in the data directory.
const STATE_FILE: &str = "archive-growth.json";
/// Messages between two waits for the archive (and two writes of the state file).
const CHUNK: u64 = 10_000;
/// Sends in flight at once.
const IN_FLIGHT: u64 = 32;
/// Agent names: words of the reference's lists (`model::names`), distinct in a project.
const ADJECTIVES: [&str; 8] = ["Blue", "Green", "Red", "Amber", "Silver", "Gold", "Misty", "Quiet"];
const NOUNS: [&str; 8] = ["Lake", "Castle", "Stone", "River", "Hill", "Forest", "Harbor", "Meadow"];
/// Words of the generated bodies.
const WORDS: [&str; 16] = [
    "build",
    "test",
    "the",
    "archive",
    "reservation",
    "merge",
    "review",
    "fix",
    "module",
    "index",
    "commit",
    "deploy",
    "agent",
    "thread",
    "please",
    "done",
];

#[derive(Args, Debug)]
pub struct GrowthArgs {
    /// The data directory to fill (created if missing; no server may be running on it).
    #[arg(long, value_name = "DIR")]
    data_dir: PathBuf,
    /// Messages the data directory should hold when done (those generated before count).
    #[arg(long, value_name = "N")]
    messages: u64,
    /// Projects the messages are spread over (fixed by the first run).
    #[arg(long, default_value_t = 4)]
    projects: u32,
    /// Agents in each project, at most 64 (fixed by the first run).
    #[arg(long, default_value_t = 16)]
    agents: u32,
    /// Rounds of the latency probe after filling: each sends --probe-size messages, then
    /// times how long the archive takes to commit them.
    #[arg(long, default_value_t = 5)]
    probe_rounds: u32,
    /// Messages per probe round.
    #[arg(long, default_value_t = 200)]
    probe_size: u64,
}

/// What the data directory holds, as generated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    projects: u32,
    agents: u32,
    /// Messages generated (numbered 0..messages).
    messages: u64,
}

/// One generated message, decided by its number alone.
#[derive(Debug, Clone, PartialEq)]
struct Planned {
    project: u32,
    sender: u32,
    to: Vec<u32>,
    cc: Vec<u32>,
    thread: Option<String>,
    subject: String,
    body: String,
}

/// Message `n` of a data directory of `projects` × `agents`: one to three recipients (most
/// often one), a cc one time in five, half of them in threads of about four, bodies of 20
/// to 200 words (about 700 bytes on average: ten million messages then fit this machine's
/// disk with their database, search index and packs; 40 to 400 before issue 40's 10M run).
fn plan(n: u64, projects: u32, agents: u32) -> Planned {
    let mut rng = fastrand::Rng::with_seed(n);
    let project = (n % u64::from(projects)) as u32;
    let sender = rng.u32(0..agents);
    let others = |rng: &mut fastrand::Rng, count: usize, taken: &[u32]| {
        let mut picked = Vec::with_capacity(count);
        while picked.len() < count {
            let agent = rng.u32(0..agents);
            if agent != sender && !taken.contains(&agent) && !picked.contains(&agent) {
                picked.push(agent);
            }
        }
        picked
    };
    let wanted = match rng.u32(0..10) {
        0..6 => 1,
        6..9 => 2,
        _ => 3,
    };
    let to = others(&mut rng, wanted.min(agents as usize - 1), &[]);
    let cc_wanted = usize::from(rng.u32(0..5) == 0 && agents as usize > to.len() + 1);
    let cc = others(&mut rng, cc_wanted, &to);
    let thread = rng.bool().then(|| format!("GROWTH-{}-{}", project, n / 8 / u64::from(projects)));
    let words = rng.usize(20..=200);
    let mut body = String::with_capacity(words * 7);
    for i in 0..words {
        body.push_str(if i % 12 == 11 {
            ".\n"
        } else if i > 0 {
            " "
        } else {
            ""
        });
        body.push_str(WORDS[rng.usize(0..WORDS.len())]);
    }
    Planned { project, sender, to, cc, thread, subject: format!("Growth message {n}"), body }
}

fn project_key(project: u32) -> String {
    format!("/growth/project-{project}")
}

fn agent_name(agent: u32) -> String {
    let agent = agent as usize;
    format!("{}{}", ADJECTIVES[agent / NOUNS.len()], NOUNS[agent % NOUNS.len()])
}

fn read_state(data_dir: &Path) -> Result<Option<State>> {
    let path = data_dir.join(STATE_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is not the generator's state", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn write_state(data_dir: &Path, state: &State) -> Result<()> {
    let path = data_dir.join(STATE_FILE);
    let temp = data_dir.join(format!(".{STATE_FILE}.tmp"));
    std::fs::write(&temp, serde_json::to_vec(state)?)
        .and_then(|()| std::fs::rename(&temp, &path))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Runs `mailroom bench archive-growth`.
pub fn run(args: GrowthArgs) -> Result<()> {
    if !(2..=64).contains(&args.agents) {
        bail!("--agents must be from 2 to 64");
    }
    if args.projects == 0 {
        bail!("--projects must be at least 1");
    }
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    let state = match read_state(&args.data_dir)? {
        Some(state) if (state.projects, state.agents) != (args.projects, args.agents) => bail!(
            "{} was generated with --projects {} --agents {}; pass those to continue it",
            args.data_dir.display(),
            state.projects,
            state.agents
        ),
        Some(state) => state,
        None => State { projects: args.projects, agents: args.agents, messages: 0 },
    };
    let _lock = shared::lock_data_dir(&args.data_dir)?;
    let mut config = shared::core_config(&args.data_dir)?;
    let _database = shared::lock_database(&config.database_path, shared::Missing::Create)?;
    // Every message is between agents of one project: no contact handshakes to make.
    config.contact_enforcement_enabled = false;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let core = Arc::new(Mailroom::open(config)?);
    let result = runtime.block_on(generate(&core, &args, state));
    if let Some(archive) = core.archive() {
        archive.close();
    }
    result
}

async fn generate(core: &Arc<Mailroom>, args: &GrowthArgs, mut state: State) -> Result<()> {
    if state.messages == 0 {
        register(core, &state).await?;
    }
    let started = Instant::now();
    let from = state.messages;
    while state.messages < args.messages {
        let (chunk_started, chunk_from) = (Instant::now(), state.messages);
        let end = args.messages.min(state.messages + CHUNK);
        send_range(core, &state, state.messages, end).await?;
        flushed(core).await?;
        state.messages = end;
        write_state(&args.data_dir, &state)?;
        let secs = chunk_started.elapsed().as_secs_f64();
        let total = started.elapsed().as_secs_f64();
        println!(
            "{end} messages: this chunk {:.0} msg/s, since start {:.0} msg/s, {} commits",
            (end - chunk_from) as f64 / secs,
            (end - from) as f64 / total,
            core.archive().map_or(0, |a| a.stats().commits),
        );
    }
    probe(core, args, &mut state).await
}

/// Registers every project's agents.
async fn register(core: &Mailroom, state: &State) -> Result<()> {
    for project in 0..state.projects {
        core.ensure_project(&project_key(project)).await?;
        for agent in 0..state.agents {
            let registration = Registration {
                project_key: project_key(project),
                program: "archive-growth".into(),
                model: "generated".into(),
                name: Some(agent_name(agent)),
                task_description: "fills the archive for measurements".into(),
                ..Registration::default()
            };
            core.register_agent(registration).await?;
        }
    }
    Ok(())
}

/// Sends messages `from..to`, `IN_FLIGHT` at a time (the archive queue's backpressure paces
/// them to what the archive writer commits).
async fn send_range(core: &Arc<Mailroom>, state: &State, from: u64, to: u64) -> Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..IN_FLIGHT {
        let (core, state) = (Arc::clone(core), state.clone());
        tasks.spawn(async move {
            let mut n = from + lane;
            while n < to {
                send(&core, &state, n).await?;
                n += IN_FLIGHT;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.context("a sending task failed")??;
    }
    Ok(())
}

async fn send(core: &Mailroom, state: &State, n: u64) -> Result<()> {
    let planned = plan(n, state.projects, state.agents);
    let names = |agents: &[u32]| agents.iter().map(|&a| agent_name(a)).collect();
    let send = SendMessage {
        project_key: project_key(planned.project),
        sender_name: agent_name(planned.sender),
        to: names(&planned.to),
        cc: names(&planned.cc),
        subject: planned.subject,
        body_md: planned.body,
        thread_id: planned.thread,
        ..SendMessage::default()
    };
    let outcome = core.send_message(send).await.with_context(|| format!("message {n}"))?;
    if let Some(failure) = outcome.failure() {
        bail!("message {n} was refused: {}", serde_json::to_string(&failure)?);
    }
    Ok(())
}

/// Waits until the archive has committed everything sent.
async fn flushed(core: &Mailroom) -> Result<()> {
    let Some(archive) = core.archive() else { bail!("the archive is disabled (ARCHIVE_ENABLED)") };
    archive.flushed().await;
    match archive.trouble() {
        Some(trouble) => bail!("the archive did not keep up: {trouble}"),
        None => Ok(()),
    }
}

/// Rounds of `probe_size` messages, each sent then timed until committed: the archive
/// writer's latency per batch at this size (its quiet gap of milliseconds included).
async fn probe(core: &Arc<Mailroom>, args: &GrowthArgs, state: &mut State) -> Result<()> {
    let mut latencies = Vec::new();
    for _ in 0..args.probe_rounds {
        let commits = core.archive().map_or(0, |a| a.stats().commits);
        let end = state.messages + args.probe_size;
        send_range(core, state, state.messages, end).await?;
        let sent = Instant::now();
        flushed(core).await?;
        let ms = sent.elapsed().as_secs_f64() * 1e3;
        state.messages = end;
        write_state(&args.data_dir, state)?;
        let commits = core.archive().map_or(0, |a| a.stats().commits) - commits;
        latencies.push(ms);
        let size = args.probe_size;
        println!("probe: {size} messages sent, archived {ms:.0} ms later ({commits} commits)");
    }
    if !latencies.is_empty() {
        latencies.sort_by(f64::total_cmp);
        println!(
            "probe median {:.0} ms, max {:.0} ms; the data directory holds {} generated messages",
            latencies[latencies.len() / 2],
            latencies[latencies.len() - 1],
            state.messages
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_decided_by_its_number_alone() {
        assert_eq!(plan(12_345, 4, 16), plan(12_345, 4, 16));
        assert_ne!(plan(12_345, 4, 16), plan(12_346, 4, 16));
    }

    #[test]
    fn recipients_are_distinct_agents_of_the_project_other_than_the_sender() {
        for agents in [2, 3, 16, 64] {
            for n in 0..2_000 {
                let m = plan(n, 3, agents);
                assert_eq!(m.project, (n % 3) as u32);
                assert!(!m.to.is_empty() && m.to.len() <= 3, "{m:?}");
                let everyone: Vec<u32> = m.to.iter().chain(&m.cc).copied().collect();
                for (i, agent) in everyone.iter().enumerate() {
                    assert!(*agent < agents && *agent != m.sender, "{m:?}");
                    assert!(!everyone[i + 1..].contains(agent), "{m:?}");
                }
            }
        }
    }

    #[test]
    fn the_mix_is_the_one_documented() {
        let messages: Vec<Planned> = (0..10_000).map(|n| plan(n, 4, 16)).collect();
        let share = |f: &dyn Fn(&Planned) -> bool| {
            messages.iter().filter(|m| f(m)).count() as f64 / messages.len() as f64
        };
        let near = |value: f64, expected: f64| (value - expected).abs() < 0.03;
        assert!(near(share(&|m| m.to.len() == 1), 0.6));
        assert!(near(share(&|m| m.to.len() == 3), 0.1));
        assert!(near(share(&|m| !m.cc.is_empty()), 0.2));
        assert!(near(share(&|m| m.thread.is_some()), 0.5));
        let threads: std::collections::HashSet<&String> =
            messages.iter().filter_map(|m| m.thread.as_ref()).collect();
        let per_thread =
            share(&|m| m.thread.is_some()) * messages.len() as f64 / threads.len() as f64;
        assert!((3.5..4.5).contains(&per_thread), "{per_thread} messages per thread");
        let words = |m: &Planned| m.body.split_whitespace().count();
        assert!(messages.iter().all(|m| (20..=200).contains(&words(m))));
    }

    #[test]
    fn agent_names_are_distinct_and_valid() {
        let names: std::collections::HashSet<String> = (0..64).map(agent_name).collect();
        assert_eq!(names.len(), 64);
        for name in &names {
            assert!(mailroom_core::model::names::is_valid_adjective_noun(name), "{name}");
        }
    }
}
