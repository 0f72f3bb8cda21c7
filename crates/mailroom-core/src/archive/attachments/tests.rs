use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

use super::image_store::{check_dimensions, decode_image, is_webp, read_bounded};
use super::markdown::{RefParts, find_image_refs, split_ref};
use super::*;

const NOW: &str = "2026-01-02T03:04:05.000000+00:00";
const SLUG: &str = "proj";

/// A repo root with `projects/proj/` and a sibling `outside/` directory.
struct Fixture {
    dir: tempfile::TempDir,
    repo_root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("test fixture");
        let repo_root = dir.path().join("repo");
        fs::create_dir_all(repo_root.join("projects").join(SLUG)).expect("test fixture");
        fs::create_dir_all(dir.path().join("outside")).expect("test fixture");
        Fixture { dir, repo_root }
    }

    fn project(&self) -> PathBuf {
        self.repo_root.join("projects").join(SLUG)
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    /// Encodes `image` into `dir/relative` and returns the file's bytes.
    fn write_image(&self, dir: &Path, relative: &str, image: &DynamicImage) -> Vec<u8> {
        let path = dir.join(relative);
        fs::create_dir_all(path.parent().expect("test fixture")).expect("test fixture");
        let format = ImageFormat::from_path(&path).expect("test fixture");
        image.save_with_format(&path, format).expect("test fixture");
        fs::read(path).expect("test fixture")
    }

    fn run(
        &self,
        body: &str,
        paths: &[&str],
        policy: EmbedPolicy,
        convert: bool,
    ) -> Result<ProcessedBody, AttachmentError> {
        self.run_with(&AttachmentSettings::default(), body, paths, policy, convert)
    }

    fn run_with(
        &self,
        settings: &AttachmentSettings,
        body: &str,
        paths: &[&str],
        policy: EmbedPolicy,
        convert: bool,
    ) -> Result<ProcessedBody, AttachmentError> {
        let paths: Vec<String> = paths.iter().map(|path| path.to_string()).collect();
        process(&self.repo_root, SLUG, body, &paths, policy, convert, settings, NOW)
    }

    fn read(&self, repo_relative: &str) -> Vec<u8> {
        fs::read(self.repo_root.join(repo_relative)).expect("test fixture")
    }
}

fn small_image() -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(8, 8, |x, y| Rgb([x as u8 * 30, y as u8 * 30, 90])))
}

/// Pseudo-random pixels, which WebP cannot compress below the inline threshold.
fn noisy_image(width: u32, height: u32) -> DynamicImage {
    let mut state: u32 = 0x1234_5678;
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |_, _| {
        let mut channel = || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        };
        Rgb([channel(), channel(), channel()])
    }))
}

fn sha1_hex(bytes: &[u8]) -> String {
    crate::model::sha1::sha1_hex(bytes)
}

fn webp_path(sha1: &str) -> String {
    format!("projects/{SLUG}/attachments/{}/{sha1}.webp", &sha1[..2])
}

fn manifest_path(sha1: &str) -> String {
    format!("projects/{SLUG}/attachments/_manifests/{sha1}.json")
}

fn audit_path(sha1: &str) -> String {
    format!("projects/{SLUG}/attachments/_audit/{sha1}.log")
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("test fixture");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `work` on a thread and fails (instead of hanging) if it blocks, which is what
/// opening a FIFO with no writer does.
fn within_seconds<T: Send + 'static>(seconds: u64, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || sender.send(work()));
    receiver.recv_timeout(Duration::from_secs(seconds)).expect("blocked: a refused file was opened")
}

