//! The built binary, run as a user runs it: start-up line, data-dir lock, signals.

mod common;

use std::process::Command;

use common::{mailroom, start};

#[test]
fn help_names_the_serve_command() {
    let output = mailroom().arg("--help").output().expect("run --help");
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("serve"), "{text}");
}

#[test]
fn a_second_server_on_the_same_data_dir_is_refused_and_sigterm_stops_cleanly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut first, url) = start(dir.path());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let second = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run second server");
    assert_eq!(second.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("Another mailroom server is already running"), "{stderr}");
    assert!(stderr.contains(&first.id().to_string()), "names the running PID: {stderr}");

    let killed =
        Command::new("kill").args(["-TERM", &first.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = first.wait().expect("wait");
    assert!(status.success(), "graceful shutdown exits 0, got {status:?}");
}

#[test]
fn invalid_environment_is_a_clear_start_up_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env("CONTACT_ENFORCEMENT_ENABLED", "maybe")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("CONTACT_ENFORCEMENT_ENABLED"), "{stderr}");
}

#[test]
fn two_servers_cannot_share_one_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archive = dir.path().join("shared-archive");
    let mut first = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path().join("a"))
        .env("STORAGE_ROOT", &archive)
        .env("LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn first");
    let mut line = String::new();
    let stdout = first.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("line");

    let second = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path().join("b"))
        .env("STORAGE_ROOT", &archive)
        .output()
        .expect("run second server");
    assert_eq!(second.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("archive") && stderr.contains(&first.id().to_string()), "{stderr}");

    first.kill().expect("kill");
    first.wait().expect("wait");
}
