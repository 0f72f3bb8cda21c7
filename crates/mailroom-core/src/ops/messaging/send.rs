//! send_message's work: the images stored before the transaction, then inside it the
//! checks (recipient names, thread id, topic, contact policy), the routing and the deliveries.

use super::delivery::{Delivery, deliver_per_project};
use super::{SendMessage, SendOutcome};
use crate::archive::attachments::{self, AttachmentSettings, EmbedPolicy, ProcessedBody};
use crate::error::{Error, Result};
use crate::model::names::detect_name_mistake;
use crate::model::thread_id::{is_valid_thread_id, is_valid_topic};
use crate::model::time::Timestamp;
use crate::ops::contacts::policy::{self, Enforcement};
use crate::ops::conventions::Conventions;
use crate::ops::messaging::routing::{RecipientNames, Route};
use crate::ops::{Mailroom, resolve};
use crate::records::{Attachments, ContactPolicy, Importance, Project};
use crate::store::Db;

/// Subjects longer than this are cut (the reference's limit).
/// Longest subject, in characters (longer ones are cut; the overseer's are refused).
pub(crate) const MAX_SUBJECT_CHARS: usize = 200;

impl Mailroom {
    /// Converts and stores the images of a send before its transaction (image work is slow
    /// and touches files, so it stays out of the single writer). `None` when the message has
    /// no image references or attachment paths.
    pub(super) async fn store_attachments(
        &self,
        req: &SendMessage,
    ) -> Result<Option<ProcessedBody>> {
        if req.attachment_paths.is_empty() && !req.body_md.contains("![") {
            return Ok(None);
        }
        let Some(archive) = &self.archive else {
            if req.attachment_paths.is_empty() {
                return Ok(None);
            }
            return Err(Error::invalid(
                "attachment_paths: attachments are stored in the Git archive, which is disabled \
                 (ARCHIVE_ENABLED=false)",
            ));
        };
        let (project_key, sender_name) = (req.project_key.clone(), req.sender_name.clone());
        let (project, sender) = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let sender = resolve::agent(db, &project, &sender_name, "sender_name")?;
                Ok((project, sender))
            })
            .await?;
        let config = &self.config.archive;
        let settings = AttachmentSettings {
            convert_images: config.convert_images,
            inline_max_bytes: config.inline_image_max_bytes,
            allow_absolute_paths: config.allow_absolute_attachment_paths,
            keep_original: config.keep_original_images,
        };
        let convert = req.convert_images.unwrap_or(config.convert_images);
        let policy = EmbedPolicy::from_agent_policy(&sender.attachments_policy);
        let root = archive.root().to_path_buf();
        let (body, paths) = (req.body_md.clone(), req.attachment_paths.clone());
        let now = Timestamp::now().to_iso();
        let work = move || {
            // Relative attachment paths resolve under the project's archive directory.
            let _ = std::fs::create_dir_all(root.join("projects").join(&project.slug));
            attachments::process(
                &root,
                &project.slug,
                &body,
                &paths,
                policy,
                convert,
                &settings,
                &now,
            )
        };
        let processed = tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| Error::internal(format!("attachment task failed: {e}")))?;
        match processed {
            Ok(p) => Ok(Some(p)),
            Err(e) if e.is_invalid_argument() => Err(Error::invalid(e.to_string())),
            Err(e) => Err(e
                .write_error()
                .and_then(|io| Error::from_storage_io(io, "the archive"))
                .unwrap_or_else(|| Error::internal(e.to_string()))),
        }
    }
}

