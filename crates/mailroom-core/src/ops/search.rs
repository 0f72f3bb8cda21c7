//! search_messages and summarize_thread (heuristic; LLM refinement arrives later).

use std::collections::BTreeMap;

use serde::Serialize;

use super::output::ForeignSender;
use super::{Mailroom, resolve};
use crate::error::Result;
use crate::model::search_query::{like_fallback_terms, sanitize_fts_query};
use crate::model::summary::{Mention, SummaryInput, ThreadSummary, summarize};
use crate::model::time::Timestamp;
use crate::store::Db;
use crate::store::db::messages::ListedMessage;
use crate::store::db::search::{SearchHit, SearchScope};

/// The fields every search result shares (`ack_required` is an integer, as in the reference).
#[derive(Debug, Clone, Serialize)]
pub struct SearchItem {
    pub id: i64,
    pub subject: String,
    pub importance: String,
    pub ack_required: u8,
    pub created_ts: Timestamp,
    pub thread_id: Option<String>,
    pub from: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub foreign_sender: Option<ForeignSender>,
}

impl From<SearchHit> for SearchItem {
    fn from(hit: SearchHit) -> Self {
        let foreign_sender = (hit.sender_project_id != hit.project_id).then(|| ForeignSender {
            from_project: hit.sender_project_human_key.clone(),
            from_project_slug: hit.sender_project_slug.clone(),
            from_address: format!("project:{}#{}", hit.sender_project_slug, hit.sender_name),
        });
        Self {
            id: hit.id,
            subject: hit.subject,
            importance: hit.importance,
            ack_required: u8::from(hit.ack_required),
            created_ts: hit.created_ts,
            thread_id: hit.thread_id,
            from: hit.sender_name,
            foreign_sender,
        }
    }
}

/// One search_messages result (the fixture's shape lists `to` and `cc` too).
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    #[serde(flatten)]
    pub item: SearchItem,
    pub to: Vec<String>,
    pub cc: Vec<String>,
}

/// Result of search_messages: `{"result": [...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResults {
    pub result: Vec<SearchResult>,
}

/// An example message in a single-thread summary.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadExample {
    pub id: i64,
    pub subject: String,
    pub from: String,
    pub created_ts: Timestamp,
}

/// Result of summarize_thread for one thread id.
#[derive(Debug, Clone, Serialize)]
pub struct SingleThreadSummary {
    pub thread_id: String,
    pub summary: ThreadSummary,
    pub examples: Vec<ThreadExample>,
}

/// One thread in a multi-thread summary.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadDigest {
    pub thread_id: String,
    pub summary: ThreadSummary,
}

/// Aggregate over several threads.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    pub top_mentions: Vec<Mention>,
    pub action_items: Vec<String>,
    pub key_points: Vec<String>,
}

/// Result of summarize_thread for zero or several thread ids.
#[derive(Debug, Clone, Serialize)]
pub struct MultiThreadSummary {
    pub threads: Vec<ThreadDigest>,
    pub aggregate: Aggregate,
}

/// Either summary shape.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Summary {
    Single(SingleThreadSummary),
    Multi(MultiThreadSummary),
}

/// Arguments of summarize_thread.
#[derive(Debug, Clone)]
pub struct SummarizeThread {
    pub project_key: String,
    pub thread_id: String,
    pub include_examples: bool,
    pub per_thread_limit: i64,
}

/// Messages of one thread considered for a single summary.
const SINGLE_THREAD_LIMIT: i64 = 10_000;

