//! send_message, reply_message, fetch_inbox, mark_message_read, acknowledge_message.

mod returned;

use serde::{Serialize, Serializer};

pub use self::returned::{DeliveryError, ReturnedError, total_failure};
use super::conventions::Conventions;
use super::output::{JsonText, MessageListWriter, MessageOut};
use super::policy::{self, Enforcement};
use super::reservations::mail_surfaces::{self, MailSurfaces};
use super::routing::{RECIPIENT_NOT_FOUND, RecipientNames, Route};
use super::{Mailroom, resolve};
use crate::archive::attachments::{self, AttachmentSettings, EmbedPolicy, ProcessedBody};
use crate::error::{Error, Result};
use crate::model::names::detect_name_mistake;
use crate::model::thread_id::{is_valid_thread_id, is_valid_topic};
use crate::model::time::Timestamp;
use crate::records::{Agent, Project};
use crate::store::Db;
use crate::store::db::archive_queue::ArchiveKind;
use crate::store::db::messages::{InboxQuery, NewMessage};

/// Subjects longer than this are cut (the reference's limit).
const MAX_SUBJECT_CHARS: usize = 200;
/// fetch_inbox never returns more than this many messages.
const MAX_INBOX_LIMIT: i64 = 1000;
/// Largest unfiltered inbox page read inline on the async worker (`Store::read_short`).
const SHORT_INBOX_LIMIT: i64 = 100;

/// Arguments of send_message.
#[derive(Debug, Clone, Default)]
pub struct SendMessage {
    pub project_key: String,
    pub sender_name: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body_md: String,
    pub importance: Option<String>,
    pub ack_required: bool,
    pub thread_id: Option<String>,
    pub topic: Option<String>,
    pub broadcast: bool,
    pub auto_contact_if_blocked: Option<bool>,
    /// Image files to attach (resolved under the project's archive directory).
    pub attachment_paths: Vec<String>,
    /// Convert images to WebP; `None` means `CONVERT_IMAGES`.
    pub convert_images: Option<bool>,
    /// Agents the caller's MCP session has authenticated as (tool authentication on): a
    /// blocked recipient among them is approved on the spot (semantics §4.2).
    pub session_agents: Vec<i64>,
    /// Whose rules apply: REST skips the recipient-name screen, and its first message under
    /// the `auto` contact policy needs no handshake.
    pub conventions: Conventions,
}

/// The sender's view of a delivered message: MessageOut with body and recipient lists.
#[derive(Debug, Clone, Serialize)]
pub struct SentPayload {
    #[serde(flatten)]
    pub message: MessageOut,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
}

/// One delivery (one per target project).
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryOut {
    pub project: String,
    pub payload: SentPayload,
}

/// Result of send_message. When no delivery went through but some failed (say, blocked by
/// file reservations), it serialises as the reference's `{"error": {...}}` alone.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    pub deliveries: Vec<DeliveryOut>,
    pub count: usize,
    pub attachments: Option<Vec<serde_json::Value>>,
    pub verified_sender: bool,
    /// The deliveries that failed, by project.
    pub delivery_errors: Vec<DeliveryError>,
}

impl SendOutcome {
    /// The returned error when every delivery failed.
    pub fn failure(&self) -> Option<ReturnedError> {
        if self.deliveries.is_empty() { total_failure(&self.delivery_errors) } else { None }
    }
}

impl Serialize for SendOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Failed {
            error: ReturnedError,
        }
        #[derive(Serialize)]
        struct Sent<'a> {
            deliveries: &'a [DeliveryOut],
            count: usize,
            #[serde(skip_serializing_if = "Option::is_none")]
            attachments: Option<&'a Vec<serde_json::Value>>,
            verified_sender: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            delivery_errors: Option<&'a [DeliveryError]>,
        }
        if let Some(error) = self.failure() {
            return Failed { error }.serialize(serializer);
        }
        Sent {
            deliveries: &self.deliveries,
            count: self.count,
            attachments: self.attachments.as_ref(),
            verified_sender: self.verified_sender,
            delivery_errors: (!self.delivery_errors.is_empty())
                .then_some(self.delivery_errors.as_slice()),
        }
        .serialize(serializer)
    }
}

/// Arguments of reply_message.
#[derive(Debug, Clone, Default)]
pub struct ReplyMessage {
    pub project_key: String,
    pub message_id: i64,
    pub sender_name: String,
    pub body_md: String,
    pub to: Option<Vec<String>>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject_prefix: Option<String>,
}

