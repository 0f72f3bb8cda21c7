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

    assert!(dir.path().join("mailroom.sqlite3-wal").exists(), "a running server writes a WAL");
    let killed =
        Command::new("kill").args(["-TERM", &first.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let status = first.wait().expect("wait");
    assert!(status.success(), "graceful shutdown exits 0, got {status:?}");
    // The database was closed: its WAL folded back into the file and removed.
    assert!(dir.path().join("mailroom.sqlite3").is_file(), "the database stays");
    for leftover in ["mailroom.sqlite3-wal", "mailroom.sqlite3-shm"] {
        assert!(!dir.path().join(leftover).exists(), "{leftover} left after a graceful stop");
    }
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

/// `LOG_FORMAT=json`: every line on stderr is one JSON object with the event's fields at the
/// top level; a format that is neither text nor json stops start-up, naming the variable.
#[test]
fn json_logs_are_one_object_a_line_and_unknown_formats_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut server = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env("LOG_LEVEL", "info")
        .env("LOG_FORMAT", "JSON")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    let stdout = server.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("line");
    assert!(line.contains("http://127.0.0.1:"), "{line}");
    let mut logs = server.stderr.take().expect("stderr");
    common::stop(server);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut logs, &mut stderr).expect("stderr");
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let listening = events
        .iter()
        .find(|e| e["message"] == "mailroom listening")
        .unwrap_or_else(|| panic!("no listening event in {stderr}"));
    assert_eq!(listening["level"], "INFO");
    assert!(listening["local"].as_str().is_some_and(|a| a.starts_with("127.0.0.1:")));
    assert!(listening["timestamp"].is_string() && listening["target"].is_string());

    let refused = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .env("LOG_FORMAT", "xml")
        .output()
        .expect("run");
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("LOG_FORMAT must be text or json"), "{stderr}");
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

/// A second server given another server's database through `DATABASE_URL` (its own data
/// directory and archive; the database by its path, through a symlinked directory, with `..`,
/// by a hard link) is refused before it opens it: two archive writers would commit one queue
/// into two archives.
#[test]
fn two_servers_cannot_share_one_database_by_any_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first_dir = dir.path().join("a");
    let (first, _) = start(&first_dir);
    let first = common::KillOnDrop(Some(first));
    let database = first_dir.join("mailroom.sqlite3");
    assert!(database.exists(), "the first server's database is {}", database.display());
    let link = dir.path().join("link-to-a");
    std::os::unix::fs::symlink(&first_dir, &link).expect("symlink");
    let hard_link = dir.path().join("same-inode.sqlite3");
    std::fs::hard_link(&database, &hard_link).expect("hard link");
    let spellings = [
        format!("sqlite:///{}", database.display()),
        format!("sqlite+aiosqlite:///{}/mailroom.sqlite3", link.display()),
        format!("sqlite:///{}/../a/./mailroom.sqlite3", first_dir.display()),
        format!("sqlite:///{}", hard_link.display()),
    ];
    for (index, url) in spellings.iter().enumerate() {
        let second = mailroom()
            .args(["serve", "--port", "0", "--data-dir"])
            .arg(dir.path().join(format!("b{index}")))
            .env("DATABASE_URL", url)
            .output()
            .expect("run second server");
        assert_eq!(second.status.code(), Some(1), "{url}");
        let stderr = String::from_utf8_lossy(&second.stderr);
        let pid = first.0.as_ref().map(|c| c.id().to_string()).unwrap_or_default();
        // Through another hard link the holder's pid file (named by path) is not found.
        let pid = if url.contains("same-inode") { "unknown".to_string() } else { pid };
        assert!(
            stderr.contains("Another mailroom server is already using the database")
                && stderr.contains(&format!("(PID: {pid})")),
            "{url}: {stderr}"
        );
    }
    common::stop(first.take());
}

/// `docs insert-blurbs` on a repository: every instruction file gains the section once, a
/// second run changes nothing, `--dry-run` writes nothing, `--remove` gives back the files.
#[test]
fn insert_blurbs_adds_the_section_once_and_removes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path();
    let agents = "# House rules\n\nRun the tests before you push.\n";
    let claude = "# Claude\n\nBe brief.\n";
    std::fs::write(repo.join("AGENTS.md"), agents).expect("AGENTS.md");
    std::fs::create_dir_all(repo.join("web")).expect("web/");
    std::fs::write(repo.join("web/CLAUDE.md"), claude).expect("CLAUDE.md");
    std::fs::create_dir_all(repo.join("node_modules/x")).expect("node_modules");
    std::fs::write(repo.join("node_modules/x/AGENTS.md"), "vendored").expect("vendored");
    let run = |extra: &[&str]| {
        let output = mailroom()
            .args(["docs", "insert-blurbs", "--scan-dir"])
            .arg(repo)
            .args(extra)
            .output()
            .expect("run");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let read = |path: &str| std::fs::read_to_string(repo.join(path)).expect("read");

    let planned = run(&["--dry-run"]);
    assert!(planned.contains("would be section added to"), "{planned}");
    assert_eq!(read("AGENTS.md"), agents, "a dry run writes nothing");

    let added = run(&[]);
    assert_eq!(added.matches("section added to").count(), 2, "{added}");
    for (path, original) in [("AGENTS.md", agents), ("web/CLAUDE.md", claude)] {
        let text = read(path);
        assert!(text.starts_with(original), "the user's text stays first: {text}");
        assert_eq!(text.matches("macro_start_session").count(), 1, "{text}");
    }
    assert_eq!(read("node_modules/x/AGENTS.md"), "vendored", "vendored trees are skipped");

    let again = run(&[]);
    assert_eq!(again.matches("unchanged").count(), 2, "idempotent: {again}");

    run(&["--remove"]);
    assert_eq!(read("AGENTS.md"), agents);
    assert_eq!(read("web/CLAUDE.md"), claude);
}

/// A command holding the data directory for its moment (not a server) is waited for: a shell
/// command and a server started meanwhile take their turn instead of failing.
#[test]
fn commands_and_a_server_wait_for_a_command_that_holds_the_data_directory() {
    use std::io::BufRead as _;

    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let migrated = mailroom().arg("migrate").arg("--data-dir").arg(data).output().expect("migrate");
    assert!(migrated.status.success(), "{}", String::from_utf8_lossy(&migrated.stderr));
    // This test plays the command in the way: it holds the lock, as a command does.
    let hold = || {
        let lock = std::fs::File::create(data.join("server.lock")).expect("lock file");
        lock.try_lock().expect("the lock is free");
        std::fs::write(data.join("server.pid"), format!("{}\n", std::process::id())).expect("pid");
        lock
    };

    let lock = hold();
    let listing = mailroom()
        .args(["list-projects", "--json", "--data-dir"])
        .arg(data)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(lock);
    let listed = listing.wait_with_output().expect("wait");
    assert!(listed.status.success(), "it waited: {}", String::from_utf8_lossy(&listed.stderr));
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "[]");

    let lock = hold();
    let mut server = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data)
        .env("LOG_LEVEL", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn server");
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(lock);
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    assert!(line.contains("http://127.0.0.1:"), "the server started after the command: {line}");
    common::stop(server);
}
