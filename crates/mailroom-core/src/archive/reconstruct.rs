//! `mailroom archive rebuild --reconstruct-database`: a new database from the archive.
//!
//! The archive is the durable ledger; when the database is lost or damaged, its committed
//! files hold enough to bring the mail back: projects (slug from the path, human key from the
//! messages' `project` key), agents from `profile.json` (keeping their ids and project ids),
//! and every message with its original id, sender and recipients, and every file
//! reservation from its `file_reservations/id-<id>.json` artifact (id, holder, pattern, times
//! and release as last archived). What the archive never held stays empty: read and acknowledgement state, topics, contact links and policies,
//! registration tokens.
//!
//! Reading happens first, entirely in memory ([`read_archive`]); only then is the database
//! written, in one transaction ([`write_database`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;
use std::path::PathBuf;

use mailroom_git::CommittedFiles;
use serde_json::Value;

use super::format::{self, MessageDoc};
use super::maintenance::{ArchivePath, Progress, classify_path};
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::records::{
    AgentId, Attachments, Importance, MessageId, NewMessage, ProjectId, RecipientKind,
};
use crate::store::Db;
use crate::store::db::reconstruct::{RestoredAgent, RestoredProject, RestoredReservation};

/// Program and model of an agent known only because messages name it.
const UNKNOWN: &str = "unknown";

/// What the reconstruction read and wrote.
#[derive(Debug, Clone, Default)]
pub struct ReconstructReport {
    /// The new database.
    pub database: PathBuf,
    /// Where the previous database was moved, when there was one.
    pub moved_aside: Option<PathBuf>,
    /// Projects created.
    pub projects: usize,
    /// Agents created from their `profile.json`.
    pub agents_from_profiles: usize,
    /// Agents without a profile, created from the messages that name them.
    pub agents_from_messages: usize,
    /// Messages created.
    pub messages: usize,
    /// Of those, messages whose canonical copy was missing, read from a mailbox copy.
    pub messages_from_mailbox_copies: usize,
    /// Recipient rows created.
    pub recipients: usize,
    /// File reservations created (released and expired ones included).
    pub reservations: usize,
    /// Files skipped or values guessed, one sentence each.
    pub warnings: Vec<String>,
}

/// The archive's contents, ready to be written.
pub(super) struct Recovered {
    projects: BTreeMap<String, ProjectSketch>,
    /// Keyed by (project slug, lower-cased name): names are unique per project regardless of
    /// case.
    agents: BTreeMap<(String, String), AgentSketch>,
    /// In id order; each with the slug of the project directory it was found in.
    messages: BTreeMap<MessageId, (String, MessageDoc)>,
    /// By id; each with the slug of the project directory it was found in.
    reservations: BTreeMap<i64, (String, ReservationSketch)>,
    from_mailbox_copies: usize,
    warnings: Vec<String>,
}

#[derive(Default)]
struct ProjectSketch {
    human_key: Option<String>,
    /// How many profiles name each project id.
    ids_in_profiles: HashMap<i64, usize>,
    earliest: Option<Timestamp>,
}

struct AgentSketch {
    id: Option<i64>,
    name: String,
    program: String,
    model: String,
    task_description: String,
    inception_ts: Timestamp,
    last_active_ts: Timestamp,
    attachments_policy: String,
    retired_at: Option<Timestamp>,
    from_profile: bool,
}

/// A reservation's archived record.
struct ReservationSketch {
    agent: String,
    path_pattern: String,
    exclusive: bool,
    reason: String,
    created_ts: Timestamp,
    expires_ts: Timestamp,
    released_ts: Option<Timestamp>,
}

impl AgentSketch {
    /// An agent without a profile, known only because a message `seen` then names it: program
    /// and model "unknown", active at that instant.
    fn named(name: String, seen: Timestamp) -> Self {
        Self {
            id: None,
            name,
            program: UNKNOWN.to_owned(),
            model: UNKNOWN.to_owned(),
            task_description: String::new(),
            inception_ts: seen,
            last_active_ts: seen,
            attachments_policy: "auto".to_owned(),
            retired_at: None,
            from_profile: false,
        }
    }
}

