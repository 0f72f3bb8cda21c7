//! File-reservation patterns (docs/compat/tools.md §6.1–6.3): normalisation, virtual namespaces,
//! Git wildmatch as Python's `pathspec` implements it ("gitwildmatch"), a union set for
//! pre-filtering, and the conflict predicate.
//!
//! The reference compiles each pattern to a regular expression. We compile the same
//! expression into a tiny instruction program and run it as a Pike VM (a set of threads that
//! advance together one character at a time), so a match costs O(path × pattern) whatever the
//! pattern and needs no regex crate. The common shapes (a literal path, `dir/**`, `*.ext`,
//! `dir/*.ext`) are tested directly and other patterns first reject paths lacking a literal
//! the program requires; both shortcuts are property-tested against the VM. Compile a pattern
//! once ([`PathPattern::new`]) and match it against many paths ([`PathPattern::matches`]);
//! the Git pre-commit guard matches staged paths this way.
//!
//! The rules, as `pathspec` applies them to a pattern `p` (after surrounding whitespace is
//! stripped):
//! * `p` without a `/` other than a trailing one matches at any depth (`app.py` matches
//!   `src/app.py`); with a leading or middle `/` it is anchored at the root;
//! * `*` and `?` never match `/`; `**` as a whole segment matches any number of directories;
//!   `[...]` is a character class (`!` or `^` negates it);
//! * a trailing `/` matches a directory, i.e. everything beneath it;
//! * a pattern that does not end in `/` or `**` matches the path itself and everything
//!   beneath it (`src` matches `src/app.py`);
//! * an empty pattern, a comment (`#…`) or a lone `/` match nothing; a leading `!` negates
//!   (only meaningful inside a [`PatternSet`]); a leading `\` escapes a `!` or `#`.
//!
//! A pattern `pathspec` would reject (a dangling `\`) matches only the path spelled exactly
//! like it, which is the reference's own fallback when it has no pathspec.

mod compile;
mod vm;

use std::collections::HashMap;

use self::compile::{Program, Shape, compile};
use self::vm::run;

/// Prefixes of virtual namespaces: such patterns name tools, resources or services rather than
/// files, never overlap file patterns, and conflict only with the identical string.
pub const VIRTUAL_PREFIXES: [&str; 3] = ["tool://", "resource://", "service://"];

/// Whether a reservation pattern names a virtual resource (`tool://…`, `resource://…`,
/// `service://…`) rather than files.
pub fn is_virtual(pattern: &str) -> bool {
    let trimmed = pattern.trim();
    VIRTUAL_PREFIXES.iter().any(|prefix| trimmed.starts_with(prefix))
}

/// The form in which patterns and paths are compared: `\` becomes `/` and leading `/` are
/// stripped (reservations are project-relative). The stored pattern is kept verbatim.
pub fn normalize(pattern: &str) -> String {
    pattern.replace('\\', "/").trim_start_matches('/').to_string()
}

/// Whether a string contains a glob metacharacter (`*`, `?`, `[`).
pub fn has_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Advisory warnings for a requested pattern (info only, never an error): too broad,
/// absolute-looking, or a very short glob.
pub fn pattern_warnings(pattern: &str) -> Vec<String> {
    let trimmed = pattern.trim();
    let mut warnings = Vec::new();
    if matches!(trimmed, "*" | "**" | "**/*" | "**/**" | ".") {
        warnings.push(format!(
            "Pattern '{trimmed}' is too broad and would reserve the whole project; \
             reserve specific files or directories instead."
        ));
    } else if trimmed.starts_with('/') {
        warnings.push(format!(
            "Pattern '{trimmed}' looks absolute; patterns are relative to the project root \
             (the leading '/' is ignored when matching)."
        ));
    } else if trimmed.chars().count() <= 2 && trimmed.contains('*') {
        warnings.push(format!("Pattern '{trimmed}' is very short and may match too much."));
    }
    warnings
}

/// A compiled gitignore-style pattern (Python `pathspec` "gitwildmatch" semantics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    source: String,
    include: bool,
    program: Program,
}

