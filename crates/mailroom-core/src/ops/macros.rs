//! Workflow macros (docs/compat/tools.md §8): ops composing other ops so an agent
//! can start a session, catch up on a thread or establish contact in one call.
//!
//! Each step is the op its tool would call, with that op's own validation and errors; a failing
//! step fails the macro (earlier steps stay done, as in the reference), except the optional
//! welcome message of a handshake, whose failure is reported beside the result.

use serde::Serialize;

use super::agents::{Registration, validate_program_model};
use super::contacts::{ContactRequest, ContactRequested, ContactResponded, ContactResponse};
use super::messaging::{FetchInbox, InboxFilter, SendMessage, SendOutcome};
use super::output::{AgentOut, MessageOut, ProjectOut};
use super::reservations::{ReleaseOutcome, ReserveOutcome, ReservePaths, Selection};
use super::search::SingleThreadSummary;
use super::{Mailroom, resolve};
use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::slug::{normalize_absolute_path, slugify};
use crate::model::time::Timestamp;
use crate::records::{AgentId, LinkStatus, Project};

/// Arguments of macro_start_session.
#[derive(Debug, Clone, Default)]
pub struct StartSession {
    /// Project path or identifier; unlike ensure_project, not required to be absolute.
    pub human_key: String,
    pub program: String,
    pub model: String,
    pub task_description: String,
    pub agent_name: Option<String>,
    pub file_reservation_paths: Option<Vec<String>>,
    /// Reason recorded on those reservations (the reference's default: "macro-session").
    pub file_reservation_reason: String,
    pub file_reservation_ttl_seconds: i64,
    pub inbox_limit: i64,
}

/// Result of macro_start_session.
#[derive(Debug, Clone, Serialize)]
pub struct SessionStarted {
    pub project: ProjectOut,
    pub agent: AgentOut,
    /// Reservations granted and in conflict (both empty when none were requested).
    pub file_reservations: ReserveOutcome,
    pub inbox: Vec<MessageOut>,
}

