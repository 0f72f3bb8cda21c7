//! Sibling-project suggestions for the web UI (docs/compat/http.md §7): pairs of projects
//! scored by `model::siblings` (names, shared parent directory, shared agents, README
//! excerpts) by a background task as projects and agents change, then by the LLM when one
//! is configured (its answer replaces the heuristic's), and the status a person gives a pair
//! (confirmed, dismissed, or back to suggested).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::llm::LlmClient;
use crate::model::names::OVERSEER_NAME;
use crate::model::siblings::{self, ProjectFacts, SUGGEST_AT, Scored};
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::records::ProjectId;
use crate::store::Db;
use crate::store::db::siblings::SiblingRow;

/// Pairs scored per pass of the background scorer.
const PAIRS_PER_PASS: i64 = 20;
/// A pass waits for writes to settle this long.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(1);
/// Stale pairs are looked for at least this often.
const RESCORE_CHECK: std::time::Duration = std::time::Duration::from_secs(3600);
/// A pair is scored again after this long (its agents and files change).
const RESCORE_AFTER_SECONDS: i64 = 24 * 3600;
/// A rationale is stored up to this many characters (the column holds 4,096).
const MAX_RATIONALE: usize = 4000;
/// Of each README/AGENTS file, this much is read.
const DOC_BYTES: usize = 4096;
/// The files a project's directory is read for.
const DOC_FILES: [&str; 3] = ["README.md", "AGENTS.md", "CLAUDE.md"];

/// The statuses a person may give a pair.
pub const STATUSES: [&str; 3] = ["suggested", "confirmed", "dismissed"];

/// A suggestion as the UI shows it: two projects (`project_id < other_id`), their score,
/// status and the reasons.
#[derive(Debug, Clone, Serialize)]
pub struct Sibling {
    pub project_id: ProjectId,
    pub project_slug: String,
    pub other_id: ProjectId,
    pub other_slug: String,
    pub score: f64,
    pub status: String,
    pub rationale: String,
}

impl From<SiblingRow> for Sibling {
    fn from(row: SiblingRow) -> Self {
        Self {
            project_id: row.project_a_id,
            project_slug: row.project_a_slug,
            other_id: row.project_b_id,
            other_slug: row.project_b_slug,
            score: row.score,
            status: row.status,
            rationale: row.rationale,
        }
    }
}

/// What a status change did.
#[derive(Debug, Clone, Serialize)]
pub struct SiblingStatus {
    pub success: bool,
    pub project_id: ProjectId,
    pub other_id: ProjectId,
    pub status: String,
    pub score: f64,
}

