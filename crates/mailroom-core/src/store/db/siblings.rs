//! Sibling-project suggestions (`project_sibling_suggestions`): pairs stored in canonical
//! order (`project_a_id < project_b_id`), their score, and the status a person gave them.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::ProjectId;

/// Projects whose pairs are scored: the newest this many live ones (4,950 pairs at most).
pub const SCORED_PROJECTS: i64 = 100;

/// A stored suggestion, with both projects' slugs.
#[derive(Debug, Clone, PartialEq)]
pub struct SiblingRow {
    pub project_a_id: ProjectId,
    pub project_a_slug: String,
    pub project_b_id: ProjectId,
    pub project_b_slug: String,
    pub score: f64,
    pub status: String,
    pub rationale: String,
}

impl Db<'_> {
    /// Up to `limit` pairs of live projects never scored, or scored before `stale_before`,
    /// the never-scored first; among the newest [`SCORED_PROJECTS`] live projects only, so
    /// the pairs looked at stay bounded however many projects there are.
    pub fn stale_sibling_pairs(
        &self,
        stale_before: Timestamp,
        limit: i64,
    ) -> Result<Vec<(ProjectId, ProjectId)>> {
        self.query_vec(
            "WITH live AS (SELECT id FROM projects WHERE archived_at IS NULL
                           ORDER BY id DESC LIMIT ?3)
             SELECT a.id, b.id FROM live a JOIN live b ON a.id < b.id
             LEFT JOIN project_sibling_suggestions s
               ON s.project_a_id = a.id AND s.project_b_id = b.id
             WHERE s.id IS NULL OR s.evaluated_ts < ?1
             ORDER BY s.id IS NOT NULL, s.evaluated_ts, a.id, b.id LIMIT ?2",
            args![stale_before, limit, SCORED_PROJECTS],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// Records a pair's score (a < b); a stored pair keeps its status.
    pub fn store_sibling_score(
        &self,
        a: ProjectId,
        b: ProjectId,
        score: f64,
        rationale: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO project_sibling_suggestions
               (project_a_id, project_b_id, score, status, rationale, created_ts, evaluated_ts)
             VALUES (?1, ?2, ?3, 'suggested', ?4, ?5, ?5)
             ON CONFLICT (project_a_id, project_b_id) DO UPDATE
             SET score = excluded.score, rationale = excluded.rationale,
                 evaluated_ts = excluded.evaluated_ts",
            args![a, b, score, rationale, now],
        )?;
        Ok(())
    }

    /// Sets a stored pair's status (a < b), with its confirmed/dismissed time; whether the
    /// pair was stored.
    pub fn set_sibling_status(
        &self,
        a: ProjectId,
        b: ProjectId,
        status: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let changed = self.execute(
            "UPDATE project_sibling_suggestions SET status = ?3,
               confirmed_ts = CASE WHEN ?3 = 'confirmed' THEN ?4 ELSE NULL END,
               dismissed_ts = CASE WHEN ?3 = 'dismissed' THEN ?4 ELSE NULL END
             WHERE project_a_id = ?1 AND project_b_id = ?2",
            args![a, b, status, now],
        )?;
        Ok(changed > 0)
    }

    /// Suggestions worth showing: confirmed ones, and suggested ones scoring at least
    /// `min_score`, between live projects; best first.
    pub fn shown_siblings(&self, min_score: f64) -> Result<Vec<SiblingRow>> {
        self.query_vec(
            "SELECT s.project_a_id, a.slug, s.project_b_id, b.slug, s.score, s.status,
                    s.rationale
             FROM project_sibling_suggestions s
             JOIN projects a ON a.id = s.project_a_id
             JOIN projects b ON b.id = s.project_b_id
             WHERE a.archived_at IS NULL AND b.archived_at IS NULL
               AND (s.status = 'confirmed' OR (s.status = 'suggested' AND s.score >= ?1))
             ORDER BY s.status = 'confirmed' DESC, s.score DESC, s.id",
            args![min_score],
            |r| {
                Ok(SiblingRow {
                    project_a_id: r.get(0)?,
                    project_a_slug: r.get(1)?,
                    project_b_id: r.get(2)?,
                    project_b_slug: r.get(3)?,
                    score: r.get(4)?,
                    status: r.get(5)?,
                    rationale: r.get(6)?,
                })
            },
        )
    }
}
