//! The ranges every duration, time, key and pattern a caller passes must fall in
//! (docs/compat/tools.md §1.9), checked where a use-case receives it and refused with an error
//! naming the field, before anything is stored.
//!
//! A value outside these ranges once reached the database as a year the archive's format
//! cannot hold (`renew_file_reservations` with `extend_seconds: 1e12`) and stopped every later
//! read and archive commit that met it; nothing out of range is stored now.

use std::fmt::Display;

use super::slug::normalize_absolute_path;
use super::time::Timestamp;
use crate::error::{Error, Result};

/// The longest duration a TTL or an extension may ask for: ten years of 365 days.
pub const MAX_DURATION_SECONDS: i64 = 10 * 365 * 86_400;

/// The longest project key, in bytes: a slug never has more bytes than its key, and a slug
/// names a directory of the archive, which a file system holds only up to 255 bytes.
pub const MAX_PROJECT_KEY_BYTES: usize = 255;

/// The longest reservation pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// The longest search query, in characters, and the most words it may have. Every word is a
/// term of the full-text index (or two `LIKE` clauses of its fallback): a 100 KB query cost
/// seconds of CPU.
pub const MAX_QUERY_CHARS: usize = 1024;
pub const MAX_QUERY_TERMS: usize = 64;

/// How many names a refusal lists before it only counts the rest.
pub const MAX_NAMES_LISTED: usize = 20;

/// A duration in seconds: `min..=MAX_DURATION_SECONDS`.
pub fn seconds(field: &str, value: i64, min: i64) -> Result<i64> {
    if (min..=MAX_DURATION_SECONDS).contains(&value) {
        return Ok(value);
    }
    Err(out_of_range(field, value, min, MAX_DURATION_SECONDS, "seconds (ten years)"))
}

/// A duration in whole days: `min..=` ten years.
pub fn days(field: &str, value: i64, min: i64) -> Result<i64> {
    let max = MAX_DURATION_SECONDS / 86_400;
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(out_of_range(field, value, min, max, "days (ten years)"))
}

/// A duration in hours, possibly fractional: `0..=` ten years.
pub fn hours(field: &str, value: f64) -> Result<f64> {
    let max = (MAX_DURATION_SECONDS / 3600) as f64;
    if value.is_finite() && (0.0..=max).contains(&value) {
        return Ok(value);
    }
    Err(out_of_range(field, value, 0, max, "hours (ten years)"))
}

/// `from` moved by `seconds`, when the result is a time the database and the archive hold
/// (up to 9999-12-31); `field` names the argument that asked for the move.
pub fn later(field: &str, from: Timestamp, seconds: i64) -> Result<Timestamp> {
    from.checked_plus_seconds(seconds).ok_or_else(|| {
        Error::value_error(format!(
            "{field} of {seconds} seconds would move the time from {} past {}, the latest one \
             that can be stored",
            from.to_iso(),
            Timestamp::LAST.to_iso()
        ))
    })
}

fn out_of_range(
    field: &str,
    value: impl Display,
    min: i64,
    max: impl Display,
    unit: &str,
) -> Error {
    Error::value_error(format!("{field} must be between {min} and {max} {unit}; got {value}"))
}

/// A project key a caller asks to create a project for: at most [`MAX_PROJECT_KEY_BYTES`],
/// no control character, and not the file system's root (after lexical normalisation, so
/// `/tmp/../..` is the root too).
pub fn project_key(field: &str, key: &str) -> Result<()> {
    key_text(field, key)?;
    if normalize_absolute_path(key.trim()).is_some_and(|path| path.trim_matches('/').is_empty()) {
        return Err(Error::value_error(format!(
            "{field} '{key}' is the file system's root; pass the absolute path of your \
             project's working directory"
        )));
    }
    Ok(())
}

/// The length and character rules of a project key, which also bound what a lookup echoes
/// back in its errors.
pub fn key_text(field: &str, key: &str) -> Result<()> {
    short_text(field, key, MAX_PROJECT_KEY_BYTES)
}

/// The longest agent name a lookup compares or echoes, in bytes (agent names are far shorter).
pub const MAX_NAME_BYTES: usize = 128;

/// The length and character rules of a name looked up (an agent's), which bound what a
/// failed lookup compares and echoes.
pub fn name_text(field: &str, name: &str) -> Result<()> {
    short_text(field, name, MAX_NAME_BYTES)
}

/// At most `max` bytes, no control character.
fn short_text(field: &str, text: &str, max: usize) -> Result<()> {
    if text.len() > max {
        return Err(Error::value_error(format!(
            "{field} is {} bytes long; at most {max} are allowed",
            text.len()
        )));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(Error::value_error(format!(
            "{field} must not contain control characters (found U+{:04X})",
            u32::from(c)
        )));
    }
    Ok(())
}

/// A reservation pattern: relative to the project (no leading `/` or `\`, no drive letter),
/// no `..` segment, no control character, at most [`MAX_PATTERN_BYTES`]. Virtual patterns
/// (`tool://…`) only get the length and character rules.
pub fn reservation_pattern(field: &str, pattern: &str) -> Result<()> {
    short_text(field, pattern, MAX_PATTERN_BYTES)?;
    if super::path_pattern::is_virtual(pattern) {
        return Ok(());
    }
    let trimmed = pattern.trim();
    let bytes = trimmed.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'/' | b'\\');
    if trimmed.starts_with(['/', '\\']) || drive {
        return Err(Error::value_error(format!(
            "{field} '{pattern}' is an absolute path; reservation patterns are relative to the \
             project's directory (e.g. 'src/app.py' or 'src/**')"
        )));
    }
    if trimmed.split(['/', '\\']).any(|segment| segment == "..") {
        return Err(Error::value_error(format!(
            "{field} '{pattern}' leaves the project's directory ('..'); reservation patterns \
             are relative to it (e.g. 'src/app.py' or 'src/**')"
        )));
    }
    Ok(())
}

