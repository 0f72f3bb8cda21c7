//! The heuristic thread summary (no LLM): participants, bullet-point key points, action items,
//! checkbox counts, `@mentions` and code references, extracted line by line from message bodies.
//!
//! The rules are deliberately simple and are reproduced exactly from the reference, because
//! clients compare summaries field by field. Where Python string functions are involved
//! (`splitlines`, `strip`, `upper`), the Rust equivalents are chosen to give the same lines.

use std::collections::{BTreeSet, HashMap};

/// How many key points and action items a summary keeps.
const MAX_ITEMS: usize = 10;

/// How many mentions and code references a summary keeps.
const MAX_RANKED: usize = 10;

/// The longest backtick span still treated as a code reference.
const MAX_CODE_REFERENCE_CHARS: usize = 120;

/// Words that make any line an action item, compared on the upper-cased line.
const ACTION_KEYWORDS: &[&str] = &["TODO", "ACTION", "FIXME", "NEXT", "BLOCKED"];

/// Checkbox prefixes stripped from key points; the `*` and `+` forms are not, as in the reference.
const KEY_POINT_CHECKBOXES: &[&str] = &["- [ ]", "- [x]", "- [X]"];

/// Prefixes of unchecked checkboxes, which count as open actions.
const OPEN_CHECKBOXES: &[&str] = &["- [ ]", "* [ ]", "+ [ ]"];

/// Prefixes of checked checkboxes, which count as done actions.
const DONE_CHECKBOXES: &[&str] = &["- [x]", "- [X]", "* [x]", "* [X]", "+ [x]", "+ [X]"];

/// Ordered-list markers that make a line a key point.
const NUMBERED_MARKERS: &[&str] = &["1.", "2.", "3.", "4.", "5."];

/// Characters trimmed from both ends of a mention after its leading `@`.
const MENTION_PUNCTUATION: &[char] = &['.', ',', ':', ';', '(', ')', '[', ']', '{', '}'];

/// One message of a thread as the summariser sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryInput<'a> {
    /// The sender's display name (`Name@slug` for cross-project senders).
    pub sender: &'a str,
    /// The Markdown body.
    pub body: &'a str,
}

/// How often a name was `@mentioned` in the thread.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mention {
    /// The mentioned name without the `@` and surrounding punctuation.
    pub name: String,
    /// Number of occurrences across all messages.
    pub count: usize,
}

/// The heuristic summary of one thread; its JSON form is the reference's `summary` object.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ThreadSummary {
    /// Distinct sender names, sorted; recipients are not participants.
    pub participants: Vec<String>,
    /// The first ten bullet or numbered lines, with bullet and checkbox markers removed.
    pub key_points: Vec<String>,
    /// The first ten checkbox lines or lines naming TODO/ACTION/FIXME/NEXT/BLOCKED, verbatim.
    pub action_items: Vec<String>,
    /// Number of messages summarised.
    pub total_messages: usize,
    /// Number of unchecked checkboxes (`- [ ]`, `* [ ]`, `+ [ ]`).
    pub open_actions: usize,
    /// Number of checked checkboxes (`- [x]`, `- [X]` and the `*`/`+` forms).
    pub done_actions: usize,
    /// The ten most mentioned names, by count descending then name.
    pub mentions: Vec<Mention>,
    /// Up to ten sorted backtick spans that look like paths or source files; omitted from JSON
    /// when empty, as in the reference.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub code_references: Vec<String>,
}

/// Everything gathered while reading lines, before ranking and truncation.
#[derive(Default)]
struct Collector {
    key_points: Vec<String>,
    action_items: Vec<String>,
    open_actions: usize,
    done_actions: usize,
    mentions: HashMap<String, usize>,
    code_references: BTreeSet<String>,
}

/// Summarises a thread whose messages are given oldest first.
pub fn summarize(messages: &[SummaryInput]) -> ThreadSummary {
    let mut collector = Collector::default();
    let participants: BTreeSet<&str> = messages.iter().map(|message| message.sender).collect();
    for message in messages {
        for line in python_lines(message.body) {
            let stripped = line.trim();
            if !stripped.is_empty() {
                collector.read_line(stripped);
            }
        }
    }
    let Collector {
        mut key_points,
        mut action_items,
        open_actions,
        done_actions,
        mentions,
        code_references,
    } = collector;
    key_points.truncate(MAX_ITEMS);
    action_items.truncate(MAX_ITEMS);
    ThreadSummary {
        participants: participants.into_iter().map(str::to_owned).collect(),
        key_points,
        action_items,
        total_messages: messages.len(),
        open_actions,
        done_actions,
        mentions: rank_mentions(mentions),
        code_references: code_references.into_iter().take(MAX_RANKED).collect(),
    }
}