pub(super) fn send_in_tx(
    db: &Db<'_>,
    req: SendMessage,
    processed: Option<ProcessedBody>,
    enforcement: Enforcement,
    enforce_reservations: bool,
) -> Result<SendOutcome> {
    let project = resolve::project(db, &req.project_key)?;
    let topic = validated_topic(req.topic.as_deref())?;
    let to = if req.broadcast {
        if !req.to.is_empty() {
            return Err(Error::invalid("broadcast=true requires an empty 'to' list"));
        }
        broadcast_targets(db, &project, &req.sender_name)?
    } else {
        req.to.clone()
    };
    let scripted = req.conventions == Conventions::Script;
    if !scripted {
        screen_recipient_names(&to)?;
    }
    let enforcement = Enforcement { auto_admits_first_contact: scripted, ..enforcement };
    let thread_id = validated_thread_id(req.thread_id.as_deref())?;
    let sender = resolve::agent(db, &project, &req.sender_name, "sender_name")?;
    let names = RecipientNames::new(&to, &req.cc, &req.bcc);
    let auto_contact = req.auto_contact_if_blocked.unwrap_or(enforcement.auto_handshake_on_block);
    policy::enforce_send(
        db,
        &project,
        &sender,
        thread_id.as_deref(),
        &names.all(),
        enforcement,
        auto_contact,
        &req.session_agents,
    )?;
    let route = Route {
        project: &project,
        sender: &sender,
        thread_id: thread_id.as_deref(),
        lead: "Unable to send message",
        auto_contact,
    };
    let recipients = names.resolve(db, &route)?;
    if recipients.is_empty() {
        return Ok(SendOutcome {
            deliveries: Vec::new(),
            count: 0,
            attachments: None,
            verified_sender: false,
            delivery_errors: Vec::new(),
        });
    }
    let (body_md, attachments) = match processed {
        Some(p) => (p.body_md, p.attachments),
        None => (req.body_md, Vec::new()),
    };
    let mut message = Delivery::new(&project, &sender, truncate_subject(&req.subject), body_md);
    message.message.attachments = Attachments(
        serde_json::to_string(&attachments)
            .map_err(|e| Error::internal(format!("attachments metadata: {e}")))?,
    );
    message.message.importance = Importance::from_input(req.importance);
    message.message.ack_required = req.ack_required;
    message.message.thread_id = thread_id;
    message.message.topic = topic;
    let (deliveries, delivery_errors) =
        deliver_per_project(db, message, recipients, enforce_reservations)?;
    Ok(SendOutcome {
        count: deliveries.len(),
        attachments: (deliveries.len() == 1).then_some(attachments),
        deliveries,
        verified_sender: false,
        delivery_errors,
    })
}

fn screen_recipient_names(to: &[String]) -> Result<()> {
    for name in to {
        if let Some(mistake) = detect_name_mistake(name.trim()) {
            return Err(Error::invalid_kind(
                mistake.error_type(),
                format!("Invalid recipient '{name}': {}", mistake.explain(name.trim())),
            ));
        }
    }
    Ok(())
}

pub(crate) fn validated_thread_id(raw: Option<&str>) -> Result<Option<String>> {
    match raw.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if is_valid_thread_id(t) => Ok(Some(t.to_string())),
        Some(t) => Err(Error::invalid_kind(
            "INVALID_THREAD_ID",
            format!(
                "thread_id '{t}' is invalid: use 1-128 letters, digits, '.', '_' or '-', starting \
             with a letter or digit"
            ),
        )),
    }
}

fn validated_topic(raw: Option<&str>) -> Result<Option<String>> {
    match raw.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) if is_valid_topic(t) => Ok(Some(t.to_string())),
        Some(t) => Err(Error::invalid_kind(
            "INVALID_TOPIC",
            format!("topic '{t}' is invalid: use 1-64 letters, digits, '_' or '-'"),
        )),
    }
}

fn broadcast_targets(db: &Db<'_>, project: &Project, sender: &str) -> Result<Vec<String>> {
    let cutoff = Timestamp::now().plus_seconds(-30 * 86_400);
    Ok(db
        .agents_of_project(project.id)?
        .into_iter()
        .filter(|a| !a.name.eq_ignore_ascii_case(sender.trim()))
        .filter(|a| a.contact_policy != ContactPolicy::BlockAll && a.retired_at.is_none())
        .filter(|a| a.last_active_ts >= cutoff)
        .map(|a| a.name)
        .collect())
}

fn truncate_subject(subject: &str) -> String {
    subject.chars().take(MAX_SUBJECT_CHARS).collect()
}
