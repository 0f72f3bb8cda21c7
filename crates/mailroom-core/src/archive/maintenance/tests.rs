//! Maintenance against a real database and a real Git archive in a temp dir, filled through
//! the ops as a server would fill them; damage is done with the `git` command line.

use std::path::Path;
use std::process::Command;

use mailroom_git::CommittedFiles;

use super::*;
use crate::Mailroom;
use crate::ops::agents::Registration;
use crate::ops::messaging::{FetchInbox, InboxFilter, ReplyMessage, SendMessage};
use crate::ops::output::ListingKind;
use crate::ops::reservations::{ReservationStatus, ReservePaths, Selection};
use crate::records::{MessageId, RecipientKind};
use crate::store::Db;
use crate::store::db::archive_queue::ArchiveKind;

const SLUG: &str = "work-alpha";

/// Compares what a rule returned for `input` with what we expected, naming the input.
fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
    assert_eq!(actual, expected, "input: {input:?}");
}

fn config(dir: &Path) -> CoreConfig {
    let mut config = CoreConfig::for_data_dir(dir);
    config.contact_enforcement_enabled = false;
    config
}

/// Three agents of one project; message 1 (BlueLake → GreenCastle, cc RedStone, thread T-1)
/// and its reply, message 2. Returns once the archive has committed everything.
fn seed(config: &CoreConfig) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(config.clone()).expect("open");
    runtime.block_on(async {
        core.ensure_project("/work/alpha").await.expect("project");
        for name in ["BlueLake", "GreenCastle", "RedStone"] {
            let registration = Registration {
                project_key: SLUG.into(),
                program: "codex-cli".into(),
                model: "gpt-5".into(),
                name: Some(name.into()),
                task_description: format!("{name}'s task"),
                attachments_policy: None,
                ..Registration::default()
            };
            core.register_agent(registration).await.expect("register");
        }
        let send = SendMessage {
            project_key: SLUG.into(),
            sender_name: "BlueLake".into(),
            to: vec!["GreenCastle".into()],
            cc: vec!["RedStone".into()],
            subject: "Build plan".into(),
            body_md: "Step one: migrate the schema.".into(),
            thread_id: Some("T-1".into()),
            ..SendMessage::default()
        };
        core.send_message(send).await.expect("send");
        let reply = ReplyMessage {
            project_key: SLUG.into(),
            message_id: MessageId(1),
            sender_name: "GreenCastle".into(),
            body_md: "Agreed.".into(),
            ..ReplyMessage::default()
        };
        core.reply_message(reply).await.expect("reply");
    });
    core.close();
}

fn git(root: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-C"])
        .arg(root)
        .args(args)
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// The one committed path that starts with `prefix` and ends with `suffix`.
fn committed(root: &Path, prefix: &str, suffix: &str) -> String {
    let files = CommittedFiles::open(root).expect("open").expect("repository");
    let mut found = Vec::new();
    let matching = |p: &str, _| {
        if p.starts_with(prefix) && p.ends_with(suffix) {
            found.push(p.to_owned());
        }
    };
    files.for_each_file("", matching).expect("listed");
    assert_eq!(found.len(), 1, "{prefix}…{suffix}: {found:?}");
    found.remove(0)
}

fn edit_and_commit(root: &Path, path: &str, edit: impl FnOnce(String) -> String) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
    let text = std::fs::read_to_string(&full).unwrap_or_default();
    // Copies with equal bytes may share an inode in the work tree: replace, don't write through.
    let _ = std::fs::remove_file(&full);
    std::fs::write(&full, edit(text)).expect("write");
    git(root, &["add", path]);
    git(root, &["commit", "-qm", "damage"]);
}

fn lines(report: &VerifyReport) -> Vec<String> {
    report.differences.iter().map(ToString::to_string).collect()
}

