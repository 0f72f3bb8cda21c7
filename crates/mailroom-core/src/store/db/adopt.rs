//! The queries of `mailroom projects adopt` (ops/projects/adopt.rs): a project's rows moved
//! into another project, counted first (read-only) and then moved in the caller's
//! transaction, and the source project's row deleted.

use rusqlite::ToSql;

use super::{Db, map_err};
use crate::error::Result;
use crate::records::ProjectId;

/// One step of the move: what it counts (read-only, before anything changed) and what it
/// does. Parameters: `:source` and `:target` (project ids), `:old` and `:new` (the two
/// projects' attachment folders, `projects/<slug>/attachments/`). The steps run in
/// [`steps`]' order; the counts all read the database before any step, each saying what its
/// step will change once the steps before it ran.
struct Step {
    name: &'static str,
    count: String,
    change: String,
}

impl Step {
    fn new(name: &'static str, count: &str, change: &str) -> Self {
        Step { name, count: count.to_string(), change: change.to_string() }
    }

    /// The rows of `table` whose `project_id` is the source's, moved to the target.
    fn moved(table: &'static str) -> Self {
        Step {
            name: table,
            count: format!("SELECT COUNT(*) FROM {table} WHERE project_id = :source"),
            change: format!("UPDATE {table} SET project_id = :target WHERE project_id = :source"),
        }
    }

    /// The rows of `table`, unique per project by `key`: the source's that the target has
    /// too are dropped (`<name>_dropped`; the target's stand), the others moved (`<name>`).
    fn merged(names: [&'static str; 2], table: &str, key: &str) -> [Self; 2] {
        let same = format!(
            "EXISTS (SELECT 1 FROM {table} t WHERE t.project_id = :target AND t.{key} = s.{key})"
        );
        let source = format!("SELECT COUNT(*) FROM {table} s WHERE s.project_id = :source");
        [
            Step {
                name: names[0],
                count: format!("{source} AND {same}"),
                change: format!(
                    "DELETE FROM {table} WHERE project_id = :source AND {key} IN \
                     (SELECT {key} FROM {table} WHERE project_id = :target)"
                ),
            },
            Step {
                name: names[1],
                count: format!("{source} AND NOT {same}"),
                change: format!(
                    "UPDATE {table} SET project_id = :target WHERE project_id = :source"
                ),
            },
        ]
    }
}

/// The steps of an adoption, in order.
fn steps() -> Vec<Step> {
    let mut steps = vec![
        Step::moved("agents"),
        Step::moved("messages"),
        Step::new(
            "messages_with_attachment_paths",
            "SELECT COUNT(*) FROM messages WHERE instr(body_md, :old) > 0 \
             OR instr(attachments, :old) > 0",
            "UPDATE messages SET body_md = replace(body_md, :old, :new), \
             attachments = replace(attachments, :old, :new) \
             WHERE instr(body_md, :old) > 0 OR instr(attachments, :old) > 0",
        ),
        Step::moved("file_reservations"),
        Step::new(
            "agent_links",
            "SELECT COUNT(*) FROM agent_links WHERE a_project_id = :source OR b_project_id = :source",
            "UPDATE agent_links SET \
             a_project_id = CASE a_project_id WHEN :source THEN :target ELSE a_project_id END, \
             b_project_id = CASE b_project_id WHEN :source THEN :target ELSE b_project_id END \
             WHERE a_project_id = :source OR b_project_id = :source",
        ),
        Step::moved("message_summaries"),
        // Deliveries follow their webhook (by its id); an agent's webhook follows its agent.
        // A project webhook on a URL the target's has too is kept: both post (tools.md §4.13).
        Step::moved("webhooks"),
    ];
    let windows = ["window_identities_dropped", "window_identities"];
    steps.extend(Step::merged(windows, "window_identities", "window_uuid"));
    let products = ["product_links_dropped", "product_links"];
    steps.extend(Step::merged(products, "product_project_links", "product_id"));
    steps.extend([
        // Suggestions are scored again by the background task; a pair naming the source
        // would become a project paired with itself or a duplicate.
        Step::new(
            "sibling_suggestions_dropped",
            "SELECT COUNT(*) FROM project_sibling_suggestions \
             WHERE project_a_id = :source OR project_b_id = :source",
            "DELETE FROM project_sibling_suggestions \
             WHERE project_a_id = :source OR project_b_id = :source",
        ),
        Step::new(
            "project",
            "SELECT COUNT(*) FROM projects WHERE id = :source",
            "DELETE FROM projects WHERE id = :source",
        ),
    ]);
    steps
}

/// The rows of each step, in [`steps`]' order: counted (`projects adopt`'s plan) or moved.
pub type AdoptCounts = Vec<(&'static str, usize)>;

/// The two projects of an adoption.
#[derive(Debug, Clone, Copy)]
pub struct Adoption<'a> {
    pub source: ProjectId,
    pub target: ProjectId,
    pub source_slug: &'a str,
    pub target_slug: &'a str,
}

impl Adoption<'_> {
    /// Runs `sql` with the parameters it names; how many rows it changed, or its count.
    fn run(&self, db: &Db<'_>, sql: &str, count: bool) -> Result<usize> {
        let old = format!("projects/{}/attachments/", self.source_slug);
        let new = format!("projects/{}/attachments/", self.target_slug);
        let values: [(&str, &dyn ToSql); 4] =
            [(":source", &self.source), (":target", &self.target), (":old", &old), (":new", &new)];
        let mut stmt = db.conn.prepare(sql).map_err(map_err)?;
        for (name, value) in values {
            if let Some(index) = stmt.parameter_index(name).map_err(map_err)? {
                stmt.raw_bind_parameter(index, value).map_err(map_err)?;
            }
        }
        if count {
            let mut rows = stmt.raw_query();
            let row = rows.next().map_err(map_err)?;
            let n: i64 = row.map_or(Ok(0), |r| r.get(0)).map_err(map_err)?;
            Ok(usize::try_from(n).unwrap_or(0))
        } else {
            stmt.raw_execute().map_err(map_err)
        }
    }
}