impl PathPattern {
    /// Compiles `pattern` as `pathspec` would (see the module docs). Never fails: patterns
    /// `pathspec` rejects match only their own spelling.
    pub fn new(pattern: &str) -> Self {
        let source = pattern.to_string();
        let mut text = pattern.trim();
        if text.is_empty() || text.starts_with('#') || text == "/" {
            return Self { source, include: true, program: Program::Nothing };
        }
        let include = match text.strip_prefix('!') {
            Some(rest) => {
                text = rest;
                false
            }
            None => true,
        };
        if let Some(rest) = text.strip_prefix('\\').filter(|r| r.starts_with(['!', '#'])) {
            text = rest;
        }
        let program = match compile(text) {
            Some(compiled) => compiled,
            None => Program::Exact(text.to_string()),
        };
        Self { source, include, program }
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern is a negation (`!…`); such a pattern re-excludes paths in a set.
    pub fn is_negation(&self) -> bool {
        !self.include
    }

    /// The first directory every path the pattern matches starts with, when its literal
    /// prefix holds one whole (`src` for `src/*.py`; none for `*.py` or `src*/x`).
    fn first_dir(&self) -> Option<&str> {
        let literal = match &self.program {
            Program::Nothing => return None,
            Program::Exact(text) => text.as_str(),
            Program::Wild { prefix, .. } => prefix.as_str(),
        };
        literal.find('/').map(|slash| &literal[..slash])
    }

    /// Whether the pattern matches `path` (a project-relative path with `/` separators, or
    /// any string: reservation conflicts match patterns against other patterns' text).
    /// A negation pattern matches the same paths as its positive form.
    pub fn matches(&self, path: &str) -> bool {
        match &self.program {
            Program::Nothing => false,
            Program::Exact(text) => text == path,
            Program::Wild { insts, prefix, required, shape } => match shape {
                Shape::Path(literal) => match path.strip_prefix(literal.as_str()) {
                    Some("") => true,
                    Some(rest) => rest.starts_with('/') && !rest.contains('\n'),
                    None => false,
                },
                Shape::Under(literal) => {
                    path.strip_prefix(literal.as_str()).is_some_and(|rest| !rest.contains('\n'))
                }
                // `dir` is empty at any depth; skipping the empty comparison mattered.
                Shape::StarSuffix { suffix, any_depth: true, .. } => {
                    star_suffix(path, suffix, true)
                }
                Shape::StarSuffix { dir, suffix, any_depth: false } => path
                    .strip_prefix(dir.as_str())
                    .is_some_and(|rest| star_suffix(rest, suffix, false)),
                Shape::General => {
                    path.starts_with(prefix.as_str())
                        && path.contains(required.as_str())
                        && run(insts, path)
                }
            },
        }
    }

    /// [`PathPattern::matches`] by the VM alone, without the shortcuts (to test them).
    #[cfg(test)]
    fn matches_by_vm(&self, path: &str) -> bool {
        match &self.program {
            Program::Wild { insts, .. } => run(insts, path),
            _ => self.matches(path),
        }
    }

    /// Whether the pattern is tested without the VM (for tests).
    #[cfg(test)]
    fn has_shape(&self) -> bool {
        matches!(&self.program, Program::Wild { shape, .. } if *shape != Shape::General)
    }
}

/// [`Shape::StarSuffix`] on the path after `dir`: some occurrence of `suffix` is followed by
/// the end or by `/` and a newline-free rest, and is preceded by a slash-free name, itself
/// preceded (when `any_depth`) by nothing or by a non-empty newline-free directory part and
/// `/`. Only the ends of names can end such an occurrence, so only those are tried (a
/// substring search per path cost several times more).
fn star_suffix(rest: &str, suffix: &str, any_depth: bool) -> bool {
    let (bytes, wanted) = (rest.as_bytes(), suffix.as_bytes());
    // Never empty (see `shape_of`).
    let (Some(&first), Some(&last)) = (wanted.first(), wanted.last()) else {
        return false;
    };
    let ends = bytes
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'/')
        .map(|(i, _)| i)
        .chain(std::iter::once(bytes.len()));
    for end in ends {
        // Comparing the end bytes first spares most calls to `memcmp` (which the profile
        // showed costing more than the rest of the test).
        let ends_with_suffix = end >= wanted.len()
            && bytes[end - 1] == last
            && bytes[end - wanted.len()] == first
            && bytes[..end].ends_with(wanted);
        if ends_with_suffix {
            // A whole UTF-8 string matched, so `at` is a character boundary.
            let at = end - suffix.len();
            let before = &rest[..at];
            let before_ok = match before.rfind('/') {
                None => true,
                Some(slash) => any_depth && slash > 0 && !before[..slash].contains('\n'),
            };
            if before_ok && !rest[end..].contains('\n') {
                return true;
            }
        }
        if !any_depth {
            // The name after `dir` ends at the first `/`: later ends follow a `/`.
            return false;
        }
    }
    false
}

/// A union of patterns, as `pathspec.PathSpec`: a path matches when the last pattern that
/// matches it is not a negation.
///
/// Patterns whose literal prefix holds a whole first directory (`src/…`, `docs/a.md`) are
/// indexed by it, so a path tries only those of its own first directory and the others
/// (`*.py`, `**/x`): with hundreds of reservations most would be rejected anyway, but even a
/// rejection per pattern per path added up.
#[derive(Debug, Clone, Default)]
pub struct PatternSet {
    patterns: Vec<PathPattern>,
    has_negation: bool,
    /// Indices (ascending) of the patterns that can only match paths whose first directory
    /// is the key.
    by_first_dir: HashMap<String, Vec<usize>>,
    /// Indices (ascending) of the other patterns.
    anywhere: Vec<usize>,
}

impl PatternSet {
    /// Compiles every pattern.
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Self {
        let mut set = Self::default();
        for pattern in patterns {
            set.push(PathPattern::new(pattern));
        }
        set
    }