#[test]
fn small_png_is_inlined_as_a_webp_data_uri() {
    let fixture = Fixture::new();
    let original = fixture.write_image(&fixture.project(), "img/small.png", &small_image());
    let sha1 = sha1_hex(&original);

    let out = fixture
        .run("see ![s](img/small.png) ok", &[], EmbedPolicy::Auto, true)
        .expect("test fixture");

    assert_eq!(out.attachments.len(), 1);
    let meta = &out.attachments[0];
    let encoded = meta["data_base64"].as_str().expect("test fixture");
    let webp = BASE64.decode(encoded).expect("test fixture");
    assert_eq!(&webp[..4], b"RIFF");
    assert_eq!(&webp[8..12], b"WEBP");
    let expected = json!({
        "type": "inline", "media_type": "image/webp", "bytes": webp.len(), "width": 8,
        "height": 8, "sha1": sha1, "data_base64": encoded,
    });
    assert_eq!(meta, &expected);
    assert_eq!(out.body_md, format!("see ![s](data:image/webp;base64,{encoded}) ok"));
    assert_eq!(fixture.read(&webp_path(&sha1)), webp);
    assert_eq!(out.commit_paths, [webp_path(&sha1), manifest_path(&sha1), audit_path(&sha1)]);
}

#[test]
fn large_noisy_image_is_stored_as_a_file_with_manifest_and_audit() {
    let fixture = Fixture::new();
    let original = fixture.write_image(&fixture.project(), "big.png", &noisy_image(512, 512));
    let sha1 = sha1_hex(&original);

    let out = fixture.run("![b](big.png)", &[], EmbedPolicy::Auto, true).expect("test fixture");

    let webp = fixture.read(&webp_path(&sha1));
    assert!(is_webp(&webp));
    assert!(webp.len() > 65_536, "noise should not fit inline, got {} bytes", webp.len());
    let expected = json!({
        "type": "file", "media_type": "image/webp", "bytes": webp.len(),
        "path": webp_path(&sha1), "width": 512, "height": 512, "sha1": sha1,
    });
    assert_eq!(out.attachments, [expected]);
    assert_eq!(out.body_md, format!("![b]({})", webp_path(&sha1)));

    let manifest_text =
        String::from_utf8(fixture.read(&manifest_path(&sha1))).expect("test fixture");
    assert!(manifest_text.starts_with("{\n  \"bytes_original\": "), "{manifest_text}");
    assert!(manifest_text.ends_with("}\n"));
    let manifest: Value = serde_json::from_str(&manifest_text).expect("test fixture");
    let expected_manifest = json!({
        "sha1": sha1, "webp_path": webp_path(&sha1), "bytes_webp": webp.len(), "width": 512,
        "height": 512, "original_path": null, "bytes_original": original.len(),
        "original_ext": ".png",
    });
    assert_eq!(manifest, expected_manifest);

    let audit = String::from_utf8(fixture.read(&audit_path(&sha1))).expect("test fixture");
    let expected_line = format!(
        "{{\"bytes_original\": {}, \"bytes_webp\": {}, \"event\": \"stored\", \"ext\": \".png\", \
         \"original_path\": null, \"ts\": \"{NOW}\", \"webp_path\": \"{}\"}}\n",
        original.len(),
        webp.len(),
        webp_path(&sha1)
    );
    assert_eq!(audit, expected_line);
}

#[test]
fn explicit_policies_override_the_size_rule_and_force_conversion() {
    let fixture = Fixture::new();
    fixture.write_image(&fixture.project(), "small.png", &small_image());
    fixture.write_image(&fixture.project(), "big.png", &noisy_image(512, 512));

    let filed =
        fixture.run("![s](small.png)", &[], EmbedPolicy::File, false).expect("test fixture");
    assert_eq!(filed.attachments[0]["type"], "file");
    assert!(filed.body_md.starts_with("![s](projects/proj/attachments/"));

    let inlined =
        fixture.run("![b](big.png)", &[], EmbedPolicy::Inline, false).expect("test fixture");
    assert_eq!(inlined.attachments[0]["type"], "inline");
    assert!(inlined.attachments[0]["bytes"].as_u64().expect("test fixture") > 65_536);
    assert!(inlined.body_md.starts_with("![b](data:image/webp;base64,"));
}