impl Mailroom {
    /// The background scorer, until `stop`: a pass after each burst of changes (new projects
    /// and agents) and at least hourly (pairs scored over a day ago are scored again). Its own
    /// writes wake the next pass, which scores the next pairs or finds none and waits.
    pub async fn score_siblings(&self, stop: impl std::future::Future<Output = ()>) {
        let mut changes = self.changes();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(RESCORE_CHECK) => {}
            }
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(SETTLE) => {}
            }
            changes.mark_unchanged();
            // Of several servers on one database, the leader scores for all.
            if !self.leads() {
                continue;
            }
            if let Err(e) = self.refresh_siblings(PAIRS_PER_PASS).await {
                tracing::warn!(error = %e.message, "sibling scoring failed");
            }
        }
    }

    /// Whether the background scorer has nothing left to score now (every pair of live
    /// projects scored within the day): its writes are over until projects change. Tests
    /// that compare the store's change count wait for it.
    pub async fn siblings_scored(&self) -> Result<bool> {
        let stale_before = Timestamp::now().plus_seconds(-RESCORE_AFTER_SECONDS);
        self.store.read(move |db| Ok(db.stale_sibling_pairs(stale_before, 1)?.is_empty())).await
    }

    /// Scores up to `max_pairs` pairs never scored or scored over a day ago; how many.
    async fn refresh_siblings(&self, max_pairs: i64) -> Result<usize> {
        let stale_before = Timestamp::now().plus_seconds(-RESCORE_AFTER_SECONDS);
        let (pairs, facts) = self
            .store
            .read(move |db| {
                let pairs = db.stale_sibling_pairs(stale_before, max_pairs)?;
                let facts = facts_of(db, pairs.iter().flat_map(|&(a, b)| [a, b]))?;
                Ok((pairs, facts))
            })
            .await?;
        if pairs.is_empty() {
            return Ok(0);
        }
        let facts = with_docs(facts).await;
        let now = Timestamp::now();
        let scored: Vec<_> = pairs
            .iter()
            .filter_map(|(a, b)| Some((*a, *b, siblings::score(facts.get(a)?, facts.get(b)?))))
            .collect();
        let count = scored.len();
        // With an LLM, each pair is then put to it: its answer replaces the heuristic's, which
        // stays when it fails.
        let asks: Vec<LlmAsk> = match &self.llm {
            Some(_) => scored
                .iter()
                .filter_map(|(a, b, s)| {
                    Some(LlmAsk {
                        a: *a,
                        b: *b,
                        prompt: llm_prompt(facts.get(a)?, facts.get(b)?, s),
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        self.store
            .write(move |db| {
                for (a, b, s) in &scored {
                    db.store_sibling_score(*a, *b, s.score, &s.rationale, now)?;
                }
                Ok(())
            })
            .await?;
        if let Some(llm) = self.llm.as_deref() {
            self.ask_llm(llm, asks).await;
        }
        Ok(count)
    }

    /// Scores pairs with the LLM, storing each answer that parses.
    async fn ask_llm(&self, llm: &LlmClient, asks: Vec<LlmAsk>) {
        for ask in asks {
            let Some(reply) =
                llm.try_complete_json("sibling score", LLM_SYSTEM, &ask.prompt, None).await
            else {
                continue;
            };
            let Some(scored) = parse_llm_score(&reply) else {
                tracing::warn!("LLM sibling score without a score in 0..1; heuristic kept");
                continue;
            };
            let now = Timestamp::now();
            let stored = self
                .store
                .write(move |db| {
                    db.store_sibling_score(ask.a, ask.b, scored.score, &scored.rationale, now)
                })
                .await;
            if let Err(e) = stored {
                tracing::warn!(error = %e.message, "LLM sibling score not stored");
            }
        }
    }

    /// The pairs to show: confirmed ones, and suggested ones scoring at least
    /// [`SUGGEST_AT`].
    pub async fn shown_siblings(&self) -> Result<Vec<Sibling>> {
        let rows = self.store.read(|db| db.shown_siblings(SUGGEST_AT)).await?;
        Ok(rows.into_iter().map(Sibling::from).collect())
    }

    /// Gives the pair a status (scoring it first when it was never scored).
    pub async fn set_sibling_status(
        &self,
        project_id: ProjectId,
        other_id: ProjectId,
        status: String,
    ) -> Result<SiblingStatus> {
        let status = status.trim().to_ascii_lowercase();
        if !STATUSES.contains(&status.as_str()) {
            return Err(Error::invalid(format!(
                "status: one of {} is needed, not {status:?}.",
                STATUSES.join(", ")
            )));
        }
        if project_id == other_id {
            return Err(Error::invalid("other_id: a project is not its own sibling."));
        }
        let (a, b) = (project_id.min(other_id), project_id.max(other_id));
        let facts = self
            .store
            .read(move |db| {
                for (id, field) in [(project_id, "project_id"), (other_id, "other_id")] {
                    if db.project_by_id(id)?.is_none() {
                        return Err(Error::not_found(format!("{field}: no project {id}.")));
                    }
                }
                facts_of(db, [a, b])
            })
            .await?;
        let facts = with_docs(facts).await;
        let scored = match (facts.get(&a), facts.get(&b)) {
            (Some(fa), Some(fb)) => siblings::score(fa, fb),
            _ => return Err(Error::not_found("project_id: the project is gone.")),
        };
        let now = Timestamp::now();
        let stored_status = status.clone();
        let score = scored.score;
        self.store
            .write(move |db| {
                db.store_sibling_score(a, b, scored.score, &scored.rationale, now)?;
                db.set_sibling_status(a, b, &stored_status, now)?;
                Ok(())
            })
            .await?;
        Ok(SiblingStatus { success: true, project_id, other_id, status, score })
    }
}

/// A pair to put to the LLM, with its prompt.
struct LlmAsk {
    a: ProjectId,
    b: ProjectId,
    prompt: String,
}

const LLM_SYSTEM: &str = "You judge whether two software projects are parts of one product \
     (an API and its client, a service and its deployment, a library and its documentation). \
     Reply with one JSON object: {\"score\": a number from 0 to 1, \"rationale\": one short \
     sentence}.";

/// Each project's directory, agents and README opening (cut), and the heuristic's view.
fn llm_prompt(a: &ProjectFacts, b: &ProjectFacts, heuristic: &Scored) -> String {
    let describe = |p: &ProjectFacts| {
        let docs: String = p.docs.as_deref().unwrap_or("(none)").chars().take(1500).collect();
        format!(
            "directory: {}\nagents: {}\nREADME/AGENTS opening:\n{docs}",
            p.human_key,
            p.agents.join(", ")
        )
    };
    format!(
        "Project A\n{}\n\nProject B\n{}\n\nA heuristic scored them {:.2} ({}).",
        describe(a),
        describe(b),
        heuristic.score,
        heuristic.rationale
    )
}

/// The LLM's `{score, rationale}`, when the score is a number in 0..1.
fn parse_llm_score(reply: &serde_json::Map<String, serde_json::Value>) -> Option<Scored> {
    let score = reply.get("score")?.as_f64().filter(|s| (0.0..=1.0).contains(s))?;
    let said = reply.get("rationale").and_then(serde_json::Value::as_str).unwrap_or_default();
    let rationale = format!("LLM: {}", said.chars().take(MAX_RATIONALE).collect::<String>());
    Some(Scored { score, rationale })
}

/// The facts of each project named (agents but the overseer; docs not read yet).
fn facts_of(
    db: &Db<'_>,
    ids: impl IntoIterator<Item = ProjectId>,
) -> Result<HashMap<ProjectId, ProjectFacts>> {
    let mut facts = HashMap::new();
    for id in ids {
        if facts.contains_key(&id) {
            continue;
        }
        let Some(project) = db.project_by_id(id)? else { continue };
        let agents = db
            .agents_of_project(id)?
            .into_iter()
            .map(|a| a.name)
            .filter(|name| name != OVERSEER_NAME)
            .collect();
        facts.insert(id, ProjectFacts { human_key: project.human_key, agents, docs: None });
    }
    Ok(facts)
}

/// Fills each project's docs from its directory, when its human key is one readable here.
async fn with_docs(
    mut facts: HashMap<ProjectId, ProjectFacts>,
) -> HashMap<ProjectId, ProjectFacts> {
    let read = tokio::task::spawn_blocking(move || {
        for fact in facts.values_mut() {
            fact.docs = read_docs(Path::new(&fact.human_key));
        }
        facts
    });
    read.await.unwrap_or_default()
}

fn read_docs(dir: &Path) -> Option<String> {
    if !dir.is_absolute() || !dir.is_dir() {
        return None;
    }
    let mut text = String::new();
    for name in DOC_FILES {
        let Ok(file) = std::fs::File::open(dir.join(name)) else { continue };
        let mut opening = Vec::with_capacity(DOC_BYTES);
        if file.take(DOC_BYTES as u64).read_to_end(&mut opening).is_err() {
            continue;
        }
        text.push_str(&String::from_utf8_lossy(&opening));
        text.push('\n');
    }
    (!text.is_empty()).then_some(text)
}