/// Result of reply_message: the delivered payload flattened, plus delivery bookkeeping.
#[derive(Debug, Clone, Serialize)]
pub struct ReplyOutcome {
    #[serde(flatten)]
    pub payload: Option<SentPayload>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub reply_to: i64,
    pub deliveries: Vec<DeliveryOut>,
    pub count: usize,
    pub verified_sender: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delivery_errors: Vec<DeliveryError>,
    /// The returned error when no delivery went through (see [`total_failure`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ReturnedError>,
}

/// Arguments of fetch_inbox.
#[derive(Debug, Clone, Default)]
pub struct FetchInbox {
    pub project_key: String,
    pub agent_name: String,
    pub limit: Option<i64>,
    pub urgent_only: bool,
    pub include_bodies: bool,
    pub since_ts: Option<String>,
    pub topic: Option<String>,
}

/// Result of mark_message_read.
#[derive(Debug, Clone, Serialize)]
pub struct ReadReceipt {
    pub message_id: i64,
    pub read: bool,
    pub read_at: Option<Timestamp>,
}

/// Result of acknowledge_message.
#[derive(Debug, Clone, Serialize)]
pub struct AckReceipt {
    pub message_id: i64,
    pub acknowledged: bool,
    pub acknowledged_at: Option<Timestamp>,
    pub read_at: Option<Timestamp>,
}

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

impl Mailroom {
    /// Sends a message; the reply goes out once message and recipients are committed.
    pub async fn send_message(&self, req: SendMessage) -> Result<SendOutcome> {
        let enforcement = Enforcement::from_config(&self.config);
        let guard = self.config.reservations_enforcement_enabled;
        let processed = self.store_attachments(&req).await?;
        self.admit_archive_work().await?;
        // Contact requests filed by a blocked send (or one to an unlinked agent of another
        // project) are kept even though the send fails, as in the reference: those outcomes
        // commit and are carried out inside `Ok`. Nothing else is written before they arise.
        // Every other error rolls the whole job back.
        let outcome =
            self.store.write(move |db| match send_in_tx(db, req, processed, enforcement, guard) {
                Err(e) if e.kind == policy::CONTACT_REQUIRED || e.kind == RECIPIENT_NOT_FOUND => {
                    Ok(Err(e))
                }
                other => other.map(Ok),
            });
        outcome.await?
    }

    /// Replies to a message, in its thread, by default to its sender.
    pub async fn reply_message(&self, req: ReplyMessage) -> Result<ReplyOutcome> {
        let enforcement = Enforcement::from_config(&self.config);
        let guard = self.config.reservations_enforcement_enabled;
        self.admit_archive_work().await?;
        self.store.write(move |db| reply_in_tx(db, req, enforcement, guard)).await
    }

    /// The agent's inbox, newest first. Read-only: marks nothing read.
    pub async fn fetch_inbox(&self, req: FetchInbox) -> Result<Vec<MessageOut>> {
        let include_bodies = req.include_bodies;
        self.inbox_page(req, move |db, query| {
            let rows = db.inbox(query)?;
            Ok(rows.iter().map(|r| MessageOut::from_listing(r, include_bodies)).collect())
        })
        .await
    }

    /// [`Self::fetch_inbox`]'s result as its JSON text, written straight from the rows.
    pub async fn fetch_inbox_json(&self, req: FetchInbox) -> Result<JsonText> {
        let include_bodies = req.include_bodies;
        self.inbox_page(req, move |db, query| {
            let mut list = MessageListWriter::new(include_bodies);
            db.inbox_each(query, |row| list.push(row))?;
            list.finish()
        })
        .await
    }

