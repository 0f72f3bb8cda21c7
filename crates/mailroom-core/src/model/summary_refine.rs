//! LLM refinement of heuristic thread summaries (docs/compat/tools.md §7.5): the prompts sent and
//! the rules that merge the model's JSON into the heuristic result.
//!
//! The merge is deliberately forgiving: a field is replaced only when the model gave a usable,
//! non-empty ("truthy", as the reference's Python tests it) value of the right type; anything
//! else keeps the heuristic value. So a half-broken reply degrades to the heuristic summary
//! field by field instead of failing the call.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use super::summary::{Mention, ThreadSummary, has_action_keyword};

/// Messages of a thread shown to the model (single-thread mode).
pub const MAX_EXCERPTS: usize = 15;
/// Characters of each message body shown to the model.
pub const MAX_EXCERPT_BODY_CHARS: usize = 800;
/// Threads shown to the model in multi-thread mode.
pub const MAX_DIGEST_THREADS: usize = 8;
/// Key points and actions shown per thread in multi-thread mode.
const MAX_DIGEST_ITEMS: usize = 6;
/// Key points kept after merging.
const MAX_KEY_POINTS: usize = 10;

const SINGLE_SYSTEM_PROMPT: &str = "You are a senior engineer summarising a message thread \
     between coding agents. Reply with one JSON object with the keys participants (string[]), \
     key_points (string[]), action_items (string[]), mentions (array of {name, count}), \
     code_references (string[]), total_messages, open_actions and done_actions (integers).";

const MULTI_SYSTEM_PROMPT: &str = "You are a senior engineer producing a crisp digest across \
     threads. Reply with one JSON object: {\"threads\": [{\"thread_id\": string, \
     \"key_points\": string[], \"actions\": string[]}], \"aggregate\": {\"top_mentions\": \
     string[], \"key_points\": string[], \"action_items\": string[]}}.";

/// One message as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadExcerpt {
    /// Sender display name (`Name@slug` for cross-project senders).
    pub sender: String,
    pub subject: String,
    /// The Markdown body; cut to [`MAX_EXCERPT_BODY_CHARS`] when the prompt is built.
    pub body: String,
}

/// An aggregate mention: the heuristic's `{name, count}`, or a bare name as models give them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TopMention {
    Counted(Mention),
    Name(String),
}

/// What the model's digest says about the aggregate; `None` keeps the heuristic field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AggregateRevision {
    pub top_mentions: Option<Vec<TopMention>>,
    pub key_points: Option<Vec<String>>,
    pub action_items: Option<Vec<String>>,
}

/// The system and user prompts for one thread, from its first [`MAX_EXCERPTS`] messages.
pub fn single_thread_prompt(excerpts: &[ThreadExcerpt]) -> (&'static str, String) {
    let mut user = String::from("Summarize this thread:\n");
    for excerpt in excerpts.iter().take(MAX_EXCERPTS) {
        let body: String = excerpt.body.chars().take(MAX_EXCERPT_BODY_CHARS).collect();
        let _ = write!(user, "\n- {}: {}\n{}\n", excerpt.sender, excerpt.subject, body);
    }
    (SINGLE_SYSTEM_PROMPT, user)
}

/// The system and user prompts for several threads, from their heuristic summaries.
pub fn multi_thread_prompt(threads: &[(&str, &ThreadSummary)]) -> (&'static str, String) {
    let mut user = String::from("Digest these threads:\n");
    for (thread_id, summary) in threads.iter().take(MAX_DIGEST_THREADS) {
        let _ = write!(user, "\n# Thread {thread_id}\n## Key Points\n");
        for point in summary.key_points.iter().take(MAX_DIGEST_ITEMS) {
            let _ = writeln!(user, "- {point}");
        }
        user.push_str("## Actions\n");
        for action in summary.action_items.iter().take(MAX_DIGEST_ITEMS) {
            let _ = writeln!(user, "- {action}");
        }
    }
    (MULTI_SYSTEM_PROMPT, user)
}

