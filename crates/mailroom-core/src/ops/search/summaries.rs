//! fetch_topic, summarize_recent and fetch_summary, tools of the reference's HEAD only
//! (docs/compat/tools.md §4.6, §7.6–7.7).
//!
//! summarize_recent condenses a project's recent traffic into one stored summary
//! (`message_summaries`); fetch_summary lists the stored ones.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::summary::ThreadSummary;
use crate::model::time::Timestamp;
use crate::ops::messaging::{mark_listed_read, parse_since};
use crate::ops::output::MessageOut;
use crate::ops::search::{excerpts_of, summarize_rows};
use crate::ops::{Mailroom, resolve};
use crate::records::{ListedMessage, MessageId};
use crate::store::Db;
use crate::store::db::windows::{NewSummary, StoredSummary, TopicQuery};

/// Arguments of fetch_topic.
#[derive(Debug, Clone, Default)]
pub struct FetchTopic {
    pub project_key: String,
    pub topic_name: String,
    pub limit: Option<i64>,
    pub include_bodies: bool,
    pub since_ts: Option<String>,
    /// The viewer: only messages it sent or received are listed. `None` lists them all
    /// (the server requires a viewer when tool authentication is on).
    pub agent_name: Option<String>,
    /// Only messages the viewer received and has not read (needs `agent_name`).
    pub unread_only: bool,
    /// Mark the returned messages the viewer received read, in the same write (needs
    /// `agent_name`).
    pub mark_read: bool,
}

/// Arguments of summarize_recent.
#[derive(Debug, Clone)]
pub struct SummarizeRecent {
    pub project_key: String,
    pub since_hours: f64,
    pub llm_mode: bool,
    pub llm_model: Option<String>,
    pub max_messages: i64,
}

/// A stored (or fresh) summary of recent activity.
#[derive(Debug, Clone, Serialize)]
pub struct RecentSummary {
    pub id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    pub summary_text: String,
    pub start_ts: Timestamp,
    pub end_ts: Timestamp,
    pub source_message_count: i64,
    pub source_thread_ids: Vec<String>,
    pub llm_model: Option<String>,
    pub cost_usd: Option<f64>,
    pub created_ts: Option<Timestamp>,
}

/// Most messages one summary covers.
pub const MAX_RECENT_MESSAGES: i64 = 500;
/// A stored summary this close (seconds) to the requested window is reused.
const CACHE_TOLERANCE_SECONDS: i64 = 300;
const MAX_TOPIC_LIMIT: i64 = 1000;

const RECENT_SYSTEM_PROMPT: &str = "You summarise recent activity of a team of coding agents. \
     Reply with one JSON object with keys key_decisions, blockers_resolved, work_completed, \
     open_questions (lists of short strings), participants (list of names) and totals \
     (object with messages and threads).";

