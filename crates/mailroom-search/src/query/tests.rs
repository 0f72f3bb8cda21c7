//! The index against SQLite's FTS5 on the same messages: the same matches, and the same best
//! ten with the same scores (FTS5's `bm25()` negated), for a few hundred generated queries,
//! with everything indexed and with a third of the messages still in the tail.

use super::*;
use crate::fts5;
use crate::index::{NewDoc, SearchIndex};

const VOCABULARY: [&str; 12] = [
    "deploy", "auth", "token", "fix", "build", "review", "cache", "merge", "alpha", "beta",
    "gamma", "queue",
];

/// A repeatable sequence (a linear congruential generator).
struct Draw(u64);

impl Draw {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize % below
    }

    /// A word, the first ones far more often (as in text).
    fn word(&mut self) -> &'static str {
        let a = self.next(VOCABULARY.len());
        VOCABULARY[self.next(a + 1)]
    }

    fn text(&mut self, most: usize) -> String {
        let count = self.next(most + 1);
        let words: Vec<&str> = (0..count).map(|_| self.word()).collect();
        // Case and punctuation as people write them: folded and split alike by both engines.
        words.join(if self.next(2) == 0 { " " } else { ", " }).to_uppercase()
    }

    fn query(&mut self, depth: usize) -> String {
        match self.next(if depth > 2 { 3 } else { 7 }) {
            0 | 1 => self.word().to_string(),
            2 => format!("\"{} {}\"", self.word(), self.word()),
            3 => format!("{} {}", self.query(depth + 1), self.query(depth + 1)),
            4 => format!("({} OR {})", self.query(depth + 1), self.query(depth + 1)),
            5 => format!("{} AND {}", self.query(depth + 1), self.query(depth + 1)),
            _ => format!("({} NOT {})", self.query(depth + 1), self.query(depth + 1)),
        }
    }
}

struct Corpus {
    docs: Vec<(u64, String, String)>,
    fts: rusqlite::Connection,
}

fn corpus(count: u64) -> Corpus {
    let mut draw = Draw(42);
    let docs: Vec<(u64, String, String)> =
        (1..=count).map(|id| (id, draw.text(5), draw.text(30))).collect();
    let fts = rusqlite::Connection::open_in_memory().expect("open");
    fts.execute_batch("CREATE VIRTUAL TABLE t USING fts5(subject, body)").expect("table");
    for (id, subject, body) in &docs {
        fts.execute(
            "INSERT INTO t (rowid, subject, body) VALUES (?1, ?2, ?3)",
            rusqlite::params![*id as i64, subject, body],
        )
        .expect("insert");
    }
    Corpus { docs, fts }
}

impl Corpus {
    /// FTS5's matches, best first, with their scores negated; `None` when FTS5 refuses it.
    fn fts5(&self, query: &str) -> Option<Vec<(u64, f64)>> {
        let mut stmt = self
            .fts
            .prepare("SELECT rowid, -bm25(t) FROM t WHERE t MATCH ?1 ORDER BY bm25(t), rowid")
            .expect("prepare");
        let rows = stmt.query_map([query], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)));
        rows.and_then(|rows| rows.collect::<rusqlite::Result<_>>()).ok()
    }

    /// The index with the first `indexed` messages; the rest as its tail.
    fn index(&self, dir: &std::path::Path, indexed: usize) -> (SearchIndex, Vec<TailDoc>) {
        let index = SearchIndex::open_writable(dir).expect("index");
        let new: Vec<NewDoc<'_>> = self.docs[..indexed]
            .iter()
            .map(|(id, subject, body)| NewDoc { id: *id, project: 7, subject, body, who: &[] })
            .collect();
        // Several commits: several segments, whose ties must still come lowest id first.
        for chunk in new.chunks(90) {
            index.add(chunk).expect("add");
            index.commit("test").expect("commit");
        }
        let tail = self.docs[indexed..]
            .iter()
            .map(|(id, subject, body)| TailDoc {
                id: *id,
                subject: subject.clone(),
                body: body.clone(),
            })
            .collect();
        (index, tail)
    }
}

fn search(index: &SearchIndex, tail: &[TailDoc], query: &str, limit: usize) -> Vec<Hit> {
    let expr = fts5::parse(query).expect("parse");
    let scope = Scope { projects: &[7], viewers: None };
    let snapshot = index.snapshot().expect("snapshot");
    snapshot.search(&expr, scope, limit, tail).expect("search").expect("supported")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * a.abs().max(b.abs()) + 1e-9
}

