//! Full-text search over `fts_messages` (FTS5, bm25 ranking) with the reference's LIKE fallback.

use rusqlite::params;

use super::{Db, map_err, ts};
use crate::error::Result;
use crate::model::search_query::escape_like;
use crate::model::time::Timestamp;

/// One search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    pub id: i64,
    pub project_id: i64,
    pub subject: String,
    pub importance: String,
    pub ack_required: bool,
    pub created_ts: Timestamp,
    pub thread_id: Option<String>,
    pub sender_name: String,
    pub sender_project_id: i64,
    pub sender_project_slug: String,
    pub sender_project_human_key: String,
}

const HIT_COLUMNS: &str = "m.id, m.project_id, m.subject, m.importance, m.ack_required, m.created_ts, \
     m.thread_id, s.name, s.project_id, sp.slug, sp.human_key";

fn hit(row: &rusqlite::Row<'_>) -> rusqlite::Result<SearchHit> {
    Ok(SearchHit {
        id: row.get(0)?,
        project_id: row.get(1)?,
        subject: row.get(2)?,
        importance: row.get(3)?,
        ack_required: row.get(4)?,
        created_ts: ts(row, 5)?,
        thread_id: row.get(6)?,
        sender_name: row.get(7)?,
        sender_project_id: row.get(8)?,
        sender_project_slug: row.get(9)?,
        sender_project_human_key: row.get(10)?,
    })
}

impl Db<'_> {
    /// FTS5 match in one project, best bm25 first. `Ok(None)` when FTS5 rejects the query
    /// syntax, so the caller can fall back to LIKE.
    pub fn search_fts(
        &self,
        project_id: i64,
        query: &str,
        limit: i64,
    ) -> Result<Option<Vec<SearchHit>>> {
        let sql = format!(
            "SELECT {HIT_COLUMNS} FROM fts_messages f JOIN messages m ON m.id = f.rowid
             JOIN agents s ON s.id = m.sender_id JOIN projects sp ON sp.id = s.project_id
             WHERE fts_messages MATCH ?1 AND m.project_id = ?2
             ORDER BY bm25(fts_messages) ASC, m.id ASC LIMIT ?3"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = match stmt.query_map(params![query, project_id, limit], hit) {
            Ok(rows) => rows.collect::<rusqlite::Result<Vec<_>>>(),
            Err(e) => Err(e),
        };
        match rows {
            Ok(hits) => Ok(Some(hits)),
            Err(e) if is_fts_syntax_error(&e) => Ok(None),
            Err(e) => Err(map_err(e)),
        }
    }

    /// Every term must occur in subject or body (case-insensitive); newest first.
    pub fn search_like(
        &self,
        project_id: i64,
        terms: &[String],
        limit: i64,
    ) -> Result<Vec<SearchHit>> {
        let mut sql = format!(
            "SELECT {HIT_COLUMNS} FROM messages m JOIN agents s ON s.id = m.sender_id
             JOIN projects sp ON sp.id = s.project_id WHERE m.project_id = ?1"
        );
        let patterns: Vec<String> = terms.iter().map(|t| format!("%{}%", escape_like(t))).collect();
        for index in 0..patterns.len() {
            let n = index + 3;
            sql.push_str(&format!(
                " AND (m.subject LIKE ?{n} ESCAPE '!' OR m.body_md LIKE ?{n} ESCAPE '!')"
            ));
        }
        sql.push_str(" ORDER BY m.created_ts DESC, m.id DESC LIMIT ?2");
        let mut values: Vec<&dyn rusqlite::ToSql> = vec![&project_id, &limit];
        values.extend(patterns.iter().map(|p| p as &dyn rusqlite::ToSql));
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = stmt.query_map(values.as_slice(), hit).map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }
}

fn is_fts_syntax_error(e: &rusqlite::Error) -> bool {
    let text = e.to_string();
    text.contains("fts5")
        || text.contains("syntax error")
        || text.contains("no such column")
        || text.contains("unterminated string")
}
