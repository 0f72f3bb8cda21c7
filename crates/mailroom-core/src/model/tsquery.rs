//! An FTS5 `MATCH` expression (as `search_query::sanitize_fts_query` leaves it) rewritten as
//! a PostgreSQL `tsquery`, for search on the PostgreSQL backend.
//!
//! The grammar is FTS5's: barewords, `"phrases"`, a trailing `*` for a prefix, `AND`, `OR`
//! and `NOT` (upper case; `NOT` binds tightest, then `AND`, then `OR`; terms side by side are
//! ANDed), parentheses, column filters `subject:` / `body:` / `{subject body}:`, and
//! `NEAR(...)`. The messages' search vector weighs subject words `A` and body words `B`, so a
//! column filter becomes a weight (`'word':A`). A bareword is split into its letters-and-digits
//! runs, as FTS5's `unicode61` tokenizer splits it, and those become a phrase; PostgreSQL's
//! `simple` dictionary lower-cases them as it lower-cased the messages' words. `NEAR` becomes
//! `AND` (PostgreSQL's distance operator wants an exact distance). `None`: the expression is
//! not valid FTS5 (unbalanced, an unknown column, a dangling operator), where FTS5 would
//! refuse it too and the search falls back to `LIKE`.

/// Which columns a term may match in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Columns {
    Both,
    Subject,
    Body,
}

