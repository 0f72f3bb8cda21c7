//! The REST API mirrors the tools.

use mailroom_testkit::TestApp;
use serde_json::json;

#[tokio::test]
async fn rest_routes_return_the_tool_shapes() {
    let app = TestApp::start().await;
    let (status, project) =
        app.post("/api/project/ensure", json!({"human_key": "/work/rest"})).await;
    assert_eq!(status, 200, "{project}");
    let slug = project["slug"].as_str().expect("slug").to_string();
    for name in ["BlueLake", "GreenCastle"] {
        let (status, agent) = app
            .post(
                "/api/agent/register",
                json!({"project_slug": slug, "name": name,
            "program": "bench", "model": "none"}),
            )
            .await;
        assert_eq!((status, agent["name"].as_str()), (200, Some(name)));
    }
    app.tool_ok(
        "set_contact_policy",
        json!({"project_key": slug, "agent_name": "GreenCastle", "policy": "open"}),
    )
    .await;
    let (status, sent) = app.post("/api/message/send", json!({"project_slug": slug, "sender_name": "BlueLake",
        "recipient_names": ["GreenCastle"], "subject": "Load", "body_md": "test body", "importance": "high"})).await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["deliveries"][0]["payload"]["id"].as_i64().expect("id");
    let (status, inbox) = app
        .post(
            "/api/inbox",
            json!({"project_slug": slug, "agent_name": "GreenCastle",
        "include_bodies": true}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(inbox[0]["id"], id);
    assert_eq!(inbox[0]["body_md"], "test body");
    let (status, hits) =
        app.post("/api/messages/search", json!({"project_slug": slug, "query": "body"})).await;
    assert_eq!((status, hits["result"][0]["id"].as_i64()), (200, Some(id)));
}

#[tokio::test]
async fn rest_errors_are_json_with_a_stable_type() {
    let app = TestApp::start().await;
    let (status, body) =
        app.post("/api/inbox", json!({"project_slug": "missing", "agent_name": "X"})).await;
    assert_eq!((status, body["error"]["type"].as_str()), (404, Some("NOT_FOUND")), "{body}");
    let (status, body) = app.post("/api/message/send", json!({"project_slug": "x"})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"].as_str().unwrap_or_default().contains("sender_name"),
        "{body}"
    );
    let (status, body) =
        app.post("/api/project/ensure", json!({"human_key": "/w", "extra": 1})).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("extra"), "{body}");
}
