//! Builders for projects and agents: ensure a project, register an agent, look one up.

use super::tool_call;

tool_call! {
    /// An `ensure_project` call: the project of a directory, created when new.
    ProjectCall => "ensure_project";
    /// The project whose human key is `human_key` (an absolute directory path).
    new(human_key: &str);
}

tool_call! {
    /// A `register_agent` call for a named agent, as program `codex-cli` and model `gpt-5`
    /// until [`Self::program`] and [`Self::model`] say otherwise (as
    /// [`TestApp::seed_pair`](crate::TestApp::seed_pair) registers).
    RegisterCall => "register_agent";
    /// Registers (or refreshes) `name` in `project_key`.
    new(project_key: &str, name: &str) with program = "codex-cli", model = "gpt-5";
    /// The agent's program.
    program(program: &str);
    /// The agent's model.
    model(model: &str);
    /// How images sent to it are kept (`auto`, `inline` or `file`).
    attachments_policy(attachments_policy: &str);
}

tool_call! {
    /// A `whois` call: an agent's profile.
    WhoisCall => "whois";
    /// The profile of `agent_name` in `project_key`.
    new(project_key: &str, agent_name: &str);
    /// At most this many recent archive commits.
    commit_limit(commit_limit: i64);
    /// Whether the profile lists recent archive commits.
    include_recent_commits(include_recent_commits: bool);
}
