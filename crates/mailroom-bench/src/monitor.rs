//! The monitor: samples a target process's RSS, CPU time and open files from `/proc` while a run
//! lasts, and reports their growth per hour (the soak test's verdict; BENCHMARKS.md, "Soak").

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The kernel reports CPU times in USER_HZ ticks, which Linux fixes at 100 per second for
/// the /proc interface on every architecture it supports.
const TICKS_PER_SECOND: f64 = 100.0;

/// One sample of the target process.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the run started.
    pub t_s: f64,
    pub rss_kb: u64,
    /// The anonymous part of the RSS (heap, stacks): what a leak grows.
    #[serde(default)]
    pub rss_anon_kb: u64,
    /// The file-backed part (the binary, memory-mapped database pages): the kernel may drop
    /// it under pressure, and it fills up to the mapped files' size.
    #[serde(default)]
    pub rss_file_kb: u64,
    /// User + system CPU time consumed so far, in seconds.
    pub cpu_s: f64,
    pub open_files: u64,
}

/// What the samples show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorReport {
    pub pid: u32,
    pub interval_s: f64,
    /// Least-squares slope of RSS over the run, in MB per hour.
    pub rss_growth_mb_per_hour: f64,
    pub rss_first_mb: f64,
    pub rss_peak_mb: f64,
    /// The slope over the run's second half only: whether the growth levels off once caches
    /// have filled (a leak keeps its slope).
    #[serde(default)]
    pub rss_growth_late_mb_per_hour: f64,
    /// The slopes of anonymous RSS over the whole run and over its second half.
    #[serde(default)]
    pub rss_anon_growth_mb_per_hour: f64,
    #[serde(default)]
    pub rss_anon_growth_late_mb_per_hour: f64,
    /// The slope of the second half's floor: the lowest anonymous RSS of each of
    /// [`FLOOR_WINDOWS`] stretches, fitted by least squares. Transient buffers (a Git
    /// roll-up's, freed after seconds) swing the samples by tens of MB and with them the
    /// plain slope; they do not lift the floor, which a leak does.
    #[serde(default)]
    pub rss_anon_floor_growth_late_mb_per_hour: f64,
    #[serde(default)]
    pub rss_anon_peak_mb: f64,
    #[serde(default)]
    pub rss_file_peak_mb: f64,
    /// Least-squares slope of the open-file count, per hour.
    pub open_files_growth_per_hour: f64,
    pub open_files_peak: u64,
    /// Mean CPU use over the run, in percent of one core.
    pub cpu_percent_mean: f64,
    pub samples: Vec<Sample>,
}

/// Reads one sample of `pid` (`None` once the process is gone or unreadable).
pub fn sample(pid: u32, t_s: f64) -> Option<Sample> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let status = std::fs::read_to_string(proc_dir.join("status")).ok()?;
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    let open_files = std::fs::read_dir(proc_dir.join("fd")).ok()?.count() as u64;
    Some(Sample {
        t_s,
        rss_kb: status_kb(&status, "VmRSS:")?,
        // Both since Linux 4.5; absent fields read as 0.
        rss_anon_kb: status_kb(&status, "RssAnon:").unwrap_or(0),
        rss_file_kb: status_kb(&status, "RssFile:").unwrap_or(0),
        cpu_s: cpu_ticks(&stat)? as f64 / TICKS_PER_SECOND,
        open_files,
    })
}

/// A `Field:  1234 kB` line of /proc/PID/status (`field` with its colon).
fn status_kb(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime (fields 14 and 15) from /proc/PID/stat. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its closing parenthesis.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Stretches of the second half whose lowest samples make its floor.
pub const FLOOR_WINDOWS: usize = 8;

/// The lowest point of each of `windows` equal stretches of `points` (by count; stretches of
/// fewer than two points are not cut).
pub fn floor(points: &[(f64, f64)], windows: usize) -> Vec<(f64, f64)> {
    let per_window = points.len().div_ceil(windows.max(1)).max(2);
    points
        .chunks(per_window)
        .filter_map(|chunk| chunk.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1)))
        .collect()
}

/// The least-squares slope of `points` (y per unit of x); 0 with fewer than two distinct x.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if points.len() < 2 {
        return 0.0;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let covariance: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let variance: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if variance == 0.0 { 0.0 } else { covariance / variance }
}

