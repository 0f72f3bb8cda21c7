//! The Git archive end to end: what a send, a reply and a registration leave in the
//! repository, read back with the `git` command line as a human would.

use std::path::Path;

use mailroom_testkit::{
    ContactResponseCall, ProjectCall, RegisterCall, ReplyCall, SendCall, TINY_PNG, TestApp,
    WhoisCall, git, git_command, sent_message_id,
};
use serde_json::{Value, json};

fn committed_files(root: &Path) -> Vec<String> {
    git(root, &["ls-tree", "-r", "--name-only", "HEAD"]).lines().map(str::to_string).collect()
}

fn front_matter(text: &str) -> Value {
    let json = text
        .strip_prefix("---json\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .map(|(json, _)| json)
        .unwrap_or_else(|| panic!("no front matter in {text}"));
    serde_json::from_str(json).expect("front matter JSON")
}

#[tokio::test]
async fn messages_profiles_and_digests_are_committed_and_readable_with_git() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/archive", "BlueLake", "GreenCastle").await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Build plan, v2!")
        .body("  Step one.\nStep two.  ")
        .thread("T-7")
        .ok(&app)
        .await;
    let id = sent_message_id(&sent);
    ReplyCall::new(&slug, "GreenCastle", id).body("Agreed.").ok(&app).await;
    app.archive_flushed().await;
    let root = app.archive_root();

    let files = committed_files(&root);
    let suffix = format!("__build-plan-v2__{id}.md");
    let copies: Vec<&String> = files.iter().filter(|f| f.ends_with(&suffix)).collect();
    assert_eq!(copies.len(), 3, "canonical, outbox and inbox copies: {files:#?}");
    let canonical = copies
        .iter()
        .find(|f| f.starts_with(&format!("projects/{slug}/messages/")))
        .expect("canonical copy");
    assert!(copies.iter().any(|f| f.contains("/agents/BlueLake/outbox/")));
    assert!(copies.iter().any(|f| f.contains("/agents/GreenCastle/inbox/")));

    let text = git(&root, &["show", &format!("HEAD:{canonical}")]);
    let meta = front_matter(&text);
    assert_eq!(meta["id"], id);
    assert_eq!(meta["from"], "BlueLake");
    assert_eq!(meta["to"], json!(["GreenCastle"]));
    assert_eq!(meta["thread_id"], "T-7");
    assert_eq!(meta["project"], "/work/archive");
    assert!(text.ends_with("\n\nStep one.\nStep two.\n"), "body stripped: {text:?}");

    let threads = format!("projects/{slug}/messages/threads/");
    let digest = files.iter().find(|f| f.starts_with(&threads) && f.ends_with("/T-7.md"));
    let digest = git(&root, &["show", &format!("HEAD:{}", digest.expect("the month's digest"))]);
    assert!(digest.starts_with("# Thread T-7\n\n"), "{digest}");
    assert_eq!(digest.matches("[View canonical](").count(), 2, "both messages: {digest}");

    let profile =
        git(&root, &["show", &format!("HEAD:projects/{slug}/agents/GreenCastle/profile.json")]);
    let profile: Value = serde_json::from_str(&profile).expect("profile JSON");
    assert_eq!(profile["name"], "GreenCastle");
    assert!(profile.get("registration_token").is_none(), "tokens never reach the archive");

    let log = git(&root, &["log", "--format=%s"]);
    assert!(log.lines().any(|l| l.contains("chore: initialize archive")), "{log}");
    assert!(
        log.lines()
            .any(|l| l == "mail: BlueLake -> GreenCastle | Build plan, v2!"
                || l.starts_with("batch: ")),
        "{log}"
    );

    let fsck = git(&root, &["fsck", "--strict"]);
    assert_eq!(fsck, "", "no broken or dangling objects");
    // The index is written once the writer idles (it is for humans; commits never use it).
    let mut status = String::new();
    for _ in 0..100 {
        status = git(&root, &["status", "--porcelain"]);
        if status.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status, "", "work tree and index match HEAD");
    let on_disk = std::fs::read_to_string(root.join(canonical)).expect("work tree copy");
    assert_eq!(on_disk, text);
}

#[tokio::test]
async fn whois_lists_recent_archive_commits() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/whois", "BlueLake", "GreenCastle").await;
    app.archive_flushed().await;
    let whois = WhoisCall::new(&slug, "BlueLake").commit_limit(2).ok(&app).await;
    let commits = whois["recent_commits"].as_array().expect("commits");
    assert!(!commits.is_empty() && commits.len() <= 2, "{whois}");
    assert_eq!(commits[0]["hexsha"].as_str().map(str::len), Some(12));
    let off = WhoisCall::new(&slug, "BlueLake").include_recent_commits(false).ok(&app).await;
    assert_eq!(off["recent_commits"], json!([]));
}

