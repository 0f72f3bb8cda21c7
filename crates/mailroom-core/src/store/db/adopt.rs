//! The queries of `mailroom projects adopt` (ops/projects/adopt.rs): a project's rows moved
//! into another project, counted first (read-only) and then moved in the caller's
//! transaction, and the source project's row deleted.

use super::Db;
use super::driver::{Param, args};
use crate::error::Result;
use crate::records::ProjectId;

/// A value the statements of an adoption bind.
#[derive(Debug, Clone, Copy)]
enum Arg {
    /// The source project's id.
    Source,
    /// The target project's id.
    Target,
    /// The source's attachment folder, `projects/<slug>/attachments/`.
    Old,
    /// The target's attachment folder.
    New,
}

/// One statement of a step and the values it binds: `?1` is `args[0]`, and so on.
struct Sql {
    text: String,
    args: &'static [Arg],
}

fn sql(text: impl Into<String>, args: &'static [Arg]) -> Sql {
    Sql { text: text.into(), args }
}

/// One step of the move: what it counts (read-only, before anything changed) and what it
/// does. Parameters ([`Arg`]): the source and target project ids, and the old and new
/// attachment folders (the two projects' `projects/<slug>/attachments/`). The steps run in
/// [`steps`]' order; the counts all read the database before any step, each saying what its
/// step will change once the steps before it ran.
struct Step {
    name: &'static str,
    count: Sql,
    change: Sql,
}

impl Step {
    fn new(name: &'static str, count: Sql, change: Sql) -> Self {
        Step { name, count, change }
    }

    /// The rows of `table` whose `project_id` is the source's, moved to the target.
    fn moved(table: &'static str) -> Self {
        Step {
            name: table,
            count: sql(
                format!("SELECT COUNT(*) FROM {table} WHERE project_id = ?1"),
                &[Arg::Source],
            ),
            change: sql(
                format!("UPDATE {table} SET project_id = ?2 WHERE project_id = ?1"),
                &[Arg::Source, Arg::Target],
            ),
        }
    }

    /// The rows of `table`, unique per project by `key`: the source's that the target has
    /// too are dropped (`<name>_dropped`; the target's stand), the others moved (`<name>`).
    /// Source `?1`, target `?2`.
    fn merged(names: [&'static str; 2], table: &str, key: &str) -> [Self; 2] {
        const BOTH: &[Arg] = &[Arg::Source, Arg::Target];
        let same = format!(
            "EXISTS (SELECT 1 FROM {table} t WHERE t.project_id = ?2 AND t.{key} = s.{key})"
        );
        let source = format!("SELECT COUNT(*) FROM {table} s WHERE s.project_id = ?1");
        [
            Step {
                name: names[0],
                count: sql(format!("{source} AND {same}"), BOTH),
                change: sql(
                    format!(
                        "DELETE FROM {table} WHERE project_id = ?1 AND {key} IN \
                         (SELECT {key} FROM {table} WHERE project_id = ?2)"
                    ),
                    BOTH,
                ),
            },
            Step {
                name: names[1],
                count: sql(format!("{source} AND NOT {same}"), BOTH),
                change: sql(
                    format!("UPDATE {table} SET project_id = ?2 WHERE project_id = ?1"),
                    BOTH,
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
            sql(
                "SELECT COUNT(*) FROM messages WHERE instr(body_md, ?1) > 0 \
                 OR instr(attachments, ?1) > 0",
                &[Arg::Old],
            ),
            sql(
                "UPDATE messages SET body_md = replace(body_md, ?1, ?2), \
                 attachments = replace(attachments, ?1, ?2) \
                 WHERE instr(body_md, ?1) > 0 OR instr(attachments, ?1) > 0",
                &[Arg::Old, Arg::New],
            ),
        ),
        Step::moved("file_reservations"),
        Step::new(
            "agent_links",
            sql(
                "SELECT COUNT(*) FROM agent_links WHERE a_project_id = ?1 OR b_project_id = ?1",
                &[Arg::Source],
            ),
            sql(
                "UPDATE agent_links SET \
                 a_project_id = CASE a_project_id WHEN ?1 THEN ?2 ELSE a_project_id END, \
                 b_project_id = CASE b_project_id WHEN ?1 THEN ?2 ELSE b_project_id END \
                 WHERE a_project_id = ?1 OR b_project_id = ?1",
                &[Arg::Source, Arg::Target],
            ),
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
            sql(
                "SELECT COUNT(*) FROM project_sibling_suggestions \
                 WHERE project_a_id = ?1 OR project_b_id = ?1",
                &[Arg::Source],
            ),
            sql(
                "DELETE FROM project_sibling_suggestions \
                 WHERE project_a_id = ?1 OR project_b_id = ?1",
                &[Arg::Source],
            ),
        ),
        Step::new(
            "project",
            sql("SELECT COUNT(*) FROM projects WHERE id = ?1", &[Arg::Source]),
            sql("DELETE FROM projects WHERE id = ?1", &[Arg::Source]),
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
    fn run(&self, db: &Db<'_>, sql: &Sql, count: bool) -> Result<usize> {
        let old = format!("projects/{}/attachments/", self.source_slug);
        let new = format!("projects/{}/attachments/", self.target_slug);
        let values: Vec<&dyn Param> = sql
            .args
            .iter()
            .map(|arg| -> &dyn Param {
                match arg {
                    Arg::Source => &self.source,
                    Arg::Target => &self.target,
                    Arg::Old => &old,
                    Arg::New => &new,
                }
            })
            .collect();
        if count {
            let n: i64 = db.query_opt(&sql.text, &values, |r| r.get(0))?.unwrap_or(0);
            Ok(usize::try_from(n).unwrap_or(0))
        } else {
            db.execute(&sql.text, &values)
        }
    }
}

impl Db<'_> {
    /// The source's agents whose names the target has too, ignoring ASCII case (the unique
    /// index on agent names ignores it), in the source's spelling.
    pub fn agent_name_clashes(&self, source: ProjectId, target: ProjectId) -> Result<Vec<String>> {
        self.query_vec(
            "SELECT s.name FROM agents s JOIN agents t \
             ON t.project_id = ?2 AND t.name = s.name COLLATE NOCASE \
             WHERE s.project_id = ?1 ORDER BY s.name",
            args![source, target],
            |r| r.get(0),
        )
    }

    /// The slugs of the projects holding messages an adoption changes besides the source's
    /// own: those sent by the source's agents (their front matter names the sender's
    /// project) and those linking to the source's attachment folder. Read before the move.
    pub fn projects_touched_by_adoption(&self, adoption: &Adoption<'_>) -> Result<Vec<String>> {
        let sql = "SELECT DISTINCT p.slug FROM messages m JOIN projects p ON p.id = m.project_id \
             WHERE m.project_id != ?1 AND (m.sender_id IN \
             (SELECT id FROM agents WHERE project_id = ?1) \
             OR instr(m.body_md, ?2) > 0 OR instr(m.attachments, ?2) > 0) ORDER BY p.slug";
        let old = format!("projects/{}/attachments/", adoption.source_slug);
        self.query_vec(sql, args![adoption.source, old], |r| r.get(0))
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
