//! The guard's view of file reservations (docs/compat/cli.md §4.2 steps 4, 6 and 7), filtered to
//! the active exclusive reservations of other agents, compiled once, and matched against
//! changed paths.
//!
//! Two sources, one rule set. The server's database is read first when the hook names it: a
//! reservation tool answers only after its transaction commits, so what the guard reads there
//! agrees with the answer the moment it is given, whatever the archive's backlog (its files are
//! written by a commit that may come a second later under heavy mail). The archive's JSON
//! files are read when there is no database, or it does not know the project (an archive
//! written by another implementation): the guard works with the server down either way.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::archive::format::python_strip;
use crate::error::Result;
use crate::model::path_pattern::{PathPattern, PatternSet, is_virtual, normalize};
use crate::model::time::Timestamp;
use crate::records::Reservation;
use crate::store::copy::DatabaseAt;

/// How many conflicts the report lists (the reference's limit).
pub const REPORT_LIMIT: usize = 10;

/// One reservation that blocks the checking agent.
#[derive(Debug, Clone)]
pub struct Blocking {
    /// The pattern as stored.
    pub pattern: String,
    /// The holding agent.
    pub holder: String,
    /// The expiry as stored (empty when absent).
    pub expires_ts: String,
    compiled: PathPattern,
}

/// The reservations that block one agent, compiled once for many paths.
#[derive(Debug, Clone, Default)]
pub struct BlockingSet {
    reservations: Vec<Blocking>,
    /// Match case-insensitively (Git's `core.ignorecase`): patterns and paths are lower-cased.
    fold_case: bool,
    /// Every pattern in one set: a path no pattern matches is rejected in one pass before
    /// conflicts are attributed.
    union: PatternSet,
}

/// A changed path that matches a blocking reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The path as Git named it.
    pub path: String,
    /// The reservation's pattern as stored.
    pub pattern: String,
    /// The holding agent.
    pub holder: String,
    /// The reservation's expiry as stored.
    pub expires_ts: String,
}

impl BlockingSet {
    /// Loads every `*.json` file of `dir` (an object or a list of objects; unreadable files
    /// are skipped, a missing directory blocks nothing) and keeps the reservations that block
    /// `agent_name` at `now`: not virtual, exclusive (the default when absent), held by
    /// another agent (exact spelling), not released, not expired (an expiry that does not
    /// parse counts as active). The legacy `<sha1>.json` and `id-<id>.json` copies of one
    /// reservation are deduplicated by `id`. With `fold_case` (the repository's
    /// `core.ignorecase`, as the reference honours it) matching ignores case.
    pub fn load(dir: &Path, agent_name: &str, now: Timestamp, fold_case: bool) -> Self {
        let mut set = Self { fold_case, ..Self::default() };
        let Ok(entries) = std::fs::read_dir(dir) else { return set };
        let mut files: Vec<_> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        // Sorted so that which copy wins a duplicate id does not depend on the directory order.
        files.sort();
        let mut seen_ids = HashSet::new();
        for file in files {
            let Some(parsed) =
                std::fs::read(&file).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            else {
                continue;
            };
            let records = match parsed {
                Value::Array(items) => items,
                other => vec![other],
            };
            for record in records.iter().filter_map(Record::from_json) {
                if record.id.as_ref().is_none_or(|id| seen_ids.insert(id.clone())) {
                    set.consider(record, agent_name, now);
                }
            }
        }
        set
    }

    /// The reservations of the project `slug` in force at `now` in `database` (a SQLite file
    /// or a PostgreSQL database), kept by the same rules as [`BlockingSet::load`]. `None`
    /// when there is no database file or it holds no such project (the archive's files are
    /// then the record); an error when the database is there but cannot be read.
    pub fn load_from_database(
        database: &DatabaseAt,
        slug: &str,
        agent_name: &str,
        now: Timestamp,
        fold_case: bool,
    ) -> Result<Option<Self>> {
        let Some(mut reader) = database.reader()? else { return Ok(None) };
        let rows = reader.read(|db| {
            let Some(project_id) = db.project_id_matching(slug, &[])? else { return Ok(None) };
            db.project_reservations_in_force(project_id, now).map(Some)
        })?;
        let Some(rows) = rows else { return Ok(None) };
        let mut set = Self { fold_case, ..Self::default() };
        for row in &rows {
            set.consider(Record::from_row(row), agent_name, now);
        }
        Ok(Some(set))
    }

