//! Turning a user's search text into an SQLite FTS5 `MATCH` expression, and the plain `LIKE`
//! fallback used when FTS5 rejects the expression.
//!
//! Agents type free text such as `POL-358` or `*migration`, which FTS5 would reject or
//! misread, so the query is repaired just enough to be accepted while keeping real FTS5 syntax
//! (phrases, `mig*` prefixes, `AND`/`OR`/`NOT`, column filters) working.

/// Queries that can never match anything useful; searching for them returns nothing.
///
/// `AND`, `OR` and `NOT` are only FTS5 operators in upper case, so the lower-case words are
/// ordinary search terms and are not listed here.
const UNSEARCHABLE: &[&str] =
    &["*", "**", "***", ".", "..", "...", "?", "??", "???", "AND", "OR", "NOT"];

/// FTS5 keywords that make no sense as `LIKE` terms.
const OPERATOR_WORDS: &[&str] = &["AND", "OR", "NOT", "NEAR"];

/// The most terms the `LIKE` fallback uses; each one adds two `LIKE` clauses.
const MAX_LIKE_TERMS: usize = 5;

/// The longest `LIKE` term (one leading character plus up to 63 more).
const MAX_LIKE_TERM_CHARS: usize = 64;

/// Prepares `raw` for FTS5, or returns `None` when it cannot match anything.
///
/// Steps, in order: trim; reject the unsearchable set (empty, `*`…`***`, `.`…`...`, `?`…`???`,
/// bare `AND`/`OR`/`NOT`); strip leading `*` (FTS5 has no suffix search); strip trailing ` *`;
/// collapse runs of spaces; wrap unquoted hyphenated tokens such as `POL-358` in double quotes,
/// because FTS5 would otherwise parse the hyphen as syntax. A query that is one quoted string is
/// left alone. A token only counts as hyphenated when it stands alone as a word, as Python's
/// `\b` would require, so `foo_bar-baz` is not touched.
pub fn sanitize_fts_query(raw: &str) -> Option<String> {
    let mut query = raw.trim();
    if is_unsearchable(query) {
        return None;
    }
    query = query.trim_start_matches('*').trim_start();
    while let Some(rest) = query.strip_suffix(" *") {
        query = rest.trim_end();
    }
    let collapsed = collapse_spaces(query);
    if is_unsearchable(&collapsed) {
        return None;
    }
    if is_single_quoted_string(&collapsed) {
        return Some(collapsed);
    }
    Some(quote_hyphenated_tokens(&collapsed))
}

fn is_unsearchable(query: &str) -> bool {
    query.is_empty() || UNSEARCHABLE.contains(&query)
}

/// Replaces each run of spaces by a single space.
fn collapse_spaces(query: &str) -> String {
    let mut collapsed = String::with_capacity(query.len());
    for c in query.chars() {
        if !(c == ' ' && collapsed.ends_with(' ')) {
            collapsed.push(c);
        }
    }
    collapsed
}

/// True for `"..."` with no other double quote inside: one phrase that needs no repair.
fn is_single_quoted_string(query: &str) -> bool {
    query.len() >= 2
        && query.starts_with('"')
        && query.ends_with('"')
        && !query[1..query.len() - 1].contains('"')
}

/// A character Python's `\b` treats as part of a word (Unicode alphanumerics and `_`).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Wraps every `[A-Za-z0-9]+(-[A-Za-z0-9]+)+` word found outside double quotes in quotes.
fn quote_hyphenated_tokens(query: &str) -> String {
    let mut output = String::with_capacity(query.len() + 8);
    let mut in_quotes = false;
    let mut previous: Option<char> = None;
    let mut index = 0;
    while let Some(c) = query[index..].chars().next() {
        let at_word_start = !previous.is_some_and(is_word_char);
        if !in_quotes
            && at_word_start
            && c.is_ascii_alphanumeric()
            && let Some(length) = hyphenated_token_len(&query[index..])
        {
            let token = &query[index..index + length];
            output.push('"');
            output.push_str(token);
            output.push('"');
            previous = token.chars().next_back();
            index += length;
            continue;
        }
        if c == '"' {
            in_quotes = !in_quotes;
        }
        output.push(c);
        previous = Some(c);
        index += c.len_utf8();
    }
    output
}

/// Length of the longest hyphenated token at the start of `text` that ends at a word boundary.
///
/// This reproduces the backtracking of `[A-Za-z0-9]+(-[A-Za-z0-9]+)+\b`: the candidate ends
/// are the ends of each alphanumeric group after the first, and the longest one not followed by
/// a word character wins.
fn hyphenated_token_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let alnum_run =
        |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    let mut end = alnum_run(0);
    let mut best = None;
    while end + 1 < bytes.len() && bytes[end] == b'-' {
        let group = alnum_run(end + 1);
        if group == 0 {
            break;
        }
        end += 1 + group;
        if !text[end..].chars().next().is_some_and(is_word_char) {
            best = Some(end);
        }
    }
    best
}

