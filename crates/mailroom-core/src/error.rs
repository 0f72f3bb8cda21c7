//! The one error type of the core, grouped by what the caller can do about it.
//!
//! Every error carries the reference's error-type vocabulary (`kind`, e.g. `NOT_FOUND`,
//! `CONTACT_REQUIRED`, docs/compat/errors.md §4) and a human message. The transports map the
//! [`Category`] to their own shapes; clients of the reference match substrings of the message,
//! so messages follow the reference's wording where it is known.

use std::fmt;

/// What the caller can do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// The request is wrong; fix an argument (the message names the field).
    InvalidArgument,
    /// A named project, agent, message or reservation does not exist.
    NotFound,
    /// The request clashes with current state (e.g. a name already taken).
    Conflict,
    /// The caller is not allowed to do this (contact policy, authentication).
    PermissionDenied,
    /// A transient condition (database busy); retrying may succeed.
    Retryable,
    /// The disk holding the data is full, or the data cannot be written (a read-only file or
    /// file system): which one, and the message says that nothing of the call was stored.
    Storage(StorageFault),
    /// A bug or an environment fault; details are logged, not returned.
    Internal,
    /// The Git archive's engine failed reading or writing its repository (not the data it
    /// was given): internal to callers, as [`Category::Internal`]; the archive writer retries
    /// such work instead of setting it aside.
    Archive,
}

impl Category {
    /// Whether callers see only that the server failed (the details are logged).
    pub fn is_internal(self) -> bool {
        matches!(self, Self::Internal | Self::Archive)
    }
}

/// A core error: category, reference error type and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// What the caller can do.
    pub category: Category,
    /// The reference's error type, e.g. `INVALID_ARGUMENT`.
    pub kind: &'static str,
    /// The message returned to the client.
    pub message: String,
}

/// Result alias used throughout the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Builds an error of any category.
    pub fn new(category: Category, kind: &'static str, message: impl Into<String>) -> Self {
        Self { category, kind, message: message.into() }
    }

    /// An `INVALID_ARGUMENT` error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Category::InvalidArgument, "INVALID_ARGUMENT", message)
    }

    /// An invalid-argument error with a specific reference type (e.g. `EMPTY_PROGRAM`).
    pub fn invalid_kind(kind: &'static str, message: impl Into<String>) -> Self {
        Self::new(Category::InvalidArgument, kind, message)
    }

    /// A reference `ValueError`: the wording the reference wraps around plain value errors.
    pub fn value_error(detail: impl fmt::Display) -> Self {
        Self::invalid(format!(
            "Invalid argument value: {detail}. Check that all parameters have valid values."
        ))
    }

    /// A `NOT_FOUND` error.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Category::NotFound, "NOT_FOUND", message)
    }

    /// A permission error with the given reference type (e.g. `CONTACT_BLOCKED`).
    pub fn denied(kind: &'static str, message: impl Into<String>) -> Self {
        Self::new(Category::PermissionDenied, kind, message)
    }

    /// An internal error; the message is logged and a generic one is shown to clients.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(Category::Internal, "UNHANDLED_EXCEPTION", message)
    }

    /// `STORAGE_FULL`: `what` (the database, the archive) could not grow, so the call was
    /// not carried out.
    pub fn storage_full(what: &str) -> Self {
        Self::new(
            Category::Storage(StorageFault::Full),
            "STORAGE_FULL",
            format!(
                "storage full: {what} cannot grow (no space left on its disk); the call was \
                 not carried out. Retry once space is freed."
            ),
        )
    }

    /// `STORAGE_READ_ONLY`: `what` cannot be written, so the call was not carried out.
    pub fn storage_read_only(what: &str) -> Self {
        Self::new(
            Category::Storage(StorageFault::ReadOnly),
            "STORAGE_READ_ONLY",
            format!(
                "storage read-only: {what} cannot be written (a read-only file or file \
                 system); the call was not carried out."
            ),
        )
    }

    /// The storage error a system error stands for (disk full, quota exceeded, read-only
    /// file system), if it is one.
    pub fn from_storage_io(error: &std::io::Error, what: &str) -> Option<Self> {
        Some(match StorageFault::of(error)? {
            StorageFault::Full => Self::storage_full(what),
            StorageFault::ReadOnly => Self::storage_read_only(what),
        })
    }
}

