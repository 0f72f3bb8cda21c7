//! FTS5's `MATCH` grammar, parsed once into a tree that each engine translates: the PostgreSQL
//! backend's `tsquery` (mailroom-core's `model::tsquery`) and the search index (`query`).
//!
//! The grammar is SQLite's (`fts5parse.y`): barewords (ASCII letters and digits, `_`, and any
//! non-ASCII character), `"phrases"` (`""` inside is a quote), `+` joining phrases into one, a
//! trailing `*` for a prefix, `^` for a phrase that must open its column, `AND`, `OR` and `NOT`
//! (upper case; `NOT` binds tightest, then `AND`, then `OR`; phrases side by side bind tighter
//! than all three and are ANDed), parentheses, column filters (`subject:`, `body:`,
//! `{subject body}:`, and `-` before one for the other columns) and `NEAR(p1 p2 …, N)`. What
//! FTS5 refuses, [`parse`] refuses, so a search falls back to `LIKE` whichever engine runs it.
//! Only `subject` and `body` are columns here: the searched columns of the reference's table.

/// Which of the searched columns a phrase may match in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columns {
    Both,
    Subject,
    Body,
    /// Filters that exclude each other (`subject:(body:x)`, `-{subject body}:x`): FTS5 accepts
    /// them and matches nothing.
    Neither,
}

/// A phrase: its text (the tokenizer splits it into words) and how it matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Phrase {
    /// The phrase as written; parts joined with `+` are joined with a space.
    pub text: String,
    /// `word*`: the last word is a prefix.
    pub prefix: bool,
    /// `^word`: the phrase must start its column.
    pub initial: bool,
    pub columns: Columns,
}

impl Phrase {
    /// The phrase's words as FTS5's `unicode61` tokenizer splits them: runs of letters and
    /// digits, case kept (each engine folds case as it folded the messages' words).
    pub fn words(&self) -> Vec<&str> {
        self.text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect()
    }
}

/// A parsed `MATCH` expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Phrase(Phrase),
    /// `NEAR(…)`: every phrase within `distance` words of the others (FTS5's default is 10).
    Near {
        phrases: Vec<Phrase>,
        distance: u32,
    },
    /// Both sides; also phrases side by side.
    And(Vec<Expr>),
    Or(Vec<Expr>),
    /// `left NOT right`: rows matching `left` but not `right`.
    Not(Box<Expr>, Box<Expr>),
    /// A parenthesised expression (kept so translations can keep the user's grouping).
    Group(Box<Expr>),
}

/// FTS5's distance for a `NEAR` group without one.
const NEAR_DEFAULT: u32 = 10;

/// `query` parsed, or `None` where FTS5 would refuse it (a syntax error, an unknown column).
pub fn parse(query: &str) -> Option<Expr> {
    let tokens = tokenize(query)?;
    let mut parser = Parser { tokens, at: 0 };
    let expr = parser.or(Columns::Both)?;
    (parser.at == parser.tokens.len()).then_some(expr)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A bareword; `AND`, `OR` and `NOT` are kept as words and recognised by the parser.
    Word(String),
    Quoted(String),
    Star,
    Plus,
    Minus,
    Caret,
    Open,
    Close,
    Colon,
    /// `{subject body}`: a column set.
    Set(Vec<String>),
    Comma,
}

/// FTS5's whitespace: the ASCII kinds only (`fts5ExprIsspace`).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// A character FTS5 takes into a bareword (`sqlite3Fts5IsBareword`).
fn is_bareword(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '\x1a' || !c.is_ascii()
}

fn tokenize(query: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        let token = match c {
            c if is_space(c) => continue,
            '"' => {
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
                Token::Quoted(phrase)
            }
            '{' => {
                let mut set = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        c => set.push(c),
                    }
                }
                Token::Set(
                    set.split(is_space).filter(|s| !s.is_empty()).map(String::from).collect(),
                )
            }
            '*' => Token::Star,
            '+' => Token::Plus,
            '-' => Token::Minus,
            '^' => Token::Caret,
            '(' => Token::Open,
            ')' => Token::Close,
            ':' => Token::Colon,
            ',' => Token::Comma,
            c if is_bareword(c) => {
                let mut word = String::from(c);
                while let Some(&c) = chars.peek().filter(|c| is_bareword(**c)) {
                    word.push(c);
                    chars.next();
                }
                Token::Word(word)
            }
            _ => return None,
        };
        tokens.push(token);
    }
    Some(tokens)
}

