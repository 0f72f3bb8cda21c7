use super::*;
use crate::config::CoreConfig;
use crate::ops::agents::Registration;
use crate::ops::resolve;

/// The inbox written from borrowed rows says what the listed `MessageOut`s say, on the
/// inline read and the blocking one (filters), bodies or not, empty or not, and fails
/// alike on an unknown agent.
#[test]
fn the_written_inbox_is_the_serialised_one() {
    let dir = tempfile::tempdir().expect("dir");
    let mut config = CoreConfig::for_data_dir(dir.path());
    config.contact_enforcement_enabled = false;
    let core = Mailroom::open(config).expect("open");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        core.ensure_project("/work/inbox").await.expect("project");
        for name in ["BlueLake", "GreenCastle", "RedStone"] {
            let registration = Registration {
                project_key: "/work/inbox".into(),
                program: "codex-cli".into(),
                model: "gpt-5".into(),
                name: Some(name.into()),
                task_description: String::new(),
                attachments_policy: None,
                ..Registration::default()
            };
            core.register_agent(registration).await.expect("register");
        }
        for (i, importance) in ["normal", "urgent", "high"].into_iter().enumerate() {
            let send = SendMessage {
                project_key: "/work/inbox".into(),
                sender_name: "BlueLake".into(),
                to: vec!["GreenCastle".into()],
                cc: vec!["RedStone".into()],
                subject: format!("Plan \"{i}\" \u{1f680}"),
                body_md: format!("Line one\n\tline \\ two {i}"),
                importance: Some(importance.into()),
                ack_required: i == 1,
                thread_id: (i > 0).then(|| "T-1".to_string()),
                topic: (i == 2).then(|| "deploys".to_string()),
                ..SendMessage::default()
            };
            core.send_message(send).await.expect("send");
        }
        let fetch = |agent: &str, bodies: bool| FetchInbox {
            project_key: "/work/inbox".into(),
            agent_name: agent.into(),
            filter: InboxFilter { include_bodies: bodies, ..InboxFilter::default() },
            ..FetchInbox::default()
        };
        let mut filtered = fetch("RedStone", true);
        filtered.filter.urgent_only = true;
        let topic = FetchInbox { topic: Some("DEPLOYS".into()), ..fetch("GreenCastle", false) };
        let cases = [
            (fetch("GreenCastle", true), 3),
            (fetch("RedStone", false), 3),
            (fetch("BlueLake", true), 0),
            (filtered, 2),
            (topic, 1),
        ];
        for (case, count) in cases {
            let listed = core.fetch_inbox(case.clone()).await.expect("listed");
            assert_eq!(listed.len(), count, "{case:?}");
            let written = core.fetch_inbox_json(case).await.expect("written");
            assert_eq!(written.0, serde_json::to_string(&listed).expect("serialised"));
        }
        let unknown = |json: bool| {
            let req = fetch("GreenCastel", false);
            let core = &core;
            async move {
                if json {
                    core.fetch_inbox_json(req).await.map(drop)
                } else {
                    core.fetch_inbox(req).await.map(drop)
                }
            }
        };
        let (a, b) = (unknown(false).await, unknown(true).await);
        assert_eq!(a.expect_err("unknown").message, b.expect_err("unknown").message);

        // The inline read's id lookups find what the full resolution finds, for every
        // spelling of a project and an agent, and nothing where it fails.
        let spellings = [
            ("/work/inbox", "GreenCastle", true),
            ("work-inbox", "greencastle", true),
            ("/work/inbox/", " RedStone ", true),
            ("/work//inbox", "BLUELAKE", true),
            ("/work/other", "GreenCastle", false),
            ("/work/inbox", "GreenCastel", false),
            ("YOUR_PROJECT", "GreenCastle", false),
            ("/work/inbox", "", false),
        ];
        for (key, name, found) in spellings {
            let spelling = format!("{key:?} {name:?}");
            let (key, name) = (key.to_string(), name.to_string());
            let (by_ids, resolved) = core
                .store
                .read(move |db| {
                    let by_ids = resolve::project_and_agent_ids_directly(db, &key, &name)?;
                    let resolved = resolve::project(db, &key).and_then(|project| {
                        resolve::agent(db, &project, &name, "agent_name")
                            .map(|agent| (project.id, agent.id))
                    });
                    Ok((by_ids, resolved.ok()))
                })
                .await
                .expect("read");
            assert_eq!(by_ids, resolved, "{spelling}");
            assert_eq!(by_ids.is_some(), found, "{spelling}");
        }
    });
    core.close();
}

/// The store's urgent filters (the inbox's `urgent_only`, the unread count's urgent part)
/// select exactly the importances `Importance::is_urgent` calls urgent, spelled exactly.
#[test]
fn the_stores_urgent_filters_agree_with_importance() {
    let dir = tempfile::tempdir().expect("dir");
    let mut config = CoreConfig::for_data_dir(dir.path());
    config.contact_enforcement_enabled = false;
    let core = Mailroom::open(config).expect("open");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let texts = ["low", "normal", "high", "urgent", "HIGH", "Urgent", " urgent", "critical"];
    runtime.block_on(async {
        core.ensure_project("/work/urgent").await.expect("project");
        for name in ["BlueLake", "GreenCastle"] {
            let registration = Registration {
                project_key: "/work/urgent".into(),
                program: "codex-cli".into(),
                model: "gpt-5".into(),
                name: Some(name.into()),
                ..Registration::default()
            };
            core.register_agent(registration).await.expect("register");
        }
        for importance in texts {
            let send = SendMessage {
                project_key: "/work/urgent".into(),
                sender_name: "BlueLake".into(),
                to: vec!["GreenCastle".into()],
                subject: importance.to_string(),
                body_md: "b".into(),
                importance: Some(importance.into()),
                ..SendMessage::default()
            };
            core.send_message(send).await.expect("send");
        }
        let mut urgent = FetchInbox {
            project_key: "/work/urgent".into(),
            agent_name: "GreenCastle".into(),
            ..FetchInbox::default()
        };
        urgent.filter.urgent_only = true;
        let mut listed: Vec<String> =
            core.fetch_inbox(urgent).await.expect("inbox").into_iter().map(|m| m.subject).collect();
        listed.sort();
        let mut expected: Vec<String> = texts
            .into_iter()
            .filter(|text| crate::records::Importance(*text).is_urgent())
            .map(str::to_string)
            .collect();
        expected.sort();
        assert_eq!(listed, expected, "urgent_only");
        let unread = core
            .store
            .read(|db| {
                let (project, agent) = resolve::project_agent(db, "/work/urgent", "GreenCastle")?;
                db.unread_mail_counts(project.id, agent.id)
            })
            .await
            .expect("counts");
        assert_eq!(unread, (texts.len() as i64, expected.len() as i64), "unread and urgent");
    });
    core.close();
}

fn check(original: &str, prefix: &str, expected: &str) {
    assert_eq!(reply_subject(original, prefix), expected, "{original:?} + {prefix:?}");
}

#[test]
fn reply_subjects_do_not_chain() {
    check("Hello", "Re:", "Re: Hello");
    check("Re: Hello", "Re:", "Re: Hello");
    check("RE: Hello", "Re:", "RE: Hello");
    check("Hello", "", "Hello");
    check("Hello", "  Fwd: ", "Fwd: Hello");
}