impl Mailroom {
    /// Messages of a topic, newest first, that the viewer sent or received.
    pub async fn fetch_topic(&self, req: FetchTopic) -> Result<Vec<MessageOut>> {
        let topic = req.topic_name.trim().to_string();
        if topic.is_empty() {
            return Err(Error::invalid("topic_name must not be empty."));
        }
        let limit = req.limit.unwrap_or(50).clamp(1, MAX_TOPIC_LIMIT);
        let since = parse_since(req.since_ts.as_deref())?;
        let viewer_name = req.agent_name.clone().filter(|n| !n.trim().is_empty());
        if viewer_name.is_none() && (req.unread_only || req.mark_read) {
            return Err(Error::invalid(
                "unread_only and mark_read need agent_name: whose reads they mean.",
            ));
        }
        let page = move |db: &Db<'_>| {
            let project = resolve::project(db, &req.project_key)?;
            let viewer = match viewer_name.as_deref() {
                Some(name) => Some(resolve::agent(db, &project, name, "agent_name")?.id),
                None => None,
            };
            let rows = db.topic_messages(&TopicQuery {
                project_id: project.id,
                topic: &topic,
                viewer,
                since,
                limit,
                unread_only: req.unread_only,
            })?;
            if let (true, Some(viewer)) = (req.mark_read, viewer) {
                let ids: Vec<MessageId> = rows.iter().map(|r| r.message.id).collect();
                mark_listed_read(db, project.id, viewer, &ids)?;
            }
            Ok(rows.iter().map(|r| MessageOut::from_listing(r, req.include_bodies)).collect())
        };
        if req.mark_read { self.store.write(page).await } else { self.store.read(page).await }
    }

    /// Summarises the project's messages of the last `since_hours`, reusing a stored summary
    /// of (about) the same window, and stores the new one.
    pub async fn summarize_recent(&self, req: SummarizeRecent) -> Result<RecentSummary> {
        if !req.since_hours.is_finite() || req.since_hours <= 0.0 {
            return Err(Error::invalid(format!(
                "since_hours must be a positive number (got {}).",
                req.since_hours
            )));
        }
        bounds::hours("since_hours", req.since_hours)?;
        let end = Timestamp::now();
        let start = end.plus_seconds(-((req.since_hours * 3600.0).round() as i64));
        let limit = req.max_messages.clamp(1, MAX_RECENT_MESSAGES);
        let key = req.project_key.clone();
        let (project_id, cached, rows) = self
            .store
            .read(move |db| {
                let project = resolve::project(db, &key)?;
                if let Some(hit) =
                    db.cached_summary(project.id, start, end, CACHE_TOLERANCE_SECONDS)?
                {
                    return Ok((project.id, Some(hit), Vec::new()));
                }
                // One more than wanted tells whether the window held more than the limit.
                Ok((project.id, None, db.messages_since(project.id, start, limit + 1)?))
            })
            .await?;
        if let Some(hit) = cached {
            return Ok(recent_out(hit, Some(true)));
        }
        if rows.is_empty() {
            return Ok(RecentSummary {
                id: None,
                cached: Some(false),
                summary_text: format!(
                    "No activity in the last {} hours.",
                    python_float(req.since_hours)
                ),
                start_ts: start,
                end_ts: end,
                source_message_count: 0,
                source_thread_ids: Vec::new(),
                llm_model: None,
                cost_usd: None,
                created_ts: None,
            });
        }
        let mut rows = rows;
        let truncated = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let threads = group_by_thread(&rows);
        let heuristic = combine_recent(&threads, truncated, limit);
        let (summary_text, llm_model) = self.refine_recent(&heuristic, &rows, &req).await;
        let thread_ids: Vec<String> = threads.keys().cloned().collect();
        let ids_json = Value::from(thread_ids.clone()).to_string();
        let created = Timestamp::now();
        let count = rows.len() as i64;
        let (text, model) = (summary_text.clone(), llm_model.clone());
        let id = self
            .store
            .write(move |db| {
                db.insert_summary(&NewSummary {
                    project_id,
                    summary_text: &text,
                    start_ts: start,
                    end_ts: end,
                    source_message_count: count,
                    source_thread_ids: &ids_json,
                    llm_model: model.as_deref(),
                    cost_usd: None,
                    created_ts: created,
                })
            })
            .await?;
        Ok(RecentSummary {
            id: Some(id),
            cached: Some(false),
            summary_text,
            start_ts: start,
            end_ts: end,
            source_message_count: count,
            source_thread_ids: thread_ids,
            llm_model,
            cost_usd: None,
            created_ts: Some(created),
        })
    }

    /// Stored summaries whose window ends within the last `since_hours`, newest first.
    pub async fn fetch_summary(
        &self,
        project_key: String,
        since_hours: f64,
        limit: i64,
    ) -> Result<Vec<RecentSummary>> {
        if !since_hours.is_finite() || since_hours < 0.0 {
            return Err(Error::invalid(format!(
                "since_hours must be zero or more (got {since_hours})."
            )));
        }
        bounds::hours("since_hours", since_hours)?;
        let since = Timestamp::now().plus_seconds(-((since_hours * 3600.0).round() as i64));
        let limit = limit.max(1);
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let stored = db.summaries_since(project.id, since, limit)?;
                Ok(stored.into_iter().map(|s| recent_out(s, None)).collect())
            })
            .await
    }

    /// The LLM's digest replaces the heuristic text when the LLM is on and asked for; any
    /// failure keeps the heuristic. Returns the text and the model that wrote it.
    async fn refine_recent(
        &self,
        heuristic: &Value,
        rows: &[ListedMessage],
        req: &SummarizeRecent,
    ) -> (String, Option<String>) {
        let Some(llm) = self.llm.as_ref().filter(|_| req.llm_mode) else {
            return (heuristic.to_string(), None);
        };
        let excerpts: Vec<String> = excerpts_of(rows)
            .iter()
            .map(|e| format!("- {}: {}\n{}", e.sender, e.subject, e.body))
            .collect();
        let user =
            format!("Heuristic digest:\n{heuristic}\n\nFirst messages:\n{}", excerpts.join("\n\n"));
        let model = req.llm_model.as_deref();
        match llm.try_complete_json("recent summary", RECENT_SYSTEM_PROMPT, &user, model).await {
            Some(reply) => (Value::Object(reply).to_string(), Some(llm.model_for(model))),
            None => (heuristic.to_string(), None),
        }
    }
}

