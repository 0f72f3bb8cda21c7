//! Formats of thread ids and topics.
//!
//! Thread ids end up in archive file names and in URLs, so they are limited to a portable ASCII
//! alphabet. The checks are written by hand because they are tiny and keep core free of a regex
//! engine.

/// The longest thread id the archive layout accepts.
const MAX_THREAD_ID_LEN: usize = 128;

/// The longest topic tag.
const MAX_TOPIC_LEN: usize = 64;

/// Tells whether `s` matches `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`.
///
/// Surrounding whitespace makes the id invalid; callers trim first (the reference trims and
/// treats a blank id as "no thread").
pub fn is_valid_thread_id(s: &str) -> bool {
    let bytes = s.as_bytes();
    match bytes.split_first() {
        Some((first, rest)) => {
            first.is_ascii_alphanumeric()
                && bytes.len() <= MAX_THREAD_ID_LEN
                && rest
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        }
        None => false,
    }
}

/// Tells whether `s` matches `^[A-Za-z0-9_-]{1,64}$`, the format of message topic tags.
pub fn is_valid_topic(s: &str) -> bool {
    (1..=MAX_TOPIC_LEN).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check(input: &str, actual: bool, expected: bool) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    #[test]
    fn thread_ids() {
        let longest = format!("T{}", "x".repeat(127));
        let too_long = format!("T{}", "x".repeat(128));
        let cases = [
            ("T-1", true),
            ("2", true),
            ("br-123.v2_final", true),
            ("a", true),
            (longest.as_str(), true),
            (too_long.as_str(), false),
            ("", false),
            ("-T", false),
            (".hidden", false),
            ("_x", false),
            ("a b", false),
            ("a/b", false),
            (" T-1", false),
            ("T-1\n", false),
            ("é", false),
            ("aé", false),
        ];
        for (input, expected) in cases {
            check(input, is_valid_thread_id(input), expected);
        }
    }

    #[test]
    fn topics() {
        let longest = "t".repeat(64);
        let too_long = "t".repeat(65);
        let cases = [
            ("release", true),
            ("_private", true),
            ("-dash", true),
            ("build-42_x", true),
            (longest.as_str(), true),
            (too_long.as_str(), false),
            ("", false),
            ("a.b", false),
            ("a b", false),
            ("ü", false),
        ];
        for (input, expected) in cases {
            check(input, is_valid_topic(input), expected);
        }
    }
}