#[test]
fn verify_names_every_kind_of_damage_and_rebuild_repairs_what_the_database_knows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    let root = config.storage_root.clone();

    let clean = verify(&config).expect("verify");
    assert!(clean.is_clean(), "{:#?}", clean.differences);
    check("messages", clean.messages_checked, 2);
    check("agents", clean.agents_checked, 3);
    check("queued", clean.queued_rows, 0);

    let projects = format!("projects/{SLUG}/");
    let inbox = committed(&root, &format!("{projects}agents/RedStone/inbox/"), "__1.md");
    let canonical = committed(&root, &format!("{projects}messages/"), "__2.md");
    let profile = format!("{projects}agents/GreenCastle/profile.json");
    let digest = committed(&root, &format!("{projects}messages/threads/"), "/T-1.md");
    let stray = format!("{projects}messages/2025/01/2025-01-01T00-00-00Z__ghost__99.md");
    let misplaced = canonical.replace(SLUG, "work-beta");
    git(&root, &["rm", "-q", &inbox]);
    git(&root, &["commit", "-qm", "damage"]);
    edit_and_commit(&root, &canonical, |text| text.replace("Agreed.", "Disagreed."));
    edit_and_commit(&root, &profile, |text| text.replace("codex-cli", "other-cli"));
    edit_and_commit(&root, &digest, |text| text.split("## ").next().unwrap_or("").to_owned());
    edit_and_commit(&root, &stray, |_| "---json\n{}\n---\n".to_owned());
    let moved = std::fs::read_to_string(root.join(&canonical)).expect("read");
    edit_and_commit(&root, &misplaced, |_| moved);

    let damaged = verify(&config).expect("verify");
    let expected = [
        format!("missing: {inbox} (inbox copy of message 1)"),
        format!("incomplete: {digest} (digest lacks message 1)"),
        format!("differs: {canonical} (canonical copy of message 2)"),
        format!("incomplete: {digest} (digest lacks message 2)"),
        format!("differs: {profile} (profile of GreenCastle: program)"),
        format!("extra: {stray} (message 99 is not in the database)"),
        format!("misplaced: {misplaced} (message 2 belongs to project {SLUG})"),
    ];
    check("damaged", lines(&damaged), expected.to_vec());

    let mut heard = Vec::new();
    let rebuilt = rebuild(&config, &mut |done, total| heard.push((done, total))).expect("rebuild");
    check("progress", heard, vec![(0, 2), (1, 2), (2, 2)]);
    check("written", rebuilt.files_written, 4);
    check("messages", (rebuilt.messages, rebuilt.message_files), (2, 7));
    check("digests and profiles", (rebuilt.digests, rebuilt.profiles), (1, 3));
    assert!(rebuilt.commit.is_some());
    check("left in place", lines(&verify(&config).expect("verify")), expected[5..].to_vec());
    let again = rebuild(&config, &mut |_, _| {}).expect("rebuild again");
    check("nothing to do", (again.files_written, again.commit), (0, None));
}

/// An archive written before the monthly digests has each thread's entries in the
/// reference's flat digest (`messages/threads/<thread>.md`): it verifies clean and a rebuild
/// writes nothing; the thread's next message goes to the month's digest and the flat one is
/// left as it is; an entry in neither is reported on the month's digest, and a rebuild puts
/// it there.
#[test]
fn an_archive_with_the_references_flat_digests_still_verifies_and_rebuilds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    let root = config.storage_root.clone();
    let monthly = committed(&root, &format!("projects/{SLUG}/messages/threads/"), "/T-1.md");
    let flat = format!("projects/{SLUG}/messages/threads/T-1.md");
    git(&root, &["mv", &monthly, &flat]);
    git(&root, &["commit", "-qm", "the reference's layout"]);
    let report = verify(&config).expect("verify");
    assert!(report.is_clean(), "{:#?}", report.differences);
    let rebuilt = rebuild(&config, &mut |_, _| {}).expect("rebuild");
    check("nothing to rebuild", (rebuilt.files_written, rebuilt.commit), (0, None));

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(config.clone()).expect("open");
    runtime.block_on(async {
        let reply = ReplyMessage {
            project_key: SLUG.into(),
            message_id: MessageId(2),
            sender_name: "BlueLake".into(),
            body_md: "Done.".into(),
            ..ReplyMessage::default()
        };
        core.reply_message(reply).await.expect("reply");
        core.archive().expect("archive").flushed().await;
    });
    core.close();
    drop(core);
    let files = CommittedFiles::open(&root).expect("open").expect("repository");
    let read = |path: &str| String::from_utf8(files.read(path).expect("read").expect(path));
    let month = read(&monthly).expect("text");
    check("the month's digest", month.matches("[View canonical](").count(), 1);
    assert!(month.contains("__3.md)"), "{month}");
    assert_eq!(read(&flat).expect("text").matches("[View canonical](").count(), 2);
    let report = verify(&config).expect("verify");
    assert!(report.is_clean(), "{:#?}", report.differences);

    edit_and_commit(&root, &flat, |text| text.split("## ").next().unwrap_or("").to_owned());
    let expected = [
        format!("incomplete: {monthly} (digest lacks message 1)"),
        format!("incomplete: {monthly} (digest lacks message 2)"),
    ];
    check("damaged", lines(&verify(&config).expect("verify")), expected.to_vec());
    let rebuilt = rebuild(&config, &mut |_, _| {}).expect("rebuild");
    check("the month's digest rewritten", rebuilt.files_written, 1);
    let report = verify(&config).expect("verify");
    assert!(report.is_clean(), "{:#?}", report.differences);

    // The month's digest gone, the flat one lacking message 1 but holding message 2: the
    // missing digest is reported once, although message 2 (found) comes between 1 and 3.
    git(&root, &["rm", "-q", &monthly]);
    git(&root, &["commit", "-qm", "the month's digest lost"]);
    edit_and_commit(&root, &flat, |text| {
        let entries: Vec<&str> = text.split("\n---\n\n").collect();
        let kept: Vec<&str> = entries.into_iter().filter(|e| !e.contains("__1.md)")).collect();
        let mut kept = kept.join("\n---\n\n");
        kept.insert_str(0, "# Thread T-1\n\n");
        kept
    });
    let expected = [format!("missing: {monthly} (digest of thread T-1)")];
    check("reported once", lines(&verify(&config).expect("verify")), expected.to_vec());
}

