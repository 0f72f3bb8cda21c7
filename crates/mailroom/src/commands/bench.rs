//! `mailroom bench`: the load lab (crate `mailroom-bench`) on the command line: runs,
//! profiles, comparisons, budget checks and the baseline server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use mailroom_bench::profile;
use mailroom_bench::{
    Budgets, DatasetScale, Implementation, MixedLoad, PushOptions, Report, RunConfig, Scenario,
    Target, Via,
};

use super::archive::Verdict;

/// `mailroom bench [RUN FLAGS]` runs a scenario; the subcommands work on results.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Print the head-to-head table of two result files (from --json or --out), with ratios.
    Compare {
        /// The first result (column A).
        a: PathBuf,
        /// The second result (column B).
        b: PathBuf,
    },
    /// Check a result file against budgets; exits 1 when one is exceeded.
    Check {
        /// Budgets file: [scenario] sections of `key = number` lines.
        #[arg(long, value_name = "FILE", default_value = "benches/budgets.toml")]
        budgets: PathBuf,
        /// The result file (from --json or --out).
        result: PathBuf,
    },
    /// Answer a constant 200 on every path: the machine's ceiling, for comparison.
    BaselineServer {
        /// Port to listen on.
        #[arg(long, default_value_t = 8766)]
        port: u16,
        /// Interface to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
    },
    /// Fill a data directory with N messages through the core's write path in this process
    /// (database and Git archive, no HTTP), resuming one filled before, then time batches
    /// reaching Git.
    ArchiveGrowth(super::archive_growth::GrowthArgs),
}

/// The parameters of a run.
#[derive(Args, Debug)]
struct RunArgs {
    /// The server under test.
    #[arg(long, default_value = "http://127.0.0.1:8765")]
    url: String,
    /// health, ready, tools-list, send, inbox, search, reserve, sequential, mixed, ui-inbox,
    /// ui-agent-inbox, push.
    #[arg(long, default_value = "health")]
    scenario: Scenario,
    /// Concurrent keep-alive connections (the benchmark plan's standard is 100).
    #[arg(long, short = 'c', default_value_t = 100)]
    concurrency: usize,
    /// Seconds to send for [default: 10, or unbounded with --requests].
    #[arg(long, short = 'd', value_name = "SECS")]
    duration: Option<f64>,
    /// Fixed rate in requests per second (all connections together); latency is then
    /// measured from each request's intended send time. Without it, closed-loop.
    #[arg(long, value_name = "R")]
    rate: Option<f64>,
    /// Stop after this many requests in total.
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Seconds before a request counts as a timeout.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    timeout: f64,
    /// Message scenarios over MCP tools/call or the REST routes (mailroom only).
    #[arg(long, default_value = "mcp")]
    via: Via,
    /// The target's implementation: mailroom or python-reference (health, readiness and MCP
    /// paths follow it).
    #[arg(long = "impl", default_value = "mailroom")]
    implementation: Implementation,
    /// Override the MCP endpoint path.
    #[arg(long, value_name = "PATH")]
    mcp_path: Option<String>,
    /// Messages put in each inbox before inbox, search and mixed runs.
    #[arg(long, value_name = "N", default_value_t = 20)]
    seed_messages: usize,
    /// Before the run, create standing data through the target's tools: PROJECTSxAGENTSxMESSAGES
    /// (messages sent by each agent); alone, the benchmark plan's 10x100x100.
    #[arg(long, value_name = "SCALE", num_args = 0..=1, default_missing_value = "10x100x100")]
    dataset: Option<DatasetScale>,
    /// search: the query (`benchmark` is in every seeded and dataset message, `quasar` in
    /// one dataset message in 1,000). With --dataset, the first dataset project is searched
    #[arg(long, value_name = "QUERY", default_value = mailroom_bench::scenario::DEFAULT_SEARCH_TERM)]
    search_term: String,
    /// search: the project to search (a slug), e.g. one an earlier --dataset run created
    /// [default: the first --dataset project, else the scenario's own seeded one]
    #[arg(long, value_name = "SLUG")]
    search_project: Option<String>,
    /// mixed: connections sending messages to every inbox.
    #[arg(long, value_name = "N", default_value_t = 10)]
    writers: usize,
    /// mixed: connections reading inboxes spread over --inboxes agents.
    #[arg(long, value_name = "N", default_value_t = 60)]
    readers: usize,
    /// mixed: connections reading the hot "celebrity" inboxes.
    #[arg(long, value_name = "N", default_value_t = 30)]
    celebrity_readers: usize,
    /// mixed: ordinary inboxes.
    #[arg(long, value_name = "N", default_value_t = 20)]
    inboxes: usize,
    /// mixed: celebrity inboxes (a pool of 5, as in the comparison the mixed load comes from).
    #[arg(long, value_name = "N", default_value_t = 5)]
    celebrities: usize,
    /// push: agents listening for their mail, each in an MCP session of its own with its
    /// event stream open and its inbox subscribed (or watching its signal file).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    subscribers: usize,
    /// push: watch the signal files under DIR instead of event streams (the server's
    /// NOTIFICATIONS_SIGNALS_DIR as seen here; start it with NOTIFICATIONS_ENABLED=true and
    /// NOTIFICATIONS_DEBOUNCE_MS=0).
    #[arg(long, value_name = "DIR")]
    signals_dir: Option<PathBuf>,
    /// push: seconds after a send's reply before its notification counts as missed.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    notify_deadline: f64,
    /// steady (one run), ramp (10, 25, 50, 100, 200, 500 connections: the breaking point) or
    /// soak (a long steady run, default an hour, with --pid required) or spike (baseline, then
    /// ×14 connections, or ×14 --rate, then recovery; each phase lasts --duration).
    #[arg(long, default_value = "steady")]
    profile: Profile,
    /// Measure this baseline server (e.g. `mailroom bench baseline-server`) with the same load
    /// just before each run, and report the run's throughput as a ratio of it.
    #[arg(long, value_name = "URL")]
    baseline_url: Option<String>,
    /// Sample this process (the server) during the run: RSS, CPU and open files from /proc,
    /// with their growth per hour.
    #[arg(long)]
    pid: Option<u32>,
    /// Seconds between --pid samples.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    sample_every: f64,
    /// Print the result as one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON and a Markdown report into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No live progress line.
    #[arg(long, short = 'q')]
    quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Profile {
    Steady,
    Ramp,
    Soak,
    Spike,
}

impl std::str::FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "steady" => Ok(Profile::Steady),
            "ramp" => Ok(Profile::Ramp),
            "soak" => Ok(Profile::Soak),
            "spike" => Ok(Profile::Spike),
            _ => Err(format!("unknown profile '{s}' (steady, ramp, soak, spike)")),
        }
    }
}