/// Summarises samples.
pub fn summarise(pid: u32, interval: Duration, samples: Vec<Sample>) -> MonitorReport {
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    let mb = |kb: fn(&Sample) -> u64| -> Vec<(f64, f64)> {
        samples.iter().map(|s| (s.t_s, kb(s) as f64 / 1024.0)).collect()
    };
    let (rss, anon, file) = (mb(|s| s.rss_kb), mb(|s| s.rss_anon_kb), mb(|s| s.rss_file_kb));
    let peak = |points: &[(f64, f64)]| round(points.iter().map(|p| p.1).fold(0.0, f64::max));
    // The second half by time (samples are evenly spaced, so by count).
    let late = |points: &[(f64, f64)]| round(slope(&points[points.len() / 2..]) * 3600.0);
    let files: Vec<(f64, f64)> = samples.iter().map(|s| (s.t_s, s.open_files as f64)).collect();
    let cpu_percent_mean = match (samples.first(), samples.last()) {
        (Some(first), Some(last)) if last.t_s > first.t_s => {
            (last.cpu_s - first.cpu_s) / (last.t_s - first.t_s) * 100.0
        }
        _ => 0.0,
    };
    MonitorReport {
        pid,
        interval_s: interval.as_secs_f64(),
        rss_growth_mb_per_hour: round(slope(&rss) * 3600.0),
        rss_first_mb: round(rss.first().map_or(0.0, |p| p.1)),
        rss_peak_mb: peak(&rss),
        rss_growth_late_mb_per_hour: late(&rss),
        rss_anon_growth_mb_per_hour: round(slope(&anon) * 3600.0),
        rss_anon_growth_late_mb_per_hour: late(&anon),
        rss_anon_floor_growth_late_mb_per_hour: round(
            slope(&floor(&anon[anon.len() / 2..], FLOOR_WINDOWS)) * 3600.0,
        ),
        rss_anon_peak_mb: peak(&anon),
        rss_file_peak_mb: peak(&file),
        open_files_growth_per_hour: round(slope(&files) * 3600.0),
        open_files_peak: samples.iter().map(|s| s.open_files).max().unwrap_or(0),
        cpu_percent_mean: round(cpu_percent_mean),
        samples,
    }
}