/// A lost archive (every project file removed from HEAD) is rebuilt a chunk at a time (1 KB
/// in tests, 64 MB otherwise), one commit each, and then verifies clean.
#[test]
fn a_lost_archive_is_rebuilt_a_chunk_at_a_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    let root = config.storage_root.clone();
    git(&root, &["rm", "-rq", "projects"]);
    git(&root, &["commit", "-qm", "lost"]);
    let commits = || {
        let output = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["rev-list", "--count", "HEAD"])
            .output()
            .expect("git");
        String::from_utf8_lossy(&output.stdout).trim().parse::<usize>().expect("a count")
    };
    let before = commits();
    let rebuilt = rebuild(&config, &mut |_, _| {}).expect("rebuild");
    check("written", rebuilt.files_written, 11);
    assert!(commits() - before >= 3, "{} commits for 11 files", commits() - before);
    let head = CommittedFiles::open(&root).expect("open").expect("repository").head();
    check("the last chunk's commit", rebuilt.commit, head.map(|id| id.to_string()));
    let status = Command::new("git").arg("-C").arg(&root).args(["status", "--porcelain"]).output();
    check(
        "git status",
        String::from_utf8_lossy(&status.expect("git").stdout).into_owned(),
        String::new(),
    );
    let report = verify(&config).expect("verify");
    assert!(report.is_clean(), "{:#?}", report.differences);
}

/// Takes message 1's inbox copy out of HEAD and queues its archive work again: what a server
/// killed before its archive commit leaves behind. Returns the queue row's id.
fn unarchive_message_one(config: &CoreConfig) -> i64 {
    let root = &config.storage_root;
    let inbox = committed(root, &format!("projects/{SLUG}/agents/GreenCastle/inbox/"), "__1.md");
    git(root, &["rm", "-q", &inbox]);
    git(root, &["commit", "-qm", "as if message 1 were not archived yet"]);
    let connection = rusqlite::Connection::open(&config.database_path).expect("open");
    let db = Db::new(&connection, true);
    db.enqueue_archive(ArchiveKind::Message, 1).expect("enqueue");
    db.queued_archive_work(0, 10).expect("queued")[0].id
}

#[test]
fn verify_counts_queued_work_instead_of_calling_it_missing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    unarchive_message_one(&config);

    let report = verify(&config).expect("verify");
    assert!(report.is_clean(), "{:#?}", report.differences);
    check("queued", (report.queued_rows, report.queued_messages), (1, 1));
    check("checked", report.messages_checked, 1);
}

