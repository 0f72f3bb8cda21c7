//! Agents: register_agent, create_agent_identity, whois, list_agents and an agent's
//! capabilities; `windows` (window identities), `credentials` (what authenticating a call
//! reads), `lifecycle` (deregister, retire, hard delete).

pub mod credentials;
pub mod lifecycle;
pub mod windows;

use mailroom_git::recent_commits;
use serde::Serialize;

use crate::config::NameEnforcement;
use crate::error::{Error, Result};
use crate::model::names::{
    detect_name_mistake, is_valid_adjective_noun, is_valid_explicit_id, random_adjective_noun,
    sanitize_agent_name,
};
use crate::model::time::Timestamp;
use crate::ops::agents::windows::canonical_uuid;
use crate::ops::conventions::Conventions;
use crate::ops::output::{AgentBase, AgentOut, DEFAULT_CAPABILITIES};
use crate::ops::resolve::project_agent;
use crate::ops::{Mailroom, resolve};
use crate::records::{Agent, AgentId, Project, ProjectId};
use crate::store::Db;
use crate::store::db::agents::NewAgent;
use crate::store::db::archive_queue::ArchiveKind;

/// Arguments of register_agent and create_agent_identity.
#[derive(Debug, Clone, Default)]
pub struct Registration {
    pub project_key: String,
    pub program: String,
    pub model: String,
    /// `name` (register) or `name_hint` (create).
    pub name: Option<String>,
    pub task_description: String,
    pub attachments_policy: Option<String>,
    /// Whose naming rules apply (REST takes an identifier as given).
    pub conventions: Conventions,
}

/// Result of whois.
#[derive(Debug, Clone, Serialize)]
pub struct Whois {
    #[serde(flatten)]
    pub agent: AgentOut,
    pub recent_commits: Vec<serde_json::Value>,
}

/// One entry of list_agents.
#[derive(Debug, Clone, Serialize)]
pub struct ListedAgent {
    #[serde(flatten)]
    pub agent: AgentBase,
    pub unread_count: i64,
}

/// Result of list_agents (the shape of `resource://agents/{project}`).
#[derive(Debug, Clone, Serialize)]
pub struct AgentDirectory {
    pub project: ProjectRef,
    pub agents: Vec<ListedAgent>,
}

/// A project's slug and human key.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectRef {
    pub slug: String,
    pub human_key: String,
}

/// The window identity registration uses.
#[derive(Debug, Clone)]
struct WindowSettings {
    uuid: String,
    ttl_days: i64,
}

impl WindowSettings {
    /// When a window identity registered (or re-registered) at `from` expires: at most the
    /// last instant a timestamp holds, however often re-registration pushes it on.
    fn expires(&self, from: Timestamp) -> Timestamp {
        from.plus_seconds(self.ttl_days.saturating_mul(86_400)).min(Timestamp::LAST)
    }
}

/// The display name of the window's live identity in the project, its expiry extended by the
/// TTL from the later of now and its old expiry; `None` when the window has none yet.
fn window_name(
    db: &Db<'_>,
    project: &Project,
    window: &WindowSettings,
    now: Timestamp,
) -> Result<Option<String>> {
    let Some(live) = db.live_window(project.id, &window.uuid, now)? else { return Ok(None) };
    let base = live.expires_ts.map_or(now, |e| e.max(now));
    db.extend_window(live.id, now, window.expires(base))?;
    Ok(Some(live.display_name))
}

/// Generated names are retried this many times before giving up (4,278 combinations exist).
const NAME_GENERATION_ATTEMPTS: usize = 1024;

impl Mailroom {
    /// Registers an agent, or refreshes an existing one of the same name.
    pub async fn register_agent(&self, reg: Registration) -> Result<AgentOut> {
        validate_program_model(&reg)?;
        let mode = self.config.name_enforcement;
        let window = self.window_settings();
        self.admit_archive_work().await?;
        self.store
            .write(move |db| {
                let project = resolve::project(db, &reg.project_key)?;
                let now = Timestamp::now();
                let token = new_registration_token()?;
                let policy = attachments_policy(reg.attachments_policy.as_deref());
                let named = reg.name.as_deref().is_some_and(|n| !n.trim().is_empty());
                // A window identity names the agent only when the caller gave no name (or
                // names are always generated): docs/compat/tools.md §1.6 (enforcement
                // mode, step 1) and §3.8.
                let window = window.filter(|_| !named || mode == NameEnforcement::AlwaysAuto);
                let from_window = match &window {
                    Some(window) => window_name(db, &project, window, now)?,
                    None => None,
                };
                let chosen = choose_name(reg.name.as_deref(), mode, reg.conventions)?;
                let wanted = from_window.clone().or(chosen);
                let agent = match &wanted {
                    Some(name) => match db.agent_by_name(project.id, name)? {
                        Some(existing) => {
                            let update =
                                new_agent(&project, &existing.name, &reg, policy, &token, now);
                            db.update_agent_registration(existing.id, &update)?
                        }
                        None => insert_named(db, &project, wanted, &reg, policy, &token, now)?,
                    },
                    None => insert_named(db, &project, wanted, &reg, policy, &token, now)?,
                };
                db.enqueue_archive(ArchiveKind::Profile, agent.id)?;
                let mut out = AgentOut::new(&agent, true);
                if let Some(window) = &window {
                    if from_window.is_none() {
                        db.insert_window(
                            project.id,
                            &window.uuid,
                            &agent.name,
                            now,
                            Some(window.expires(now)),
                        )?;
                    }
                    out.window_id = Some(window.uuid.clone());
                    out.window_display_name = Some(agent.name.clone());
                }
                Ok(out)
            })
            .await
    }

