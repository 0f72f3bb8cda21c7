use proptest::prelude::*;

use super::*;

/// `pattern` matches (or not) `path`, as Python's pathspec (gitwildmatch) decides.
fn check(pattern: &str, path: &str, expected: bool) {
    assert_eq!(PathPattern::new(pattern).matches(path), expected, "{pattern:?} vs {path:?}");
}

#[test]
fn wildmatch_follows_pathspec() {
    // A pattern without a middle slash matches at any depth, and everything beneath.
    check("app.py", "app.py", true);
    check("app.py", "src/app.py", true);
    check("app.py", "src/app.py/inner", true);
    check("app.py", "src/app.pyc", false);
    check("src", "src/app.py", true);
    check("src", "lib/src", true);
    check("src", "srcs", false);
    check("*.py", "src/app.py", true);
    check("*.py", "app.py", true);
    check("*.py", "app.pyx", false);
    // A middle slash anchors at the root; `*` does not cross `/`.
    check("src/app.py", "src/app.py", true);
    check("src/app.py", "lib/src/app.py", false);
    check("src/*.py", "src/a.py", true);
    check("src/*.py", "src/sub/x.py", false);
    check("src/*", "src/a", true);
    check("src/*", "src/a/b", true);
    check("src/*", "src", false);
    // `**` crosses directories.
    check("src/**", "src/app.py", true);
    check("src/**", "src/a/b/c", true);
    check("src/**", "src", false);
    check("src/**/*.py", "src/a.py", true);
    check("src/**/*.py", "src/x/y/a.py", true);
    check("src/**/*.py", "lib/a.py", false);
    check("a/**/b", "a/b", true);
    check("a/**/b", "a/x/y/b", true);
    check("**/*.py", "a/b/c.py", true);
    check("**", "anything/at/all", true);
    check("**/**", "x", true);
    // A trailing slash is a directory: everything beneath it, at any depth.
    check("docs/", "docs/a.md", true);
    check("docs/", "docs", false);
    check("docs/", "x/docs/a.md", true);
    check("src/docs/", "src/docs/a.md", true);
    // `?`, classes, escapes.
    check("a?.py", "ab.py", true);
    check("a?.py", "a/.py", false);
    check("[ab].py", "b.py", true);
    check("[a-c].py", "c.py", true);
    check("[!ab].py", "c.py", true);
    check("[!ab].py", "a.py", false);
    check("[^ab].py", "c.py", true);
    check("[ab.py", "[ab.py", true);
    check("\\*.py", "*.py", true);
    check("\\*.py", "a.py", false);
    // Leading slash anchors; empty, comments and lone slash match nothing.
    check("/app.py", "app.py", true);
    check("/app.py", "src/app.py", false);
    check("", "", false);
    check("# note", "# note", false);
    check("/", "x", false);
    // A dangling escape is rejected by pathspec: only the exact spelling matches.
    check("bad\\", "bad\\", true);
    check("bad\\", "bad", false);
}

#[test]
fn sets_take_the_last_matching_pattern() {
    let set = PatternSet::new(["src/**", "!src/generated/**"]);
    assert!(set.matches("src/app.py"));
    assert!(!set.matches("src/generated/x.py"));
    assert!(!set.matches("lib/x.py"));
    assert!(PatternSet::new(["a", "b/*.rs"]).matches("b/x.rs"));
    assert!(PatternSet::default().is_empty());
    assert!(!PatternSet::default().matches("a"));
}

/// Every example of docs/compat/tools.md §6.2: existing `held`, requested `candidate`.
fn overlap(held: &str, candidate: &str, expected: bool) {
    assert_eq!(patterns_overlap(held, candidate), expected, "{held:?} held, {candidate:?} asked");
}

#[test]
fn conflict_examples_of_the_spec() {
    overlap("src/**", "src/app.py", true);
    overlap("src/app.py", "src/**", true);
    overlap("src", "src/app.py", true);
    overlap("src/app.py", "src", false);
    overlap("*.py", "src/app.py", true);
    overlap("src/*.py", "src/sub/x.py", false);
    overlap("src/*.py", "src/**/*.py", true);
    overlap("src/a/*.py", "src/b/**", false);
    overlap("docs/", "docs/a.md", true);
    overlap("app.py", "src/app.py", true);
    overlap("src/app.py", "src/app.py", true);
    overlap("src/[ab].py", "src/[ab].py", true);
    // The heuristic's known misses and hits.
    overlap("src/a*.py", "src/*b.py", false);
    overlap("src/*.py", "src/a*.py", true);
    // Normalisation: leading slashes and backslashes.
    overlap("/src/**", "src\\app.py", true);
    // Virtual namespaces: exact (trimmed) equality only, never files.
    overlap("tool://deploy", " tool://deploy ", true);
    overlap("tool://deploy", "tool://deploy2", false);
    overlap("**", "tool://deploy", false);
    overlap("resource://x", "**", false);
}

