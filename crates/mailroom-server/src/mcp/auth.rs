//! Registration-token authentication of tool calls (docs/compat/tools.md §1.7), on when
//! `MAILROOM_TOOL_AUTH=true`.
//!
//! The dispatcher checks a call before the tool runs, from the catalog's rule for the tool
//! (which arguments name the project, the acting agent and its token). An MCP session
//! (`mcp-session-id`) remembers the agents it has proved itself as, so later calls in the same
//! session need no token; bindings lapse after `MCP_AGENT_MAIL_SESSION_BINDING_TTL_SECONDS`
//! without use. A request without a session id is a session of its own: it must carry the
//! token every time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mailroom_core::ops::agents::credentials::{Credential, constant_time_eq};
use mailroom_core::records::{AgentId, ProjectId};
use mailroom_core::{Category, Error};
use serde_json::Value;

use super::catalog::{AuthSpec, Rule};
use super::error::ToolError;
use crate::state::AppState;

const AUTHENTICATION_REQUIRED: &str = "AUTHENTICATION_REQUIRED";
/// Sessions kept before a full sweep of lapsed bindings.
const SWEEP_ABOVE: usize = 4096;

/// One agent a session has proved itself as.
#[derive(Debug, Clone, Copy)]
struct Bound {
    project_id: ProjectId,
    agent_id: AgentId,
    last_used: Instant,
}

/// The agents each MCP session is bound to.
pub struct Bindings {
    table: Mutex<HashMap<String, Vec<Bound>>>,
    ttl: Duration,
}

impl Bindings {
    /// An empty table whose bindings lapse after `ttl` without use.
    pub fn new(ttl: Duration) -> Self {
        Self { table: Mutex::new(HashMap::new()), ttl }
    }

    /// Whether `session` is bound to the agent (refreshing the binding when it is).
    pub fn is_bound(&self, session: Option<&str>, agent_id: AgentId) -> bool {
        self.with_session(session, |agents| {
            let found = agents.iter_mut().find(|b| b.agent_id == agent_id);
            found.map(|b| b.last_used = Instant::now()).is_some()
        })
    }

    /// Every agent this session is bound to.
    pub fn session_agents(&self, session: Option<&str>) -> Vec<AgentId> {
        self.with_session(session, |agents| agents.iter().map(|b| b.agent_id).collect())
    }

    /// The agent of `project_id` this session used last, if any.
    pub fn session_agent(&self, session: Option<&str>, project_id: ProjectId) -> Option<AgentId> {
        self.with_session(session, |agents| {
            agents
                .iter()
                .filter(|b| b.project_id == project_id)
                .max_by_key(|b| b.last_used)
                .map(|b| b.agent_id)
        })
    }

    /// Binds `session` to an agent; a request without a session binds nothing.
    pub fn bind(&self, session: Option<&str>, project_id: ProjectId, agent_id: AgentId) {
        let Some(session) = session else { return };
        let now = Instant::now();
        let mut table = self.lock();
        if table.len() > SWEEP_ABOVE {
            let ttl = self.ttl;
            table.retain(|_, agents| {
                agents.retain(|b| now.duration_since(b.last_used) < ttl);
                !agents.is_empty()
            });
        }
        let agents = table.entry(session.to_string()).or_default();
        agents.retain(|b| b.agent_id != agent_id);
        agents.push(Bound { project_id, agent_id, last_used: now });
    }

    /// Forgets a session (it was closed).
    pub fn forget(&self, session: &str) {
        self.lock().remove(session);
    }

    fn with_session<R: Default>(
        &self,
        session: Option<&str>,
        f: impl FnOnce(&mut Vec<Bound>) -> R,
    ) -> R {
        let Some(session) = session else { return R::default() };
        let mut table = self.lock();
        let Some(agents) = table.get_mut(session) else { return R::default() };
        let ttl = self.ttl;
        agents.retain(|b| b.last_used.elapsed() < ttl);
        f(agents)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Bound>>> {
        // Each update is a single insert/retain, so a poisoned map is still consistent.
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The outcome of checking one agent's credentials once the agent is found: the pure part of
/// the *agent* and *agent or adjacent* rules of docs/compat/tools.md §1.7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The session is already bound to the agent.
    Allow,
    /// Proved (token or window identity): bind the session, then allow.
    Bind,
    /// No token was given.
    Missing,
    /// The token given is not the agent's.
    Invalid,
    /// The agent has no stored token and nothing else vouches for the caller.
    NoStoredToken,
}

/// What is known about a call, for [`decide`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    pub bound_to_agent: bool,
    /// Bound to another agent of the same project, and the tool accepts that.
    pub adjacent: bool,
    pub stored_token: Option<&'a str>,
    pub supplied_token: Option<&'a str>,
    pub window_vouches: bool,
}

/// Decides a call on an agent's credentials.
pub fn decide(e: Evidence<'_>) -> Decision {
    if e.bound_to_agent {
        return Decision::Allow;
    }
    let Some(stored) = e.stored_token else {
        return if e.adjacent { Decision::Allow } else { Decision::NoStoredToken };
    };
    match e.supplied_token {
        None if e.window_vouches => Decision::Bind,
        None => Decision::Missing,
        Some(supplied) if constant_time_eq(stored.as_bytes(), supplied.as_bytes()) => {
            Decision::Bind
        }
        Some(_) => Decision::Invalid,
    }
}

/// Who a call says is acting, read from its arguments by the names its rule gives: the
/// project, the agent named (with the argument that named it) and the token. Blank values
/// count as absent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Claim<'a> {
    pub project_key: Option<&'a str>,
    pub agent: Option<(&'static str, &'a str)>,
    pub token: Option<&'a str>,
}

