//! Archive benchmark: what the Git archive costs a send, measured on the core (real SQLite,
//! real Git repository in a temp dir, release build), beside the reference's budgets
//! (one message archived < 25 ms p95; a batch of 100 < 250 ms: BENCHMARKS.md, "The
//! performance budgets").
//!
//! `cargo bench -p mailroom-core --bench archive` prints three tables:
//! 1. one message at a time: reply → archive commit, p50/p95/max;
//! 2. bursts of 100 concurrent sends: commits produced and time until all are archived;
//! 3. send throughput with the archive on vs off (the baseline, same run, same machine).
//!
//! `ARCHIVE_BENCH_QUICK=1` runs a small version (a smoke test of the bench itself).
//! `ARCHIVE_BENCH_DIR=/dev/shm` puts the data dirs there (default: the system temp dir). On
//! ext4, file creation slows down for minutes after many deletions (`recently_deleted` skips
//! freshly freed inodes), so a disk busy with builds and tests gives noisy figures; tmpfs
//! shows the archive's own cost.

use std::time::{Duration, Instant};

use mailroom_core::ops::agents::Registration;
use mailroom_core::ops::messaging::SendMessage;
use mailroom_core::{CoreConfig, Mailroom};

struct Sizes {
    singles: usize,
    bursts: usize,
    burst_size: usize,
    throughput_sends: usize,
    throughput_rounds: usize,
    concurrency: usize,
}

fn sizes() -> Sizes {
    if std::env::var_os("ARCHIVE_BENCH_QUICK").is_some() {
        return Sizes {
            singles: 20,
            bursts: 2,
            burst_size: 100,
            throughput_sends: 300,
            throughput_rounds: 1,
            concurrency: 16,
        };
    }
    Sizes {
        singles: 300,
        bursts: 15,
        burst_size: 100,
        throughput_sends: 4000,
        throughput_rounds: 3,
        concurrency: 16,
    }
}

/// Temp dirs live until the process ends: deleting thousands of files between sections
/// would make ext4 skip the freshly freed inodes on every later create (`recently_deleted`),
/// slowing the next section in a way no running server sees.
fn data_dir() -> std::path::PathBuf {
    let scratch = SCRATCH.get().expect("scratch dir set in main");
    tempfile::tempdir_in(scratch).expect("temp dir").keep()
}

/// Parent of every data dir of the run; removed at exit.
static SCRATCH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

async fn open(dir: &std::path::Path, archive: bool) -> Mailroom {
    let mut config = CoreConfig::for_data_dir(dir);
    config.archive.enabled = archive;
    let core = Mailroom::open(config).expect("open core");
    core.ensure_project("/bench/archive").await.expect("project");
    for name in ["BlueLake", "GreenCastle"] {
        core.register_agent(Registration {
            project_key: "bench-archive".into(),
            program: "bench".into(),
            model: "bench".into(),
            name: Some(name.into()),
            ..Registration::default()
        })
        .await
        .expect("register");
    }
    core.set_contact_policy("bench-archive".into(), "GreenCastle".into(), "open".into())
        .await
        .expect("policy");
    flushed(&core).await;
    core
}

async fn flushed(core: &Mailroom) {
    if let Some(archive) = core.archive() {
        archive.flushed().await;
    }
}

async fn send(core: &Mailroom, i: usize) {
    core.send_message(SendMessage {
        project_key: "bench-archive".into(),
        sender_name: "BlueLake".into(),
        to: vec!["GreenCastle".into()],
        subject: format!("Benchmark message {i}"),
        body_md: format!("Body of message {i}.\n\nA second paragraph, as agents write them."),
        thread_id: Some(format!("T-{}", i % 10)),
        ..SendMessage::default()
    })
    .await
    .expect("send");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

async fn single_messages(sizes: &Sizes) {
    let dir = data_dir();
    let core = open(&dir, true).await;
    let mut latencies = Vec::with_capacity(sizes.singles);
    for i in 0..sizes.singles {
        send(&core, i).await;
        let replied = Instant::now();
        flushed(&core).await;
        latencies.push(replied.elapsed());
    }
    latencies.sort();
    println!(
        "## 1. One message at a time: reply → committed to the archive ({} sends)",
        sizes.singles
    );
    println!(
        "p50 {}  p95 {}  max {}   (reference budget: p95 < 25 ms)",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.95)),
        ms(latencies[latencies.len() - 1])
    );
    core.close();
}

