//! A real PostgreSQL (Debian's `postgresql` package) for the tests of one test binary: a
//! throwaway cluster started on first use on a free loopback port, one fresh database per
//! test, gone when the test binary exits.
//!
//! `MAILROOM_TEST_POSTGRES_URL` (a superuser URL) points the tests at a running server
//! instead; each test still gets a database of its own there.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where Debian installs the server's programs (`postgresql-15`).
const BIN_DIRS: &[&str] =
    &["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"];

/// The superuser URL of the cluster the tests share.
fn cluster_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        std::env::var("MAILROOM_TEST_POSTGRES_URL").unwrap_or_else(|_| start_cluster())
    })
}

/// Whether the tests run their servers on PostgreSQL: `MAILROOM_TEST_BACKEND=postgres`
/// (scripts/test-all runs the integration suite once more so).
pub fn enabled() -> bool {
    std::env::var("MAILROOM_TEST_BACKEND").is_ok_and(|backend| backend == "postgres")
}

/// A URL of a new, empty database for one test.
pub async fn fresh_database_url() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let admin = tokio::task::spawn_blocking(cluster_url).await.expect("the cluster starts");
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL at {admin}: {e}"));
    let connection = tokio::spawn(connection);
    client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create the database");
    drop(client);
    let _ = connection.await;
    let base = admin.rsplit_once('/').map_or(admin, |(base, _)| base);
    format!("{base}/{name}")
}

/// The first column of every row `sql` (one statement) returns from the database at `url`, read
/// as a 64-bit integer.
pub async fn query_i64s(url: &str, sql: &str) -> Vec<i64> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach {url}: {e}"));
    let connection = tokio::spawn(connection);
    let rows = client.query(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    drop(client);
    let _ = connection.await;
    rows.iter().map(|row| row.get::<_, i64>(0)).collect()
}

fn bin(name: &str) -> PathBuf {
    BIN_DIRS
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!("PostgreSQL's {name} is missing: apt-get install postgresql (scripts/test-prerequisites)")
        })
}

/// The user the server runs as: `postgres` when the tests run as root (the server refuses
/// root), else the tests' own.
fn server_user() -> Option<(u32, u32)> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres"))
            .then(|| (fields[2].parse().expect("uid"), fields[3].parse().expect("gid")))
    })
}

/// Starts a cluster in a temporary directory and returns its superuser URL. The server is
/// started from a thread that never ends, with a parent-death signal, so it stops when the
/// test binary exits.
fn start_cluster() -> String {
    use std::os::unix::process::CommandExt;
    let root = std::env::temp_dir();
    remove_stale_clusters(&root);
    let dir = root.join(format!("mailroom-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("cluster directory");
    let user = server_user();
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown the cluster directory");
    }
    let data = dir.join("data");
    let as_user = |command: &mut Command| {
        if let Some((uid, gid)) = user {
            command.uid(uid).gid(gid);
        }
    };
    let mut initdb = Command::new(bin("initdb"));
    initdb
        .args(["-D"])
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        .stdout(Stdio::null());
    as_user(&mut initdb);
    let status = initdb.status().expect("run initdb");
    assert!(status.success(), "initdb failed: {status}");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let mut server = Command::new(bin("postgres"));
    server
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-k"])
        .arg(&dir)
        .args(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
        .args(["-c", "max_connections=300", "-c", "shared_buffers=64MB"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    as_user(&mut server);
    // SAFETY: the closure makes one system call (prctl) and allocates nothing, as code
    // between fork and exec must.
    #[allow(unsafe_code)]
    unsafe {
        server.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::INT))?;
            Ok(())
        });
    }
    let (started, wait) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("test-postgres".into())
        .spawn(move || {
            let child = server.spawn();
            let failed = child.is_err();
            let _ = started.send(child.map(drop).map_err(|e| e.to_string()));
            if !failed {
                // The parent-death signal fires when this thread ends: it never does.
                loop {
                    std::thread::park();
                }
            }
        })
        .expect("start the postgres thread");
    wait.recv().expect("postgres thread").unwrap_or_else(|e| panic!("cannot start postgres: {e}"));
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    // Ready once it accepts connections on its socket (pg_isready asks the server itself).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = Command::new(bin("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-q"])
            .status()
            .is_ok_and(|status| status.success());
        if ready {
            break url;
        }
        assert!(Instant::now() < deadline, "PostgreSQL did not answer on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Removes the cluster directories of test binaries that have exited.
fn remove_stale_clusters(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("mailroom-pg-")) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
