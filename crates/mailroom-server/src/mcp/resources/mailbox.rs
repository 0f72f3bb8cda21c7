//! Message-level resources (docs/compat/resources.md §4): one message, a thread, and an agent's
//! inbox, outbox and combined mailbox. Agent-scoped ones need the `project` parameter.
//! (`agent_token` is accepted; the reference's default mode, which the fixture records,
//! checks no tokens.)

use mailroom_core::Error;
use mailroom_core::ops::messaging::InboxFilter;
use mailroom_core::ops::messaging::mailbox::{MailboxKind, MailboxRequest};
use serde_json::Value;

use super::{Params, Resource, boxed, path_var, required_project, to_json};
use crate::state::AppState;

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(
            "resource://message/{message_id}{?project,agent,agent_token,format}",
            "message",
            "One message with its body and recipients.",
            |state, params| boxed(message(state, params)),
        ),
        Resource::new(
            "resource://thread/{thread_id}{?project,agent,agent_token,include_bodies,format}",
            "thread",
            "A thread's messages, oldest first.",
            |state, params| boxed(thread(state, params)),
        ),
        Resource::new(
            "resource://inbox/{agent}{?project,since_ts,urgent_only,include_bodies,limit,agent_token,format}",
            "inbox",
            "An agent's inbox, newest first, as fetch_inbox, with commit notes.",
            |state, params| boxed(listing(state, params, MailboxKind::Inbox, "inbox")),
        ),
        Resource::new(
            "resource://mailbox/{agent}{?project,limit,agent_token,format}",
            "mailbox",
            "An agent's received and sent messages, newest first.",
            |state, params| boxed(listing(state, params, MailboxKind::Mailbox, "mailbox")),
        ),
        Resource::new(
            "resource://mailbox-with-commits/{agent}{?project,limit,agent_token,format}",
            "mailbox_with_commits",
            "An agent's received and sent messages with commit details.",
            |state, params| {
                boxed(listing(
                    state,
                    params,
                    MailboxKind::MailboxWithCommits,
                    "mailbox-with-commits",
                ))
            },
        ),
        Resource::new(
            "resource://outbox/{agent}{?project,limit,include_bodies,since_ts,agent_token,format}",
            "outbox",
            "Messages an agent sent, newest first, with recipients.",
            |state, params| boxed(listing(state, params, MailboxKind::Outbox, "outbox")),
        ),
    ]
}

async fn message(state: AppState, params: Params) -> Result<Value, Error> {
    let project = required_project(&params, "message")?;
    let raw = path_var(&params, "message_id");
    let id = raw
        .trim()
        .parse()
        .map_err(|_| Error::invalid(format!("message_id must be an integer, got '{raw}'")))?;
    to_json(state.core.message_detail(project, id, params.string("agent")).await?)
}

async fn thread(state: AppState, params: Params) -> Result<Value, Error> {
    let project = required_project(&params, "thread")?;
    let thread_id = path_var(&params, "thread_id");
    let bodies = params.bool("include_bodies", false);
    to_json(state.core.thread_view(project, thread_id, bodies, params.string("agent")).await?)
}

async fn listing(
    state: AppState,
    params: Params,
    kind: MailboxKind,
    name: &str,
) -> Result<Value, Error> {
    let request = MailboxRequest {
        project_key: required_project(&params, name)?,
        agent_name: path_var(&params, "agent"),
        kind,
        filter: InboxFilter {
            limit: params.int("limit"),
            include_bodies: params.bool("include_bodies", false),
            urgent_only: params.bool("urgent_only", false),
            since_ts: params.string("since_ts"),
            ..InboxFilter::default()
        },
    };
    to_json(state.core.mailbox(request).await?)
}
