//! File reservations end to end: grants and conflicts between agents, refresh, renew,
//! release, force release, and the JSON artifacts in the Git archive.

use std::process::Command;

use mailroom_core::model::time::Timestamp;
use mailroom_testkit::{InboxCall, ReleaseCall, RenewCall, ReserveCall, TestApp, TestOptions, git};
use serde_json::{Value, json};

fn reserve(slug: &str, agent: &str, paths: &[&str], exclusive: bool, reason: &str) -> ReserveCall {
    ReserveCall::new(slug, agent, paths).exclusive(exclusive).reason(reason).ttl(3600)
}

fn instant(value: &Value) -> Timestamp {
    value.as_str().and_then(Timestamp::parse_iso).unwrap_or_else(|| panic!("not a time: {value}"))
}

#[tokio::test]
async fn conflicts_are_reported_beside_grants_between_two_agents() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-a", "BlueLake", "GreenCastle").await;
    let blue = reserve(&slug, "BlueLake", &["src/**"], true, "br-1").ok(&app).await;
    assert_eq!(blue["conflicts"], json!([]));
    assert_eq!(blue["granted"][0]["path_pattern"], "src/**");
    assert_eq!(blue["granted"][0]["reason"], "br-1");

    // An exclusive request under an exclusive glob: granted anyway, with the holder named.
    let green =
        reserve(&slug, "GreenCastle", &["src/app.py", "docs/a.md"], true, "").ok(&app).await;
    assert_eq!(green["granted"].as_array().map(Vec::len), Some(2), "advisory: always granted");
    assert_eq!(green["conflicts"].as_array().map(Vec::len), Some(1), "{green}");
    let conflict = &green["conflicts"][0];
    assert_eq!(conflict["path"], "src/app.py");
    assert_eq!(conflict["holders"][0]["agent"], "BlueLake");
    assert_eq!(conflict["holders"][0]["path_pattern"], "src/**");
    assert_eq!(conflict["holders"][0]["exclusive"], true);

    // A shared request still clashes with an exclusive holder.
    let shared = reserve(&slug, "GreenCastle", &["src/lib.rs"], false, "").ok(&app).await;
    assert_eq!(shared["conflicts"][0]["holders"][0]["agent"], "BlueLake");

    // A file inside another agent's exclusive file reservation, asked for shared, clashes;
    // a request for a glob over a narrower reservation is not reported (the reference's
    // pre-filter matches existing patterns against the requested text only).
    let over = reserve(&slug, "BlueLake", &["docs/a.md", "docs/**"], false, "").ok(&app).await;
    assert_eq!(over["conflicts"].as_array().map(Vec::len), Some(1), "{over}");
    assert_eq!(over["conflicts"][0]["path"], "docs/a.md");
}

#[tokio::test]
async fn shared_reservations_do_not_conflict_and_own_ones_refresh_in_place() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-b", "BlueLake", "GreenCastle").await;
    let first = reserve(&slug, "BlueLake", &["lib/*.rs"], false, "read").ok(&app).await;
    let other = reserve(&slug, "GreenCastle", &["lib/a.rs"], false, "").ok(&app).await;
    assert_eq!(other["conflicts"], json!([]), "two shared reservations never clash");

    let again = reserve(&slug, "BlueLake", &["lib/*.rs"], true, "").ok(&app).await;
    assert_eq!(again["granted"][0]["id"], first["granted"][0]["id"], "same pattern: same row");
    assert_eq!(again["granted"][0]["reason"], "read", "an empty reason keeps the old one");
    assert_eq!(again["granted"][0]["exclusive"], true);
    assert!(
        instant(&again["granted"][0]["expires_ts"]) >= instant(&first["granted"][0]["expires_ts"])
    );
    assert_eq!(again["conflicts"], json!([]), "own reservations never clash");

    let empty = reserve(&slug, "BlueLake", &[], true, "").call(&app).await;
    assert!(empty.expect_err("empty paths").contains("paths list cannot be empty"));
}

#[tokio::test]
async fn renew_clamps_to_a_minute_and_release_is_idempotent() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-c", "BlueLake", "GreenCastle").await;
    reserve(&slug, "BlueLake", &["a.txt", "b.txt"], true, "").ok(&app).await;
    let renewed = RenewCall::new(&slug, "BlueLake").extend(5).paths(&["a.txt"]).ok(&app).await;
    assert_eq!(renewed["renewed"], 1);
    let row = &renewed["file_reservations"][0];
    assert_eq!(row["path_pattern"], "a.txt");
    let added =
        instant(&row["new_expires_ts"]).as_micros() - instant(&row["old_expires_ts"]).as_micros();
    assert_eq!(added, 60_000_000, "extensions below 60 s count as 60 s");

    let released = ReleaseCall::new(&slug, "BlueLake").ok(&app).await;
    assert_eq!(released["released"], 2);
    assert!(released["released_at"].is_string());
    let again = ReleaseCall::new(&slug, "BlueLake").ok(&app).await;
    assert_eq!(again["released"], 0, "releasing twice is harmless");
    let nothing = RenewCall::new(&slug, "BlueLake").ok(&app).await;
    assert_eq!(nothing, json!({"renewed": 0, "file_reservations": []}));
    let bad = app
        .call_tool(
            "release_file_reservations",
            json!({"project_key": slug, "agent_name": "BlueLake", "file_reservation_ids": []}),
        )
        .await;
    assert!(bad.expect_err("empty ids").contains("cannot be empty"));
}

