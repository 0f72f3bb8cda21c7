//! Contact-policy enforcement on send and reply (docs/compat/tools.md §5.2).

use std::collections::HashSet;

use crate::config::CoreConfig;
use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::time::Timestamp;
use crate::ops::contacts::{REQUEST_TTL_SECONDS, file_request};
use crate::records::{
    Agent, AgentId, ContactPolicy, LinkStatus, MessageId, Project, RecipientKind,
};
use crate::store::Db;

/// Error type of a send blocked by contact policy.
pub const CONTACT_REQUIRED: &str = "CONTACT_REQUIRED";

/// The enforcement settings, copied out of the config for a store job.
#[derive(Debug, Clone, Copy)]
pub struct Enforcement {
    pub enabled: bool,
    pub auto_ttl_seconds: i64,
    pub auto_handshake_on_block: bool,
    /// The `auto` policy admits a sender with no recent exchange (REST's rules).
    pub auto_admits_first_contact: bool,
}

impl Enforcement {
    /// Reads the settings from the core configuration.
    pub fn from_config(config: &CoreConfig) -> Self {
        Self {
            enabled: config.contact_enforcement_enabled,
            auto_ttl_seconds: config.contact_auto_ttl_seconds,
            auto_handshake_on_block: config.auto_handshake_on_block,
            auto_admits_first_contact: false,
        }
    }
}

/// Checks every raw recipient name of a send; when `auto_contact` is on, approves blocked
/// recipients the caller's session is authenticated as (`session_agents`) and files contact
/// requests for the others, then fails with CONTACT_REQUIRED if any remain blocked.
#[allow(clippy::too_many_arguments)]
pub fn enforce_send(
    db: &Db<'_>,
    project: &Project,
    sender: &Agent,
    thread_id: Option<&str>,
    names: &[String],
    enforcement: Enforcement,
    auto_contact: bool,
    session_agents: &[AgentId],
) -> Result<()> {
    if !enforcement.enabled {
        return Ok(());
    }
    let now = Timestamp::now();
    let mut blocked = Vec::new();
    // Thread participants may always write to each other. Listing them scans the thread (up
    // to 500 messages), so it is done only for a recipient whose policy does not already let
    // the sender in.
    let mut participants: Option<HashSet<String>> = None;
    for name in names {
        let Some(recipient) = db.agent_by_name(project.id, name)? else { continue };
        let plainly_open = recipient.retired_at.is_none()
            && (recipient.id == sender.id || recipient.contact_policy == ContactPolicy::Open);
        if plainly_open {
            continue;
        }
        if let Some(thread) = thread_id {
            let in_thread = match &participants {
                Some(set) => set,
                None => participants.insert(
                    db.thread_participant_names(project.id, thread, sender.id)?
                        .into_iter()
                        .collect(),
                ),
            };
            if in_thread.contains(name) {
                continue;
            }
        }
        if !allowed(db, project, sender, &recipient, enforcement, now)? {
            blocked.push(recipient);
        }
    }
    if blocked.is_empty() {
        return Ok(());
    }
    let mut requested = Vec::new();
    let mut approved = 0;
    if auto_contact {
        for recipient in &blocked {
            if session_agents.contains(&recipient.id) {
                // The caller is also the recipient: the handshake's fast path.
                let expires = now.plus_seconds(enforcement.auto_ttl_seconds);
                let (a, b) = ((project.id, sender.id), (project.id, recipient.id));
                db.upsert_link(a, b, LinkStatus::Approved, "", Some(expires), now)?;
                approved += 1;
                continue;
            }
            file_request(
                db,
                (project, sender),
                (project, recipient),
                "",
                REQUEST_TTL_SECONDS,
                now,
            )?;
            requested.push(recipient.name.clone());
        }
    }
    if approved > 0 {
        // The reference retries over every recipient, allowing only self, `open` and an
        // active approved link (thread and recent-contact allowances are not re-applied).
        blocked.clear();
        for name in names {
            let Some(recipient) = db.agent_by_name(project.id, name)? else { continue };
            let passes = recipient.id == sender.id
                || recipient.contact_policy == ContactPolicy::Open
                || db
                    .link_between(sender.id, recipient.id)?
                    .is_some_and(|l| l.is_active_approved(now));
            if !passes {
                blocked.push(recipient);
            }
        }
        if blocked.is_empty() {
            return Ok(());
        }
    }
    Err(contact_required(sender, &blocked, &requested))
}

