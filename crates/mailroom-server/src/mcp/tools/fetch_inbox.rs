//! fetch_inbox: the agent's recent messages, newest first. Marks nothing read unless
//! `mark_read` asks.

use mailroom_core::ops::messaging::{FetchInbox, InboxFilter};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Fetch the agent's inbox, newest first (limit 20 by default, at most \
     1000), optionally only urgent messages, only since a timestamp, and with bodies.";

/// Arguments of fetch_inbox.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// Most messages to return (1-1000, default 20).
    #[serde(default)]
    limit: Option<i64>,
    /// Only importance "high" or "urgent".
    #[serde(default)]
    urgent_only: Option<bool>,
    /// Include message bodies.
    #[serde(default)]
    include_bodies: Option<bool>,
    /// Only messages created after this ISO-8601 timestamp.
    #[serde(default)]
    since_ts: Option<String>,
    /// Only messages you have not read.
    #[serde(default)]
    unread_only: Option<bool>,
    /// Mark the returned messages read (in the same step; nothing is marked without it).
    #[serde(default)]
    mark_read: Option<bool>,
    /// Only messages with this topic (case-insensitive).
    #[serde(default)]
    topic: Option<String>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::json_text("fetch_inbox", DESCRIPTION, |state: AppState, args: Args| async move {
        // The reader's signal file goes once it has read its inbox (signals.rs).
        let signalled =
            state.signals.enabled().then(|| (args.project_key.clone(), args.agent_name.clone()));
        let inbox = state
            .core
            .fetch_inbox_json(FetchInbox {
                project_key: args.project_key,
                agent_name: args.agent_name,
                filter: InboxFilter {
                    limit: args.limit,
                    urgent_only: args.urgent_only.unwrap_or(false),
                    include_bodies: args.include_bodies.unwrap_or(false),
                    since_ts: args.since_ts,
                    unread_only: args.unread_only.unwrap_or(false),
                    mark_read: args.mark_read.unwrap_or(false),
                },
                topic: args.topic,
            })
            .await?;
        if let Some((project_key, agent)) = signalled
            && let Ok((slug, agent)) = state.core.mailbox_owner(project_key, agent).await
        {
            state.signals.clear(&slug, &agent);
        }
        Ok(inbox)
    })
}
