//! Guard benchmark: the in-process part of `mailroom guard check` — load N reservation files,
//! compile their patterns, match 1,000 changed paths — median of 21 runs, for two pattern
//! mixes (`BENCHMARKS.md`). `scripts/bench-guard` times the whole process instead.
//!
//! `cargo bench -p mailroom-core --bench guard` (release). `GUARD_BENCH_RESERVATIONS` sets N
//! (default 300).
//!
//! * `prefixed`: every pattern starts with a literal directory (`crates/cN/src/**`,
//!   `docs/pageN.md`, `tests/tN/**`, `vendor/libN/`), which `PatternSet` indexes by first
//!   directory;
//! * `mixed`: a quarter are `**/*.genN.rs`, which have no literal prefix, so every path is
//!   tested against each of them (by the matcher's name-suffix shortcut).
//!
//! About 1% of the paths conflict.

use std::path::Path;
use std::time::Instant;

use mailroom_core::guard::reservations::BlockingSet;
use mailroom_core::model::time::Timestamp;

const PATHS: usize = 1000;
const RUNS: usize = 21;

fn pattern(i: usize, mixed: bool) -> String {
    match i % 4 {
        0 => format!("crates/c{i}/src/**"),
        1 => format!("docs/page{i}.md"),
        2 if mixed => format!("**/*.gen{i}.rs"),
        2 => format!("tests/t{i}/**"),
        _ => format!("vendor/lib{i}/"),
    }
}

fn write_reservations(dir: &Path, count: usize, mixed: bool) {
    for i in 1..=count {
        let record = serde_json::json!({
            "id": i, "project": "bench", "agent": "GreenCastle", "path_pattern": pattern(i, mixed),
            "exclusive": true, "reason": "bench", "created_ts": "2026-01-01T00:00:00+00:00",
            "expires_ts": "2099-01-01T00:00:00+00:00", "released_ts": null,
        });
        std::fs::write(dir.join(format!("id-{i}.json")), record.to_string()).expect("write");
    }
}

fn changed_paths() -> Vec<String> {
    (1..=PATHS)
        .map(|j| {
            if j % 100 == 0 {
                format!("crates/c{}/src/f{j}.rs", j / 100 * 4)
            } else {
                format!("src/m{}/file{j}.rs", j % 37)
            }
        })
        .collect()
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let count: usize =
        std::env::var("GUARD_BENCH_RESERVATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let paths = changed_paths();
    println!("guard check in process: {PATHS} paths, {count} reservations, median of {RUNS}");
    println!("{:<10} {:>10} {:>10} {:>10}", "mix", "load ms", "match ms", "conflicts");
    for (name, mixed) in [("prefixed", false), ("mixed", true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        write_reservations(dir.path(), count, mixed);
        let (mut loads, mut matches, mut found) = (Vec::new(), Vec::new(), 0);
        for _ in 0..RUNS {
            let started = Instant::now();
            let set = BlockingSet::load(dir.path(), "BlueLake", Timestamp::now(), false);
            let loaded = Instant::now();
            found = set.conflicts(paths.iter().map(String::as_str)).len();
            loads.push((loaded - started).as_secs_f64() * 1e3);
            matches.push(loaded.elapsed().as_secs_f64() * 1e3);
        }
        println!("{name:<10} {:>10.2} {:>10.2} {found:>10}", median(loads), median(matches));
    }
}