impl Collector {
    /// Applies every rule to one non-blank, stripped line, in the reference's order.
    fn read_line(&mut self, line: &str) {
        self.record_mentions(line);
        self.record_code_references(line);
        if line.starts_with(['-', '*', '+']) || NUMBERED_MARKERS.iter().any(|m| line.starts_with(m))
        {
            self.key_points.push(key_point_text(line).to_owned());
        }
        if OPEN_CHECKBOXES.iter().any(|prefix| line.starts_with(prefix)) {
            self.open_actions += 1;
            self.action_items.push(line.to_owned());
        } else if DONE_CHECKBOXES.iter().any(|prefix| line.starts_with(prefix)) {
            self.done_actions += 1;
            self.action_items.push(line.to_owned());
        } else if has_action_keyword(line) {
            self.action_items.push(line.to_owned());
        }
    }

    /// Counts whitespace-separated tokens that start with `@` and still have a name once the
    /// `@` and surrounding punctuation are removed.
    fn record_mentions(&mut self, line: &str) {
        for token in line.split_whitespace() {
            let Some(rest) = token.strip_prefix('@') else {
                continue;
            };
            let name = rest.trim_matches(MENTION_PUNCTUATION);
            if !name.is_empty() {
                *self.mentions.entry(name.to_owned()).or_insert(0) += 1;
            }
        }
    }

    /// Collects backtick spans (paired left to right) that mention a path or a `.py`, `.ts` or
    /// `.md` file, after trimming, when they are 1 to 120 characters long.
    fn record_code_references(&mut self, line: &str) {
        let mut rest = line;
        while let Some((_, after_open)) = rest.split_once('`') {
            let Some((inside, after_close)) = after_open.split_once('`') else {
                break;
            };
            let snippet = inside.trim();
            let looks_like_code = ["/", ".py", ".ts", ".md"].iter().any(|m| snippet.contains(m));
            let length = snippet.chars().count();
            if looks_like_code && (1..=MAX_CODE_REFERENCE_CHARS).contains(&length) {
                self.code_references.insert(snippet.to_owned());
            }
            rest = after_close;
        }
    }
}

/// The key-point text of a bullet line: a leading `- [ ]`/`- [x]`/`- [X]` checkbox is dropped
/// (with the whitespace after it), then leading `-`, `+`, `*` and spaces are stripped. Numbered
/// lines keep their number, as in the reference.
fn key_point_text(line: &str) -> &str {
    let text = match KEY_POINT_CHECKBOXES.iter().find_map(|prefix| line.strip_prefix(prefix)) {
        Some(after_checkbox) => after_checkbox.trim(),
        None => line,
    };
    text.trim_start_matches(['-', '+', '*', ' '])
}

/// True when the upper-cased line contains an action keyword anywhere (so `NEXTGEN` counts too;
/// the reference does not look for word boundaries).
pub(crate) fn has_action_keyword(line: &str) -> bool {
    let upper = line.to_uppercase();
    ACTION_KEYWORDS.iter().any(|keyword| upper.contains(keyword))
}

/// Orders mentions by count descending, then name, and keeps the first ten.
fn rank_mentions(mentions: HashMap<String, usize>) -> Vec<Mention> {
    let mut ranked: Vec<Mention> =
        mentions.into_iter().map(|(name, count)| Mention { name, count }).collect();
    ranked.sort_by(|left, right| {
        right.count.cmp(&left.count).then_with(|| left.name.cmp(&right.name))
    });
    ranked.truncate(MAX_RANKED);
    ranked
}

