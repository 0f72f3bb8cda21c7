//! What the inbox's hand-written JSON buys: one agent's inbox page (20 messages, with and
//! without bodies) read and encoded two ways on the same store, alternated round by round:
//! `fetch_inbox_json` writes the answer straight from the statement's borrowed rows
//! (`MessageOut::write_json`), `fetch_inbox` + `serde_json::to_string` builds owned rows and
//! `MessageOut`s first, then serialises them (the bytes are the same: a property test in
//! `ops/output.rs` holds them to it, and this bench checks it once). Each figure is the
//! median over 15 rounds of the mean time per page in a round.
//!
//! `cargo bench -p mailroom-core --bench inbox` (release).

use std::time::Instant;

use mailroom_core::ops::agents::Registration;
use mailroom_core::ops::messaging::{FetchInbox, InboxFilter, SendMessage};
use mailroom_core::{CoreConfig, Mailroom};

const PROJECT: &str = "/bench/inbox";
const MESSAGES: usize = 200;
const ROUNDS: usize = 15;
const PAGES_PER_ROUND: u32 = 400;

async fn register(core: &Mailroom, name: &str) {
    core.register_agent(Registration {
        project_key: PROJECT.into(),
        program: "bench".into(),
        model: "bench".into(),
        name: Some(name.into()),
        ..Registration::default()
    })
    .await
    .expect("register");
}

fn request(include_bodies: bool) -> FetchInbox {
    FetchInbox {
        project_key: PROJECT.into(),
        agent_name: "GreenCastle".into(),
        filter: InboxFilter { limit: Some(20), include_bodies, ..InboxFilter::default() },
        ..FetchInbox::default()
    }
}

/// Mean microseconds per page over one round of `PAGES_PER_ROUND` pages.
async fn round(core: &Mailroom, include_bodies: bool, written: bool) -> f64 {
    let started = Instant::now();
    for _ in 0..PAGES_PER_ROUND {
        let text = if written {
            core.fetch_inbox_json(request(include_bodies)).await.expect("inbox").0
        } else {
            let page = core.fetch_inbox(request(include_bodies)).await.expect("inbox");
            serde_json::to_string(&page).expect("json")
        };
        std::hint::black_box(text);
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(PAGES_PER_ROUND)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = CoreConfig::for_data_dir(dir.path());
    config.archive.enabled = false;
    let core = Mailroom::open(config).expect("open core");
    core.ensure_project(PROJECT).await.expect("project");
    register(&core, "BlueLake").await;
    register(&core, "GreenCastle").await;
    let open = core.set_contact_policy(PROJECT.into(), "GreenCastle".into(), "open".into());
    open.await.expect("policy");
    let body = "A paragraph of the kind agents send: \"quoted\" words, a path like src/lib.rs, \
                and a second line.\n\n- a list item\n- another one with `code`\n"
        .repeat(4);
    for i in 0..MESSAGES {
        core.send_message(SendMessage {
            project_key: PROJECT.into(),
            sender_name: "BlueLake".into(),
            to: vec!["GreenCastle".into()],
            subject: format!("Status update {i}: the build and the migration"),
            body_md: body.clone(),
            thread_id: Some(format!("T-{}", i % 10)),
            ..SendMessage::default()
        })
        .await
        .expect("send");
    }
    for include_bodies in [false, true] {
        let written = core.fetch_inbox_json(request(include_bodies)).await.expect("inbox").0;
        let page = core.fetch_inbox(request(include_bodies)).await.expect("inbox");
        assert_eq!(written, serde_json::to_string(&page).expect("json"), "the same bytes");
        let (mut direct, mut via_serde) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            direct.push(round(&core, include_bodies, true).await);
            via_serde.push(round(&core, include_bodies, false).await);
        }
        let (direct, via_serde) = (median(direct), median(via_serde));
        println!(
            "inbox page of 20, bodies {include_bodies:<5}: written from rows {direct:7.1} µs, \
             owned rows + serde {via_serde:7.1} µs ({:.2}×), {} bytes",
            via_serde / direct,
            written.len()
        );
    }
}

fn main() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(run());
}
