//! The Git commit guard end to end: `mailroom guard install` in a real repository, then real
//! `git commit` / `git push` runs whose hooks exec the built binary against reservation
//! files written as the archive writes them (docs/compat/archive.md §6), and against a running
//! server whose archive lags behind a send storm.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{KillOnDrop, mailroom, start_with, stop};
use mailroom_testkit::{
    GUARD_VARIABLES, PolicyCall, ProjectCall, RegisterCall, ReleaseCall, ReserveCall, git,
    git_command, tool_at,
};
use serde_json::{Value, json};

/// A code repository with the guard installed and a data directory holding the project's
/// reservation files.
struct Setup {
    _temp: tempfile::TempDir,
    repo: PathBuf,
    reservations: PathBuf,
}

const PROJECT: &str = "/abs/guarded";

impl Setup {
    fn new() -> Self {
        let temp = tempfile::tempdir().expect("tempdir");
        let repo = temp.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir repo");
        git(&repo, &["init", "-q", "-b", "main"]);
        let data = temp.path().join("data");
        let reservations = data.join("archive/projects/abs-guarded/file_reservations");
        std::fs::create_dir_all(&reservations).expect("mkdir reservations");
        Self { _temp: temp, repo, reservations }
    }

    fn data_dir(&self) -> PathBuf {
        self.repo.parent().expect("parent").join("data")
    }

    fn install(&self, extra: &[&str]) -> Output {
        let output = guard_command(&["install", PROJECT])
            .arg(&self.repo)
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(extra)
            .env("WORKTREES_ENABLED", "1")
            .output()
            .expect("guard install");
        assert!(output.status.success(), "install: {}", text(&output.stderr));
        output
    }

    /// Writes a reservation under both archive names, as the reference does.
    fn reserve(&self, id: i64, agent: &str, pattern: &str, changes: Value) {
        let mut record = json!({
            "id": id, "project": PROJECT, "agent": agent, "path_pattern": pattern,
            "exclusive": true, "reason": "editing", "created_ts": "2026-01-01T10:00:00+00:00",
            "expires_ts": "2099-01-01T10:00:00+00:00", "released_ts": null,
        });
        for (key, value) in changes.as_object().expect("object") {
            record[key] = value.clone();
        }
        let bytes = serde_json::to_vec_pretty(&record).expect("json");
        for name in [format!("digest-{id}.json"), format!("id-{id}.json")] {
            std::fs::write(self.reservations.join(name), &bytes).expect("write reservation");
        }
    }

    /// Stages `path` with new content and commits as `agent`.
    fn commit(&self, agent: &str, path: &str, env: &[(&str, &str)]) -> Output {
        commit_file(&self.repo, Some(agent), path, env)
    }

    fn head_subject(&self) -> String {
        git(&self.repo, &["log", "-1", "--format=%s"]).trim().to_string()
    }

    fn hooks(&self) -> PathBuf {
        self.repo.join(".git/hooks")
    }
}

/// Appends a line to `path` in `repo`, stages it and commits with the gate on, as `agent`
/// (AGENT_NAME unset when `None`).
fn commit_file(repo: &Path, agent: Option<&str>, path: &str, env: &[(&str, &str)]) -> Output {
    let file = repo.join(path);
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    let previous = std::fs::read_to_string(&file).unwrap_or_default();
    let author = agent.unwrap_or("nobody");
    std::fs::write(&file, format!("{previous}edit by {author}\n")).expect("write");
    git(repo, &["add", path]);
    let mut command = git_command(repo, &["commit", "-q", "-m", &format!("{author}: {path}")]);
    command.env("WORKTREES_ENABLED", "1");
    if let Some(agent) = agent {
        command.env("AGENT_NAME", agent);
    }
    command.envs(env.iter().copied()).output().expect("git commit")
}