/// Splits text into lines like Python's `str.splitlines()`, which also breaks on `\r`, `\v`,
/// `\f`, `\x1c`–`\x1e`, `\u{85}`, `\u{2028}` and `\u{2029}`, so bodies written with old Mac
/// line endings produce the same lines as in the reference.
fn python_lines(text: &str) -> Vec<&str> {
    let is_break = |c: char| {
        matches!(c, '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}' | '\u{85}')
            || matches!(c, '\u{2028}' | '\u{2029}')
    };
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if !is_break(c) {
            continue;
        }
        lines.push(&text[start..index]);
        start = index + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            start += 1;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    fn mentions(items: &[(&str, usize)]) -> Vec<Mention> {
        items
            .iter()
            .map(|(name, count)| Mention { name: (*name).to_owned(), count: *count })
            .collect()
    }

    /// A summary with the given participants and message count and nothing else.
    fn empty(participants: &[&str], total_messages: usize) -> ThreadSummary {
        ThreadSummary {
            participants: strings(participants),
            key_points: vec![],
            action_items: vec![],
            total_messages,
            open_actions: 0,
            done_actions: 0,
            mentions: vec![],
            code_references: vec![],
        }
    }

    #[test]
    fn reference_fixtures() {
        let simple = [
            SummaryInput { sender: "BlueLake", body: "Test" },
            SummaryInput { sender: "GreenCastle", body: "Reply" },
        ];
        let t1 = [
            SummaryInput {
                sender: "BlueLake",
                body: "- TODO: deploy to staging\n- discussed API changes\n",
            },
            SummaryInput {
                sender: "GreenCastle",
                body: "- ACK: will deploy\n- [ ] TODO: update docs\n`api/v2/users`\n@Carol\n",
            },
        ];
        let t1_expected = ThreadSummary {
            key_points: strings(&[
                "TODO: deploy to staging",
                "discussed API changes",
                "ACK: will deploy",
                "TODO: update docs",
            ]),
            action_items: strings(&["- TODO: deploy to staging", "- [ ] TODO: update docs"]),
            open_actions: 1,
            mentions: mentions(&[("Carol", 1)]),
            code_references: strings(&["api/v2/users"]),
            ..empty(&["BlueLake", "GreenCastle"], 2)
        };
        let cases = [
            ("simple", &simple[..], empty(&["BlueLake", "GreenCastle"], 2)),
            ("T-1", &t1[..], t1_expected),
            ("no messages", &[][..], empty(&[], 0)),
        ];
        for (label, messages, expected) in cases {
            check(label, summarize(messages), expected);
        }
    }

    /// (body, key_points, action_items, open_actions, done_actions)
    type LineCase = (&'static str, &'static [&'static str], &'static [&'static str], usize, usize);

    /// (body, mentions, code_references)
    type TokenCase = (&'static str, &'static [(&'static str, usize)], &'static [&'static str]);

    #[test]
    fn line_rules() {
        let cases: [LineCase; 12] = [
            ("* [ ] star open", &["[ ] star open"], &["* [ ] star open"], 1, 0),
            ("+ [x] plus done", &["[x] plus done"], &["+ [x] plus done"], 0, 1),
            ("- [X] shipped", &["shipped"], &["- [X] shipped"], 0, 1),
            ("- [x]no space", &["no space"], &["- [x]no space"], 0, 1),
            ("1. first\n3. third\n6. sixth", &["1. first", "3. third"], &[], 0, 0),
            ("  -- * + nested  ", &["nested"], &[], 0, 0),
            ("-\ttabbed", &["\ttabbed"], &[], 0, 0),
            ("plain fixme here", &[], &["plain fixme here"], 0, 0),
            ("NEXTGEN rollout", &[], &["NEXTGEN rollout"], 0, 0),
            ("- [ ] ", &[""], &["- [ ]"], 1, 0),
            ("a\rb TODO\r\nc\u{2028}- d", &["d"], &["b TODO"], 0, 0),
            ("\n\n   \n", &[], &[], 0, 0),
        ];
        for (body, key_points, action_items, open, done) in cases {
            let summary = summarize(&[SummaryInput { sender: "A", body }]);
            let actual = (
                summary.key_points,
                summary.action_items,
                summary.open_actions,
                summary.done_actions,
            );
            check(body, actual, (strings(key_points), strings(action_items), open, done));
        }
    }

    #[test]
    fn mention_and_code_reference_rules() {
        let cases: [TokenCase; 7] = [
            ("hi @Bob, and (@Alice) @Carol) @Bob.", &[("Bob", 2), ("Carol", 1)], &[]),
            ("@ @. @@x", &[("@x", 1)], &[]),
            ("mail@example.com", &[], &[]),
            (
                "see `src/app.py` and `notes.md` and `x.ts`",
                &[],
                &["notes.md", "src/app.py", "x.ts"],
            ),
            ("`plain` `a/b` `unclosed/path", &[], &["a/b"]),
            ("` spaced/path ` ``", &[], &["spaced/path"]),
            ("`a``b/c`", &[], &["b/c"]),
        ];
        for (body, expected_mentions, expected_refs) in cases {
            let summary = summarize(&[SummaryInput { sender: "A", body }]);
            check(body, summary.mentions, mentions(expected_mentions));
            check(body, summary.code_references, strings(expected_refs));
        }
    }

    #[test]
    fn limits_and_ordering() {
        let many_lines: String =
            (0..12).map(|i| format!("- TODO {i:02} @n{i:02} `f/{i:02}`\n")).collect();
        let repeated = "@zed @amy @amy @bob @bob";
        let messages = [
            SummaryInput { sender: "Zed", body: &many_lines },
            SummaryInput { sender: "Amy", body: repeated },
            SummaryInput { sender: "Zed", body: "" },
        ];
        let summary = summarize(&messages);
        let first_ten = |prefix: &str| {
            (0..10).map(|i| format!("{prefix}TODO {i:02} @n{i:02} `f/{i:02}`")).collect::<Vec<_>>()
        };
        check("participants", summary.participants, strings(&["Amy", "Zed"]));
        check("total", summary.total_messages, 3);
        check("key points", summary.key_points, first_ten(""));
        check("action items", summary.action_items, first_ten("- "));
        check(
            "mentions",
            summary.mentions[..4].to_vec(),
            mentions(&[("amy", 2), ("bob", 2), ("n00", 1), ("n01", 1)]),
        );
        check("mention cap", summary.mentions.len(), 10);
        let refs: Vec<String> = (0..10).map(|i| format!("f/{i:02}")).collect();
        check("code references", summary.code_references, refs);
    }

    #[test]
    fn json_shape_omits_empty_code_references() {
        let cases = [("Test", false), ("see `a/b`", true)];
        for (body, has_refs) in cases {
            let json = serde_json::to_value(summarize(&[SummaryInput { sender: "A", body }]))
                .unwrap_or_default();
            check(body, json.get("code_references").is_some(), has_refs);
            check(body, json.get("open_actions").and_then(|v| v.as_u64()), Some(0));
        }
    }
}