/// Reads projects, profiles and messages from the files of HEAD.
/// `progress` hears how many messages were read of how many.
pub(super) fn read_archive(files: &CommittedFiles, progress: Progress<'_>) -> Result<Recovered> {
    // Every path at once: the messages are gathered whole in memory anyway (`Recovered`).
    let mut listed: Vec<String> = Vec::new();
    files.for_each_file("", |path, _| listed.push(path.to_owned()))?;
    let paths: Vec<&str> = listed.iter().map(String::as_str).collect();
    let mut recovered = Recovered {
        projects: BTreeMap::new(),
        agents: BTreeMap::new(),
        messages: BTreeMap::new(),
        reservations: BTreeMap::new(),
        from_mailbox_copies: 0,
        warnings: Vec::new(),
    };
    // Message files by the id in their name; canonical copies first, then mailbox copies.
    let mut copies: BTreeMap<MessageId, Vec<(bool, &str, &str)>> = BTreeMap::new();
    let mut profiles = Vec::new();
    let mut reservations = Vec::new();
    for path in paths {
        match classify_path(path) {
            Some(ArchivePath::Canonical { slug, message_id }) => {
                copies.entry(message_id).or_default().push((false, slug, path));
            }
            Some(ArchivePath::Mailbox { slug, message_id }) => {
                copies.entry(message_id).or_default().push((true, slug, path));
            }
            Some(ArchivePath::Profile { slug, agent }) => profiles.push((slug, agent, path)),
            Some(ArchivePath::Reservation { slug, reservation_id }) => {
                reservations.push((slug, reservation_id, path));
            }
            Some(ArchivePath::Project { slug }) => {
                recovered.project(slug);
            }
            None => {}
        }
    }
    let total = copies.len();
    for (done, (id, mut candidates)) in copies.into_iter().enumerate() {
        progress(done, total);
        candidates.sort_by_key(|(is_mailbox, ..)| *is_mailbox);
        recovered.read_message(files, id, &candidates)?;
    }
    progress(total, total);
    for (slug, agent, path) in profiles {
        recovered.read_profile(files, slug, agent, path)?;
    }
    for (slug, id, path) in reservations {
        recovered.read_reservation(files, slug, id, path)?;
    }
    recovered.agents_named_in_messages();
    Ok(recovered)
}