/// Told of each tool-level step a macro takes (`file_reservation_paths`,
/// `release_file_reservations`) and whether it succeeded, so that the server can count those
/// nested calls as the reference's registry does (docs/compat/tools.md §1.8).
pub type StepObserver<'a> = &'a (dyn Fn(&'static str, bool) + Sync);

/// Arguments of macro_file_reservation_cycle.
#[derive(Debug, Clone)]
pub struct ReservationCycle {
    pub reserve: ReservePaths,
    /// Release exactly the requested patterns again once granted.
    pub auto_release: bool,
}

/// Result of macro_file_reservation_cycle.
#[derive(Debug, Clone, Serialize)]
pub struct CycleOutcome {
    pub file_reservations: ReserveOutcome,
    /// The release, when `auto_release` asked for one.
    pub released: Option<ReleaseOutcome>,
}

/// Arguments of macro_prepare_thread.
#[derive(Debug, Clone, Default)]
pub struct PrepareThread {
    pub project_key: String,
    pub thread_id: String,
    pub program: String,
    pub model: String,
    pub agent_name: Option<String>,
    pub task_description: String,
    pub register_if_missing: bool,
    pub include_examples: bool,
    pub inbox_limit: i64,
    pub include_inbox_bodies: bool,
    pub llm_mode: bool,
    pub llm_model: Option<String>,
}

/// The thread part of macro_prepare_thread: the single-thread summary and its message count.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadBrief {
    #[serde(flatten)]
    pub summary: SingleThreadSummary,
    pub total_messages: usize,
}

/// Result of macro_prepare_thread.
#[derive(Debug, Clone, Serialize)]
pub struct PreparedThread {
    pub project: ProjectOut,
    pub agent: AgentOut,
    pub thread: ThreadBrief,
    pub inbox: Vec<MessageOut>,
}

/// Arguments of macro_contact_handshake. `agent_name` and `to_agent` are the reference's
/// aliases of `requester` and `target`.
#[derive(Debug, Clone, Default)]
pub struct ContactHandshake {
    pub project_key: String,
    pub requester: Option<String>,
    pub agent_name: Option<String>,
    pub target: Option<String>,
    pub to_agent: Option<String>,
    pub to_project: Option<String>,
    pub reason: String,
    pub ttl_seconds: i64,
    pub auto_accept: bool,
    pub welcome_subject: Option<String>,
    pub welcome_body: Option<String>,
    pub thread_id: Option<String>,
    pub register_if_missing: bool,
    pub program: Option<String>,
    pub model: Option<String>,
    pub task_description: Option<String>,
    /// With tool authentication on, what proves the caller may accept for the target;
    /// `None` when authentication is off.
    pub target_proof: Option<TargetProof>,
}

/// The caller's claim to act for the handshake's target (docs/compat/tools.md §8.4, step 5):
/// its token, or a session already bound to it.
#[derive(Debug, Clone, Default)]
pub struct TargetProof {
    pub token: Option<String>,
    /// Agents the caller's MCP session is bound to.
    pub session_agents: Vec<AgentId>,
}

/// A step's failure reported inside a result instead of failing the whole macro.
#[derive(Debug, Clone, Serialize)]
pub struct StepError {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: String,
}

/// Result of macro_contact_handshake.
#[derive(Debug, Clone, Serialize)]
pub struct HandshakeOutcome {
    pub request: ContactRequested,
    pub response: Option<ContactResponded>,
    pub welcome_message: Option<SendOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub welcome_error: Option<StepError>,
    /// Why auto_accept was not carried out (the target was not authenticated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_error: Option<StepError>,
}

impl Mailroom {
    /// Ensures the project, registers (or refreshes) the agent and returns its inbox.
    pub async fn macro_start_session(
        &self,
        req: StartSession,
        steps: StepObserver<'_>,
    ) -> Result<SessionStarted> {
        let registration = Registration {
            project_key: String::new(),
            program: req.program,
            model: req.model,
            name: req.agent_name,
            task_description: req.task_description,
            attachments_policy: None,
            ..Registration::default()
        };
        validate_program_model(&registration)?;
        let paths = req.file_reservation_paths.unwrap_or_default();
        let reserve = ReservePaths {
            project_key: String::new(),
            agent_name: String::new(),
            paths,
            ttl_seconds: req.file_reservation_ttl_seconds,
            exclusive: true,
            reason: req.file_reservation_reason,
        };
        // Checked before anything is created, so a refused call leaves nothing behind.
        if !reserve.paths.is_empty() {
            reserve.validate("file_reservation_ttl_seconds")?;
        }
        let project = self.ensure_project_unchecked(&req.human_key).await?;
        let agent = self
            .register_agent(Registration { project_key: project.slug.clone(), ..registration })
            .await?;
        let file_reservations = if reserve.paths.is_empty() {
            ReserveOutcome::default()
        } else {
            let reserved = self
                .file_reservation_paths(ReservePaths {
                    project_key: project.slug.clone(),
                    agent_name: agent.base.name.clone(),
                    ..reserve
                })
                .await;
            steps("file_reservation_paths", reserved.is_ok());
            reserved?
        };
        let inbox = self.inbox_snapshot(&project.slug, &agent, req.inbox_limit, false).await?;
        Ok(SessionStarted { project, agent, file_reservations, inbox })
    }

    /// Reserves paths and, with `auto_release`, releases exactly those patterns again: the
    /// "reserve, edit, give back" cycle in one call.
    pub async fn macro_file_reservation_cycle(
        &self,
        req: ReservationCycle,
        steps: StepObserver<'_>,
    ) -> Result<CycleOutcome> {
        let (project_key, agent_name) =
            (req.reserve.project_key.clone(), req.reserve.agent_name.clone());
        let paths = req.reserve.paths.clone();
        let reserved = self.file_reservation_paths(req.reserve).await;
        steps("file_reservation_paths", reserved.is_ok());
        let file_reservations = reserved?;
        let released = if req.auto_release {
            let selection = Selection { paths: Some(paths), ids: None };
            let released = self.release_file_reservations(project_key, agent_name, selection).await;
            steps("release_file_reservations", released.is_ok());
            Some(released?)
        } else {
            None
        };
        Ok(CycleOutcome { file_reservations, released })
    }

    /// Registers (or authenticates) the agent, then returns its inbox and a summary of the
    /// thread it is about to work on.
    pub async fn macro_prepare_thread(&self, req: PrepareThread) -> Result<PreparedThread> {
        let project_key = req.project_key.clone();
        let project = self.store.read(move |db| resolve::project(db, &project_key)).await?;
        let agent = self.prepare_agent(&project, &req).await?;
        let inbox = self
            .inbox_snapshot(&project.slug, &agent, req.inbox_limit, req.include_inbox_bodies)
            .await?;
        let (summary, total_messages) = self
            .summarize_single_thread(
                project.id,
                req.thread_id.trim().to_string(),
                req.include_examples,
                req.llm_mode,
                req.llm_model.clone(),
            )
            .await?;
        Ok(PreparedThread {
            project: ProjectOut::from(&project),
            agent,
            thread: ThreadBrief { summary, total_messages },
            inbox,
        })
    }

    /// Files a contact request from requester to target and, with `auto_accept`, approves it on
    /// the target's behalf; optionally sends a welcome message once approved.
    pub async fn macro_contact_handshake(&self, req: ContactHandshake) -> Result<HandshakeOutcome> {
        let welcome = welcome_of(&req)?;
        let requester = alias("requester", req.requester.clone(), "agent_name", req.agent_name)?;
        let target = alias("target", req.target.clone(), "to_agent", req.to_agent)?;
        let (requester, target) = self.infer_pair(&req.project_key, requester, target).await?;
        let (target_project, target_name) = split_target(&target, req.to_project.as_deref());
        let request = self
            .request_contact(ContactRequest {
                project_key: req.project_key.clone(),
                from_agent: requester.clone(),
                to_agent: target.clone(),
                to_project: req.to_project.clone(),
                reason: req.reason,
                ttl_seconds: req.ttl_seconds,
                register_if_missing: req.register_if_missing,
                program: req.program,
                model: req.model,
                task_description: req.task_description,
            })
            .await?;
        let mut response_error = None;
        let proven = match (&req.target_proof, req.auto_accept) {
            (Some(proof), true) if request.status != LinkStatus::Approved => {
                let project = target_project.clone().unwrap_or_else(|| req.project_key.clone());
                self.proves_target(project, target_name.clone(), proof).await?
            }
            _ => true,
        };
        if !proven {
            response_error = Some(StepError {
                kind: "AUTHENTICATION_REQUIRED",
                message: format!(
                    "auto_accept requires target_registration_token for agent '{target_name}' \
                     (or an MCP session authenticated as it); the request stays pending."
                ),
            });
        }
        let response = if req.auto_accept && proven {
            let respond = ContactResponse {
                project_key: target_project.clone().unwrap_or_else(|| req.project_key.clone()),
                to_agent: target_name.clone(),
                from_agent: requester.clone(),
                from_project: target_project.is_some().then(|| req.project_key.clone()),
                accept: true,
                ttl_seconds: req.ttl_seconds,
            };
            Some(self.respond_contact(respond).await?)
        } else {
            None
        };
        let (welcome_message, welcome_error) = match welcome {
            Some(text) => {
                let recipient = match &target_project {
                    Some(key) => format!("{target_name}@{key}"),
                    None => target_name,
                };
                let thread_id = req.thread_id.filter(|t| !t.trim().is_empty());
                self.send_welcome(req.project_key, requester, recipient, text, thread_id).await
            }
            None => (None, None),
        };
        Ok(HandshakeOutcome { request, response, welcome_message, welcome_error, response_error })
    }

    /// Whether `proof` shows the caller is the target agent (bound session or its token).
    async fn proves_target(
        &self,
        project_key: String,
        target_name: String,
        proof: &TargetProof,
    ) -> Result<bool> {
        let target = self.agent_credential(project_key, target_name, "target").await?;
        if proof.session_agents.contains(&target.agent_id) {
            return Ok(true);
        }
        Ok(match (&target.token, &proof.token) {
            (Some(stored), Some(given)) => {
                super::agents::credentials::constant_time_eq(stored.as_bytes(), given.as_bytes())
            }
            _ => false,
        })
    }

    /// Sends the handshake's welcome message; a failure is reported, not raised, since the
    /// contact itself is already established.
    async fn send_welcome(
        &self,
        project_key: String,
        sender_name: String,
        recipient: String,
        (subject, body_md): (String, String),
        thread_id: Option<String>,
    ) -> (Option<SendOutcome>, Option<StepError>) {
        let send = SendMessage {
            project_key,
            sender_name,
            to: vec![recipient],
            subject,
            body_md,
            thread_id,
            ..SendMessage::default()
        };
        match self.send_message(send).await {
            Ok(sent) => (Some(sent), None),
            Err(e) => (None, Some(step_error(e))),
        }
    }

    /// The agent of macro_prepare_thread: registered (or refreshed) by default, else looked up
    /// by the required `agent_name`.
    async fn prepare_agent(&self, project: &Project, req: &PrepareThread) -> Result<AgentOut> {
        if req.register_if_missing {
            return self
                .register_agent(Registration {
                    project_key: project.slug.clone(),
                    program: req.program.clone(),
                    model: req.model.clone(),
                    name: req.agent_name.clone(),
                    task_description: req.task_description.clone(),
                    attachments_policy: None,
                    ..Registration::default()
                })
                .await;
        }
        let Some(name) = req.agent_name.clone().filter(|n| !n.trim().is_empty()) else {
            return Err(Error::value_error(
                "agent_name is required when register_if_missing is false",
            ));
        };
        let found = project.clone();
        let agent =
            self.store.read(move |db| resolve::agent(db, &found, &name, "agent_name")).await?;
        Ok(AgentOut::new(&agent, false))
    }

    /// The project for `human_key`, created when missing. Unlike ensure_project, relative keys
    /// are accepted (the reference's macro skips that check); absolute ones are normalised.
    async fn ensure_project_unchecked(&self, human_key: &str) -> Result<ProjectOut> {
        let trimmed = human_key.trim();
        if trimmed.is_empty() {
            return Err(Error::value_error("human_key must not be empty"));
        }
        bounds::project_key("human_key", trimmed)?;
        let key = normalize_absolute_path(trimmed).unwrap_or_else(|| trimmed.to_string());
        let slug = slugify(&key);
        let project = self
            .store
            .write(move |db| db.insert_project_if_absent(&slug, &key, Timestamp::now()))
            .await?;
        Ok(ProjectOut::from(&project))
    }

    /// The agent's newest messages, as fetch_inbox gives them.
    async fn inbox_snapshot(
        &self,
        project_key: &str,
        agent: &AgentOut,
        limit: i64,
        include_bodies: bool,
    ) -> Result<Vec<MessageOut>> {
        self.fetch_inbox(FetchInbox {
            project_key: project_key.to_string(),
            agent_name: agent.base.name.clone(),
            filter: InboxFilter { limit: Some(limit), include_bodies, ..InboxFilter::default() },
            ..FetchInbox::default()
        })
        .await
    }

    /// Fills in a missing requester (the project's only agent) or target (the other of exactly
    /// two agents), as the reference does.
    async fn infer_pair(
        &self,
        project_key: &str,
        requester: Option<String>,
        target: Option<String>,
    ) -> Result<(String, String)> {
        if let (Some(requester), Some(target)) = (&requester, &target) {
            return Ok((requester.clone(), target.clone()));
        }
        let key = project_key.to_string();
        let names: Vec<String> = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &key)?;
                Ok(db.agents_of_project(project.id)?.into_iter().map(|a| a.name).collect())
            })
            .await?;
        let requester = match requester {
            Some(name) => name,
            None if names.len() == 1 => names[0].clone(),
            None => return Err(cannot_infer("requester", project_key, &names)),
        };
        let target = match target {
            Some(name) => name,
            None if names.len() == 2
                && names.iter().any(|n| n.eq_ignore_ascii_case(&requester)) =>
            {
                names
                    .iter()
                    .find(|n| !n.eq_ignore_ascii_case(&requester))
                    .cloned()
                    .unwrap_or_default()
            }
            None => return Err(cannot_infer("target", project_key, &names)),
        };
        Ok((requester, target))
    }
}

