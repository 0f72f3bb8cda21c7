//! The webhook queue against a real SQLite database: what a send queues, for whom, and what
//! registration, removal, attempts, retention and hard deletions do to it.

use std::collections::HashMap;

use super::*;
use crate::config::CoreConfig;
use crate::ops::agents::Registration;
use crate::ops::messaging::SendMessage;
use crate::ops::projects::lifecycle::HARD_DELETE_CONFIRMATION;

const PROJECT: &str = "/work/hooks";
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn open(dir: &std::path::Path) -> Mailroom {
    let mut config = CoreConfig::for_data_dir(dir);
    config.archive.enabled = false;
    config.contact_enforcement_enabled = false;
    config.webhooks.max_attempts = 2;
    // A day's backoff: a retried delivery is certainly not due again within a test.
    config.webhooks.retry_base_ms = 86_400_000;
    config.webhooks.retry_max_ms = 86_400_000;
    let core = Mailroom::open(config).expect("open");
    core.ensure_project(PROJECT).await.expect("project");
    for name in ["BlueLake", "GreenCastle", "RedStone"] {
        let registration = Registration {
            project_key: PROJECT.into(),
            program: "test".into(),
            model: "test".into(),
            name: Some(name.into()),
            ..Registration::default()
        };
        core.register_agent(registration).await.expect("register");
    }
    core
}

async fn send(core: &Mailroom, to: &[&str], bcc: &[&str]) {
    let send = SendMessage {
        project_key: PROJECT.into(),
        sender_name: "BlueLake".into(),
        to: to.iter().map(|s| (*s).to_owned()).collect(),
        bcc: bcc.iter().map(|s| (*s).to_owned()).collect(),
        subject: "hello".into(),
        body_md: "body".into(),
        ..SendMessage::default()
    };
    core.send_message(send).await.expect("send");
}

async fn register(core: &Mailroom, url: &str, agent: Option<&str>) -> RegisteredWebhook {
    let agent = agent.map(str::to_owned);
    core.register_webhook(PROJECT.into(), url.into(), agent, Some(SECRET.into()))
        .await
        .expect("register")
}

async fn view(core: &Mailroom, filter: DeliveryFilter) -> DeliveriesView {
    core.webhook_deliveries(PROJECT.into(), None, None, filter, None).await.expect("view")
}

async fn agent_view(core: &Mailroom, agent: &str, filter: DeliveryFilter) -> DeliveriesView {
    let agent = Some(agent.to_owned());
    core.webhook_deliveries(PROJECT.into(), agent, None, filter, None).await.expect("view")
}

