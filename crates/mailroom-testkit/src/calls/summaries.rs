//! Builders for the summaries: of threads, of a project's recent traffic.

use super::tool_call;

tool_call! {
    /// A `summarize_thread` call: one thread's summary, or several (`thread_id` a
    /// comma-separated list) with an aggregate.
    ThreadSummaryCall => "summarize_thread";
    /// Summarises the thread (or threads) `thread_id` of `project_key`.
    new(project_key: &str, thread_id: &str);
    /// The viewer (`agent_name`): with tool authentication on, only the messages it took part
    /// in count.
    agent(agent_name: &str);
}

tool_call! {
    /// A `summarize_recent` call: a digest of a project's recent messages, stored and reused.
    RecentSummaryCall => "summarize_recent";
    /// Summarises the last hour of `project_key`, until [`Self::since_hours`] says otherwise.
    new(project_key: &str);
    /// The window, in whole hours ([`Self::arg`] sends a fraction).
    since_hours(since_hours: i64);
}