/// Single-thread refinement: every usable field of `reply` replaces the heuristic one; then the
/// heuristic key points naming TODO/ACTION/FIXME/NEXT/BLOCKED that the model dropped are
/// appended, so concrete follow-ups survive a vaguer model summary (at most ten kept).
pub fn refine_single(heuristic: &ThreadSummary, reply: &Map<String, Value>) -> ThreadSummary {
    let mut refined = heuristic.clone();
    overlay(&mut refined, reply, "action_items");
    for point in heuristic.key_points.iter().filter(|p| has_action_keyword(p)) {
        if !refined.key_points.contains(point) {
            refined.key_points.push(point.clone());
        }
    }
    refined.key_points.truncate(MAX_KEY_POINTS);
    refined
}

/// Multi-thread refinement of one thread: the digest entry whose `thread_id` matches, overlaid
/// like a single-thread reply (its action list is called `actions`). No entry → unchanged.
pub fn refine_digest_thread(
    thread_id: &str,
    summary: &mut ThreadSummary,
    reply: &Map<String, Value>,
) {
    let entry = reply.get("threads").and_then(Value::as_array).and_then(|threads| {
        threads.iter().filter_map(Value::as_object).find(|t| match t.get("thread_id") {
            Some(Value::String(id)) => id == thread_id,
            Some(Value::Number(id)) => id.to_string() == thread_id,
            _ => false,
        })
    });
    if let Some(entry) = entry {
        overlay(summary, entry, "actions");
    }
}

/// The aggregate fields the digest replaces.
pub fn aggregate_revision(reply: &Map<String, Value>) -> AggregateRevision {
    let Some(aggregate) = reply.get("aggregate").and_then(Value::as_object) else {
        return AggregateRevision::default();
    };
    let top_mentions = aggregate.get("top_mentions").and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(|item| match item {
                Value::String(name) => Some(TopMention::Name(name.clone())),
                other => mention(other).map(TopMention::Counted),
            })
            .collect::<Vec<_>>()
    });
    AggregateRevision {
        top_mentions: top_mentions.filter(|m| !m.is_empty()),
        key_points: strings(aggregate.get("key_points")),
        action_items: strings(aggregate.get("action_items")),
    }
}

/// Replaces each field of `summary` for which `reply` has a usable value; the action list is
/// read from `actions_key`.
fn overlay(summary: &mut ThreadSummary, reply: &Map<String, Value>, actions_key: &str) {
    let list = |key: &str| strings(reply.get(key));
    let count = |key: &str| reply.get(key).and_then(Value::as_u64).filter(|n| *n > 0);
    if let Some(v) = list("participants") {
        summary.participants = v;
    }
    if let Some(v) = list("key_points") {
        summary.key_points = v;
    }
    if let Some(v) = list(actions_key) {
        summary.action_items = v;
    }
    if let Some(v) = list("code_references") {
        summary.code_references = v;
    }
    let mentions: Option<Vec<Mention>> = reply
        .get("mentions")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(mention).collect());
    if let Some(v) = mentions.filter(|m| !m.is_empty()) {
        summary.mentions = v;
    }
    if let Some(n) = count("total_messages") {
        summary.total_messages = n as usize;
    }
    if let Some(n) = count("open_actions") {
        summary.open_actions = n as usize;
    }
    if let Some(n) = count("done_actions") {
        summary.done_actions = n as usize;
    }
}

/// The string items of a JSON array, when there is at least one.
fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    let items: Vec<String> =
        value?.as_array()?.iter().filter_map(Value::as_str).map(str::to_string).collect();
    (!items.is_empty()).then_some(items)
}