#[test]
fn released_own_and_shared_reservations_do_not_conflict() {
    let held = ReservationPattern::new("src/**");
    let asked = ReservationPattern::new("src/app.py");
    let base = Held { pattern: &held, exclusive: true, released: false, own: false };
    assert!(conflicts(base, &asked, true));
    assert!(conflicts(base, &asked, false), "a shared request clashes with an exclusive hold");
    assert!(conflicts(Held { exclusive: false, ..base }, &asked, true));
    assert!(!conflicts(Held { exclusive: false, ..base }, &asked, false));
    assert!(!conflicts(Held { released: true, ..base }, &asked, true));
    assert!(!conflicts(Held { own: true, ..base }, &asked, true));
}

#[test]
fn warnings_flag_broad_absolute_and_short_patterns() {
    assert_eq!(pattern_warnings("**").len(), 1);
    assert_eq!(pattern_warnings(".").len(), 1);
    assert!(pattern_warnings("/etc/x")[0].contains("absolute"));
    assert!(pattern_warnings("a*")[0].contains("short"));
    assert!(pattern_warnings("src/**").is_empty());
}

fn segment() -> impl Strategy<Value = String> {
    "[a-z0-9_][a-z0-9_.-]{0,7}"
}

fn relative_path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..5).prop_map(|s| s.join("/"))
}

proptest! {
    #[test]
    fn a_literal_path_conflicts_with_itself(path in relative_path()) {
        let pattern = ReservationPattern::new(&path);
        let held = Held { pattern: &pattern, exclusive: true, released: false, own: false };
        prop_assert!(conflicts(held, &pattern, true));
        prop_assert!(PathPattern::new(&path).matches(&path));
    }

    #[test]
    fn a_directory_glob_covers_everything_beneath(dir in relative_path(), rest in relative_path()) {
        let inside = format!("{dir}/{rest}");
        let (globbed, slashed) = (format!("{dir}/**"), format!("{dir}/"));
        prop_assert!(patterns_overlap(&globbed, &inside));
        prop_assert!(patterns_overlap(&slashed, &inside));
        prop_assert!(patterns_overlap(&dir, &inside), "a plain path covers its subtree");
        prop_assert!(patterns_overlap(&inside, &globbed), "cross-match");
    }

    #[test]
    fn star_never_crosses_a_slash(dir in relative_path(), a in segment(), b in segment()) {
        let pattern = PathPattern::new(&format!("{dir}/*.rs"));
        // `{a}_`: a directory named like `x.rs` would match, as everything beneath a match does.
        let (direct, nested) = (format!("{dir}/{a}.rs"), format!("{dir}/{a}_/{b}.rs"));
        prop_assert!(pattern.matches(&direct));
        prop_assert!(!pattern.matches(&nested));
    }

    #[test]
    fn virtual_never_overlaps_files(name in segment(), path in relative_path(), scheme in 0usize..3) {
        let virtual_pattern = format!("{}{name}", VIRTUAL_PREFIXES[scheme]);
        for file in [path.as_str(), "**", "*", "**/*"] {
            prop_assert!(!patterns_overlap(&virtual_pattern, file));
            prop_assert!(!patterns_overlap(file, &virtual_pattern));
        }
        prop_assert!(patterns_overlap(&virtual_pattern, &virtual_pattern));
    }

    #[test]
    fn released_own_or_both_shared_never_conflict(
        held in relative_path(), asked in relative_path(), exclusive in any::<bool>()
    ) {
        let held = ReservationPattern::new(&held);
        let asked = ReservationPattern::new(&asked);
        let base = Held { pattern: &held, exclusive, released: false, own: false };
        let (released, own) = (Held { released: true, ..base }, Held { own: true, ..base });
        let shared = Held { exclusive: false, ..base };
        prop_assert!(!conflicts(released, &asked, true));
        prop_assert!(!conflicts(own, &asked, true));
        prop_assert!(!conflicts(shared, &asked, false));
    }

    #[test]
    fn matching_never_panics(pattern in "[a-z*?\\[\\]!/\\\\.-]{0,12}", path in "[a-z*/.-]{0,16}") {
        let _ = PathPattern::new(&pattern).matches(&path);
        let _ = patterns_overlap(&pattern, &path);
    }
}

