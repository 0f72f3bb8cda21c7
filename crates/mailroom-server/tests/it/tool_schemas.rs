//! Golden snapshots of the public tool contracts: every tool that `tools/list` shows (with
//! WORKTREES_ENABLED, so all of them) has its name, description and input schema stored under
//! `tests/snapshots/tools/<name>.json`. A schema change then shows up in review as a diff of
//! that file. `UPDATE_SNAPSHOTS=1 cargo test -p mailroom-server --test it tool_schemas` rewrites
//! the files after an intended change.

use std::collections::BTreeSet;
use std::path::PathBuf;

use mailroom_testkit::{TestApp, TestOptions};
use serde_json::{Value, json};

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/tools")
}

#[tokio::test]
async fn every_tool_schema_matches_its_snapshot() {
    let app =
        TestApp::start_with(TestOptions { worktrees_enabled: true, ..Default::default() }).await;
    let listed = app.rpc("tools/list", Value::Null).await;
    let tools = listed["result"]["tools"].as_array().expect("tools/list answers tools").clone();
    let update = std::env::var_os("UPDATE_SNAPSHOTS").is_some();
    let dir = snapshot_dir();
    if update {
        std::fs::create_dir_all(&dir).expect("snapshot dir");
    }

    let mut problems = Vec::new();
    let mut listed_names = BTreeSet::new();
    for tool in &tools {
        let name = tool["name"].as_str().expect("tool name").to_string();
        let snapshot = json!({
            "name": name,
            "description": tool["description"],
            "inputSchema": tool["inputSchema"],
        });
        let text = serde_json::to_string_pretty(&snapshot).expect("encode") + "\n";
        let path = dir.join(format!("{name}.json"));
        listed_names.insert(name.clone());
        if update {
            std::fs::write(&path, &text).expect("write snapshot");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(stored) if stored == text => {}
            Ok(stored) => problems.push(format!(
                "{name}: schema differs from {}\n  stored: {stored}\n  now:    {text}",
                path.display()
            )),
            Err(_) => problems.push(format!("{name}: no snapshot at {}", path.display())),
        }
    }
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(name) = file.strip_suffix(".json")
            && !listed_names.contains(name)
        {
            if update {
                std::fs::remove_file(entry.path()).expect("remove stale snapshot");
            } else {
                problems.push(format!("{name}: snapshot of a tool tools/list no longer shows"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "tool contracts changed (rerun with UPDATE_SNAPSHOTS=1 if intended):\n{}",
        problems.join("\n")
    );
}
