//! Image attachments of messages (storage spec §6, layout §2).
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
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits};
use mailroom_git::write_atomically;
use serde_json::{Value, json};

use super::python_json::{python_json, python_json_line};
use crate::model::digest::sha1_hex;

/// Largest source file read, in bytes (64 MiB). Reading is bounded before decoding so a
/// huge or endlessly growing file cannot exhaust memory.
pub const MAX_SOURCE_BYTES: u64 = 64 * 1024 * 1024;

/// Largest image accepted, in pixels (50 megapixels, about 200 MB as RGBA). Checked from the
/// header before any pixel is decoded, so a tiny "decompression bomb" file is refused cheaply.
pub const MAX_PIXELS: u64 = 50_000_000;

/// Largest side WebP can encode; checked up front so the error is clear, not libwebp's.
pub const MAX_WEBP_SIDE: u32 = 16_383;

/// The reference encodes with Pillow at quality 80, method 6 (slowest, smallest).
const WEBP_QUALITY: f32 = 80.0;
const WEBP_METHOD: i32 = 6;

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
// Markdown references
// ---------------------------------------------------------------------------------------

/// Byte ranges of the text between the parentheses of every `![alt](...)` in `body`.
///
/// This mirrors the reference's regex `!\[[^\]]*\]\([^)]+\)` exactly (so an alt text may
/// span lines and the target ends at the first `)`): matching the same references keeps
/// bodies rewritten identically by both servers.
fn find_image_refs(body: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = body[from..].find("![") {
        let start = from + offset;
        match match_image_ref(body.as_bytes(), start) {
            Some(inner) => {
                from = inner.end + 1;
                found.push(inner);
            }
            None => from = start + 1,
        }
    }
    found
}

/// Matches one reference whose `![` is at `start`; every delimiter is ASCII, so the
/// returned byte offsets are always char boundaries.
fn match_image_ref(bytes: &[u8], start: usize) -> Option<Range<usize>> {
    let alt_start = start + 2;
    let alt_end = alt_start + bytes[alt_start..].iter().position(|&b| b == b']')?;
    if bytes.get(alt_end + 1) != Some(&b'(') {
        return None;
    }
    let inner_start = alt_end + 2;
    let inner_end = inner_start + bytes[inner_start..].iter().position(|&b| b == b')')?;
    (inner_end > inner_start).then_some(inner_start..inner_end)
}

/// The parts of a reference's parenthesised text; `leading + target + rest` is the whole.
#[derive(Debug, PartialEq, Eq)]
struct RefParts<'a> {
    leading: &'a str,
    target: &'a str,
    rest: &'a str,
}

/// Splits `  path "title"  ` into its surrounding whitespace, the target and an optional
/// CommonMark title (`"..."` or `'...'` after whitespace). The reference has no notion of
/// titles, so it never converts a titled reference; splitting the title off lets those
/// images be converted too, and the title is kept verbatim. A target containing spaces but
/// no title is taken whole, because file names may contain spaces.
fn split_ref(inner: &str) -> RefParts<'_> {
    let core = inner.trim_start();
    let leading = &inner[..inner.len() - core.len()];
    let trimmed = core.trim_end();
    let target_len = title_start(trimmed)
        .map(|start| trimmed[..start].trim_end().len())
        .unwrap_or(trimmed.len());
    RefParts { leading, target: &core[..target_len], rest: &core[target_len..] }
}

/// Byte offset of a title's opening quote in `text` (which has no surrounding whitespace).
fn title_start(text: &str) -> Option<usize> {
    let quote = text.chars().last().filter(|c| *c == '"' || *c == '\'')?;
    let closing = text.len() - quote.len_utf8();
    text.char_indices().map(|(index, _)| index).find(|&index| {
        index < closing
            && text[index..].starts_with(quote)
            && text[..index].ends_with(char::is_whitespace)
            && !text[..index].trim().is_empty()
    })
}

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
/// refused or missing (the spec leaves those in the body rather than failing the send).
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