#[test]
fn conversion_off_leaves_the_body_alone_but_records_data_uris() {
    let fixture = Fixture::new();
    fixture.write_image(&fixture.project(), "small.png", &small_image());
    let body = "![s](small.png) and ![d](data:image/png;base64,iVBORw0KGgo=)";

    let out = fixture.run(body, &[], EmbedPolicy::Auto, false).expect("test fixture");

    assert_eq!(out.body_md, body);
    assert_eq!(out.attachments, [json!({"type": "inline", "media_type": "image/png"})]);
    assert!(out.commit_paths.is_empty());
    assert!(!fixture.project().join("attachments").exists());
}

#[test]
fn attachment_paths_are_stored_even_with_conversion_off() {
    let fixture = Fixture::new();
    let original = fixture.write_image(&fixture.project(), "small.png", &small_image());

    let out = fixture
        .run("![s](small.png)", &["small.png"], EmbedPolicy::Auto, false)
        .expect("test fixture");

    assert_eq!(out.body_md, "![s](small.png)");
    assert_eq!(out.attachments.len(), 1);
    assert_eq!(out.attachments[0]["sha1"], sha1_hex(&original));
    assert_eq!(out.attachments[0]["type"], "inline");
}

#[test]
fn data_uris_are_kept_and_recorded_when_converting() {
    let fixture = Fixture::new();
    let body = "![x]( data:image/gif;base64,R0lGOD \"t\" ) ![y](data:,hello)";

    let out = fixture.run(body, &[], EmbedPolicy::Auto, true).expect("test fixture");

    assert_eq!(out.body_md, body);
    let expected = [
        json!({"type": "inline", "media_type": "image/gif"}),
        json!({"type": "inline", "media_type": "image/webp"}),
    ];
    assert_eq!(out.attachments, expected);
}

#[test]
fn a_data_image_outside_references_yields_one_generic_entry() {
    let fixture = Fixture::new();
    let body = "<img src=\"data:image/png;base64,AAAA\">";
    for convert in [true, false] {
        let out = fixture.run(body, &[], EmbedPolicy::Auto, convert).expect("test fixture");
        assert_eq!(out.attachments, [json!({"type": "inline", "media_type": "image/webp"})]);
    }
}

#[test]
fn refused_paths_stay_in_the_body_and_fail_attachment_paths_without_being_opened() {
    let fixture = Fixture::new();
    let (project, outside) = (fixture.project(), fixture.outside());
    fixture.write_image(&outside, "secret.png", &small_image());
    fixture.write_image(&project, "img/ok.png", &small_image());
    symlink(outside.join("secret.png"), project.join("escape.png")).expect("test fixture");
    symlink(&outside, project.join("dirlink")).expect("test fixture");
    mkfifo(&outside.join("pipe"));
    symlink(outside.join("pipe"), project.join("pipe.png")).expect("test fixture");
    mkfifo(&project.join("inside_pipe.png"));
    let absolute = outside.join("secret.png").to_string_lossy().into_owned();

    let cases = [
        ("../outside/secret.png", Refusal::ParentSegment),
        ("img/../../outside/secret.png", Refusal::ParentSegment),
        ("..\\outside\\secret.png", Refusal::ParentSegment),
        (absolute.as_str(), Refusal::AbsoluteDisabled),
        ("~/secret.png", Refusal::HomeRelative),
        ("C:\\secret.png", Refusal::ForeignAbsolute),
        ("escape.png", Refusal::Escapes),
        ("dirlink/secret.png", Refusal::Escapes),
        ("pipe.png", Refusal::Escapes),
        ("inside_pipe.png", Refusal::NotAFile),
        ("img", Refusal::NotAFile),
        ("missing.png", Refusal::Missing),
        ("   ", Refusal::Empty),
    ];
    let fixture = std::sync::Arc::new(fixture);
    for (raw, expected) in cases {
        let (fixture, raw_owned) = (fixture.clone(), raw.to_owned());
        let (in_body, in_paths) = within_seconds(30, move || {
            let body = format!("x ![a]({raw_owned}) y");
            let in_body = fixture.run(&body, &[], EmbedPolicy::Auto, true).map(|out| (body, out));
            (in_body, fixture.run("", &[&raw_owned], EmbedPolicy::Auto, true))
        });
        let (body, out) = in_body.expect("test fixture");
        assert_eq!(out.body_md, body, "{raw}");
        assert!(out.attachments.is_empty() && out.commit_paths.is_empty(), "{raw}");
        let error = in_paths.expect_err("must be refused");
        assert!(error.to_string().starts_with(&format!("attachment_paths[0] {raw:?}: ")));
        match error {
            AttachmentError::Refused { field, path, refusal } => {
                assert_eq!(
                    (field.as_str(), path.as_str(), refusal),
                    ("attachment_paths[0]", raw, expected)
                );
            }
            other => panic!("{raw}: expected a refusal, got {other:?}"),
        }
    }
    assert!(!fixture.project().join("attachments").exists());
}