#[tokio::test]
async fn a_send_queues_one_delivery_per_recipient_and_webhook_covering_it() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path()).await;
    // Mail from before a webhook existed is not queued for it.
    send(&core, &["GreenCastle"], &[]).await;
    let project = register(&core, "https://hooks.example.com/all", None).await;
    let green = register(&core, "http://127.0.0.1:9/green", Some("greencastle")).await;
    assert_eq!(green.agent.as_deref(), Some("GreenCastle"));
    assert_eq!(project.secret, SECRET);

    send(&core, &["GreenCastle"], &["RedStone"]).await;
    // The project webhook gets GreenCastle's delivery, not the bcc'd RedStone's; each view
    // shows its own scope's.
    let queued = view(&core, DeliveryFilter::Pending).await;
    assert_eq!(queued.counts, QueueCounts { pending: 1, failed: 0, delivered: 0 });
    assert_eq!(queued.deliveries[0].webhook_id, project.id);
    assert_eq!(queued.deliveries[0].recipient.as_deref(), Some("GreenCastle"));
    let green_view = agent_view(&core, "GreenCastle", DeliveryFilter::Pending).await;
    assert_eq!(green_view.counts.pending, 1);
    assert_eq!(green_view.deliveries[0].webhook_id, green.id);
    let ids = [&queued.deliveries[0].id, &green_view.deliveries[0].id];
    assert_ne!(ids[0], ids[1], "each delivery has its own webhook-id");
    assert!(ids.iter().all(|id| id.starts_with("msg_") && id.len() == 28));

    // RedStone's own webhook gets its bcc delivery, which only RedStone's scope shows.
    let red_hook = register(&core, "https://hooks.example.com/red", Some("RedStone")).await;
    send(&core, &["GreenCastle"], &["RedStone"]).await;
    assert_eq!(view(&core, DeliveryFilter::Pending).await.counts.pending, 2);
    let red_view = agent_view(&core, "RedStone", DeliveryFilter::Pending).await;
    assert_eq!(red_view.counts.pending, 1);
    assert_eq!(red_view.deliveries[0].webhook_id, red_hook.id);
    let green_view = agent_view(&core, "GreenCastle", DeliveryFilter::All).await;
    assert!(green_view.deliveries.iter().all(|d| d.webhook_id == green.id));

    // What the worker takes: due now, with the request's parts; the bcc recipient's kind.
    let due = core.due_webhook_deliveries(10, &HashMap::new(), &[]).await.expect("due");
    assert_eq!(due.len(), 5);
    let red = due.iter().find(|d| d.recipient == "RedStone").expect("RedStone's");
    assert_eq!((red.kind.as_str(), red.secret.as_str()), ("bcc", SECRET));
    assert_eq!(red.webhook_id, red_hook.id);
    let message = red.message.as_ref().expect("message");
    let body: serde_json::Value = serde_json::from_slice(&post::body(red, message)).expect("json");
    assert_eq!(body["type"], "message.delivered");
    assert_eq!(body["data"]["message"]["sender"], "BlueLake");
    assert_eq!(body["data"]["recipient_kind"], "bcc");
    assert!(body["data"]["message"].get("body_md").is_none());
    assert_eq!(core.webhook_queue_depth().await.expect("depth"), 5);

    // A project webhook is not removed through an agent's scope, nor an agent's without it.
    let green_name = Some("GreenCastle".to_owned());
    let error = core.remove_webhook(PROJECT.into(), green_name.clone(), project.id).await;
    assert_eq!(error.expect_err("other scope").category, Category::NotFound);
    let error = core.remove_webhook(PROJECT.into(), None, green.id).await;
    assert_eq!(error.expect_err("other scope").category, Category::NotFound);
    let listed = core.list_webhooks(PROJECT.into(), None).await.expect("list");
    assert_eq!(listed.webhooks.iter().map(|w| w.id).collect::<Vec<_>>(), [project.id]);

    // Removing a webhook drops its deliveries.
    core.remove_webhook(PROJECT.into(), green_name.clone(), green.id).await.expect("remove");
    assert_eq!(agent_view(&core, "GreenCastle", DeliveryFilter::All).await.counts.pending, 0);
    assert_eq!(core.webhook_queue_depth().await.expect("depth"), 3);
    let error = core.remove_webhook(PROJECT.into(), green_name, green.id).await.expect_err("gone");
    assert_eq!(error.category, Category::NotFound);
}

#[tokio::test]
async fn a_webhook_with_many_due_deliveries_leaves_room_for_the_others() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path()).await;
    let busy = register(&core, "https://busy.example.com/", None).await;
    for _ in 0..10 {
        send(&core, &["GreenCastle"], &[]).await;
    }
    let other = register(&core, "https://other.example.com/", None).await;
    send(&core, &["GreenCastle"], &[]).await;
    let webhooks = |due: &[DueDelivery]| due.iter().map(|d| d.webhook_id).collect::<Vec<_>>();
    // A page of three: the busy webhook's share (two, WEBHOOK_CONCURRENCY 8), then the other's
    // though its delivery is the newest.
    let due = core.due_webhook_deliveries(3, &HashMap::new(), &[]).await.expect("due");
    assert_eq!(webhooks(&due), [busy.id, busy.id, other.id]);
    // With one of the busy webhook's in flight, that one is left out; the store still offers
    // the webhook's whole share (the worker counts what is in flight against it).
    let first = due[0].id;
    let in_flight = HashMap::from([(first, busy.id)]);
    let due = core.due_webhook_deliveries(3, &in_flight, &[]).await.expect("due");
    assert!(due.iter().all(|d| d.id != first));
    assert_eq!(webhooks(&due), [busy.id, busy.id, other.id]);
    // At its share, none of it; held-back deliveries are left out too.
    let in_flight = HashMap::from([(due[0].id, busy.id), (due[1].id, busy.id)]);
    let due = core.due_webhook_deliveries(3, &in_flight, &[]).await.expect("due");
    assert_eq!(webhooks(&due), [other.id]);
    let held = core.due_webhook_deliveries(3, &in_flight, &[due[0].id]).await.expect("due");
    assert!(held.is_empty());
}

