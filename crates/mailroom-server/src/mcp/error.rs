//! Mapping errors to what MCP clients of the reference expect (docs/compat/errors.md §2, §6, §7):
//! protocol faults become JSON-RPC errors; tool failures become `isError` results whose text
//! carries the message.

use mailroom_core::{Category, Error};

/// JSON-RPC error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A resource that exists failed to read (what the reference's MCP SDK sends).
    pub const RESOURCE_FAILED: i64 = 0;
    /// The server's storage refused a write (disk full, read-only): a server fault the call
    /// can be retried after, not a tool result (an implementation-defined server error).
    pub const STORAGE: i64 = -32001;
    /// 2026-07-28: a routing header disagrees with the request's body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability its `_meta` did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the envelope names a protocol version we do not speak.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// Why a tool call failed.
#[derive(Debug)]
pub enum ToolError {
    /// Arguments did not match the tool's schema; the text is returned as is.
    InvalidArguments(String),
    /// The operation failed.
    Domain(Error),
}

impl ToolError {
    /// A storage refusal: answered as a JSON-RPC error with this text, not as a result.
    pub fn storage_message(&self) -> Option<&str> {
        match self {
            Self::Domain(e) if matches!(e.category, Category::Storage(_)) => Some(&e.message),
            _ => None,
        }
    }

    /// The error's type, as the operator's metrics count it: the reference's
    /// (docs/compat/errors.md §4), `INVALID_ARGUMENT` for arguments the schema refuses.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidArguments(_) => "INVALID_ARGUMENT",
            Self::Domain(e) => e.kind,
        }
    }

    /// The text of the `isError` result for tool `tool`.
    pub fn result_text(&self, tool: &str) -> String {
        match self {
            Self::InvalidArguments(text) => text.clone(),
            Self::Domain(e) if e.category.is_internal() => {
                tracing::error!(tool, kind = e.kind, error = %e.message, "tool failed");
                format!(
                    "Error calling tool '{tool}': Unexpected error ({}). The server logged \
                     the details.",
                    e.kind
                )
            }
            Self::Domain(e) => format!("Error calling tool '{tool}': {}", e.message),
        }
    }
}

impl From<Error> for ToolError {
    fn from(e: Error) -> Self {
        Self::Domain(e)
    }
}
