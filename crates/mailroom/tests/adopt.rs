//! `mailroom projects adopt SOURCE TARGET`: a project made for a `git worktree add`
//! checkout merged into its repository's main project, its rows and archive files moved in
//! one transaction and one Git commit; refused for projects of different repositories, on a
//! shared agent name, and while the server runs.

mod common;

use std::path::Path;

use common::{KillOnDrop, json, ok, run, start_with, stop};
use mailroom_testkit::{
    ProjectCall, RegisterCall, RegisterWebhookCall, ReserveCall, SendCall, TINY_PNG, git,
};
use serde_json::Value;

fn database(data: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("open database")
}

fn count(data: &Path, sql: &str) -> i64 {
    database(data).query_row(sql, [], |r| r.get(0)).expect(sql)
}

/// The files of the archive's HEAD under `dir`.
fn committed(data: &Path, dir: &str) -> Vec<String> {
    let listed = git(&data.join("archive"), &["ls-tree", "-r", "--name-only", "HEAD", "--", dir]);
    listed.lines().map(str::to_string).collect()
}

/// A repository with one commit at `dir/repo`, and a worktree of it at `dir/feature`.
fn repository_with_worktree(dir: &Path) -> (String, String) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
    let feature = dir.join("feature");
    git(&repo, &["worktree", "add", "-q", "-b", "feature", &feature.to_string_lossy()]);
    let text = |p: &Path| p.canonicalize().expect("canonical").to_string_lossy().into_owned();
    (text(&repo), text(&feature))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktrees_project_is_adopted_with_its_mail_and_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (main, feature) = repository_with_worktree(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("dir");
    git(&elsewhere, &["init", "-q"]);
    let elsewhere = elsewhere.canonicalize().expect("canonical").to_string_lossy().into_owned();
    let data = dir.path().join("data");
    let (server, url) = start_with(&data, &[("CONTACT_ENFORCEMENT_ENABLED", "false")]);
    let server = KillOnDrop(Some(server));
    for (project, agents) in [
        (&main, ["BlueLake", "SilentFox"]),
        (&feature, ["GreenCastle", "RedStone"]),
        (&elsewhere, ["BlueLake", "GreenCastle"]),
    ] {
        ProjectCall::new(project).ok_at(&url).await;
        for name in agents {
            RegisterCall::new(project, name).ok_at(&url).await;
        }
        let [from, to] = agents;
        SendCall::new(project, from, to, "status").thread("T-1").ok_at(&url).await;
    }
    ReserveCall::new(&feature, "GreenCastle", &["src/**"]).ok_at(&url).await;
    let projects = json(&data, &["list-projects"]);
    let slug = |key: &str| -> String {
        let found = projects.as_array().expect("projects").iter().find(|p| p["human_key"] == key);
        found.and_then(|p| p["slug"].as_str()).expect("slug").to_string()
    };
    let (old, new) = (slug(&feature), slug(&main));
    // A webhook of the source project, with a delivery queued (nothing listens on port 9).
    RegisterWebhookCall::new(&feature, "http://127.0.0.1:9/feature").ok_at(&url).await;
    // An image stored as a file in the source's attachments folder, linked from the body.
    RegisterCall::new(&feature, "GreenCastle").attachments_policy("file").ok_at(&url).await;
    let project_dir = data.join("archive/projects").join(&old);
    std::fs::create_dir_all(&project_dir).expect("project dir");
    let image = project_dir.join("diagram.png");
    std::fs::write(&image, TINY_PNG).expect("png");
    let sent = SendCall::new(&feature, "GreenCastle", "RedStone", "diagram")
        .body("See ![the diagram](diagram.png)")
        .ok_at(&url)
        .await;
    std::fs::remove_file(&image).expect("the image, stored");
    let sha1 = sent["deliveries"][0]["payload"]["attachments"][0]["sha1"].as_str().expect("sha1");
    let webp = |slug: &str| format!("projects/{slug}/attachments/{}/{sha1}.webp", &sha1[..2]);

    let refused = run(&data, &["projects", "adopt", &feature, &main, "--apply"], "");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("stop it first"));
    let elsewhere_refused = run(&data, &["projects", "adopt", &elsewhere, &main], "");
    assert_eq!(elsewhere_refused.status.code(), Some(1));
    let why = String::from_utf8_lossy(&elsewhere_refused.stderr).into_owned();
    assert!(why.contains("not in the same Git repository"), "{why}");

    // The dry run (the default) says what would move and moves nothing.
    let plan = json(&data, &["projects", "adopt", &feature, &main]);
    assert_eq!(plan["rows"]["agents"], 2, "{plan}");
    assert_eq!(plan["rows"]["messages"], 2);
    assert_eq!(plan["rows"]["messages_with_attachment_paths"], 1);
    assert_eq!(plan["rows"]["file_reservations"], 1);
    assert_eq!(plan["rows"]["webhooks"], 1);
    assert_eq!(plan["former_slugs"], serde_json::json!([old]));
    assert!(plan["git_common_dir"].as_str().unwrap_or_default().ends_with("/repo/.git"), "{plan}");
    stop(server.take());
    assert_eq!(count(&data, "SELECT COUNT(*) FROM projects"), 3, "nothing moved");
    let files_before = committed(&data, &format!("projects/{old}"));
    assert!(!files_before.is_empty());

    let adopted = json(&data, &["projects", "adopt", &feature, &main, "--apply"]);
    assert_eq!(adopted["rows"]["project"], 1, "{adopted}");
    let target: i64 = database(&data)
        .query_row("SELECT id FROM projects WHERE slug = ?1", [&new], |r| r.get(0))
        .expect("target");
    for table in ["agents", "messages", "file_reservations", "webhooks"] {
        let sql = format!(
            "SELECT COUNT(*) FROM {table} WHERE project_id != {target} AND project_id IN \
             (SELECT id FROM projects WHERE human_key != '{elsewhere}')"
        );
        assert_eq!(count(&data, &sql), 0, "{table} all under the target");
    }
    assert_eq!(
        count(&data, &format!("SELECT COUNT(*) FROM agents WHERE project_id = {target}")),
        4
    );
    assert_eq!(count(&data, "SELECT COUNT(*) FROM projects"), 2, "the source is gone");
    let deliveries = format!(
        "SELECT COUNT(*) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id \
         WHERE w.project_id = {target}"
    );
    assert_eq!(count(&data, &deliveries), 1, "the webhook's queued delivery went with it");

    // The archive: the old directory's files under the new one, in one commit.
    assert!(committed(&data, &format!("projects/{old}")).is_empty(), "nothing left under {old}");
    let moved = committed(&data, &format!("projects/{new}"));
    for agent in ["GreenCastle", "RedStone"] {
        let profile = format!("projects/{new}/agents/{agent}/profile.json");
        assert!(moved.contains(&profile), "{profile} in {moved:?}");
    }
    assert!(moved.iter().any(|p| p.contains("/file_reservations/id-")), "{moved:?}");
    assert!(moved.contains(&webp(&new)), "{moved:?}");
    let archive = data.join("archive");
    assert!(archive.join(webp(&new)).is_file(), "the image in the work tree");
    assert!(!archive.join("projects").join(&old).exists(), "the old directory is gone");
    let manifest = git(
        &archive,
        &["show", &format!("HEAD:projects/{new}/attachments/_manifests/{sha1}.json")],
    );
    assert!(manifest.contains(&webp(&new)) && !manifest.contains(&webp(&old)), "{manifest}");
    let linking =
        format!("SELECT COUNT(*) FROM messages WHERE instr(body_md, '{}') > 0", webp(&new));
    assert_eq!(count(&data, &linking), 1, "the body links to the image's new place");
    let aliases = git(&archive, &["show", &format!("HEAD:projects/{new}/aliases.json")]);
    let aliases: Value = serde_json::from_str(&aliases).expect("aliases JSON");
    assert_eq!(aliases, serde_json::json!({"former_slugs": [old]}));
    let subject = git(&archive, &["log", "-1", "--format=%s"]);
    assert_eq!(subject.trim(), format!("chore: adopt project {old} into {new}"));
    let threads = format!("projects/{new}/messages/threads/");
    let digest = moved.iter().find(|p| p.starts_with(&threads) && p.ends_with("/T-1.md"));
    let digest = git(&archive, &["show", &format!("HEAD:{}", digest.expect("the digest"))]);
    let entries = digest.matches("[View canonical]").count();
    assert_eq!(entries, 2, "both projects' messages in one digest: {digest}");
    let verified = run(&data, &["archive", "verify"], "");
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));
    let listed = json(&data, &["doctor", "backups"]);
    assert_eq!(listed[0]["reason"], "adopt", "backed up first: {listed}");

    // The adopted agents' mail is read in the target project.
    let (server, url) = start_with(&data, &[("CONTACT_ENFORCEMENT_ENABLED", "false")]);
    let server = KillOnDrop(Some(server));
    SendCall::new(&main, "RedStone", "BlueLake", "merged").ok_at(&url).await;
    let inbox = ok(&data, &["mail", "inbox", "--project", &main, "--agent", "RedStone"]);
    assert!(inbox.contains("status"), "{inbox}");
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_agent_name_aborts_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (main, feature) = repository_with_worktree(dir.path());
    let data = dir.path().join("data");
    let (server, url) = start_with(&data, &[("CONTACT_ENFORCEMENT_ENABLED", "false")]);
    let server = KillOnDrop(Some(server));
    for (project, agents) in
        [(&main, ["BlueLake", "SilentFox"]), (&feature, ["BlueLake", "RedStone"])]
    {
        ProjectCall::new(project).ok_at(&url).await;
        for name in agents {
            RegisterCall::new(project, name).ok_at(&url).await;
        }
        SendCall::new(project, agents[0], agents[1], "hello").ok_at(&url).await;
    }
    stop(server.take());
    let head = git(&data.join("archive"), &["rev-parse", "HEAD"]);

    let clash = run(&data, &["projects", "adopt", &feature, &main, "--apply"], "");
    assert_eq!(clash.status.code(), Some(1));
    let why = String::from_utf8_lossy(&clash.stderr).into_owned();
    assert!(why.contains("BlueLake") && why.contains("nothing was changed"), "{why}");
    assert_eq!(count(&data, "SELECT COUNT(*) FROM projects"), 2);
    assert_eq!(git(&data.join("archive"), &["rev-parse", "HEAD"]), head, "no commit");
    assert!(!data.join("backups").exists(), "refused before the backup");
}
