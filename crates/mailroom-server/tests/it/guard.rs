//! install_precommit_guard / uninstall_precommit_guard through the MCP endpoint: the gate,
//! the hook written into a real repository with the project's reservations directory, and
//! the removal.

use std::path::Path;

use mailroom_testkit::{ProjectCall, TestApp, TestOptions, git};
use serde_json::json;

#[tokio::test]
async fn install_is_a_no_op_unless_worktrees_are_enabled() {
    let app = TestApp::start().await;
    ProjectCall::new("/abs/guard").ok(&app).await;
    let repo = tempfile::tempdir().expect("tempdir");
    git(repo.path(), &["init", "-q"]);
    let result = app
        .tool_ok(
            "install_precommit_guard",
            json!({"project_key": "abs-guard", "code_repo_path": repo.path()}),
        )
        .await;
    assert_eq!(result, json!({"hook": ""}));
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
    assert!(!repo.path().join(".git/hooks/hooks.d").exists());
}

#[tokio::test]
async fn install_then_uninstall_in_a_repository() {
    let app =
        TestApp::start_with(TestOptions { worktrees_enabled: true, ..Default::default() }).await;
    ProjectCall::new("/abs/guard").ok(&app).await;
    let repo = tempfile::tempdir().expect("tempdir");
    git(repo.path(), &["init", "-q"]);
    let hooks = repo.path().canonicalize().expect("canonical").join(".git/hooks");

    let args = json!({"project_key": "/abs/guard", "code_repo_path": repo.path()});
    let result = app.tool_ok("install_precommit_guard", args).await;
    assert_eq!(result, json!({"hook": hooks.join("pre-commit")}));
    let plugin =
        std::fs::read_to_string(hooks.join("hooks.d/pre-commit/50-agent-mail")).expect("plugin");
    let reservations = app.archive_root().join("projects/abs-guard/file_reservations");
    assert!(
        plugin.contains(&format!("--reservations-dir '{}'", reservations.display())),
        "{plugin}"
    );

    let args = json!({"code_repo_path": repo.path()});
    assert_eq!(
        app.tool_ok("uninstall_precommit_guard", args.clone()).await,
        json!({"removed": true})
    );
    assert!(!hooks.join("pre-commit").exists());
    assert_eq!(app.tool_ok("uninstall_precommit_guard", args).await, json!({"removed": false}));
}

#[tokio::test]
async fn install_refuses_a_path_outside_any_repository() {
    let app =
        TestApp::start_with(TestOptions { worktrees_enabled: true, ..Default::default() }).await;
    ProjectCall::new("/abs/guard").ok(&app).await;
    let missing = "/nonexistent/mailroom/guard-repo";
    let outcome = app
        .call_tool(
            "install_precommit_guard",
            json!({"project_key": "abs-guard", "code_repo_path": missing}),
        )
        .await;
    let error = outcome.expect_err("a missing directory is refused");
    assert!(error.contains("code_repo_path"), "{error}");
    assert!(!Path::new(missing).exists());
}