// ---------------------------------------------------------------------------------------
// The project archive
// ---------------------------------------------------------------------------------------

struct Archive<'a> {
    repo_root: &'a Path,
    slug: &'a str,
    /// The project directory with symlinks resolved; None when it does not exist yet.
    canonical_root: Option<PathBuf>,
    settings: &'a AttachmentSettings,
    now_iso: &'a str,
}

/// A stored image, ready to be embedded.
struct StoredImage {
    sha1: String,
    webp_path: String,
    webp: Vec<u8>,
    width: u32,
    height: u32,
    original_path: Option<String>,
}

/// How one image appears in the message.
struct Embedded {
    metadata: Value,
    /// What replaces the path in the body: a data URI or the repo-relative WebP path.
    reference: String,
}

impl<'a> Archive<'a> {
    fn new(
        repo_root: &'a Path,
        slug: &'a str,
        settings: &'a AttachmentSettings,
        now_iso: &'a str,
    ) -> Result<Self, AttachmentError> {
        let is_component =
            !slug.is_empty() && slug != "." && slug != ".." && !slug.contains(['/', '\\', '\0']);
        if !is_component {
            return Err(AttachmentError::InvalidSlug { slug: slug.to_owned() });
        }
        let root = repo_root.join("projects").join(slug);
        let canonical_root = fs::canonicalize(root).ok();
        Ok(Archive { repo_root, slug, canonical_root, settings, now_iso })
    }

    fn resolve(&self, raw: &str) -> Result<PathBuf, Refusal> {
        paths::resolve(raw, self.canonical_root.as_deref(), self.settings.allow_absolute_paths)
    }

    /// `projects/<slug>/<path>`, always with `/` because it is a Git path.
    fn repo_path(&self, project_relative: &str) -> String {
        format!("projects/{}/{}", self.slug, project_relative)
    }

    fn absolute(&self, repo_relative: &str) -> PathBuf {
        self.repo_root.join(repo_relative)
    }

    /// Reads, decodes, and stores one image with its manifest and audit line.
    fn store_image(
        &self,
        source: &Path,
        origin: &Origin,
        outcome: &mut Outcome,
    ) -> Result<StoredImage, AttachmentError> {
        let original = read_bounded(source, MAX_SOURCE_BYTES, origin)?;
        let image = decode_image(&original, MAX_PIXELS, origin)?;
        let sha1 = sha1_hex(&original);
        let extension = source_extension(source);
        let webp_path = self.repo_path(&format!("attachments/{}/{sha1}.webp", &sha1[..2]));
        let webp = self.ensure_webp(&webp_path, &image, origin)?;
        outcome.stage(&webp_path);
        let original_path = if self.settings.keep_original {
            Some(self.ensure_original(&sha1, &extension, &original, outcome)?)
        } else {
            None
        };
        let stored = StoredImage {
            sha1,
            webp_path,
            webp,
            width: image.width(),
            height: image.height(),
            original_path,
        };
        self.write_manifest(&stored, original.len(), &extension, outcome)?;
        self.append_audit(&stored, original.len(), &extension, outcome)?;
        Ok(stored)
    }

    /// Returns the stored WebP, encoding it only when absent (or not a WebP, which can only
    /// be damage from outside): same original bytes, same file, so it is never rewritten.
    fn ensure_webp(
        &self,
        webp_path: &str,
        image: &DynamicImage,
        origin: &Origin,
    ) -> Result<Vec<u8>, AttachmentError> {
        let target = self.absolute(webp_path);
        match fs::read(&target) {
            Ok(existing) if is_webp(&existing) => return Ok(existing),
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(write_error(webp_path, source)),
        }
        let encoded = encode_webp(image).map_err(|detail| AttachmentError::Encode {
            field: origin.field.clone(),
            path: origin.path.clone(),
            detail,
        })?;
        write_atomically(&target, &encoded).map_err(|source| write_error(webp_path, source))?;
        Ok(encoded)
    }

