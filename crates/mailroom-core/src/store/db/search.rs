//! Full-text search over `fts_messages` (FTS5, bm25 ranking) with the reference's LIKE fallback.

use super::Db;
use super::driver::{Dialect, Param, Row, args};
use crate::error::{Error, Result};
use crate::model::search_query::escape_like;
use crate::model::time::Timestamp;
use crate::records::{AgentId, Importance, MessageId, ProjectId};
use mailroom_search::{Scope, SearchIndex, TailDoc, fts5};

/// The most messages past the index's reach a search scores itself; past that it asks the
/// database (a rebuild in progress, a feeder far behind).
const TAIL_MOST: i64 = 2_000;

fn unsigned(id: i64) -> u64 {
    u64::try_from(id).unwrap_or_default()
}

/// One search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    pub id: MessageId,
    pub project_id: ProjectId,
    pub subject: String,
    pub importance: Importance,
    pub ack_required: bool,
    pub created_ts: Timestamp,
    pub thread_id: Option<String>,
    pub sender_name: String,
    pub sender_project_id: ProjectId,
    pub sender_project_slug: String,
    pub sender_project_human_key: String,
}

const HIT_COLUMNS: &str = "m.id, m.project_id, m.subject, m.importance, m.ack_required, m.created_ts, \
     m.thread_id, s.name, s.project_id, sp.slug, sp.human_key";

fn hit(row: &Row<'_>) -> Result<SearchHit> {
    Ok(SearchHit {
        id: row.get(0)?,
        project_id: row.get(1)?,
        subject: row.get(2)?,
        importance: Importance(row.get(3)?),
        ack_required: row.get(4)?,
        created_ts: row.get(5)?,
        thread_id: row.get(6)?,
        sender_name: row.get(7)?,
        sender_project_id: row.get(8)?,
        sender_project_slug: row.get(9)?,
        sender_project_human_key: row.get(10)?,
    })
}

/// Where a search looks: some projects and, optionally, only messages these agents sent or
/// received (the product bus searches several projects as the agents the caller is there).
#[derive(Debug, Clone)]
pub struct SearchScope {
    pub project_ids: Vec<ProjectId>,
    /// `None`: every message of the projects.
    pub viewer_ids: Option<Vec<AgentId>>,
}

impl SearchScope {
    /// Every message of one project.
    pub fn project(project_id: ProjectId) -> Self {
        Self { project_ids: vec![project_id], viewer_ids: None }
    }

    /// The id lists as JSON arrays, bound once so each query keeps one statement text whatever
    /// the number of projects (`json_each` expands them).
    fn bound(&self) -> (String, Option<String>) {
        fn json<Id: ToString>(ids: &[Id]) -> String {
            format!("[{}]", ids.iter().map(Id::to_string).collect::<Vec<_>>().join(","))
        }
        (json(&self.project_ids), self.viewer_ids.as_deref().map(json))
    }
}

/// The scope filter on `m`, with the project list bound at ?2 and the viewer list at ?3.
const SCOPE_FILTER: &str = "m.project_id IN (SELECT CAST(value AS BIGINT) FROM json_each(?2))
     AND (?3 IS NULL OR m.sender_id IN (SELECT CAST(value AS BIGINT) FROM json_each(?3))
          OR EXISTS (SELECT 1 FROM message_recipients r WHERE r.message_id = m.id
                     AND r.agent_id IN (SELECT CAST(value AS BIGINT) FROM json_each(?3))))";

/// Adds the messages noted in `fts_pending` to the full-text index and clears the note (see
/// migration 0006). Every write transaction that inserts messages ends with this: the writer
/// after its batch's last savepoint, offline builds before their commit. A transaction that
/// did not would leave its messages unsearchable only until the next write does it.
pub(crate) fn index_pending_messages(db: &Db<'_>) -> Result<()> {
    if db.dialect() == Dialect::Postgres {
        // PostgreSQL indexes a message as it is written (the generated search columns).
        return Ok(());
    }
    db.execute(
        "INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope)
         SELECT m.id, m.id, m.subject, m.body_md, 'p' || m.project_id
         FROM fts_pending p JOIN messages m ON m.id = p.message_id ORDER BY p.message_id",
        args![],
    )?;
    db.execute("DELETE FROM fts_pending", args![]).map(drop)
}