/// Work set aside is one difference of verify's (its message is not called missing), and
/// the next start queues it again: once its row reads back, it is archived.
#[test]
fn set_aside_work_is_reported_and_retried_at_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    let queued = unarchive_message_one(&config);
    let connection = rusqlite::Connection::open(&config.database_path).expect("open");
    Db::new(&connection, true).set_aside_archive_row(queued, "bad timestamp").expect("set aside");
    drop(connection);

    let report = verify(&config).expect("verify");
    check("one difference", lines(&report).len(), 1);
    assert!(lines(&report)[0].starts_with("set aside: archive work"), "{:?}", lines(&report));

    // The next start retries it; the row renders now, so the archive is whole again.
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(config.clone()).expect("open");
    let archive = core.archive().expect("archive");
    // Nothing rings the writer but its own retry: it must commit the row by itself.
    runtime.block_on(async {
        for _ in 0..3000 {
            if archive.stats().archived > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    check("retried", (archive.stats().enqueued, archive.stats().set_aside), (1, 0));
    core.close();
    let report = verify(&config).expect("verify");
    assert!(report.is_clean(), "{:#?}", report.differences);
}

#[test]
fn reconstruct_brings_back_ids_recipients_and_search() {
    let dir = tempfile::tempdir().expect("temp dir");
    let original = config(dir.path());
    seed(&original);
    let root = original.storage_root.clone();
    let profile = format!("projects/{SLUG}/agents/RedStone/profile.json");
    git(&root, &["rm", "-q", &profile]);
    git(&root, &["commit", "-qm", "RedStone is known from messages only"]);

    let refused = reconstruct(&original, false, &mut |_, _| {}).expect_err("the database exists");
    assert!(refused.message.contains("--force"), "{}", refused.message);
    let mut rebuilt = original.clone();
    rebuilt.database_path = dir.path().join("rebuilt.sqlite3");
    let mut heard = None;
    let report = reconstruct(&rebuilt, false, &mut |done, total| heard = Some((done, total)))
        .expect("reconstruct");
    check("progress at the end", heard, Some((2, 2)));
    check("projects", report.projects, 1);
    check("agents", (report.agents_from_profiles, report.agents_from_messages), (2, 1));
    check("messages", (report.messages, report.recipients), (2, 3));
    check("moved", report.moved_aside, None);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);

    // Everything but RedStone's profile (now "unknown") matches the archive again.
    let verified = verify(&rebuilt).expect("verify");
    check("verify", lines(&verified), vec![format!("missing: {profile} (profile of RedStone)")]);

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(rebuilt).expect("open rebuilt");
    runtime.block_on(async {
        let fetch = |agent: &str| FetchInbox {
            project_key: SLUG.into(),
            agent_name: agent.into(),
            filter: InboxFilter { include_bodies: true, ..InboxFilter::default() },
            ..FetchInbox::default()
        };
        let inbox = core.fetch_inbox(fetch("RedStone")).await.expect("inbox");
        let got: Vec<_> = inbox.iter().map(|m| (m.id, m.subject.as_str())).collect();
        check("RedStone", got, vec![(MessageId(1), "Build plan")]);
        check("kind", inbox[0].kind, Some(ListingKind::Received(RecipientKind::Cc)));
        let inbox = core.fetch_inbox(fetch("BlueLake")).await.expect("inbox");
        check("reply", (inbox[0].id, inbox[0].thread_id.as_deref()), (MessageId(2), Some("T-1")));
        let hits =
            core.search_messages(SLUG.into(), "migrate".into(), 10, None).await.expect("search");
        check(
            "search",
            hits.result.iter().map(|h| h.item.id).collect::<Vec<_>>(),
            vec![MessageId(1)],
        );
    });
    core.close();
}

#[test]
fn paths_are_classified_by_their_place_in_the_layout() {
    let file = "2025-01-01T12-00-00Z__hello__42.md";
    let cases = [
        (
            format!("projects/p/messages/2025/01/{file}"),
            Some(ArchivePath::Canonical { slug: "p", message_id: MessageId(42) }),
        ),
        (
            "projects/p/messages/2025/01/42.md".to_owned(),
            Some(ArchivePath::Canonical { slug: "p", message_id: MessageId(42) }),
        ),
        (
            format!("projects/p/agents/A/inbox/2025/01/{file}"),
            Some(ArchivePath::Mailbox { slug: "p", message_id: MessageId(42) }),
        ),
        (
            format!("projects/p/agents/A/outbox/2025/01/{file}"),
            Some(ArchivePath::Mailbox { slug: "p", message_id: MessageId(42) }),
        ),
        (
            "projects/p/agents/A/profile.json".to_owned(),
            Some(ArchivePath::Profile { slug: "p", agent: "A" }),
        ),
        (
            "projects/p/file_reservations/id-7.json".to_owned(),
            Some(ArchivePath::Reservation { slug: "p", reservation_id: 7 }),
        ),
        (
            "projects/p/file_reservations/0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33.json".to_owned(),
            Some(ArchivePath::Project { slug: "p" }),
        ),
        (
            "projects/p/file_reservations/id-.json".to_owned(),
            Some(ArchivePath::Project { slug: "p" }),
        ),
        ("projects/p/messages/threads/42.md".to_owned(), Some(ArchivePath::Project { slug: "p" })),
        (
            "projects/p/messages/threads/2025/01/42.md".to_owned(),
            Some(ArchivePath::Project { slug: "p" }),
        ),
        (format!("projects/p/messages/25/01/{file}"), Some(ArchivePath::Project { slug: "p" })),
        (
            format!("projects/p/agents/A/drafts/2025/01/{file}"),
            Some(ArchivePath::Project { slug: "p" }),
        ),
        (
            "projects/p/messages/2025/01/notes.md".to_owned(),
            Some(ArchivePath::Project { slug: "p" }),
        ),
        ("projects/p".to_owned(), None),
        (".gitattributes".to_owned(), None),
        (format!("other/p/messages/2025/01/{file}"), None),
    ];
    for (path, expected) in &cases {
        check(path, classify_path(path), *expected);
    }
}

/// A 1x1 RGBA PNG.
const TINY_PNG: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 248, 207, 80, 15, 0, 3,
    134, 1, 128, 90, 52, 125, 107, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

#[test]
fn attachment_files_missing_from_head_are_reported_and_restored_from_the_work_tree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    let root = config.storage_root.clone();
    let project = root.join("projects").join(SLUG);
    std::fs::write(project.join("diagram.png"), TINY_PNG).expect("png");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(config.clone()).expect("open");
    runtime.block_on(async {
        let send = SendMessage {
            project_key: SLUG.into(),
            sender_name: "BlueLake".into(),
            to: vec!["GreenCastle".into()],
            subject: "Diagram".into(),
            body_md: "Attached.".into(),
            attachment_paths: vec!["diagram.png".into()],
            ..SendMessage::default()
        };
        core.send_message(send).await.expect("send");
    });
    core.close();
    drop(core);
    assert!(verify(&config).expect("verify").is_clean());

    let webp = committed(&root, &format!("projects/{SLUG}/attachments/"), ".webp");
    let manifest = committed(&root, &format!("projects/{SLUG}/attachments/_manifests/"), ".json");
    // The webp leaves HEAD but stays on disk; the manifest is gone from both.
    git(&root, &["rm", "-q", "--cached", &webp]);
    git(&root, &["rm", "-q", &manifest]);
    git(&root, &["commit", "-qm", "lose attachment files"]);
    let expected = [
        format!("missing: {webp} (attachment of message 3)"),
        format!("missing: {manifest} (attachment of message 3)"),
    ];
    check("damaged", lines(&verify(&config).expect("verify")), expected.to_vec());

    let rebuilt = rebuild(&config, &mut |_, _| {}).expect("rebuild");
    check("restored", rebuilt.attachments_restored, 1);
    check("lost", rebuilt.attachments_missing, vec![manifest]);
    check("left", lines(&verify(&config).expect("verify")), expected[1..].to_vec());
}

