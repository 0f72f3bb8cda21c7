//! Builders for file reservations: reserve, release, renew.

use super::tool_call;

tool_call! {
    /// A `file_reservation_paths` call: an agent reserves path patterns of its project.
    ReserveCall => "file_reservation_paths";
    /// `agent_name` in `project_key` reserves `paths` (patterns relative to the project).
    new(project_key: &str, agent_name: &str, paths: &[&str]);
    /// Exclusive or shared.
    exclusive(exclusive: bool);
    /// Why.
    reason(reason: &str);
    /// How long it lasts (`ttl_seconds`).
    ttl(ttl_seconds: i64);
}

tool_call! {
    /// A `release_file_reservations` call: every active reservation of the agent, or those
    /// [`Self::paths`] names.
    ReleaseCall => "release_file_reservations";
    /// `agent_name` in `project_key` releases its reservations.
    new(project_key: &str, agent_name: &str);
    /// Only the reservations of these patterns.
    paths(paths: &[&str]);
}

tool_call! {
    /// A `renew_file_reservations` call: every active reservation of the agent, or those
    /// [`Self::paths`] names, last longer.
    RenewCall => "renew_file_reservations";
    /// `agent_name` in `project_key` renews its reservations.
    new(project_key: &str, agent_name: &str);
    /// By this many seconds (`extend_seconds`).
    extend(extend_seconds: i64);
    /// Only the reservations of these patterns.
    paths(paths: &[&str]);
}