    fn ensure_original(
        &self,
        sha1: &str,
        extension: &str,
        original: &[u8],
        outcome: &mut Outcome,
    ) -> Result<String, AttachmentError> {
        let suffix = extension.strip_prefix('.').filter(|ext| !ext.is_empty()).unwrap_or("bin");
        let path = self.repo_path(&format!("attachments/originals/{}/{sha1}.{suffix}", &sha1[..2]));
        let target = self.absolute(&path);
        if fs::symlink_metadata(&target).is_err() {
            write_atomically(&target, original).map_err(|source| write_error(&path, source))?;
            outcome.stage(&path);
        }
        Ok(path)
    }

    /// Rewrites the manifest only when its content would change (say, an original is now
    /// kept), so repeated stores leave the file and the Git history untouched.
    fn write_manifest(
        &self,
        stored: &StoredImage,
        bytes_original: usize,
        extension: &str,
        outcome: &mut Outcome,
    ) -> Result<(), AttachmentError> {
        let manifest = json!({
            "sha1": stored.sha1,
            "webp_path": stored.webp_path,
            "bytes_webp": stored.webp.len(),
            "width": stored.width,
            "height": stored.height,
            "original_path": stored.original_path,
            "bytes_original": bytes_original,
            "original_ext": extension,
        });
        let text = format!("{}\n", python_json(&manifest));
        let path = self.repo_path(&format!("attachments/_manifests/{}.json", stored.sha1));
        let target = self.absolute(&path);
        if fs::read(&target).is_ok_and(|existing| existing == text.as_bytes()) {
            return Ok(());
        }
        write_atomically(&target, text.as_bytes()).map_err(|source| write_error(&path, source))?;
        outcome.stage(&path);
        Ok(())
    }

    /// Appends one JSON line per store, even a repeated one: the log records every time an
    /// image was attached, not just the first.
    fn append_audit(
        &self,
        stored: &StoredImage,
        bytes_original: usize,
        extension: &str,
        outcome: &mut Outcome,
    ) -> Result<(), AttachmentError> {
        let event = json!({
            "event": "stored",
            "ts": self.now_iso,
            "webp_path": stored.webp_path,
            "bytes_webp": stored.webp.len(),
            "original_path": stored.original_path,
            "bytes_original": bytes_original,
            "ext": extension,
        });
        let line = format!("{}\n", python_json_line(&event));
        let path = self.repo_path(&format!("attachments/_audit/{}.log", stored.sha1));
        append_line(&self.absolute(&path), &line).map_err(|source| write_error(&path, source))?;
        outcome.stage(&path);
        Ok(())
    }
}