/// A search query: at most [`MAX_QUERY_CHARS`] characters and [`MAX_QUERY_TERMS`] words.
pub fn search_query(field: &str, query: &str) -> Result<()> {
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(Error::value_error(format!(
            "{field} is {chars} characters long; at most {MAX_QUERY_CHARS} are allowed"
        )));
    }
    let terms = query.split_whitespace().count();
    if terms > MAX_QUERY_TERMS {
        return Err(Error::value_error(format!(
            "{field} has {terms} words; at most {MAX_QUERY_TERMS} are allowed"
        )));
    }
    Ok(())
}

/// Names for a refusal, joined with `, `: at most [`MAX_NAMES_LISTED`] of them, then
/// `and N more`, each clipped ([`clip`]), so that a refusal of 10,000 names stays short.
pub fn listed_names<S: AsRef<str>>(names: &[S]) -> String {
    let shown = names.len().min(MAX_NAMES_LISTED);
    let mut text =
        names[..shown].iter().map(|n| clip(n.as_ref()).into_owned()).collect::<Vec<_>>().join(", ");
    if names.len() > shown {
        text.push_str(&format!(" and {} more", names.len() - shown));
    }
    text
}

/// A caller's text as an error quotes it: at most 80 characters, then `…`.
pub fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]).into(),
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(label: &str, actual: Result<()>, refused_with: Option<&str>) {
        match (actual, refused_with) {
            (Ok(()), None) => {}
            (Err(e), Some(part)) => {
                assert!(e.message.contains(part), "{label}: {:?} lacks {part:?}", e.message)
            }
            (actual, expected) => panic!("{label}: got {actual:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn durations() {
        let cases = [
            ("negative TTL", seconds("ttl_seconds", -5, 1).map(drop), Some("ttl_seconds")),
            ("zero TTL", seconds("ttl_seconds", 0, 1).map(drop), Some("got 0")),
            ("an hour", seconds("ttl_seconds", 3600, 1).map(drop), None),
            ("ten years", seconds("ttl_seconds", MAX_DURATION_SECONDS, 1).map(drop), None),
            ("1e12", seconds("extend_seconds", 1_000_000_000_000, 60).map(drop), Some("ten")),
            ("huge days", days("max_age_days", i64::MAX, 1).map(drop), Some("max_age_days")),
            ("a month", days("max_age_days", 30, 1).map(drop), None),
            ("NaN hours", hours("since_hours", f64::NAN).map(drop), Some("since_hours")),
            ("infinite hours", hours("since_hours", f64::INFINITY).map(drop), Some("got inf")),
            ("negative hours", hours("since_hours", -1.0).map(drop), Some("since_hours")),
            ("a day", hours("since_hours", 24.0).map(drop), None),
        ];
        for (label, actual, refused_with) in cases {
            check(label, actual, refused_with);
        }
        let near_end = Timestamp::LAST.plus_seconds(-10);
        check("past 9999", later("extend_seconds", near_end, 60).map(drop), Some("9999-12-31"));
        check("within", later("extend_seconds", near_end, 5).map(drop), None);
    }

    #[test]
    fn project_keys() {
        let long = format!("/{}", "a".repeat(300));
        let cases = [
            ("/", Some("root")),
            ("//", Some("root")),
            ("/tmp/../..", Some("root")),
            ("/tmp/a\0b", Some("U+0000")),
            ("/tmp/a\nb", Some("U+000A")),
            (long.as_str(), Some("at most 255")),
            ("/work/backend", None),
            ("/work/../backend", None),
            ("relative-name", None),
        ];
        for (key, refused_with) in cases {
            check(key, project_key("human_key", key), refused_with);
        }
    }

    #[test]
    fn reservation_patterns() {
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        let cases = [
            ("../../etc/passwd", Some("'..'")),
            ("src/../../x", Some("'..'")),
            ("src\\..\\x", Some("'..'")),
            ("/etc/passwd", Some("absolute")),
            ("\\\\server\\share", Some("absolute")),
            ("C:/Windows", Some("absolute")),
            ("src/a\0b", Some("control")),
            (long.as_str(), Some("at most 1024")),
            ("src/**", None),
            ("src/..hidden/x", None),
            ("./src/app.py", None),
            ("tool://deploy", None),
        ];
        for (pattern, refused_with) in cases {
            check(pattern, reservation_pattern("paths[0]", pattern), refused_with);
        }
    }

    #[test]
    fn queries_and_lists() {
        let words = vec!["w"; MAX_QUERY_TERMS + 1].join(" ");
        check("long", search_query("query", &"x".repeat(2000)), Some("2000 characters"));
        check("wordy", search_query("query", &words), Some("65 words"));
        check("normal", search_query("query", "migration plan"), None);
        let names: Vec<String> = (0..10_000).map(|i| format!("N{i}")).collect();
        let listed = listed_names(&names);
        assert!(listed.starts_with("N0, N1, "), "{listed}");
        assert!(listed.ends_with("N19 and 9980 more"), "{listed}");
        assert_eq!(listed_names(&["a", "b"]), "a, b");
        assert_eq!(clip(&"é".repeat(100)).chars().count(), 81);
    }
}
