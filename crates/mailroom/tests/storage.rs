//! A full disk as a user meets it: `mailroom serve` with its data directory on a small tmpfs,
//! a send storm over MCP and REST until the disk is full. Refused sends say so (REST 507
//! `storage full: …`, MCP a JSON-RPC error with the same text); every acknowledged message
//! stays, in the database and, once space returns, in the archive; the server recovers by
//! itself. Mounting needs root (CI runs as root); otherwise the test says why it did nothing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{KillOnDrop, mailroom, start, stop};
use mailroom_testkit::{InboxCall, SendCall, git, rpc_at, seed_pair_at};
use serde_json::{Value, json};

const SLUG: &str = "work-full";

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` (with the reason printed) when this process may not mount one.
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        if !is_root() {
            eprintln!("SKIPPED: mounting a tmpfs needs root; run the suite as root (CI does)");
            return None;
        }
        let options = format!("size={size}");
        let status =
            Command::new("mount").args(["-t", "tmpfs", "-o", &options, "tmpfs"]).arg(dir).status();
        match status {
            Ok(status) if status.success() => Some(Self(dir.to_path_buf())),
            other => {
                eprintln!("SKIPPED: cannot mount a tmpfs here ({other:?})");
                None
            }
        }
    }

    fn resize(&self, size: &str) {
        let options = format!("remount,size={size}");
        let status = Command::new("mount").args(["-o", &options]).arg(&self.0).status();
        assert!(status.expect("mount").success(), "remount {size}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// What one send came to.
enum Sent {
    Acknowledged(String),
    Refused,
}

/// A send over MCP: acknowledged, or refused with the storage error (anything else fails).
async fn send_mcp(client: &reqwest::Client, url: &str, subject: String, body: &str) -> Sent {
    let arguments = SendCall::new(SLUG, "BlueLake", "GreenCastle", &subject).body(body).arguments();
    let params = json!({"name": "send_message", "arguments": arguments});
    let reply = rpc_at(client, url, "tools/call", params).await;
    if let Some(error) = reply.get("error") {
        assert_eq!(error["code"], -32001, "{reply}");
        let message = error["message"].as_str().expect("message");
        assert!(message.starts_with("storage full: the database cannot grow"), "{message}");
        return Sent::Refused;
    }
    assert_ne!(reply["result"]["isError"], true, "no other failure: {reply}");
    Sent::Acknowledged(subject)
}

/// The same over REST (`/api/message/send`).
async fn send_rest(client: &reqwest::Client, url: &str, subject: String, body: &str) -> Sent {
    let request = json!({"project_slug": SLUG, "sender_name": "BlueLake",
                         "recipient_names": ["GreenCastle"], "subject": subject, "body_md": body});
    let response =
        client.post(format!("{url}/api/message/send")).json(&request).send().await.expect("post");
    let status = response.status().as_u16();
    let reply: Value = response.json().await.expect("json");
    if status == 507 {
        assert_eq!(reply["error"]["type"], "STORAGE_FULL", "{reply}");
        let message = reply["error"]["message"].as_str().expect("message");
        assert!(message.starts_with("storage full: the database cannot grow"), "{message}");
        return Sent::Refused;
    }
    assert_eq!(status, 200, "no other failure: {reply}");
    Sent::Acknowledged(subject)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_sends_clearly_and_loses_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(tmpfs) = Tmpfs::mount(dir.path(), "12m") else { return };
    let data = dir.path().join("data");
    let (server, url) = start(&data);
    let server = KillOnDrop(Some(server));
    seed_pair_at(&url, "/work/full", "BlueLake", "GreenCastle").await;

    // Bodies that do not compress away: the disk fills after a few hundred.
    let body: String = (0..24_000u32)
        .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
        .collect();
    let client = reqwest::Client::new();
    let (mut acknowledged, mut refused_mcp, mut refused_rest) = (Vec::new(), 0, 0);
    for i in 0..3_000 {
        let subject = format!("storm {i}");
        let sent = if i % 2 == 0 {
            send_mcp(&client, &url, subject, &body).await
        } else {
            send_rest(&client, &url, subject, &body).await
        };
        match sent {
            Sent::Acknowledged(subject) => acknowledged.push(subject),
            Sent::Refused if i % 2 == 0 => refused_mcp += 1,
            Sent::Refused => refused_rest += 1,
        }
        if refused_mcp >= 3 && refused_rest >= 3 {
            break;
        }
    }
    assert!(refused_mcp >= 3 && refused_rest >= 3, "the disk filled: {refused_mcp} {refused_rest}");
    assert!(acknowledged.len() > 50, "{} acknowledged first", acknowledged.len());

    // Space returns: the server goes on by itself.
    tmpfs.resize("256m");
    let after = "after the disk had room again".to_string();
    assert!(matches!(send_rest(&client, &url, after.clone(), "ok").await, Sent::Acknowledged(_)));
    acknowledged.push(after);
    let inbox = InboxCall::new(SLUG, "GreenCastle").limit(10_000).ok_at(&url).await;
    let stored: Vec<&str> =
        inbox.as_array().expect("inbox").iter().filter_map(|m| m["subject"].as_str()).collect();
    for subject in &acknowledged {
        assert!(stored.contains(&subject.as_str()), "{subject} is in the database");
    }
    assert_eq!(stored.len(), acknowledged.len(), "and nothing that was refused");
    // A graceful stop commits the archive's backlog.
    stop(server.take());
    let root = data.join("archive");
    let files = git(&root, &["ls-tree", "-r", "--name-only", "HEAD"]);
    let canonical =
        files.lines().filter(|f| f.starts_with(&format!("projects/{SLUG}/messages/2"))).count();
    assert_eq!(canonical, acknowledged.len(), "every acknowledged message is in the archive");
    let fsck = git(&root, &["fsck", "--strict"]);
    assert!(fsck.lines().all(|l| l.starts_with("dangling ")), "fsck: {fsck}");
    let verify = mailroom()
        .args(["archive", "verify", "--data-dir"])
        .arg(&data)
        .env("LOG_LEVEL", "warn")
        .output()
        .expect("verify");
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    drop(tmpfs);
}