impl BenchArgs {
    /// Whether this is `bench check` (whose exit code 1 means "over budget").
    pub fn is_check(&self) -> bool {
        matches!(self.command, Some(BenchCommand::Check { .. }))
    }
}

/// Runs `mailroom bench ...`; `Differences` means a budget was exceeded.
pub fn run(args: BenchArgs) -> Result<Verdict> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match args.command {
        None => runtime.block_on(run_load(args.run)).map(|()| Verdict::Clean),
        Some(BenchCommand::Compare { a, b }) => {
            print!("{}", mailroom_bench::compare(&read_report(&a)?, &read_report(&b)?));
            Ok(Verdict::Clean)
        }
        Some(BenchCommand::Check { budgets, result }) => check(&budgets, &result),
        Some(BenchCommand::BaselineServer { port, host }) => {
            runtime.block_on(baseline(&host, port)).map(|()| Verdict::Clean)
        }
        Some(BenchCommand::ArchiveGrowth(growth)) => {
            drop(runtime);
            super::archive_growth::run(growth).map(|()| Verdict::Clean)
        }
    }
}

fn config(args: &RunArgs) -> Result<RunConfig> {
    let mut target = Target::parse(&args.url, args.implementation)?;
    if let Some(path) = &args.mcp_path {
        target = target.with_mcp_path(path)?;
    }
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!("--timeout must be a positive number of seconds");
    }
    let duration = match (args.duration, args.requests) {
        (Some(secs), _) if !(secs > 0.0 && secs.is_finite()) => {
            bail!("--duration must be a positive number of seconds")
        }
        (Some(secs), _) => Some(Duration::from_secs_f64(secs)),
        (None, Some(_)) => None,
        (None, None) if args.profile == Profile::Soak => Some(Duration::from_secs(3600)),
        (None, None) => Some(Duration::from_secs(10)),
    };
    let mut config = RunConfig::new(target, args.scenario);
    config.via = args.via;
    config.concurrency = args.concurrency;
    config.duration = duration;
    config.rate = args.rate;
    config.requests = args.requests;
    config.timeout = Duration::from_secs_f64(args.timeout);
    config.seed_messages = args.seed_messages;
    config.search.term = args.search_term.clone();
    config.search.project = args.search_project.clone();
    config.mixed = MixedLoad {
        writers: args.writers,
        readers: args.readers,
        celebrity_readers: args.celebrity_readers,
        inboxes: args.inboxes,
        celebrities: args.celebrities,
    };
    if !(args.notify_deadline > 0.0 && args.notify_deadline.is_finite()) {
        bail!("--notify-deadline must be a positive number of seconds");
    }
    config.push = PushOptions {
        subscribers: args.subscribers,
        signals_dir: args.signals_dir.clone(),
        deadline: Duration::from_secs_f64(args.notify_deadline),
    };
    config.progress = !args.quiet;
    if args.profile == Profile::Soak && args.pid.is_none() {
        bail!("--profile soak needs --pid (the server's process id) to measure growth");
    }
    if !(args.sample_every > 0.0 && args.sample_every.is_finite()) {
        bail!("--sample-every must be a positive number of seconds");
    }
    config.monitor_pid = args.pid;
    config.monitor_interval = Duration::from_secs_f64(args.sample_every);
    Ok(config)
}

