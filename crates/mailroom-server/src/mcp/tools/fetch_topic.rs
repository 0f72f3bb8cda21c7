//! fetch_topic: messages tagged with a topic, newest first.

use mailroom_core::ops::search::summaries::FetchTopic;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Fetch the messages tagged with a topic (case-insensitive), newest first, that the agent sent or received (limit 50 by default, at most 1000; bodies included by default).";

/// Arguments of fetch_topic.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The topic tag.
    topic_name: String,
    /// Most messages to return (1-1000, default 50).
    #[serde(default)]
    limit: Option<i64>,
    /// Include message bodies (default true).
    #[serde(default)]
    include_bodies: Option<bool>,
    /// Only messages created after this ISO-8601 timestamp.
    #[serde(default)]
    since_ts: Option<String>,
    /// The viewing agent: only messages it sent or received are listed.
    #[serde(default)]
    agent_name: Option<String>,
    /// Only messages you (agent_name) received and have not read.
    #[serde(default)]
    unread_only: Option<bool>,
    /// Mark the returned messages you (agent_name) received read (in the same step; nothing
    /// is marked without it).
    #[serde(default)]
    mark_read: Option<bool>,
    /// Registration token of the acting agent (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("fetch_topic", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .fetch_topic(FetchTopic {
                project_key: args.project_key,
                topic_name: args.topic_name,
                limit: args.limit,
                include_bodies: args.include_bodies.unwrap_or(true),
                since_ts: args.since_ts,
                agent_name: args.agent_name,
                unread_only: args.unread_only.unwrap_or(false),
                mark_read: args.mark_read.unwrap_or(false),
            })
            .await
    })
}
