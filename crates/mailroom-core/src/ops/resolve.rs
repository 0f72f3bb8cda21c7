//! Finding projects and agents by the names agents type, with the reference's error messages
//! (docs/compat/tools.md §1.5–1.6). Runs inside store jobs.

use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::names::detect_name_mistake;
use crate::model::similarity::close_matches;
use crate::model::slug::{looks_like_path, normalize_absolute_path, slugify};
use crate::records::{Agent, AgentId, Project, ProjectId};
use crate::store::Db;

const PROJECT_PLACEHOLDERS: [&str; 7] = [
    "YOUR_PROJECT",
    "YOUR_PROJECT_PATH",
    "YOUR_PROJECT_KEY",
    "PLACEHOLDER",
    "<PROJECT>",
    "{PROJECT}",
    "$PROJECT",
];
const AGENT_PLACEHOLDERS: [&str; 7] =
    ["YOUR_AGENT", "YOUR_AGENT_NAME", "AGENT_NAME", "PLACEHOLDER", "<AGENT>", "{AGENT}", "$AGENT"];

fn is_placeholder(value: &str, placeholders: &[&str]) -> bool {
    let upper = value.to_ascii_uppercase();
    placeholders.iter().any(|p| upper.contains(p))
}

/// Resolves `project_key` (slug, human key or path spelling) to a project.
pub fn project(db: &Db<'_>, raw: &str) -> Result<Project> {
    let key = raw.trim();
    if key.is_empty() {
        return Err(Error::invalid(
            "project_key must not be empty. Pass the absolute path of \
             your project directory (the human_key given to ensure_project) or its slug.",
        ));
    }
    if is_placeholder(key, &PROJECT_PLACEHOLDERS) {
        return Err(Error::invalid_kind(
            "CONFIGURATION_ERROR",
            format!(
                "project_key '{key}' looks like an unfilled placeholder; pass the absolute \
                 path of your project directory instead."
            ),
        ));
    }
    if let Some(found) = project_by_key(db, key)? {
        return Ok(found);
    }
    // A key no project could have been created with is refused as such, before it is compared
    // with every project's (work that grows with its length) or echoed back.
    bounds::key_text("project_key", key)?;
    Err(project_not_found(db, raw)?)
}

/// The project's and agent's ids when both names resolve as given (by index lookups alone);
/// `None` when either does not, and only [`project`] and [`agent`] can say why (their errors
/// may compare the name with every project's or agent's: work for a blocking thread). The
/// same lookups as theirs, reading only the ids: an inbox read needs no more.
pub fn project_and_agent_ids_directly(
    db: &Db<'_>,
    project_key: &str,
    agent_name: &str,
) -> Result<Option<(ProjectId, AgentId)>> {
    let key = project_key.trim();
    let name = agent_name.trim();
    // Whatever [`project`] or [`agent`] would refuse before looking goes their way.
    if key.is_empty()
        || name.is_empty()
        || is_placeholder(key, &PROJECT_PLACEHOLDERS)
        || is_placeholder(name, &AGENT_PLACEHOLDERS)
    {
        return Ok(None);
    }
    let (slug, canonical) = project_spellings(key);
    let Some(project_id) = db.project_id_matching(&slug, &[&canonical, key])? else {
        return Ok(None);
    };
    Ok(db.agent_id_by_name(project_id, name)?.map(|agent_id| (project_id, agent_id)))
}

/// The project a trimmed, non-placeholder key names (slug, human key or path spelling).
fn project_by_key(db: &Db<'_>, key: &str) -> Result<Option<Project>> {
    let (slug, canonical) = project_spellings(key);
    db.project_matching(&slug, &[&canonical, key])
}

/// The slug and the canonical spelling a project key is matched by.
fn project_spellings(key: &str) -> (String, String) {
    let canonical = canonical_project_key(key);
    (slugify(&canonical), canonical)
}

/// The spelling used for matching: absolute paths are normalised, other keys kept as typed.
fn canonical_project_key(key: &str) -> String {
    if looks_like_path(key)
        && let Some(normalised) = normalize_absolute_path(key)
    {
        return normalised;
    }
    key.to_string()
}

fn project_not_found(db: &Db<'_>, raw: &str) -> Result<Error> {
    let keys = db.project_keys()?;
    let candidates: Vec<&str> =
        keys.iter().flat_map(|(slug, human)| [slug.as_str(), human.as_str()]).collect();
    let similar = close_matches(raw.trim(), candidates, 3, 0.4);
    let message = if similar.is_empty() {
        format!(
            "Project '{raw}' not found and no similar projects exist. Use ensure_project to \
             create it first (pass the absolute path of your project directory)."
        )
    } else {
        let list = similar.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
        format!(
            "Project '{raw}' not found. Did you mean: {list}? Use ensure_project to create a \
             new project."
        )
    };
    Ok(Error::not_found(message))
}

/// Resolves an agent name (case-insensitive) in a project; `field` names the argument.
pub fn agent(db: &Db<'_>, project: &Project, raw: &str, field: &str) -> Result<Agent> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(Error::invalid(format!("{field} must not be empty.")));
    }
    if is_placeholder(name, &AGENT_PLACEHOLDERS) {
        return Err(Error::invalid_kind(
            "CONFIGURATION_ERROR",
            format!(
                "{field} '{name}' looks like an unfilled placeholder; pass your agent \
                 name (as returned by register_agent)."
            ),
        ));
    }
    if let Some(found) = db.agent_by_name(project.id, name)? {
        return Ok(found);
    }
    // As for project keys: a name no agent could have is refused before it is compared with
    // every agent's or echoed back.
    bounds::name_text(field, name)?;
    Err(agent_not_found(db, project, name)?)
}

fn agent_not_found(db: &Db<'_>, project: &Project, name: &str) -> Result<Error> {
    let agents = db.agents_of_project(project.id)?;
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    let key = &project.human_key;
    let mut message = format!("Agent '{name}' not found in project '{key}'.");
    if names.is_empty() {
        message.push_str(" The project has no registered agents yet; use register_agent first.");
    } else {
        let similar = close_matches(name, names.iter().copied(), 3, 0.6);
        if !similar.is_empty() {
            message.push_str(&format!(" Did you mean: {}?", similar.join(", ")));
        }
        let shown: Vec<&str> = names.iter().copied().take(10).collect();
        message.push_str(&format!(" Available agents: {}.", shown.join(", ")));
    }
    let mistake = detect_name_mistake(name);
    if let Some(mistake) = &mistake {
        message.push(' ');
        message.push_str(&mistake.explain(name));
    }
    let kind = mistake.map_or("NOT_FOUND", |m| m.error_type());
    Ok(Error::new(crate::error::Category::NotFound, kind, message))
}

/// A project and one of its agents, the agent named in the `agent` field.
pub fn project_agent(db: &Db<'_>, project_key: &str, agent_name: &str) -> Result<(Project, Agent)> {
    let project = project(db, project_key)?;
    let agent = agent(db, &project, agent_name, "agent")?;
    Ok((project, agent))
}
