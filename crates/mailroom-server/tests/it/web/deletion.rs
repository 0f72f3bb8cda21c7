//! Deleting messages from the UI: the rows, the search index and the archive copies, in one
//! commit; the inbox route touches only that inbox's messages.

use mailroom_testkit::{InboxCall, SearchCall, SendCall, TestApp, git, sent_message_id};
use serde_json::json;

use super::{csrf_token, mail, page, ui_post};

/// The files of the archive's HEAD that name a message id (`__<id>.md` at the end of each copy).
fn archived_copies(app: &TestApp, id: i64) -> Vec<String> {
    let suffix = format!("__{id}.md");
    git(&app.archive_root(), &["ls-tree", "-r", "--name-only", "HEAD"])
        .lines()
        .filter(|l| l.ends_with(&suffix))
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn deleted_messages_leave_the_database_and_the_archive_in_one_commit() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/delete", "BlueLake", "GreenCastle").await;
    let doomed = sent_message_id(
        &mail(&slug, "Doomed plan").body("unique-zebra words").thread("T-1").ok(&app).await,
    );
    let second =
        sent_message_id(&mail(&slug, "Also doomed").body("more").thread("T-1").ok(&app).await);
    let kept = sent_message_id(&mail(&slug, "Keeper").body("stays").thread("T-2").ok(&app).await);
    app.archive_flushed().await;
    let copies = archived_copies(&app, doomed);
    // Canonical, the sender's outbox and the recipient's inbox.
    assert_eq!(copies.len(), 3, "{copies:?}");

    let token = csrf_token(&app).await;
    let path = "/mail/api/delete-messages";
    for (body, expected) in [
        (json!({"message_ids": []}), "message_ids"),
        (json!({"message_ids": (0..501).collect::<Vec<i64>>()}), "message_ids"),
        (json!({"ids": [doomed]}), "unknown field `ids`"),
        (json!({"message_ids": ["seven"]}), "invalid type"),
    ] {
        let (status, answer) = ui_post(&app, path, body, Some(&token)).await;
        assert_eq!(status, 400, "{answer}");
        assert!(answer["error"].as_str().expect("error").contains(expected), "{answer}");
    }
    let (status, _) = ui_post(&app, path, json!({"message_ids": [doomed]}), None).await;
    assert_eq!(status, 403, "no CSRF token, nothing deleted");

    let ids = json!({"message_ids": [doomed, second, doomed, 987654]});
    let (status, answer) = ui_post(&app, path, ids, Some(&token)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["success"], true);
    assert_eq!(answer["deleted_count"], 2, "an unknown id and a repeat are passed over");
    assert_eq!(answer["git_files_removed"], 6, "{answer}");

    // Gone from the tools, the search index and the pages.
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    let ids: Vec<i64> =
        inbox.as_array().expect("inbox").iter().map(|m| m["id"].as_i64().expect("id")).collect();
    assert_eq!(ids, vec![kept]);
    let found = SearchCall::new(&slug, "zebra").ok(&app).await;
    assert_eq!(found["result"], json!([]), "{found}");
    let (status, _, _) = page(&app, &format!("/mail/{slug}/message/{doomed}")).await;
    assert_eq!(status, 404);

    // One commit removed all six files; the kept message's files stay; the tree is clean.
    app.archive_flushed().await;
    assert!(archived_copies(&app, doomed).is_empty() && archived_copies(&app, second).is_empty());
    assert_eq!(archived_copies(&app, kept).len(), 3);
    let root = app.archive_root();
    for copy in &copies {
        assert!(!root.join(copy).exists(), "{copy} left in the work tree");
    }
    let log = git(&root, &["log", "--format=%s", "--name-status", "-1", "--diff-filter=D"]);
    assert!(log.starts_with("delete: 2 message(s) via web UI\n"), "{log}");
    assert_eq!(log.lines().filter(|l| l.starts_with("D\t")).count(), 6, "{log}");
    // Again: nothing left to delete, no commit.
    let (_, again) = ui_post(&app, path, json!({"message_ids": [doomed]}), Some(&token)).await;
    assert_eq!(
        (again["deleted_count"].clone(), again["git_files_removed"].clone()),
        (json!(0), json!(0))
    );

    // The index follows once the writer idles: `git status` comes clean.
    let mut status = String::new();
    for _ in 0..100 {
        status = git(&root, &["status", "--porcelain"]);
        if status.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, "", "the index never caught up");
    git(&root, &["fsck", "--strict"]);
}

#[tokio::test]
async fn an_inbox_deletes_only_its_own_messages() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/inbox-delete", "BlueLake", "GreenCastle").await;
    let to_green =
        sent_message_id(&mail(&slug, "For green").body("x").thread("T-1").ok(&app).await);
    let to_blue =
        SendCall::new(&slug, "GreenCastle", "BlueLake", "For blue").body("y").ok(&app).await;
    let to_blue = sent_message_id(&to_blue);
    let token = csrf_token(&app).await;
    let path = format!("/mail/{slug}/inbox/GreenCastle/delete-messages");
    let (status, answer) =
        ui_post(&app, &path, json!({"message_ids": [to_green, to_blue]}), Some(&token)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["deleted_count"], 1, "BlueLake's message is not GreenCastle's to delete");
    assert_eq!(
        (answer["agent"].as_str(), answer["project"].as_str()),
        (Some("GreenCastle"), Some(slug.as_str()))
    );
    let (status, _, _) = page(&app, &format!("/mail/{slug}/message/{to_blue}")).await;
    assert_eq!(status, 200, "still there");
    for (route, expected) in [
        (format!("/mail/{slug}/inbox/Nobody/delete-messages"), 404),
        ("/mail/no-such-project/inbox/GreenCastle/delete-messages".to_string(), 404),
    ] {
        let (status, answer) =
            ui_post(&app, &route, json!({"message_ids": [to_blue]}), Some(&token)).await;
        assert_eq!(status, expected, "{route}: {answer}");
    }
    let (_, _, inbox) = page(&app, &format!("/mail/{slug}/inbox/BlueLake")).await;
    assert!(
        inbox.contains(&format!("name=\"message_id\" value=\"{to_blue}\"")),
        "a check box per row"
    );
    assert!(inbox.contains("delete-messages"));
}