impl StoredImage {
    fn embed(&self, policy: EmbedPolicy, inline_max_bytes: usize) -> Embedded {
        if policy.embeds_inline(self.webp.len(), inline_max_bytes) {
            let encoded = BASE64.encode(&self.webp);
            Embedded {
                reference: format!("data:image/webp;base64,{encoded}"),
                metadata: json!({
                    "type": "inline", "media_type": "image/webp", "bytes": self.webp.len(),
                    "width": self.width, "height": self.height, "sha1": self.sha1,
                    "data_base64": encoded,
                }),
            }
        } else {
            let mut metadata = json!({
                "type": "file", "media_type": "image/webp", "bytes": self.webp.len(),
                "path": self.webp_path, "width": self.width, "height": self.height,
                "sha1": self.sha1,
            });
            if let (Some(original), Some(map)) = (&self.original_path, metadata.as_object_mut()) {
                map.insert("original_path".to_owned(), json!(original));
            }
            Embedded { reference: self.webp_path.clone(), metadata }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reading, decoding, encoding
// ---------------------------------------------------------------------------------------

/// Reads at most `limit` bytes; the size is checked on the open handle and again while
/// reading, so a file that grows meanwhile is still caught.
fn read_bounded(path: &Path, limit: u64, origin: &Origin) -> Result<Vec<u8>, AttachmentError> {
    let read_error = |source| AttachmentError::Read {
        field: origin.field.clone(),
        path: origin.path.clone(),
        source,
    };
    let too_large = || AttachmentError::TooManyBytes {
        field: origin.field.clone(),
        path: origin.path.clone(),
        limit,
    };
    let file = File::open(path).map_err(read_error)?;
    let declared = file.metadata().map_err(read_error)?.len();
    if declared > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Decodes an image after checking its header dimensions against the limits, sniffing the
/// format from the bytes (as Pillow does) rather than trusting the file name.
fn decode_image(
    bytes: &[u8],
    max_pixels: u64,
    origin: &Origin,
) -> Result<DynamicImage, AttachmentError> {
    let not_an_image = |detail: String| AttachmentError::NotAnImage {
        field: origin.field.clone(),
        path: origin.path.clone(),
        detail,
    };
    let mut reader = ImageReader::new(io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|error| not_an_image(error.to_string()))?;
    if reader.format().is_none() {
        return Err(not_an_image("unrecognised format".to_owned()));
    }
    reader.limits(Limits::default());
    let decoder = reader.into_decoder().map_err(|error| not_an_image(error.to_string()))?;
    let (width, height) = decoder.dimensions();
    check_dimensions(width, height, max_pixels, origin)?;
    DynamicImage::from_decoder(decoder).map_err(|error| not_an_image(error.to_string()))
}

fn check_dimensions(
    width: u32,
    height: u32,
    max_pixels: u64,
    origin: &Origin,
) -> Result<(), AttachmentError> {
    let (field, path) = (origin.field.clone(), origin.path.clone());
    if width == 0 || height == 0 {
        let detail = format!("image is {width}x{height}");
        return Err(AttachmentError::NotAnImage { field, path, detail });
    }
    if u64::from(width) * u64::from(height) > max_pixels {
        return Err(AttachmentError::TooManyPixels {
            field,
            path,
            width,
            height,
            limit: max_pixels,
        });
    }
    if width > MAX_WEBP_SIDE || height > MAX_WEBP_SIDE {
        return Err(AttachmentError::TooWide { field, path, width, height, limit: MAX_WEBP_SIDE });
    }
    Ok(())
}

/// Lossy WebP at the reference's settings. Alpha is kept only when the source has it (the
/// reference converts to RGBA for LA/RGBA and to RGB otherwise).
fn encode_webp(image: &DynamicImage) -> Result<Vec<u8>, String> {
    let mut config =
        webp::WebPConfig::new().map_err(|()| "libwebp rejected its default config".to_owned())?;
    config.lossless = 0;
    config.quality = WEBP_QUALITY;
    config.method = WEBP_METHOD;
    config.alpha_compression = 1;
    let (width, height) = (image.width(), image.height());
    let encoded = if image.color().has_alpha() {
        let pixels = image.to_rgba8();
        webp::Encoder::from_rgba(pixels.as_raw(), width, height).encode_advanced(&config)
    } else {
        let pixels = image.to_rgb8();
        webp::Encoder::from_rgb(pixels.as_raw(), width, height).encode_advanced(&config)
    };
    encoded.map(|memory| memory.to_vec()).map_err(|error| format!("{error:?}"))
}

fn is_webp(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP"
}

/// The source's extension as the reference records it: lowercased, with its dot, or "".
fn source_extension(path: &Path) -> String {
    match path.extension().and_then(|ext| ext.to_str()) {
        Some(ext) if !ext.is_empty() => format!(".{}", ext.to_lowercase()),
        _ => String::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

fn write_error(repo_relative: &str, source: io::Error) -> AttachmentError {
    AttachmentError::Write { path: repo_relative.to_owned(), source }
}

/// One `write` on an O_APPEND handle, so concurrent appenders do not interleave a line.
fn append_line(path: &Path, line: &str) -> io::Result<()> {
    if let Some(directory) = path.parent() {
        fs::create_dir_all(directory)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(line.as_bytes())
}

mod paths;
#[cfg(test)]
mod tests;