    fn consider(&mut self, record: Record, agent_name: &str, now: Timestamp) {
        let Record { pattern, holder, expires_ts, exclusive, released, .. } = record;
        // A lone negation pattern matches nothing in `pathspec`, so it never blocks.
        if pattern.is_empty()
            || pattern.starts_with('!')
            || is_virtual(&pattern)
            || !exclusive
            || (!holder.is_empty() && holder == agent_name)
            || released
            || Timestamp::parse_iso(&expires_ts).is_some_and(|expiry| expiry <= now)
        {
            return;
        }
        // As the reference: each pattern is compiled with only backslashes converted (a
        // leading `/` anchors it at the root); the union uses the normalised form, which
        // matches a superset, so it stays a safe pre-filter.
        let folded = self.fold(&pattern);
        let compiled = PathPattern::new(&folded.replace('\\', "/"));
        self.union.push(PathPattern::new(&normalize(&folded)));
        self.reservations.push(Blocking { pattern, holder, expires_ts, compiled });
    }

    fn fold(&self, text: &str) -> String {
        if self.fold_case { text.to_lowercase() } else { text.to_string() }
    }

    /// The reservations kept.
    pub fn reservations(&self) -> &[Blocking] {
        &self.reservations
    }

    /// Whether nothing blocks.
    pub fn is_empty(&self) -> bool {
        self.reservations.is_empty()
    }

    /// Every (path, reservation) pair where the reservation's pattern matches the path
    /// (backslashes become `/`, leading `/` are stripped), in path order.
    pub fn conflicts<'a>(&self, paths: impl IntoIterator<Item = &'a str>) -> Vec<Conflict> {
        let mut found = Vec::new();
        if self.is_empty() {
            return found;
        }
        for path in paths {
            let normalized = normalize(&self.fold(path));
            if !self.union.matches(&normalized) {
                continue;
            }
            for reservation in &self.reservations {
                if reservation.compiled.matches(&normalized) {
                    found.push(Conflict {
                        path: path.to_string(),
                        pattern: reservation.pattern.clone(),
                        holder: reservation.holder.clone(),
                        expires_ts: reservation.expires_ts.clone(),
                    });
                }
            }
        }
        found
    }
}

/// One reservation as either source states it, before the blocking rules apply.
struct Record {
    /// The id as text, for deduplicating the archive's two copies of a reservation.
    id: Option<String>,
    pattern: String,
    holder: String,
    expires_ts: String,
    exclusive: bool,
    released: bool,
}

impl Record {
    /// A record of the archive's JSON, each field read as the reference reads it.
    fn from_json(record: &Value) -> Option<Self> {
        let fields = record.as_object()?;
        let id = fields.get("id").filter(|v| !v.is_null()).map(|id| match id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        Some(Self {
            id,
            pattern: text(fields.get("path_pattern")),
            holder: text(fields.get("agent")),
            expires_ts: text(fields.get("expires_ts")),
            exclusive: fields.get("exclusive").is_none_or(python_truthy),
            released: fields.get("released_ts").is_some_and(python_truthy_text),
        })
    }

    /// A database row, spelled as the archive's file for it says (pattern stripped, expiry
    /// in ISO form), so either source reports a conflict in the same words.
    fn from_row(row: &Reservation) -> Self {
        Self {
            id: Some(row.id.to_string()),
            pattern: python_strip(&row.path_pattern).trim().to_string(),
            holder: row.agent_name.trim().to_string(),
            expires_ts: row.expires_ts.to_iso(),
            exclusive: row.exclusive,
            released: row.released_ts.is_some(),
        }
    }
}

/// The report on stderr: the reference's heading and up to ten lines
/// `- <path> matches <pattern> (holder: <agent>, expires <ts>)`.
pub fn report(conflicts: &[Conflict]) -> String {
    let mut text = String::from("Exclusive file_reservation conflicts detected\n");
    for conflict in conflicts.iter().take(REPORT_LIMIT) {
        let expiry = if conflict.expires_ts.is_empty() {
            String::new()
        } else {
            format!(", expires {}", conflict.expires_ts)
        };
        text.push_str(&format!(
            "- {} matches {} (holder: {}{expiry})\n",
            conflict.path, conflict.pattern, conflict.holder
        ));
    }
    if conflicts.len() > REPORT_LIMIT {
        text.push_str(&format!("… and {} more\n", conflicts.len() - REPORT_LIMIT));
    }
    text
}

/// A field read as the reference does, `(value or '').strip()`: strings trimmed, anything
/// else empty.
fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).map(str::trim).unwrap_or_default().to_string()
}