impl Mailroom {
    /// Full-text search in a project, best match first.
    pub async fn search_messages(
        &self,
        project_key: String,
        query: String,
        limit: i64,
    ) -> Result<SearchResults> {
        let limit = limit.clamp(1, 1000);
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let hits = search_hits(db, &SearchScope::project(project.id), &query, limit)?;
                let result =
                    hits.into_iter().map(|h| search_result(db, h)).collect::<Result<_>>()?;
                Ok(SearchResults { result })
            })
            .await
    }

    /// Summarises one thread, or several when `thread_id` lists ids separated by commas.
    pub async fn summarize_thread(&self, req: SummarizeThread) -> Result<Summary> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &req.project_key)?;
                let ids: Vec<&str> =
                    req.thread_id.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                if let [single] = ids.as_slice() {
                    let rows = db.thread_messages(project.id, single, SINGLE_THREAD_LIMIT)?;
                    let examples =
                        if req.include_examples { examples_of(&rows) } else { Vec::new() };
                    return Ok(Summary::Single(SingleThreadSummary {
                        thread_id: single.to_string(),
                        summary: summarize_rows(&rows),
                        examples,
                    }));
                }
                let limit = req.per_thread_limit.max(1);
                let threads = ids
                    .iter()
                    .map(|id| {
                        Ok(ThreadDigest {
                            thread_id: id.to_string(),
                            summary: summarize_rows(&db.thread_messages(project.id, id, limit)?),
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Summary::Multi(MultiThreadSummary { aggregate: aggregate(&threads), threads }))
            })
            .await
    }
}

/// Sanitises `query` and runs it in `scope`: FTS5 by rank, or the LIKE fallback when FTS5
/// rejects the syntax. Unsearchable queries find nothing.
pub(crate) fn search_hits(
    db: &Db<'_>,
    scope: &SearchScope,
    query: &str,
    limit: i64,
) -> Result<Vec<SearchHit>> {
    let Some(fts) = sanitize_fts_query(query) else { return Ok(Vec::new()) };
    if let Some(hits) = db.search_fts(scope, &fts, limit)? {
        return Ok(hits);
    }
    let terms = like_fallback_terms(query);
    if terms.is_empty() { Ok(Vec::new()) } else { db.search_like(scope, &terms, limit) }
}

fn search_result(db: &Db<'_>, hit: SearchHit) -> Result<SearchResult> {
    let mut to = Vec::new();
    let mut cc = Vec::new();
    for (kind, name, _) in db.recipients_of(hit.id)? {
        match kind.as_str() {
            "to" => to.push(name),
            "cc" => cc.push(name),
            _ => {}
        }
    }
    Ok(SearchResult { item: SearchItem::from(hit), to, cc })
}

/// Sender label in summaries: `Name`, or `Name@slug` for senders from another project.
fn sender_label(row: &ListedMessage) -> String {
    if row.sender_project_id == row.message.project_id {
        row.sender_name.clone()
    } else {
        format!("{}@{}", row.sender_name, row.sender_project_slug)
    }
}

pub(crate) fn summarize_rows(rows: &[ListedMessage]) -> ThreadSummary {
    let labels: Vec<String> = rows.iter().map(sender_label).collect();
    let inputs: Vec<SummaryInput<'_>> = rows
        .iter()
        .zip(&labels)
        .map(|(row, label)| SummaryInput { sender: label, body: &row.message.body_md })
        .collect();
    summarize(&inputs)
}

pub(crate) fn examples_of(rows: &[ListedMessage]) -> Vec<ThreadExample> {
    rows.iter()
        .take(3)
        .map(|r| ThreadExample {
            id: r.message.id,
            subject: r.message.subject.clone(),
            from: sender_label(r),
            created_ts: r.message.created_ts,
        })
        .collect()
}

fn aggregate(threads: &[ThreadDigest]) -> Aggregate {
    let mut mentions: BTreeMap<String, usize> = BTreeMap::new();
    for mention in threads.iter().flat_map(|t| &t.summary.mentions) {
        *mentions.entry(mention.name.clone()).or_default() += mention.count;
    }
    let mut top: Vec<Mention> =
        mentions.into_iter().map(|(name, count)| Mention { name, count }).collect();
    top.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    top.truncate(10);
    Aggregate {
        top_mentions: top,
        action_items: threads
            .iter()
            .flat_map(|t| t.summary.action_items.clone())
            .take(25)
            .collect(),
        key_points: threads.iter().flat_map(|t| t.summary.key_points.clone()).take(25).collect(),
    }
}
