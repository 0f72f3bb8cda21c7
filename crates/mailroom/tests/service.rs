//! `mailroom service`: the unit it writes passes `systemd-analyze verify` and names this
//! binary, the data directory and the environment file; `--dry-run` writes nothing;
//! `uninstall` removes it. (This machine has no systemd user manager: starting is reported,
//! not done.)

mod common;

use std::path::Path;
use std::process::Output;

use common::mailroom;

fn service(home: &Path, args: &[&str]) -> Output {
    mailroom()
        .arg("service")
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .output()
        .expect("run mailroom service")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn verify(unit: &Path) -> Output {
    std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(unit)
        .output()
        .expect("systemd-analyze (Debian's systemd package) is needed by this test")
}

#[test]
fn install_writes_a_unit_systemd_accepts_and_uninstall_removes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let home = dir.path();
    let data = home.join("agent data");
    let env_file = home.join("mailroom.env");
    std::fs::write(&env_file, "HTTP_BEARER_TOKEN=secret\n").expect("env file");
    let unit = home.join(".config/systemd/user/mailroom.service");
    let data_arg = data.to_string_lossy().into_owned();
    let env_arg = env_file.to_string_lossy().into_owned();
    let install = ["install", "--data-dir", &data_arg, "--env-file", &env_arg, "--port", "9123"];

    let dry = service(home, &[&install[..], &["--dry-run"]].concat());
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(text(&dry).contains("ExecStart="), "{}", text(&dry));
    assert!(!unit.exists(), "a dry run writes nothing");

    let written = service(home, &[&install[..], &["--no-start"]].concat());
    assert!(written.status.success(), "{}", text(&written));
    let contents = std::fs::read_to_string(&unit).expect("the unit");
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_mailroom")).expect("exe");
    assert!(contents.contains(&format!("ExecStart={} serve", exe.display())), "{contents}");
    assert!(contents.contains(&format!("--data-dir \"{}\"", data.display())), "{contents}");
    assert!(contents.contains("--port 9123"), "{contents}");
    assert!(contents.contains(&format!("EnvironmentFile={}", env_file.display())), "{contents}");
    let verified = verify(&unit);
    assert!(verified.status.success(), "systemd-analyze verify: {}", text(&verified));

    // The check can fail: a unit whose program is gone does not verify.
    let broken = home.join("broken.service");
    std::fs::write(&broken, contents.replace(&exe.display().to_string(), "/nonexistent/mailroom"))
        .expect("broken unit");
    assert!(!verify(&broken).status.success(), "a missing program fails verification");

    let status = service(home, &["status"]);
    assert!(text(&status).contains("installed:"), "{}", text(&status));

    let removed = service(home, &["uninstall"]);
    assert!(removed.status.success(), "{}", text(&removed));
    assert!(!unit.exists(), "uninstall removes the unit");
    let status = service(home, &["status"]);
    assert!(text(&status).contains("not installed"), "{}", text(&status));
}

#[test]
fn a_missing_env_file_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = service(dir.path(), &["install", "--env-file", "/nonexistent/.env", "--dry-run"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("--env-file /nonexistent/.env"), "{}", text(&output));
}
