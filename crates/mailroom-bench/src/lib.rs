//! The load lab behind `mailroom bench`: measures any Agent Mail server (mailroom or the
//! Python reference) with identical parameters and honest numbers.
//!
//! - [`target`]: the server under test and its implementation's paths;
//! - [`scenario`]: what each request does, the setup that creates its data, how answers are
//!   judged;
//! - [`sse`]: the JSON-RPC answer inside a plain JSON or `text/event-stream` body;
//! - [`dataset`]: the benchmark plan's standing data (`--dataset`), created before a run;
//! - [`engine`]: N keep-alive connections, closed-loop or fixed-rate with coordinated-omission
//!   correction;
//! - [`stats`]: HDR latency histograms, error kinds, the fixed-rate schedule;
//! - [`monitor`]: the target's RSS, CPU and open files from /proc, growth per hour;
//! - [`profile`]: the ramp over the benchmark plan's concurrency levels and its breaking point;
//! - [`report`]: JSON, text and Markdown reports, comparisons and budget checks;
//! - [`chart`]: SVG charts for `--out` (throughput over time, latency against concurrency);
//! - [`baseline`]: a constant-200 server, the machine's ceiling;
//! - [`push`]: the push scenario: subscribed agents, notifications matched to sends;
//! - `verdict`: a JSON-RPC answer judged from its bytes, plain or SSE-framed.

pub mod baseline;
pub mod chart;
pub mod client;
pub mod dataset;
pub mod engine;
pub mod monitor;
pub mod profile;
pub mod push;
pub mod report;
pub mod scenario;
pub mod sse;
pub mod stats;
mod table;
pub mod target;
mod verdict;

pub use dataset::DatasetScale;
pub use engine::{RunConfig, run, run_with_baseline};
pub use push::PushOptions;
pub use report::{Budgets, Report, compare};
pub use scenario::{MixedLoad, Scenario, SearchOptions, Via};
pub use target::{Implementation, Target};