#[tokio::test]
async fn a_burst_of_sends_shares_few_commits_and_loses_nothing() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/burst", "BlueLake", "GreenCastle").await;
    app.archive_flushed().await;
    let before: usize =
        git(&app.archive_root(), &["rev-list", "--count", "HEAD"]).trim().parse().expect("count");
    let sends = (0..40).map(|i| {
        let (app, slug) = (&app, slug.clone());
        async move {
            let subject = format!("burst {i}");
            let sent =
                SendCall::new(&slug, "BlueLake", "GreenCastle", &subject).body("x").ok(app).await;
            sent_message_id(&sent)
        }
    });
    let ids = futures_util::future::join_all(sends).await;
    app.archive_flushed().await;
    let root = app.archive_root();
    let files = committed_files(&root);
    for id in ids {
        let canonical = format!("__{id}.md");
        assert!(
            files.iter().any(|f| f.contains("/messages/2") && f.ends_with(&canonical)),
            "message {id} archived"
        );
    }
    let after: usize = git(&root, &["rev-list", "--count", "HEAD"]).trim().parse().expect("count");
    // Coalescing is timing-dependent, so only the absence of one commit per message is
    // asserted here; the benchmark reports the actual count.
    assert!(after - before < 40, "{} commits for 40 sends", after - before);
}

#[tokio::test]
async fn image_attachments_become_webp_in_the_archive_and_bad_paths_are_refused() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/images", "BlueLake", "GreenCastle").await;
    let project_dir = app.archive_root().join("projects").join(&slug);
    std::fs::create_dir_all(&project_dir).expect("project dir");
    std::fs::write(project_dir.join("diagram.png"), TINY_PNG).expect("png");

    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Diagram")
        .body("See ![the diagram](diagram.png)")
        .attachments(&["diagram.png"])
        .ok(&app)
        .await;
    let payload = &sent["deliveries"][0]["payload"];
    let attachments = payload["attachments"].as_array().expect("attachments");
    assert_eq!(attachments.len(), 2, "body image and attachment_paths: {attachments:?}");
    assert!(attachments.iter().all(|a| a["type"] == "inline" && a["media_type"] == "image/webp"));
    let body = payload["body_md"].as_str().expect("body");
    assert!(body.starts_with("See ![the diagram](data:image/webp;base64,"), "{body}");
    let sha1 = attachments[0]["sha1"].as_str().expect("sha1");

    app.archive_flushed().await;
    let root = app.archive_root();
    let webp_path = format!("projects/{slug}/attachments/{}/{sha1}.webp", &sha1[..2]);
    let files = committed_files(&root);
    assert!(files.contains(&webp_path), "{webp_path} committed: {files:#?}");
    // The bytes as they are: `git` would read them as UTF-8.
    let webp =
        git_command(&root, &["show", &format!("HEAD:{webp_path}")]).output().expect("git show");
    assert!(webp.stdout.starts_with(b"RIFF") && &webp.stdout[8..12] == b"WEBP");

    for (path, reason) in [("../../outside.png", "'..'"), ("/etc/passwd", "absolute")] {
        let refused = SendCall::new(&slug, "BlueLake", "GreenCastle", "x")
            .body("x")
            .attachments(&[path])
            .call(&app)
            .await
            .expect_err("refused");
        assert!(refused.contains("attachment_paths[0]") && refused.contains(path), "{refused}");
        assert!(
            refused.to_lowercase().contains(reason.trim_matches('\'')) || refused.contains(reason),
            "{refused}"
        );
    }
}

#[tokio::test]
async fn images_sent_to_another_project_are_archived_in_that_project() {
    let app = TestApp::start().await;
    for (project, name, policy) in [
        ("/work/alpha", "BlueLake", "file"),
        ("/work/alpha", "RedStone", "auto"),
        ("/work/beta", "GreenCastle", "auto"),
    ] {
        ProjectCall::new(project).ok(&app).await;
        RegisterCall::new(project, name).attachments_policy(policy).ok(&app).await;
    }
    let alpha_dir = app.archive_root().join("projects").join("work-alpha");
    std::fs::create_dir_all(&alpha_dir).expect("project dir");
    std::fs::write(alpha_dir.join("diagram.png"), TINY_PNG).expect("png");
    let send = |sender: &str| {
        let subject = format!("From {sender}");
        SendCall::new("work-alpha", sender, "project:work-beta#GreenCastle", &subject)
            .body("See ![the diagram](diagram.png)")
    };

    for (sender, kind) in [("BlueLake", "file"), ("RedStone", "inline")] {
        send(sender).call(&app).await.expect_err("no contact link yet: a request is filed");
        let response = ContactResponseCall::new("work-beta", "GreenCastle", sender, true);
        response.from_project("work-alpha").ok(&app).await;
        let sent = send(sender).call(&app).await.unwrap_or_else(|e| panic!("{sender}: {e}"));
        assert_eq!(sent["deliveries"][0]["project"], "/work/beta", "{sender}");
        let payload = &sent["deliveries"][0]["payload"];
        let attachment = &payload["attachments"][0];
        assert_eq!(attachment["type"], kind, "{sender}: {attachment}");
        let sha1 = attachment["sha1"].as_str().expect("sha1");
        let webp_path = format!("projects/work-beta/attachments/{}/{sha1}.webp", &sha1[..2]);
        if kind == "file" {
            assert_eq!(attachment["path"], webp_path.as_str(), "the target project's copy");
            let body = payload["body_md"].as_str().expect("body");
            assert!(body.contains(&format!("]({webp_path})")), "{body}");
        }
        app.archive_flushed().await;
        let root = app.archive_root();
        let files = committed_files(&root);
        for path in [
            webp_path.clone(),
            format!("projects/work-beta/attachments/_manifests/{sha1}.json"),
            format!("projects/work-beta/attachments/_audit/{sha1}.log"),
        ] {
            assert!(files.contains(&path), "{sender}: {path} committed: {files:#?}");
            assert!(root.join(&path).is_file(), "{sender}: {path} in the work tree");
        }
    }
}
