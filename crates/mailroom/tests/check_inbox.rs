//! `mailroom check-inbox` beside a running server: it counts what fetch_inbox lists less
//! what is marked read, says how much is urgent, and prints nothing when all is read.

mod common;

use std::path::Path;

use common::{KillOnDrop, mailroom, start, stop};
use mailroom_testkit::{InboxCall, ReadCall, SendCall, seed_pair_at};
use serde_json::{Value, json};

const PROJECT: &str = "/work/check-inbox";

/// Runs `mailroom check-inbox` on `data` with `args`; (exit code, stdout, stderr).
fn check_inbox(data: &Path, args: &[&str]) -> (i32, String, String) {
    let output = mailroom()
        .arg("check-inbox")
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("AGENT_NAME")
        .output()
        .expect("run check-inbox");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

/// Runs `check-inbox --format hook` with `input` on stdin; its stdout (exit 0 required).
fn hook(data: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = mailroom()
        .args(["check-inbox", "--format", "hook", "--data-dir"])
        .arg(data)
        .args(args)
        .env_remove("AGENT_NAME")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run check-inbox");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("hook input");
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn counts(data: &Path, agent: &str) -> Value {
    let (code, out, err) =
        check_inbox(data, &["--project", PROJECT, "--agent", agent, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("json")
}

async fn fetch_inbox_ids(url: &str, agent: &str) -> Vec<i64> {
    let messages = InboxCall::new(PROJECT, agent).limit(100).ok_at(url).await;
    messages.as_array().expect("inbox").iter().map(|m| m["id"].as_i64().expect("id")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_count_follows_fetch_inbox_and_read_marks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (code, out, _) = check_inbox(&data, &["--project", PROJECT, "--agent", "BlueLake"]);
    assert_eq!((code, out.as_str()), (0, ""), "no database yet: no mail, nothing printed");

    let (server, url) = start(&data);
    let server = KillOnDrop(Some(server));
    seed_pair_at(&url, PROJECT, "BlueLake", "GreenCastle").await;

    let (code, out, _) = check_inbox(&data, &["--project", PROJECT, "--agent", "GreenCastle"]);
    assert_eq!((code, out.as_str()), (0, ""), "an empty inbox prints nothing");

    for (subject, importance) in [("plan", "normal"), ("fire", "urgent"), ("note", "low")] {
        SendCall::new(PROJECT, "BlueLake", "GreenCastle", subject)
            .importance(importance)
            .ok_at(&url)
            .await;
    }
    let ids = fetch_inbox_ids(&url, "GreenCastle").await;
    assert_eq!(ids.len(), 3);
    let unread = counts(&data, "GreenCastle");
    assert_eq!((unread["unread"].as_i64(), unread["urgent"].as_i64()), (Some(3), Some(1)));
    let (_, line, _) = check_inbox(&data, &["--project", PROJECT, "--agent", "GreenCastle"]);
    assert_eq!(
        line.trim(),
        "mailroom: GreenCastle has 3 unread messages (1 urgent) in project work-check-inbox; \
         read them with fetch_inbox."
    );

    // A coding agent's hook: the event and working directory come on stdin, the line goes
    // back as additional context for the model.
    let hook_input = json!({"hook_event_name": "SessionStart", "cwd": PROJECT, "session_id": "s"});
    let answer = hook(&data, &["--agent", "GreenCastle"], &hook_input.to_string());
    let answer: Value = serde_json::from_str(&answer).expect("the hook answer is JSON");
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = answer["hookSpecificOutput"]["additionalContext"].as_str().expect("context");
    assert!(context.contains("3 unread messages (1 urgent)"), "{context}");
    let default_event = hook(&data, &["--agent", "GreenCastle", "--project", PROJECT], "");
    assert!(default_event.contains("\"PostToolUse\""), "no input: {default_event}");
    // A hook in a session that never named its agent stays quiet (and succeeds) rather than
    // fail the agent's tool call; AGENT_NAME names it.
    assert_eq!(hook(&data, &[], &hook_input.to_string()), "", "no agent: silent");

    // Read marks count: the urgent one read leaves two, none urgent.
    let urgent_id = ids[1];
    ReadCall::new(PROJECT, "GreenCastle", urgent_id).ok_at(&url).await;
    let unread = counts(&data, "GreenCastle");
    assert_eq!((unread["unread"].as_i64(), unread["urgent"].as_i64()), (Some(2), Some(0)));
    assert_eq!(fetch_inbox_ids(&url, "GreenCastle").await.len(), 3, "fetch_inbox lists all");

    for id in ids {
        ReadCall::new(PROJECT, "GreenCastle", id).ok_at(&url).await;
    }
    let (code, out, _) = check_inbox(&data, &["--project", PROJECT, "--agent", "GreenCastle"]);
    assert_eq!((code, out.as_str()), (0, ""), "all read: nothing printed");
    let silent = hook(&data, &["--agent", "GreenCastle"], &hook_input.to_string());
    assert_eq!(silent, "", "all read: the hook says nothing");
    assert_eq!(counts(&data, "BlueLake")["unread"], 0, "the sender's own mail is not unread");

    let (code, _, err) = check_inbox(&data, &["--project", PROJECT, "--agent", "NoSuchAgent"]);
    assert_eq!(code, 1, "an unknown agent is an error: {err}");
    assert!(err.contains("NoSuchAgent"), "{err}");
    let (code, _, err) = check_inbox(&data, &["--project", PROJECT]);
    assert_eq!(code, 1);
    assert!(err.contains("AGENT_NAME"), "{err}");
    stop(server.take());
}