/// Checks the routed local recipients of a reply: thread participants pass, no auto-requests.
pub fn enforce_reply(
    db: &Db<'_>,
    project: &Project,
    sender: &Agent,
    thread_id: &str,
    recipients: &[(Agent, RecipientKind)],
    enforcement: Enforcement,
) -> Result<()> {
    if !enforcement.enabled {
        return Ok(());
    }
    let participants: HashSet<String> =
        db.thread_participant_names(project.id, thread_id, sender.id)?.into_iter().collect();
    let root_sender = thread_id
        .parse::<i64>()
        .ok()
        .and_then(|id| db.listed_message(MessageId(id)).ok().flatten())
        .map(|m| m.sender_name);
    let now = Timestamp::now();
    let mut blocked = Vec::new();
    for (recipient, _) in recipients {
        if participants.contains(&recipient.name) || root_sender.as_deref() == Some(&recipient.name)
        {
            continue;
        }
        if !allowed(db, project, sender, recipient, enforcement, now)? {
            blocked.push(recipient.clone());
        }
    }
    if blocked.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = blocked.iter().map(|a| a.name.as_str()).collect();
    Err(Error::denied(
        CONTACT_REQUIRED,
        format!(
            "Contact approval required for recipients: {}. Ask them with request_contact and have \
         them approve with respond_contact before replying.",
            names.join(", ")
        ),
    ))
}

/// Whether `recipient`'s policy lets `sender` in (retired and block_all recipients fail loudly).
fn allowed(
    db: &Db<'_>,
    project: &Project,
    sender: &Agent,
    recipient: &Agent,
    enforcement: Enforcement,
    now: Timestamp,
) -> Result<bool> {
    if recipient.retired_at.is_some() {
        return Err(Error::denied(
            "AGENT_RETIRED",
            format!("Recipient '{}' is retired and cannot receive messages.", recipient.name),
        ));
    }
    if recipient.id == sender.id {
        return Ok(true);
    }
    match recipient.contact_policy.as_str() {
        "open" => return Ok(true),
        "block_all" => {
            return Err(blocked(recipient));
        }
        "auto" if enforcement.auto_admits_first_contact => return Ok(true),
        "auto" => {
            let since = now.plus_seconds(-enforcement.auto_ttl_seconds);
            if db.exchanged_since(project.id, sender.id, recipient.id, since)? {
                return Ok(true);
            }
        }
        _ => {}
    }
    Ok(db.link_between(sender.id, recipient.id)?.is_some_and(|l| l.is_active_approved(now)))
}

/// CONTACT_BLOCKED for a recipient whose policy is `block_all`: the reference's sentence
/// (clients match it), then the recipient's name, so a send to several says which one refused.
pub(crate) fn blocked(recipient: &Agent) -> Error {
    Error::denied(
        "CONTACT_BLOCKED",
        format!(
            "Recipient is not accepting messages. ('{}' has contact policy block_all.)",
            recipient.name
        ),
    )
}

fn contact_required(sender: &Agent, blocked: &[Agent], requested: &[String]) -> Error {
    let names: Vec<&str> = blocked.iter().map(|a| a.name.as_str()).collect();
    let list = bounds::listed_names(&names);
    let mut message = format!(
        "Contact approval required for recipients: {list}. Before retrying, create a pending \
         request with `request_contact(project_key, from_agent='{}', to_agent=<recipient>)`, \
         then have the recipient approve it with `respond_contact(...)`. Alternatively, send \
         your message inside a recent thread that already includes them.",
        sender.name
    );
    if !requested.is_empty() {
        message.push_str(&format!(
            " Contact requests were sent automatically to: {}; once they approve (or reply), \
             retry.",
            bounds::listed_names(requested)
        ));
    }
    Error::denied(CONTACT_REQUIRED, message)
}