impl<'a> Claim<'a> {
    /// A claim from typed fields (a REST body), `agent_field` naming the agent's argument.
    pub fn new(
        project_key: &'a str,
        agent_field: &'static str,
        agent_name: Option<&'a str>,
        token: Option<&'a str>,
    ) -> Self {
        Self {
            project_key: non_blank(Some(project_key)),
            agent: non_blank(agent_name).map(|name| (agent_field, name)),
            token: non_blank(token),
        }
    }

    /// The claim of a tool call's JSON arguments.
    pub fn from_arguments(spec: &AuthSpec, args: &'a Value) -> Self {
        let text = |field: &str| non_blank(args.get(field).and_then(Value::as_str));
        Self {
            project_key: text(spec.project),
            agent: spec.agent.iter().find_map(|field| text(field).map(|name| (*field, name))),
            token: text(spec.token),
        }
    }
}

fn non_blank(text: Option<&str>) -> Option<&str> {
    text.filter(|s| !s.trim().is_empty())
}

/// Checks a tool call against the tool's rule; `Ok` lets the tool run. A viewer-scoped call
/// that names no agent is answered with the session's agent (the reference's
/// `resolve_viewer`), which the caller fills in as the viewer so the tool scopes its results
/// to it.
pub async fn authorize(
    state: &AppState,
    tool: &str,
    spec: &AuthSpec,
    claim: Claim<'_>,
    session: Option<&str>,
) -> Result<Option<String>, ToolError> {
    if spec.rule == Rule::Open {
        return Ok(None);
    }
    // A missing project argument fails the tool's own decoding with the usual message.
    let Some(project_key) = claim.project_key else { return Ok(None) };
    let token = claim.token;
    let core = &state.core;
    match (spec.rule, claim.agent) {
        // Naming an agent (a tool whose rule lists agent arguments) needs that agent.
        (Rule::ProjectAdmin, None) => {
            project_admin(state, tool, spec, project_key, token, session).await.map(|()| None)
        }
        (Rule::Viewer, None) => {
            let (project_id, agents) = core.project_credentials(project_key.to_string()).await?;
            let viewer = state
                .bindings
                .session_agent(session, project_id)
                .and_then(|id| agents.into_iter().find(|a| a.agent_id == id));
            match viewer {
                Some(viewer) => Ok(Some(viewer.agent_name)),
                None => Err(denied(format!(
                    "{tool} requires agent_name and {} (or an MCP session already \
                     authenticated as an agent of this project).",
                    spec.token
                ))),
            }
        }
        (Rule::ExistingAgent, None) => Ok(None),
        (_, None) => Err(denied(format!(
            "{tool} requires {} and {} when tool authentication is on.",
            spec.agent.first().copied().unwrap_or("agent_name"),
            spec.token
        ))),
        (rule, Some((field, name))) => {
            let lookup = core.agent_credential(project_key.into(), name.into(), field).await;
            let credential = match lookup {
                Ok(credential) => credential,
                // Registering a new name needs no proof; the tool reports other problems.
                Err(e) if rule == Rule::ExistingAgent && e.category == Category::NotFound => {
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            };
            let action = if tool == "register_agent" {
                "register_agent for an existing identity".to_string()
            } else {
                tool.to_string()
            };
            check_agent(state, &action, spec, &credential, token, session, rule).map(|()| None)
        }
    }
}

fn check_agent(
    state: &AppState,
    action: &str,
    spec: &AuthSpec,
    credential: &Credential,
    token: Option<&str>,
    session: Option<&str>,
    rule: Rule,
) -> Result<(), ToolError> {
    let bindings = &state.bindings;
    let adjacent = rule == Rule::AgentOrAdjacent
        && bindings
            .session_agent(session, credential.project_id)
            .is_some_and(|id| id != credential.agent_id);
    let evidence = Evidence {
        bound_to_agent: bindings.is_bound(session, credential.agent_id),
        adjacent,
        stored_token: credential.token.as_deref(),
        supplied_token: token,
        window_vouches: credential.window_vouches,
    };
    let name = &credential.agent_name;
    let param = spec.token;
    match decide(evidence) {
        Decision::Allow => Ok(()),
        Decision::Bind => {
            bindings.bind(session, credential.project_id, credential.agent_id);
            Ok(())
        }
        Decision::Missing => Err(denied(format!(
            "{action} requires {param} for agent '{name}'. Pass the registration_token returned \
             when the agent was registered, or call from an MCP session (same mcp-session-id) \
             that already authenticated as this agent."
        ))),
        Decision::Invalid => Err(denied(format!(
            "Invalid {param} for agent '{name}'. Pass the registration_token returned when the \
             agent was registered."
        ))),
        Decision::NoStoredToken => Err(denied(format!(
            "{action} requires {param} for agent '{name}', but the agent has no registration \
             token yet; call register_agent for it to obtain one."
        ))),
    }
}

async fn project_admin(
    state: &AppState,
    tool: &str,
    spec: &AuthSpec,
    project_key: &str,
    token: Option<&str>,
    session: Option<&str>,
) -> Result<(), ToolError> {
    let (project_id, agents) = state.core.project_credentials(project_key.to_string()).await?;
    if state.bindings.session_agent(session, project_id).is_some() {
        return Ok(());
    }
    if !agents.iter().any(|a| a.token.is_some()) {
        return Err(denied(format!(
            "{tool} requires {} of an agent of project '{project_key}', but the project has no \
             agent with a registration token; register one first.",
            spec.token
        )));
    }
    let Some(token) = token else {
        return Err(denied(format!(
            "{tool} requires {} of an agent of project '{project_key}' (or an MCP session \
             authenticated as one).",
            spec.token
        )));
    };
    // Every token is compared, so timing does not reveal which agent (if any) matched.
    let holder = agents.iter().fold(None, |found, agent| {
        let matches = agent
            .token
            .as_deref()
            .is_some_and(|stored| constant_time_eq(stored.as_bytes(), token.as_bytes()));
        if matches && found.is_none() { Some(agent) } else { found }
    });
    match holder {
        Some(agent) => {
            state.bindings.bind(session, project_id, agent.agent_id);
            Ok(())
        }
        None => Err(denied(format!(
            "Invalid {} for project '{project_key}': it is not the token of any of its agents.",
            spec.token
        ))),
    }
}

fn denied(message: String) -> ToolError {
    ToolError::Domain(Error::denied(AUTHENTICATION_REQUIRED, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(evidence: Evidence<'_>, expected: Decision) {
        assert_eq!(decide(evidence), expected, "{evidence:?}");
    }

    #[test]
    fn decisions_follow_the_reference_steps() {
        let stored = Some("secret-token");
        let base = Evidence { stored_token: stored, ..Evidence::default() };
        check(Evidence { bound_to_agent: true, ..base }, Decision::Allow);
        check(Evidence { supplied_token: Some("secret-token"), ..base }, Decision::Bind);
        check(Evidence { supplied_token: Some("secret-tokeN"), ..base }, Decision::Invalid);
        check(Evidence { supplied_token: Some("short"), ..base }, Decision::Invalid);
        check(base, Decision::Missing);
        check(Evidence { window_vouches: true, ..base }, Decision::Bind);
        let tokenless = Evidence { stored_token: None, supplied_token: Some("x"), ..base };
        check(tokenless, Decision::NoStoredToken);
        check(Evidence { adjacent: true, ..tokenless }, Decision::Allow);
        check(Evidence { adjacent: true, ..base }, Decision::Missing);
    }

    #[test]
    fn bindings_are_per_session_and_lapse() {
        let bindings = Bindings::new(Duration::from_secs(60));
        bindings.bind(Some("s1"), ProjectId(1), AgentId(10));
        bindings.bind(None, ProjectId(1), AgentId(11));
        assert!(bindings.is_bound(Some("s1"), AgentId(10)));
        assert!(!bindings.is_bound(Some("s2"), AgentId(10)));
        assert!(!bindings.is_bound(None, AgentId(11)), "a request without a session keeps nothing");
        assert_eq!(bindings.session_agent(Some("s1"), ProjectId(1)), Some(AgentId(10)));
        assert_eq!(bindings.session_agent(Some("s1"), ProjectId(2)), None);
        bindings.forget("s1");
        assert!(!bindings.is_bound(Some("s1"), AgentId(10)));
        let lapsing = Bindings::new(Duration::ZERO);
        lapsing.bind(Some("s"), ProjectId(1), AgentId(10));
        assert!(!lapsing.is_bound(Some("s"), AgentId(10)), "a binding past its TTL is gone");
    }
}
