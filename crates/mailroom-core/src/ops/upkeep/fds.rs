//! File-descriptor headroom (the reference's FD health worker): the descriptors this process
//! has open against its limit; under 30 % left is logged at WARN, under 15 % at ERROR, so an
//! operator raises `LimitNOFILE` before accepts and archive writes start failing.

use serde::Serialize;

use crate::error::Result;

/// Headroom under which a warning is logged, and an error.
const WARN_BELOW: f64 = 0.30;
const ERROR_BELOW: f64 = 0.15;

/// What a headroom check found.
#[derive(Debug, Clone, Serialize)]
pub struct FdReport {
    pub open: u64,
    /// The soft limit (`ulimit -n`); `None` when unlimited.
    pub limit: Option<u64>,
    /// The share of the limit still free, 0–1.
    pub headroom: Option<f64>,
}

/// Counts this process's open descriptors (`/proc/self/fd`) against its soft limit.
pub(super) fn check() -> Result<FdReport> {
    let open = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0);
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    #[allow(clippy::cast_precision_loss)]
    let headroom = limit.filter(|l| *l > 0).map(|l| 1.0 - open as f64 / l as f64);
    match headroom {
        Some(h) if h < ERROR_BELOW => {
            tracing::error!(open, limit, "file descriptors nearly exhausted")
        }
        Some(h) if h < WARN_BELOW => tracing::warn!(open, limit, "file descriptors running low"),
        _ => {}
    }
    Ok(FdReport { open, limit, headroom })
}
