//! MCP resources (docs/compat/resources.md): a table of URI templates, built once at start-up, each
//! with a handler calling one core op. `resources/read` matches the URI against the table
//! (`router`), applies the `format` query parameter centrally and wraps the JSON.
//!
//! One file per family: `tooling` (config and tooling), `projects` (projects, a project, its
//! agents), `mailbox` (message, thread, inbox, outbox, mailbox), `views` (acknowledgement
//! views), `worktrees` (product, identity), `reservations` (file reservations).

mod mailbox;
mod projects;
mod reservations;
mod router;
mod tooling;
mod views;
mod worktrees;

use std::future::Future;
use std::pin::Pin;

use axum::body::Bytes;
use mailroom_core::Error;
use serde::Serialize;
use serde_json::{Value, json};

use super::format::OutputFormat;
use crate::state::AppState;
pub use router::Params;
use router::Template;

/// What a resource handler resolves to.
pub type ResourceFuture = Pin<Box<dyn Future<Output = Result<Value, Error>> + Send>>;
type Handler = fn(AppState, Params) -> ResourceFuture;

/// One resource (or resource template).
pub struct Resource {
    pub template: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    parsed: Template,
    handler: Handler,
}

impl Resource {
    fn new(
        template: &'static str,
        name: &'static str,
        description: &'static str,
        handler: Handler,
    ) -> Self {
        Self { template, name, description, parsed: Template::parse(template), handler }
    }
}

/// Every resource, in the order they are listed.
fn all_resources(worktrees_enabled: bool) -> Vec<Resource> {
    let mut all = tooling::resources();
    all.extend(projects::resources());
    all.extend(reservations::resources());
    if worktrees_enabled {
        all.extend(worktrees::resources());
    }
    all.extend(mailbox::resources());
    all.extend(views::resources());
    all
}

/// Why a read failed.
#[derive(Debug)]
pub enum ReadError {
    /// No template matches the URI.
    Unknown(String),
    /// The resource failed; the text is the client-facing message.
    Failed(String),
}

/// The resource table and its precomputed list answers.
pub struct Resources {
    all: Vec<Resource>,
    list_result: Bytes,
    templates_result: Bytes,
}

impl Resources {
    /// Builds the table (product and identity resources only with worktrees enabled).
    pub fn build(worktrees_enabled: bool) -> Self {
        let all = all_resources(worktrees_enabled);
        let fixed: Vec<Value> = all
            .iter()
            .filter(|r| !r.parsed.has_path_vars)
            .map(|r| {
                json!({"uri": r.parsed.base, "name": r.name, "description": r.description,
                    "mimeType": "application/json"})
            })
            .collect();
        let templates: Vec<Value> = all
            .iter()
            .map(|r| {
                json!({"uriTemplate": r.template, "name": r.name, "description": r.description,
                    "mimeType": "application/json"})
            })
            .collect();
        // Serialised once: the lists never change while the server runs.
        let raw = |value: Value| Bytes::from(value.to_string());
        Self {
            all,
            list_result: raw(json!({ "resources": fixed })),
            templates_result: raw(json!({ "resourceTemplates": templates })),
        }
    }

    /// The `resources/list` answer: the parameterless resources by their fixed URI.
    pub fn list_result(&self) -> &Bytes {
        &self.list_result
    }

    /// The `resources/templates/list` answer: every template, `{?format}` ones included.
    pub fn templates_result(&self) -> &Bytes {
        &self.templates_result
    }

    /// The name of the resource `uri` reads and its parameters; `None` for an unknown URI.
    pub fn matched(&self, uri: &str) -> Option<(&'static str, Params)> {
        self.all.iter().find_map(|r| r.parsed.matches(uri).map(|p| (r.name, p)))
    }

    /// Reads `uri`: the handler's JSON, in the requested format.
    pub async fn read(&self, state: AppState, uri: &str) -> Result<Value, ReadError> {
        let Some((resource, params)) =
            self.all.iter().find_map(|r| r.parsed.matches(uri).map(|p| (r, p)))
        else {
            return Err(ReadError::Unknown(format!("Unknown resource: {uri}")));
        };
        let failed = |message: String| {
            if resource.parsed.has_path_vars || uri.contains('?') {
                ReadError::Failed(format!(
                    "Error reading resource from template '{uri}': {message}"
                ))
            } else {
                ReadError::Failed(format!("Error reading resource '{uri}': {message}"))
            }
        };
        let requested = match params.get("format").map(OutputFormat::parse).transpose() {
            Ok(requested) => requested.flatten(),
            Err(message) => return Err(failed(message)),
        };
        // Reading one's mail is activity, for the upkeep's retirement as a tool call is.
        if let (Some(project), Some(agent)) = (params.get("project"), params.get("agent")) {
            state.instruments.note_activity(project, agent);
        }
        let default = state.config.default_format;
        match (resource.handler)(state, params).await {
            Ok(value) => Ok(super::format::apply(value, requested, default)),
            Err(e) => Err(failed(client_message(resource.name, e))),
        }
    }
}

/// The message a client sees; internal details are logged, never returned.
fn client_message(resource: &str, e: Error) -> String {
    if e.category.is_internal() {
        tracing::error!(resource, kind = e.kind, error = %e.message, "resource failed");
        format!("Unexpected error ({}). The server logged the details.", e.kind)
    } else {
        e.message
    }
}

/// Boxes a handler's future.
fn boxed<F>(future: F) -> ResourceFuture
where
    F: Future<Output = Result<Value, Error>> + Send + 'static,
{
    Box::pin(future)
}

/// Serialises an op's output.
fn to_json<T: Serialize>(value: T) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::internal(format!("cannot encode result: {e}")))
}

/// The `project` query parameter agent-scoped resources need.
fn required_project(params: &Params, resource: &str) -> Result<String, Error> {
    params
        .string("project")
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| Error::invalid(format!("project parameter is required for {resource}")))
}

/// A path variable (always present once the template matched).
fn path_var(params: &Params, name: &str) -> String {
    params.string(name).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_unique_and_parameterless_ones_have_a_format_query() {
        let resources = Resources::build(true);
        let mut templates: Vec<&str> = resources.all.iter().map(|r| r.template).collect();
        let count = templates.len();
        templates.sort_unstable();
        templates.dedup();
        assert_eq!(templates.len(), count, "duplicate template");
        for r in &resources.all {
            assert!(r.template.starts_with("resource://"), "{}", r.template);
            assert!(r.template.ends_with("format}"), "{} must accept format", r.template);
        }
        assert_eq!(Resources::build(false).all.len() + 2, count, "product and identity gated");
    }
}