/// What is wrong with the storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// The disk (or the quota) is full.
    Full,
    /// A read-only file or file system.
    ReadOnly,
}

impl StorageFault {
    fn of(error: &std::io::Error) -> Option<Self> {
        use std::io::ErrorKind;
        match error.kind() {
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Some(Self::Full),
            ErrorKind::ReadOnlyFilesystem => Some(Self::ReadOnly),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The Git engine's failures are the archive's internal errors, each message prefixed with
/// `archive: ` (what the writer's retries log, and what a full queue's error quotes).
impl From<mailroom_git::Error> for Error {
    fn from(error: mailroom_git::Error) -> Self {
        let fault = match &error {
            mailroom_git::Error::Io { source, .. } | mailroom_git::Error::Flush { source, .. } => {
                StorageFault::of(source)
            }
            _ => None,
        };
        match fault {
            // The client hears what is wrong; the path (and the system's words) go to the log.
            Some(fault) => {
                tracing::error!(%error, "the archive's storage refused a write");
                let (kind, message) = match fault {
                    StorageFault::Full => (
                        "STORAGE_FULL",
                        "storage full: the archive cannot grow (no space left on its disk)",
                    ),
                    StorageFault::ReadOnly => (
                        "STORAGE_READ_ONLY",
                        "storage read-only: the archive cannot be written (a read-only file \
                         system)",
                    ),
                };
                Self::new(Category::Storage(fault), kind, message)
            }
            None => {
                Self::new(Category::Archive, "UNHANDLED_EXCEPTION", format!("archive: {error}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// The engine's errors read as the archive's always did: `archive: ` and the engine's
    /// words, an internal error of the archive.
    #[test]
    fn engine_errors_keep_the_archives_wording() {
        let git = git2::Error::from_str("reference 'refs/heads/main' is locked");
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let path = PathBuf::from("/data/.git");
        let cases = [
            (
                mailroom_git::Error::Git { context: "move HEAD", source: git },
                "archive: move HEAD: reference 'refs/heads/main' is locked".to_string(),
            ),
            (
                mailroom_git::Error::Io {
                    context: "cannot write",
                    path: path.clone(),
                    source: io(),
                },
                format!("archive: cannot write /data/.git: {}", io()),
            ),
            (
                mailroom_git::Error::Flush { path, source: io() },
                format!("archive: cannot flush /data/.git to disk: {}", io()),
            ),
        ];
        for (engine, expected) in cases {
            let error = Error::from(engine);
            assert_eq!((error.category, error.kind), (Category::Archive, "UNHANDLED_EXCEPTION"));
            assert!(error.category.is_internal());
            assert_eq!(error.message, expected);
        }
    }

    /// A full disk and a read-only file system are storage errors that say so, from the
    /// archive's engine and from plain system errors alike; other system errors are not.
    #[test]
    fn full_and_read_only_storage_say_so() {
        let full = || std::io::Error::from_raw_os_error(libc::ENOSPC);
        let engine = mailroom_git::Error::Io {
            context: "cannot write",
            path: PathBuf::from("/data/archive/x.md"),
            source: full(),
        };
        let error = Error::from(engine);
        assert_eq!(
            (error.category, error.kind),
            (Category::Storage(StorageFault::Full), "STORAGE_FULL")
        );
        assert!(error.message.starts_with("storage full: the archive"), "{error}");
        assert!(!error.message.contains("/data"), "no server path reaches a client: {error}");
        let read_only = std::io::Error::from_raw_os_error(libc::EROFS);
        let error = Error::from_storage_io(&read_only, "the archive").expect("storage");
        assert_eq!(error.kind, "STORAGE_READ_ONLY");
        assert!(error.message.starts_with("storage read-only: the archive"), "{error}");
        let quota = std::io::Error::from_raw_os_error(libc::EDQUOT);
        assert_eq!(Error::from_storage_io(&quota, "x").map(|e| e.kind), Some("STORAGE_FULL"));
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(Error::from_storage_io(&denied, "x"), None);
    }
}
