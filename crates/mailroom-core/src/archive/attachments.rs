//! Image attachments of messages (docs/compat/archive.md §7; their place in the layout: §2).
//!
//! Agents refer to images by path, either inside the body (`![alt](path)`) or in
//! `attachment_paths`. Those paths name files on the server's disk, which recipients cannot
//! see and which may change or vanish, so every image is re-encoded as WebP and stored
//! content-addressed (by the SHA-1 of the original bytes) in the project's Git archive:
//!
//! ```text
//! projects/<slug>/attachments/<sha1[:2]>/<sha1>.webp
//! projects/<slug>/attachments/originals/<sha1[:2]>/<sha1>.<ext>   only when keep_original
//! projects/<slug>/attachments/_manifests/<sha1>.json
//! projects/<slug>/attachments/_audit/<sha1>.log                    JSON lines
//! ```
//!
//! Small images are embedded in the message as `data:` URIs so a reader needs nothing else;
//! large ones are referenced by their archive path. Content addressing makes storing the
//! same image twice free and keeps the archive deduplicated across messages.
//!
//! Paths come from agents, so they are treated as hostile: relative paths must stay inside
//! the project archive even after symlinks are resolved, and a refused path is never opened.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::image_store::Archive;
use self::markdown::{find_image_refs, split_ref};

/// Largest source file read, in bytes (64 MiB). Reading is bounded before decoding so a
/// huge or endlessly growing file cannot exhaust memory.
pub const MAX_SOURCE_BYTES: u64 = 64 * 1024 * 1024;

/// Largest image accepted, in pixels (50 megapixels, about 200 MB as RGBA). Checked from the
/// header before any pixel is decoded, so a tiny "decompression bomb" file is refused cheaply.
pub const MAX_PIXELS: u64 = 50_000_000;

/// Largest side WebP can encode; checked up front so the error is clear, not libwebp's.
pub const MAX_WEBP_SIDE: u32 = 16_383;

/// How a converted image is embedded in the message: the sender's `attachments_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmbedPolicy {
    /// Inline when the WebP is at most `inline_max_bytes`, else a file reference.
    #[default]
    Auto,
    /// Always a `data:` URI; also forces conversion on.
    Inline,
    /// Always an archive path; also forces conversion on.
    File,
}

impl EmbedPolicy {
    /// Parses an agent's stored `attachments_policy`. Like the reference, only the exact
    /// words `inline` and `file` mean something; anything else (including `auto`) is Auto.
    pub fn from_agent_policy(value: &str) -> Self {
        match value {
            "inline" => EmbedPolicy::Inline,
            "file" => EmbedPolicy::File,
            _ => EmbedPolicy::Auto,
        }
    }

    /// An explicit policy means the sender wants images archived whatever CONVERT_IMAGES says.
    fn forces_conversion(self) -> bool {
        self != EmbedPolicy::Auto
    }

    fn embeds_inline(self, webp_bytes: usize, inline_max_bytes: usize) -> bool {
        match self {
            EmbedPolicy::Inline => true,
            EmbedPolicy::File => false,
            EmbedPolicy::Auto => webp_bytes <= inline_max_bytes,
        }
    }
}

/// Server-wide attachment settings (the reference's environment variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentSettings {
    /// `CONVERT_IMAGES` (default true); the per-call `convert_images` argument overrides it.
    pub convert_images: bool,
    /// `INLINE_IMAGE_MAX_BYTES` (default 65536): the Auto policy's inline threshold.
    pub inline_max_bytes: usize,
    /// `ALLOW_ABSOLUTE_ATTACHMENT_PATHS` (default false).
    pub allow_absolute_paths: bool,
    /// `KEEP_ORIGINAL_IMAGES` (default false): also archive the original bytes.
    pub keep_original: bool,
}

impl Default for AttachmentSettings {
    fn default() -> Self {
        AttachmentSettings {
            convert_images: true,
            inline_max_bytes: 65_536,
            allow_absolute_paths: false,
            keep_original: false,
        }
    }
}

/// The result of [`process`]: what to store with the message and what to commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessedBody {
    /// The body with converted image references rewritten.
    pub body_md: String,
    /// The `attachments` metadata list stored with the message.
    pub attachments: Vec<Value>,
    /// Repo-relative paths for the caller to stage and commit, without duplicates: every
    /// file this call created or changed, plus every WebP the message refers to even when it
    /// already existed, so a WebP left uncommitted by an earlier crash is picked up.
    pub commit_paths: Vec<String>,
}

