//! The two rule sets the ops apply to the keys and names a caller types.
//!
//! One op layer serves both transports; only these rules differ. MCP callers are coding agents,
//! and the reference's rules exist to catch an agent's typical mistakes (a project named by a
//! relative path, a Unix user name or a program name used as an agent name) and to make agents
//! ask before writing to a stranger. REST callers are scripts and load tools run by the
//! operator: they name projects and agents as they please and mean what they type.

use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::slug::normalize_absolute_path;
use crate::model::thread_id::is_valid_thread_id;

/// Which caller's rules an op applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Conventions {
    /// The reference's rules, for MCP: a project key is an absolute path; agent names are
    /// adjective+noun pairs (others refused or replaced as `AGENT_NAME_ENFORCEMENT_MODE`
    /// says); recipient names are screened for common mistakes; and under the `auto`
    /// contact policy a first message waits for a contact handshake.
    #[default]
    Agent,
    /// The REST routes' rules: a project key may also be an identifier such as
    /// `benchmark-project`; an agent name that is an identifier is taken as given (unless
    /// names are always generated); recipient names are not screened; and the `auto`
    /// contact policy admits a first message. A recipient's explicit `contacts_only` and
    /// `block_all` still apply.
    Script,
}

impl Conventions {
    /// The project key ensure_project stores, from the caller's `human_key`: a normalised
    /// absolute path, or under [`Conventions::Script`] an identifier as typed.
    pub(crate) fn project_key(self, human_key: &str) -> Result<ProjectKey> {
        let trimmed = human_key.trim();
        bounds::project_key("human_key", trimmed)?;
        if let Some(path) = normalize_absolute_path(trimmed) {
            return Ok(ProjectKey::Path(path));
        }
        match self {
            Self::Agent => Err(Error::value_error(format!(
                "human_key must be an absolute directory path (got '{human_key}'); pass the \
                 absolute path of your project's working directory"
            ))),
            Self::Script if is_identifier(trimmed) => Ok(ProjectKey::Name(trimmed.to_string())),
            Self::Script => Err(Error::invalid(format!(
                "human_key must be an absolute directory path or a name of {IDENTIFIER_RULE} \
                 (got '{human_key}')"
            ))),
        }
    }

    /// The agent name a [`Conventions::Script`] registration asks for, as given; `field`
    /// names the argument in the error.
    pub(crate) fn script_name(raw: &str, field: &str) -> Result<String> {
        if is_identifier(raw) {
            Ok(raw.to_string())
        } else {
            Err(Error::invalid(format!(
                "{field} '{raw}' is not a valid agent name: use {IDENTIFIER_RULE}"
            )))
        }
    }
}

/// What a REST identifier may be; agent names and thread ids share it.
const IDENTIFIER_RULE: &str =
    "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit";

fn is_identifier(s: &str) -> bool {
    is_valid_thread_id(s)
}

/// A project key as ensure_project stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProjectKey {
    /// A normalised absolute directory path (its Git identity can be resolved).
    Path(String),
    /// A name that is not a path (REST only).
    Name(String),
}

impl ProjectKey {
    /// The key's text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Path(s) | Self::Name(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_under_both_rule_sets() {
        for conventions in [Conventions::Agent, Conventions::Script] {
            let key = conventions.project_key(" /work/a/../b/ ").expect("a path");
            assert_eq!(key, ProjectKey::Path("/work/b".into()));
        }
    }

    #[test]
    fn only_scripts_may_name_a_project() {
        let err = Conventions::Agent.project_key("benchmark-project").expect_err("not a path");
        assert!(err.message.contains("absolute directory path"), "{}", err.message);
        let key = Conventions::Script.project_key("benchmark-project").expect("a name");
        assert_eq!(key, ProjectKey::Name("benchmark-project".into()));
        for bad in ["", "  ", "../up", "a/b", "has space", "-dash-first", &"x".repeat(129)] {
            let err = Conventions::Script.project_key(bad).expect_err(bad);
            assert!(err.message.starts_with("human_key must be"), "{}", err.message);
        }
    }

    #[test]
    fn script_names_are_identifiers_taken_as_given() {
        assert_eq!(Conventions::script_name("sender", "name").expect("valid"), "sender");
        assert_eq!(Conventions::script_name("ci.bot-7", "name").expect("valid"), "ci.bot-7");
        for bad in ["", "two words", "_x", "é", "a/b"] {
            let err = Conventions::script_name(bad, "name").expect_err(bad);
            assert!(err.message.starts_with("name '"), "{}", err.message);
        }
    }
}
