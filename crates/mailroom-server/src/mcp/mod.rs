//! MCP over Streamable HTTP: transport (HTTP rules), the 2026-07-28 envelope and listen
//! streams, session table, JSON-RPC dispatch, the
//! tool registry and one file per tool, the resources, tool metrics and output formats.

pub mod auth;
pub mod catalog;
mod chunks;
pub mod dispatch;
pub mod envelope;
pub mod error;
pub mod format;
mod json_string;
mod listen;
pub mod metrics;
pub mod resources;
pub mod session;
pub mod subscriptions;
pub mod tools;
pub mod transport;
/// The debug-build check of a tool result's JSON text (`tools::encode`).
#[cfg(debug_assertions)]
mod unique_keys;

/// Protocol versions we speak, newest first; the first is offered when a client asks for
/// one we do not know.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The server name the reference advertises (clients key configuration on it).
pub const SERVER_NAME: &str = "mcp-agent-mail";
