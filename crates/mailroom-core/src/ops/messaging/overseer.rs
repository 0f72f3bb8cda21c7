//! The Human Overseer (docs/compat/http.md §7): a person writing to agents from the web UI.
//! Their message is high importance, opens with a banner asking agents to pause and do what
//! it says, reaches every named agent that exists whatever its contact policy, and is archived
//! under its own commit line.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::agents::new_registration_token;
use crate::ops::messaging::send::{MAX_SUBJECT_CHARS, validated_thread_id};
use crate::ops::messaging::{Delivery, deliver};
use crate::ops::resolve;
use crate::records::{Agent, Importance, MessageId, Project, RecipientKind};
use crate::store::Db;
use crate::store::db::agents::NewAgent;
use crate::store::db::archive_queue::ArchiveKind;

pub use crate::model::names::OVERSEER_NAME;
/// Most recipients of one overseer message.
pub const MAX_RECIPIENTS: usize = 100;
/// Longest body, preamble included, in characters.
pub const MAX_BODY_CHARS: usize = 50_000;

/// The banner every overseer message opens with.
pub const PREAMBLE: &str = "---\n\n\
**MESSAGE FROM THE HUMAN OVERSEER**\n\n\
A person supervising this project wrote the message below. Pause your current task, do what \
it asks first, then resume your work where you left it.\n\n\
---\n\n";

/// What the composer sends.
#[derive(Debug, Clone, Default)]
pub struct OverseerMessage {
    pub project_key: String,
    pub recipients: Vec<String>,
    pub subject: String,
    pub body_md: String,
    pub thread_id: Option<String>,
}

/// The answer to a send.
#[derive(Debug, Clone, Serialize)]
pub struct OverseerSent {
    pub success: bool,
    pub message_id: MessageId,
    /// The recipients that exist, in the order given.
    pub recipients: Vec<String>,
    pub sent_at: Timestamp,
}

impl Mailroom {
    /// Sends a message from the Human Overseer (created in the project when absent).
    pub async fn overseer_send(&self, message: OverseerMessage) -> Result<OverseerSent> {
        let (recipients, subject, body) = validated(&message)?;
        let thread_id = validated_thread_id(message.thread_id.as_deref())?;
        self.admit_archive_work().await?;
        self.store
            .write(move |db| {
                let project = resolve::project(db, &message.project_key)?;
                let mut found: Vec<Agent> = Vec::new();
                for name in &recipients {
                    if let Some(agent) = db.agent_by_name(project.id, name)?
                        && !found.iter().any(|a| a.id == agent.id)
                    {
                        found.push(agent);
                    }
                }
                if found.is_empty() {
                    return Err(Error::invalid(format!(
                        "recipients: none of {} is an agent of project '{}'.",
                        recipients.join(", "),
                        project.slug
                    )));
                }
                let overseer = overseer(db, &project)?;
                let mut delivery = Delivery::new(&project, &overseer, subject, body);
                delivery.message.importance = Importance::high();
                delivery.message.thread_id = thread_id;
                delivery.recipients =
                    found.iter().map(|a| (a.clone(), RecipientKind::To)).collect();
                let sent_at = delivery.message.created_ts;
                let sent = deliver(db, &delivery)?;
                Ok(OverseerSent {
                    success: true,
                    message_id: sent.message.id,
                    recipients: found.into_iter().map(|a| a.name).collect(),
                    sent_at,
                })
            })
            .await
    }
}

/// The recipients (trimmed, de-duplicated), the subject and the body with its preamble, each
/// checked against its limits.
fn validated(message: &OverseerMessage) -> Result<(Vec<String>, String, String)> {
    let mut recipients: Vec<String> = Vec::new();
    for name in message.recipients.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if !recipients.iter().any(|seen| seen == name) {
            recipients.push(name.to_string());
        }
    }
    if recipients.is_empty() || recipients.len() > MAX_RECIPIENTS {
        return Err(Error::invalid(format!(
            "recipients: name between 1 and {MAX_RECIPIENTS} agents (got {}).",
            recipients.len()
        )));
    }
    let subject = message.subject.trim().to_string();
    let subject_chars = subject.chars().count();
    if subject_chars == 0 || subject_chars > MAX_SUBJECT_CHARS {
        return Err(Error::invalid(format!(
            "subject: between 1 and {MAX_SUBJECT_CHARS} characters (got {subject_chars})."
        )));
    }
    let body = message.body_md.trim();
    let body_chars = PREAMBLE.chars().count() + body.chars().count();
    if body.is_empty() || body_chars > MAX_BODY_CHARS {
        return Err(Error::invalid(format!(
            "body_md: between 1 and {MAX_BODY_CHARS} characters with the overseer's preamble \
             (got {body_chars})."
        )));
    }
    Ok((recipients, subject, format!("{PREAMBLE}{body}")))
}

/// The project's Human Overseer agent, created (with its profile archived) when absent. It
/// accepts every message, as a person reading the UI would.
fn overseer(db: &Db<'_>, project: &Project) -> Result<Agent> {
    if let Some(agent) = db.agent_by_name(project.id, OVERSEER_NAME)? {
        return Ok(agent);
    }
    let token = new_registration_token()?;
    let created = db.insert_agent(&NewAgent {
        project_id: project.id,
        name: OVERSEER_NAME,
        program: "WebUI",
        model: "Human",
        task_description: "",
        attachments_policy: "auto",
        registration_token: &token,
        now: Timestamp::now(),
    })?;
    let agent = created.ok_or_else(|| Error::internal("the overseer vanished while created"))?;
    db.set_contact_policy(agent.id, crate::records::ContactPolicy::Open)?;
    db.enqueue_archive(ArchiveKind::Profile, agent.id)?;
    Ok(agent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(recipients: &[&str], subject: &str, body: &str) -> OverseerMessage {
        OverseerMessage {
            project_key: "p".into(),
            recipients: recipients.iter().map(|r| r.to_string()).collect(),
            subject: subject.into(),
            body_md: body.into(),
            thread_id: None,
        }
    }

    #[test]
    fn limits_name_the_field() {
        let refused = |m: OverseerMessage, field: &str| {
            let e = validated(&m).expect_err("refused");
            assert!(e.message.starts_with(field), "{}", e.message);
        };
        refused(message(&[], "s", "b"), "recipients");
        refused(message(&[" ", ""], "s", "b"), "recipients");
        let many: Vec<String> = (0..101).map(|i| format!("Agent{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        refused(message(&many, "s", "b"), "recipients");
        refused(message(&["A"], " ", "b"), "subject");
        refused(message(&["A"], &"s".repeat(201), "b"), "subject");
        refused(message(&["A"], "s", "  "), "body_md");
        refused(message(&["A"], "s", &"b".repeat(MAX_BODY_CHARS)), "body_md");
        let (recipients, subject, body) =
            validated(&message(&["A", " B ", "A"], " Stop ", "Do this")).expect("valid");
        assert_eq!((recipients, subject.as_str()), (vec!["A".into(), "B".into()], "Stop"));
        assert!(body.starts_with(PREAMBLE) && body.ends_with("Do this"));
    }
}