/// `mailroom guard <args>` with a clean guard environment.
fn guard_command(args: &[&str]) -> Command {
    let mut command = mailroom();
    command.arg("guard").args(args);
    for name in GUARD_VARIABLES {
        command.env_remove(name);
    }
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn another_agents_commit_is_refused_and_the_holder_commits_freely() {
    let setup = Setup::new();
    let installed = setup.install(&[]);
    assert!(text(&installed.stdout).contains("pre-commit"), "{}", text(&installed.stdout));
    setup.reserve(1, "GreenCastle", "src/**", json!({}));

    let refused = setup.commit("BlueLake", "src/app.rs", &[]);
    assert!(!refused.status.success(), "the commit must be refused");
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("Exclusive file_reservation conflicts detected"), "{stderr}");
    assert!(
        stderr.contains(
            "- src/app.rs matches src/** (holder: GreenCastle, expires 2099-01-01T10:00:00+00:00)"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("- src/app.rs").count(), 1, "the two copies count once");

    let holder = setup.commit("GreenCastle", "src/app.rs", &[]);
    assert!(holder.status.success(), "holder: {}", text(&holder.stderr));
    assert_eq!(setup.head_subject(), "GreenCastle: src/app.rs");

    let elsewhere = setup.commit("BlueLake", "docs/readme.md", &[]);
    assert!(elsewhere.status.success(), "unreserved path: {}", text(&elsewhere.stderr));
}

#[test]
fn shared_expired_and_released_reservations_do_not_block() {
    let setup = Setup::new();
    setup.install(&[]);
    setup.reserve(1, "GreenCastle", "shared/**", json!({"exclusive": false}));
    setup.reserve(2, "GreenCastle", "old/**", json!({"expires_ts": "2020-01-01T00:00:00+00:00"}));
    setup.reserve(3, "GreenCastle", "done/**", json!({"released_ts": "2026-01-01T11:00:00+00:00"}));
    setup.reserve(4, "GreenCastle", "tool://deploy", json!({}));
    for path in ["shared/a.txt", "old/a.txt", "done/a.txt"] {
        let output = setup.commit("BlueLake", path, &[]);
        assert!(output.status.success(), "{path}: {}", text(&output.stderr));
    }
}

#[test]
fn bypass_advisory_mode_and_the_gate() {
    let setup = Setup::new();
    setup.install(&[]);
    setup.reserve(1, "GreenCastle", "*.lock", json!({}));

    let bypassed = setup.commit("BlueLake", "Cargo.lock", &[("AGENT_MAIL_BYPASS", "1")]);
    assert!(bypassed.status.success(), "bypass: {}", text(&bypassed.stderr));
    assert!(text(&bypassed.stderr).contains("bypass enabled via AGENT_MAIL_BYPASS=1"));

    let warned = setup.commit("BlueLake", "Cargo.lock", &[("AGENT_MAIL_GUARD_MODE", "warn")]);
    assert!(warned.status.success(), "advisory: {}", text(&warned.stderr));
    assert!(text(&warned.stderr).contains("- Cargo.lock matches *.lock (holder: GreenCastle"));

    let gated_off = setup.commit("BlueLake", "Cargo.lock", &[("WORKTREES_ENABLED", "0")]);
    assert!(gated_off.status.success(), "gate off: {}", text(&gated_off.stderr));
}

#[test]
fn an_existing_hook_keeps_running_and_is_restored_on_uninstall() {
    let setup = Setup::new();
    let user_hook = setup.hooks().join("pre-commit");
    let marker = setup.repo.join(".git/user-hook-ran");
    let script = format!("#!/bin/sh\necho ran >> '{}'\n", marker.display());
    std::fs::write(&user_hook, &script).expect("write hook");
    std::fs::set_permissions(&user_hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    setup.install(&[]);
    setup.reserve(1, "GreenCastle", "src/**", json!({}));

    let allowed = setup.commit("BlueLake", "README.md", &[]);
    assert!(allowed.status.success(), "{}", text(&allowed.stderr));
    assert_eq!(std::fs::read_to_string(&marker).expect("user hook ran"), "ran\n");
    let refused = setup.commit("BlueLake", "src/x.rs", &[]);
    assert!(!refused.status.success());
    assert_eq!(
        std::fs::read_to_string(&marker).expect("marker"),
        "ran\n",
        "chain stops at failure"
    );

    let status = guard_command(&["status"]).arg(&setup.repo).output().expect("status");
    let listed = text(&status.stdout);
    assert!(listed.contains("pre-commit: installed (chains pre-commit.orig)"), "{listed}");
    assert!(listed.contains("pre-push: not installed"), "{listed}");

    let removed = guard_command(&["uninstall"]).arg(&setup.repo).output().expect("uninstall");
    assert!(removed.status.success());
    assert!(text(&removed.stdout).contains("removed the guard"));
    assert_eq!(std::fs::read_to_string(&user_hook).expect("restored"), script);
    assert!(!setup.hooks().join("pre-commit.orig").exists());
    assert!(!setup.hooks().join("hooks.d/pre-commit/50-agent-mail").exists());
}

#[test]
fn install_is_a_no_op_while_the_gate_is_off() {
    let setup = Setup::new();
    let output = guard_command(&["install", PROJECT]).arg(&setup.repo).output().expect("install");
    assert!(output.status.success());
    assert!(text(&output.stderr).contains("WORKTREES_ENABLED"));
    assert!(!setup.hooks().join("pre-commit").exists());
    assert!(!setup.hooks().join("hooks.d").exists());
}

#[test]
fn a_push_of_a_commit_touching_a_reserved_file_is_refused() {
    let setup = Setup::new();
    let remote = setup.repo.parent().expect("parent").join("remote.git");
    git(setup.repo.parent().expect("parent"), &["init", "-q", "--bare", "remote.git"]);
    git(&setup.repo, &["remote", "add", "origin", &remote.to_string_lossy()]);
    git(&setup.repo, &["commit", "-q", "--allow-empty", "-m", "root"]);
    git(&setup.repo, &["push", "-q", "origin", "main"]);
    setup.install(&["--prepush"]);
    // Committed before the reservation existed, so only the push can catch it.
    let committed = setup.commit("BlueLake", "api/schema.sql", &[]);
    assert!(committed.status.success(), "{}", text(&committed.stderr));
    setup.reserve(1, "GreenCastle", "api/", json!({}));

    let mut push = git_command(&setup.repo, &["push", "origin", "main"]);
    push.env("AGENT_NAME", "BlueLake").env("WORKTREES_ENABLED", "1");
    let refused = push.output().expect("push");
    assert!(!refused.status.success(), "the push must be refused");
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("- api/schema.sql matches api/ (holder: GreenCastle"), "{stderr}");

    let mut push = git_command(&setup.repo, &["push", "-q", "origin", "main"]);
    push.env("AGENT_NAME", "GreenCastle").env("WORKTREES_ENABLED", "1");
    let holder = push.output().expect("push");
    assert!(holder.status.success(), "holder pushes: {}", text(&holder.stderr));
}

#[test]
fn check_reads_nul_separated_paths_from_stdin() {
    let setup = Setup::new();
    setup.reserve(1, "GreenCastle", "src/**", json!({}));
    let run = |paths: &[u8], extra: &[&str]| {
        let mut child = guard_command(&["check", "--stdin-nul", "--reservations-dir"])
            .arg(&setup.reservations)
            .args(extra)
            .env("WORKTREES_ENABLED", "1")
            .env("AGENT_NAME", "BlueLake")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), paths).expect("write");
        child.wait_with_output().expect("wait")
    };
    let blocked = run(b"README.md\0src/lib.rs\0", &[]);
    assert_eq!(blocked.status.code(), Some(1));
    assert!(text(&blocked.stderr).contains("- src/lib.rs matches src/**"));
    assert_eq!(run(b"README.md\0", &[]).status.code(), Some(0));
    assert_eq!(run(b"src/lib.rs\0", &["--advisory"]).status.code(), Some(0));
}

