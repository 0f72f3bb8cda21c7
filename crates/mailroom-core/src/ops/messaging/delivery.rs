//! Storing a message: once per project its recipients belong to, each delivery checked
//! against the reservations on its archive surfaces first when enforcement is on.

use super::{DeliveryError, DeliveryOut, ReturnedError};
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::output::{AddressedMessage, MessageOut};
use crate::ops::reservations::mail_surfaces::{self, MailSurfaces};
use crate::records::{Agent, Attachments, Importance, Project};
use crate::records::{NewMessage, RecipientKind};
use crate::store::Db;
use crate::store::db::archive_queue::ArchiveKind;
use crate::store::db::messages::RecipientLists;

/// A message ready to be stored in one project: the row to insert (its project and sender
/// ids are `project`'s and `sender`'s) and the recipients there.
pub(crate) struct Delivery<'a> {
    pub project: &'a Project,
    pub sender: &'a Agent,
    pub message: NewMessage,
    /// Resolved recipients with their kind, de-duplicated.
    pub recipients: Vec<(Agent, RecipientKind)>,
}

impl<'a> Delivery<'a> {
    /// A delivery of a message written now by `sender` in `project`, to no one yet.
    pub fn new(project: &'a Project, sender: &'a Agent, subject: String, body_md: String) -> Self {
        let message = NewMessage {
            id: None,
            project_id: project.id,
            sender_id: sender.id,
            thread_id: None,
            topic: None,
            subject,
            body_md,
            importance: Importance::normal(),
            ack_required: false,
            created_ts: Timestamp::now(),
            attachments: Attachments::none(),
        };
        Self { project, sender, message, recipients: Vec::new() }
    }
}

/// Stores `message` once per project its recipients belong to, the sender's own project first: a
/// message to another project's agent lives in that project (docs/compat/tools.md §4.3, §5.4).
/// With `enforce_reservations` (FILE_RESERVATIONS_ENFORCEMENT_ENABLED), a delivery whose archive surfaces
/// other agents have reserved writes nothing and is listed among the failures instead.
pub(super) fn deliver_per_project(
    db: &Db<'_>,
    message: Delivery<'_>,
    recipients: Vec<(Agent, RecipientKind)>,
    enforce_reservations: bool,
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
        let group: Vec<(Agent, RecipientKind)> =
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
        let mut copy = message.message.clone();
        if target.id != message.project.id {
            (copy.body_md, copy.attachments) = attachments_moved_to(&message, &target);
            copy.project_id = target.id;
        }
        let delivery = Delivery { project: &target, message: copy, recipients: group, ..message };
        if enforce_reservations {
            let conflicts = reserved_surfaces(db, &delivery)?;
            if !conflicts.is_empty() {
                let error = ReturnedError::reservation_conflict(conflicts);
                failures.push(DeliveryError { project: target.human_key.clone(), error });
                continue;
            }
        }
        let payload = deliver(db, &delivery)?;
        deliveries.push(DeliveryOut { project: target.human_key, payload });
    }
    Ok((deliveries, failures))
}

/// The body and attachments metadata of `message` as delivered in `target`, another project:
/// each project keeps its own copy of a message's images (docs/compat/archive.md §7), so the
/// paths of the images stored under the sending project point into the target's directory,
/// where the archive writer copies the files (content-addressed: the same names).
fn attachments_moved_to(delivery: &Delivery<'_>, target: &Project) -> (String, Attachments) {
    let message = &delivery.message;
    if message.attachments.is_empty() {
        return (message.body_md.clone(), message.attachments.clone());
    }
    // Slugs are lowercase letters, digits and dashes: the prefix reads the same in Markdown
    // and in JSON text.
    let from = format!("projects/{}/attachments/", delivery.project.slug);
    let to = format!("projects/{}/attachments/", target.slug);
    (
        message.body_md.replace(&from, &to),
        Attachments(message.attachments.as_json().replace(&from, &to)),
    )
}

/// The sweep and check of docs/compat/tools.md §4.3 step 1 (and §6.7) for one delivery: expired
/// reservations are released, then other agents' reservations covering the archive paths the
/// delivery would write are returned.
fn reserved_surfaces(db: &Db<'_>, d: &Delivery<'_>) -> Result<Vec<mail_surfaces::SurfaceConflict>> {
    let now = d.message.created_ts;
    // The reference sweeps before every delivery while enforcement is on (one UPDATE on the
    // expiry index, artifacts queued).
    crate::ops::reservations::sweep_in_tx(db, d.project.id, &[], now)?;
    let surfaces = MailSurfaces {
        local_sender: (d.sender.project_id == d.project.id).then_some(d.sender.name.as_str()),
        recipients: d.recipients.iter().map(|(a, _)| a.name.as_str()).collect(),
        thread_id: d.message.thread_id.as_deref(),
        attachments: !d.message.attachments.is_empty(),
    };
    mail_surfaces::surface_conflicts(db, d.project.id, d.sender.id, &surfaces, now)
}

/// Stores one message with its recipients and bumps the sender's activity.
pub(crate) fn deliver(db: &Db<'_>, d: &Delivery<'_>) -> Result<AddressedMessage> {
    let id = db.insert_message(&d.message)?;
    let mut lists = RecipientLists::default();
    for (agent, kind) in &d.recipients {
        db.insert_recipient(id, agent.id, *kind)?;
        lists.of_kind(*kind).push(agent.name.clone());
    }
    db.touch_agent(d.sender.id, d.message.created_ts)?;
    db.enqueue_archive(ArchiveKind::Message, id)?;
    let row =
        db.listed_message(id)?.ok_or_else(|| Error::internal("message vanished after insert"))?;
    let RecipientLists { to, cc, bcc } = lists;
    Ok(AddressedMessage { message: MessageOut::from_listing(&row, true), to, cc, bcc })
}