    /// Resolves the inbox's owner and runs `page` on its query.
    async fn inbox_page<T, P>(&self, req: FetchInbox, page: P) -> Result<T>
    where
        T: Send + 'static,
        P: Fn(&Db<'_>, &InboxQuery<'_>) -> Result<T> + Clone + Send + 'static,
    {
        let limit = inbox_limit(req.limit)?;
        let since = parse_since(req.since_ts.as_deref())?;
        let topic =
            req.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        // An unfiltered page reads just its rows off the agent's recipient index: a short
        // read, run inline. A filter may skip many rows per row kept, so filtered (and long)
        // pages go to a blocking thread.
        let short =
            limit <= SHORT_INBOX_LIMIT && !req.urgent_only && since.is_none() && topic.is_none();
        let urgent_only = req.urgent_only;
        let page = move |db: &Db<'_>, project_id: i64, agent_id: i64| {
            let query = InboxQuery {
                project_id,
                agent_id,
                limit,
                urgent_only,
                since,
                topic: topic.as_deref(),
            };
            page(db, &query)
        };
        if short {
            // Inline only while every step is an index lookup: a name that does not resolve
            // takes the blocking road below, where its error compares it with every name.
            let (key, name, page) = (req.project_key.clone(), req.agent_name.clone(), page.clone());
            let found = self
                .store
                .read_short(move |db| {
                    match resolve::project_and_agent_ids_directly(db, &key, &name)? {
                        Some((project_id, agent_id)) => page(db, project_id, agent_id).map(Some),
                        None => Ok(None),
                    }
                })
                .await?;
            if let Some(rows) = found {
                return Ok(rows);
            }
        }
        self.store
            .read(move |db| {
                let project = resolve::project(db, &req.project_key)?;
                let agent = resolve::agent(db, &project, &req.agent_name, "agent_name")?;
                page(db, project.id, agent.id)
            })
            .await
    }

    /// Marks a message read for the agent (first write wins).
    pub async fn mark_message_read(
        &self,
        project_key: String,
        agent_name: String,
        message_id: i64,
    ) -> Result<ReadReceipt> {
        self.store
            .write(move |db| {
                let Some(state) = receipt_after(db, &project_key, &agent_name, message_id, false)?
                else {
                    return Ok(ReadReceipt { message_id, read: false, read_at: None });
                };
                Ok(ReadReceipt {
                    message_id,
                    read: state.read_ts.is_some(),
                    read_at: state.read_ts,
                })
            })
            .await
    }

    /// Acknowledges a message for the agent (also marks it read); first write wins.
    pub async fn acknowledge_message(
        &self,
        project_key: String,
        agent_name: String,
        message_id: i64,
    ) -> Result<AckReceipt> {
        self.store
            .write(move |db| {
                let state = receipt_after(db, &project_key, &agent_name, message_id, true)?;
                Ok(AckReceipt {
                    message_id,
                    acknowledged: state.is_some_and(|s| s.ack_ts.is_some()),
                    acknowledged_at: state.and_then(|s| s.ack_ts),
                    read_at: state.and_then(|s| s.read_ts),
                })
            })
            .await
    }
}

impl Mailroom {
    /// Converts and stores the images of a send before its transaction (image work is slow
    /// and touches files, so it stays out of the single writer). `None` when the message has
    /// no image references or attachment paths.
    async fn store_attachments(&self, req: &SendMessage) -> Result<Option<ProcessedBody>> {
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
            Err(e) => Err(Error::internal(e.to_string())),
        }
    }
}

/// The inbox size asked for: at least 1, at most 1000, 20 by default.
pub(crate) fn inbox_limit(limit: Option<i64>) -> Result<i64> {
    match limit {
        Some(l) if l < 1 => {
            Err(Error::invalid_kind("INVALID_LIMIT", format!("limit must be at least 1 (got {l})")))
        }
        Some(l) => Ok(l.min(MAX_INBOX_LIMIT)),
        None => Ok(20),
    }
}

pub(crate) fn parse_since(raw: Option<&str>) -> Result<Option<Timestamp>> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(text) => Timestamp::parse_iso(text).map(Some).ok_or_else(|| {
            Error::invalid_kind("INVALID_TIMESTAMP", format!(
                "since_ts '{text}' is not an ISO-8601 timestamp (e.g. 2025-01-15T10:30:00+00:00)"))
        }),
    }
}

/// Records the receipt when the agent can see the message; `None` when it only sent it.
fn receipt_after(
    db: &Db<'_>,
    project_key: &str,
    agent_name: &str,
    message_id: i64,
    acknowledge: bool,
) -> Result<Option<crate::store::db::messages::ReceiptState>> {
    let project = resolve::project(db, project_key)?;
    let agent = resolve::agent(db, &project, agent_name, "agent_name")?;
    let visible_message = db.message_by_id(message_id)?.filter(|m| m.project_id == project.id);
    let Some(message) = visible_message else {
        return Err(not_visible(message_id, &agent.name));
    };
    if db.receipt(message_id, agent.id)?.is_none() {
        if message.sender_id == agent.id {
            return Ok(None);
        }
        return Err(not_visible(message_id, &agent.name));
    }
    db.record_receipt(message_id, agent.id, Timestamp::now(), acknowledge)?;
    db.receipt(message_id, agent.id)
}