#[test]
fn core_ignorecase_makes_matching_case_insensitive() {
    let setup = Setup::new();
    setup.install(&[]);
    setup.reserve(1, "GreenCastle", "Docs/**", json!({}));
    let allowed = setup.commit("BlueLake", "docs/a.md", &[]);
    assert!(allowed.status.success(), "case-sensitive: {}", text(&allowed.stderr));
    git(&setup.repo, &["config", "core.ignorecase", "true"]);
    let refused = setup.commit("BlueLake", "docs/a.md", &[]);
    assert!(!refused.status.success(), "core.ignorecase=true folds case");
    assert!(text(&refused.stderr).contains("- docs/a.md matches Docs/** (holder: GreenCastle"));
}

/// A root commit holding `src/reserved.py` and `other.txt`, then two branches from it:
/// `holder`, where GreenCastle (holding an exclusive reservation on src/reserved.py) changed
/// both files, and `main`, where BlueLake changed other.txt differently. Leaves `main`
/// checked out; `install` is run after the root commit.
fn diverge_from_the_holder(setup: &Setup, install: &[&str]) {
    std::fs::create_dir_all(setup.repo.join("src")).expect("mkdir");
    for path in ["src/reserved.py", "other.txt"] {
        std::fs::write(setup.repo.join(path), "base\n").expect("write");
    }
    git(&setup.repo, &["add", "-A"]);
    git(&setup.repo, &["commit", "-q", "-m", "root"]);
    setup.install(install);
    setup.reserve(1, "GreenCastle", "src/reserved.py", json!({}));
    git(&setup.repo, &["checkout", "-q", "-b", "holder"]);
    for path in ["src/reserved.py", "other.txt"] {
        let output = setup.commit("GreenCastle", path, &[]);
        assert!(output.status.success(), "holder commits {path}: {}", text(&output.stderr));
    }
    git(&setup.repo, &["checkout", "-q", "main"]);
    let output = setup.commit("BlueLake", "other.txt", &[]);
    assert!(output.status.success(), "BlueLake commits other.txt: {}", text(&output.stderr));
}

