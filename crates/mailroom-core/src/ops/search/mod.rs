//! search_messages and summarize_thread: heuristic summaries, refined by the LLM when one is
//! configured and the caller asks (`llm_mode`). Any LLM failure keeps the heuristic result.
//! `summaries`: fetch_topic, summarize_recent, fetch_summary.

pub mod summaries;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::bounds;
use crate::model::search_query::{like_fallback_terms, sanitize_fts_query};
use crate::model::summary::{Mention, SummaryInput, ThreadSummary, summarize};
use crate::model::summary_refine::{
    MAX_EXCERPTS, ThreadExcerpt, TopMention, aggregate_revision, multi_thread_prompt,
    refine_digest_thread, refine_single, single_thread_prompt,
};
use crate::model::time::Timestamp;
use crate::ops::output::ForeignSender;
use crate::ops::{Mailroom, resolve};
use crate::records::Project;
use crate::records::{AgentId, Importance, ListedMessage, MessageId, ProjectId};
use crate::search_index::SearchIndexer;
use crate::store::Db;
use crate::store::db::search::{SearchHit, SearchScope};
use mailroom_search::SearchIndex;

/// The fields every search result shares (`ack_required` is an integer, as in the reference).
#[derive(Debug, Clone, Serialize)]
pub struct SearchItem {
    pub id: MessageId,
    pub subject: String,
    pub importance: Importance,
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
    pub id: MessageId,
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
    /// Heuristic `{name, count}` pairs; an LLM digest may give bare names instead.
    pub top_mentions: Vec<TopMention>,
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
    /// Refine with the LLM when one is configured (ignored otherwise).
    pub llm_mode: bool,
    /// Model override for the refinement.
    pub llm_model: Option<String>,
    /// Summarise only the messages this agent sent or received (`None`: every message; the
    /// server passes the authenticated viewer when tool authentication is on).
    pub viewer: Option<String>,
}

/// What the read job gathered for summarize_thread, before any LLM refinement.
enum Gathered {
    Single(SingleThreadSummary, Vec<ThreadExcerpt>),
    Multi(MultiThreadSummary),
}

/// Messages of one thread considered for a single summary.
const SINGLE_THREAD_LIMIT: i64 = 10_000;

impl Mailroom {
    /// Full-text search in a project, best match first; with a `viewer`, only the messages
    /// that agent sent or received (the server passes the authenticated viewer when tool
    /// authentication is on).
    pub async fn search_messages(
        &self,
        project_key: String,
        query: String,
        limit: i64,
        viewer: Option<String>,
    ) -> Result<SearchResults> {
        bounds::search_query("query", &query)?;
        let limit = limit.clamp(1, 1000);
        let search = self.search.clone();
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let viewer_ids = viewer_id(db, &project, viewer.as_deref())?.map(|id| vec![id]);
                let scope = SearchScope { project_ids: vec![project.id], viewer_ids };
                let index = search.as_deref().map(SearchIndexer::index);
                let hits = search_hits(db, index, &scope, &query, limit)?;
                let ids: Vec<MessageId> = hits.iter().map(|h| h.id).collect();
                let mut lists = db.recipient_lists_of(&ids)?;
                let result = hits
                    .into_iter()
                    .map(|hit| {
                        let lists = lists.remove(&hit.id).unwrap_or_default();
                        SearchResult { item: SearchItem::from(hit), to: lists.to, cc: lists.cc }
                    })
                    .collect();
                Ok(SearchResults { result })
            })
            .await
    }

    /// Summarises one thread, or several when `thread_id` lists ids separated by commas.
    pub async fn summarize_thread(&self, req: SummarizeThread) -> Result<Summary> {
        let (llm_mode, llm_model) = (req.llm_mode, req.llm_model.clone());
        let gathered = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &req.project_key)?;
                let viewer = viewer_id(db, &project, req.viewer.as_deref())?;
                let ids: Vec<&str> =
                    req.thread_id.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                if let [single] = ids.as_slice() {
                    let (summary, excerpts, _) =
                        single_thread(db, project.id, single, viewer, req.include_examples)?;
                    return Ok(Gathered::Single(summary, excerpts));
                }
                let limit = req.per_thread_limit.max(1);
                let threads = ids
                    .iter()
                    .map(|id| {
                        let rows = db.thread_messages_seen_by(project.id, id, viewer, limit)?;
                        Ok(ThreadDigest {
                            thread_id: id.to_string(),
                            summary: summarize_rows(&rows),
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Gathered::Multi(MultiThreadSummary { aggregate: aggregate(&threads), threads }))
            })
            .await?;
        Ok(match gathered {
            Gathered::Single(mut single, excerpts) => {
                single.summary = self
                    .refine_thread_summary(
                        single.summary,
                        &excerpts,
                        llm_mode,
                        llm_model.as_deref(),
                    )
                    .await;
                Summary::Single(single)
            }
            Gathered::Multi(multi) => {
                Summary::Multi(self.refine_digest(multi, llm_mode, llm_model.as_deref()).await)
            }
        })
    }

    /// Summarises the single thread `thread_id` of a project (no comma splitting) and returns
    /// it with the number of messages it covers.
    pub(crate) async fn summarize_single_thread(
        &self,
        project_id: ProjectId,
        thread_id: String,
        include_examples: bool,
        llm_mode: bool,
        llm_model: Option<String>,
    ) -> Result<(SingleThreadSummary, usize)> {
        let (mut single, excerpts, total) = self
            .store
            .read(move |db| single_thread(db, project_id, &thread_id, None, include_examples))
            .await?;
        single.summary = self
            .refine_thread_summary(single.summary, &excerpts, llm_mode, llm_model.as_deref())
            .await;
        Ok((single, total))
    }

    /// Refines a heuristic single-thread summary with the LLM (docs/compat/tools.md §7.5) from the
    /// thread's messages, oldest first. Returns `heuristic` unchanged when the LLM is off, the
    /// caller did not ask (`llm_mode` false) or the call fails in any way (logged).
    ///
    /// Shared by summarize_thread, macro_prepare_thread and the product-wide summary.
    pub async fn refine_thread_summary(
        &self,
        heuristic: ThreadSummary,
        excerpts: &[ThreadExcerpt],
        llm_mode: bool,
        llm_model: Option<&str>,
    ) -> ThreadSummary {
        let Some(llm) = self.llm.as_ref().filter(|_| llm_mode) else {
            return heuristic;
        };
        let (system, user) = single_thread_prompt(excerpts);
        match llm.try_complete_json("thread summary", system, &user, llm_model).await {
            Some(reply) => refine_single(&heuristic, &reply),
            None => heuristic,
        }
    }

    /// Refines a multi-thread summary with one LLM digest of its first threads.
    async fn refine_digest(
        &self,
        mut multi: MultiThreadSummary,
        llm_mode: bool,
        llm_model: Option<&str>,
    ) -> MultiThreadSummary {
        let Some(llm) = self.llm.as_ref().filter(|_| llm_mode && !multi.threads.is_empty()) else {
            return multi;
        };
        let shown: Vec<(&str, &ThreadSummary)> =
            multi.threads.iter().map(|t| (t.thread_id.as_str(), &t.summary)).collect();
        let (system, user) = multi_thread_prompt(&shown);
        let Some(reply) = llm.try_complete_json("thread digest", system, &user, llm_model).await
        else {
            return multi;
        };
        for thread in &mut multi.threads {
            refine_digest_thread(&thread.thread_id, &mut thread.summary, &reply);
        }
        let revision = aggregate_revision(&reply);
        let aggregate = &mut multi.aggregate;
        if let Some(top_mentions) = revision.top_mentions {
            aggregate.top_mentions = top_mentions;
        }
        if let Some(key_points) = revision.key_points {
            aggregate.key_points = key_points;
        }
        if let Some(action_items) = revision.action_items {
            aggregate.action_items = action_items;
        }
        multi
    }
}