#[test]
fn common_shapes_skip_the_vm() {
    for pattern in [
        "docs/page1.md",
        "/app.py",
        "src/**",
        "vendor/lib/",
        "*.py",
        "**/*.gen3.rs",
        "src/*.py",
        "/*.md",
    ] {
        assert!(PathPattern::new(pattern).has_shape(), "{pattern:?}");
    }
    for pattern in ["app.py", "src/**/*.py", "a?.py", "[ab].py", "src/*", "**", "*a/b"] {
        assert!(!PathPattern::new(pattern).has_shape(), "{pattern:?}");
    }
    // The shortcuts keep the regex's quirks: `.` stops at a newline, `[^/]` does not.
    check("src/**", "src/a\nb", false);
    check("docs/a.md", "docs/a.md/x\ny", false);
    check("*.py", "a\nb/c.py", false);
    check("*.py", "a\nc.py", true);
    check("*.py", "/c.py", false);
    check("src/*.py", "src/a.py.py", true);
    check("*aa", "xaaa", true);
    check("*a/.", "a/.", true);
    check("*.aa", "x.aa.b", false);
}

/// A pattern built from pieces the shapes are made of, plus the odd glob.
fn shaped_pattern() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("**".to_string()),
        Just("*".to_string()),
        Just("*.a".to_string()),
        Just("*a".to_string()),
        Just("a*".to_string()),
        Just("a?".to_string()),
        Just("[ab]".to_string()),
        "[ab.]{1,3}",
        Just("".to_string()),
        Just("\n".to_string()),
    ];
    (any::<bool>(), prop::collection::vec(piece, 1..4), any::<bool>()).prop_map(
        |(lead, pieces, trail)| {
            let body = pieces.join("/");
            format!("{}{body}{}", if lead { "/" } else { "" }, if trail { "/" } else { "" })
        },
    )
}

fn nasty_path() -> impl Strategy<Value = String> {
    "[ab./\n]{0,10}"
}

proptest! {
    #[test]
    fn shortcuts_agree_with_the_vm(pattern in shaped_pattern(), path in nasty_path()) {
        let compiled = PathPattern::new(&pattern);
        prop_assert_eq!(compiled.matches(&path), compiled.matches_by_vm(&path),
            "{:?} vs {:?}", pattern, path);
    }

    #[test]
    fn shortcuts_agree_with_the_vm_on_any_text(
        pattern in "[ab*?/.\n\\[\\]!]{0,8}", path in "[ab*?/.\n\\[\\]!]{0,10}"
    ) {
        let compiled = PathPattern::new(&pattern);
        prop_assert_eq!(compiled.matches(&path), compiled.matches_by_vm(&path),
            "{:?} vs {:?}", pattern, path);
    }

    #[test]
    fn shortcuts_agree_on_realistic_paths(
        pattern in shaped_pattern(), path in relative_path(), extra in "(\\.a|a|/a\\.a)?"
    ) {
        let compiled = PathPattern::new(&pattern);
        let path = format!("{path}{extra}");
        prop_assert_eq!(compiled.matches(&path), compiled.matches_by_vm(&path),
            "{:?} vs {:?}", pattern, path);
    }
}

fn set_pattern() -> impl Strategy<Value = String> {
    (any::<bool>(), prop_oneof![shaped_pattern(), "[ab]{1,2}/[ab*]{1,2}(/[ab]{1,2})?"])
        .prop_map(|(negate, pattern)| if negate { format!("!{pattern}") } else { pattern })
}

proptest! {
    #[test]
    fn indexed_sets_agree_with_trying_every_pattern(
        patterns in prop::collection::vec(set_pattern(), 0..8),
        path in prop_oneof![nasty_path(), "[ab]{1,2}/[ab.]{0,3}(/[ab]{1,2})?"],
    ) {
        let set = PatternSet::new(patterns.iter().map(String::as_str));
        let compiled: Vec<PathPattern> = patterns.iter().map(|p| PathPattern::new(p)).collect();
        prop_assert_eq!(set.matches(&path), union_matches(compiled.iter(), &path),
            "{:?} vs {:?}", patterns, path);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any pattern an agent sends compiles (or is taken literally) and matches any path
    /// without a panic, however it mixes globs, brackets and braces.
    #[test]
    fn any_pattern_compiles_and_matches(
        pattern in "[a-z/*?\\[\\]{},!.\\\\^-]{0,24}|(?s).{0,24}",
        path in nasty_path(),
    ) {
        let compiled = PathPattern::new(&pattern);
        let _ = compiled.matches(&path);
        let reservation = ReservationPattern::new(&pattern);
        let held = Held { pattern: &reservation, exclusive: true, released: false, own: false };
        let _ = conflicts(held, &ReservationPattern::new(&path), true);
    }
}