/// Merges `holder` into `main`, which stops on other.txt's conflict, and stages a resolution
/// keeping both sides' lines.
fn merge_the_holder_with_a_conflict(setup: &Setup) {
    let merge = git_command(&setup.repo, &["merge", "-q", "holder"]).output().expect("merge");
    assert!(!merge.status.success(), "other.txt must conflict");
    let resolved = "base\nedit by BlueLake\nedit by GreenCastle\n";
    std::fs::write(setup.repo.join("other.txt"), resolved).expect("resolve");
    git(&setup.repo, &["add", "other.txt"]);
}

/// Commits the merge in progress as `agent`.
fn commit_the_merge(setup: &Setup, agent: &str, extra: &[&str]) -> Output {
    git_command(&setup.repo, &["commit", "-q", "--no-edit"])
        .args(extra)
        .env("AGENT_NAME", agent)
        .env("WORKTREES_ENABLED", "1")
        .output()
        .expect("commit merge")
}

#[test]
fn a_merge_bringing_the_holders_own_change_is_allowed() {
    let setup = Setup::new();
    diverge_from_the_holder(&setup, &[]);
    merge_the_holder_with_a_conflict(&setup);
    let merged = commit_the_merge(&setup, "BlueLake", &[]);
    assert!(
        merged.status.success(),
        "the merge brings the holder's change: {}",
        text(&merged.stderr)
    );
    let parents = git(&setup.repo, &["log", "-1", "--format=%P"]);
    assert_eq!(parents.split_whitespace().count(), 2, "a merge commit was made");
}

#[test]
fn a_merge_resolution_editing_a_reserved_file_is_refused() {
    let setup = Setup::new();
    diverge_from_the_holder(&setup, &[]);
    merge_the_holder_with_a_conflict(&setup);
    let reserved = setup.repo.join("src/reserved.py");
    let both = format!("{}edit while merging\n", std::fs::read_to_string(&reserved).expect("read"));
    std::fs::write(&reserved, both).expect("write");
    git(&setup.repo, &["add", "src/reserved.py"]);
    let refused = commit_the_merge(&setup, "BlueLake", &[]);
    assert!(!refused.status.success(), "the resolution itself changed the reserved file");
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("- src/reserved.py matches src/reserved.py (holder: GreenCastle"),
        "{stderr}"
    );
    assert!(!stderr.contains("- other.txt"), "{stderr}");
}