impl Db<'_> {
    /// The source's agents whose names the target has too, ignoring ASCII case (the unique
    /// index on agent names ignores it), in the source's spelling.
    pub fn agent_name_clashes(&self, source: ProjectId, target: ProjectId) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.name FROM agents s JOIN agents t \
                 ON t.project_id = ?2 AND t.name = s.name COLLATE NOCASE \
                 WHERE s.project_id = ?1 ORDER BY s.name",
            )
            .map_err(map_err)?;
        let rows = stmt.query_map([source, target], |r| r.get(0)).map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<String>>>().map_err(map_err)
    }

    /// The slugs of the projects holding messages an adoption changes besides the source's
    /// own: those sent by the source's agents (their front matter names the sender's
    /// project) and those linking to the source's attachment folder. Read before the move.
    pub fn projects_touched_by_adoption(&self, adoption: &Adoption<'_>) -> Result<Vec<String>> {
        let sql = "SELECT DISTINCT p.slug FROM messages m JOIN projects p ON p.id = m.project_id \
             WHERE m.project_id != :source AND (m.sender_id IN \
             (SELECT id FROM agents WHERE project_id = :source) \
             OR instr(m.body_md, :old) > 0 OR instr(m.attachments, :old) > 0) ORDER BY p.slug";
        let old = format!("projects/{}/attachments/", adoption.source_slug);
        let mut stmt = self.conn.prepare(sql).map_err(map_err)?;
        let rows = stmt
            .query_map(rusqlite::named_params! {":source": adoption.source, ":old": old}, |r| {
                r.get(0)
            })
            .map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<String>>>().map_err(map_err)
    }

    /// How many rows each step would move or drop (read-only).
    pub fn adoption_counts(&self, adoption: &Adoption<'_>) -> Result<AdoptCounts> {
        steps().iter().map(|step| Ok((step.name, adoption.run(self, &step.count, true)?))).collect()
    }

    /// Moves the source's rows into the target and deletes the source's project row, in the
    /// caller's transaction; the rows each step changed.
    pub fn adopt_project(&self, adoption: &Adoption<'_>) -> Result<AdoptCounts> {
        steps()
            .iter()
            .map(|step| Ok((step.name, adoption.run(self, &step.change, false)?)))
            .collect()
    }
}
