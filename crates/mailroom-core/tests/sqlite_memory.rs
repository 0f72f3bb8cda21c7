//! SQLite's memory stays under the store's soft heap limit however much the database holds.
//! A test binary of its own: the figure it reads is process-wide.

use mailroom_core::ops::agents::Registration;
use mailroom_core::ops::messaging::{FetchInbox, InboxFilter, SendMessage};
use mailroom_core::{CoreConfig, Mailroom, SQLITE_HEAP_LIMIT, sqlite_memory_used};

/// Schema, prepared statements and connection state, which are not page cache.
const SLACK: i64 = 8 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_caches_stop_growing_at_the_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = CoreConfig::for_data_dir(dir.path());
    config.archive.enabled = false;
    let core = Mailroom::open(config).expect("open");
    core.ensure_project("/memory/test").await.expect("project");
    for name in ["BlueLake", "GreenCastle"] {
        let registration = Registration {
            project_key: "memory-test".into(),
            program: "test".into(),
            model: "test".into(),
            name: Some(name.into()),
            ..Registration::default()
        };
        core.register_agent(registration).await.expect("register");
    }
    core.set_contact_policy("memory-test".into(), "GreenCastle".into(), "open".into())
        .await
        .expect("policy");
    // About 48 MB of bodies: twice the limit, more than the writer's own cache (32 MB).
    let paragraph = "Agents coordinate through this mailbox; each line differs a little. ";
    for i in 0..3000 {
        let body: String = (0..240).map(|line| format!("{i}.{line} {paragraph}\n")).collect();
        let message = SendMessage {
            project_key: "memory-test".into(),
            sender_name: "BlueLake".into(),
            to: vec!["GreenCastle".into()],
            subject: format!("Message {i}"),
            body_md: body,
            ..SendMessage::default()
        };
        core.send_message(message).await.expect("send");
    }
    for _ in 0..3 {
        let inbox = FetchInbox {
            project_key: "memory-test".into(),
            agent_name: "GreenCastle".into(),
            filter: InboxFilter {
                limit: Some(1000),
                include_bodies: true,
                ..InboxFilter::default()
            },
            ..FetchInbox::default()
        };
        assert_eq!(core.fetch_inbox(inbox).await.expect("inbox").len(), 1000);
    }
    let used = sqlite_memory_used();
    assert!(
        used <= SQLITE_HEAP_LIMIT + SLACK,
        "SQLite holds {} MB, over the {} MB limit",
        used >> 20,
        SQLITE_HEAP_LIMIT >> 20
    );
    core.close();
}
