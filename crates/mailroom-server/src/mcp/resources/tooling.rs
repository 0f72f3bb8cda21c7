//! Server and tooling resources (docs/compat/resources.md §2): configuration, the tool directory
//! and schemas, call metrics, recent calls, lock files and agent capabilities. No auth.

use std::sync::LazyLock;

use mailroom_core::Error;
use mailroom_core::model::time::Timestamp;
use serde_json::{Value, json};

use super::{Params, Resource, boxed, path_var, to_json};
use crate::mcp::catalog::info_of;
use crate::state::AppState;

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(
            "resource://config/environment{?format}",
            "config_environment",
            "The server's environment, database URL and HTTP wiring.",
            |state, _| boxed(async move { Ok(environment(&state)) }),
        ),
        Resource::new(
            "resource://tooling/directory{?format}",
            "tooling_directory",
            "Tools grouped by workflow cluster, with when to use them and playbooks.",
            |state, _| boxed(async move { Ok(directory(&state)) }),
        ),
        Resource::new(
            "resource://tooling/schemas{?format}",
            "tooling_schemas",
            "Required and optional arguments of the tools agents most often get wrong.",
            |state, _| boxed(async move { Ok(schemas(&state)) }),
        ),
        Resource::new(
            "resource://tooling/metrics{?format}",
            "tooling_metrics",
            "Calls and errors per tool since the server started.",
            |state, _| boxed(async move { Ok(metrics(&state)) }),
        ),
        Resource::new(
            "resource://tooling/locks{?format}",
            "tooling_locks",
            "Lock files under the storage root, with owner and staleness.",
            |state, _| boxed(async move { to_json(state.core.archive_locks().await?) }),
        ),
        Resource::new(
            "resource://tooling/capabilities/{agent}{?project,format}",
            "tooling_capabilities",
            "The capabilities an agent advertises.",
            |state, params| boxed(capabilities(state, params)),
        ),
        Resource::new(
            "resource://tooling/recent/{window_seconds}{?agent,project,format}",
            "tooling_recent",
            "Tool calls of the last window_seconds, optionally for one agent and project.",
            |state, params| boxed(async move { Ok(recent(&state, &params)) }),
        ),
    ]
}

fn environment(state: &AppState) -> Value {
    let core = state.core.config();
    json!({
        "environment": core.environment,
        "database_url": core.database_url,
        "http": {"host": state.config.host, "port": state.config.port, "path": state.config.mcp_path},
    })
}

fn output_formats(state: &AppState) -> Value {
    json!({
        "default": state.config.default_format.name(),
        "tool_param": "format",
        "resource_query": "format",
        "values": ["json", "toon"],
        "toon_envelope": {"format": "toon", "data": "<TOON>", "meta": {"requested": "toon"}},
    })
}

/// The directory's hand-written content (cluster purposes, per-tool prose and capabilities,
/// playbooks): the reference's text as the conformance fixture records it. (Its capabilities
/// list fetch_inbox and mark_message_read as "write" where the metadata table behind
/// tooling/metrics says "read"; the fixture shows both, so both are kept.)
static DIRECTORY: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("tooling_directory.json"))
        .unwrap_or_else(|e| panic!("tooling_directory.json is valid JSON: {e}"))
});

/// The directory is static, so it has no generation time (`generated_at` is null, as in the
/// conformance fixture).
fn directory(state: &AppState) -> Value {
    json!({
        "generated_at": null,
        "metrics_uri": "resource://tooling/metrics",
        "output_formats": output_formats(state),
        "clusters": DIRECTORY["clusters"],
        "playbooks": DIRECTORY["playbooks"],
    })
}

fn schemas(state: &AppState) -> Value {
    json!({
        "generated_at": Timestamp::now(),
        "global_optional": ["format"],
        "output_formats": output_formats(state),
        "tools": {
            "send_message": {
                "required": ["project_key", "sender_name", "to", "subject", "body_md"],
                "optional": ["cc", "bcc", "attachment_paths", "convert_images", "importance",
                    "ack_required", "thread_id", "auto_contact_if_blocked"],
                "shapes": {"to": "list[str]", "cc": "list[str] | str", "bcc": "list[str] | str",
                    "importance": "low|normal|high|urgent", "auto_contact_if_blocked": "bool"},
            },
            "macro_contact_handshake": {
                "required": ["project_key", "requester|agent_name", "target|to_agent"],
                "optional": ["reason", "ttl_seconds", "auto_accept", "welcome_subject",
                    "welcome_body"],
                "aliases": {"requester": ["agent_name"], "target": ["to_agent"]},
            },
        },
    })
}

fn metrics(state: &AppState) -> Value {
    let tools: Vec<Value> = state
        .instruments
        .called()
        .into_iter()
        .map(|c| {
            let meta = info_of(c.name);
            json!({"name": c.name, "calls": c.calls, "errors": c.errors, "cluster": meta.cluster,
                "capabilities": meta.capabilities, "complexity": meta.complexity})
        })
        .collect();
    json!({ "generated_at": Timestamp::now(), "tools": tools })
}

async fn capabilities(state: AppState, params: Params) -> Result<Value, Error> {
    let agent = path_var(&params, "agent");
    let project = params.string("project");
    let capabilities = state.core.agent_capabilities(project.clone(), agent.clone()).await?;
    Ok(json!({
        "generated_at": Timestamp::now(),
        "agent": agent,
        "project": project,
        "capabilities": capabilities,
    }))
}

/// A window that is not an integer means 60 s; the cutoff is at least 1 s back.
fn recent(state: &AppState, params: &Params) -> Value {
    let window = params.int("window_seconds").unwrap_or(60);
    let now = Timestamp::now();
    let since = now.plus_seconds(-window.max(1));
    let entries: Vec<Value> = state
        .instruments
        .recent(since, params.get("project"), params.get("agent"))
        .into_iter()
        .map(|c| {
            json!({"timestamp": c.at, "tool": c.tool, "project": c.project, "agent": c.agent,
                "cluster": info_of(c.tool).cluster})
        })
        .collect();
    json!({
        "generated_at": now,
        "window_seconds": window,
        "count": entries.len(),
        "entries": entries,
    })
}
