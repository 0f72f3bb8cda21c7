//! Project identity from a path: the slug, the stable project uid, lexical path normalisation and
//! the "does this identifier look like a path" test used when resolving `project_key`.

/// Turns a human key (usually an absolute path) into the project's slug.
///
/// Lower-cases, replaces every run of characters outside `[a-z0-9]` by one `-` and trims `-` at
/// both ends; an empty result becomes `project`. `/abs/path/backend` gives `abs-path-backend`.
/// Lower-casing is Unicode-aware like Python's `str.lower()`, so `İ` becomes `i` plus a
/// combining dot (and thus `i-`), exactly as in the reference.
pub fn slugify(value: &str) -> String {
    let mut slug = String::with_capacity(value.len());
    let mut pending_dash = false;
    for c in value.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_dash && !slug.is_empty() {
                slug.push('-');
            }
            pending_dash = false;
            slug.push(c);
        } else {
            pending_dash = true;
        }
    }
    if slug.is_empty() { "project".to_owned() } else { slug }
}

/// The project uid used when no Git identity is available: the first 20 hex digits of the SHA-1
/// of the human key's UTF-8 bytes. It is stable across machines, which is why it is a hash.
pub fn project_uid_for_path(human_key: &str) -> String {
    let digest = super::sha1::sha1_hex(human_key.as_bytes());
    digest[..20].to_owned()
}

/// Normalises an absolute POSIX path lexically, like Python's `os.path.normpath`.
///
/// Collapses repeated `/` and `.` components, resolves `..` against the preceding component (never
/// above `/`) and drops a trailing `/`. Symlinks are deliberately not resolved: the reference
/// keys projects by the spelling it was given. Like `normpath`, a leading `//` (exactly two
/// slashes) is kept because POSIX leaves its meaning to the implementation; three or more
/// leading slashes collapse to one. Returns `None` for relative paths.
pub fn normalize_absolute_path(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let root = if path.starts_with("//") && !path.starts_with("///") { "//" } else { "/" };
    let mut parts: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    Some(format!("{root}{}", parts.join("/")))
}

/// Tells whether a `project_key` should be treated as a path rather than a slug.
///
/// True when it is absolute, starts with `~` or `.` (which covers `..`), or contains `/` or `\`.
/// Anything else, such as `backend` or `abs-path-backend`, is looked up as a slug.
pub fn looks_like_path(s: &str) -> bool {
    s.starts_with(['/', '~', '.']) || s.contains(['/', '\\'])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    #[test]
    fn slugs() {
        let cases = [
            ("/abs/path/backend", "abs-path-backend"),
            ("/a/b-c", "a-b-c"),
            ("/a-b/c", "a-b-c"),
            ("  My Project!! ", "my-project"),
            ("Already-Slug", "already-slug"),
            ("///", "project"),
            ("", "project"),
            ("_x__y_", "x-y"),
            ("café/ünï", "caf-n"),
            ("İstanbul", "i-stanbul"),
            ("/Users/me/Code/API_v2", "users-me-code-api-v2"),
        ];
        for (input, expected) in cases {
            check(input, slugify(input).as_str(), expected);
        }
    }

    #[test]
    fn project_uids() {
        let cases = [("/abs/path/backend", "6b94bcb905177dba1f42"), ("", "da39a3ee5e6b4b0d3255")];
        for (input, expected) in cases {
            check(input, project_uid_for_path(input).as_str(), expected);
        }
    }

    #[test]
    fn path_normalisation() {
        let cases = [
            ("/abs/path/backend", Some("/abs/path/backend")),
            ("/abs/path/backend/", Some("/abs/path/backend")),
            ("/abs//path/./backend", Some("/abs/path/backend")),
            ("/abs/path/../backend", Some("/abs/backend")),
            ("/../..", Some("/")),
            ("/a/../../b", Some("/b")),
            ("/", Some("/")),
            ("/.", Some("/")),
            ("//a//b/", Some("//a/b")),
            ("///a/b", Some("/a/b")),
            ("/a/.../b", Some("/a/.../b")),
            ("relative/path", None),
            ("./x", None),
            ("~/x", None),
            ("", None),
        ];
        for (input, expected) in cases {
            check(input, normalize_absolute_path(input).as_deref(), expected);
        }
    }

    #[test]
    fn path_detection() {
        let cases = [
            ("/abs/path", true),
            ("~/code", true),
            ("~", true),
            ("./here", true),
            ("..", true),
            (".hidden", true),
            ("a/b", true),
            ("C:\\code\\x", true),
            ("backend", false),
            ("abs-path-backend", false),
            ("", false),
        ];
        for (input, expected) in cases {
            check(input, looks_like_path(input), expected);
        }
    }
}