/// Reservation artifacts are not damage for verify, and rebuild writes back those missing.
#[test]
fn reservation_artifacts_pass_verify_and_rebuild_restores_missing_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    seed(&config);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(config.clone()).expect("open");
    runtime.block_on(async {
        let request = crate::ops::reservations::ReservePaths {
            project_key: SLUG.into(),
            agent_name: "BlueLake".into(),
            paths: vec!["src/**".into()],
            ttl_seconds: 3600,
            exclusive: true,
            reason: "br-1".into(),
        };
        core.file_reservation_paths(request).await.expect("reserve");
    });
    core.close();
    drop(core);
    check("after reserving", lines(&verify(&config).expect("verify")), Vec::new());

    let root = config.storage_root.clone();
    let by_id = format!("projects/{SLUG}/file_reservations/id-1.json");
    let committed_bytes = std::fs::read(root.join(&by_id)).expect("artifact in the work tree");
    git(&root, &["rm", "-q", &by_id]);
    git(&root, &["commit", "-qm", "lose a reservation artifact"]);
    let rebuilt = rebuild(&config, &mut |_, _| {}).expect("rebuild");
    check("reservations rendered", rebuilt.reservations, 1);
    let files = CommittedFiles::open(&root).expect("open").expect("repository");
    assert!(files.holds(&by_id, &committed_bytes), "restored byte for byte");
    let again = rebuild(&config, &mut |_, _| {}).expect("rebuild again");
    check("nothing left to write", again.commit, None);
}

