//! `.env`: the commands an operator runs read the one in the working directory, the process
//! environment winning, as the reference reads its own; the commands coding agents run inside
//! their projects (check-inbox, the stdio bridge) ignore the project's and read the one beside
//! their data directory.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use common::{KillOnDrop, mailroom, stop};

/// `mailroom serve --port 0` run in `dir`; the URL it printed.
fn serve_in(dir: &Path, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = mailroom()
        .current_dir(dir)
        .args(["serve", "--port", "0", "--data-dir", "data"])
        .env("LOG_LEVEL", "warn")
        .env_remove("HTTP_PATH")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn mailroom");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).expect("URL").to_string();
    (child, url)
}

async fn tools_list_status(base: &str, path: &str) -> u16 {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reads_the_working_directorys_env_and_the_environment_wins() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".env"), "# mailroom\nexport HTTP_PATH='/from-dotenv/'\n")
        .expect(".env");
    let (server, url) = serve_in(dir.path(), &[]);
    let server = KillOnDrop(Some(server));
    assert_eq!(tools_list_status(&url, "/from-dotenv/").await, 200, "the .env's HTTP_PATH");
    stop(server.take());

    let (server, url) = serve_in(dir.path(), &[("HTTP_PATH", "/from-env/")]);
    let server = KillOnDrop(Some(server));
    assert_eq!(tools_list_status(&url, "/from-env/").await, 200, "the environment wins");
    assert_eq!(tools_list_status(&url, "/from-dotenv/").await, 404);
    stop(server.take());
}

#[test]
fn a_bad_setting_in_the_env_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".env"), "HTTP_PORT=eighty\n").expect(".env");
    let output = mailroom()
        .current_dir(dir.path())
        .args(["serve", "--data-dir", "data"])
        .env_remove("HTTP_PORT")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("HTTP_PORT must be a port"), "{err}");
}

#[test]
fn setup_takes_the_servers_port_from_the_env() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".env"), "HTTP_PORT=9123\n").expect(".env");
    let output = mailroom()
        .current_dir(dir.path())
        .args(["setup", "install", "--client", "codex", "--dry-run", "--no-hooks"])
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".config"))
        .env_remove("HTTP_PORT")
        .env_remove("HTTP_HOST")
        .env_remove("CODEX_HOME")
        .output()
        .expect("run");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("url = \"http://127.0.0.1:9123/mcp\""), "{out}");
}

#[test]
fn check_inbox_reads_the_env_beside_the_data_directory_not_the_projects() {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project");
    std::fs::write(project.join(".env"), "AGENT_NAME=FromProject\n").expect("project .env");
    let data = dir.path().join("data");
    let run = || {
        mailroom()
            .current_dir(&project)
            .args(["check-inbox", "--format", "json", "--data-dir"])
            .arg(&data)
            .env_remove("AGENT_NAME")
            .output()
            .expect("run")
    };
    let ignored = run();
    assert_eq!(ignored.status.code(), Some(1), "the project's .env is not mailroom's");
    assert!(String::from_utf8_lossy(&ignored.stderr).contains("AGENT_NAME"));
    std::fs::write(dir.path().join(".env"), "AGENT_NAME=BlueLake\n").expect("operator .env");
    let read = run();
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), r#"{"unread":0,"urgent":0}"#);
}
