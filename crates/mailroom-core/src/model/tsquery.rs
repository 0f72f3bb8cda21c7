//! An FTS5 `MATCH` expression (as `search_query::sanitize_fts_query` leaves it, parsed by
//! `model::fts5_query`) rewritten as a PostgreSQL `tsquery`, for search on the PostgreSQL
//! backend when the search index cannot answer.
//!
//! The messages' search vector weighs subject words `A` and body words `B`, so a column filter
//! becomes a weight (`'word':A`). A phrase's words become lexemes in a row (`<->`);
//! PostgreSQL's `simple` dictionary lower-cases them as it lower-cased the messages' words.
//! `NEAR` becomes `AND` (PostgreSQL's distance operator wants an exact distance) and `^` is
//! dropped. `None`: FTS5 would refuse the expression (or a phrase has no words), and the
//! search falls back to `LIKE`.

use mailroom_search::fts5::{self as fts5_query, Columns, Expr, Phrase};

/// `query` as tsquery text (for `to_tsquery('simple', …)`), or `None` when FTS5 would reject it.
pub fn fts5_to_tsquery(query: &str) -> Option<String> {
    translate(&fts5_query::parse(query)?)
}

fn translate(expr: &Expr) -> Option<String> {
    Some(match expr {
        Expr::Phrase(phrase) => phrase_lexemes(phrase)?,
        Expr::Near { phrases, .. } => {
            let terms = phrases.iter().map(phrase_lexemes).collect::<Option<Vec<_>>>()?;
            format!("({})", terms.join(" & "))
        }
        Expr::And(terms) => join(terms, " & ")?,
        Expr::Or(terms) => join(terms, " | ")?,
        Expr::Not(left, right) => format!("({} & !{})", translate(left)?, translate(right)?),
        Expr::Group(inner) => format!("({})", translate(inner)?),
    })
}

/// A phrase's words as lexemes in a row (`<->`), its prefix star on the last.
fn phrase_lexemes(phrase: &Phrase) -> Option<String> {
    let words = phrase.words();
    let weight = match phrase.columns {
        Columns::Both => "",
        Columns::Subject => "A",
        Columns::Body => "B",
        Columns::Neither => {
            // No column left to match in: a contradiction, which matches nothing.
            let word = words.first()?;
            return Some(format!("('{word}' & !'{word}')"));
        }
    };
    let count = words.len();
    let lexemes: Vec<String> = words
        .into_iter()
        .enumerate()
        .map(|(i, word)| {
            let star = if phrase.prefix && i + 1 == count { "*" } else { "" };
            if star.is_empty() && weight.is_empty() {
                format!("'{word}'")
            } else {
                format!("'{word}':{star}{weight}")
            }
        })
        .collect();
    match lexemes.len() {
        0 => None,
        1 => lexemes.into_iter().next(),
        _ => Some(format!("({})", lexemes.join(" <-> "))),
    }
}

fn join(terms: &[Expr], operator: &str) -> Option<String> {
    let terms = terms.iter().map(translate).collect::<Option<Vec<_>>>()?;
    Some(format!("({})", terms.join(operator)))
}

#[cfg(test)]
mod tests {
    use super::fts5_to_tsquery;

    fn check(cases: &[(&str, Option<&str>)]) {
        for (query, expected) in cases {
            assert_eq!(fts5_to_tsquery(query).as_deref(), *expected, "{query}");
        }
    }

    #[test]
    fn words_phrases_and_prefixes() {
        check(&[
            ("hello", Some("'hello'")),
            ("Hello World", Some("('Hello' & 'World')")),
            ("\"roll back\"", Some("('roll' <-> 'back')")),
            ("\"POL-358\"", Some("('POL' <-> '358')")),
            ("mig*", Some("'mig':*")),
            ("\"data base\"*", Some("('data' <-> 'base':*)")),
            ("foo_bar", Some("('foo' <-> 'bar')")),
            ("\"say \"\"hi\"\"\"", Some("('say' <-> 'hi')")),
        ]);
    }

    #[test]
    fn operators_bind_as_in_fts5() {
        check(&[
            ("a OR b c", Some("('a' | ('b' & 'c'))")),
            ("a NOT b c", Some("('a' & !('b' & 'c'))")),
            ("a b NOT c", Some("(('a' & 'b') & !'c')")),
            ("a AND b OR c", Some("(('a' & 'b') | 'c')")),
            ("a NOT b", Some("('a' & !'b')")),
            ("(a OR b) NOT c", Some("((('a' | 'b')) & !'c')")),
            ("NEAR(a b, 5)", Some("('a' & 'b')")),
        ]);
    }

    #[test]
    fn column_filters_become_weights() {
        check(&[
            ("subject:deploy", Some("'deploy':A")),
            ("body:(x OR y*)", Some("(('x':B | 'y':*B))")),
            ("{subject body}:z", Some("'z'")),
            ("subject:body:z", None),
            ("project_scope:p1", None),
            ("{subject project_scope}:z", None),
        ]);
    }

    #[test]
    fn what_fts5_refuses_is_refused() {
        check(&[
            ("(a", None),
            ("a)", None),
            ("a OR", None),
            ("AND", None),
            ("\"open", None),
            ("NOT a", None),
            ("\"\"", None),
        ]);
    }
}
