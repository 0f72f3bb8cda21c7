//! One image stored in the project archive: read (bounded), decoded (its dimensions checked
//! first), encoded to WebP, and written content-addressed with its manifest and audit line.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits};
use mailroom_git::write_atomically;
use serde_json::{Value, json};

use super::{
    AttachmentError, AttachmentSettings, EmbedPolicy, MAX_PIXELS, MAX_SOURCE_BYTES, MAX_WEBP_SIDE,
    Origin, Outcome, Refusal, paths,
};
use crate::archive::python_json::{python_json, python_json_line};
use crate::model::sha1::sha1_hex;

/// The reference encodes with Pillow at quality 80, method 6 (slowest, smallest).
const WEBP_QUALITY: f32 = 80.0;
const WEBP_METHOD: i32 = 6;

// ---------------------------------------------------------------------------------------
// The project archive
// ---------------------------------------------------------------------------------------

pub(super) struct Archive<'a> {
    repo_root: &'a Path,
    slug: &'a str,
    /// The project directory with symlinks resolved; None when it does not exist yet.
    canonical_root: Option<PathBuf>,
    pub(super) settings: &'a AttachmentSettings,
    now_iso: &'a str,
}

/// A stored image, ready to be embedded.
pub(super) struct StoredImage {
    sha1: String,
    webp_path: String,
    webp: Vec<u8>,
    width: u32,
    height: u32,
    original_path: Option<String>,
}

/// How one image appears in the message.
pub(super) struct Embedded {
    pub(super) metadata: Value,
    /// What replaces the path in the body: a data URI or the repo-relative WebP path.
    pub(super) reference: String,
}

impl<'a> Archive<'a> {
    pub(super) fn new(
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

    pub(super) fn resolve(&self, raw: &str) -> Result<PathBuf, Refusal> {
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
    pub(super) fn store_image(
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
    pub(super) fn embed(&self, policy: EmbedPolicy, inline_max_bytes: usize) -> Embedded {
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
pub(super) fn read_bounded(
    path: &Path,
    limit: u64,
    origin: &Origin,
) -> Result<Vec<u8>, AttachmentError> {
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
pub(super) fn decode_image(
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

pub(super) fn check_dimensions(
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

pub(super) fn is_webp(bytes: &[u8]) -> bool {
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