#[test]
fn matches_and_best_ten_are_fts5s() {
    let corpus = corpus(400);
    for indexed in [400, 270] {
        let dir = tempfile::tempdir().expect("dir");
        let (index, tail) = corpus.index(dir.path(), indexed);
        let mut draw = Draw(7);
        let (mut nonempty, mut refused) = (0, 0);
        for _ in 0..300 {
            let query = draw.query(0);
            let Some(expected) = corpus.fts5(&query) else {
                assert!(fts5::parse(&query).is_none(), "FTS5 refuses {query}");
                refused += 1;
                continue;
            };
            let all = search(&index, &tail, &query, 1000);
            let mut found: Vec<u64> = all.iter().map(|h| h.id).collect();
            let mut wanted: Vec<u64> = expected.iter().map(|(id, _)| *id).collect();
            found.sort_unstable();
            wanted.sort_unstable();
            assert_eq!(found, wanted, "matches of {query} ({indexed} indexed)");
            let best = search(&index, &tail, &query, 10);
            assert_eq!(best.len(), expected.len().min(10), "{query}");
            for (rank, (hit, (id, score))) in best.iter().zip(&expected).enumerate() {
                assert!(
                    close(f64::from(hit.score), *score),
                    "{query} ({indexed} indexed), rank {rank}: {} against FTS5's {score}",
                    hit.score
                );
                // The same message, or one FTS5 scores within float rounding of it.
                let near: Vec<u64> = expected
                    .iter()
                    .filter(|(_, other)| (other - score).abs() <= 1e-6 * score.abs() + 1e-12)
                    .map(|(other, _)| *other)
                    .collect();
                assert!(
                    hit.id == *id || near.contains(&hit.id),
                    "{query} ({indexed} indexed), rank {rank}: {} where FTS5 has {id}",
                    hit.id
                );
            }
            nonempty += usize::from(!expected.is_empty());
        }
        assert!(nonempty > 120 && refused < 100, "{nonempty} matched, {refused} refused");
    }
}

#[test]
fn a_phrase_does_not_span_subject_and_body_and_punctuation_matches_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let index = SearchIndex::open_writable(dir.path()).expect("index");
    let doc =
        NewDoc { id: 1, project: 7, subject: "ends with alpha", body: "beta starts", who: &[] };
    index.add(&[doc]).expect("add");
    index.commit("test").expect("commit");
    assert!(search(&index, &[], "\"alpha beta\"", 10).is_empty());
    assert_eq!(search(&index, &[], "\"with alpha\"", 10).len(), 1);
    assert!(search(&index, &[], "\"...\"", 10).is_empty());
    assert_eq!(search(&index, &[], "alpha OR \"...\"", 10).len(), 1);
}

#[test]
fn a_search_sees_only_its_projects_and_its_viewers_messages() {
    let dir = tempfile::tempdir().expect("dir");
    let index = SearchIndex::open_writable(dir.path()).expect("index");
    let docs = [
        NewDoc { id: 1, project: 1, subject: "deploy", body: "", who: &[10, 11] },
        NewDoc { id: 2, project: 2, subject: "deploy", body: "", who: &[20] },
        NewDoc { id: 3, project: 1, subject: "deploy now", body: "", who: &[12] },
        NewDoc { id: 4, project: 12, subject: "deploy", body: "", who: &[10] },
    ];
    index.add(&docs).expect("add");
    index.commit("test").expect("commit");
    let snapshot = index.snapshot().expect("snapshot");
    let expr = fts5::parse("deploy").expect("parse");
    let ids = |projects: &[u64], viewers: Option<&[u64]>| -> Vec<u64> {
        let scope = Scope { projects, viewers };
        let hits = snapshot.search(&expr, scope, 10, &[]).expect("search").expect("supported");
        let mut ids: Vec<u64> = hits.iter().map(|h| h.id).collect();
        ids.sort_unstable();
        ids
    };
    assert_eq!(ids(&[1], None), [1, 3]);
    assert_eq!(ids(&[1, 2], None), [1, 2, 3]);
    assert_eq!(ids(&[1], Some(&[10])), [1]);
    assert_eq!(ids(&[1, 12], Some(&[10, 12])), [1, 3, 4]);
    assert_eq!(ids(&[3], None), Vec::<u64>::new());
}

#[test]
fn what_the_index_cannot_rank_as_fts5_is_left_to_the_database() {
    let dir = tempfile::tempdir().expect("dir");
    let index = SearchIndex::open_writable(dir.path()).expect("index");
    let snapshot = index.snapshot().expect("snapshot");
    let scope = Scope { projects: &[1], viewers: None };
    for query in ["dep*", "NEAR(a b)", "^a", "subject:a", "body:a", "a OR subject:b"] {
        let expr = fts5::parse(query).expect("parse");
        assert!(snapshot.search(&expr, scope, 10, &[]).expect("search").is_none(), "{query}");
    }
    let expr = fts5::parse("a AND (b OR c)").expect("parse");
    assert!(snapshot.search(&expr, scope, 10, &[]).expect("search").is_some());
}