#[tokio::test]
async fn force_release_is_refused_while_the_holder_is_active() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-d", "BlueLake", "GreenCastle").await;
    let held = reserve(&slug, "GreenCastle", &["src/**"], true, "").ok(&app).await;
    let id = held["granted"][0]["id"].clone();
    let refused = app
        .call_tool(
            "force_release_file_reservation",
            json!({"project_key": slug, "agent_name": "BlueLake", "file_reservation_id": id}),
        )
        .await
        .expect_err("the holder is active");
    assert!(
        refused.contains("still active") && refused.contains("agent_recently_active"),
        "{refused}"
    );
    let missing = app
        .call_tool(
            "force_release_file_reservation",
            json!({"project_key": slug, "agent_name": "BlueLake", "file_reservation_id": 9999}),
        )
        .await
        .expect_err("no such reservation");
    assert!(missing.contains("File reservation id=9999 not found"), "{missing}");
}

#[tokio::test]
async fn a_stale_reservation_is_force_released_and_its_holder_told() {
    // Inactive after 0 s and no grace: every holder looks abandoned at once.
    let app = TestApp::start_with(TestOptions {
        reservation_staleness: Some((0, 0)),
        ..TestOptions::default()
    })
    .await;
    let slug = app.seed_pair("/work/res-e", "BlueLake", "GreenCastle").await;
    let held = reserve(&slug, "GreenCastle", &["src/**"], true, "").ok(&app).await;
    let id = held["granted"][0]["id"].clone();
    let released = app
        .tool_ok(
            "force_release_file_reservation",
            json!({"project_key": slug, "agent_name": "BlueLake", "file_reservation_id": id, "note": "blocked on it"}),
        )
        .await;
    assert_eq!(released["released"], 1, "{released}");
    let reservation = &released["reservation"];
    assert_eq!(reservation["agent"], "GreenCastle");
    assert_eq!(reservation["notified"], true, "{released}");
    assert_eq!(
        reservation["stale_reasons"],
        json!(["agent_inactive>0s", "no_recent_mail_activity>0s", "workspace_unavailable"])
    );
    let inbox = InboxCall::new(&slug, "GreenCastle").include_bodies(true).ok(&app).await;
    assert_eq!(inbox[0]["subject"], "[file-reservations] Released stale lock on src/**");
    assert!(inbox[0]["body_md"].as_str().is_some_and(|b| b.contains("blocked on it")));
    let again = app
        .tool_ok(
            "force_release_file_reservation",
            json!({"project_key": slug, "agent_name": "BlueLake", "file_reservation_id": id}),
        )
        .await;
    assert_eq!(again["already_released"], true);
    assert_eq!(again["released"], 0);
}

#[tokio::test]
async fn reservation_artifacts_are_committed_as_json() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-f", "BlueLake", "GreenCastle").await;
    // Profiles first, so the reservation commit is not batched with them.
    app.archive_flushed().await;
    let held = reserve(&slug, "BlueLake", &["src/**", "docs/"], true, "br-9").ok(&app).await;
    let id = held["granted"][0]["id"].as_i64().expect("id");
    app.archive_flushed().await;
    let root = app.archive_root();
    let log = git(&root, &["log", "-1", "--format=%B"]);
    assert!(
        log.starts_with(
            "file_reservation: BlueLake src/** (+1 more)\n\n- BlueLake src/**\n- BlueLake docs/\n"
        ),
        "{log}"
    );
    let by_id =
        git(&root, &["show", &format!("HEAD:projects/{slug}/file_reservations/id-{id}.json")]);
    assert!(
        by_id.ends_with("}\n") && by_id.contains("\n  \"agent\": \"BlueLake\""),
        "indent 2: {by_id}"
    );
    let record: Value = serde_json::from_str(&by_id).expect("JSON");
    assert_eq!(record["path_pattern"], "src/**");
    assert_eq!(record["project"], "/work/res-f");
    assert_eq!(record["reason"], "br-9");
    assert!(record.get("released_ts").is_none());
    let keys: Vec<&String> = record.as_object().expect("object").keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "sorted keys");

    ReleaseCall::new(&slug, "BlueLake").paths(&["src/**"]).ok(&app).await;
    app.archive_flushed().await;
    let digest = sha1_hex("src/**");
    let legacy =
        git(&root, &["show", &format!("HEAD:projects/{slug}/file_reservations/{digest}.json")]);
    let record: Value = serde_json::from_str(&legacy).expect("JSON");
    assert_eq!(record["id"], id);
    assert_eq!(record["released_ts"], record["expires_ts"], "expiry clamped to the release");
    assert_eq!(
        git(&root, &["log", "-1", "--format=%s"]).trim(),
        "file_reservation: BlueLake src/**"
    );
}