#[tokio::test]
async fn registration_refuses_duplicates_bad_urls_and_too_many() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path()).await;
    register(&core, "https://hooks.example.com/a", None).await;
    let again = core
        .register_webhook(PROJECT.into(), "https://HOOKS.example.com/a".into(), None, None)
        .await
        .expect_err("duplicate");
    assert_eq!(again.kind, "WEBHOOK_EXISTS");
    // The same URL for one agent is another scope.
    register(&core, "https://hooks.example.com/a", Some("RedStone")).await;
    let bad = core
        .register_webhook(PROJECT.into(), "http://example.com/".into(), None, None)
        .await
        .expect_err("plain http");
    assert!(bad.message.starts_with("url must be"), "{}", bad.message);
    let unknown = core
        .register_webhook(PROJECT.into(), "https://h.example/".into(), Some("Nobody".into()), None)
        .await
        .expect_err("unknown agent");
    assert_eq!(unknown.category, Category::NotFound);
    for i in 2..MAX_PER_PROJECT {
        register(&core, &format!("https://hooks.example.com/{i}"), None).await;
    }
    let over = core
        .register_webhook(PROJECT.into(), "https://hooks.example.com/over".into(), None, None)
        .await
        .expect_err("limit");
    assert_eq!(over.kind, "WEBHOOK_LIMIT");
    // The limit counts every scope: 31 project webhooks and RedStone's.
    let listed = core.list_webhooks(PROJECT.into(), None).await.expect("list");
    assert_eq!(listed.webhooks.len(), usize::try_from(MAX_PER_PROJECT - 1).expect("count"));
}

#[tokio::test]
async fn failed_attempts_retry_then_give_up_and_old_ones_are_forgotten() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path()).await;
    // A receiver that closes every connection at once; its URL carries a token.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || listener.incoming().for_each(drop));
    register(&core, &format!("http://127.0.0.1:{port}/in?token=TOKEN-IN-URL"), None).await;
    send(&core, &["GreenCastle"], &[]).await;
    let poster = Poster::new(&core.config.webhooks).expect("poster");
    let due = core.due_webhook_deliveries(10, &HashMap::new(), &[]).await.expect("due");
    let first = core.attempt_webhook_delivery(&poster, &due[0]).await.expect("attempt");
    assert!(matches!(first, AttemptOutcome::Retry { .. }), "{first:?}");
    // Not due again until the backoff has passed.
    assert!(core.due_webhook_deliveries(10, &HashMap::new(), &[]).await.expect("due").is_empty());
    assert!(core.next_webhook_due().await.expect("next").is_some());
    let mut retry = due[0].clone();
    retry.attempts = 1;
    let second = core.attempt_webhook_delivery(&poster, &retry).await.expect("attempt");
    assert!(matches!(second, AttemptOutcome::Failed { .. }), "{second:?}");
    let failed = view(&core, DeliveryFilter::Failed).await;
    assert_eq!(failed.counts, QueueCounts { pending: 0, failed: 1, delivered: 0 });
    assert_eq!(failed.deliveries[0].attempts, 2);
    let error = failed.deliveries[0].last_error.clone().expect("last error");
    assert!(!error.is_empty() && !error.contains("TOKEN-IN-URL"), "the URL was kept: {error}");

    // Kept within the retention window, forgotten past it.
    assert_eq!(core.forget_old_webhook_deliveries(1).await.expect("forget"), 0);
    assert_eq!(core.forget_old_webhook_deliveries(-1).await.expect("forget"), 1);
    assert_eq!(view(&core, DeliveryFilter::All).await.counts, QueueCounts::default());

    // One run forgets at most its steps' batches; the next one goes on.
    for _ in 0..5 {
        send(&core, &["GreenCastle"], &[]).await;
    }
    // Each given its last attempt (the store hands out a webhook's share at a time).
    loop {
        let due = core.due_webhook_deliveries(10, &HashMap::new(), &[]).await.expect("due");
        if due.is_empty() {
            break;
        }
        for mut last in due {
            last.attempts = 1;
            core.attempt_webhook_delivery(&poster, &last).await.expect("attempt");
        }
    }
    assert_eq!(view(&core, DeliveryFilter::Failed).await.counts.failed, 5);
    let later = Timestamp::now().plus_seconds(60).as_micros();
    assert_eq!(core.forget_finished_deliveries(later, 2, 2).await.expect("forget"), 4);
    assert_eq!(core.forget_finished_deliveries(later, 2, 2).await.expect("forget"), 1);
}

#[tokio::test]
async fn hard_deletions_take_their_webhooks_and_deliveries() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path()).await;
    register(&core, "https://hooks.example.com/all", None).await;
    register(&core, "https://hooks.example.com/red", Some("RedStone")).await;
    send(&core, &["GreenCastle", "RedStone"], &[]).await;
    assert_eq!(core.webhook_queue_depth().await.expect("depth"), 3);
    let confirm = HARD_DELETE_CONFIRMATION.to_owned();
    core.hard_delete_agent(PROJECT.into(), "RedStone".into(), confirm.clone())
        .await
        .expect("agent");
    assert_eq!(view(&core, DeliveryFilter::All).await.counts.pending, 1);
    assert_eq!(core.list_webhooks(PROJECT.into(), None).await.expect("list").webhooks.len(), 1);
    core.hard_delete_project(PROJECT.into(), confirm).await.expect("project");
    assert_eq!(core.webhook_queue_depth().await.expect("depth"), 0);
}