/// The welcome message, when asked for: subject and body both given, non-blank, and only with
/// `auto_accept` (a message to an agent that has not accepted would be refused).
fn welcome_of(req: &ContactHandshake) -> Result<Option<(String, String)>> {
    match (&req.welcome_subject, &req.welcome_body) {
        (None, None) => Ok(None),
        (Some(subject), Some(body)) => {
            if subject.trim().is_empty() || body.trim().is_empty() {
                return Err(Error::invalid(
                    "welcome_subject and welcome_body must not be blank when given",
                ));
            }
            if !req.auto_accept {
                return Err(Error::invalid(
                    "welcome_subject/welcome_body require auto_accept=true: the welcome message \
                     is sent once the contact is approved",
                ));
            }
            Ok(Some((subject.clone(), body.clone())))
        }
        _ => Err(Error::invalid(
            "welcome_subject and welcome_body must be given together (or neither)",
        )),
    }
}

/// One value from a field and its alias; both given and different is an error.
fn alias(
    field: &str,
    value: Option<String>,
    alias_field: &str,
    alias_value: Option<String>,
) -> Result<Option<String>> {
    let clean = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    match (clean(value), clean(alias_value)) {
        (Some(a), Some(b)) if a != b => Err(Error::invalid(format!(
            "{field} and {alias_field} name different agents ('{a}' vs '{b}'); pass only one"
        ))),
        (a, b) => Ok(a.or(b)),
    }
}