#[test]
fn refusal_message_names_the_field_path_and_reason() {
    let fixture = Fixture::new();
    fixture.write_image(&fixture.project(), "ok.png", &small_image());
    let error = fixture
        .run("", &["ok.png", "../x.png"], EmbedPolicy::Auto, true)
        .expect_err("must be refused");
    assert_eq!(error.to_string(), "attachment_paths[1] \"../x.png\": path contains a '..' segment");
    assert!(error.is_invalid_argument());
}

#[test]
fn absolute_paths_are_stored_when_allowed() {
    let fixture = Fixture::new();
    let original = fixture.write_image(&fixture.outside(), "abs.png", &small_image());
    let absolute = fixture.outside().join("abs.png").to_string_lossy().into_owned();
    let settings =
        AttachmentSettings { allow_absolute_paths: true, ..AttachmentSettings::default() };

    let body = format!("![a]({absolute})");
    let out = fixture
        .run_with(&settings, &body, &[&absolute], EmbedPolicy::File, true)
        .expect("test fixture");

    assert_eq!(out.body_md, format!("![a]({})", webp_path(&sha1_hex(&original))));
    assert_eq!(out.attachments.len(), 2);
    assert_eq!(out.attachments[1]["sha1"], sha1_hex(&original));
}

#[test]
fn a_missing_project_directory_refuses_relative_paths() {
    let fixture = Fixture::new();
    fs::remove_dir_all(fixture.project()).expect("test fixture");
    let out = fixture.run("![a](a.png)", &[], EmbedPolicy::Auto, true).expect("test fixture");
    assert_eq!(out.body_md, "![a](a.png)");
    let error = fixture.run("", &["a.png"], EmbedPolicy::Auto, true).expect_err("must be refused");
    assert!(matches!(error, AttachmentError::Refused { refusal: Refusal::NoProjectArchive, .. }));
}

