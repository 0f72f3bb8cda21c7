use mailroom_testkit::TestApp;

#[tokio::test]
async fn liveness_and_readiness_answer() {
    let app = TestApp::start().await;
    assert_eq!(app.get("/health").await, (200, r#"{"status":"ok"}"#.to_string()));
    assert_eq!(app.get("/health/liveness").await, (200, r#"{"status":"alive"}"#.to_string()));
    for path in ["/ready", "/health/readiness"] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.contains("ready"), "{path}: {body}");
    }
    let (status, body) = app.get("/api/health").await;
    assert_eq!(status, 200);
    assert!(body.contains("\"timestamp\""), "{body}");
    app.stop().await;
}

#[tokio::test]
async fn readiness_reports_an_unusable_database_with_503() {
    let app = TestApp::start().await;
    assert_eq!(app.get("/ready").await.0, 200, "ready before");
    if app.core.config().postgres.is_some() {
        // The database losing a table readiness reads under a running server (an operator's
        // mistaken DROP, a restore gone wrong): readiness must say so.
        app.execute_sql("DROP TABLE projects CASCADE").await;
    } else {
        // An operator deleting the data directory under a running server: readiness must
        // say so.
        let database = app.data_path().join("mailroom.sqlite3");
        std::fs::remove_file(&database).expect("remove database");
    }
    let (status, body) = app.get("/ready").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("detail"), "{body}");
}

#[tokio::test]
async fn oauth_discovery_is_declined() {
    let app = TestApp::start().await;
    let (status, body) = app.get("/.well-known/oauth-authorization-server").await;
    assert_eq!((status, body.as_str()), (404, r#"{"mcp_oauth":false}"#));
}