/// The agent id of a viewer name in the project (`None` without a viewer).
fn viewer_id(db: &Db<'_>, project: &Project, viewer: Option<&str>) -> Result<Option<AgentId>> {
    match viewer.map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => Ok(Some(resolve::agent(db, project, name, "agent_name")?.id)),
        None => Ok(None),
    }
}

/// The heuristic single-thread summary (of what `viewer` sent or received, when given), its
/// excerpts for the LLM and its message count.
fn single_thread(
    db: &Db<'_>,
    project_id: ProjectId,
    thread_id: &str,
    viewer: Option<AgentId>,
    include_examples: bool,
) -> Result<(SingleThreadSummary, Vec<ThreadExcerpt>, usize)> {
    let rows = db.thread_messages_seen_by(project_id, thread_id, viewer, SINGLE_THREAD_LIMIT)?;
    let examples = if include_examples { examples_of(&rows) } else { Vec::new() };
    let single = SingleThreadSummary {
        thread_id: thread_id.to_string(),
        summary: summarize_rows(&rows),
        examples,
    };
    Ok((single, excerpts_of(&rows), rows.len()))
}

/// Sanitises `query` and runs it in `scope`: by rank (the search index when there is one and
/// it can answer, else the database's full-text search), or the LIKE fallback when FTS5 would
/// reject the syntax. Unsearchable queries find nothing.
pub(crate) fn search_hits(
    db: &Db<'_>,
    index: Option<&SearchIndex>,
    scope: &SearchScope,
    query: &str,
    limit: i64,
) -> Result<Vec<SearchHit>> {
    let Some(fts) = sanitize_fts_query(query) else { return Ok(Vec::new()) };
    if let Some(hits) = db.search_fts(scope, &fts, limit, index)? {
        return Ok(hits);
    }
    let terms = like_fallback_terms(query);
    if terms.is_empty() { Ok(Vec::new()) } else { db.search_like(scope, &terms, limit) }
}

/// Sender label in summaries: `Name`, or `Name@slug` for senders from another project.
fn sender_label(row: &ListedMessage) -> String {
    if row.sender_project_id == row.message.project_id {
        row.sender_name.clone()
    } else {
        format!("{}@{}", row.sender_name, row.sender_project_slug)
    }
}

/// The heuristic summary of thread rows (oldest first).
pub(crate) fn summarize_rows(rows: &[ListedMessage]) -> ThreadSummary {
    let labels: Vec<String> = rows.iter().map(sender_label).collect();
    let inputs: Vec<SummaryInput<'_>> = rows
        .iter()
        .zip(&labels)
        .map(|(row, label)| SummaryInput { sender: label, body: &row.message.body_md })
        .collect();
    summarize(&inputs)
}

/// What the LLM is shown of thread rows (oldest first): the first few messages.
pub(crate) fn excerpts_of(rows: &[ListedMessage]) -> Vec<ThreadExcerpt> {
    rows.iter()
        .take(MAX_EXCERPTS)
        .map(|r| ThreadExcerpt {
            sender: sender_label(r),
            subject: r.message.subject.clone(),
            body: r.message.body_md.clone(),
        })
        .collect()
}

/// The first three messages of thread rows as summary examples.
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
        top_mentions: top.into_iter().map(TopMention::Counted).collect(),
        action_items: threads
            .iter()
            .flat_map(|t| t.summary.action_items.clone())
            .take(25)
            .collect(),
        key_points: threads.iter().flat_map(|t| t.summary.key_points.clone()).take(25).collect(),
    }
}
