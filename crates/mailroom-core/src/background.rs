//! Threads that do background work (the Git archive writer, the WAL checkpointer) run at a
//! lower scheduling priority than those serving requests.
//!
//! On two cores a request's threads (an async worker and the database writer) often wait for
//! a core a background thread holds; at equal priority that wait lasts up to a scheduler
//! slice (milliseconds), which is what the reservation bench's p99 measured. At nice 10 a
//! waking request thread preempts the background one. Throughput on a saturated machine does
//! not change: the archive's bounded queue makes senders wait for the archive all the same.

/// The nice value of background threads (and of the `git repack` children they start, which
/// inherit it).
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] (never raises it); on Linux the nice value
/// belongs to the thread, not the process. Best effort: a refusal only costs latency.
pub(crate) fn lower_thread_priority() {
    let thread = Some(rustix::thread::gettid());
    // The value is absolute: a thread already nicer than that (the whole server started
    // under `nice 19`) must not be raised.
    let current = rustix::process::getpriority_process(thread).unwrap_or(BACKGROUND_NICE);
    if let Err(e) = rustix::process::setpriority_process(thread, current.max(BACKGROUND_NICE)) {
        tracing::debug!(error = %e, "a background thread keeps its priority");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the calling thread is lowered: the process's other threads keep their priority.
    #[test]
    fn only_the_calling_thread_is_lowered() {
        let before = rustix::process::getpriority_process(None).expect("own priority");
        let lowered = std::thread::spawn(|| {
            lower_thread_priority();
            rustix::process::getpriority_process(Some(rustix::thread::gettid()))
                .expect("thread priority")
        })
        .join()
        .expect("thread");
        assert_eq!(lowered, BACKGROUND_NICE.max(before));
        let main = rustix::process::getpriority_process(Some(rustix::thread::gettid()))
            .expect("main priority");
        assert_eq!(main, before, "the caller's thread is unchanged");
    }
}
