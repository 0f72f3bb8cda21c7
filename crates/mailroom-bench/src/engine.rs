//! The load engine: N workers, each with its own keep-alive connection, sending the
//! scenario's request closed-loop (as fast as answers come) or on a fixed-rate schedule.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use bytes::Bytes;
use hyper::StatusCode;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::error::Elapsed;
use tokio::time::{Instant, sleep, sleep_until, timeout};

use crate::client::{Call, Connection, SendError};
use crate::monitor::{self, MonitorReport};
use crate::push::PushOptions;
use crate::report::{BaselineFigures, GroupReport, Report};
use crate::scenario::{
    Choice, MixedLoad, Plan, Scenario, SearchOptions, Seeding, Via, judge, prepare, prepare_mixed,
};
use crate::stats::{Failure, Pacer, Recorder, corrected_latency};
use crate::target::Target;

/// A pause after a refused connection, so a dead target is not hammered in a tight loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);
/// A pause before asking a plan's picker again when every call was busy.
const BUSY_PAUSE: Duration = Duration::from_millis(1);

/// The parameters of one run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub target: Target,
    pub scenario: Scenario,
    pub via: Via,
    /// Concurrent connections (forced to 1 by the sequential scenario).
    pub concurrency: usize,
    /// Stop sending after this long (`None`: only `requests` stops the run).
    pub duration: Option<Duration>,
    /// Requests per second in total; `None` runs closed-loop.
    pub rate: Option<f64>,
    /// Stop after this many requests in total.
    pub requests: Option<u64>,
    /// A request not answered in time counts as a timeout and its connection is replaced.
    pub timeout: Duration,
    /// Messages sent to each inbox before `inbox`, `search` and `mixed` runs.
    pub seed_messages: usize,
    /// What the search scenario searches for, and where.
    pub search: SearchOptions,
    /// The groups of the mixed scenario (`concurrency` does not apply to it).
    pub mixed: MixedLoad,
    /// The push scenario's subscribers and how they are told.
    pub push: PushOptions,
    /// What `--dataset` created before the run, for the report (the lab does not create it
    /// per run: profiles run several times on one dataset).
    pub dataset: Option<serde_json::Value>,
    /// Sample this process (the server) from /proc during the run.
    pub monitor_pid: Option<u32>,
    /// How often the monitor samples.
    pub monitor_interval: Duration,
    /// Print a live progress line on stderr (only when stderr is a terminal).
    pub progress: bool,
}

impl RunConfig {
    /// A closed-loop run of `scenario` against `target` with the lab's defaults.
    pub fn new(target: Target, scenario: Scenario) -> Self {
        Self {
            target,
            scenario,
            via: Via::Mcp,
            concurrency: 10,
            duration: Some(Duration::from_secs(10)),
            rate: None,
            requests: None,
            timeout: Duration::from_secs(5),
            seed_messages: 20,
            search: SearchOptions::default(),
            mixed: MixedLoad::default(),
            push: PushOptions::default(),
            dataset: None,
            monitor_pid: None,
            monitor_interval: Duration::from_secs(5),
            progress: false,
        }
    }

    /// Connections the run opens in total.
    fn workers(&self) -> usize {
        match self.scenario {
            Scenario::Sequential => 1,
            Scenario::Mixed => {
                self.mixed.writers + self.mixed.readers + self.mixed.celebrity_readers
            }
            _ => self.concurrency.max(1),
        }
    }
}

/// Counters the workers share with the progress line and each other.
struct Shared {
    requests: AtomicU64,
    errors: AtomicU64,
    /// Requests still allowed when the run is bounded by a count.
    budget: Option<AtomicU64>,
    stopped: AtomicBool,
    /// Wakes the progress task at the end of the run, so it does not wait for its next tick.
    done: Notify,
}