impl Recovered {
    fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }

    fn project(&mut self, slug: &str) -> &mut ProjectSketch {
        self.projects.entry(slug.to_owned()).or_default()
    }

    /// Takes the first copy that parses and carries the id its name promises.
    fn read_message(
        &mut self,
        files: &CommittedFiles,
        id: MessageId,
        candidates: &[(bool, &str, &str)],
    ) -> Result<()> {
        for (is_mailbox, slug, path) in candidates {
            let Some(bytes) = files.read(path)? else { continue };
            let doc = match format::parse_message(&String::from_utf8_lossy(&bytes)) {
                Ok(doc) if doc.id == id => doc,
                Ok(doc) => {
                    self.warn(format!("{path}: skipped, its front matter says id {}", doc.id));
                    continue;
                }
                Err(e) => {
                    self.warn(format!("{path}: skipped, {e}"));
                    continue;
                }
            };
            self.from_mailbox_copies += usize::from(*is_mailbox);
            self.note_projects(slug, &doc);
            self.messages.insert(id, ((*slug).to_owned(), doc));
            return Ok(());
        }
        self.warn(format!("message {id}: no readable copy, not restored"));
        Ok(())
    }

    /// Learns human keys and first activity of the message's project and sender project.
    fn note_projects(&mut self, slug: &str, doc: &MessageDoc) {
        let project = self.project(slug);
        if doc.project_slug == slug && project.human_key.is_none() {
            project.human_key = Some(doc.project.clone());
        }
        project.earliest = Some(project.earliest.map_or(doc.created, |t| t.min(doc.created)));
        if let Some(sender) = &doc.from_project {
            let project = self.project(&sender.slug);
            project.human_key.get_or_insert_with(|| sender.human_key.clone());
        }
    }

    fn read_profile(
        &mut self,
        files: &CommittedFiles,
        slug: &str,
        name: &str,
        path: &str,
    ) -> Result<()> {
        let bytes = files.read(path)?.unwrap_or_default();
        let Ok(Value::Object(profile)) = serde_json::from_slice::<Value>(&bytes) else {
            self.warn(format!("{path}: skipped, not a JSON object"));
            return Ok(());
        };
        let key = (slug.to_owned(), name.to_lowercase());
        if self.agents.contains_key(&key) {
            self.warn(format!("{path}: skipped, another profile has this name"));
            return Ok(());
        }
        let text = |field: &str, default: &str| {
            profile.get(field).and_then(Value::as_str).unwrap_or(default).to_owned()
        };
        let instant =
            |field: &str| profile.get(field).and_then(Value::as_str).and_then(Timestamp::parse_iso);
        let inception_ts = instant("inception_ts").unwrap_or_else(Timestamp::now);
        if let Some(project_id) = profile.get("project_id").and_then(Value::as_i64) {
            *self.project(slug).ids_in_profiles.entry(project_id).or_default() += 1;
        }
        let project = self.project(slug);
        project.earliest = Some(project.earliest.map_or(inception_ts, |t| t.min(inception_ts)));
        let agent = AgentSketch {
            id: profile.get("id").and_then(Value::as_i64),
            name: name.to_owned(),
            program: text("program", UNKNOWN),
            model: text("model", UNKNOWN),
            task_description: text("task_description", ""),
            inception_ts,
            last_active_ts: instant("last_active_ts").unwrap_or(inception_ts),
            attachments_policy: text("attachments_policy", "auto"),
            retired_at: instant("retired_at"),
            from_profile: true,
        };
        self.agents.insert(key, agent);
        Ok(())
    }

    /// Reads a reservation artifact; its `project` field is the project's human key.
    fn read_reservation(
        &mut self,
        files: &CommittedFiles,
        slug: &str,
        id: i64,
        path: &str,
    ) -> Result<()> {
        let bytes = files.read(path)?.unwrap_or_default();
        let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(&bytes) else {
            self.warn(format!("{path}: skipped, not a JSON object"));
            return Ok(());
        };
        if record.get("id").and_then(Value::as_i64) != Some(id) {
            self.warn(format!("{path}: skipped, its record does not carry id {id}"));
            return Ok(());
        }
        let text = |field: &str| record.get(field).and_then(Value::as_str).map(str::to_owned);
        let instant = |field: &str| text(field).as_deref().and_then(Timestamp::parse_iso);
        let (Some(agent), Some(path_pattern), Some(created_ts), Some(expires_ts)) =
            (text("agent"), text("path_pattern"), instant("created_ts"), instant("expires_ts"))
        else {
            self.warn(format!("{path}: skipped, agent, path_pattern or a timestamp is missing"));
            return Ok(());
        };
        let project = self.project(slug);
        if let Some(human_key) = text("project") {
            project.human_key.get_or_insert(human_key);
        }
        project.earliest = Some(project.earliest.map_or(created_ts, |t| t.min(created_ts)));
        let sketch = ReservationSketch {
            agent,
            path_pattern,
            exclusive: record.get("exclusive").and_then(Value::as_bool).unwrap_or(true),
            reason: text("reason").unwrap_or_default(),
            created_ts,
            expires_ts,
            released_ts: instant("released_ts"),
        };
        self.reservations.insert(id, (slug.to_owned(), sketch));
        Ok(())
    }

    /// Senders, recipients and reservation holders without a profile become agents of
    /// program and model "unknown", active from their first to their last appearance.
    fn agents_named_in_messages(&mut self) {
        let mut named = Vec::new();
        for (slug, doc) in self.messages.values() {
            named.push((sender_slug(slug, doc).to_owned(), doc.from.clone(), doc.created));
            for name in doc.to.iter().chain(&doc.cc).chain(&doc.bcc) {
                named.push((slug.clone(), name.clone(), doc.created));
            }
        }
        for (slug, reservation) in self.reservations.values() {
            named.push((slug.clone(), reservation.agent.clone(), reservation.created_ts));
        }
        for (slug, name, seen) in named {
            let key = (slug, name.to_lowercase());
            let agent = self.agents.entry(key).or_insert_with(|| AgentSketch::named(name, seen));
            if !agent.from_profile {
                agent.inception_ts = agent.inception_ts.min(seen);
                agent.last_active_ts = agent.last_active_ts.max(seen);
            }
        }
    }
}

/// Writes what [`read_archive`] recovered into an empty database, keeping archived ids where
/// no other row took them first. Rows with an id to keep go in before rows without, so a
/// fresh id can never take one an archived row still needs.
pub(super) fn write_database(db: &Db<'_>, recovered: Recovered) -> Result<ReconstructReport> {
    let mut report = ReconstructReport { warnings: recovered.warnings, ..Default::default() };
    let project_ids = write_projects(db, &recovered.projects, &mut report)?;
    let agent_ids = write_agents(db, &recovered.agents, &project_ids, &mut report)?;
    for (id, (slug, doc)) in &recovered.messages {
        let project_id = id_of(&project_ids, slug)?;
        let sender_key = (sender_slug(slug, doc).to_owned(), doc.from.to_lowercase());
        let attachments = serde_json::to_string(&doc.attachments)
            .map_err(|e| Error::internal(format!("attachments of message {id}: {e}")))?;
        // The topic is not archived and stays empty; the FTS triggers index the message like
        // any other.
        db.insert_message(&NewMessage {
            id: Some(*id),
            project_id,
            sender_id: id_of(&agent_ids, &sender_key)?,
            thread_id: doc.thread_id.as_deref(),
            topic: None,
            subject: &doc.subject,
            body_md: &doc.body_md,
            attachments: Attachments(&attachments),
            importance: Importance(doc.importance.as_str()),
            ack_required: doc.ack_required,
            created_ts: doc.created,
        })?;
        // An agent listed in both `to` and `cc` keeps its first kind. Read and ack state are
        // not archived.
        let mut delivered = HashSet::new();
        let kinds = [
            (RecipientKind::To, &doc.to),
            (RecipientKind::Cc, &doc.cc),
            (RecipientKind::Bcc, &doc.bcc),
        ];
        for (kind, names) in kinds {
            for name in names {
                let agent_id = id_of(&agent_ids, &(slug.clone(), name.to_lowercase()))?;
                if delivered.insert(agent_id) {
                    db.insert_recipient(*id, agent_id, kind)?;
                    report.recipients += 1;
                }
            }
        }
        report.messages += 1;
    }
    report.messages_from_mailbox_copies = recovered.from_mailbox_copies;
    for (id, (slug, r)) in &recovered.reservations {
        db.insert_restored_reservation(&RestoredReservation {
            id: *id,
            project_id: id_of(&project_ids, slug)?,
            agent_id: id_of(&agent_ids, &(slug.clone(), r.agent.to_lowercase()))?,
            path_pattern: &r.path_pattern,
            exclusive: r.exclusive,
            reason: &r.reason,
            created_ts: r.created_ts,
            expires_ts: r.expires_ts,
            released_ts: r.released_ts,
        })?;
        report.reservations += 1;
    }
    Ok(report)
}

