//! reply_message's transaction: the original must be visible to the sender; the reply
//! goes to its thread, by default to its sender, under the `Re:` subject.

use super::delivery::{Delivery, deliver_per_project};
use super::inbox::not_visible;
use super::{ReplyMessage, ReplyOutcome, total_failure};
use crate::error::Result;
use crate::ops::contacts::policy::{self, Enforcement};
use crate::ops::messaging::routing::{RecipientNames, Route};
use crate::ops::resolve;
use crate::records::{Agent, RecipientKind};
use crate::store::Db;

pub(super) fn reply_in_tx(
    db: &Db<'_>,
    req: ReplyMessage,
    enforcement: Enforcement,
    enforce_reservations: bool,
) -> Result<ReplyOutcome> {
    let project = resolve::project(db, &req.project_key)?;
    let sender = resolve::agent(db, &project, &req.sender_name, "sender_name")?;
    let original = db
        .listed_message(req.message_id)?
        .filter(|m| m.message.project_id == project.id)
        .ok_or_else(|| not_visible(req.message_id, &sender.name))?;
    let visible = original.message.sender_id == sender.id
        || db.receipt(original.message.id, sender.id)?.is_some();
    if !visible {
        return Err(not_visible(req.message_id, &sender.name));
    }
    let thread_key =
        original.message.thread_id.clone().unwrap_or_else(|| original.message.id.to_string());
    let to = match req.to.clone() {
        Some(to) => to,
        None if original.message.sender_id == sender.id => db
            .recipients_of(original.message.id)?
            .into_iter()
            .filter(|(kind, _, _)| *kind == RecipientKind::To)
            .map(|(_, name, _)| name)
            .collect(),
        // A sender from another project is answered at its address there.
        None if original.sender_project_id != project.id => {
            vec![format!("project:{}#{}", original.sender_project_slug, original.sender_name)]
        }
        None => vec![original.sender_name.clone()],
    };
    let names = RecipientNames::new(&to, &req.cc, &req.bcc);
    let route = Route {
        project: &project,
        sender: &sender,
        thread_id: Some(&thread_key),
        lead: "Unable to send reply",
        auto_contact: false,
    };
    let recipients = names.resolve(db, &route)?;
    let local: Vec<(Agent, RecipientKind)> =
        recipients.iter().filter(|(a, _)| a.project_id == project.id).cloned().collect();
    policy::enforce_reply(db, &project, &sender, &thread_key, &local, enforcement)?;
    let subject =
        reply_subject(&original.message.subject, req.subject_prefix.as_deref().unwrap_or("Re:"));
    if recipients.is_empty() {
        return Ok(ReplyOutcome {
            payload: None,
            thread_id: Some(thread_key),
            reply_to: req.message_id,
            deliveries: Vec::new(),
            count: 0,
            verified_sender: false,
            delivery_errors: Vec::new(),
            error: None,
        });
    }
    let mut reply = Delivery::new(&project, &sender, subject, req.body_md);
    reply.message.importance = original.message.importance.clone();
    reply.message.ack_required = original.message.ack_required;
    reply.message.thread_id = Some(thread_key.clone());
    reply.message.topic = original.message.topic.clone();
    let (deliveries, delivery_errors) =
        deliver_per_project(db, reply, recipients, enforce_reservations)?;
    // With no delivery there is no payload to flatten: the thread and the error say why.
    let error = if deliveries.is_empty() { total_failure(&delivery_errors) } else { None };
    Ok(ReplyOutcome {
        payload: deliveries.first().map(|d| d.payload.clone()),
        thread_id: error.is_some().then_some(thread_key),
        reply_to: req.message_id,
        count: deliveries.len(),
        deliveries,
        verified_sender: false,
        delivery_errors,
        error,
    })
}

/// `Re: <subject>` unless the subject already starts with the prefix (no `Re: Re:` chains).
pub fn reply_subject(original: &str, prefix: &str) -> String {
    let prefix = prefix.trim();
    let already = original.len() >= prefix.len()
        && original.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix));
    if prefix.is_empty() || already {
        original.to_string()
    } else {
        format!("{prefix} {original}").trim().to_string()
    }
}