#[test]
fn non_image_files_are_errors_naming_the_path() {
    let fixture = Fixture::new();
    fs::write(fixture.project().join("notes.png"), "just text").expect("test fixture");

    let error =
        fixture.run("", &["notes.png"], EmbedPolicy::Auto, true).expect_err("must be refused");
    assert!(matches!(error, AttachmentError::NotAnImage { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with("attachment_paths[0] \"notes.png\": not a supported image"));

    let error =
        fixture.run("![n](notes.png)", &[], EmbedPolicy::Auto, true).expect_err("must be refused");
    assert!(error.to_string().starts_with("body_md \"notes.png\": not a supported image"));
    assert!(!fixture.project().join("attachments").exists());
}

#[test]
fn storing_the_same_image_again_keeps_webp_and_manifest_and_appends_audit() {
    let fixture = Fixture::new();
    let original = fixture.write_image(&fixture.project(), "small.png", &small_image());
    let sha1 = sha1_hex(&original);
    let identity = |relative: &str| {
        let metadata = fs::metadata(fixture.repo_root.join(relative)).expect("test fixture");
        (metadata.ino(), metadata.mtime_nsec(), metadata.len())
    };

    let first = fixture.run("", &["small.png"], EmbedPolicy::Auto, true).expect("test fixture");
    let before = (identity(&webp_path(&sha1)), identity(&manifest_path(&sha1)));
    let second = fixture
        .run("![s](small.png)", &["small.png"], EmbedPolicy::Auto, true)
        .expect("test fixture");

    assert_eq!((identity(&webp_path(&sha1)), identity(&manifest_path(&sha1))), before);
    assert_eq!(second.attachments[0], first.attachments[0]);
    assert_eq!(second.attachments[1], first.attachments[0]);
    assert_eq!(second.commit_paths, [webp_path(&sha1), audit_path(&sha1)]);
    let audit = String::from_utf8(fixture.read(&audit_path(&sha1))).expect("test fixture");
    assert_eq!(audit.lines().count(), 3);
}

#[test]
fn kept_originals_are_archived_and_referenced() {
    let fixture = Fixture::new();
    let original = fixture.write_image(&fixture.project(), "photo.JPG", &noisy_image(64, 48));
    let sha1 = sha1_hex(&original);
    let settings = AttachmentSettings { keep_original: true, ..AttachmentSettings::default() };

    let out = fixture
        .run_with(&settings, "", &["photo.JPG"], EmbedPolicy::File, true)
        .expect("test fixture");

    let original_path = format!("projects/{SLUG}/attachments/originals/{}/{sha1}.jpg", &sha1[..2]);
    assert_eq!(out.attachments[0]["original_path"], original_path.as_str());
    assert_eq!(
        (out.attachments[0]["width"].clone(), out.attachments[0]["height"].clone()),
        (json!(64), json!(48))
    );
    assert_eq!(fixture.read(&original_path), original);
    assert!(out.commit_paths.contains(&original_path));
    let manifest: Value =
        serde_json::from_slice(&fixture.read(&manifest_path(&sha1))).expect("test fixture");
    assert_eq!(manifest["original_path"], original_path.as_str());
    assert_eq!(manifest["original_ext"], ".jpg");
}

#[test]
fn whitespace_and_titles_inside_the_parentheses_are_preserved() {
    let fixture = Fixture::new();
    fixture.write_image(&fixture.project(), "small.png", &small_image());
    let big = fixture.write_image(&fixture.project(), "big.png", &noisy_image(512, 512));
    let body = "a ![s](  small.png  ) b ![b]( big.png \"Big one\" ) c";

    let out = fixture.run(body, &[], EmbedPolicy::Auto, true).expect("test fixture");

    let encoded = out.attachments[0]["data_base64"].as_str().expect("test fixture");
    let expected = format!(
        "a ![s](  data:image/webp;base64,{encoded}  ) b ![b]( {} \"Big one\" ) c",
        webp_path(&sha1_hex(&big))
    );
    assert_eq!(out.body_md, expected);
}

#[test]
fn alpha_is_kept_only_when_the_image_has_transparency() {
    let fixture = Fixture::new();
    let translucent = DynamicImage::ImageRgba8(RgbaImage::from_pixel(16, 16, Rgba([9, 9, 9, 100])));
    fixture.write_image(&fixture.project(), "alpha.png", &translucent);
    fixture.write_image(&fixture.project(), "anim.gif", &small_image());
    fixture.write_image(&fixture.project(), "opaque.bmp", &small_image());

    let out = fixture
        .run("", &["alpha.png", "anim.gif", "opaque.bmp"], EmbedPolicy::Inline, true)
        .expect("test fixture");

    let has_alpha_chunk = |meta: &Value| {
        let webp = BASE64
            .decode(meta["data_base64"].as_str().expect("test fixture"))
            .expect("test fixture");
        webp.windows(4).any(|window| window == b"ALPH")
    };
    assert!(has_alpha_chunk(&out.attachments[0]));
    // GIFs decode as RGBA; libwebp drops the alpha channel when every pixel is opaque.
    assert!(!has_alpha_chunk(&out.attachments[1]));
    assert!(!has_alpha_chunk(&out.attachments[2]));
}

#[test]
fn limits_are_enforced_before_decoding() {
    let fixture = Fixture::new();
    let bytes = fixture.write_image(&fixture.project(), "small.png", &small_image());
    let origin = Origin { field: "attachment_paths[0]".to_owned(), path: "small.png".to_owned() };

    let error = decode_image(&bytes, 63, &origin).expect_err("must be refused");
    assert!(matches!(error, AttachmentError::TooManyPixels { width: 8, height: 8, .. }));
    let error = check_dimensions(16_384, 1, MAX_PIXELS, &origin).expect_err("must be refused");
    assert!(matches!(error, AttachmentError::TooWide { .. }));
    let error = read_bounded(&fixture.project().join("small.png"), 10, &origin)
        .expect_err("must be refused");
    assert_eq!(
        error.to_string(),
        "attachment_paths[0] \"small.png\": file is larger than the 10-byte attachment limit"
    );
}

#[test]
fn invalid_slugs_are_rejected() {
    let fixture = Fixture::new();
    for slug in ["", ".", "..", "a/b", "a\\b"] {
        let settings = AttachmentSettings::default();
        let result =
            process(&fixture.repo_root, slug, "", &[], EmbedPolicy::Auto, true, &settings, NOW);
        assert!(matches!(result, Err(AttachmentError::InvalidSlug { .. })), "{slug:?}");
    }
}

#[test]
fn image_references_are_found_like_the_reference_regex() {
    fn check(body: &str, expected: &[&str]) {
        let found: Vec<&str> =
            find_image_refs(body).into_iter().map(|range| &body[range]).collect();
        assert_eq!(found, expected, "{body:?}");
    }
    check("![a](b)", &["b"]);
    check("![a] (b)", &[]);
    check("![a]()", &[]);
    check("![a](b", &[]);
    check("![](x) and ![y]( z )", &["x", " z "]);
    check("![a ![b](c)", &["c"]);
    check("![a\nb](c)", &["c"]);
    check("![a](b(c)d)", &["b(c"]);
    check("!![a](b)", &["b"]);
    check("ünï ![é](ü.png) ![x](y)", &["ü.png", "y"]);
}

#[test]
fn reference_text_splits_into_whitespace_target_and_title() {
    fn check(inner: &str, leading: &str, target: &str, rest: &str) {
        assert_eq!(split_ref(inner), RefParts { leading, target, rest }, "{inner:?}");
    }
    check("p", "", "p", "");
    check("  p  ", "  ", "p", "  ");
    check(" p \"t\" ", " ", "p", " \"t\" ");
    check("p\t'a title'", "", "p", "\t'a title'");
    check("a b.png", "", "a b.png", "");
    check("\"quoted.png\"", "", "\"quoted.png\"", "");
    check("my pic.png \"t\"", "", "my pic.png", " \"t\"");
}

#[test]
fn agent_policies_parse_like_the_reference() {
    let cases = [
        ("inline", EmbedPolicy::Inline),
        ("file", EmbedPolicy::File),
        ("auto", EmbedPolicy::Auto),
        ("Inline", EmbedPolicy::Auto),
        ("", EmbedPolicy::Auto),
    ];
    for (text, expected) in cases {
        assert_eq!(EmbedPolicy::from_agent_policy(text), expected, "{text:?}");
    }
}