#[test]
fn a_pushed_merge_counts_only_what_its_resolution_changed() {
    let setup = Setup::new();
    let parent = setup.repo.parent().expect("parent").to_path_buf();
    git(&parent, &["init", "-q", "--bare", "remote.git"]);
    git(&setup.repo, &["remote", "add", "origin", &parent.join("remote.git").to_string_lossy()]);
    diverge_from_the_holder(&setup, &["--prepush"]);
    let push = |agent: &str, branch: &str| {
        git_command(&setup.repo, &["push", "-q", "origin", branch])
            .env("AGENT_NAME", agent)
            .env("WORKTREES_ENABLED", "1")
            .output()
            .expect("push")
    };
    let holder = push("GreenCastle", "holder");
    assert!(holder.status.success(), "the holder pushes: {}", text(&holder.stderr));

    // Committed past the pre-commit hook, so only the push can catch the resolution's edit.
    merge_the_holder_with_a_conflict(&setup);
    std::fs::write(setup.repo.join("src/reserved.py"), "rewritten while merging\n").expect("w");
    git(&setup.repo, &["add", "src/reserved.py"]);
    let merged = commit_the_merge(&setup, "BlueLake", &["--no-verify"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let refused = push("BlueLake", "main");
    assert!(!refused.status.success(), "the pushed merge changed the reserved file itself");
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("- src/reserved.py matches src/reserved.py"), "{stderr}");

    git(&setup.repo, &["reset", "-q", "--hard", "HEAD~1"]);
    merge_the_holder_with_a_conflict(&setup);
    let merged = commit_the_merge(&setup, "BlueLake", &[]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let allowed = push("BlueLake", "main");
    assert!(
        allowed.status.success(),
        "the merge brings the holder's change: {}",
        text(&allowed.stderr)
    );
}

#[test]
fn install_refuses_a_project_the_server_does_not_know() {
    let setup = Setup::new();
    let install = |project: &str, data: &Path| {
        guard_command(&["install", project])
            .arg(&setup.repo)
            .arg("--data-dir")
            .arg(data)
            .env("WORKTREES_ENABLED", "1")
            .output()
            .expect("guard install")
    };
    let unknown = install("/tmp/no-such-project", &setup.data_dir());
    assert!(!unknown.status.success(), "an unknown project is refused");
    let stderr = text(&unknown.stderr);
    assert!(stderr.contains("'/tmp/no-such-project'"), "{stderr}");
    assert!(stderr.contains("nothing installed"), "{stderr}");

    let typo = install("/abs/guardd", &setup.data_dir());
    assert!(!typo.status.success(), "a mistyped project is refused");
    let stderr = text(&typo.stderr);
    assert!(stderr.contains("Did you mean: 'abs-guarded'"), "{stderr}");

    let empty = setup.repo.parent().expect("parent").join("empty-data");
    let nowhere = install(PROJECT, &empty);
    assert!(!nowhere.status.success(), "no database and no archive: nothing to check against");
    let stderr = text(&nowhere.stderr);
    assert!(stderr.contains("neither a database"), "{stderr}");
    assert!(stderr.contains(&empty.to_string_lossy().into_owned()), "{stderr}");

    assert!(!setup.hooks().join("pre-commit").exists(), "nothing installed");
    assert!(!setup.hooks().join("hooks.d").exists(), "nothing installed");
}

/// The database knows projects the archive has no directory for yet (ensure_project writes
/// no file): install finds them there, and lists their human keys as near matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_finds_projects_in_the_database_and_lists_near_matches() {
    let setup = Setup::new();
    let data = setup.data_dir();
    let project = setup.repo.parent().expect("parent").join("backend-service");
    let project = project.to_string_lossy().into_owned();
    let (server, url) = start_with(&data, &[]);
    let server = KillOnDrop(Some(server));
    ProjectCall::new(&project).ok_at(&url).await;
    stop(server.take());

    let mistyped = project.replace("service", "servce");
    let typo = guard_command(&["install", &mistyped])
        .arg(&setup.repo)
        .arg("--data-dir")
        .arg(&data)
        .env("WORKTREES_ENABLED", "1")
        .output()
        .expect("guard install");
    assert!(!typo.status.success(), "a mistyped project is refused");
    let stderr = text(&typo.stderr);
    assert!(stderr.contains(&format!("'{mistyped}'")), "{stderr}");
    assert!(stderr.contains(&format!("'{project}'")), "the near match is listed: {stderr}");
    assert!(!setup.hooks().join("hooks.d").exists(), "nothing installed");

    let installed = guard_command(&["install", &project])
        .arg(&setup.repo)
        .arg("--data-dir")
        .arg(&data)
        .env("WORKTREES_ENABLED", "1")
        .output()
        .expect("guard install");
    assert!(installed.status.success(), "known to the database: {}", text(&installed.stderr));
}

#[test]
fn a_hook_reached_from_another_repository_says_so_and_does_not_refuse() {
    let setup = Setup::new();
    setup.install(&[]);
    setup.reserve(1, "GreenCastle", "src/**", json!({}));
    let other = setup.repo.parent().expect("parent").join("other");
    std::fs::create_dir(&other).expect("mkdir other");
    git(&other, &["init", "-q", "-b", "main"]);
    git(&other, &["config", "core.hooksPath", &setup.hooks().to_string_lossy()]);

    let elsewhere = commit_file(&other, Some("BlueLake"), "src/app.rs", &[]);
    let stderr = text(&elsewhere.stderr);
    assert!(elsewhere.status.success(), "not the guarded repository: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "said once: {stderr}");
    assert!(stderr.contains("not checking"), "{stderr}");

    let guarded = setup.commit("BlueLake", "src/app.rs", &[]);
    assert!(!guarded.status.success(), "the guarded repository is still checked");
}

#[test]
fn a_hook_without_an_agent_name_says_so_and_does_not_refuse() {
    let setup = Setup::new();
    let parent = setup.repo.parent().expect("parent").to_path_buf();
    git(&parent, &["init", "-q", "--bare", "remote.git"]);
    git(&setup.repo, &["remote", "add", "origin", &parent.join("remote.git").to_string_lossy()]);
    setup.install(&["--prepush"]);
    setup.reserve(1, "GreenCastle", "src/**", json!({}));

    let committed = commit_file(&setup.repo, None, "src/app.rs", &[]);
    let stderr = text(&committed.stderr);
    assert!(committed.status.success(), "no agent name: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "said once: {stderr}");
    assert!(stderr.contains("AGENT_NAME is not set"), "{stderr}");

    let pushed = git_command(&setup.repo, &["push", "-q", "origin", "main"])
        .env("WORKTREES_ENABLED", "1")
        .output()
        .expect("push");
    let stderr = text(&pushed.stderr);
    assert!(pushed.status.success(), "no agent name: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "said once: {stderr}");
    assert!(stderr.contains("[pre-push]") && stderr.contains("AGENT_NAME is not set"), "{stderr}");
}

/// Rounds of reserve → rival commit → release → rival commit in the live test.
const LIVE_ROUNDS: usize = 12;

/// Sends mail between two agents over REST until told to stop; counts acknowledged sends.
async fn send_storm(url: String, slug: String, stop: Arc<AtomicBool>, sent: Arc<AtomicUsize>) {
    let client = reqwest::Client::new();
    while !stop.load(Ordering::Relaxed) {
        let body = json!({"project_slug": slug, "sender_name": "RedFox",
                          "recipient_names": ["GreenCastle"], "subject": "storm",
                          "body_md": "keeping the archive busy"});
        let response =
            client.post(format!("{url}/api/message/send")).json(&body).send().await.expect("send");
        assert!(response.status().is_success(), "storm send: {}", response.status());
        sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// Commits `path` as `agent` on a blocking thread (the hook runs the built binary).
async fn commit_as(repo: &Path, agent: &'static str, path: String) -> Output {
    let repo = repo.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let file = repo.join(&path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        let previous = std::fs::read_to_string(&file).unwrap_or_default();
        std::fs::write(&file, format!("{previous}edit by {agent}\n")).expect("write");
        git(&repo, &["add", &path]);
        git_command(&repo, &["commit", "-q", "-m", &format!("{agent}: {path}")])
            .env("AGENT_NAME", agent)
            .env("WORKTREES_ENABLED", "1")
            .output()
            .expect("git commit")
    })
    .await
    .expect("commit thread")
}

/// A reservation tool's answer is what the guard enforces from that moment, however far the
/// archive lags: with a send storm holding the archive's commits back (a three-second
/// window), every rival commit made right after a grant is refused, and every one made right
/// after the release is allowed.
/// A code repository whose project a running server (started with `env`) knows, with
/// BlueLake, GreenCastle (open to all) and RedFox registered and the guard installed by the
/// install_precommit_guard tool.
struct GuardedServer {
    temp: tempfile::TempDir,
    repo: PathBuf,
    project: String,
    slug: String,
    url: String,
    server: KillOnDrop,
}

impl GuardedServer {
    async fn start(env: &[(&str, &str)]) -> Self {
        let temp = tempfile::tempdir().expect("tempdir");
        let repo = temp.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir repo");
        git(&repo, &["init", "-q", "-b", "main"]);
        let project = repo.to_string_lossy().into_owned();
        let env: Vec<_> =
            [("WORKTREES_ENABLED", "1")].into_iter().chain(env.iter().copied()).collect();
        let (server, url) = start_with(&temp.path().join("data"), &env);
        let server = KillOnDrop(Some(server));
        let ensured = ProjectCall::new(&project).ok_at(&url).await;
        let slug = ensured["slug"].as_str().expect("slug").to_string();
        for name in ["BlueLake", "GreenCastle", "RedFox"] {
            RegisterCall::new(&project, name).program("test").model("m").ok_at(&url).await;
        }
        PolicyCall::new(&project, "GreenCastle", "open").ok_at(&url).await;
        let install = json!({"project_key": project, "code_repo_path": project});
        let installed = tool_at(&url, "install_precommit_guard", install).await;
        let hook = installed["hook"].as_str();
        assert!(hook.is_some_and(|h| h.ends_with("pre-commit")), "{installed}");
        Self { temp, repo, project, slug, url, server }
    }

    fn data(&self) -> PathBuf {
        self.temp.path().join("data")
    }

    /// Stops the server gracefully (its files stay until this is dropped).
    fn stop(&mut self) {
        if let Some(server) = self.server.0.take() {
            stop(server);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_enforces_each_answer_at_once_while_the_archive_lags() {
    let guarded = GuardedServer::start(&[("ARCHIVE_COMMIT_WINDOW_MS", "3000")]).await;
    enforced_at_once(guarded).await;
}

/// As above with the server on PostgreSQL: the hooks name the data directory, not the URL
/// (which may carry a password), and the check finds `DATABASE_URL` in the `.env` beside it,
/// as the commands agents run do; the committing agent's environment has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgresql_the_guard_reads_the_database_the_data_directory_names() {
    let database_url = mailroom_testkit::postgres_server::fresh_database_url().await;
    let env = [("ARCHIVE_COMMIT_WINDOW_MS", "3000"), ("DATABASE_URL", database_url.as_str())];
    let guarded = GuardedServer::start(&env).await;
    let plugin = guarded.repo.join(".git/hooks/hooks.d/pre-commit/50-agent-mail");
    let hook = std::fs::read_to_string(plugin).expect("the plugin");
    assert!(hook.contains("--data-dir") && !hook.contains("postgres"), "{hook}");
    let operator_env = guarded.temp.path().join(".env");
    std::fs::write(&operator_env, format!("DATABASE_URL={database_url}\n")).expect(".env");
    enforced_at_once(guarded).await;
}

/// Rival commits right after each grant are refused and right after each release allowed,
/// while a send storm keeps the archive's files behind.
async fn enforced_at_once(mut guarded: GuardedServer) {
    let GuardedServer { repo, project, slug, url, .. } = &guarded;
    let data = guarded.data();

    let (halt, sent) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let storm: Vec<_> = (0..4)
        .map(|_| {
            let task = send_storm(url.clone(), slug.clone(), halt.clone(), sent.clone());
            tokio::spawn(task)
        })
        .collect();
    while sent.load(Ordering::Relaxed) < 50 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let reservations = data.join("archive/projects").join(slug).join("file_reservations");
    let mut not_yet_archived = 0;
    for round in 0..LIVE_ROUNDS {
        let path = format!("src/module_{round}.rs");
        let reserve = ReserveCall::new(project, "BlueLake", &[&path]).ttl(3600).exclusive(true);
        let granted = reserve.reason("live").ok_at(url).await;
        let id = granted["granted"][0]["id"].as_i64().expect("granted id");
        if !reservations.join(format!("id-{id}.json")).exists() {
            not_yet_archived += 1;
        }
        let refused = commit_as(repo, "GreenCastle", path.clone()).await;
        assert!(!refused.status.success(), "round {round}: the rival's commit must be refused");
        let stderr = text(&refused.stderr);
        assert!(stderr.contains(&format!("- {path} matches {path} (holder: BlueLake")), "{stderr}");

        let released = ReleaseCall::new(project, "BlueLake").paths(&[&path]).ok_at(url).await;
        assert_eq!(released["released"], 1, "round {round}: {released}");
        let allowed = commit_as(repo, "GreenCastle", path.clone()).await;
        assert!(allowed.status.success(), "round {round}: {}", text(&allowed.stderr));
    }
    halt.store(true, Ordering::Relaxed);
    for task in storm {
        task.await.expect("storm task");
    }
    // The archive's files lagged in at least one round, or the test proved nothing about it.
    assert!(not_yet_archived > 0, "the archive kept up in every round; nothing was tested");
    guarded.stop();
    // Once stopped, the archive holds every reservation as released.
    let last = std::fs::read_to_string(reservations.join(format!("id-{LIVE_ROUNDS}.json")));
    let record: Value = serde_json::from_str(&last.expect("archived")).expect("json");
    assert!(record["released_ts"].is_string(), "{record}");
}

/// A reservation an earlier version stored with a year past 9999 still blocks a rival's
/// commit (the guard once failed to read it, fell back to the archive's files, which never got
/// it, and let the commit through), and its holder can still release it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_stored_past_the_year_9999_still_blocks_and_releases() {
    let mut guarded = GuardedServer::start(&[]).await;
    let GuardedServer { repo, project, url, .. } = &guarded;
    let data = guarded.data();
    ReserveCall::new(project, "BlueLake", &["src/held.rs"]).ok_at(url).await;
    rusqlite::Connection::open(data.join("mailroom.sqlite3"))
        .and_then(|db| {
            db.execute(
                "UPDATE file_reservations SET expires_ts = '33715-03-01 10:00:00.000000'",
                [],
            )
        })
        .expect("an earlier version's row");

    let refused = commit_as(repo, "GreenCastle", "src/held.rs".to_string()).await;
    assert!(!refused.status.success(), "the rival's commit must be refused");
    assert!(text(&refused.stderr).contains("(holder: BlueLake"), "{}", text(&refused.stderr));
    assert_eq!(ReleaseCall::new(project, "BlueLake").ok_at(url).await["released"], 1);
    let allowed = commit_as(repo, "GreenCastle", "src/held.rs".to_string()).await;
    assert!(allowed.status.success(), "{}", text(&allowed.stderr));
    guarded.stop();
}
