//! Shell-style name patterns as Python's `fnmatch.fnmatchcase` reads them: `*` (any run),
//! `?` (one character), `[abc]` / `[a-z]` / `[!abc]` (one character of, or not of, a set).
//! Used for the reference's `RETENTION_IGNORE_PROJECT_PATTERNS`.

/// Whether `name` matches `pattern` (case-sensitive, the whole name).
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    matches_from(&name, &pattern)
}

fn matches_from(name: &[char], pattern: &[char]) -> bool {
    let Some((&first, rest)) = pattern.split_first() else { return name.is_empty() };
    match first {
        // Try every split; patterns are short, so the backtracking stays cheap.
        '*' => (0..=name.len()).any(|skip| matches_from(&name[skip..], rest)),
        '?' => !name.is_empty() && matches_from(&name[1..], rest),
        '[' => match (name.first(), class_end(rest)) {
            (Some(&c), Some(end)) => {
                in_class(c, &rest[..end]) && matches_from(&name[1..], &rest[end + 1..])
            }
            // An unclosed `[` is a literal, as in Python.
            (Some(&c), None) => c == '[' && matches_from(&name[1..], rest),
            (None, _) => false,
        },
        literal => name.first() == Some(&literal) && matches_from(&name[1..], rest),
    }
}

/// Index in `rest` (after `[`) of the closing `]`; a `]` first in the set is literal.
fn class_end(rest: &[char]) -> Option<usize> {
    let start = match rest.first() {
        Some('!') if rest.get(1) == Some(&']') => 2,
        Some('!') => 1,
        Some(']') => 1,
        _ => 0,
    };
    rest.iter().skip(start).position(|c| *c == ']').map(|i| i + start)
}

fn in_class(c: char, class: &[char]) -> bool {
    let (negated, class) = match class.split_first() {
        Some(('!', rest)) => (true, rest),
        _ => (false, class),
    };
    let mut found = false;
    let mut i = 0;
    while i < class.len() {
        if i + 2 < class.len() && class[i + 1] == '-' {
            found |= class[i] <= c && c <= class[i + 2];
            i += 3;
        } else {
            found |= class[i] == c;
            i += 1;
        }
    }
    found != negated
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, pattern: &str, expected: bool) {
        assert_eq!(fnmatch(name, pattern), expected, "{name:?} vs {pattern:?}");
    }

    #[test]
    fn python_fnmatchcase_examples() {
        check("demo", "demo", true);
        check("demo2", "demo", false);
        check("testproj-x", "test*", true);
        check("/abs/test", "test*", false);
        check("backendproj", "backendproj*", true);
        check("abc", "a?c", true);
        check("ac", "a?c", false);
        check("a1", "a[0-9]", true);
        check("ab", "a[!b]", false);
        check("ac", "a[!b]", true);
        check("a]", "a[]]", true);
        check("a[", "a[", true);
        check("Demo", "demo", false);
        check("", "*", true);
    }
}