fn not_visible(message_id: i64, agent: &str) -> Error {
    Error::not_found(format!("Message '{message_id}' not found or not visible to agent '{agent}'."))
}

fn send_in_tx(
    db: &Db<'_>,
    req: SendMessage,
    processed: Option<ProcessedBody>,
    enforcement: Enforcement,
    guard: bool,
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
    let message = Delivery {
        project: &project,
        sender: &sender,
        subject: truncate_subject(&req.subject),
        body_md,
        attachments: serde_json::to_string(&attachments)
            .map_err(|e| Error::internal(format!("attachments metadata: {e}")))?,
        importance: req
            .importance
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| "normal".to_string()),
        ack_required: req.ack_required,
        thread_id,
        topic,
        recipients: Vec::new(),
    };
    let (deliveries, delivery_errors) =
        deliver_per_project(db, message, recipients, Timestamp::now(), guard)?;
    Ok(SendOutcome {
        count: deliveries.len(),
        attachments: (deliveries.len() == 1).then_some(attachments),
        deliveries,
        verified_sender: false,
        delivery_errors,
    })
}

/// Stores `message` once per project its recipients belong to, the sender's own project
/// first: a message to another project's agent lives in that project (semantics §4.4).
/// With `guard` (FILE_RESERVATIONS_ENFORCEMENT_ENABLED), a delivery whose archive surfaces
/// other agents have reserved writes nothing and is listed among the failures instead.
fn deliver_per_project(
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
        let delivery = Delivery {
            project: &target,
            recipients: group,
            subject: message.subject.clone(),
            body_md: message.body_md.clone(),
            importance: message.importance.clone(),
            thread_id: message.thread_id.clone(),
            topic: message.topic.clone(),
            attachments: message.attachments.clone(),
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

/// The sweep and check of spec/storage.md §5 step 3 for one delivery: expired reservations
/// are released, then other agents' reservations covering the archive paths the delivery
/// would write are returned.
fn reserved_surfaces(
    db: &Db<'_>,
    d: &Delivery<'_>,
    now: Timestamp,
) -> Result<Vec<mail_surfaces::SurfaceConflict>> {
    // The reference sweeps before every delivery while enforcement is on (one UPDATE on the
    // expiry index, artifacts queued).
    super::reservations::sweep_in_tx(db, d.project.id, &[], now)?;
    let surfaces = MailSurfaces {
        local_sender: (d.sender.project_id == d.project.id).then_some(d.sender.name.as_str()),
        recipients: d.recipients.iter().map(|(a, _)| a.name.as_str()).collect(),
        thread_id: d.thread_id.as_deref(),
        // The metadata list is stored as JSON text; anything but an empty list means files.
        attachments: d.attachments.trim() != "[]",
    };
    mail_surfaces::surface_conflicts(db, d.project.id, d.sender.id, &surfaces, now)
}

fn reply_in_tx(
    db: &Db<'_>,
    req: ReplyMessage,
    enforcement: Enforcement,
    guard: bool,
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
            .filter(|(kind, _, _)| kind == "to")
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
    let local: Vec<(Agent, &'static str)> =
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
    let message = Delivery {
        project: &project,
        sender: &sender,
        subject,
        body_md: req.body_md,
        importance: original.message.importance.clone(),
        ack_required: original.message.ack_required,
        thread_id: Some(thread_key.clone()),
        topic: original.message.topic.clone(),
        recipients: Vec::new(),
        attachments: "[]".to_string(),
    };
    let (deliveries, delivery_errors) =
        deliver_per_project(db, message, recipients, Timestamp::now(), guard)?;
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

fn validated_thread_id(raw: Option<&str>) -> Result<Option<String>> {
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
        .filter(|a| a.contact_policy != "block_all" && a.retired_at.is_none())
        .filter(|a| a.last_active_ts >= cutoff)
        .map(|a| a.name)
        .collect())
}

fn truncate_subject(subject: &str) -> String {
    subject.chars().take(MAX_SUBJECT_CHARS).collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CoreConfig;
    use crate::ops::identity::Registration;

    /// The inbox written from borrowed rows says what the listed `MessageOut`s say, on the
    /// inline read and the blocking one (filters), bodies or not, empty or not, and fails
    /// alike on an unknown agent.
    #[test]
    fn the_written_inbox_is_the_serialised_one() {
        let dir = tempfile::tempdir().expect("dir");
        let mut config = CoreConfig::for_data_dir(dir.path());
        config.contact_enforcement_enabled = false;
        let core = Mailroom::open(config).expect("open");
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(async {
            core.ensure_project("/work/inbox").await.expect("project");
            for name in ["BlueLake", "GreenCastle", "RedStone"] {
                let registration = Registration {
                    project_key: "/work/inbox".into(),
                    program: "codex-cli".into(),
                    model: "gpt-5".into(),
                    name: Some(name.into()),
                    task_description: String::new(),
                    attachments_policy: None,
                    ..Registration::default()
                };
                core.register_agent(registration).await.expect("register");
            }
            for (i, importance) in ["normal", "urgent", "high"].into_iter().enumerate() {
                let send = SendMessage {
                    project_key: "/work/inbox".into(),
                    sender_name: "BlueLake".into(),
                    to: vec!["GreenCastle".into()],
                    cc: vec!["RedStone".into()],
                    subject: format!("Plan \"{i}\" \u{1f680}"),
                    body_md: format!("Line one\n\tline \\ two {i}"),
                    importance: Some(importance.into()),
                    ack_required: i == 1,
                    thread_id: (i > 0).then(|| "T-1".to_string()),
                    topic: (i == 2).then(|| "deploys".to_string()),
                    ..SendMessage::default()
                };
                core.send_message(send).await.expect("send");
            }
            let fetch = |agent: &str, bodies: bool| FetchInbox {
                project_key: "/work/inbox".into(),
                agent_name: agent.into(),
                include_bodies: bodies,
                ..FetchInbox::default()
            };
            let filtered = FetchInbox { urgent_only: true, ..fetch("RedStone", true) };
            let topic = FetchInbox { topic: Some("DEPLOYS".into()), ..fetch("GreenCastle", false) };
            let cases = [
                (fetch("GreenCastle", true), 3),
                (fetch("RedStone", false), 3),
                (fetch("BlueLake", true), 0),
                (filtered, 2),
                (topic, 1),
            ];
            for (case, count) in cases {
                let listed = core.fetch_inbox(case.clone()).await.expect("listed");
                assert_eq!(listed.len(), count, "{case:?}");
                let written = core.fetch_inbox_json(case).await.expect("written");
                assert_eq!(written.0, serde_json::to_string(&listed).expect("serialised"));
            }
            let unknown = |json: bool| {
                let req = fetch("GreenCastel", false);
                let core = &core;
                async move {
                    if json {
                        core.fetch_inbox_json(req).await.map(drop)
                    } else {
                        core.fetch_inbox(req).await.map(drop)
                    }
                }
            };
            let (a, b) = (unknown(false).await, unknown(true).await);
            assert_eq!(a.expect_err("unknown").message, b.expect_err("unknown").message);

            // The inline read's id lookups find what the full resolution finds, for every
            // spelling of a project and an agent, and nothing where it fails.
            let spellings = [
                ("/work/inbox", "GreenCastle", true),
                ("work-inbox", "greencastle", true),
                ("/work/inbox/", " RedStone ", true),
                ("/work//inbox", "BLUELAKE", true),
                ("/work/other", "GreenCastle", false),
                ("/work/inbox", "GreenCastel", false),
                ("YOUR_PROJECT", "GreenCastle", false),
                ("/work/inbox", "", false),
            ];
            for (key, name, found) in spellings {
                let spelling = format!("{key:?} {name:?}");
                let (key, name) = (key.to_string(), name.to_string());
                let (by_ids, resolved) = core
                    .store
                    .read(move |db| {
                        let by_ids = resolve::project_and_agent_ids_directly(db, &key, &name)?;
                        let resolved = resolve::project(db, &key).and_then(|project| {
                            resolve::agent(db, &project, &name, "agent_name")
                                .map(|agent| (project.id, agent.id))
                        });
                        Ok((by_ids, resolved.ok()))
                    })
                    .await
                    .expect("read");
                assert_eq!(by_ids, resolved, "{spelling}");
                assert_eq!(by_ids.is_some(), found, "{spelling}");
            }
        });
        core.close();
    }

    fn check(original: &str, prefix: &str, expected: &str) {
        assert_eq!(reply_subject(original, prefix), expected, "{original:?} + {prefix:?}");
    }

    #[test]
    fn reply_subjects_do_not_chain() {
        check("Hello", "Re:", "Re: Hello");
        check("Re: Hello", "Re:", "Re: Hello");
        check("RE: Hello", "Re:", "RE: Hello");
        check("Hello", "", "Hello");
        check("Hello", "  Fwd: ", "Fwd: Hello");
    }
}