async fn bursts(sizes: &Sizes) {
    let dir = data_dir();
    let core = open(&dir, true).await;
    let mut commits = Vec::new();
    let mut totals = Vec::new();
    let mut after_last_reply = Vec::new();
    for burst in 0..sizes.bursts {
        let before = core.archive().expect("archive").stats().commits;
        let started = Instant::now();
        let sends = (0..sizes.burst_size).map(|i| {
            let core = core.clone();
            tokio::spawn(async move { send(&core, burst * 1000 + i).await })
        });
        for task in sends.collect::<Vec<_>>() {
            task.await.expect("send task");
        }
        let last_reply = Instant::now();
        flushed(&core).await;
        totals.push(started.elapsed());
        after_last_reply.push(last_reply.elapsed());
        commits.push(core.archive().expect("archive").stats().commits - before);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    totals.sort();
    after_last_reply.sort();
    commits.sort();
    println!("\n## 2. Bursts of {} concurrent sends ({} bursts)", sizes.burst_size, sizes.bursts);
    println!(
        "commits per burst: median {}  max {}   (target ≤ 5)",
        commits[commits.len() / 2],
        commits[commits.len() - 1]
    );
    println!(
        "first send → all archived: median {}  p95 {}   (reference budget < 250 ms)",
        ms(percentile(&totals, 0.5)),
        ms(percentile(&totals, 0.95))
    );
    println!(
        "last reply → all archived: median {}  p95 {}   (target ≤ 60 ms)",
        ms(percentile(&after_last_reply, 0.5)),
        ms(percentile(&after_last_reply, 0.95))
    );
    core.close();
}

/// Sends `n` messages from `concurrency` tasks; returns (acknowledged/s, archived/s).
async fn throughput_round(archive: bool, sizes: &Sizes) -> (f64, f64) {
    let dir = data_dir();
    let core = open(&dir, archive).await;
    let per_task = sizes.throughput_sends / sizes.concurrency;
    let started = Instant::now();
    let tasks: Vec<_> = (0..sizes.concurrency)
        .map(|t| {
            let core = core.clone();
            tokio::spawn(async move {
                for i in 0..per_task {
                    send(&core, t * per_task + i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("send task");
    }
    let acknowledged = started.elapsed();
    flushed(&core).await;
    let archived = started.elapsed();
    let sent = (per_task * sizes.concurrency) as f64;
    core.close();
    (sent / acknowledged.as_secs_f64(), sent / archived.as_secs_f64())
}

async fn throughput(sizes: &Sizes) {
    let (mut on, mut on_drained, mut off) = (Vec::new(), Vec::new(), Vec::new());
    // Alternate the two modes so drift on a noisy machine hits both alike.
    for _ in 0..sizes.throughput_rounds {
        let (ack, drained) = throughput_round(true, sizes).await;
        on.push(ack);
        on_drained.push(drained);
        off.push(throughput_round(false, sizes).await.0);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (on, on_drained, off) = (median(&mut on), median(&mut on_drained), median(&mut off));
    println!(
        "\n## 3. Send throughput, {} sends from {} tasks, median of {} rounds",
        sizes.throughput_sends, sizes.concurrency, sizes.throughput_rounds
    );
    println!("archive off (baseline): {off:.0} sends/s");
    println!(
        "archive on:             {on:.0} sends/s acknowledged, {on_drained:.0} sends/s including the archive drain"
    );
    println!(
        "cost of archiving: {:.1} % of acknowledged throughput (target ≤ 20 %)",
        (1.0 - on / off) * 100.0
    );
}

fn main() {
    let sizes = sizes();
    let scratch = match std::env::var_os("ARCHIVE_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir),
        None => tempfile::tempdir(),
    }
    .expect("scratch dir");
    SCRATCH.set(scratch.path().to_path_buf()).expect("set once");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        single_messages(&sizes).await;
        bursts(&sizes).await;
        throughput(&sizes).await;
    });
    drop(runtime);
    // Removing the scratch dir (all data dirs) is left to `scratch`'s drop, after measuring.
}