/// The error for a requester or target that cannot be inferred, suggesting the next call.
fn cannot_infer(field: &str, project_key: &str, names: &[String]) -> Error {
    let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    Error::invalid(format!(
        "{field} is required: it can only be inferred when the project has exactly one agent \
         (requester) or two (target). Agents in '{project_key}': {known}. Pass {field}, or call \
         list_agents(project_key='{project_key}') to see who is registered."
    ))
}

/// The target's project (when it differs) and bare name, from `project:<key>#<Name>` or
/// `to_project`, as request_contact reads them.
fn split_target(target: &str, to_project: Option<&str>) -> (Option<String>, String) {
    if let Some(rest) = target.trim().strip_prefix("project:")
        && let Some((key, name)) = rest.split_once('#')
    {
        return (Some(key.to_string()), name.to_string());
    }
    let project = to_project.map(str::trim).filter(|k| !k.is_empty()).map(str::to_string);
    (project, target.trim().to_string())
}

/// A failed step as reported in a result; internal details stay in the log.
fn step_error(e: Error) -> StepError {
    if e.category.is_internal() {
        tracing::error!(kind = e.kind, error = %e.message, "handshake welcome message failed");
        return StepError {
            kind: e.kind,
            message: "Unexpected error; the server logged it.".into(),
        };
    }
    StepError { kind: e.kind, message: e.message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_merge_and_conflicts_are_refused() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(alias("requester", s("BlueLake"), "agent_name", None), Ok(s("BlueLake")));
        assert_eq!(alias("requester", None, "agent_name", s("BlueLake")), Ok(s("BlueLake")));
        assert_eq!(alias("requester", s(" "), "agent_name", None), Ok(None));
        assert_eq!(alias("requester", s("A"), "agent_name", s("A")), Ok(s("A")));
        let conflict = alias("requester", s("A"), "agent_name", s("B")).expect_err("conflict");
        assert!(conflict.message.contains("requester and agent_name"), "{conflict}");
    }

    #[test]
    fn targets_split_like_request_contact() {
        assert_eq!(split_target("GreenCastle", None), (None, "GreenCastle".into()));
        assert_eq!(
            split_target("GreenCastle", Some(" other ")),
            (Some("other".into()), "GreenCastle".into())
        );
        assert_eq!(split_target("GreenCastle", Some("")), (None, "GreenCastle".into()));
        assert_eq!(
            split_target("project:web#RedStone", Some("ignored")),
            (Some("web".into()), "RedStone".into())
        );
    }

    #[test]
    fn welcome_needs_both_parts_text_and_auto_accept() {
        let base = ContactHandshake { auto_accept: true, ..ContactHandshake::default() };
        let with = |subject: Option<&str>, body: Option<&str>, auto_accept: bool| {
            welcome_of(&ContactHandshake {
                welcome_subject: subject.map(str::to_string),
                welcome_body: body.map(str::to_string),
                auto_accept,
                ..base.clone()
            })
        };
        assert_eq!(with(None, None, false), Ok(None));
        assert_eq!(
            with(Some("Hi"), Some("Welcome"), true),
            Ok(Some(("Hi".into(), "Welcome".into())))
        );
        assert!(with(Some("Hi"), None, true).is_err());
        assert!(with(Some(" "), Some("Welcome"), true).is_err());
        assert!(with(Some("Hi"), Some("Welcome"), false).is_err());
    }
}