    /// The server's window identity settings, when `MCP_AGENT_MAIL_WINDOW_ID` is a UUID.
    fn window_settings(&self) -> Option<WindowSettings> {
        let uuid = canonical_uuid(self.config.window_id.as_deref()?).ok()?;
        Some(WindowSettings { uuid, ttl_days: self.config.window_ttl_days.max(1) })
    }

    /// Creates a new agent identity; never reuses an existing agent.
    pub async fn create_agent_identity(&self, reg: Registration) -> Result<AgentOut> {
        validate_program_model(&reg)?;
        let mode = self.config.name_enforcement;
        self.admit_archive_work().await?;
        self.store
            .write(move |db| {
                let project = resolve::project(db, &reg.project_key)?;
                let now = Timestamp::now();
                let token = new_registration_token()?;
                let policy = attachments_policy(reg.attachments_policy.as_deref());
                let mut wanted = choose_name(reg.name.as_deref(), mode, reg.conventions)?;
                if let Some(name) = &wanted
                    && db.agent_by_name(project.id, name)?.is_some()
                {
                    if mode == NameEnforcement::Strict {
                        return Err(Error::value_error(format!(
                            "agent name '{name}' is already in use in this project"
                        )));
                    }
                    wanted = None;
                }
                let agent = insert_named(db, &project, wanted, &reg, policy, &token, now)?;
                db.enqueue_archive(ArchiveKind::Profile, agent.id)?;
                Ok(AgentOut::new(&agent, true))
            })
            .await
    }

    /// Profile of an agent, with the archive's newest `commit_limit` commits (clamped to
    /// 1..=50) when asked for: those of the whole archive, as in the reference.
    pub async fn whois(
        &self,
        project_key: String,
        agent_name: String,
        commit_limit: Option<i64>,
    ) -> Result<Whois> {
        let agent = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                resolve::agent(db, &project, &agent_name, "agent_name")
            })
            .await?;
        let recent_commits = match (commit_limit, &self.archive) {
            (Some(limit), Some(archive)) => {
                let root = archive.root().to_path_buf();
                let limit = limit.clamp(1, 50) as usize;
                let commits = tokio::task::spawn_blocking(move || recent_commits(&root, limit))
                    .await
                    .map_err(|e| Error::internal(format!("commit listing failed: {e}")))??;
                commits.into_iter().map(commit_json).collect()
            }
            _ => Vec::new(),
        };
        Ok(Whois { agent: AgentOut::new(&agent, false), recent_commits })
    }

    /// Every agent of a project with its unread count, in registration order.
    pub async fn list_agents(&self, project_key: String) -> Result<AgentDirectory> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agents = agents_with_unread(db, project.id)?;
                Ok(AgentDirectory {
                    project: ProjectRef { slug: project.slug, human_key: project.human_key },
                    agents,
                })
            })
            .await
    }

    /// The capabilities an agent advertises: every agent advertises the default set (the
    /// same list AgentOut carries). With a project, the agent must exist there.
    pub async fn agent_capabilities(
        &self,
        project_key: Option<String>,
        agent_name: String,
    ) -> Result<Vec<&'static str>> {
        if let Some(project_key) = project_key {
            self.store
                .read(move |db| project_agent(db, &project_key, &agent_name).map(drop))
                .await?;
        }
        Ok(DEFAULT_CAPABILITIES.to_vec())
    }
}

/// Every agent of a project with its unread count, in registration order.
pub(crate) fn agents_with_unread(db: &Db<'_>, project_id: ProjectId) -> Result<Vec<ListedAgent>> {
    let unread: std::collections::HashMap<AgentId, i64> =
        db.unread_counts(project_id)?.into_iter().collect();
    Ok(db
        .agents_of_project(project_id)?
        .iter()
        .map(|a| ListedAgent {
            agent: AgentBase::from(a),
            unread_count: unread.get(&a.id).copied().unwrap_or(0),
        })
        .collect())
}

