use super::*;
use crate::records::MessageId;
use proptest::prelude::*;
use serde_json::json;

/// Compares what a rule returned for `input` with what we expected, naming the input.
fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
    assert_eq!(actual, expected, "input: {input:?}");
}

fn at(iso: &str) -> Timestamp {
    Timestamp::parse_iso(iso).expect("test timestamps are valid")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

/// A message like the conformance fixture's first delivery.
fn sample() -> MessageDoc {
    MessageDoc {
        id: MessageId(42),
        thread_id: Some("TKT-1".into()),
        project: "/home/u/backend".into(),
        project_slug: "home-u-backend".into(),
        from: "BlueLake".into(),
        from_project: None,
        to: names(&["GreenCastle"]),
        cc: Vec::new(),
        bcc: Vec::new(),
        subject: "Hello, World!".into(),
        importance: "normal".into(),
        ack_required: false,
        created: at("2025-01-01T12:00:00.123456+00:00"),
        attachments: Vec::new(),
        body_md: "Test".into(),
    }
}

const SAMPLE_FILE: &str = r#"---json
{
  "ack_required": false,
  "attachments": [],
  "bcc": [],
  "cc": [],
  "created": "2025-01-01T12:00:00.123456+00:00",
  "from": "BlueLake",
  "id": 42,
  "importance": "normal",
  "project": "/home/u/backend",
  "project_slug": "home-u-backend",
  "subject": "Hello, World!",
  "thread_id": "TKT-1",
  "to": [
    "GreenCastle"
  ]
}
---

Test
"#;

#[test]
fn python_whitespace_is_stripped() {
    let cases = [
        (" \t\n x y \r\n", "x y"),
        ("\u{1c}\u{1f}x\u{85}\u{a0}\u{3000}", "x"),
        ("\u{200b}x\u{feff}", "\u{200b}x\u{feff}"),
        ("   ", ""),
    ];
    for (input, expected) in cases {
        check(input, python_strip(input), expected);
    }
}

#[test]
fn renders_a_message_like_the_reference() {
    let doc = MessageDoc { body_md: "\n  Test \n\n".into(), ..sample() };
    let text = render_message(&doc);
    check("sample", text.as_str(), SAMPLE_FILE);
    // The reference's commit for such a message reports 21 inserted lines.
    check("lines", text.lines().count(), 21);
    let two_lines = MessageDoc { body_md: "Line one\nLine two".into(), ..sample() };
    check("two-line body", render_message(&two_lines).lines().count(), 22);
}

#[test]
fn renders_cross_project_sender_keys() {
    let doc = MessageDoc {
        thread_id: None,
        from_project: Some(SenderProject {
            human_key: "/srv/front".into(),
            slug: "srv-front".into(),
        }),
        ..sample()
    };
    let text = render_message(&doc);
    let expected_lines = [
        "  \"from\": \"BlueLake\",",
        "  \"from_address\": \"project:srv-front#BlueLake\",",
        "  \"from_project\": \"/srv/front\",",
        "  \"from_project_slug\": \"srv-front\",",
        "  \"id\": 42,",
    ];
    check("cross-project", text.contains(&expected_lines.join("\n")), true);
    check("null thread", text.contains("  \"thread_id\": null,\n"), true);
    check("round trip", parse_message(&text).ok(), Some(doc));
}

#[test]
fn parses_what_hands_and_tools_do_to_files() {
    let expected = sample();
    let crlf = SAMPLE_FILE.replace('\n', "\r\n");
    let no_final_newline = SAMPLE_FILE.trim_end().to_owned();
    let with_bom = format!("\u{feff}{SAMPLE_FILE}");
    let zulu = SAMPLE_FILE.replace(".123456+00:00", ".123456Z");
    let extra_keys = SAMPLE_FILE.replace("{\n", "{\n  \"topic\": \"x\",\n  \"zzz\": [1],\n");
    let old_file = SAMPLE_FILE
        .replace("  \"attachments\": [],\n  \"bcc\": [],\n  \"cc\": [],\n", "")
        .replace("  \"thread_id\": \"TKT-1\",\n", "");
    let cases = [
        ("crlf", crlf, expected.clone()),
        ("no final newline", no_final_newline, expected.clone()),
        ("bom", with_bom, expected.clone()),
        ("zulu", zulu, expected.clone()),
        ("extra keys", extra_keys, expected.clone()),
        ("old file", old_file, MessageDoc { thread_id: None, ..expected.clone() }),
        (
            "no fraction",
            SAMPLE_FILE.replace(".123456+00:00", "Z"),
            MessageDoc { created: at("2025-01-01T12:00:00Z"), ..expected.clone() },
        ),
        (
            "fence only",
            SAMPLE_FILE.replace("---\n\nTest\n", "---"),
            MessageDoc { body_md: String::new(), ..expected.clone() },
        ),
    ];
    for (label, text, expected) in cases {
        match parse_message(&text) {
            Ok(doc) => check(label, doc, expected),
            Err(error) => panic!("{label}: {error}"),
        }
    }
}

#[test]
fn parse_errors_say_what_is_wrong() {
    let replace = |from: &str, to: &str| SAMPLE_FILE.replacen(from, to, 1);
    let cases = [
        ("", "missing front matter: a message file must start with a '---json' line".into()),
        (
            "---\n{}\n---\n",
            "missing front matter: a message file must start with a '---json' line".into(),
        ),
        (
            "---json {}\n---\n",
            "missing front matter: a message file must start with a '---json' line".into(),
        ),
        ("---json\n{}\n", "front matter is not closed by a '---' line".into()),
        ("---json\n{}\n----\nbody", "front matter is not closed by a '---' line".into()),
        (
            "---json\n{\n---\n",
            "front matter is not JSON: EOF while parsing an object at line 2 column 0".into(),
        ),
        ("---json\n[]\n---\n", "front matter is not a JSON object".into()),
        ("---json\n{}\n---\n", "missing key 'id'".into()),
        (
            &replace("  \"to\": [\n    \"GreenCastle\"\n  ]\n", "  \"z\": 1\n"),
            "missing key 'to'".into(),
        ),
        (&replace("\"id\": 42", "\"id\": \"42\""), "key 'id' must be an integer".into()),
        (&replace("\"id\": 42", "\"id\": 4.2"), "key 'id' must be an integer".into()),
        (
            &replace("\"ack_required\": false", "\"ack_required\": 0"),
            "key 'ack_required' must be a boolean".into(),
        ),
        (
            &replace("\"subject\": \"Hello, World!\"", "\"subject\": null"),
            "key 'subject' must be a string".into(),
        ),
        (
            &replace("\"thread_id\": \"TKT-1\"", "\"thread_id\": 7"),
            "key 'thread_id' must be a string".into(),
        ),
        (&replace("\"cc\": []", "\"cc\": [1]"), "key 'cc' must be a list of strings".into()),
        (
            &replace("\"attachments\": []", "\"attachments\": {}"),
            "key 'attachments' must be a list".into(),
        ),
        (
            &replace("2025-01-01T12:00:00.123456+00:00", "yesterday"),
            "key 'created' is not an ISO-8601 timestamp: \"yesterday\"".to_owned(),
        ),
        (
            &replace("\"cc\": [],", "\"cc\": [],\n  \"from_project\": \"/srv\","),
            "missing key 'from_project_slug'".into(),
        ),
    ];
    for (text, expected) in cases {
        let message = parse_message(text).err().map(|error| error.to_string());
        check(text, message, Some(expected));
    }
}

#[test]
fn subject_slugs() {
    let hundred = "a".repeat(100);
    let cases = [
        ("Hello, World!", "hello-world".to_owned()),
        ("  __x__ ", "x".to_owned()),
        ("", "message".to_owned()),
        ("ÄÖÜ", "message".to_owned()),
        ("-_-", "message".to_owned()),
        ("a - b", "a---b".to_owned()),
        ("Grüße aus Köln", "gr-e-aus-k-ln".to_owned()),
        ("v1.2_final.tar.gz", "v1.2_final.tar.gz".to_owned()),
        ("[WIP] Fix #12: auth", "wip-fix-12-auth".to_owned()),
        (".hidden", ".hidden".to_owned()),
        (hundred.as_str(), "a".repeat(80)),
        (&format!("{}!x", "b".repeat(79)), format!("{}-", "b".repeat(79))),
    ];
    for (input, expected) in cases {
        check(input, subject_slug(input), expected);
    }
}

#[test]
fn message_file_names() {
    let created = at("2025-01-01T12:00:00.123456+00:00");
    let cases = [
        ("Hello, World!", 42, "2025-01-01T12-00-00Z__hello-world__42.md"),
        ("", 1, "2025-01-01T12-00-00Z__message__1.md"),
    ];
    for (subject, id, expected) in cases {
        check(subject, message_file_name(created, subject, MessageId(id)).as_str(), expected);
    }
    let late = at("2024-12-31T23:59:59.999999-05:00");
    check(
        "offset",
        message_file_name(late, "x", MessageId(3)).as_str(),
        "2025-01-01T04-59-59Z__x__3.md",
    );
}

#[test]
fn parses_message_file_names() {
    let cases = [
        ("2025-01-01T12-00-00Z__hello-world__42.md", Some(42)),
        ("projects/p/messages/2025/01/2025-01-01T12-00-00Z__a__b__7.md", Some(7)),
        ("2025-01-01T12-00-00Z__message__9223372036854775807.md", Some(i64::MAX)),
        ("17.md", Some(17)),
        ("2025-01-01T12-00-00Z__hello-world__42.json", None),
        ("2025-01-01T12-00-00Z__hello-world.md", None),
        ("hello__42.md", None),
        ("x__y__-4.md", None),
        ("x__y__+4.md", None),
        ("x__y__.md", None),
        ("x__y__99999999999999999999.md", None),
        ("TKT-1.md", None),
        (".md", None),
    ];
    for (name, expected) in cases {
        check(name, parse_message_file_name(name), expected.map(MessageId));
    }
}

#[test]
fn message_paths_cover_every_copy() {
    let file = "2025-01-01T12-00-00Z__hello-world__42.md";
    let doc = MessageDoc {
        to: names(&["GreenCastle", "BlueLake"]),
        cc: names(&["RedStone", "GreenCastle"]),
        bcc: names(&["RedStone", "PinkFox"]),
        ..sample()
    };
    let inbox = |name: &str| format!("projects/home-u-backend/agents/{name}/inbox/2025/01/{file}");
    let expected = MessagePaths {
        canonical: format!("projects/home-u-backend/messages/2025/01/{file}"),
        outbox: Some(format!("projects/home-u-backend/agents/BlueLake/outbox/2025/01/{file}")),
        inboxes: vec![inbox("GreenCastle"), inbox("BlueLake"), inbox("RedStone"), inbox("PinkFox")],
    };
    check("local sender", message_paths(&doc, true), expected.clone());
    check("remote sender", message_paths(&doc, false), MessagePaths { outbox: None, ..expected });
}

#[test]
fn other_paths() {
    let cases = [
        (profile_path("p", "BlueLake"), "projects/p/agents/BlueLake/profile.json"),
        (
            thread_digest_path("p", "TKT-1", at("2025-01-31T23:59:59Z")),
            "projects/p/messages/threads/2025/01/TKT-1.md",
        ),
        (legacy_thread_digest_path("p", "TKT-1"), "projects/p/messages/threads/TKT-1.md"),
    ];
    for (actual, expected) in cases {
        check(expected, actual.as_str(), expected);
    }
    // Expected digests are Python's hashlib.sha1(pattern.encode("utf-8")).hexdigest().
    let cases = [
        ("src/**/*.rs", "deb95f5865984addb1628b45ed46a02956f04c71"),
        ("  src/**/*.rs\n", "deb95f5865984addb1628b45ed46a02956f04c71"),
        ("docs/é.md", "e04681a6c65c3096b45d23b2fdc9ede31f0658ec"),
    ];
    for (pattern, digest) in cases {
        let expected = [
            format!("projects/p/file_reservations/{digest}.json"),
            "projects/p/file_reservations/id-12.json".to_owned(),
        ];
        check(pattern, reservation_paths("p", ReservationId(12), pattern), expected);
    }
}

#[test]
fn digest_entries() {
    let canonical = "projects/home-u-backend/messages/2025/01/x__42.md";
    let head = format!(
        "## 2025-01-01T12:00:00.123456+00:00 \u{2014} BlueLake \u{2192} GreenCastle, RedStone, PinkFox\n\n\
         [View canonical]({canonical})\n\n"
    );
    let recipients = MessageDoc { cc: names(&["RedStone"]), bcc: names(&["PinkFox"]), ..sample() };
    let long_body = format!("{}   {}", "a".repeat(1198), "b".repeat(10));
    let exact_body = "é".repeat(1200);
    let cases = [
        (recipients.clone(), format!("### Hello, World!\n\n{head}Test\n\n---\n\n")),
        (
            MessageDoc {
                subject: " \t ".into(),
                body_md: "\n body \n".into(),
                ..recipients.clone()
            },
            format!("{head}body\n\n---\n\n"),
        ),
        (
            MessageDoc { subject: String::new(), body_md: long_body, ..recipients.clone() },
            format!("{head}{}\n...\n\n---\n\n", "a".repeat(1198)),
        ),
        (
            MessageDoc {
                subject: String::new(),
                body_md: exact_body.clone(),
                ..recipients.clone()
            },
            format!("{head}{exact_body}\n\n---\n\n"),
        ),
        (
            MessageDoc { subject: String::new(), body_md: format!("{exact_body}ü"), ..recipients },
            format!("{head}{exact_body}\n...\n\n---\n\n"),
        ),
    ];
    for (doc, expected) in cases {
        check(&doc.subject, digest_entry(&doc, canonical), expected);
    }
    check("header", digest_header("TKT-1").as_str(), "# Thread TKT-1\n\n");
}

#[test]
fn digest_lookup() {
    let canonical = "projects/p/messages/2025/01/x__42.md";
    let digest = format!("{}{}", digest_header("T"), digest_entry(&sample(), canonical));
    let cases = [
        (canonical, true),
        ("projects/p/messages/2025/01/x__4.md", false),
        ("projects/p/messages/2025/01/x__42", false),
        ("p/messages/2025/01/x__42.md", false),
    ];
    for (path, expected) in cases {
        check(path, digest_contains(&digest, path), expected);
    }
    check("crlf", digest_contains(&digest.replace('\n', "\r\n"), canonical), true);
}

#[test]
fn json_files_end_with_a_newline() {
    let profile = json!({"name": "BlueLake", "program": "claude-code", "inception_ts": "x"});
    let expected = "{\n  \"inception_ts\": \"x\",\n  \"name\": \"BlueLake\",\n  \"program\": \"claude-code\"\n}\n";
    check("profile", render_profile(&profile).as_str(), expected);
    let reservation = json!({"id": 3, "exclusive": true, "path_pattern": "src/**"});
    let expected = "{\n  \"exclusive\": true,\n  \"id\": 3,\n  \"path_pattern\": \"src/**\"\n}\n";
    check("reservation", render_reservation(&reservation).as_str(), expected);
}

/// Text that stresses the format: arbitrary characters mixed with fences, line breaks,
/// quotes, emoji and Python-only whitespace.
fn nasty_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        "[a-zA-Z0-9 ]{1,8}",
        Just("---".to_owned()),
        Just("---json".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just(" \t".to_owned()),
        Just("\"\\".to_owned()),
        Just("😀".to_owned()),
        Just("\u{1c}\u{a0}\u{3000}".to_owned()),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    // 0001-01-01T00:00:00 to 9999-12-31T23:59:59.999999, the years ISO text can hold.
    (-62_135_596_800_000_000_i64..=253_402_300_799_999_999).prop_map(Timestamp::from_micros)
}

fn attachment() -> impl Strategy<Value = Value> {
    (nasty_text(), any::<i64>(), any::<bool>(), proptest::option::of(nasty_text())).prop_map(
        |(kind, bytes, inline, path)| {
            json!({"type": kind, "bytes": bytes, "inline": inline, "path": path, "dims": [1, {}]})
        },
    )
}

fn message_doc() -> impl Strategy<Value = MessageDoc> {
    let names = || proptest::collection::vec(nasty_text(), 0..4);
    let sender = proptest::option::of((nasty_text(), nasty_text()))
        .prop_map(|pair| pair.map(|(human_key, slug)| SenderProject { human_key, slug }));
    let addressing = (any::<i64>(), proptest::option::of(nasty_text()), nasty_text(), nasty_text());
    let people = (nasty_text(), sender, names(), names(), names());
    let content = (nasty_text(), nasty_text(), any::<bool>(), timestamp());
    let payload = (proptest::collection::vec(attachment(), 0..3), nasty_text());
    (addressing, people, content, payload).prop_map(
        |(
            (id, thread_id, project, project_slug),
            (from, from_project, to, cc, bcc),
            (subject, importance, ack_required, created),
            (attachments, body_md),
        )| MessageDoc {
            id: MessageId(id),
            thread_id,
            project,
            project_slug,
            from,
            from_project,
            to,
            cc,
            bcc,
            subject,
            importance: Importance(importance),
            ack_required,
            created,
            attachments,
            body_md,
        },
    )
}

proptest! {
    #[test]
    fn messages_round_trip(doc in message_doc()) {
        let text = render_message(&doc);
        let parsed = parse_message(&text);
        let expected = MessageDoc { body_md: python_strip(&doc.body_md).to_owned(), ..doc };
        prop_assert_eq!(parsed.as_ref().ok(), Some(&expected), "{:?}", parsed.as_ref().err());
        prop_assert_eq!(render_message(&expected), text);
    }

    #[test]
    fn python_json_is_ascii_json(doc in message_doc()) {
        let value = front_matter(&doc);
        let text = python_json(&value);
        prop_assert!(text.is_ascii());
        prop_assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(value));
    }

    #[test]
    fn file_names_round_trip(created in timestamp(), subject in nasty_text(), id in 0..=i64::MAX) {
        let name = message_file_name(created, &subject, MessageId(id));
        prop_assert_eq!(parse_message_file_name(&name), Some(MessageId(id)));
        let slug = subject_slug(&subject);
        prop_assert!(slug.len() <= 80 && !slug.is_empty());
        prop_assert!(!slug.starts_with(['-', '_']));
        prop_assert!(slug.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-')));
    }

    #[test]
    fn digests_find_their_entries(doc in message_doc()) {
        // Real slugs are `[a-z0-9-]+`; arbitrary text could even hold a line break.
        let doc = MessageDoc { project_slug: "home-u-backend".into(), ..doc };
        let canonical = message_paths(&doc, true).canonical;
        let digest = format!("{}{}", digest_header("T"), digest_entry(&doc, &canonical));
        prop_assert!(digest_contains(&digest, &canonical));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever a file holds (a human's edit, a truncated write, another tool's file),
    /// reading it answers a message or an error, never a panic.
    #[test]
    fn any_text_parses_or_is_refused(
        opening in prop_oneof![Just(""), Just("---json\n"), Just("---json\n{"), Just("---\n")],
        rest in "(?s).{0,300}",
        closing in prop_oneof![Just(""), Just("\n---\n"), Just("}\n---\nbody")],
    ) {
        let text = format!("{opening}{rest}{closing}");
        let _ = parse_message(&text);
        let _ = parse_message_file_name(&rest);
    }
}
