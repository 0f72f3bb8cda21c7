use super::*;

fn phrase(text: &str, columns: Columns) -> Expr {
    Expr::Phrase(Phrase { text: text.into(), prefix: false, initial: false, columns })
}

#[test]
fn phrases_operators_and_columns_parse_as_fts5_binds_them() {
    use Columns::*;
    let both = |t| phrase(t, Both);
    assert_eq!(parse("a"), Some(both("a")));
    assert_eq!(
        parse("a OR b c"),
        Some(Expr::Or(vec![both("a"), Expr::And(vec![both("b"), both("c")])]))
    );
    assert_eq!(
        parse("a NOT b c"),
        Some(Expr::Not(Box::new(both("a")), Box::new(Expr::And(vec![both("b"), both("c")]))))
    );
    assert_eq!(parse("subject:x"), Some(phrase("x", Subject)));
    assert_eq!(parse("-subject:x"), Some(phrase("x", Body)));
    assert_eq!(parse("-{body}:x"), Some(phrase("x", Subject)));
    assert_eq!(parse("{subject body}:x"), Some(phrase("x", Both)));
    assert_eq!(
        parse("body:(x OR y)"),
        Some(Expr::Group(Box::new(Expr::Or(vec![phrase("x", Body), phrase("y", Body)]))))
    );
    assert_eq!(parse("a + \"b c\""), Some(both("a b c")));
    let Some(Expr::Phrase(prefixed)) = parse("\"data base\"*") else { panic!() };
    assert!(prefixed.prefix && prefixed.words() == ["data", "base"]);
    let Some(Expr::Phrase(initial)) = parse("^start") else { panic!() };
    assert!(initial.initial);
    let Some(Expr::Near { phrases, distance }) = parse("NEAR(a \"b c\", 3)") else { panic!() };
    assert_eq!((phrases.len(), distance), (2, 3));
    let Some(Expr::Near { distance, .. }) = parse("NEAR(a b)") else { panic!() };
    assert_eq!(distance, 10);
    assert_eq!(parse("NEAR"), Some(both("NEAR")));
    assert_eq!(parse("café"), Some(both("café")));
}

/// Accepted exactly where SQLite's FTS5 accepts: fixed cases and a few thousand generated ones
/// over the grammar's tokens, each run through a real FTS5 table.
#[test]
fn what_fts5_refuses_is_refused_and_nothing_else() {
    let conn = rusqlite::Connection::open_in_memory().expect("open");
    conn.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(subject, body);
         INSERT INTO t VALUES ('alpha beta', 'gamma delta');",
    )
    .expect("table");
    let fts5_accepts = |query: &str| {
        let mut stmt = conn.prepare("SELECT rowid FROM t WHERE t MATCH ?1").expect("prepare");
        let rows = stmt.query_map([query], |r| r.get::<_, i64>(0));
        rows.and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>()).is_ok()
    };
    let fixed = [
        "(a",
        "a)",
        "a OR",
        "AND",
        "\"open",
        "NOT a",
        "\"\"",
        "a.b",
        "a/b",
        "it's",
        "a -b",
        "foo:x",
        "{subject}x",
        "NEAR(a b,)",
        "NEAR(a b, x)",
        "NEAR()",
        "a + *",
        "*a",
        "a**",
        "^",
        "-{subject body}:x",
        "{}:x",
        "a:b:c",
        "subject:body:z",
        "x @y",
        "a, b",
    ];
    for query in fixed {
        assert_eq!(parse(query).is_some(), fts5_accepts(query), "{query}");
    }
    // A small generator of token strings (a linear congruential sequence: the same every run).
    let pieces = [
        "a",
        "b",
        "AND",
        "OR",
        "NOT",
        "(",
        ")",
        "\"c d\"",
        "*",
        "subject:",
        "body:",
        "-",
        "+",
        "^",
        "NEAR(",
        ",",
        "2",
        "{body}",
        "{subject body}",
        ":",
        "é",
        "_x",
        ".",
    ];
    let mut seed: u64 = 0x5eed;
    let mut checked = 0;
    for _ in 0..4000 {
        let mut query = String::new();
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let len = 1 + (seed >> 60) as usize % 6;
        for _ in 0..len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            query.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            if seed & 1 == 0 {
                query.push(' ');
            }
        }
        assert_eq!(parse(&query).is_some(), fts5_accepts(&query), "{query:?}");
        checked += 1;
    }
    assert_eq!(checked, 4000);
}
