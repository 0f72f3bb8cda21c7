//! The in-memory reservation sets (`active.rs`) against the database: random sequences of
//! reserve / renew / release / expiry / force release / agent deletion / rolled-back writes,
//! run on a core with the cache and on one without (every check from SQL), must answer alike,
//! and whenever a cached set claims to be current it must list exactly SQL's reservations in
//! force.

use std::sync::Arc;

use proptest::prelude::*;

use super::active::ActiveReservations;
use super::*;
use crate::config::CoreConfig;
use crate::ops::agents::Registration;
use crate::ops::projects::lifecycle::HARD_DELETE_CONFIRMATION;
use crate::records::{ProjectId, ReservationId};

const PROJECT: &str = "/work/cache";
const AGENTS: [&str; 3] = ["BlueLake", "GreenCastle", "RedStone"];
/// Files, globs, a directory, a negation and a virtual pattern, overlapping in many ways.
const PATHS: [&str; 12] = [
    "src/app.py",
    "src/**",
    "src",
    "*.py",
    "docs/",
    "docs/a.md",
    "src/*.py",
    "tool://build",
    "!src/app.py",
    "lib/x.rs",
    "/src/app.py",
    "src\\lib.py",
];

#[derive(Debug, Clone)]
enum Op {
    Reserve {
        agent: usize,
        paths: Vec<usize>,
        ttl: i64,
        exclusive: bool,
    },
    Renew {
        agent: usize,
        extend: i64,
        path: Option<usize>,
    },
    Release {
        agent: usize,
        path: Option<usize>,
    },
    ForceRelease {
        agent: usize,
        nth: usize,
    },
    /// Expiry moved into the past behind the ops' back (a foreign change).
    Expire {
        nth: usize,
    },
    /// A release in a write job that then fails: rolled back.
    RolledBackRelease {
        nth: usize,
    },
    /// A whole reserve job (its set kept) that then fails: rolled back.
    RolledBackReserve {
        agent: usize,
        path: usize,
    },
    /// The agent is hard-deleted and registered again (a new id).
    Recreate {
        agent: usize,
    },
    List,
}

fn op() -> impl Strategy<Value = Op> {
    let agent = 0..AGENTS.len();
    let path = 0..PATHS.len();
    prop_oneof![
        6 => (agent.clone(), prop::collection::vec(path.clone(), 1..4),
              prop::sample::select(vec![-10_i64, 0, 3600, 7200]), any::<bool>())
            .prop_map(|(agent, paths, ttl, exclusive)| Op::Reserve { agent, paths, ttl, exclusive }),
        2 => (agent.clone(), prop::sample::select(vec![0_i64, 600]), prop::option::of(path.clone()))
            .prop_map(|(agent, extend, path)| Op::Renew { agent, extend, path }),
        2 => (agent.clone(), prop::option::of(path.clone()))
            .prop_map(|(agent, path)| Op::Release { agent, path }),
        1 => (agent.clone(), any::<usize>()).prop_map(|(agent, nth)| Op::ForceRelease { agent, nth }),
        1 => any::<usize>().prop_map(|nth| Op::Expire { nth }),
        1 => any::<usize>().prop_map(|nth| Op::RolledBackRelease { nth }),
        1 => (agent.clone(), path)
            .prop_map(|(agent, path)| Op::RolledBackReserve { agent, path }),
        1 => agent.prop_map(|agent| Op::Recreate { agent }),
        1 => Just(Op::List),
    ]
}

async fn open(dir: &std::path::Path, cached: bool) -> Mailroom {
    let mut config = CoreConfig::for_data_dir(dir);
    config.archive.enabled = false;
    let mut core = Mailroom::open(config).expect("open");
    if !cached {
        core.active_reservations = Arc::new(ActiveReservations::disabled());
    }
    core.ensure_project(PROJECT).await.expect("project");
    for name in AGENTS {
        register(&core, name).await;
    }
    core
}

async fn register(core: &Mailroom, name: &str) {
    core.register_agent(Registration {
        project_key: PROJECT.into(),
        program: "test".into(),
        model: "test".into(),
        name: Some(name.into()),
        ..Registration::default()
    })
    .await
    .expect("register");
}

async fn project_id(core: &Mailroom) -> ProjectId {
    core.store.read(|db| Ok(resolve::project(db, PROJECT)?.id)).await.expect("project id")
}

/// The project's reservation ids, in id order (released ones included).
async fn ids(core: &Mailroom) -> Vec<ReservationId> {
    let id = project_id(core).await;
    let rows = core.store.read(move |db| db.project_reservations(id)).await.expect("rows");
    rows.iter().map(|r| r.id).collect()
}