/// Extracts the terms the `LIKE` fallback searches for when FTS5 rejects a query.
///
/// Terms are the successive matches of `[A-Za-z0-9][A-Za-z0-9._/-]{0,63}`, at least two
/// characters long, excluding `AND`/`OR`/`NOT`/`NEAR` in any case; duplicates are dropped and at
/// most five are kept so the fallback query stays cheap. An empty result means "no results".
pub fn like_fallback_terms(raw: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut rest = raw;
    while terms.len() < MAX_LIKE_TERMS {
        let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric()) else {
            break;
        };
        let candidate = &rest[start..];
        let length = 1 + candidate.as_bytes()[1..]
            .iter()
            .take(MAX_LIKE_TERM_CHARS - 1)
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'))
            .count();
        let term = &candidate[..length];
        rest = &candidate[length..];
        let is_operator = OPERATOR_WORDS.iter().any(|word| word.eq_ignore_ascii_case(term));
        if term.len() >= 2 && !is_operator && !terms.iter().any(|seen| seen == term) {
            terms.push(term.to_owned());
        }
    }
    terms
}

/// Escapes `term` for `LIKE ... ESCAPE '!'`, so `%`, `_` and `!` match themselves.
pub fn escape_like(term: &str) -> String {
    let mut escaped = String::with_capacity(term.len() + 4);
    for c in term.chars() {
        if matches!(c, '!' | '%' | '_') {
            escaped.push('!');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    #[test]
    fn fts_sanitation() {
        let cases = [
            ("", None),
            ("   ", None),
            ("*", None),
            ("**", None),
            ("***", None),
            ("****", None),
            (".", None),
            ("...", None),
            ("??", None),
            ("???", None),
            ("AND", None),
            (" OR ", None),
            ("NOT", None),
            ("and", Some("and")),
            ("????", Some("????")),
            ("migration", Some("migration")),
            ("  migration plan  ", Some("migration plan")),
            ("*foo", Some("foo")),
            ("**foo bar", Some("foo bar")),
            ("* foo", Some("foo")),
            ("foo *", Some("foo")),
            ("foo * *", Some("foo")),
            ("mig*", Some("mig*")),
            ("a    b  c", Some("a b c")),
            ("POL-358", Some("\"POL-358\"")),
            ("bd-42 status", Some("\"bd-42\" status")),
            ("fix a-b-c now", Some("fix \"a-b-c\" now")),
            ("\"foo-bar baz\"", Some("\"foo-bar baz\"")),
            ("\"exact phrase\" bd-42", Some("\"exact phrase\" \"bd-42\"")),
            ("\"a-b\" c-d \"e-f\"", Some("\"a-b\" \"c-d\" \"e-f\"")),
            ("(bd-42 OR bd-43)", Some("(\"bd-42\" OR \"bd-43\")")),
            ("subject:POL-358", Some("subject:\"POL-358\"")),
            ("POL-358*", Some("\"POL-358\"*")),
            ("foo_bar-baz", Some("foo_bar-baz")),
            ("a-b-c_d", Some("\"a-b\"-c_d")),
            ("trailing- dash", Some("trailing- dash")),
            ("-leading", Some("-leading")),
            ("x-ü", Some("x-ü")),
            ("ü-x-y", Some("ü-\"x-y\"")),
        ];
        for (input, expected) in cases {
            check(input, sanitize_fts_query(input).as_deref(), expected);
        }
    }

    #[test]
    fn like_terms() {
        let long = format!("a{}", "b".repeat(70));
        let cases: [(&str, Vec<String>); 9] = [
            ("POL-358 status", vec!["POL-358".into(), "status".into()]),
            ("a b cd", vec!["cd".into()]),
            ("foo AND bar or near NOT baz", vec!["foo".into(), "bar".into(), "baz".into()]),
            ("x x x dup dup", vec!["dup".into()]),
            (
                "one two three four five six",
                ["one", "two", "three", "four", "five"].map(String::from).to_vec(),
            ),
            ("\"src/api/users.py\"", vec!["src/api/users.py".into()]),
            ("_under *star (paren)", vec!["under".into(), "star".into(), "paren".into()]),
            ("***", vec![]),
            (long.as_str(), vec![long[..64].to_owned(), long[64..].to_owned()]),
        ];
        for (input, expected) in cases {
            check(input, like_fallback_terms(input), expected);
        }
    }

    #[test]
    fn like_escaping() {
        let cases = [
            ("plain", "plain"),
            ("100%", "100!%"),
            ("snake_case", "snake!_case"),
            ("wow!", "wow!!"),
            ("!%_", "!!!%!_"),
            ("", ""),
        ];
        for (input, expected) in cases {
            check(input, escape_like(input).as_str(), expected);
        }
    }
}