pub(crate) fn validate_program_model(reg: &Registration) -> Result<()> {
    if reg.program.trim().is_empty() {
        return Err(Error::invalid_kind(
            "EMPTY_PROGRAM",
            "program must not be empty; pass the name of your coding tool (e.g. 'claude-code').",
        ));
    }
    if reg.model.trim().is_empty() {
        return Err(Error::invalid_kind(
            "EMPTY_MODEL",
            "model must not be empty; pass the model you run on (e.g. 'gpt-5').",
        ));
    }
    Ok(())
}

fn attachments_policy(raw: Option<&str>) -> &'static str {
    match raw.map(|p| p.trim().to_ascii_lowercase()).as_deref() {
        Some("inline") => "inline",
        Some("file") => "file",
        _ => "auto",
    }
}

/// Applies the naming rules (docs/compat/tools.md §1.6, "Enforcement mode"): `Some(name)` to
/// use, `None` to generate.
fn choose_name(
    requested: Option<&str>,
    mode: NameEnforcement,
    conventions: Conventions,
) -> Result<Option<String>> {
    let Some(raw) = requested.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if mode == NameEnforcement::AlwaysAuto {
        return Ok(None);
    }
    if conventions == Conventions::Script {
        return Conventions::script_name(raw, "name").map(Some);
    }
    if is_valid_explicit_id(raw) {
        return Ok(Some(raw.to_string()));
    }
    match sanitize_agent_name(raw) {
        Some(name) if is_valid_adjective_noun(&name) => Ok(Some(name)),
        _ if mode == NameEnforcement::Strict => Err(invalid_name(raw)),
        _ => Ok(None),
    }
}

fn invalid_name(raw: &str) -> Error {
    let (kind, detail) = match detect_name_mistake(raw) {
        Some(mistake) => (mistake.error_type(), mistake.explain(raw)),
        None => ("INVALID_AGENT_NAME", format!("'{raw}' is not a valid agent name.")),
    };
    Error::invalid_kind(
        kind,
        format!(
            "{detail} Names are adjective+noun pairs such as 'BlueLake'; omit the name to \
             have one generated."
        ),
    )
}

fn new_agent<'a>(
    project: &Project,
    name: &'a str,
    reg: &'a Registration,
    policy: &'a str,
    token: &'a str,
    now: Timestamp,
) -> NewAgent<'a> {
    NewAgent {
        project_id: project.id,
        name,
        program: reg.program.trim(),
        model: reg.model.trim(),
        task_description: &reg.task_description,
        attachments_policy: policy,
        registration_token: token,
        now,
    }
}

/// Inserts the agent under `wanted`, or under a fresh generated name when `wanted` is `None`.
fn insert_named(
    db: &Db<'_>,
    project: &Project,
    wanted: Option<String>,
    reg: &Registration,
    policy: &str,
    token: &str,
    now: Timestamp,
) -> Result<Agent> {
    if let Some(name) = wanted {
        let row = new_agent(project, &name, reg, policy, token, now);
        return db.insert_agent(&row)?.ok_or_else(|| {
            Error::new(
                crate::Category::Conflict,
                "INVALID_ARGUMENT",
                format!("agent name '{name}' is already in use in this project"),
            )
        });
    }
    for _ in 0..NAME_GENERATION_ATTEMPTS {
        let candidate = random_adjective_noun();
        if let Some(agent) =
            db.insert_agent(&new_agent(project, &candidate, reg, policy, token, now))?
        {
            return Ok(agent);
        }
    }
    Err(Error::internal("could not find a free agent name after 1024 attempts"))
}

/// A registration token: 32 random bytes, URL-safe base64 without padding (43 characters).
pub fn new_registration_token() -> Result<String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A commit as whois lists it (the reference's keys; the author's time in its text form).
fn commit_json(commit: mailroom_git::CommitInfo) -> serde_json::Value {
    serde_json::json!({
        "hexsha": commit.hexsha,
        "summary": commit.summary,
        "authored_ts": Timestamp::from_micros(commit.authored_seconds.saturating_mul(1_000_000)),
    })
}

#[cfg(test)]
mod window_tests {
    use super::*;

    /// Re-registration pushes a window's expiry on from the later of now and its old expiry;
    /// however often, it stops at the last time a timestamp holds.
    #[test]
    fn a_window_expiry_stops_at_the_last_storable_time() {
        let window = WindowSettings { uuid: "w".to_string(), ttl_days: 3650 };
        let mut expiry = Timestamp::from_micros(1_700_000_000_000_000);
        for _ in 0..1000 {
            expiry = window.expires(expiry);
        }
        assert_eq!(expiry, Timestamp::LAST);
        assert!(expiry.is_storable());
    }
}