fn nth(ids: &[ReservationId], n: usize) -> Option<ReservationId> {
    (!ids.is_empty()).then(|| ids[n % ids.len()])
}

/// The JSON of an outcome without its clock readings, which differ between two runs.
fn timeless<T: serde::Serialize>(outcome: Result<T>) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.retain(|key, _| !key.ends_with("_ts") && !key.ends_with("_at"));
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = match outcome {
        Ok(value) => serde_json::to_value(value).expect("json"),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    };
    strip(&mut value);
    value
}

async fn apply(core: &Mailroom, op: &Op) -> serde_json::Value {
    let key = || PROJECT.to_string();
    let name = |agent: &usize| AGENTS[*agent].to_string();
    match op {
        Op::Reserve { agent, paths, ttl, exclusive } => timeless(
            core.file_reservation_paths(ReservePaths {
                project_key: key(),
                agent_name: name(agent),
                paths: paths.iter().map(|&p| PATHS[p].to_string()).collect(),
                ttl_seconds: *ttl,
                exclusive: *exclusive,
                reason: format!("r{ttl}"),
            })
            .await,
        ),
        Op::Renew { agent, extend, path } => {
            let selection =
                Selection { paths: path.map(|p| vec![PATHS[p].to_string()]), ids: None };
            timeless(core.renew_file_reservations(key(), name(agent), *extend, selection).await)
        }
        Op::Release { agent, path } => {
            let selection =
                Selection { paths: path.map(|p| vec![PATHS[p].to_string()]), ids: None };
            timeless(core.release_file_reservations(key(), name(agent), selection).await)
        }
        Op::ForceRelease { agent, nth: n } => {
            let Some(id) = nth(&ids(core).await, *n) else { return serde_json::Value::Null };
            let request = ForceRelease {
                project_key: key(),
                agent_name: name(agent),
                file_reservation_id: id,
                notify_previous: false,
                note: String::new(),
            };
            timeless(core.force_release_file_reservation(request).await)
        }
        Op::Expire { nth: n } => {
            let Some(id) = nth(&ids(core).await, *n) else { return serde_json::Value::Null };
            let past = Timestamp::now().plus_seconds(-30);
            timeless(core.store.write(move |db| db.set_reservation_expiry(id, past)).await)
        }
        Op::RolledBackRelease { nth: n } => {
            let Some(id) = nth(&ids(core).await, *n) else { return serde_json::Value::Null };
            let outcome: Result<()> = core
                .store
                .write(move |db| {
                    db.release_reservation(id, Timestamp::now())?;
                    Err(Error::invalid("rolled back on purpose"))
                })
                .await;
            timeless(outcome)
        }
        Op::RolledBackReserve { agent, path } => {
            let req = ReservePaths {
                project_key: key(),
                agent_name: name(agent),
                paths: vec![PATHS[*path].to_string()],
                ttl_seconds: 3600,
                exclusive: true,
                reason: "rolled back".into(),
            };
            let active = Arc::clone(&core.active_reservations);
            let outcome: Result<()> = core
                .store
                .write(move |db| {
                    reserve_job(db, &active, &req, &[])?;
                    Err(Error::invalid("rolled back on purpose"))
                })
                .await;
            timeless(outcome)
        }
        Op::Recreate { agent } => {
            let deleted = core
                .hard_delete_agent(key(), name(agent), HARD_DELETE_CONFIRMATION.into())
                .await
                .map(|d| d.deleted_counts.rows.file_reservations);
            register(core, AGENTS[*agent]).await;
            timeless(deleted)
        }
        Op::List => timeless(core.list_file_reservations(key(), true).await.map(|rows| {
            rows.into_iter().map(|r| (r.id, r.agent, r.path_pattern)).collect::<Vec<_>>()
        })),
    }
}

/// Whether the cached set is current; if it is, asserts it lists exactly the reservations SQL
/// finds in force.
async fn cache_agrees(core: &Mailroom) -> bool {
    let id = project_id(core).await;
    let (stamp, in_force, now) = core
        .store
        .write(move |db| {
            let now = Timestamp::now();
            let stamp = db.reservation_stamp(id)?;
            let mut in_force = Vec::new();
            db.scan_active_reservations(id, now, |row| in_force.push(row.id))?;
            in_force.sort_unstable();
            Ok((stamp, in_force, now))
        })
        .await
        .expect("scan");
    match core.active_reservations.cached(id) {
        Some(set) if set.stamp() == stamp => {
            assert_eq!(set.in_force_ids(now), in_force, "cached set differs from the database");
            true
        }
        _ => false,
    }
}