fn write_projects(
    db: &Db<'_>,
    projects: &BTreeMap<String, ProjectSketch>,
    report: &mut ReconstructReport,
) -> Result<HashMap<String, ProjectId>> {
    let mut taken = HashSet::new();
    let wanted: Vec<(&String, Option<i64>)> = projects
        .iter()
        .map(|(slug, sketch)| {
            // The id most profiles of the project name, the smaller one on a tie.
            let id = sketch.ids_in_profiles.iter().max_by_key(|(id, n)| (**n, Reverse(**id)));
            (slug, id.map(|(id, _)| *id).filter(|id| taken.insert(*id)))
        })
        .collect();
    let now = Timestamp::now();
    let mut ids = HashMap::new();
    let (keeping, fresh): (Vec<_>, Vec<_>) = wanted.into_iter().partition(|(_, id)| id.is_some());
    for (slug, id) in keeping.into_iter().chain(fresh) {
        let sketch = &projects[slug];
        let human_key = match &sketch.human_key {
            Some(key) => key.as_str(),
            None => {
                report.warnings.push(format!(
                    "project {slug}: no message names its human key; the slug stands in for it"
                ));
                slug.as_str()
            }
        };
        let created_at = sketch.earliest.unwrap_or(now);
        let project = RestoredProject { id, slug, human_key, created_at };
        ids.insert(slug.clone(), db.insert_restored_project(&project)?);
        report.projects += 1;
    }
    Ok(ids)
}

fn write_agents(
    db: &Db<'_>,
    agents: &BTreeMap<(String, String), AgentSketch>,
    project_ids: &HashMap<String, ProjectId>,
    report: &mut ReconstructReport,
) -> Result<HashMap<(String, String), AgentId>> {
    let mut taken = HashSet::new();
    let mut ordered: Vec<(&(String, String), &AgentSketch, Option<i64>)> = agents
        .iter()
        .map(|(key, agent)| (key, agent, agent.id.filter(|id| taken.insert(*id))))
        .collect();
    ordered.sort_by_key(|(_, _, id)| id.is_none());
    let mut ids = HashMap::new();
    for (key, agent, id) in ordered {
        let restored = RestoredAgent {
            id,
            project_id: id_of(project_ids, &key.0)?,
            name: &agent.name,
            program: &agent.program,
            model: &agent.model,
            task_description: &agent.task_description,
            inception_ts: agent.inception_ts,
            last_active_ts: agent.last_active_ts,
            attachments_policy: &agent.attachments_policy,
            retired_at: agent.retired_at,
        };
        let agent_id = db.insert_restored_agent(&restored)?;
        ids.insert(key.clone(), agent_id);
        if agent.from_profile {
            report.agents_from_profiles += 1;
        } else {
            report.agents_from_messages += 1;
        }
    }
    Ok(ids)
}

/// The slug of the sender's project: the message's own (`slug`, where it was found) unless
/// the front matter names another.
fn sender_slug<'a>(slug: &'a str, doc: &'a MessageDoc) -> &'a str {
    doc.from_project.as_ref().map_or(slug, |p| p.slug.as_str())
}

/// The id written for `key`; every name the messages use was given a row before them.
fn id_of<K: Eq + Hash + std::fmt::Debug, Id: Copy>(ids: &HashMap<K, Id>, key: &K) -> Result<Id> {
    ids.get(key).copied().ok_or_else(|| Error::internal(format!("no row was written for {key:?}")))
}