/// A `{name, count}` object.
fn mention(value: &Value) -> Option<Mention> {
    let name = value.get("name")?.as_str()?.to_string();
    let count = value.get("count")?.as_u64()? as usize;
    Some(Mention { name, count })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::summary::{SummaryInput, summarize};

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    /// Thread T-1 of the conformance session.
    fn t1() -> ThreadSummary {
        summarize(&[
            SummaryInput {
                sender: "BlueLake",
                body: "- TODO: deploy to staging\n- discussed API changes\n",
            },
            SummaryInput {
                sender: "GreenCastle",
                body: "- ACK: will deploy\n- [ ] TODO: update docs\n`api/v2/users`\n@Carol\n",
            },
        ])
    }

    #[test]
    fn single_refinement_overlays_and_keeps_keyword_points() {
        let reply = object(json!({
            "key_points": ["API migration planned", "Staging first"],
            "action_items": ["Deploy to staging"],
            "mentions": [{"name": "Carol", "count": 2}],
            "open_actions": 3,
            "done_actions": 0,
        }));
        let refined = refine_single(&t1(), &reply);
        assert_eq!(
            refined.key_points,
            [
                "API migration planned",
                "Staging first",
                "TODO: deploy to staging",
                "TODO: update docs"
            ]
        );
        assert_eq!(refined.action_items, ["Deploy to staging"]);
        assert_eq!(refined.mentions, [Mention { name: "Carol".into(), count: 2 }]);
        assert_eq!(refined.open_actions, 3);
        assert_eq!(refined.done_actions, 0, "zero is not truthy: the heuristic value stays");
        assert_eq!(refined.participants, ["BlueLake", "GreenCastle"]);
        assert_eq!(refined.code_references, ["api/v2/users"]);
    }

    #[test]
    fn unusable_values_keep_the_heuristic() {
        let heuristic = t1();
        for reply in [
            json!({}),
            json!({"key_points": [], "action_items": "not a list", "total_messages": -4}),
            json!({"participants": [1, 2], "mentions": [{"name": "X"}], "open_actions": "2"}),
        ] {
            assert_eq!(refine_single(&heuristic, &object(reply.clone())), heuristic, "{reply}");
        }
    }

    #[test]
    fn key_points_are_capped_at_ten() {
        let many: Vec<String> = (0..12).map(|i| format!("point {i}")).collect();
        let refined = refine_single(&t1(), &object(json!({ "key_points": many })));
        assert_eq!(refined.key_points.len(), 10);
        assert_eq!(refined.key_points[9], "point 9");
    }

    #[test]
    fn digest_entries_match_by_thread_id() {
        let reply = object(json!({"threads": [
            {"thread_id": "T-2", "key_points": ["other"]},
            {"thread_id": "T-1", "key_points": ["schema final"], "actions": ["Update spec"],
             "open_actions": 2},
        ]}));
        let mut summary = t1();
        refine_digest_thread("T-1", &mut summary, &reply);
        assert_eq!(summary.key_points, ["schema final"], "no keyword points appended here");
        assert_eq!(summary.action_items, ["Update spec"]);
        assert_eq!(summary.open_actions, 2);
        let mut untouched = t1();
        refine_digest_thread("T-9", &mut untouched, &reply);
        assert_eq!(untouched, t1());
    }

    #[test]
    fn aggregate_accepts_names_or_counted_mentions() {
        let reply = object(json!({"aggregate": {
            "top_mentions": ["Alice", {"name": "Bob", "count": 3}, 7],
            "key_points": ["two workstreams"],
            "action_items": [],
        }}));
        let revision = aggregate_revision(&reply);
        assert_eq!(
            revision.top_mentions,
            Some(vec![
                TopMention::Name("Alice".into()),
                TopMention::Counted(Mention { name: "Bob".into(), count: 3 }),
            ])
        );
        assert_eq!(revision.key_points, Some(vec!["two workstreams".to_string()]));
        assert_eq!(revision.action_items, None);
        assert_eq!(
            aggregate_revision(&object(json!({"threads": []}))),
            AggregateRevision::default()
        );
    }

    #[test]
    fn prompts_bound_what_the_model_sees() {
        let excerpts: Vec<ThreadExcerpt> = (0..20)
            .map(|i| ThreadExcerpt {
                sender: format!("Agent{i}"),
                subject: format!("S{i}"),
                body: "é".repeat(1000),
            })
            .collect();
        let (system, user) = single_thread_prompt(&excerpts);
        assert!(system.contains("JSON"));
        assert!(user.contains("- Agent14: S14\n") && !user.contains("Agent15"));
        assert!(user.contains(&"é".repeat(800)) && !user.contains(&"é".repeat(801)));
        let summary = t1();
        let threads: Vec<(&str, &ThreadSummary)> = vec![("T-1", &summary); 9];
        let (system, user) = multi_thread_prompt(&threads);
        assert!(system.contains("digest across threads"));
        assert_eq!(user.matches("# Thread T-1").count(), 8);
        assert!(user.contains("- TODO: deploy to staging\n"));
    }
}