impl Columns {
    fn weight(self) -> &'static str {
        match self {
            Columns::Both => "",
            Columns::Subject => "A",
            Columns::Body => "B",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Phrase(String),
    Star,
    Open,
    Close,
    Colon,
    /// `{subject body}`: a column set.
    Set(Vec<String>),
    Comma,
}

/// `query` as tsquery text (for `to_tsquery('simple', …)`), or `None` when FTS5 would reject it.
pub fn fts5_to_tsquery(query: &str) -> Option<String> {
    let tokens = tokenize(query)?;
    let mut parser = Parser { tokens, at: 0 };
    let expr = parser.or(Columns::Both)?;
    (parser.at == parser.tokens.len()).then_some(expr)
}

fn tokenize(query: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = query.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '"' => {
                chars.next();
                let mut phrase = String::new();
                loop {
                    match chars.next()? {
                        '"' if chars.peek() == Some(&'"') => {
                            chars.next();
                            phrase.push('"');
                        }
                        '"' => break,
                        c => phrase.push(c),
                    }
                }
                tokens.push(Token::Phrase(phrase));
            }
            '{' => {
                chars.next();
                let mut set = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        c => set.push(c),
                    }
                }
                tokens.push(Token::Set(set.split_whitespace().map(str::to_string).collect()));
            }
            '*' | '(' | ')' | ':' | ',' => {
                chars.next();
                tokens.push(match c {
                    '*' => Token::Star,
                    '(' => Token::Open,
                    ')' => Token::Close,
                    ':' => Token::Colon,
                    _ => Token::Comma,
                });
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || "\"{}*():,".contains(c) {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    Some(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn is_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w == keyword)
    }

    fn or(&mut self, columns: Columns) -> Option<String> {
        let mut terms = vec![self.and(columns)?];
        while self.is_keyword("OR") {
            self.at += 1;
            terms.push(self.and(columns)?);
        }
        Some(join(terms, " | "))
    }

    fn and(&mut self, columns: Columns) -> Option<String> {
        let mut terms = vec![self.not(columns)?];
        while self.is_keyword("AND") {
            self.at += 1;
            terms.push(self.not(columns)?);
        }
        Some(join(terms, " & "))
    }

    /// `x NOT y`: FTS5 binds terms side by side tighter than `NOT`, so `a NOT b c` is
    /// `a NOT (b c)`; both sides are such runs.
    fn not(&mut self, columns: Columns) -> Option<String> {
        let mut expr = self.run(columns)?;
        while self.is_keyword("NOT") {
            self.at += 1;
            let negated = self.run(columns)?;
            expr = format!("({expr} & !{negated})");
        }
        Some(expr)
    }

    /// Primaries side by side, with no operator between them (an implicit AND).
    fn run(&mut self, columns: Columns) -> Option<String> {
        let mut terms = vec![self.primary(columns)?];
        while !matches!(self.peek(), None | Some(Token::Close | Token::Comma))
            && !["AND", "OR", "NOT"].iter().any(|k| self.is_keyword(k))
        {
            terms.push(self.primary(columns)?);
        }
        Some(join(terms, " & "))
    }

    fn primary(&mut self, columns: Columns) -> Option<String> {
        match self.tokens.get(self.at)?.clone() {
            Token::Open => {
                self.at += 1;
                let inner = self.or(columns)?;
                (self.peek() == Some(&Token::Close)).then(|| self.at += 1)?;
                Some(format!("({inner})"))
            }
            Token::Set(names) => {
                self.at += 1;
                let subject = names.iter().any(|n| n == "subject");
                let body = names.iter().any(|n| n == "body");
                if names.iter().any(|n| n != "subject" && n != "body") {
                    return None;
                }
                (self.peek() == Some(&Token::Colon)).then(|| self.at += 1)?;
                let inner = match (subject, body) {
                    (true, false) => Columns::Subject,
                    (false, true) => Columns::Body,
                    _ => columns,
                };
                self.primary(narrow(columns, inner)?)
            }
            Token::Word(word)
                if word == "NEAR" && self.tokens.get(self.at + 1) == Some(&Token::Open) =>
            {
                self.at += 2;
                let mut terms = Vec::new();
                while !matches!(self.peek(), Some(Token::Close | Token::Comma)) {
                    terms.push(self.term(columns)?);
                }
                if self.peek() == Some(&Token::Comma) {
                    self.at += 1;
                    matches!(self.peek(), Some(Token::Word(n)) if n.parse::<u32>().is_ok())
                        .then(|| self.at += 1)?;
                }
                (self.peek() == Some(&Token::Close)).then(|| self.at += 1)?;
                (!terms.is_empty()).then(|| format!("({})", terms.join(" & ")))
            }
            Token::Word(word) if ["AND", "OR", "NOT"].contains(&word.as_str()) => None,
            Token::Word(word) if self.tokens.get(self.at + 1) == Some(&Token::Colon) => {
                let inner = match word.as_str() {
                    "subject" => Columns::Subject,
                    "body" => Columns::Body,
                    _ => return None,
                };
                self.at += 2;
                self.primary(narrow(columns, inner)?)
            }
            _ => self.term(columns),
        }
    }

    /// A word or phrase, with its prefix star.
    fn term(&mut self, columns: Columns) -> Option<String> {
        let text = match self.tokens.get(self.at)? {
            Token::Word(word) if !["AND", "OR", "NOT"].contains(&word.as_str()) => word.clone(),
            Token::Phrase(phrase) => phrase.clone(),
            _ => return None,
        };
        self.at += 1;
        let prefix = self.peek() == Some(&Token::Star);
        if prefix {
            self.at += 1;
        }
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        let count = words.len();
        let lexemes: Vec<String> = words
            .into_iter()
            .enumerate()
            .map(|(i, word)| {
                let star = if prefix && i + 1 == count { "*" } else { "" };
                let weight = columns.weight();
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
}

/// A column filter inside another: FTS5 takes the columns both allow; none is an error.
fn narrow(outer: Columns, inner: Columns) -> Option<Columns> {
    match (outer, inner) {
        (Columns::Both, inner) => Some(inner),
        (outer, Columns::Both) => Some(outer),
        (outer, inner) if outer == inner => Some(outer),
        _ => None,
    }
}

fn join(terms: Vec<String>, operator: &str) -> String {
    if terms.len() == 1 {
        terms.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", terms.join(operator))
    }
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
