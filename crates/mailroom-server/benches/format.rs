//! The tool handlers' output-format surfaces that the reference budgets: reading the `format`
//! argument (explicit name, absent, MIME alias), applying it (TOON, which mailroom encodes in
//! process, and the JSON passthrough), and serde_json on an 8-field result. Each figure is the
//! median over 15 rounds of the mean time per call in a round (`BENCHMARKS.md`).
//!
//! `cargo bench -p mailroom-server --bench format` (release).

use std::hint::black_box;
use std::time::Instant;

use mailroom_server::mcp::format::{OutputFormat, apply, from_argument};
use serde_json::{Value, json};

const ROUNDS: usize = 15;

/// The median over `ROUNDS` of what `round` returns (a round's mean nanoseconds per call).
fn median_of_rounds(mut round: impl FnMut() -> f64) -> f64 {
    let mut means: Vec<f64> = (0..ROUNDS).map(|_| round()).collect();
    means.sort_by(f64::total_cmp);
    means[ROUNDS / 2]
}

/// The median over `ROUNDS` of the mean nanoseconds per call of `calls` calls.
fn median_ns(calls: u32, mut call: impl FnMut()) -> f64 {
    median_of_rounds(|| {
        let started = Instant::now();
        for _ in 0..calls {
            call();
        }
        started.elapsed().as_nanos() as f64 / f64::from(calls)
    })
}

/// As `median_ns`, for a call that takes a value and returns one: each round's inputs are
/// made before its timer starts and its outputs dropped after it stops.
fn median_ns_owned(calls: usize, make: impl Fn() -> Value, call: impl Fn(Value) -> Value) -> f64 {
    median_of_rounds(|| {
        let inputs: Vec<Value> = (0..calls).map(|_| make()).collect();
        let mut outputs = Vec::with_capacity(calls);
        let started = Instant::now();
        for input in inputs {
            outputs.push(call(input));
        }
        let elapsed = started.elapsed();
        black_box(outputs);
        elapsed.as_nanos() as f64 / calls as f64
    })
}

/// `median_ns_owned` of `apply` asked for `format` on copies of `input`.
fn median_apply_ns(calls: usize, input: &Value, format: OutputFormat) -> f64 {
    median_ns_owned(
        calls,
        || input.clone(),
        |value| apply(black_box(value), Some(format), OutputFormat::Json),
    )
}

/// An inbox entry as `fetch_inbox` returns it: eight fields.
fn inbox_entry() -> Value {
    json!({
        "id": 4711,
        "project_id": 3,
        "sender_id": 12,
        "thread_id": "TKT-42",
        "subject": "Reserve src/lib.rs before the refactor",
        "importance": "high",
        "ack_required": true,
        "created_ts": "2026-11-26T00:00:00.000000+00:00",
    })
}

fn report(surface: &str, ns: f64) {
    if ns >= 1e6 {
        println!("{surface:<32} {:>10.3} ms", ns / 1e6);
    } else if ns >= 1e3 {
        println!("{surface:<32} {:>10.3} µs", ns / 1e3);
    } else {
        println!("{surface:<32} {ns:>10.1} ns");
    }
}

fn main() {
    let explicit = json!("json");
    let alias = json!("application/toon");
    assert_eq!(from_argument(Some(&explicit)), Ok(Some(OutputFormat::Json)));
    assert_eq!(from_argument(Some(&alias)), Ok(Some(OutputFormat::Toon)));
    assert_eq!(from_argument(None), Ok(None));

    let entry = inbox_entry();
    let inbox = Value::Array(vec![entry.clone(); 20]);
    let text = serde_json::to_string(&entry).expect("serialize");
    let toon = apply(inbox.clone(), Some(OutputFormat::Toon), OutputFormat::Json);
    assert_eq!(toon["format"], "toon", "the TOON envelope");

    println!("median of {ROUNDS} rounds, mean per call:");
    report(
        "format resolution (explicit)",
        median_ns(1_000_000, || {
            black_box(from_argument(black_box(Some(&explicit))).ok());
        }),
    );
    report(
        "format resolution (implicit)",
        median_ns(1_000_000, || {
            black_box(from_argument(black_box(None)).ok());
        }),
    );
    report(
        "format resolution (MIME alias)",
        median_ns(1_000_000, || {
            black_box(from_argument(black_box(Some(&alias))).ok());
        }),
    );
    report("apply toon (20 inbox entries)", median_apply_ns(2_000, &inbox, OutputFormat::Toon));
    report("apply json (passthrough)", median_apply_ns(200_000, &entry, OutputFormat::Json));
    report(
        "JSON serialize (8-field)",
        median_ns(200_000, || {
            black_box(serde_json::to_string(black_box(&entry)).ok());
        }),
    );
    report(
        "JSON parse (8-field)",
        median_ns(200_000, || {
            black_box(serde_json::from_str::<Value>(black_box(&text)).ok());
        }),
    );
}