/// Python truthiness of a JSON value.
fn python_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Whether `released_ts` marks a release: a non-blank string, or any other truthy value.
fn python_truthy_text(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.trim().is_empty(),
        other => python_truthy(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse_iso("2026-01-10T12:00:00+00:00").expect("now")
    }

    fn reservation(id: i64, agent: &str, pattern: &str) -> Value {
        json!({
            "id": id, "project": "p", "agent": agent, "path_pattern": pattern,
            "exclusive": true, "reason": "", "created_ts": "2026-01-10T11:00:00+00:00",
            "expires_ts": "2026-01-10T13:00:00+00:00", "released_ts": null
        })
    }

    fn write(dir: &Path, name: &str, value: &Value) {
        std::fs::write(dir.join(name), serde_json::to_vec(value).expect("json")).expect("write");
    }

    fn patterns(set: &BlockingSet) -> Vec<&str> {
        let mut list: Vec<&str> = set.reservations().iter().map(|r| r.pattern.as_str()).collect();
        list.sort_unstable();
        list
    }

    #[test]
    fn loader_dedupes_copies_and_skips_what_does_not_block() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        write(d, "aaa.json", &reservation(1, "GreenCastle", "src/**"));
        write(d, "id-1.json", &reservation(1, "GreenCastle", "src/**"));
        write(d, "list.json", &json!([reservation(2, "GreenCastle", "docs/*.md"), "junk", 7]));
        write(d, "mine.json", &reservation(3, "BlueLake", "mine/**"));
        let mut shared = reservation(4, "GreenCastle", "shared/**");
        shared["exclusive"] = json!(false);
        write(d, "shared.json", &shared);
        let mut released = reservation(5, "GreenCastle", "released/**");
        released["released_ts"] = json!("2026-01-10T11:30:00+00:00");
        write(d, "released.json", &released);
        let mut expired = reservation(6, "GreenCastle", "expired/**");
        expired["expires_ts"] = json!("2026-01-10T12:00:00+00:00");
        write(d, "expired.json", &expired);
        let mut odd_expiry = reservation(7, "GreenCastle", "odd/**");
        odd_expiry["expires_ts"] = json!("next tuesday");
        write(d, "odd.json", &odd_expiry);
        write(d, "virtual.json", &reservation(8, "GreenCastle", "tool://deploy"));
        let mut no_flag = reservation(9, "GreenCastle", "default/**");
        no_flag.as_object_mut().expect("obj").remove("exclusive");
        write(d, "default.json", &no_flag);
        let mut null_flag = reservation(10, "GreenCastle", "null/**");
        null_flag["exclusive"] = Value::Null;
        write(d, "null.json", &null_flag);
        write(d, "other-case.json", &reservation(11, "bluelake", "case/**"));
        std::fs::write(d.join("broken.json"), "{not json").expect("write");
        write(d, "ignored.txt", &reservation(12, "GreenCastle", "txt/**"));

        let set = BlockingSet::load(d, "BlueLake", now(), false);
        assert_eq!(patterns(&set), ["case/**", "default/**", "docs/*.md", "odd/**", "src/**"]);
    }

    #[test]
    fn missing_directory_blocks_nothing() {
        let set =
            BlockingSet::load(Path::new("/nonexistent/mailroom/guard"), "BlueLake", now(), false);
        assert!(set.is_empty());
        assert!(set.conflicts(["src/a.rs"]).is_empty());
    }

    #[test]
    fn conflicts_attribute_every_matching_reservation() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "a.json", &reservation(1, "GreenCastle", "src/**"));
        write(dir.path(), "b.json", &reservation(2, "RedFox", "*.rs"));
        write(dir.path(), "c.json", &reservation(3, "RedFox", "/top.txt"));
        let set = BlockingSet::load(dir.path(), "BlueLake", now(), false);
        let found =
            set.conflicts(["src/lib.rs", "README.md", "docs\\x.rs", "/top.txt", "a/top.txt"]);
        let pairs: Vec<(&str, &str)> =
            found.iter().map(|c| (c.path.as_str(), c.pattern.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("src/lib.rs", "src/**"),
                ("src/lib.rs", "*.rs"),
                ("docs\\x.rs", "*.rs"),
                ("/top.txt", "/top.txt")
            ]
        );
        let text = report(&found);
        assert!(text.starts_with("Exclusive file_reservation conflicts detected\n"));
        assert!(text.contains(
            "- src/lib.rs matches src/** (holder: GreenCastle, expires 2026-01-10T13:00:00+00:00)"
        ));
    }

    #[test]
    fn ignorecase_folds_patterns_and_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), "a.json", &reservation(1, "GreenCastle", "Src/**"));
        let exact = BlockingSet::load(dir.path(), "BlueLake", now(), false);
        assert!(exact.conflicts(["src/a.rs", "SRC/b.rs"]).is_empty());
        let folded = BlockingSet::load(dir.path(), "BlueLake", now(), true);
        let found = folded.conflicts(["src/a.rs", "SRC/b.rs", "lib/c.rs"]);
        let paths: Vec<&str> = found.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["src/a.rs", "SRC/b.rs"]);
        assert_eq!(found[0].pattern, "Src/**", "reported as stored");
    }

    #[test]
    fn report_lists_at_most_ten() {
        let conflict = Conflict {
            path: "a".into(),
            pattern: "a".into(),
            holder: "X".into(),
            expires_ts: String::new(),
        };
        let text = report(&vec![conflict; 12]);
        assert_eq!(text.lines().filter(|l| l.starts_with("- ")).count(), 10);
        assert!(text.contains("- a matches a (holder: X)\n"));
        assert!(text.contains("and 2 more"));
    }
}
