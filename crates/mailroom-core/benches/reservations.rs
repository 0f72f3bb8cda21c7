//! Reservation benchmark: the latency of `file_reservation_paths` in a busy project, measured
//! on the core (real SQLite, real Git archive in a temp dir, release build). The project
//! holds 1,000 active reservations of ten other agents (files and globs); one more agent
//! then reserves paths one call at a time, some of which conflict, and releases each grant
//! after it is timed, so the project holds 1,000 (during a call, 1,001) reservations in force
//! throughout. Target: p99 ≤ 1 ms.
//!
//! `cargo bench -p mailroom-core --bench reservations` prints p50/p99/max over the calls.
//! `RESERVATIONS_BENCH_QUICK=1` runs a small version (a smoke test of the bench itself);
//! `RESERVATIONS_BENCH_ARCHIVE=0` runs without the Git archive.

use std::time::{Duration, Instant};

use mailroom_core::ops::agents::Registration;
use mailroom_core::ops::reservations::{ReservePaths, Selection};
use mailroom_core::{CoreConfig, Mailroom};

/// Agents holding the background reservations, and reservations each.
const HOLDERS: usize = 10;
const PER_HOLDER: usize = 100;
const PROJECT: &str = "/bench/reservations";
/// Untimed calls first (caches, allocator, the first load of the project's reservations).
const WARM_UP: usize = 50;

async fn register(core: &Mailroom) -> String {
    let agent = core
        .register_agent(Registration {
            project_key: PROJECT.into(),
            program: "bench".into(),
            model: "bench".into(),
            ..Registration::default()
        })
        .await
        .expect("register");
    agent.base.name
}

async fn reserve(core: &Mailroom, agent: &str, paths: Vec<String>) {
    core.file_reservation_paths(ReservePaths {
        project_key: PROJECT.into(),
        agent_name: agent.into(),
        paths,
        ttl_seconds: 3600,
        exclusive: true,
        reason: "bench".into(),
    })
    .await
    .expect("reserve");
}

/// A holder's background reservations: mostly files, every tenth a directory glob.
fn holder_paths(holder: usize) -> Vec<String> {
    (0..PER_HOLDER)
        .map(|j| match j % 10 {
            0 => format!("crate{holder}/mod{j}/**"),
            _ => format!("crate{holder}/mod{}/file{j}.rs", j / 10),
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn run(calls: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = CoreConfig::for_data_dir(dir.path());
    // `RESERVATIONS_BENCH_ARCHIVE=0` leaves the Git archive out, to see the check alone.
    config.archive.enabled = std::env::var("RESERVATIONS_BENCH_ARCHIVE").map_or(true, |v| v != "0");
    let core = Mailroom::open(config).expect("open core");
    core.ensure_project(PROJECT).await.expect("project");
    for holder in 0..HOLDERS {
        let name = register(&core).await;
        reserve(&core, &name, holder_paths(holder)).await;
    }
    let me = register(&core).await;
    if let Some(archive) = core.archive() {
        archive.flushed().await;
    }
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..WARM_UP + calls {
        // One in four asks for a file under another agent's glob: a reported conflict.
        let path = if i % 4 == 0 {
            format!("crate{}/mod0/new{i}.rs", i % HOLDERS)
        } else {
            format!("mine/area{}/file{i}.rs", i % 50)
        };
        let started = Instant::now();
        reserve(&core, &me, vec![path]).await;
        if i >= WARM_UP {
            latencies.push(started.elapsed());
        }
        // Untimed: the grant goes, so the count in force stays at the background's.
        core.release_file_reservations(PROJECT.into(), me.clone(), Selection::default())
            .await
            .expect("release");
    }
    let in_force = core.list_file_reservations(PROJECT.into(), true).await.expect("list").len();
    assert_eq!(in_force, HOLDERS * PER_HOLDER, "the bench must hold the count in force steady");
    latencies.sort_unstable();
    println!(
        "file_reservation_paths, {} reservations in force, {calls} calls: \
         p50 {}  p99 {}  max {}",
        HOLDERS * PER_HOLDER,
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies[latencies.len() - 1]),
    );
    if let Some(archive) = core.archive() {
        archive.flushed().await;
    }
    core.close();
}

fn main() {
    let calls = if std::env::var_os("RESERVATIONS_BENCH_QUICK").is_some() { 100 } else { 2000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(calls));
}
