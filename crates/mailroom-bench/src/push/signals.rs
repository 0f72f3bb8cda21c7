//! Listening by signal files, for servers that write the reference's (`NOTIFICATIONS_ENABLED`:
//! `<dir>/projects/<slug>/agents/<Name>.signal`, rewritten for each message). One inotify
//! watch on the project's agents folder reports every file closed after writing, or moved in;
//! a task reads the events as the runtime's reactor reports them, so a signal is timed with
//! the same resolution as a stream's bytes (the reactor's wake-up, microseconds).

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rustix::fs::inotify;
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

use super::{SharedLedger, Tasks};

/// Watches the signal files of `agents` of `project` under `dir`; the returned task tells
/// `ledger` of each one written.
pub(crate) fn watch(
    dir: &Path,
    project: &str,
    agents: &[String],
    ledger: &Arc<SharedLedger>,
) -> Result<Tasks> {
    let folder = dir.join("projects").join(project).join("agents");
    // Made now (the server makes it with its first signal), so there is something to watch.
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("--signals-dir: cannot create {}", folder.display()))?;
    let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
    let fd = inotify::init(flags).context("--signals-dir: inotify is not available")?;
    inotify::add_watch(
        &fd,
        &folder,
        inotify::WatchFlags::CLOSE_WRITE | inotify::WatchFlags::MOVED_TO,
    )
    .with_context(|| format!("--signals-dir: cannot watch {}", folder.display()))?;
    // SAFETY: the OwnedFd is open and, owned by the AsyncFd, stays open and the same
    // descriptor until the AsyncFd drops it.
    #[allow(unsafe_code)]
    let fd = unsafe { AsyncFd::register(fd) }
        .map_err(std::io::Error::from)
        .context("--signals-dir: cannot register the inotify descriptor")?;
    let files = agents.iter().enumerate().map(|(i, a)| (format!("{a}.signal"), i)).collect();
    let mut tasks = Tasks::default();
    tasks.push(tokio::spawn(read_events(fd, files, ledger.clone())));
    Ok(tasks)
}

/// Waits until no signal file of `project` under `dir` has been written for `quiet` (at most
/// `limit`): a server writes the signals of the messages sent before anyone watched whether
/// or not anyone does, and a backlog of them must not be taken for the watched sends'.
pub(crate) async fn settle(dir: &Path, project: &str, quiet: Duration, limit: Duration) {
    let folder = dir.join("projects").join(project).join("agents");
    let started = Instant::now();
    while started.elapsed() < limit {
        let newest = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.metadata().and_then(|m| m.modified()).ok());
        let newest = newest.max();
        let idle = newest.map_or(Duration::MAX, |at| at.elapsed().unwrap_or_default());
        if idle >= quiet {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Tells `ledger` of each agent's signal file written, until the watch fails; a failure
/// counts as every agent's stream lost.
async fn read_events(
    fd: AsyncFd<OwnedFd>,
    files: HashMap<String, usize>,
    ledger: Arc<SharedLedger>,
) {
    let mut buffer = [MaybeUninit::<u8>::uninit(); 16 * 1024];
    'watch: while let Ok(mut ready) = fd.readable().await {
        let mut reader = inotify::Reader::new(fd.get_ref(), &mut buffer);
        let mut arrived = Instant::now();
        loop {
            // An empty buffer means the next event comes from a fresh read: time it then.
            if reader.is_buffer_empty() {
                arrived = Instant::now();
            }
            match reader.next() {
                Ok(event) => {
                    let name = event.file_name().and_then(|n| n.to_str().ok());
                    if let Some(&agent) = name.and_then(|n| files.get(n)) {
                        ledger.notified(agent, arrived);
                    }
                }
                Err(rustix::io::Errno::AGAIN) => {
                    ready.clear_ready();
                    break;
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => break 'watch,
            }
        }
    }
    for &agent in files.values() {
        ledger.stream_lost(agent);
    }
}