fn run_both(ops: &[Op]) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
    runtime.block_on(async {
        let (dir_a, dir_b) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
        let cached = open(dir_a.path(), true).await;
        let plain = open(dir_b.path(), false).await;
        for (step, op) in ops.iter().enumerate() {
            let with_cache = apply(&cached, op).await;
            let without = apply(&plain, op).await;
            assert_eq!(with_cache, without, "step {step}: {op:?}");
            cache_agrees(&cached).await;
        }
        assert_eq!(ids(&cached).await, ids(&plain).await);
        cached.close();
        plain.close();
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn cached_sets_answer_as_sql(ops in prop::collection::vec(op(), 1..30)) {
        run_both(&ops);
    }
}

/// The cache is used, not merely consistent: reserve, renew and release keep it current;
/// a change it did not see (expiry moved by hand, force release) makes it stale, and the next
/// request loads it again; a rolled-back write leaves it current and right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservation_ops_keep_the_set_current() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path(), true).await;
    let reserve = |agent: usize, path: &str| {
        let op = Op::Reserve {
            agent,
            paths: vec![PATHS.iter().position(|p| *p == path).expect("path")],
            ttl: 3600,
            exclusive: true,
        };
        let core = core.clone();
        async move { apply(&core, &op).await }
    };
    reserve(0, "src/**").await;
    assert!(cache_agrees(&core).await, "after a first reserve");
    let outcome = reserve(1, "src/app.py").await;
    assert_eq!(outcome["conflicts"][0]["holders"][0]["agent"], "BlueLake", "{outcome}");
    assert!(cache_agrees(&core).await, "after a conflicting reserve");
    apply(&core, &Op::Renew { agent: 1, extend: 600, path: None }).await;
    assert!(cache_agrees(&core).await, "after renew");
    apply(&core, &Op::RolledBackRelease { nth: 0 }).await;
    assert!(cache_agrees(&core).await, "after a rolled-back release");
    apply(&core, &Op::Expire { nth: 0 }).await;
    assert!(!cache_agrees(&core).await, "an expiry moved behind its back makes it stale");
    let outcome = reserve(1, "src/*.py").await;
    assert_eq!(outcome["conflicts"], serde_json::json!([]), "the expired glob no longer holds");
    assert!(cache_agrees(&core).await, "reloaded by the next reserve");
    apply(&core, &Op::Release { agent: 1, path: None }).await;
    assert!(cache_agrees(&core).await, "after release");
    assert_eq!(reserve(2, "src/app.py").await["conflicts"], serde_json::json!([]));
    apply(&core, &Op::Recreate { agent: 2 }).await;
    assert!(!cache_agrees(&core).await, "a hard delete makes it stale");
    core.close();
}

/// Concurrent requests share write batches (one transaction, a savepoint each): the sets
/// kept as each job ends still mirror the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_leave_a_true_set() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path(), true).await;
    for round in 0..4 {
        let tasks: Vec<_> = (0..24)
            .map(|i| {
                let core = core.clone();
                let op = match (i + round) % 4 {
                    0 | 1 => Op::Reserve {
                        agent: i % 3,
                        paths: vec![i % PATHS.len(), (i * 7 + round) % PATHS.len()],
                        ttl: if i % 5 == 0 { -10 } else { 3600 },
                        exclusive: i % 2 == 0,
                    },
                    2 => Op::Release { agent: i % 3, path: Some(i % PATHS.len()) },
                    _ if i % 2 == 0 => Op::RolledBackRelease { nth: i },
                    _ => Op::RolledBackReserve { agent: i % 3, path: (i + round) % PATHS.len() },
                };
                tokio::spawn(async move { apply(&core, &op).await })
            })
            .collect();
        for task in tasks {
            task.await.expect("task");
        }
        cache_agrees(&core).await;
        apply(&core, &Op::Reserve { agent: 0, paths: vec![0], ttl: 3600, exclusive: true }).await;
        assert!(cache_agrees(&core).await, "round {round}: current after a quiet request");
    }
    core.close();
}

/// Jobs of one write batch see each other's uncommitted rows, and find the set the previous
/// job kept at their stamp: concurrent reserves load the set from the database once, not once
/// per job (it thrashed when sets were kept only after the commit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_shares_one_set() {
    let dir = tempfile::tempdir().expect("dir");
    let core = open(dir.path(), true).await;
    let before = core.active_reservations.loads();
    for round in 0..3 {
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let core = core.clone();
                let op = Op::Reserve {
                    agent: i % 3,
                    paths: vec![(i + round) % PATHS.len()],
                    ttl: 3600,
                    exclusive: i % 2 == 0,
                };
                tokio::spawn(async move { apply(&core, &op).await })
            })
            .collect();
        for task in tasks {
            task.await.expect("task");
        }
    }
    assert_eq!(core.active_reservations.loads() - before, 1, "one load for 96 reserves");
    assert!(cache_agrees(&core).await, "and the set is true");
    core.close();
}
