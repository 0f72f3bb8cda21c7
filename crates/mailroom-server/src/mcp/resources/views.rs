//! Acknowledgement views of an agent (docs/compat/resources.md §5): urgent unread messages,
//! messages waiting for an acknowledgement, and stale / overdue acknowledgements.

use mailroom_core::Error;
use mailroom_core::ops::messaging::ack_views::AckView;
use serde_json::Value;

use super::{Params, Resource, boxed, path_var, required_project, to_json};
use crate::state::AppState;

/// Default age after which a pending acknowledgement is stale (`ACK_TTL_SECONDS`).
const DEFAULT_ACK_TTL_SECONDS: i64 = 1800;

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(
            "resource://views/urgent-unread/{agent}{?project,limit,agent_token,format}",
            "views_urgent_unread",
            "High and urgent messages the agent has not read.",
            |state, params| boxed(view(state, params, "urgent-unread")),
        ),
        Resource::new(
            "resource://views/ack-required/{agent}{?project,limit,agent_token,format}",
            "views_ack_required",
            "Messages waiting for the agent's acknowledgement, newest first.",
            |state, params| boxed(view(state, params, "ack-required")),
        ),
        Resource::new(
            "resource://views/acks-stale/{agent}{?project,ttl_seconds,limit,agent_token,format}",
            "views_acks_stale",
            "Pending acknowledgements older than ttl_seconds (default 1800), oldest first.",
            |state, params| boxed(view(state, params, "acks-stale")),
        ),
        Resource::new(
            "resource://views/ack-overdue/{agent}{?project,ttl_minutes,limit,agent_token,format}",
            "views_ack_overdue",
            "Pending acknowledgements older than ttl_minutes (default 60), oldest first.",
            |state, params| boxed(view(state, params, "ack-overdue")),
        ),
    ]
}

async fn view(state: AppState, params: Params, name: &'static str) -> Result<Value, Error> {
    let project = required_project(&params, name)?;
    let view = match name {
        "urgent-unread" => AckView::UrgentUnread,
        "ack-required" => AckView::AckRequired,
        "acks-stale" => AckView::AcksStale {
            ttl_seconds: params.int("ttl_seconds").unwrap_or(DEFAULT_ACK_TTL_SECONDS),
        },
        _ => AckView::AckOverdue { ttl_minutes: params.int("ttl_minutes").unwrap_or(60).max(1) },
    };
    let agent = path_var(&params, "agent");
    to_json(state.core.ack_view(project, agent, view, params.int("limit")).await?)
}