fn recent_out(stored: StoredSummary, cached: Option<bool>) -> RecentSummary {
    RecentSummary {
        id: Some(stored.id),
        cached,
        summary_text: stored.summary_text,
        start_ts: stored.start_ts,
        end_ts: stored.end_ts,
        source_message_count: stored.source_message_count,
        source_thread_ids: serde_json::from_str(&stored.source_thread_ids).unwrap_or_default(),
        llm_model: stored.llm_model,
        cost_usd: stored.cost_usd,
        created_ts: Some(stored.created_ts),
    }
}

/// Heuristic summaries per thread (`thread_id`, or `msg-<id>` for a message outside any
/// thread), keyed and ordered by thread id.
fn group_by_thread(rows: &[ListedMessage]) -> BTreeMap<String, ThreadSummary> {
    let mut groups: BTreeMap<String, Vec<ListedMessage>> = BTreeMap::new();
    for row in rows {
        let key =
            row.message.thread_id.clone().unwrap_or_else(|| format!("msg-{}", row.message.id));
        groups.entry(key).or_default().push(row.clone());
    }
    groups.into_iter().map(|(id, rows)| (id, summarize_rows(&rows))).collect()
}

/// Combines per-thread summaries into the summarize_recent digest.
pub fn combine_recent(
    threads: &BTreeMap<String, ThreadSummary>,
    truncated: bool,
    limit: i64,
) -> Value {
    let participants: BTreeSet<&str> =
        threads.values().flat_map(|t| t.participants.iter().map(String::as_str)).collect();
    let key_points: Vec<&String> = threads.values().flat_map(|t| &t.key_points).take(20).collect();
    let action_items: Vec<&String> =
        threads.values().flat_map(|t| &t.action_items).take(20).collect();
    let mut digest = json!({
        "participants": participants,
        "key_points": key_points,
        "action_items": action_items,
        "total_messages": threads.values().map(|t| t.total_messages).sum::<usize>(),
        "total_threads": threads.len(),
        "open_actions": threads.values().map(|t| t.open_actions).sum::<usize>(),
        "done_actions": threads.values().map(|t| t.done_actions).sum::<usize>(),
    });
    if truncated {
        digest["truncated"] = Value::Bool(true);
        digest["truncation_note"] =
            Value::from(format!("Only the first {limit} messages of the window were summarised."));
    }
    digest
}

/// A float as Python's `str` writes it (`1.0`, `0.5`, `24.0`).
fn python_float(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{value:.1}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(
        participants: &[&str],
        key_points: &[&str],
        total: usize,
        open: usize,
    ) -> ThreadSummary {
        ThreadSummary {
            participants: participants.iter().map(|s| s.to_string()).collect(),
            key_points: key_points.iter().map(|s| s.to_string()).collect(),
            action_items: Vec::new(),
            total_messages: total,
            open_actions: open,
            done_actions: 0,
            mentions: Vec::new(),
            code_references: Vec::new(),
        }
    }

    #[test]
    fn recent_digest_merges_threads() {
        let mut threads = BTreeMap::new();
        threads.insert("T-1".to_string(), thread(&["BlueLake", "RedFox"], &["a"], 2, 1));
        threads.insert("msg-7".to_string(), thread(&["BlueLake"], &["b"], 1, 0));
        let digest = combine_recent(&threads, false, 500);
        assert_eq!(digest["participants"], json!(["BlueLake", "RedFox"]));
        assert_eq!(digest["key_points"], json!(["a", "b"]));
        assert_eq!(digest["total_messages"], 3);
        assert_eq!(digest["total_threads"], 2);
        assert_eq!(digest["open_actions"], 1);
        assert!(digest.get("truncated").is_none());
        assert_eq!(combine_recent(&threads, true, 500)["truncated"], true);
    }

    #[test]
    fn floats_print_as_python_does() {
        assert_eq!(python_float(1.0), "1.0");
        assert_eq!(python_float(0.5), "0.5");
        assert_eq!(python_float(24.0), "24.0");
    }
}