/// Samples `pid` every `interval` from `start` until `stopped` is set and `done` notified.
pub(crate) async fn watch(
    pid: u32,
    interval: Duration,
    start: Instant,
    stopped: Arc<AtomicBool>,
    done: Arc<Notify>,
) -> MonitorReport {
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(interval);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = done.notified() => {}
        }
        if let Some(s) = sample(pid, start.elapsed().as_secs_f64()) {
            samples.push(s);
        }
        if stopped.load(Ordering::Relaxed) {
            break;
        }
    }
    summarise(pid, interval, samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_parsed() {
        let status = "Name:\tmailroom\nVmPeak:\t  9000 kB\nVmRSS:\t   4321 kB\n\
                      RssAnon:\t    3000 kB\nRssFile:\t    1321 kB\nThreads:\t4\n";
        assert_eq!(status_kb(status, "VmRSS:"), Some(4321));
        assert_eq!(status_kb(status, "RssAnon:"), Some(3000));
        assert_eq!(status_kb(status, "RssFile:"), Some(1321));
        // A command name with spaces and a parenthesis must not shift the fields.
        let stat = "42 (my (odd) name) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 4 0";
        assert_eq!(cpu_ticks(stat), Some(300));
        assert_eq!(status_kb("Name: x\n", "VmRSS:"), None);
    }

    #[test]
    fn the_current_process_can_be_sampled() {
        let sample = sample(std::process::id(), 0.0).expect("own /proc entry");
        assert!(sample.rss_kb > 0 && sample.open_files > 0);
        assert!(sample.rss_anon_kb > 0 && sample.rss_anon_kb + sample.rss_file_kb <= sample.rss_kb);
    }

    #[test]
    fn growth_is_the_least_squares_slope_per_hour() {
        // RSS grows 1 MB per 10 minutes, with ±0.5 MB of noise around the line.
        let samples: Vec<Sample> = (0..=6)
            .map(|i| {
                let noise = if i % 2 == 0 { 512 } else { 0 };
                Sample {
                    t_s: i as f64 * 600.0,
                    rss_kb: 100 * 1024 + i * 1024 + noise,
                    rss_anon_kb: 60 * 1024 + i * 1024,
                    rss_file_kb: 40 * 1024 + noise,
                    cpu_s: i as f64 * 300.0,
                    open_files: 20,
                }
            })
            .collect();
        let report = summarise(1, Duration::from_secs(600), samples);
        assert!((report.rss_growth_mb_per_hour - 6.0).abs() < 0.01, "{report:?}");
        assert_eq!(report.open_files_growth_per_hour, 0.0);
        assert_eq!(report.open_files_peak, 20);
        assert_eq!(report.cpu_percent_mean, 50.0);
        assert_eq!(report.rss_first_mb, 100.5);
        assert!((report.rss_anon_growth_mb_per_hour - 6.0).abs() < 1e-9, "{report:?}");
        assert_eq!(report.rss_anon_peak_mb, 66.0);
        assert_eq!(report.rss_file_peak_mb, 40.5);
        assert_eq!(slope(&[(1.0, 5.0)]), 0.0);
    }

    /// Growth that levels off (caches filling) shows in the whole run's slope but not in the
    /// second half's; a leak keeps its slope in both.
    #[test]
    fn the_late_slope_tells_a_plateau_from_a_leak() {
        let run = |anon_kb: fn(u64) -> u64| {
            let samples = (0..=10)
                .map(|i| Sample {
                    t_s: i as f64 * 360.0,
                    rss_kb: anon_kb(i),
                    rss_anon_kb: anon_kb(i),
                    rss_file_kb: 0,
                    cpu_s: 0.0,
                    open_files: 20,
                })
                .collect();
            summarise(1, Duration::from_secs(360), samples)
        };
        // +2 MB per sample for the first four samples, then flat.
        let plateau = run(|i| 50 * 1024 + i.min(4) * 2048);
        assert!(plateau.rss_anon_growth_mb_per_hour > 5.0, "{plateau:?}");
        assert_eq!(plateau.rss_anon_growth_late_mb_per_hour, 0.0);
        assert_eq!(plateau.rss_growth_late_mb_per_hour, 0.0);
        // +1 MB per sample (10 MB/hour) throughout.
        let leak = run(|i| 50 * 1024 + i * 1024);
        assert!((leak.rss_anon_growth_late_mb_per_hour - 10.0).abs() < 1e-9, "{leak:?}");
    }

    /// Samples that swing with transient buffers: the floor's slope stays at the floor's
    /// growth (none, or a leak's), whatever the spikes do.
    #[test]
    fn the_floor_slope_ignores_transient_spikes() {
        // 80 samples a minute apart; every seventh is a spike of 10 to 40 MB.
        let run = |leak_kb_per_sample: u64| {
            let samples = (0..80u64)
                .map(|i| {
                    let spike = if i % 7 == 3 { (10 + (i * 13) % 31) * 1024 } else { 0 };
                    let anon = 60 * 1024 + i * leak_kb_per_sample + spike;
                    Sample {
                        t_s: i as f64 * 60.0,
                        rss_kb: anon,
                        rss_anon_kb: anon,
                        rss_file_kb: 0,
                        cpu_s: 0.0,
                        open_files: 20,
                    }
                })
                .collect();
            summarise(1, Duration::from_secs(60), samples)
        };
        let flat = run(0);
        assert_eq!(flat.rss_anon_floor_growth_late_mb_per_hour, 0.0, "{flat:?}");
        assert!(flat.rss_anon_growth_late_mb_per_hour.abs() > 1.0, "{flat:?}");
        // 1 MB per 10 samples: 6 MB/hour.
        let leak = run(1024 / 10);
        let floor = leak.rss_anon_floor_growth_late_mb_per_hour;
        assert!((floor - 6.0).abs() < 0.2, "{leak:?}");
    }

    #[test]
    fn the_floor_is_each_stretchs_lowest_point() {
        let points: Vec<(f64, f64)> = [5.0, 3.0, 4.0, 9.0, 2.0, 8.0, 7.0]
            .iter()
            .enumerate()
            .map(|(i, y)| (i as f64, *y))
            .collect();
        assert_eq!(floor(&points, 3), vec![(1.0, 3.0), (4.0, 2.0), (6.0, 7.0)]);
        assert_eq!(floor(&points[..1], 8), vec![(0.0, 5.0)]);
        assert!(floor(&[], 8).is_empty());
    }
}
