use super::*;
use crate::records::{AgentId, ProjectId};
use crate::store::db::search::{SearchHit, SearchScope};

/// A database with one project, two agents and `messages` (id, subject, body, created_ts),
/// each sent by agent 1 to agent 2.
fn database(path: &std::path::Path, messages: &[(i64, &str, &str, &str)]) -> Store {
    let store = Store::open(path, 1, None).expect("open");
    let mut statements = String::from(
        "INSERT INTO projects (id, slug, human_key, created_at) VALUES (1, 'a', '/a', 'x');
         INSERT INTO agents (id, project_id, name, program, model, inception_ts, last_active_ts)
             VALUES (1, 1, 'BlueLake', 'p', 'm', 'x', 'x'), (2, 1, 'GreenCastle', 'p', 'm', 'x', 'x');",
    );
    for (id, subject, body, created) in messages {
        statements.push_str(&format!(
            "INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts)
             VALUES ({id}, 1, 1, '{subject}', '{body}', '{created}');
             INSERT INTO message_recipients (message_id, agent_id, kind) VALUES ({id}, 2, 'to');"
        ));
    }
    store.write_blocking_unseen(move |db| db.execute_batch(&statements)).expect("messages");
    store
}

fn sql(store: &Store, statements: &'static str) {
    store.write_blocking_unseen(move |db| db.execute_batch(statements)).expect("sql");
}

struct Fed {
    feeder: Feeder,
    reader: Option<crate::store::Reader>,
}

impl Fed {
    fn new(index: &Arc<SearchIndex>, store: &Store) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        Self {
            feeder: Feeder { index: Arc::clone(index), store: store.clone(), stop },
            reader: None,
        }
    }

    fn round(&mut self) -> Position {
        self.feeder.round(&mut self.reader).expect("round");
        searchable(&self.feeder.index).expect("committed").1
    }
}

/// The ids a search finds, with the index and (as the authority) without.
fn found(
    store: &Store,
    index: &SearchIndex,
    query: &'static str,
    viewer: Option<i64>,
) -> (Vec<i64>, Vec<i64>) {
    let scope = SearchScope {
        project_ids: vec![ProjectId(1)],
        viewer_ids: viewer.map(|v| vec![AgentId(v)]),
    };
    let ids = |hits: Option<Vec<SearchHit>>| -> Vec<i64> {
        hits.expect("valid").iter().map(|h| h.id.0).collect()
    };
    let mut reader = store.dedicated_reader().expect("reader");
    reader
        .read(|db| {
            Ok((
                ids(db.search_fts(&scope, query, 10, Some(index))?),
                ids(db.search_fts(&scope, query, 10, None)?),
            ))
        })
        .expect("search")
}

/// New, deleted and edited messages reach the index; searches find what the database's
/// full-text search finds, before and after the index takes them in (the tail), for any viewer.
#[test]
fn the_feeder_follows_new_deleted_and_edited_messages() {
    let dir = tempfile::tempdir().expect("dir");
    let store = database(
        &dir.path().join("db.sqlite3"),
        &[
            (1, "deploy the api", "the deploy went fine", "2026-11-01 10:00:00.000000"),
            (2, "deploy again", "rollback needed", "2026-11-01 11:00:00.000000"),
            (3, "lunch", "nothing to deploy", "2026-11-01 12:00:00.000000"),
        ],
    );
    let index = Arc::new(SearchIndex::open_writable(&dir.path().join("index")).expect("index"));
    let mut fed = Fed::new(&index, &store);
    assert_eq!(fed.round().messages, 3);
    assert_eq!(index.snapshot().expect("snapshot").len(), 3);
    for (query, viewer) in
        [("deploy", None), ("deploy", Some(2)), ("deploy", Some(3)), ("rollback OR lunch", None)]
    {
        let (indexed, database) = found(&store, &index, query, viewer);
        assert_eq!(indexed, database, "{query} as {viewer:?}");
    }
    assert_eq!(found(&store, &index, "deploy", None).0, [1, 2, 3]);

    // A new message is found at once (the tail), and after the next round from the index.
    sql(
        &store,
        "INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts)
                 VALUES (4, 1, 1, 'deploy deploy', 'deploy', '2026-11-01 13:00:00.000000')",
    );
    assert_eq!(found(&store, &index, "deploy", None).0[0], 4);
    assert_eq!(fed.round().messages, 4);
    assert_eq!(found(&store, &index, "deploy", None).0[0], 4);

    // Deleted and edited messages leave the index once the round applies the change log.
    sql(
        &store,
        "DELETE FROM message_recipients WHERE message_id = 1; DELETE FROM messages WHERE id = 1;
                 UPDATE messages SET subject = 'lunch', body_md = 'soup' WHERE id = 2;",
    );
    assert_eq!(found(&store, &index, "deploy", None).1, [4, 3]);
    fed.round();
    assert_eq!(index.snapshot().expect("snapshot").len(), 3);
    let (indexed, database) = found(&store, &index, "deploy", None);
    assert_eq!((indexed.as_slice(), database.as_slice()), ([4, 3].as_slice(), [4, 3].as_slice()));
    assert_eq!(found(&store, &index, "soup", None).0, [2]);
}

/// An index made from another database, or whose changes were trimmed before it applied them,
/// is rebuilt; one that is current is not.
#[test]
fn an_index_of_another_database_or_past_trimmed_changes_is_rebuilt() {
    let dir = tempfile::tempdir().expect("dir");
    let index = Arc::new(SearchIndex::open_writable(&dir.path().join("index")).expect("index"));
    let first = database(
        &dir.path().join("first.sqlite3"),
        &[
            (1, "alpha", "", "2026-11-01 10:00:00.000000"),
            (2, "alpha beta", "", "2026-11-01 11:00:00.000000"),
        ],
    );
    Fed::new(&index, &first).round();
    // Another database: the same ids, other messages.
    let second = database(
        &dir.path().join("second.sqlite3"),
        &[
            (1, "gamma", "", "2026-11-02 10:00:00.000000"),
            (2, "gamma delta", "", "2026-11-02 11:00:00.000000"),
        ],
    );
    let mut fed = Fed::new(&index, &second);
    let position = fed.round();
    assert_eq!(position.last_created, "2026-11-02 11:00:00.000000");
    let snapshot = index.snapshot().expect("snapshot");
    let expr = mailroom_search::fts5::parse("alpha").expect("parse");
    let scope = mailroom_search::Scope { projects: &[1], viewers: None };
    assert!(snapshot.search(&expr, scope, 10, &[]).expect("search").expect("ranked").is_empty());
    assert_eq!(found(&second, &index, "gamma", None).0, [1, 2]);

    // Current: a round changes nothing.
    assert!(!fed.feeder.round(&mut fed.reader).expect("round"));
    // Changes trimmed past the index's: rebuilt.
    sql(&second, "UPDATE search_changes_trimmed SET through = 5");
    sql(&second, "INSERT INTO search_changes (seq, message_id) VALUES (6, 99)");
    assert!(fed.feeder.round(&mut fed.reader).expect("round"));
    assert_eq!(fed.round().messages, 2);
    assert_eq!(found(&second, &index, "gamma", None).0, [1, 2]);
}