fn sha1_hex(text: &str) -> String {
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s' '{text}' | sha1sum"))
        .output()
        .expect("sha1sum");
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The listing behind `resource://file_reservations/{slug}` has the fixture's row shape.
#[tokio::test]
async fn the_listing_has_the_resource_row_shape() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-g", "BlueLake", "GreenCastle").await;
    reserve(&slug, "BlueLake", &["src/**", "b.md"], true, "br-123").ok(&app).await;
    ReleaseCall::new(&slug, "BlueLake").paths(&["b.md"]).ok(&app).await;
    let all = app.core.list_file_reservations(slug.clone(), false).await.expect("list");
    let rows = serde_json::to_value(&all).expect("JSON");
    let expected_keys = [
        "agent",
        "created_ts",
        "exclusive",
        "expires_ts",
        "id",
        "last_agent_activity_ts",
        "last_filesystem_activity_ts",
        "last_git_activity_ts",
        "last_mail_activity_ts",
        "path_pattern",
        "reason",
        "released_ts",
        "stale",
        "stale_reasons",
    ];
    let mut keys: Vec<&String> = rows[0].as_object().expect("row").keys().collect();
    keys.sort();
    assert_eq!(keys, expected_keys.iter().collect::<Vec<_>>());
    assert_eq!(rows[0]["path_pattern"], "src/**");
    assert_eq!(rows[0]["stale"], false);
    assert_eq!(rows[0]["stale_reasons"][0], "agent_recently_active");
    assert_eq!(rows[0]["stale_reasons"][2], "workspace_unavailable");
    assert!(rows[1]["released_ts"].is_string());
    let active = app.core.list_file_reservations(slug, true).await.expect("list");
    assert_eq!(active.len(), 1, "released ones are left out");
}

/// Expired reservations are released by the next request's sweep, stale ones too.
#[tokio::test]
async fn the_sweep_releases_expired_and_stale_reservations() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-h", "BlueLake", "GreenCastle").await;
    reserve(&slug, "GreenCastle", &["src/**"], true, "").ok(&app).await;
    // A TTL must be at least a second (docs/compat/tools.md §1.9): the time passes in the row.
    let sql = "UPDATE file_reservations SET expires_ts = '2000-01-01 00:00:00.000000'";
    assert_eq!(app.execute_sql(sql).await, 1, "expired");
    let after = reserve(&slug, "BlueLake", &["src/a.rs"], true, "").ok(&app).await;
    assert_eq!(after["conflicts"], json!([]), "an expired reservation clashes with nothing");
    let rows = app.core.list_file_reservations(slug.clone(), false).await.expect("list");
    assert!(rows[0].released_ts.is_some(), "the sweep released the expired one");

    let idle = TestApp::start_with(TestOptions {
        reservation_staleness: Some((0, 0)),
        ..TestOptions::default()
    })
    .await;
    let slug = idle.seed_pair("/work/res-i", "BlueLake", "GreenCastle").await;
    reserve(&slug, "GreenCastle", &["src/**"], true, "").ok(&idle).await;
    let after = reserve(&slug, "BlueLake", &["src/a.rs"], true, "").ok(&idle).await;
    assert_eq!(after["conflicts"], json!([]), "a stale holder's reservation was swept");
    let rows = idle.core.list_file_reservations(slug, false).await.expect("list");
    assert_eq!(rows[0].agent, "GreenCastle");
    assert!(rows[0].released_ts.is_some(), "released by the sweep of the second request");
}

/// Concurrent exclusive requests for one path serialise: exactly one sees the other.
#[tokio::test]
async fn concurrent_requests_serialise() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/res-j", "BlueLake", "GreenCastle").await;
    let (blue, green) = (
        reserve(&slug, "BlueLake", &["lib.rs"], true, ""),
        reserve(&slug, "GreenCastle", &["lib.rs"], true, ""),
    );
    let (blue, green) = tokio::join!(blue.ok(&app), green.ok(&app));
    let reported = [&blue, &green].iter().filter(|r| r["conflicts"] != json!([])).count();
    assert_eq!(reported, 1, "{blue} / {green}");
}