/// Merges the full-text index into one segment, dropping the entries of deleted messages.
pub(crate) fn optimize_index(db: &Db<'_>) -> Result<()> {
    if db.dialect() == Dialect::Postgres {
        return Ok(());
    }
    db.execute("INSERT INTO fts_messages (fts_messages) VALUES ('optimize')", args![]).map(drop)
}

/// [`index_pending_messages`] for notes that may name messages already in the index (left by
/// another program): those are taken out of the index first, so none is indexed twice.
pub(crate) fn reindex_pending_messages(db: &Db<'_>) -> Result<()> {
    if db.dialect() == Dialect::Postgres {
        return Ok(());
    }
    db.execute(
        "DELETE FROM fts_messages WHERE rowid IN (SELECT message_id FROM fts_pending)",
        args![],
    )?;
    index_pending_messages(db)
}

impl Db<'_> {
    /// How many messages wait to be indexed (none between write transactions).
    #[cfg(test)]
    pub(crate) fn pending_index_notes(&self) -> Result<i64> {
        self.query_value("SELECT count(*) FROM fts_pending", args![])
    }

    /// Best match first within `scope`: from the search index when it can answer, else FTS5
    /// by bm25 (or PostgreSQL's tsquery). `Ok(None)` when FTS5 would refuse the query's
    /// syntax, so the caller can fall back to LIKE.
    ///
    /// On FTS5, the user's expression is confined to subject and body and joined with the
    /// scope's project tokens (migration 0004), so FTS5 only ranks the scope's hits; the SQL
    /// scope filter stays as the authority. The project column has bm25 weight 0.
    pub fn search_fts(
        &self,
        scope: &SearchScope,
        query: &str,
        limit: i64,
        index: Option<&SearchIndex>,
    ) -> Result<Option<Vec<SearchHit>>> {
        let Some(expr) = fts5::parse(query) else { return Ok(None) };
        if scope.project_ids.is_empty() {
            return Ok(Some(Vec::new()));
        }
        if let Some(hits) =
            index.map(|i| self.search_indexed(i, &expr, scope, limit)).transpose()?.flatten()
        {
            return Ok(Some(hits));
        }
        if self.dialect() == Dialect::Postgres {
            return self.search_tsquery(scope, query, limit);
        }
        let sql = format!(
            "SELECT {HIT_COLUMNS} FROM fts_messages f JOIN messages m ON m.id = f.rowid
             JOIN agents s ON s.id = m.sender_id JOIN projects sp ON sp.id = s.project_id
             WHERE fts_messages MATCH ?1 AND {SCOPE_FILTER}
             ORDER BY bm25(fts_messages, 0.0, 1.0, 1.0, 0.0) ASC, m.id ASC LIMIT ?4"
        );
        let scoped = scoped_match(scope, query);
        let (projects, viewers) = scope.bound();
        match self.query_vec(&sql, args![scoped, projects, viewers, limit], hit) {
            Ok(hits) => Ok(Some(hits)),
            Err(e) if is_fts_syntax_error(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Self::search_fts`] on the search index, with the scope's messages the index has not
    /// taken in scored beside it. `None` when it cannot answer as the database would: the
    /// index has no commit yet or lags too far, the expression uses what it cannot rank, or a
    /// hit it found is gone or out of the scope (a change it has not applied).
    fn search_indexed(
        &self,
        index: &SearchIndex,
        expr: &fts5::Expr,
        scope: &SearchScope,
        limit: i64,
    ) -> Result<Option<Vec<SearchHit>>> {
        let Some((snapshot, position)) = crate::search_index::searchable(index) else {
            return Ok(None);
        };
        let Some(tail) = self.search_tail(scope, position.messages, TAIL_MOST)? else {
            return Ok(None);
        };
        let tail: Vec<TailDoc> = tail
            .into_iter()
            .map(|m| TailDoc { id: unsigned(m.id), subject: m.subject, body: m.body })
            .collect();
        let projects: Vec<u64> = scope.project_ids.iter().map(|p| unsigned(p.0)).collect();
        let viewers: Option<Vec<u64>> =
            scope.viewer_ids.as_ref().map(|v| v.iter().map(|a| unsigned(a.0)).collect());
        let scoped = Scope { projects: &projects, viewers: viewers.as_deref() };
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let found = match snapshot.search(expr, scoped, limit, &tail) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!(error = %e, "the search index failed a search; searching the database");
                return Ok(None);
            }
        };
        let ids: Vec<i64> = found.iter().map(|h| i64::try_from(h.id).unwrap_or(i64::MAX)).collect();
        let hits = self.search_hits_by_id(scope, &ids)?;
        Ok((hits.len() == ids.len()).then_some(hits))
    }

    /// [`Self::search_fts`] on PostgreSQL: the expression as a tsquery (`model::tsquery`)
    /// against the messages' weighted search vector, best `ts_rank` first (subject and body
    /// words weighing the same, as in SQLite's bm25), then by id.
    fn search_tsquery(
        &self,
        scope: &SearchScope,
        query: &str,
        limit: i64,
    ) -> Result<Option<Vec<SearchHit>>> {
        let Some(tsquery) = crate::model::tsquery::fts5_to_tsquery(query) else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT {HIT_COLUMNS} FROM messages m
             JOIN agents s ON s.id = m.sender_id JOIN projects sp ON sp.id = s.project_id
             WHERE m.search @@ to_tsquery('simple', ?1) AND {SCOPE_FILTER}
             ORDER BY ts_rank('{{0.1, 0.2, 1.0, 1.0}}', m.search, to_tsquery('simple', ?1)) DESC,
                      m.id ASC LIMIT ?4"
        );
        let (projects, viewers) = scope.bound();
        self.query_vec(&sql, args![tsquery, projects, viewers, limit], hit).map(Some)
    }

    /// Every term must occur in subject or body (case-insensitive); newest first.
    pub fn search_like(
        &self,
        scope: &SearchScope,
        terms: &[String],
        limit: i64,
    ) -> Result<Vec<SearchHit>> {
        let mut sql = format!(
            "SELECT {HIT_COLUMNS} FROM messages m JOIN agents s ON s.id = m.sender_id
             JOIN projects sp ON sp.id = s.project_id
             WHERE CAST(?1 AS BIGINT) = 0 AND {SCOPE_FILTER}"
        );
        let patterns: Vec<String> = terms.iter().map(|t| format!("%{}%", escape_like(t))).collect();
        // SQLite's LIKE ignores ASCII case; PostgreSQL's ILIKE is the same test.
        let like = match self.dialect() {
            Dialect::Sqlite => "LIKE",
            Dialect::Postgres => "ILIKE",
        };
        for index in 0..patterns.len() {
            let n = index + 5;
            sql.push_str(&format!(
                " AND (m.subject {like} ?{n} ESCAPE '!' OR m.body_md {like} ?{n} ESCAPE '!')"
            ));
        }
        sql.push_str(" ORDER BY m.created_ts DESC, m.id DESC LIMIT ?4");
        let (projects, viewers) = scope.bound();
        // ?1 is unused here; binding it keeps the parameter numbers of SCOPE_FILTER shared
        // with the FTS query.
        let unused = 0_i64;
        let mut values: Vec<&dyn Param> = vec![&unused, &projects, &viewers, &limit];
        values.extend(patterns.iter().map(|p| p as &dyn Param));
        self.query_vec(&sql, &values, hit)
    }
}

/// A message as the search index takes it in.
#[derive(Debug, Clone)]
pub struct FeedMessage {
    pub id: i64,
    pub project_id: i64,
    pub subject: String,
    pub body: String,
    pub created_ts: String,
    /// Its sender and recipients.
    pub who: Vec<u64>,
}

/// Where the database's messages and change log stand, for the search index's feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedEnds {
    /// The highest message id (0: none).
    pub last_message: i64,
    /// The highest change `seq` ever written (0: none).
    pub last_change: i64,
    /// Changes up to this `seq` were trimmed.
    pub trimmed_through: i64,
}

/// A message the index has not taken in: what a search scores it on.
#[derive(Debug, Clone)]
pub struct TailMessage {
    pub id: i64,
    pub subject: String,
    pub body: String,
}

/// How long changes stay in `search_changes` before they are trimmed.
const CHANGES_KEPT: &str = "1 day";

impl Db<'_> {
    /// Where messages and changes stand (migration 0017).
    pub fn search_feed_ends(&self) -> Result<FeedEnds> {
        let last_change = match self.dialect() {
            // AUTOINCREMENT's high-water mark outlives trimmed rows.
            Dialect::Sqlite => self.query_value(
                "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'search_changes'), 0)",
                args![],
            )?,
            Dialect::Postgres => self.query_value(
                "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM search_changes_seq_seq",
                args![],
            )?,
        };
        Ok(FeedEnds {
            last_message: self.query_value("SELECT COALESCE(MAX(id), 0) FROM messages", args![])?,
            last_change,
            trimmed_through: self
                .query_value("SELECT MAX(through) FROM search_changes_trimmed", args![])?,
        })
    }

    /// The `created_ts` of message `id`, as stored (the index's check that its last message is
    /// still this database's).
    pub fn search_feed_created(&self, id: i64) -> Result<Option<String>> {
        self.query_opt(
            "SELECT CAST(created_ts AS TEXT) FROM messages WHERE id = ?1",
            args![id],
            |row| row.get(0),
        )
    }

    /// Changes after `seq`, oldest first: `(seq, message id)`.
    pub fn search_feed_changes(&self, after: i64, limit: i64) -> Result<Vec<(i64, i64)>> {
        self.query_vec(
            "SELECT seq, message_id FROM search_changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            args![after, limit],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
    }

    /// Messages after id `after`, oldest first, with who sent and received them.
    pub fn search_feed_messages(&self, after: i64, limit: i64) -> Result<Vec<FeedMessage>> {
        self.feed_messages("m.id > ?1 ORDER BY m.id LIMIT ?2", args![after, limit])
    }

    /// The messages among `ids` that exist.
    pub fn search_feed_messages_by_id(&self, ids: &[i64]) -> Result<Vec<FeedMessage>> {
        let ids = format!("[{}]", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
        self.feed_messages(
            "m.id IN (SELECT CAST(value AS BIGINT) FROM json_each(?1)) ORDER BY m.id",
            args![ids],
        )
    }

    fn feed_messages(&self, filter: &str, values: &[&dyn Param]) -> Result<Vec<FeedMessage>> {
        let mut messages = self.query_vec(
            &format!(
                "SELECT m.id, m.project_id, m.subject, m.body_md, CAST(m.created_ts AS TEXT), m.sender_id
                 FROM messages m WHERE {filter}"
            ),
            values,
            |row| {
                Ok(FeedMessage {
                    id: row.get(0)?,
                    project_id: row.get(1)?,
                    subject: row.get(2)?,
                    body: row.get(3)?,
                    created_ts: row.get(4)?,
                    who: vec![u64::try_from(row.get::<i64>(5)?).unwrap_or_default()],
                })
            },
        )?;
        let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
            return Ok(messages);
        };
        let recipients: Vec<(i64, i64)> = self.query_vec(
            "SELECT message_id, agent_id FROM message_recipients
             WHERE message_id BETWEEN ?1 AND ?2 ORDER BY message_id",
            args![first.id, last.id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        let mut at = 0;
        for (message_id, agent_id) in recipients {
            while messages.get(at).is_some_and(|m| m.id < message_id) {
                at += 1;
            }
            if let Some(message) = messages.get_mut(at).filter(|m| m.id == message_id) {
                message.who.push(u64::try_from(agent_id).unwrap_or_default());
            }
        }
        Ok(messages)
    }

    /// Drops changes older than a day and notes the highest trimmed.
    pub fn trim_search_changes(&self) -> Result<()> {
        let cutoff = match self.dialect() {
            Dialect::Sqlite => format!("strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-{CHANGES_KEPT}')"),
            Dialect::Postgres => format!(
                "to_char((now() - interval '{CHANGES_KEPT}') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
            ),
        };
        let through: Option<i64> = self.query_value(
            &format!("SELECT MAX(seq) FROM search_changes WHERE changed_ts < {cutoff}"),
            args![],
        )?;
        if let Some(through) = through {
            self.execute("DELETE FROM search_changes WHERE seq <= ?1", args![through])?;
            self.execute("UPDATE search_changes_trimmed SET through = ?1", args![through])?;
        }
        Ok(())
    }

    /// Keeps SQLite on the messages' ids for a query whose ids are few: left to itself it
    /// may take the project's index and read every message of the project.
    fn by_id(&self) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => " NOT INDEXED",
            Dialect::Postgres => "",
        }
    }

    /// The scope's messages after id `after`, oldest first; `None` when more than `most`
    /// messages of any project come after it (the index lags too far to score them here).
    /// One statement walking the ids past `after`, each marked in or out of the scope.
    pub fn search_tail(
        &self,
        scope: &SearchScope,
        after: i64,
        most: i64,
    ) -> Result<Option<Vec<TailMessage>>> {
        let (projects, viewers) = scope.bound();
        let by_id = self.by_id();
        let rows = self.query_vec(
            &format!(
                "SELECT m.id, CASE WHEN {SCOPE_FILTER} THEN 1 ELSE 0 END, m.subject, m.body_md
                 FROM messages m{by_id} WHERE m.id > ?1 ORDER BY m.id LIMIT ?4"
            ),
            args![after, projects, viewers, most + 1],
            |row| {
                let in_scope: bool = row.get(1)?;
                let message =
                    TailMessage { id: row.get(0)?, subject: row.get(2)?, body: row.get(3)? };
                Ok(in_scope.then_some(message))
            },
        )?;
        if rows.len() as i64 > most {
            return Ok(None);
        }
        Ok(Some(rows.into_iter().flatten().collect()))
    }

    /// The hits among `ids` that are in `scope`, in the order of `ids`.
    pub fn search_hits_by_id(&self, scope: &SearchScope, ids: &[i64]) -> Result<Vec<SearchHit>> {
        let list = format!("[{}]", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
        let (projects, viewers) = scope.bound();
        let by_id = self.by_id();
        let sql = format!(
            "SELECT {HIT_COLUMNS} FROM messages m{by_id}
             JOIN agents s ON s.id = m.sender_id JOIN projects sp ON sp.id = s.project_id
             WHERE m.id IN (SELECT CAST(value AS BIGINT) FROM json_each(?1)) AND {SCOPE_FILTER}"
        );
        let mut hits = self.query_vec(&sql, args![list, projects, viewers], hit)?;
        let rank: std::collections::HashMap<i64, usize> =
            ids.iter().enumerate().map(|(rank, id)| (*id, rank)).collect();
        hits.sort_by_key(|h| rank.get(&h.id.0).copied().unwrap_or(usize::MAX));
        Ok(hits)
    }
}

/// `query` restricted to subject and body and to the scope's projects' index tokens.
fn scoped_match(scope: &SearchScope, query: &str) -> String {
    let projects: Vec<String> = scope.project_ids.iter().map(|id| format!("p{id}")).collect();
    format!("project_scope : ({}) AND {{subject body}} : ({query})", projects.join(" OR "))
}

/// Whether FTS5 refused the query's syntax (the store's error carries SQLite's message).
fn is_fts_syntax_error(e: &Error) -> bool {
    let text = &e.message;
    text.contains("fts5")
        || text.contains("syntax error")
        || text.contains("no such column")
        || text.contains("unterminated string")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scoped expression run by FTS5 on the migrated table: only the projects' rows match
    /// (`p3` is a whole token, so project 30 stays out), and the user's words are looked for
    /// in subject and body only (a body saying "p3" is not in project 3, and a search for
    /// "p3" does not match the hidden token).
    #[test]
    fn scoped_match_confines_the_query_to_subject_body_and_the_projects() {
        let mut conn = rusqlite::Connection::open_in_memory().expect("open");
        super::super::migrations::migrate(&mut conn).expect("migrate");
        let rows = [
            (1, "deploy", "", 3),
            (2, "deploy", "", 30),
            (3, "deploy", "", 12),
            (4, "p3 notes", "deploy", 7),
            (5, "roll back", "x", 3),
            (6, "rollback", "x", 3),
        ];
        for (id, subject, body, project) in rows {
            conn.execute(
                "INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope) \
                 VALUES (?1, ?1, ?2, ?3, 'p' || ?4)",
                rusqlite::params![id, subject, body, project],
            )
            .expect("insert");
        }
        let found = |projects: Vec<i64>, query: &str| -> Vec<i64> {
            let project_ids = projects.into_iter().map(ProjectId).collect();
            let scope = SearchScope { project_ids, viewer_ids: None };
            let mut stmt = conn
                .prepare(
                    "SELECT rowid FROM fts_messages WHERE fts_messages MATCH ?1 ORDER BY rowid",
                )
                .expect("prepare");
            let ids = stmt.query_map([scoped_match(&scope, query)], |r| r.get(0)).expect("query");
            ids.collect::<rusqlite::Result<Vec<i64>>>().expect("rows")
        };
        assert_eq!(found(vec![3, 12], "deploy OR \"roll back\""), [1, 3, 5]);
        assert_eq!(found(vec![30], "deploy"), [2]);
        assert_eq!(found(vec![7], "p3"), [4]);
        assert_eq!(found(vec![3], "p3"), Vec::<i64>::new());
        assert_eq!(found(vec![3, 7], "deploy"), [1, 4]);
    }
}