/// What a profile produced, in every output form.
struct Outputs {
    json: serde_json::Value,
    table: String,
    markdown: String,
    /// An SVG chart: throughput over time, or latency against concurrency for a ramp.
    chart: String,
    /// The file name (without extension) under --out.
    stem: String,
}

async fn run_load(args: RunArgs) -> Result<()> {
    let mut config = config(&args)?;
    if let Some(scale) = args.dataset {
        eprintln!("dataset: creating {scale} (projects x agents x messages per agent)");
        let dataset = mailroom_bench::dataset::populate(&config.target, scale).await?;
        if config.search.project.is_none() {
            config.search.project = dataset["projects"][0].as_str().map(str::to_string);
        }
        config.dataset = Some(dataset);
    }
    if config.scenario == Scenario::Mixed && matches!(args.profile, Profile::Ramp | Profile::Spike)
    {
        bail!("--profile ramp and spike vary --concurrency, which the mixed scenario does not use");
    }
    let baseline = match &args.baseline_url {
        Some(url) => Some(Target::parse(url, Implementation::Mailroom)?),
        None => None,
    };
    let measure = |step: RunConfig| {
        let baseline = baseline.clone();
        async move {
            match &baseline {
                Some(baseline) => mailroom_bench::run_with_baseline(&step, baseline).await,
                None => mailroom_bench::run(&step).await,
            }
        }
    };
    let name = format!("{}-{}", config.target.implementation, config.scenario);
    let outputs = match args.profile {
        Profile::Steady | Profile::Soak => {
            let report = measure(config.clone()).await?;
            let stem = match args.profile {
                Profile::Soak => format!("{name}-soak"),
                _ => format!("{name}-c{}", report.concurrency),
            };
            Outputs {
                json: serde_json::to_value(&report)?,
                table: report.table(),
                markdown: report.markdown(),
                chart: report.throughput_chart(),
                stem,
            }
        }
        Profile::Ramp => {
            let mut reports = Vec::new();
            for level in mailroom_bench::profile::RAMP_LEVELS {
                let mut step = config.clone();
                step.concurrency = level;
                eprintln!("ramp: {level} connections");
                reports.push(measure(step).await?);
            }
            Outputs {
                json: profile::ramp_json(&reports),
                table: profile::ramp_table(&reports),
                markdown: profile::ramp_markdown(&reports),
                chart: profile::ramp_chart(&reports),
                stem: format!("{name}-ramp"),
            }
        }
        Profile::Spike => {
            let mut spike = config.clone();
            spike.concurrency = config.concurrency * profile::SPIKE_FACTOR;
            spike.rate = config.rate.map(|rate| rate * profile::SPIKE_FACTOR as f64);
            let mut phases = Vec::new();
            for (phase, step) in [("baseline", &config), ("spike", &spike), ("recovery", &config)] {
                eprintln!("spike profile: {phase}");
                phases.push(measure(step.clone()).await?);
            }
            let phases: [Report; 3] =
                phases.try_into().map_err(|_| anyhow::anyhow!("the spike has three phases"))?;
            Outputs {
                json: profile::spike_json(&phases),
                table: profile::spike_table(&phases),
                markdown: profile::spike_markdown(&phases),
                chart: spike_chart(&phases),
                stem: format!("{name}-spike"),
            }
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&outputs.json)?);
    } else {
        print!("{}", outputs.table);
    }
    if let Some(dir) = &args.out {
        write_out(dir, &outputs)?;
    }
    Ok(())
}

fn write_out(dir: &Path, outputs: &Outputs) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_string_pretty(&outputs.json)? + "\n";
    let files = [
        ("json", json.as_str()),
        ("md", outputs.markdown.as_str()),
        ("svg", outputs.chart.as_str()),
    ];
    for (extension, text) in files {
        let path = dir.join(format!("{}.{extension}", outputs.stem));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The spike's throughput over its three phases, end to end.
fn spike_chart(phases: &[Report; 3]) -> String {
    let mut joined = phases[0].clone();
    joined.timeline_rps = phases.iter().flat_map(|p| p.timeline_rps.iter().copied()).collect();
    joined.throughput_chart()
}

fn read_report(path: &Path) -> Result<Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a `mailroom bench --json` result", path.display()))
}

fn check(budgets: &Path, result: &Path) -> Result<Verdict> {
    let text = std::fs::read_to_string(budgets)
        .with_context(|| format!("cannot read {}", budgets.display()))?;
    let budgets = Budgets::parse(&text)?;
    let report = read_report(result)?;
    let violations = budgets.check(&report);
    if violations.is_empty() {
        println!("{}: within budgets", result.display());
        return Ok(Verdict::Clean);
    }
    for violation in &violations {
        println!("over budget: {violation}");
    }
    Ok(Verdict::Differences)
}

async fn baseline(host: &str, port: u16) -> Result<()> {
    let address = format!("{host}:{port}");
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let local = listener.local_addr().context("no local address")?;
    println!("baseline server listening on http://{local} (constant 200 on every path)");
    mailroom_bench::baseline::serve(listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    Ok(())
}
