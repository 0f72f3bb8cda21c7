//! Storing a message: once per project its recipients belong to, each delivery checked
//! against the reservations on its archive surfaces first when enforcement is on.

use super::{DeliveryError, DeliveryOut, ReturnedError, SentPayload};
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::output::MessageOut;
use crate::ops::reservations::mail_surfaces::{self, MailSurfaces};
use crate::records::{Agent, Project};
use crate::store::Db;
use crate::store::db::archive_queue::ArchiveKind;
use crate::store::db::messages::NewMessage;

/// A message ready to be stored in one project.
pub(crate) struct Delivery<'a> {
    pub project: &'a Project,
    pub sender: &'a Agent,
    pub subject: String,
    pub body_md: String,
    pub importance: String,
    pub ack_required: bool,
    pub thread_id: Option<String>,
    pub topic: Option<String>,
    /// Resolved recipients with their kind (`to`/`cc`/`bcc`), de-duplicated.
    pub recipients: Vec<(Agent, &'static str)>,
    /// The attachments metadata list as stored (JSON array text).
    pub attachments: String,
}

/// Stores `message` once per project its recipients belong to, the sender's own project first: a
/// message to another project's agent lives in that project (docs/compat/tools.md §4.3, §5.4).
/// With `guard` (FILE_RESERVATIONS_ENFORCEMENT_ENABLED), a delivery whose archive surfaces
/// other agents have reserved writes nothing and is listed among the failures instead.
pub(super) fn deliver_per_project(
    db: &Db<'_>,
    message: Delivery<'_>,
    recipients: Vec<(Agent, &'static str)>,
    now: Timestamp,
    guard: bool,
) -> Result<(Vec<DeliveryOut>, Vec<DeliveryError>)> {
    let mut project_ids = vec![message.project.id];
    for (agent, _) in &recipients {
        if !project_ids.contains(&agent.project_id) {
            project_ids.push(agent.project_id);
        }
    }
    let mut deliveries = Vec::with_capacity(project_ids.len());
    let mut failures = Vec::new();
    for project_id in project_ids {
        let group: Vec<(Agent, &'static str)> =
            recipients.iter().filter(|(a, _)| a.project_id == project_id).cloned().collect();
        if group.is_empty() {
            continue;
        }
        let target = if project_id == message.project.id {
            message.project.clone()
        } else {
            db.project_by_id(project_id)?
                .ok_or_else(|| Error::internal("recipient project vanished"))?
        };
        let (body_md, attachments) = if target.id == message.project.id {
            (message.body_md.clone(), message.attachments.clone())
        } else {
            attachments_moved_to(&message, &target)
        };
        let delivery = Delivery {
            project: &target,
            recipients: group,
            subject: message.subject.clone(),
            body_md,
            importance: message.importance.clone(),
            thread_id: message.thread_id.clone(),
            topic: message.topic.clone(),
            attachments,
            ..message
        };
        if guard {
            let conflicts = reserved_surfaces(db, &delivery, now)?;
            if !conflicts.is_empty() {
                let error = ReturnedError::reservation_conflict(conflicts);
                failures.push(DeliveryError { project: target.human_key.clone(), error });
                continue;
            }
        }
        let payload = deliver(db, &delivery, now)?;
        deliveries.push(DeliveryOut { project: target.human_key, payload });
    }
    Ok((deliveries, failures))
}

/// The body and attachments metadata of `message` as delivered in `target`, another project:
/// each project keeps its own copy of a message's images (docs/compat/archive.md §7), so the
/// paths of the images stored under the sending project point into the target's directory,
/// where the archive writer copies the files (content-addressed: the same names).
fn attachments_moved_to(message: &Delivery<'_>, target: &Project) -> (String, String) {
    if message.attachments.trim() == "[]" {
        return (message.body_md.clone(), message.attachments.clone());
    }
    // Slugs are lowercase letters, digits and dashes: the prefix reads the same in Markdown
    // and in JSON text.
    let from = format!("projects/{}/attachments/", message.project.slug);
    let to = format!("projects/{}/attachments/", target.slug);
    (message.body_md.replace(&from, &to), message.attachments.replace(&from, &to))
}

/// The sweep and check of docs/compat/tools.md §4.3 step 1 (and §6.7) for one delivery: expired
/// reservations are released, then other agents' reservations covering the archive paths the
/// delivery would write are returned.
fn reserved_surfaces(
    db: &Db<'_>,
    d: &Delivery<'_>,
    now: Timestamp,
) -> Result<Vec<mail_surfaces::SurfaceConflict>> {
    // The reference sweeps before every delivery while enforcement is on (one UPDATE on the
    // expiry index, artifacts queued).
    crate::ops::reservations::sweep_in_tx(db, d.project.id, &[], now)?;
    let surfaces = MailSurfaces {
        local_sender: (d.sender.project_id == d.project.id).then_some(d.sender.name.as_str()),
        recipients: d.recipients.iter().map(|(a, _)| a.name.as_str()).collect(),
        thread_id: d.thread_id.as_deref(),
        // The metadata list is stored as JSON text; anything but an empty list means files.
        attachments: d.attachments.trim() != "[]",
    };
    mail_surfaces::surface_conflicts(db, d.project.id, d.sender.id, &surfaces, now)
}

/// Stores one message with its recipients and bumps the sender's activity.
pub(crate) fn deliver(db: &Db<'_>, d: &Delivery<'_>, now: Timestamp) -> Result<SentPayload> {
    let id = db.insert_message(&NewMessage {
        id: None,
        project_id: d.project.id,
        sender_id: d.sender.id,
        thread_id: d.thread_id.as_deref(),
        topic: d.topic.as_deref(),
        subject: &d.subject,
        body_md: &d.body_md,
        attachments: &d.attachments,
        importance: &d.importance,
        ack_required: d.ack_required,
        created_ts: now,
    })?;
    let mut lists: [Vec<String>; 3] = Default::default();
    for (agent, kind) in &d.recipients {
        db.insert_recipient(id, agent.id, kind)?;
        let slot = match *kind {
            "to" => 0,
            "cc" => 1,
            _ => 2,
        };
        lists[slot].push(agent.name.clone());
    }
    db.touch_agent(d.sender.id, now)?;
    db.enqueue_archive(ArchiveKind::Message, id)?;
    let row =
        db.listed_message(id)?.ok_or_else(|| Error::internal("message vanished after insert"))?;
    let [to, cc, bcc] = lists;
    Ok(SentPayload { message: MessageOut::from_listing(&row, true), to, cc, bcc })
}