const KEYWORDS: [&str; 3] = ["AND", "OR", "NOT"];

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.at + ahead)
    }

    fn is_keyword(&self, keyword: &str) -> bool {
        matches!(self.peek(), Some(Token::Word(w)) if w == keyword)
    }

    /// Takes the next token when it is `token`.
    fn eat(&mut self, token: &Token) -> Option<()> {
        (self.peek() == Some(token)).then(|| self.at += 1)
    }

    fn or(&mut self, columns: Columns) -> Option<Expr> {
        self.joined("OR", Self::and, Expr::Or, columns)
    }

    fn and(&mut self, columns: Columns) -> Option<Expr> {
        self.joined("AND", Self::not, Expr::And, columns)
    }

    /// `operand (keyword operand)*`, as one `make` node when there are several.
    fn joined(
        &mut self,
        keyword: &str,
        operand: fn(&mut Self, Columns) -> Option<Expr>,
        make: fn(Vec<Expr>) -> Expr,
        columns: Columns,
    ) -> Option<Expr> {
        let mut terms = vec![operand(self, columns)?];
        while self.is_keyword(keyword) {
            self.at += 1;
            terms.push(operand(self, columns)?);
        }
        Some(one_or(terms, make))
    }

    /// `x NOT y`, where both sides are runs of phrases side by side.
    fn not(&mut self, columns: Columns) -> Option<Expr> {
        let mut expr = self.run(columns)?;
        while self.is_keyword("NOT") {
            self.at += 1;
            expr = Expr::Not(Box::new(expr), Box::new(self.run(columns)?));
        }
        Some(expr)
    }

    /// Phrases side by side, with no operator between them (an implicit AND), or one
    /// parenthesised group: FTS5 sets nothing beside a group without an operator.
    fn run(&mut self, columns: Columns) -> Option<Expr> {
        let mut terms = vec![self.primary(columns)?];
        while !matches!(self.peek(), None | Some(Token::Close))
            && !KEYWORDS.iter().any(|k| self.is_keyword(k))
        {
            if matches!(terms[0], Expr::Group(_)) {
                return None;
            }
            match self.primary(columns)? {
                Expr::Group(_) => return None,
                term => terms.push(term),
            }
        }
        Some(one_or(terms, Expr::And))
    }

    fn primary(&mut self, columns: Columns) -> Option<Expr> {
        if self.eat(&Token::Open).is_some() {
            let inner = self.or(columns)?;
            self.eat(&Token::Close)?;
            return Some(Expr::Group(Box::new(inner)));
        }
        if let Some(filter) = self.column_filter()? {
            let columns = narrow(columns, filter);
            if self.eat(&Token::Open).is_some() {
                let inner = self.or(columns)?;
                self.eat(&Token::Close)?;
                return Some(Expr::Group(Box::new(inner)));
            }
            return self.near_or_phrase(columns);
        }
        self.near_or_phrase(columns)
    }

    /// A column set and its colon, when one comes next: `Ok`-like `Some(None)` when none does,
    /// `None` for an unknown column or a set without its colon.
    fn column_filter(&mut self) -> Option<Option<Columns>> {
        let negated = self.peek() == Some(&Token::Minus);
        let names: Vec<String> = match self.peek_at(usize::from(negated)) {
            Some(Token::Set(names)) => names.clone(),
            Some(Token::Word(word))
                if self.peek_at(usize::from(negated) + 1) == Some(&Token::Colon) =>
            {
                vec![word.clone()]
            }
            _ if negated => return None,
            _ => return Some(None),
        };
        self.at += usize::from(negated) + 1;
        self.eat(&Token::Colon)?;
        if names.is_empty() {
            return None;
        }
        let mut subject = false;
        let mut body = false;
        for name in &names {
            match name.as_str() {
                "subject" => subject = true,
                "body" => body = true,
                _ => return None,
            }
        }
        if negated {
            (subject, body) = (!subject, !body);
        }
        Some(Some(match (subject, body) {
            (true, false) => Columns::Subject,
            (false, true) => Columns::Body,
            (true, true) => Columns::Both,
            (false, false) => Columns::Neither,
        }))
    }

    fn near_or_phrase(&mut self, columns: Columns) -> Option<Expr> {
        let near = matches!(self.peek(), Some(Token::Word(w)) if w == "NEAR")
            && self.peek_at(1) == Some(&Token::Open);
        if !near {
            let initial = self.eat(&Token::Caret).is_some();
            return Some(Expr::Phrase(self.phrase(columns, initial)?));
        }
        self.at += 2;
        let mut phrases = Vec::new();
        while !matches!(self.peek(), Some(Token::Close | Token::Comma)) {
            phrases.push(self.phrase(columns, false)?);
        }
        let mut distance = NEAR_DEFAULT;
        if self.eat(&Token::Comma).is_some() {
            distance = match self.peek() {
                Some(Token::Word(n)) => n.parse().ok()?,
                _ => return None,
            };
            self.at += 1;
        }
        self.eat(&Token::Close)?;
        (!phrases.is_empty()).then_some(Expr::Near { phrases, distance })
    }

    /// A word or quoted phrase, with any `+ part` joined on and its prefix star.
    fn phrase(&mut self, columns: Columns, initial: bool) -> Option<Phrase> {
        let mut text = self.phrase_part()?;
        let mut prefix = self.eat(&Token::Star).is_some();
        while !prefix && self.eat(&Token::Plus).is_some() {
            text.push(' ');
            text.push_str(&self.phrase_part()?);
            prefix = self.eat(&Token::Star).is_some();
        }
        Some(Phrase { text, prefix, initial, columns })
    }

    fn phrase_part(&mut self) -> Option<String> {
        let text = match self.peek()? {
            Token::Word(word) if !KEYWORDS.contains(&word.as_str()) => word.clone(),
            Token::Quoted(phrase) => phrase.clone(),
            _ => return None,
        };
        self.at += 1;
        Some(text)
    }
}

/// A column filter inside another: FTS5 takes the columns both allow.
fn narrow(outer: Columns, inner: Columns) -> Columns {
    match (outer, inner) {
        (Columns::Both, inner) => inner,
        (outer, Columns::Both) => outer,
        (outer, inner) if outer == inner => outer,
        _ => Columns::Neither,
    }
}

fn one_or(mut terms: Vec<Expr>, many: fn(Vec<Expr>) -> Expr) -> Expr {
    if terms.len() == 1 { terms.remove(0) } else { many(terms) }
}

#[cfg(test)]
mod tests;