#[test]
fn reconstruct_brings_back_file_reservations_with_their_ids() {
    let dir = tempfile::tempdir().expect("temp dir");
    let original = config(dir.path());
    seed(&original);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(original.clone()).expect("open");
    let before = runtime.block_on(async {
        let reserve = |agent: &str, path: &str, exclusive: bool| ReservePaths {
            project_key: SLUG.into(),
            agent_name: agent.into(),
            paths: vec![path.into()],
            ttl_seconds: 3600,
            exclusive,
            reason: format!("{agent} works on {path}"),
        };
        core.file_reservation_paths(reserve("BlueLake", "src/**", true)).await.expect("reserve");
        core.file_reservation_paths(reserve("RedStone", "docs/*.md", false)).await.expect("2");
        let selection = Selection::default();
        core.release_file_reservations(SLUG.into(), "RedStone".into(), selection)
            .await
            .expect("release");
        core.list_file_reservations(SLUG.into(), false).await.expect("list")
    });
    core.close();
    drop(core);

    let mut rebuilt = original.clone();
    rebuilt.database_path = dir.path().join("rebuilt.sqlite3");
    let report = reconstruct(&rebuilt, false, &mut |_, _| {}).expect("reconstruct");
    check("reservations", report.reservations, 2);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let core = Mailroom::open(rebuilt).expect("open rebuilt");
    let after = runtime
        .block_on(async { core.list_file_reservations(SLUG.into(), false).await.expect("list") });
    // A released reservation's artifact holds its expiry clamped to the release, so that is
    // the expiry it comes back with.
    let summary = |rows: &[ReservationStatus]| {
        rows.iter()
            .map(|r| {
                let expires = r.released_ts.map_or(r.expires_ts, |at| r.expires_ts.min(at));
                let times = (r.created_ts.to_iso(), expires.to_iso(), r.released_ts);
                (
                    r.id,
                    r.agent.clone(),
                    r.path_pattern.clone(),
                    r.exclusive,
                    r.reason.clone(),
                    times,
                )
            })
            .collect::<Vec<_>>()
    };
    check("restored", summary(&after), summary(&before));
    check("released", after.iter().map(|r| r.released_ts.is_some()).collect(), vec![false, true]);
    core.close();
}

/// Past `ARCHIVE_WORKTREE_MAX_FILES` the month's directories leave the work tree while the
/// writer idles; Git keeps every file, `git status` stays clean, and verify, which reads
/// HEAD, finds nothing wrong.
#[test]
fn months_retired_from_the_work_tree_stay_in_git_and_verify_clean() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = config(dir.path());
    seed(&config);
    let root = config.storage_root.clone();
    assert!(mailroom_git::retired_directories(&root).expect("read").is_empty());

    config.archive.worktree_max_files = 3;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let core = Mailroom::open(config.clone()).expect("open");
    runtime.block_on(async {
        let send = SendMessage {
            project_key: SLUG.into(),
            sender_name: "RedStone".into(),
            to: vec!["BlueLake".into()],
            subject: "Later".into(),
            body_md: "A third message.".into(),
            ..SendMessage::default()
        };
        core.send_message(send).await.expect("send");
        core.archive().expect("archive").flushed().await;
        // The writer looks at its budget once the index is written, when it idles.
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    });
    core.close();

    let retired = mailroom_git::retired_directories(&root).expect("read");
    let (year, month) = crate::model::time::Timestamp::now().year_month();
    let month = format!("{year:04}/{month:02}");
    let canonical = format!("projects/{SLUG}/messages/{month}");
    assert!(retired.contains(&(canonical.clone(), 3)), "{retired:?}");
    assert!(
        retired.iter().any(|(d, n)| d.ends_with(&format!("BlueLake/inbox/{month}")) && *n == 2)
    );
    assert!(!root.join(&canonical).exists(), "the month left the work tree");
    let threads = format!("projects/{SLUG}/messages/threads/{month}");
    assert!(retired.iter().any(|(d, _)| *d == threads), "the month's digests leave: {retired:?}");
    assert!(root.join(format!("projects/{SLUG}/agents/RedStone/profile.json")).exists());
    committed(&root, &format!("{threads}/"), "/T-1.md");
    committed(&root, &format!("{canonical}/"), "__3.md");
    let status = Command::new("git").arg("-C").arg(&root).args(["status", "--porcelain"]).output();
    assert_eq!(String::from_utf8_lossy(&status.expect("git").stdout), "");
    let verified = verify(&config).expect("verify");
    assert!(verified.is_clean(), "{:#?}", verified.differences);
    check("messages", verified.messages_checked, 3);
}
