//! The engine's one error type.
//!
//! Messages name what failed and where, without a prefix: the caller adds its own (the
//! server's archive shows each as `archive: <message>`).

use std::path::{Path, PathBuf};

/// What went wrong in the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// libgit2 refused an operation; `context` names it (`open`, `move HEAD`, …).
    #[error("{context}: {}", .source.message())]
    Git {
        /// The operation, as a short phrase.
        context: &'static str,
        /// libgit2's error.
        source: git2::Error,
    },
    /// A file or directory could not be opened, created, read, written or renamed.
    #[error("{context} {}: {source}", .path.display())]
    Io {
        /// What was attempted (`cannot write`, …).
        context: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The filesystem holding `path` could not be flushed: what was written may not survive
    /// a power loss.
    #[error("cannot flush {} to disk: {source}", .path.display())]
    Flush {
        /// A directory of the flushed filesystem.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// Something the engine was given, read or built breaks Git's formats or the engine's
    /// rules: a path it cannot commit, a tree, pack or index that does not parse, an object
    /// that does not deflate or inflate, a delta that does not rebuild its object, a new pack
    /// that lacks the commit it must hold.
    #[error("{0}")]
    Invalid(String),
    /// A `git` command could not be run, or failed.
    #[error("{0}")]
    Command(String),
    /// A full pack or a merge was told to stop before it ended; it removed nothing.
    #[error("stopped")]
    Stopped,
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Invalid`] saying `message`.
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }
}

/// libgit2's `error` while doing `context`.
pub(crate) fn git_err(context: &'static str, error: git2::Error) -> Error {
    Error::Git { context, source: error }
}

/// `error` while doing `context` on `path`.
pub(crate) fn io_err(context: &'static str, path: &Path, error: std::io::Error) -> Error {
    Error::Io { context, path: path.to_path_buf(), source: error }
}