impl Shared {
    /// Takes one request from the budget; false when the run is over.
    fn take(&self) -> bool {
        match &self.budget {
            None => true,
            Some(budget) => budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// Runs the setup phase, then the load; returns the report.
pub async fn run(config: &RunConfig) -> Result<Report> {
    if config.duration.is_none() && config.requests.is_none() {
        bail!("a run needs a duration or a request count");
    }
    if config.rate.is_some_and(|rate| !(rate > 0.0 && rate.is_finite())) {
        bail!("--rate must be a positive number of requests per second");
    }
    let workers = config.workers();
    if workers == 0 {
        bail!("a run needs at least one connection");
    }
    if config.scenario == Scenario::Push {
        return crate::push::run(config, workers).await;
    }
    let (groups, setup) = if config.scenario == Scenario::Mixed {
        let prepared =
            prepare_mixed(&config.target, config.via, config.mixed, config.seed_messages).await?;
        (prepared.groups, Some(prepared.setup))
    } else {
        let seeding = Seeding { messages: config.seed_messages, search: &config.search };
        let prepared = prepare(&config.target, config.scenario, config.via, seeding).await?;
        (vec![(config.scenario.to_string(), workers, prepared.plan)], prepared.setup)
    };
    let outcome = drive(config, &groups, workers).await;
    let mut report = Report::new(config, workers, setup, outcome.total, outcome.timeline);
    report.monitor = outcome.monitor;
    report.dataset = config.dataset.clone();
    if config.scenario == Scenario::Mixed {
        report.groups = groups
            .iter()
            .zip(outcome.groups)
            .map(|((name, concurrency, _), summary)| GroupReport {
                name: name.clone(),
                concurrency: *concurrency,
                summary,
            })
            .collect();
    }
    Ok(report)
}

pub(crate) struct Outcome {
    pub(crate) total: crate::stats::Summary,
    pub(crate) groups: Vec<crate::stats::Summary>,
    pub(crate) timeline: Vec<u64>,
    pub(crate) monitor: Option<MonitorReport>,
}

/// Measures the baseline server at `baseline` with the same connections, duration and rate
/// (a GET closed-loop or at the rate), then runs `config`; the report carries both, and the
/// run's throughput as a ratio of the baseline's, measured in the same conditions.
pub async fn run_with_baseline(config: &RunConfig, baseline: &Target) -> Result<Report> {
    let mut ceiling = RunConfig::new(baseline.clone(), Scenario::Health);
    ceiling.concurrency = config.workers();
    ceiling.duration = config.duration;
    ceiling.rate = config.rate;
    ceiling.requests = config.requests;
    ceiling.timeout = config.timeout;
    let ceiling = run(&ceiling).await?;
    let mut report = run(config).await?;
    report.baseline = Some(BaselineFigures::new(&ceiling, report.summary.rps));
    Ok(report)
}

/// Opens every connection, starts the clock, runs all groups' workers together and merges
/// their recorders per group and in total.
pub(crate) async fn drive(
    config: &RunConfig,
    groups: &[(String, usize, Plan)],
    workers: usize,
) -> Outcome {
    let connections = open_connections(&config.target.authority, workers).await;
    let shared = Arc::new(Shared {
        requests: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        budget: config.requests.map(AtomicU64::new),
        stopped: AtomicBool::new(false),
        done: Notify::new(),
    });
    let start = Instant::now();
    let draw = config.progress && std::io::stderr().is_terminal();
    let progress = tokio::spawn(watch(shared.clone(), draw));
    let monitor =
        config.monitor_pid.map(|pid| Monitoring::start(pid, config.monitor_interval, start));
    let tasks = spawn_workers(config, groups, workers, connections, &shared, start);
    let mut per_group: Vec<Recorder> = groups.iter().map(|_| Recorder::new()).collect();
    for (group, task) in tasks {
        // A worker that panicked loses its counts; the run still reports the others.
        if let Ok(recorder) = task.await {
            per_group[group].merge(&recorder);
        }
    }
    let elapsed = start.elapsed();
    shared.stopped.store(true, Ordering::Relaxed);
    shared.done.notify_one();
    let _ = progress.await;
    let monitor = match monitor {
        Some(monitoring) => monitoring.stop().await,
        None => None,
    };
    let mut total = Recorder::new();
    for recorder in &per_group {
        total.merge(recorder);
    }
    Outcome {
        total: total.summary(elapsed),
        groups: per_group.iter().map(|r| r.summary(elapsed)).collect(),
        timeline: total.timeline(elapsed),
        monitor,
    }
}

/// Opens the workers' connections before the clock starts, as wrk does, so the first
/// requests do not pay for the handshakes. A failed one is retried (and counted) by its worker.
async fn open_connections(authority: &str, workers: usize) -> Vec<Option<Connection>> {
    let mut opening = Vec::with_capacity(workers);
    for _ in 0..workers {
        let authority = authority.to_string();
        opening.push(tokio::spawn(async move { Connection::open(&authority).await.ok() }));
    }
    let mut connections = Vec::with_capacity(workers);
    for task in opening {
        connections.push(task.await.ok().flatten());
    }
    connections
}

/// Spawns every group's workers; returns each task with its group's index.
fn spawn_workers(
    config: &RunConfig,
    groups: &[(String, usize, Plan)],
    workers: usize,
    connections: Vec<Option<Connection>>,
    shared: &Arc<Shared>,
    start: Instant,
) -> Vec<(usize, JoinHandle<Recorder>)> {
    let mut tasks = Vec::with_capacity(workers);
    let mut connections = connections.into_iter();
    let mut index = 0;
    for (group, (_, concurrency, plan)) in groups.iter().enumerate() {
        let plan = Arc::new(plan.clone());
        for _ in 0..*concurrency {
            let worker = Worker {
                plan: plan.clone(),
                // Workers of a group start at different calls, spreading over the inboxes.
                cursor: index,
                shared: shared.clone(),
                authority: config.target.authority.clone(),
                pacer: config.rate.map(|rate| Pacer::new(index, workers, rate)),
                start,
                deadline: config.duration.map(|d| start + d),
                timeout: config.timeout,
            };
            let connection = connections.next().flatten();
            tasks.push((group, tokio::spawn(worker.run(connection))));
            index += 1;
        }
    }
    tasks
}

/// The monitor's task and the means to stop it.
struct Monitoring {
    stopped: Arc<AtomicBool>,
    done: Arc<Notify>,
    task: JoinHandle<MonitorReport>,
}

impl Monitoring {
    fn start(pid: u32, interval: Duration, start: Instant) -> Self {
        let (stopped, done) = (Arc::new(AtomicBool::new(false)), Arc::new(Notify::new()));
        let task =
            tokio::spawn(monitor::watch(pid, interval, start, stopped.clone(), done.clone()));
        Self { stopped, done, task }
    }

    /// Takes a last sample and returns the report.
    async fn stop(self) -> Option<MonitorReport> {
        self.stopped.store(true, Ordering::Relaxed);
        self.done.notify_one();
        self.task.await.ok()
    }
}

/// Draws the progress line every second until the run ends.
async fn watch(shared: Arc<Shared>, draw: bool) {
    if !draw {
        return;
    }
    let (mut seconds, mut last) = (0, 0);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    while !shared.stopped.load(Ordering::Relaxed) {
        tokio::select! {
            _ = tick.tick() => {}
            () = shared.done.notified() => break,
        }
        seconds += 1;
        let requests = shared.requests.load(Ordering::Relaxed);
        let errors = shared.errors.load(Ordering::Relaxed);
        let line = format!(
            "\r{seconds:>5}s  {requests:>10} requests  {:>9} req/s  {errors} errors   ",
            requests - last
        );
        last = requests;
        let mut stderr = std::io::stderr();
        let _ = stderr.write_all(line.as_bytes());
        let _ = stderr.flush();
    }
    eprintln!();
}

type Sent = Result<Result<(StatusCode, Bytes), SendError>, Elapsed>;

/// One load worker and its schedule.
struct Worker {
    plan: Arc<Plan>,
    /// The next of the plan's calls to send.
    cursor: usize,
    shared: Arc<Shared>,
    authority: String,
    pacer: Option<Pacer>,
    start: Instant,
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Worker {
    async fn run(mut self, mut connection: Option<Connection>) -> Recorder {
        let mut recorder = Recorder::new();
        while let Some(intended) = self.next_slot().await {
            if !self.shared.take() {
                break;
            }
            let Some(call) = self.choose().await else { break };
            let outcome = self.attempt(&mut connection, call).await;
            let done = self.start.elapsed();
            if let Some(picker) = &self.plan.picker {
                picker.answered(call, self.start + done, outcome.is_ok());
            }
            recorder.record_completion(done);
            let latency = corrected_latency(intended, done);
            match outcome {
                Ok(()) => recorder.record_ok(latency),
                Err(failure) => {
                    recorder.record_failure(failure, latency);
                    self.shared.errors.fetch_add(1, Ordering::Relaxed);
                    if failure == Failure::Connect {
                        sleep(RECONNECT_PAUSE).await;
                    }
                }
            }
            self.shared.requests.fetch_add(1, Ordering::Relaxed);
        }
        recorder
    }

    /// The call to send: the plan's picker's choice (asked again while every call is busy,
    /// until the run's deadline), else the plan's next call in turn. `None` ends the worker.
    async fn choose(&mut self) -> Option<usize> {
        let Some(picker) = &self.plan.picker else {
            let call = self.cursor % self.plan.calls.len().max(1);
            self.cursor += 1;
            return Some(call);
        };
        loop {
            match picker.pick() {
                Choice::Call(call) => return Some(call),
                Choice::Exhausted => return None,
                Choice::Busy if self.deadline.is_some_and(|d| Instant::now() >= d) => return None,
                Choice::Busy => sleep(BUSY_PAUSE).await,
            }
        }
    }

    /// Waits for the next request's slot and returns its intended time since the start, or
    /// `None` once the run is over. Closed-loop, the slot is now.
    async fn next_slot(&mut self) -> Option<Duration> {
        let intended = match &mut self.pacer {
            Some(pacer) => pacer.next_intended(),
            None => self.start.elapsed(),
        };
        let due = self.start + intended;
        if self.deadline.is_some_and(|deadline| due >= deadline) {
            return None;
        }
        if self.pacer.is_some() {
            // A late worker sends at once; its latency still counts from the intended time.
            sleep_until(due).await;
        }
        Some(intended)
    }

    /// Opens a connection if there is none, then sends `call` on it within the timeout.
    async fn send_on(
        &self,
        connection: &mut Option<Connection>,
        call: &Call,
    ) -> Result<Sent, Failure> {
        if connection.is_none() {
            match timeout(self.timeout, Connection::open(&self.authority)).await {
                Ok(Ok(fresh)) => *connection = Some(fresh),
                // A connection not made in time is a connect failure, not a slow answer.
                Ok(Err(_)) | Err(_) => return Err(Failure::Connect),
            }
        }
        let Some(open) = connection.as_mut() else { return Err(Failure::Connect) };
        Ok(timeout(self.timeout, open.send(call)).await)
    }

    /// Sends one request, (re)connecting first if needed; a broken or timed-out connection
    /// is dropped so the next request starts on a fresh one.
    async fn attempt(
        &self,
        connection: &mut Option<Connection>,
        call: usize,
    ) -> Result<(), Failure> {
        let Some(call) = self.plan.calls.get(call) else { return Err(Failure::BadBody) };
        let mut outcome = self.send_on(connection, call).await?;
        if matches!(outcome, Ok(Err(SendError::Closed))) {
            // The server closed the idle connection before the request was written: nothing
            // was sent, so send it once on a fresh connection instead of counting an error.
            *connection = None;
            outcome = self.send_on(connection, call).await?;
        }
        match outcome {
            Err(_) => {
                *connection = None;
                Err(Failure::Timeout)
            }
            Ok(Err(_)) => {
                *connection = None;
                Err(Failure::Io)
            }
            Ok(Ok((status, body))) => judge(self.plan.expect, status.as_u16(), &body),
        }
    }
}
