//! Fuzzy string similarity, reproducing Python's `difflib` so "Did you mean ...?" suggestions
//! for unknown projects and agents list the same candidates, in the same order, as the
//! reference.
//!
//! `difflib.SequenceMatcher(None, a, b).ratio()` is `2 * M / T`, where `T` is the total length
//! and `M` the number of characters in the matching blocks found by Ratcliff/Obershelp: take the
//! longest common block (earliest in `a`, then earliest in `b`, on ties), then recurse on the
//! pieces to its left and right. The exact tie-breaking matters because it decides which blocks
//! are found, so it is reproduced here, including difflib's default "autojunk" rule.

use std::collections::HashMap;

/// Below this length of `b`, difflib's autojunk heuristic never applies.
const AUTOJUNK_MIN_LEN: usize = 200;

/// A half-open window `a[a_lo..a_hi]` × `b[b_lo..b_hi]` still to be matched.
#[derive(Clone, Copy)]
struct Window {
    a_lo: usize,
    a_hi: usize,
    b_lo: usize,
    b_hi: usize,
}

/// A matching block: `a[a_start..a_start + size] == b[b_start..b_start + size]`.
struct Block {
    a_start: usize,
    b_start: usize,
    size: usize,
}

/// Positions of each character of `b`, minus difflib's "popular" characters.
///
/// When `b` has at least 200 characters, a character occurring more than `len / 100 + 1` times
/// is left out of the index (difflib's `autojunk=True` default); matches through such
/// characters are then only found by extending blocks, exactly as in difflib.
fn index_positions(b: &[char]) -> HashMap<char, Vec<usize>> {
    let mut positions: HashMap<char, Vec<usize>> = HashMap::new();
    for (index, &c) in b.iter().enumerate() {
        positions.entry(c).or_default().push(index);
    }
    if b.len() >= AUTOJUNK_MIN_LEN {
        let popular_above = b.len() / 100 + 1;
        positions.retain(|_, indices| indices.len() <= popular_above);
    }
    positions
}

/// difflib's `find_longest_match` for a matcher without junk predicate.
fn longest_match(
    a: &[char],
    b: &[char],
    positions: &HashMap<char, Vec<usize>>,
    w: Window,
) -> Block {
    let (mut best_a, mut best_b, mut best_size) = (w.a_lo, w.b_lo, 0);
    // run_ending_at[j] = length of the common run ending at a[i - 1] and b[j].
    let mut run_ending_at: HashMap<usize, usize> = HashMap::new();
    for (i, c) in a.iter().enumerate().take(w.a_hi).skip(w.a_lo) {
        let mut next_runs = HashMap::new();
        for &j in positions.get(c).map_or(&[][..], Vec::as_slice) {
            if j < w.b_lo {
                continue;
            }
            if j >= w.b_hi {
                break;
            }
            let size = j.checked_sub(1).and_then(|p| run_ending_at.get(&p)).map_or(0, |k| *k) + 1;
            next_runs.insert(j, size);
            if size > best_size {
                (best_a, best_b, best_size) = (i + 1 - size, j + 1 - size, size);
            }
        }
        run_ending_at = next_runs;
    }
    // Extend through characters that the autojunk rule kept out of the index.
    while best_a > w.a_lo && best_b > w.b_lo && a[best_a - 1] == b[best_b - 1] {
        (best_a, best_b, best_size) = (best_a - 1, best_b - 1, best_size + 1);
    }
    while best_a + best_size < w.a_hi
        && best_b + best_size < w.b_hi
        && a[best_a + best_size] == b[best_b + best_size]
    {
        best_size += 1;
    }
    Block { a_start: best_a, b_start: best_b, size: best_size }
}

/// Total size of difflib's matching blocks between `a` and `b`.
fn matching_characters(a: &[char], b: &[char]) -> usize {
    let positions = index_positions(b);
    let mut pending = vec![Window { a_lo: 0, a_hi: a.len(), b_lo: 0, b_hi: b.len() }];
    let mut total = 0;
    while let Some(w) = pending.pop() {
        let block = longest_match(a, b, &positions, w);
        if block.size == 0 {
            continue;
        }
        total += block.size;
        if w.a_lo < block.a_start && w.b_lo < block.b_start {
            pending.push(Window { a_hi: block.a_start, b_hi: block.b_start, ..w });
        }
        let (a_end, b_end) = (block.a_start + block.size, block.b_start + block.size);
        if a_end < w.a_hi && b_end < w.b_hi {
            pending.push(Window { a_lo: a_end, b_lo: b_end, ..w });
        }
    }
    total
}

