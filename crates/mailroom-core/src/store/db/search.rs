//! Full-text search over `fts_messages` (FTS5, bm25 ranking) with the reference's LIKE fallback.

use super::Db;
use super::driver::{Dialect, Param, Row, args};
use crate::error::{Error, Result};
use crate::model::search_query::escape_like;
use crate::model::time::Timestamp;
use crate::records::{AgentId, Importance, MessageId, ProjectId};

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

    /// FTS5 match within `scope`, best bm25 first. `Ok(None)` when FTS5 rejects the query
    /// syntax, so the caller can fall back to LIKE.
    ///
    /// The user's expression is confined to subject and body and joined with the scope's
    /// project tokens (migration 0004), so FTS5 only ranks the scope's hits; the SQL scope
    /// filter stays as the authority. The project column has bm25 weight 0.
    pub fn search_fts(
        &self,
        scope: &SearchScope,
        query: &str,
        limit: i64,
    ) -> Result<Option<Vec<SearchHit>>> {
        if !has_balanced_parentheses(query) {
            // Wrapped in our own parentheses it could turn valid: keep FTS5's verdict.
            return Ok(None);
        }
        if scope.project_ids.is_empty() {
            return Ok(Some(Vec::new()));
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

/// `query` restricted to subject and body and to the scope's projects' index tokens.
fn scoped_match(scope: &SearchScope, query: &str) -> String {
    let projects: Vec<String> = scope.project_ids.iter().map(|id| format!("p{id}")).collect();
    format!("project_scope : ({}) AND {{subject body}} : ({query})", projects.join(" OR "))
}

/// Whether every `(` outside double-quoted strings is closed, in order.
fn has_balanced_parentheses(query: &str) -> bool {
    let mut depth = 0_usize;
    let mut quoted = false;
    for c in query.chars() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
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

    #[test]
    fn parentheses_balance_outside_quoted_strings() {
        for balanced in ["a", "(a OR b) AND c", "\"(\" a", "\"say \"\"(\"\"\" x", "NEAR(a b)"] {
            assert!(has_balanced_parentheses(balanced), "{balanced}");
        }
        for unbalanced in ["(", "a)", "a) OR (b", "((a)", "\")\" )"] {
            assert!(!has_balanced_parentheses(unbalanced), "{unbalanced}");
        }
    }

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