/// Why a path was refused. Every refusal is decided before the file is opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("path is empty")]
    Empty,
    #[error("path contains a NUL byte")]
    NulByte,
    #[error("home-relative paths (~) are not allowed")]
    HomeRelative,
    #[error("absolute paths are disabled (ALLOW_ABSOLUTE_ATTACHMENT_PATHS is off)")]
    AbsoluteDisabled,
    #[error("Windows-style absolute paths are not supported")]
    ForeignAbsolute,
    #[error("path contains a '..' segment")]
    ParentSegment,
    #[error("path escapes the project archive")]
    Escapes,
    #[error("file does not exist")]
    Missing,
    #[error("not a regular file")]
    NotAFile,
    #[error("the project archive directory does not exist")]
    NoProjectArchive,
    #[error("cannot resolve path: {0}")]
    Unresolvable(String),
}

/// Errors of [`process`]. `field` is `body_md` or `attachment_paths[i]`; `path` is the
/// reference exactly as the agent wrote it (never the resolved server path).
#[derive(Debug, thiserror::Error)]
pub enum AttachmentError {
    #[error("project_slug {slug:?}: must be one non-empty path component")]
    InvalidSlug { slug: String },
    #[error("{field} {path:?}: {refusal}")]
    Refused { field: String, path: String, refusal: Refusal },
    #[error("{field} {path:?}: cannot read: {source}")]
    Read {
        field: String,
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{field} {path:?}: file is larger than the {limit}-byte attachment limit")]
    TooManyBytes { field: String, path: String, limit: u64 },
    #[error("{field} {path:?}: image is {width}x{height}, above the limit of {limit} pixels")]
    TooManyPixels { field: String, path: String, width: u32, height: u32, limit: u64 },
    #[error("{field} {path:?}: image is {width}x{height}; WebP allows at most {limit} per side")]
    TooWide { field: String, path: String, width: u32, height: u32, limit: u32 },
    #[error("{field} {path:?}: not a supported image ({detail})")]
    NotAnImage { field: String, path: String, detail: String },
    #[error("{field} {path:?}: WebP encoding failed: {detail}")]
    Encode { field: String, path: String, detail: String },
    #[error("cannot write archive file {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl AttachmentError {
    /// True when the agent's input is at fault (an invalid argument), false for server-side
    /// I/O failures; this is how the core error maps it.
    pub fn is_invalid_argument(&self) -> bool {
        !matches!(self, AttachmentError::Read { .. } | AttachmentError::Write { .. })
    }

    /// The system's error when an archive file could not be written.
    pub fn write_error(&self) -> Option<&io::Error> {
        match self {
            AttachmentError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Converts the images a message refers to and stores them in the project archive.
///
/// `convert_images` is the effective flag (the call's argument, else CONVERT_IMAGES); an
/// Inline or File `policy` turns conversion on regardless. Conversion only governs body
/// references: `data:` URIs in the body are always recorded, and `attachment_paths` are
/// always stored, as the reference does, because listing a path is an explicit request.
/// Body references that are refused or missing stay as written; `attachment_paths` that
/// are refused fail the call before anything is written.
#[allow(clippy::too_many_arguments)] // The signature is the storage contract, one arg per input.
pub fn process(
    repo_root: &Path,
    project_slug: &str,
    body_md: &str,
    attachment_paths: &[String],
    policy: EmbedPolicy,
    convert_images: bool,
    settings: &AttachmentSettings,
    now_iso: &str,
) -> Result<ProcessedBody, AttachmentError> {
    let archive = Archive::new(repo_root, project_slug, settings, now_iso)?;
    let sources = resolve_attachment_paths(&archive, attachment_paths)?;
    let mut outcome = Outcome::default();
    let body = if convert_images || policy.forces_conversion() {
        convert_body(&archive, body_md, policy, &mut outcome)?
    } else {
        record_data_uris(body_md, &mut outcome);
        body_md.to_owned()
    };
    for (origin, source) in &sources {
        let stored = archive.store_image(source, origin, &mut outcome)?;
        outcome.attachments.push(stored.embed(policy, settings.inline_max_bytes).metadata);
    }
    if outcome.attachments.is_empty() && body.contains("data:image") {
        outcome.attachments.push(json!({"type": "inline", "media_type": "image/webp"}));
    }
    Ok(ProcessedBody {
        body_md: body,
        attachments: outcome.attachments,
        commit_paths: outcome.commit_paths,
    })
}

/// Resolves every entry up front, so one bad path fails the call before any image is written.
fn resolve_attachment_paths(
    archive: &Archive<'_>,
    attachment_paths: &[String],
) -> Result<Vec<(Origin, PathBuf)>, AttachmentError> {
    let mut sources = Vec::with_capacity(attachment_paths.len());
    for (index, raw) in attachment_paths.iter().enumerate() {
        let origin = Origin { field: format!("attachment_paths[{index}]"), path: raw.clone() };
        match archive.resolve(raw) {
            Ok(source) => sources.push((origin, source)),
            Err(refusal) => return Err(origin.refused(refusal)),
        }
    }
    Ok(sources)
}

/// What has been collected so far, in message order.
#[derive(Debug, Default)]
struct Outcome {
    attachments: Vec<Value>,
    commit_paths: Vec<String>,
}

impl Outcome {
    fn stage(&mut self, repo_relative: &str) {
        if !self.commit_paths.iter().any(|staged| staged == repo_relative) {
            self.commit_paths.push(repo_relative.to_owned());
        }
    }
}

/// Where a reference came from, for error messages.
#[derive(Debug, Clone)]
struct Origin {
    field: String,
    path: String,
}

impl Origin {
    fn refused(&self, refusal: Refusal) -> AttachmentError {
        AttachmentError::Refused { field: self.field.clone(), path: self.path.clone(), refusal }
    }
}

// ---------------------------------------------------------------------------------------
// Body references
// ---------------------------------------------------------------------------------------

/// Metadata for a `data:` URI kept as written: its media type, defaulting to WebP.
fn data_uri_metadata(uri: &str) -> Value {
    let header = uri.split(',').next().unwrap_or_default();
    let header = header.strip_prefix("data:").unwrap_or(header);
    let media_type = header.split(';').next().unwrap_or_default().trim();
    let media_type = if media_type.is_empty() { "image/webp" } else { media_type };
    json!({"type": "inline", "media_type": media_type})
}

/// With conversion off the body is left alone but inline images are still recorded, so a
/// reader of the metadata knows the message carries images.
fn record_data_uris(body: &str, outcome: &mut Outcome) {
    for inner in find_image_refs(body) {
        let parts = split_ref(&body[inner]);
        if parts.target.starts_with("data:") {
            outcome.attachments.push(data_uri_metadata(parts.target));
        }
    }
}

fn convert_body(
    archive: &Archive<'_>,
    body: &str,
    policy: EmbedPolicy,
    outcome: &mut Outcome,
) -> Result<String, AttachmentError> {
    let mut converted = String::with_capacity(body.len());
    let mut copied_up_to = 0;
    for inner in find_image_refs(body) {
        converted.push_str(&body[copied_up_to..inner.start]);
        converted.push_str(&convert_ref(archive, &body[inner.clone()], policy, outcome)?);
        copied_up_to = inner.end;
    }
    converted.push_str(&body[copied_up_to..]);
    Ok(converted)
}

/// Converts one reference, or returns it unchanged when it is a data URI or a path that is
/// refused or missing (the reference leaves those in the body rather than failing the send:
/// docs/compat/archive.md §7).
fn convert_ref<'a>(
    archive: &Archive<'_>,
    inner: &'a str,
    policy: EmbedPolicy,
    outcome: &mut Outcome,
) -> Result<Cow<'a, str>, AttachmentError> {
    let parts = split_ref(inner);
    if parts.target.starts_with("data:") {
        outcome.attachments.push(data_uri_metadata(parts.target));
        return Ok(Cow::Borrowed(inner));
    }
    let Ok(source) = archive.resolve(parts.target) else {
        return Ok(Cow::Borrowed(inner));
    };
    let origin = Origin { field: "body_md".to_owned(), path: parts.target.to_owned() };
    let stored = archive.store_image(&source, &origin, outcome)?;
    let embedded = stored.embed(policy, archive.settings.inline_max_bytes);
    outcome.attachments.push(embedded.metadata);
    Ok(Cow::Owned(format!("{}{}{}", parts.leading, embedded.reference, parts.rest)))
}

mod image_store;
mod markdown;
mod paths;
#[cfg(test)]
mod tests;