/// Python's `difflib.SequenceMatcher(None, a, b).ratio()` over characters, in `[0, 1]`.
///
/// Two empty strings are identical (1.0). The ratio is not symmetric in general, because the
/// tie-breaking depends on which string is `a`; callers mirroring the reference must keep its
/// argument order.
pub fn sequence_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let matches = matching_characters(&a, &b);
    // Lengths of real strings are far below 2^52, so the conversions are exact.
    2.0 * matches as f64 / total as f64
}

/// Python's `difflib.get_close_matches(word, candidates, n, cutoff)`.
///
/// Keeps candidates whose ratio (computed as `sequence_ratio(candidate, word)`, difflib's
/// order) is at least `cutoff`, best first; equal scores are ordered by candidate descending,
/// as `heapq.nlargest` on `(score, candidate)` does. At most `n` are returned, so `n == 0`
/// gives nothing (difflib raises instead, as it does for a cutoff outside `[0, 1]`).
pub fn close_matches<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
    cutoff: f64,
) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &'a str)> = candidates
        .into_iter()
        .map(|candidate| (sequence_ratio(candidate, word), candidate))
        .filter(|(score, _)| *score >= cutoff)
        .collect();
    scored.sort_by(|left, right| right.0.total_cmp(&left.0).then_with(|| right.1.cmp(left.1)));
    scored.into_iter().take(n).map(|(_, candidate)| candidate).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares what a rule returned for `input` with what we expected, naming the input.
    fn check<T: PartialEq + std::fmt::Debug>(input: &str, actual: T, expected: T) {
        assert_eq!(actual, expected, "input: {input:?}");
    }

    #[test]
    fn ratios_match_python_difflib() {
        let junk_a = format!("{}ab{}", "x".repeat(5), "y".repeat(300));
        let junk_b = format!("{}ab{}", "y".repeat(250), "x".repeat(10));
        // (a, b, matching characters according to CPython 3.11 difflib)
        let cases = [
            ("abcd", "bcde", 3),
            ("backend", "abs-path-backend", 7),
            ("abc", "", 0),
            ("BlueLake", "bluelake", 6),
            ("GreenCastle", "GreenCastel", 10),
            ("private Thread currentThread;", "private volatile Thread currentThread;", 29),
            ("qabxcd", "abycdf", 4),
            ("abxcd", "abcd", 4),
            ("tide", "diet", 1),
            ("diet", "tide", 2),
            ("héllo wörld", "hello world", 9),
            ("/data/projects/api", "/data/projects/app", 17),
            (junk_a.as_str(), junk_b.as_str(), 2),
        ];
        for (a, b, matches) in cases {
            let total = (a.chars().count() + b.chars().count()) as f64;
            check(&format!("{a} | {b}"), sequence_ratio(a, b), 2.0 * matches as f64 / total);
        }
        check("abcd | bcde", sequence_ratio("abcd", "bcde"), 0.75);
        check("empty", sequence_ratio("", ""), 1.0);
    }

    /// (word, candidates, n, cutoff, expected matches)
    type CloseMatchCase =
        (&'static str, &'static [&'static str], usize, f64, &'static [&'static str]);

    #[test]
    fn close_matches_match_python_difflib() {
        let cases: [CloseMatchCase; 5] = [
            ("appel", &["ape", "apple", "peach", "puppy"], 3, 0.6, &["apple", "ape"]),
            (
                "wheel",
                &["while", "whale", "wheal", "hweel", "wheel"],
                3,
                0.6,
                &["wheel", "wheal", "hweel"],
            ),
            ("ab", &["ba", "ab", "ab", "ax", "xa"], 5, 0.0, &["ab", "ab", "xa", "ba", "ax"]),
            (
                "backend",
                &["abs-path-backend", "backend-api", "frontend"],
                3,
                0.4,
                &["backend-api", "abs-path-backend", "frontend"],
            ),
            ("backend", &["abs-path-backend", "backend-api"], 0, 0.0, &[]),
        ];
        for (word, candidates, n, cutoff, expected) in cases {
            check(
                word,
                close_matches(word, candidates.iter().copied(), n, cutoff),
                expected.to_vec(),
            );
        }
    }
}