    /// Adds a compiled pattern at the end (it takes precedence over earlier ones).
    pub fn push(&mut self, pattern: PathPattern) {
        self.has_negation |= pattern.is_negation();
        let index = self.patterns.len();
        match pattern.first_dir() {
            Some(dir) => self.by_first_dir.entry(dir.to_string()).or_default().push(index),
            None if matches!(pattern.program, Program::Nothing) => {}
            None => self.anywhere.push(index),
        }
        self.patterns.push(pattern);
    }

    /// Whether the set has no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether the set matches `path`.
    pub fn matches(&self, path: &str) -> bool {
        let bucket: &[usize] = path
            .find('/')
            .and_then(|slash| self.by_first_dir.get(&path[..slash]))
            .map_or(&[], Vec::as_slice);
        let tries = |i: &usize| self.patterns[*i].matches(path);
        if !self.has_negation {
            return self.anywhere.iter().any(tries) || bucket.iter().any(tries);
        }
        // The last matching pattern decides: walk both ascending lists from the end, merged.
        let (mut a, mut b) = (self.anywhere.as_slice(), bucket);
        loop {
            let index = match (a.last(), b.last()) {
                (Some(&x), Some(&y)) if x > y => {
                    a = &a[..a.len() - 1];
                    x
                }
                (_, Some(&y)) => {
                    b = &b[..b.len() - 1];
                    y
                }
                (Some(&x), None) => {
                    a = &a[..a.len() - 1];
                    x
                }
                (None, None) => return false,
            };
            let pattern = &self.patterns[index];
            if pattern.matches(path) {
                return pattern.include;
            }
        }
    }
}

/// [`PatternSet::matches`] over patterns held elsewhere (e.g. shared compiled patterns), in
/// set order: the last pattern that matches decides.
pub fn union_matches<'a>(
    patterns: impl DoubleEndedIterator<Item = &'a PathPattern>,
    path: &str,
) -> bool {
    patterns.rev().find(|p| p.matches(path)).is_some_and(|p| p.include)
}

/// A reservation pattern prepared for conflict checks: the stored text, its normalised form
/// and that form compiled. Build it once per reservation and compare it with many.
#[derive(Debug, Clone)]
pub struct ReservationPattern {
    raw: String,
    normalized: String,
    compiled: PathPattern,
    is_virtual: bool,
    has_glob: bool,
}

impl ReservationPattern {
    /// Prepares a stored or requested pattern.
    pub fn new(raw: &str) -> Self {
        let normalized = normalize(raw);
        Self {
            raw: raw.to_string(),
            compiled: PathPattern::new(&normalized),
            has_glob: has_glob(&normalized),
            is_virtual: is_virtual(raw),
            normalized,
        }
    }

    /// The pattern as stored.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The normalised text (see [`normalize`]).
    pub fn normalized(&self) -> &str {
        &self.normalized
    }

    /// Whether it names a virtual resource.
    pub fn is_virtual(&self) -> bool {
        self.is_virtual
    }

    /// The compiled normalised pattern.
    pub fn compiled(&self) -> &PathPattern {
        &self.compiled
    }

    /// Whether this (held) pattern overlaps the `candidate` (requested) one, by the rule of
    /// docs/compat/tools.md §6.2. Not symmetric: a held directory covers a requested file, but a
    /// held file does not cover a requested directory.
    ///
    /// Virtual patterns overlap only the identical (trimmed) string. Otherwise, if either side
    /// is a glob, they overlap when either pattern matches the other's text ("cross-match");
    /// two plain paths overlap when the held one matches the candidate. Identical normalised
    /// strings always overlap (the reference's cross-match misses a few, e.g. `[ab].py`).
    pub fn overlaps(&self, candidate: &ReservationPattern) -> bool {
        if self.is_virtual || candidate.is_virtual {
            return self.raw.trim() == candidate.raw.trim();
        }
        if self.normalized == candidate.normalized {
            return true;
        }
        if self.has_glob || candidate.has_glob {
            self.compiled.matches(&candidate.normalized)
                || candidate.compiled.matches(&self.normalized)
        } else {
            self.compiled.matches(&candidate.normalized)
        }
    }
}

/// An existing reservation, as the conflict predicate sees it.
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    /// The stored pattern.
    pub pattern: &'a ReservationPattern,
    /// Whether the holder reserved exclusively.
    pub exclusive: bool,
    /// Whether it has been released.
    pub released: bool,
    /// Whether the requester itself holds it.
    pub own: bool,
}

/// The conflict predicate of docs/compat/tools.md §6.2: does a request for `candidate`
/// (`exclusive` or shared) clash with the existing reservation `held`? Released and own
/// reservations never clash, nor do two shared ones; otherwise see
/// [`ReservationPattern::overlaps`].
pub fn conflicts(held: Held<'_>, candidate: &ReservationPattern, exclusive: bool) -> bool {
    if held.released || held.own || !(held.exclusive || exclusive) {
        return false;
    }
    held.pattern.overlaps(candidate)
}

/// [`ReservationPattern::overlaps`] on two strings (compiles both); for the tests' tables.
#[cfg(test)]
pub fn patterns_overlap(held: &str, candidate: &str) -> bool {
    ReservationPattern::new(held).overlaps(&ReservationPattern::new(candidate))
}

#[cfg(test)]
mod tests;
