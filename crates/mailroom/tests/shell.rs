//! The shell commands (mail send/inbox/read/ack/reply, agents list, contacts, list-projects,
//! list-acks, acks, file-reservations, migrate) against a live server and, with none, on the
//! data directory itself: the same answers either way, in tables or JSON.

mod common;

use std::path::Path;

use common::{KillOnDrop, json, mailroom, ok, run, start_with, stop};
use mailroom_testkit::{ProjectCall, RegisterCall, ReserveCall};
use serde_json::Value;

const PROJECT: &str = "/work/shell";

/// A server on a fresh data directory under `dir` with `env`, and `agents` registered in
/// PROJECT; the data directory and the server's URL.
async fn server_with(
    dir: &Path,
    env: &[(&str, &str)],
    agents: &[&str],
) -> (std::path::PathBuf, KillOnDrop, String) {
    let data = dir.join("data");
    let (server, url) = start_with(&data, env);
    ProjectCall::new(PROJECT).ok_at(&url).await;
    for name in agents {
        RegisterCall::new(PROJECT, name).ok_at(&url).await;
    }
    (data, KillOnDrop(Some(server)), url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_from_a_shell_with_and_without_a_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = [("CONTACT_ENFORCEMENT_ENABLED", "false")];
    let (data, server, url) = server_with(dir.path(), &env, &["BlueLake", "GreenCastle"]).await;
    let blue = ["--project", PROJECT, "--agent", "BlueLake"];
    let green = ["--project", PROJECT, "--agent", "GreenCastle"];

    let sent = run(
        &data,
        &[
            &["mail", "send"][..],
            &blue,
            &["--to", "GreenCastle", "--subject", "plan", "--ack-required"],
        ]
        .concat(),
        "the **body**",
    );
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    assert_eq!(
        String::from_utf8_lossy(&sent.stdout),
        format!("sent message 1 to GreenCastle in {PROJECT}\n")
    );

    let inbox = ok(&data, &[&["mail", "inbox"][..], &green].concat());
    assert!(
        inbox.starts_with("id  sent") && inbox.contains("BlueLake") && inbox.contains("plan"),
        "{inbox}"
    );
    let agents = json(&data, &["agents", "list", "--project", PROJECT]);
    let unread = |agents: &Value| {
        agents["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .find(|a| a["name"] == "GreenCastle")
            .map(|a| a["unread_count"].clone())
    };
    assert_eq!(unread(&agents), Some(Value::from(1)), "listing marks nothing read");
    let message = ok(&data, &[&["mail", "read", "1"][..], &green].concat());
    assert!(message.contains("subject:    plan") && message.contains("the **body**"), "{message}");
    assert_eq!(
        unread(&json(&data, &["agents", "list", "--project", PROJECT])),
        Some(Value::from(1))
    );
    ok(&data, &[&["mail", "read", "1", "--mark-read"][..], &green].concat());
    assert_eq!(
        unread(&json(&data, &["agents", "list", "--project", PROJECT])),
        Some(Value::from(0))
    );

    let pending = json(&data, &["acks", "pending", PROJECT, "GreenCastle"]);
    assert_eq!(pending["count"], 1, "{pending}");
    let listed = json(&data, &[&["list-acks"][..], &green].concat());
    assert_eq!(listed["messages"][0]["subject"], "plan");
    assert_eq!(
        json(&data, &["acks", "remind", PROJECT, "GreenCastle", "--min-age-minutes", "0"])["count"],
        1
    );
    assert_eq!(
        json(&data, &["acks", "overdue", PROJECT, "GreenCastle"])["count"],
        0,
        "not an hour old"
    );
    let acked = ok(&data, &[&["mail", "ack", "1"][..], &green].concat());
    assert!(acked.starts_with("acknowledged message 1 at "), "{acked}");
    assert_eq!(json(&data, &["acks", "pending", PROJECT, "GreenCastle"])["count"], 0);
    let replied = ok(&data, &[&["mail", "reply", "1", "--body", "on it"][..], &green].concat());
    assert_eq!(replied, format!("sent message 2 to BlueLake in {PROJECT}\n"));
    let unread_of = |name: &str| {
        json(&data, &["agents", "list", "--project", PROJECT])["agents"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["name"] == name).map(|a| a["unread_count"].clone()))
    };
    assert_eq!(unread_of("BlueLake"), Some(Value::from(1)));
    let listed = ok(&data, &[&["mail", "inbox", "--mark-read"][..], &blue].concat());
    assert!(listed.contains("Re: plan"), "{listed}");
    assert_eq!(
        unread_of("BlueLake"),
        Some(Value::from(0)),
        "inbox --mark-read marks what it lists"
    );

    ReserveCall::new(PROJECT, "BlueLake", &["src/**"]).ok_at(&url).await;
    let reservations = ok(&data, &["file-reservations", "active", PROJECT]);
    assert!(
        reservations.contains("src/**")
            && reservations.contains("exclusive")
            && reservations.contains(" min"),
        "{reservations}"
    );
    assert_eq!(
        json(&data, &["file_reservations", "soon", PROJECT, "--minutes", "1"])
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    assert_eq!(
        json(&data, &["file-reservations", "list", PROJECT, "--no-active-only"])
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let projects = json(&data, &["list-projects", "--include-agents"]);
    assert_eq!(projects[0]["human_key"], PROJECT);
    assert_eq!(projects[0]["agents"].as_array().map(Vec::len), Some(2));
    let contacts = ok(&data, &[&["contacts"][..], &blue].concat());
    assert_eq!(contacts, "(none)\n", "no contact links: contact enforcement is off");
    stop(server.take());

    // No server: the command opens the data directory itself and answers alike.
    let inbox = json(&data, &[&["mail", "inbox"][..], &blue].concat());
    assert_eq!(inbox[0]["subject"], "Re: plan", "{inbox}");
    assert!(ok(&data, &["migrate"]).ends_with("up to date\n"));
    // A read leaves the archive alone (its repository is not even opened); a send reaches it
    // before the command ends.
    let head = || mailroom_testkit::git(&data.join("archive"), &["rev-parse", "HEAD"]);
    let before = head();
    ok(&data, &[&["agents", "list"][..], &["--project", PROJECT]].concat());
    assert_eq!(head(), before, "nothing committed by a read");
    let sent = ok(
        &data,
        &[
            &["mail", "send"][..],
            &blue,
            &["--to", "GreenCastle", "--subject", "offline", "--body", "b"],
        ]
        .concat(),
    );
    assert!(sent.contains("sent message"), "{sent}");
    let files = mailroom_testkit::git(&data.join("archive"), &["ls-files"]);
    assert!(files.contains("__offline__"), "the message is archived: {files}");
    assert!(ok(&data, &["archive", "verify"]).starts_with("no differences"));
    let nobody = run(&data, &["mail", "inbox", "--project", PROJECT], "");
    assert_eq!(nobody.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("AGENT_NAME"));
}

#[test]
fn a_data_directory_without_a_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("none");
    let output = run(&data, &["list-projects"], "");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("holds no mailroom database"));
    assert!(!data.exists());
    assert!(ok(&data, &["migrate"]).ends_with("up to date\n"), "migrate creates it");
    assert!(ok(&data, &["list-projects"]).contains("(none)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_deletes_back_up_first_and_need_the_words() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (data, server, _url) = server_with(dir.path(), &[], &["BlueLake", "GreenCastle"]).await;

    let refused = run(&data, &["hard-delete-agent", PROJECT, "BlueLake", "--confirm", "yes"], "");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("nothing deleted"));
    let unasked = run(&data, &["hard-delete-agent", PROJECT, "BlueLake"], "");
    assert_eq!(unasked.status.code(), Some(1), "not asked on a pipe: refused");
    assert!(String::from_utf8_lossy(&unasked.stderr).contains("--confirm \"I UNDERSTAND\""));
    assert!(!data.join("backups").exists(), "nothing backed up when nothing is deleted");

    let deleted = run(
        &data,
        &["hard_delete_agent", PROJECT, "BlueLake", "--confirm", "I UNDERSTAND", "--json"],
        "",
    );
    assert!(deleted.status.success(), "{}", String::from_utf8_lossy(&deleted.stderr));
    let answer: Value = serde_json::from_slice(&deleted.stdout).expect("JSON");
    assert_eq!(answer["deleted_counts"]["agent"], 1, "{answer}");
    let backups: Vec<_> = std::fs::read_dir(data.join("backups"))
        .expect("backups")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(backups.len(), 1);
    assert!(backups[0].to_string_lossy().ends_with("_hard_delete_agent"), "{backups:?}");
    let copy = rusqlite::Connection::open(backups[0].join("database.sqlite3")).expect("open");
    let names: i64 = copy
        .query_row("SELECT COUNT(*) FROM agents WHERE name = 'BlueLake'", [], |r| r.get(0))
        .expect("count");
    assert_eq!(names, 1, "the backup holds the agent deleted since");
    let agents = json(&data, &["agents", "list", "--project", PROJECT]);
    assert_eq!(agents["agents"].as_array().map(Vec::len), Some(1));

    ok(&data, &["hard-delete-project", PROJECT, "--confirm", "I UNDERSTAND"]);
    assert!(json(&data, &["list-projects"]).as_array().is_some_and(Vec::is_empty));
    stop(server.take());
}

#[test]
fn config_sets_and_shows_the_port_in_env() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = dir.path().join(".env");
    std::fs::write(&env, "# mine\nHTTP_BEARER_TOKEN=x\n").expect("env");
    let config = |args: &[&str]| {
        let output =
            mailroom().current_dir(dir.path()).arg("config").args(args).output().expect("run");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    assert_eq!(config(&["show-port"]), "8765\n");
    config(&["set-port", "9123"]);
    assert_eq!(
        std::fs::read_to_string(&env).expect("env"),
        "# mine\nHTTP_BEARER_TOKEN=x\nHTTP_PORT=9123\n"
    );
    config(&["set_port", "9124"]);
    assert_eq!(config(&["show-port"]), "9124\n");
    assert_eq!(std::fs::read_to_string(&env).expect("env").matches("HTTP_PORT").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn am_run_holds_a_build_slot_while_its_command_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    mailroom_testkit::git(&repo, &["init", "-q", "-b", "main"]);
    mailroom_testkit::git(&repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
    let repo_key = repo.to_string_lossy().into_owned();
    let data = dir.path().join("data");
    let (server, url) = start_with(&data, &[("WORKTREES_ENABLED", "true")]);
    let server = KillOnDrop(Some(server));
    ProjectCall::new(&repo_key).ok_at(&url).await;

    let env = ok(&data, &["amctl", "env", "--path", &repo_key, "--agent", "BlueLake"]);
    assert!(env.contains("BRANCH=main\n") && env.contains("AGENT=BlueLake\n"), "{env}");
    assert!(
        env.contains("CACHE_KEY=am-cache-") && env.contains("/artifacts/BlueLake/main\n"),
        "{env}"
    );

    let status = ok(&data, &["mail", "status", &repo_key]);
    assert!(status.contains("slug ") && status.contains("branch               main"), "{status}");
    let marker = dir.path().join("ran");
    let script = format!("echo \"$SLUG $BRANCH\" > '{}'; exit 7", marker.display());
    let ran = run(
        &data,
        &[
            "am-run", "frontend", "--path", &repo_key, "--agent", "BlueLake", "--", "sh", "-c",
            &script,
        ],
        "",
    );
    assert_eq!(
        ran.status.code(),
        Some(7),
        "the command's exit code: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let seen = std::fs::read_to_string(&marker).expect("the command ran");
    assert!(seen.ends_with(" main\n"), "{seen}");

    // Another agent holds the slot: --block-on-conflicts does not start the command.
    let other = serde_json::json!({"project_key": repo_key, "agent_name": "GreenCastle", "slot": "frontend"});
    mailroom_testkit::tool_at(&url, "acquire_build_slot", other).await;
    std::fs::remove_file(&marker).expect("reset");
    let blocked = run(
        &data,
        &[
            "am-run",
            "frontend",
            "--path",
            &repo_key,
            "--agent",
            "BlueLake",
            "--block-on-conflicts",
            "--",
            "sh",
            "-c",
            &script,
        ],
        "",
    );
    assert_eq!(blocked.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&blocked.stderr).contains("also held by GreenCastle"));
    assert!(!marker.exists(), "not run");
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_beside_a_running_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (data, server, url) = server_with(dir.path(), &[], &["BlueLake"]).await;
    ReserveCall::new(PROJECT, "BlueLake", &["src/**"]).ok_at(&url).await;
    let doctor = |data: &Path| {
        let output = mailroom()
            .args(["doctor", "check", "--json", "--data-dir"])
            .arg(data)
            .output()
            .expect("run");
        let checks: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        (output.status.code(), checks)
    };
    let (code, checks) = doctor(&data);
    assert_eq!(code, Some(0), "{checks}");
    let names: Vec<_> = checks
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["locks", "database", "orphans", "fts", "reservations", "wal"]);
    assert!(checks.as_array().expect("checks").iter().all(|c| c["status"] == "ok"), "{checks}");

    // An expired reservation the sweep has not reached yet is a warning, not a failure.
    let db = rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("db");
    db.execute("UPDATE file_reservations SET expires_ts = '2020-01-01 00:00:00.000000'", [])
        .expect("expire");
    let (code, checks) = doctor(&data);
    assert_eq!(code, Some(0));
    assert_eq!(checks[4]["status"], "warn", "{checks}");
    assert!(checks[4]["detail"].as_str().unwrap_or_default().starts_with("1 expired"), "{checks}");
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn products_from_a_shell() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = [("WORKTREES_ENABLED", "true"), ("CONTACT_ENFORCEMENT_ENABLED", "false")];
    let (data, server, _url) = server_with(dir.path(), &env, &["BlueLake", "GreenCastle"]).await;
    let product = json(&data, &["products", "ensure", "shop", "--name", "Shop"]);
    let key = product["product_uid"].as_str().expect("a product uid").to_string();
    assert_eq!(product["name"], "Shop");
    ok(&data, &["products", "link", &key, PROJECT]);
    let status = json(&data, &["products", "status", &key]);
    assert!(status.to_string().contains(PROJECT), "{status} ({key})");
    let sent = run(
        &data,
        &[
            "mail",
            "send",
            "--project",
            PROJECT,
            "--agent",
            "BlueLake",
            "--to",
            "GreenCastle",
            "--subject",
            "checkout flow",
        ],
        "the cart",
    );
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let found = json(&data, &["products", "search", &key, "checkout"]);
    assert!(found.to_string().contains("checkout flow"), "{found}");
    let inbox = ok(&data, &["products", "inbox", &key, "GreenCastle"]);
    assert!(inbox.contains("checkout flow"), "{inbox}");
    let id = String::from_utf8_lossy(&sent.stdout)
        .split_whitespace()
        .nth(2)
        .expect("sent message N")
        .to_owned();
    let summary = json(&data, &["products", "summarize-thread", &key, &id, "--no-llm"]);
    assert!(summary.to_string().contains("BlueLake"), "the thread's participants: {summary}");
    stop(server.take());
}

#[test]
fn projects_pin_a_repositorys_identity() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("sub")).expect("repo");
    mailroom_testkit::git(&repo, &["init", "-q", "-b", "main"]);
    mailroom_testkit::git(&repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
    let sub = repo.join("sub").to_string_lossy().into_owned();
    let projects = |args: &[&str]| {
        let output = mailroom()
            .arg("projects")
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .output()
            .expect("run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, out, err) = projects(&["mark-identity", &sub, "--commit"]);
    assert_eq!(code, Some(0), "{err}");
    let uid =
        std::fs::read_to_string(repo.join(".agent-mail-project-id")).expect("marker at the root");
    assert!(out.contains(uid.trim()), "{out}");
    let log = mailroom_testkit::git(&repo, &["log", "--format=%s", "-1"]);
    assert_eq!(log.trim(), "chore: add .agent-mail-project-id");

    let (code, _, err) = projects(&["discovery-init", &sub, "--product", "p-123"]);
    assert_eq!(code, Some(0), "{err}");
    let yaml = std::fs::read_to_string(repo.join(".agent-mail.yaml")).expect("yaml");
    assert_eq!(yaml, format!("project_uid: {}\nproduct_uid: p-123\n", uid.trim()));
    let (code, _, err) = projects(&["discovery_init", &sub]);
    assert_eq!(code, Some(1), "an existing file is kept");
    assert!(err.contains("--force"), "{err}");
}

/// With `MAILROOM_TOOL_AUTH` the tools ask for proof: the commands send the token given
/// (`--registration-token`, `$AGENT_MAIL_REGISTRATION_TOKEN`), else the one the data
/// directory's database keeps for the agent; a wrong one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_prove_the_agent_when_the_server_asks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = [("CONTACT_ENFORCEMENT_ENABLED", "false"), ("MAILROOM_TOOL_AUTH", "true")];
    let (data, server, _url) = server_with(dir.path(), &env, &["BlueLake", "GreenCastle"]).await;
    let blue = ["--project", PROJECT, "--agent", "BlueLake"];
    let green = ["--project", PROJECT, "--agent", "GreenCastle"];
    let sent = ok(
        &data,
        &[
            &["mail", "send"][..],
            &blue,
            &["--to", "GreenCastle", "--subject", "proved", "--body", "b"],
        ]
        .concat(),
    );
    assert!(sent.contains("sent message"), "{sent}");

    let wrong = run(
        &data,
        &[&["mail", "inbox"][..], &green, &["--registration-token", "not-the-token"]].concat(),
        "",
    );
    assert!(!wrong.status.success(), "a wrong token is refused");
    let stderr = String::from_utf8_lossy(&wrong.stderr).to_lowercase();
    assert!(stderr.contains("token"), "{stderr}");

    let stored: String = rusqlite::Connection::open(data.join("mailroom.sqlite3"))
        .expect("database")
        .query_row("SELECT registration_token FROM agents WHERE name = 'GreenCastle'", [], |r| {
            r.get(0)
        })
        .expect("token");
    let output = mailroom()
        .args(["mail", "inbox", "--json"])
        .args(green)
        .arg("--data-dir")
        .arg(&data)
        .env("AGENT_MAIL_REGISTRATION_TOKEN", &stored)
        .output()
        .expect("run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let inbox: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(inbox[0]["subject"], "proved");
    let listed = ok(&data, &[&["contacts"][..], &green].concat());
    assert!(listed.contains("(none)") || listed.contains("agent"), "{listed}");
    stop(server.take());
}
