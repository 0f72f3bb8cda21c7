//! A parsed FTS5 expression run on the index, each word and phrase weighted as FTS5's `bm25()`
//! weighs it, plus the messages the index has not taken in yet (the tail), scored by the same
//! weights here.

use std::collections::{HashMap, HashSet};

use tantivy::collector::{Collector, TopDocs};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery,
    EnableScoring, Occur, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::Field;
use tantivy::schema::IndexRecordOption;
use tantivy::{Score, Term};

use crate::Result;
use crate::fts5::{Columns, Expr};
use crate::index::Snapshot;
use crate::words::{Words, term_text};

/// Where a search looks.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub projects: &'a [u64],
    /// `Some`: only messages one of these agents sent or received.
    pub viewers: Option<&'a [u64]>,
}

/// A message in the scope that the index has not taken in yet.
#[derive(Debug, Clone)]
pub struct TailDoc {
    pub id: u64,
    pub subject: String,
    pub body: String,
}

/// A match and its score (higher is better; FTS5's `bm25()` negated).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: u64,
    pub score: Score,
}

/// The expression with each leaf's words folded and its weight set.
enum Plan {
    /// A word (one) or a phrase (several): the weight Tantivy gives it times `boost`, which
    /// makes FTS5's.
    Leaf {
        words: Vec<String>,
        bm25: Bm25Weight,
        boost: Score,
    },
    And(Vec<Plan>),
    Or(Vec<Plan>),
    Not(Box<Plan>, Box<Plan>),
    /// Matches nothing (a phrase of no words, or in no column).
    Nothing,
}

/// Whether the index ranks `expr` as FTS5 would.
fn supported(expr: &Expr) -> bool {
    match expr {
        Expr::Phrase(p) => {
            !p.prefix && !p.initial && matches!(p.columns, Columns::Both | Columns::Neither)
        }
        Expr::Near { .. } => false,
        Expr::And(terms) | Expr::Or(terms) => terms.iter().all(supported),
        Expr::Not(left, right) => supported(left) && supported(right),
        Expr::Group(inner) => supported(inner),
    }
}

/// FTS5's idf: `ln((N - n + 0.5) / (n + 0.5))`, at least 1e-6 (`fts5Bm25GetData`).
fn fts5_idf(n: u64, total: u64) -> f64 {
    let idf = ((total - n) as f64 + 0.5).ln() - (n as f64 + 0.5).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// Tantivy's idf, which [`Bm25Weight::for_one_term`] builds in (`bm25.rs`).
fn tantivy_idf(n: u64, total: u64) -> f64 {
    (1.0 + ((total - n) as f64 + 0.5) / (n as f64 + 0.5)).ln()
}

/// The factor that turns Tantivy's idf into FTS5's for a word or phrase in `n` of `total`.
fn fts5_boost(n: u64, total: u64) -> Score {
    let n = n.min(total);
    (fts5_idf(n, total) / tantivy_idf(n, total)) as Score
}

impl Snapshot {
    /// The best `limit` matches of `expr` in `scope`, best first (ties by id), the index's
    /// and the tail's together; `None` when the index cannot rank `expr` as FTS5 would. The
    /// caller filters the tail to the scope and keeps its own filter as the authority.
    pub fn search(
        &self,
        expr: &Expr,
        scope: Scope<'_>,
        limit: usize,
        tail: &[TailDoc],
    ) -> Result<Option<Vec<Hit>>> {
        if !supported(expr) {
            return Ok(None);
        }
        let mut words = Words::new();
        let tail: Vec<(u64, [Vec<String>; 2])> = tail
            .iter()
            .map(|doc| (doc.id, [words.split(&doc.subject), words.split(&doc.body)]))
            .collect();
        let mut stats = Stats::of(self, scope, &tail)?;
        let plan = self.plan(expr, scope, &tail, &mut stats, &mut words)?;
        let mut hits = Vec::new();
        let mut seen = HashSet::new();
        if stats.indexed > 0 && limit > 0 {
            // Each segment's best, merged here: Tantivy's own merge breaks ties between
            // segments at random, FTS5 by id (a segment's ties come lowest id first).
            let top = TopDocs::with_limit(limit).order_by_score();
            for project in scope.projects {
                let query = self.query(&plan, *project, scope.viewers);
                let scoring =
                    EnableScoring::enabled_from_statistics_provider(&stats, &self.searcher);
                let weight = query.weight(scoring)?;
                for (ord, segment) in self.searcher.segment_readers().iter().enumerate() {
                    let ord = u32::try_from(ord).unwrap_or(u32::MAX);
                    let best = top.collect_segment(&*weight, ord, segment)?;
                    for (score, address) in top.merge_fruits(vec![best])? {
                        let id = self.id_of(address)?;
                        if seen.insert(id) {
                            hits.push(Hit { id, score });
                        }
                    }
                }
            }
        }
        for (id, columns) in tail.iter().filter(|(id, _)| !seen.contains(id)) {
            let length =
                FieldNormReader::fieldnorm_to_id((columns[0].len() + columns[1].len()) as u32);
            if let Some(score) = score_tail(&plan, columns, length) {
                hits.push(Hit { id: *id, score });
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        hits.truncate(limit);
        Ok(Some(hits))
    }

    fn terms(&self, words: &[String], project: u64) -> Vec<Term> {
        words
            .iter()
            .map(|w| Term::from_field_text(self.fields.words, &term_text(project, w)))
            .collect()
    }

    /// The expression's leaves folded and weighted; records each word's frequency in the scope
    /// in `stats`, where Tantivy's weights read it.
    fn plan(
        &self,
        expr: &Expr,
        scope: Scope<'_>,
        tail: &[(u64, [Vec<String>; 2])],
        stats: &mut Stats,
        words: &mut Words,
    ) -> Result<Plan> {
        let plans = |terms: &[Expr], stats: &mut Stats, words: &mut Words| {
            terms
                .iter()
                .map(|t| self.plan(t, scope, tail, stats, words))
                .collect::<Result<Vec<_>>>()
        };
        // FTS5's `n`: the messages holding the word or phrase, indexed or in the tail.
        let doc_freq = |words: &[String]| -> Result<u64> {
            let in_tail = tail.iter().filter(|(_, c)| c.iter().any(|c| occurrences(c, words) > 0));
            Ok(self.doc_freq(words, scope.projects)? + in_tail.count() as u64)
        };
        Ok(match expr {
            Expr::Phrase(phrase) if phrase.columns == Columns::Neither => Plan::Nothing,
            Expr::Phrase(phrase) => {
                let folded = words.split(&phrase.text);
                if folded.is_empty() {
                    return Ok(Plan::Nothing);
                }
                // Each word's `n`, where Tantivy's weights read it (under each project's term).
                let mut word_n = Vec::with_capacity(folded.len());
                for word in &folded {
                    let one = std::slice::from_ref(word);
                    let n = doc_freq(one)?;
                    for project in scope.projects {
                        stats.doc_freqs.insert(self.terms(one, *project).remove(0), n);
                    }
                    word_n.push(n.min(stats.total));
                }
                let first = scope.projects.first().copied().unwrap_or_default();
                let mut bm25 = Bm25Weight::for_terms(&*stats, &self.terms(&folded, first))?;
                // Tantivy weighs a phrase by the sum of its words' idfs; FTS5 by the phrase's
                // own, from the messages holding it.
                let boost = match word_n.as_slice() {
                    [n] => fts5_boost(*n, stats.total),
                    _ => {
                        let n = doc_freq(&folded)?.min(stats.total);
                        let summed: f64 = word_n.iter().map(|n| tantivy_idf(*n, stats.total)).sum();
                        (fts5_idf(n, stats.total) / summed) as Score
                    }
                };
                bm25 = bm25.boost_by(boost);
                Plan::Leaf { words: folded, bm25, boost }
            }
            Expr::Near { .. } => Plan::Nothing,
            Expr::And(terms) => Plan::And(plans(terms, stats, words)?),
            Expr::Or(terms) => Plan::Or(plans(terms, stats, words)?),
            Expr::Not(left, right) => Plan::Not(
                Box::new(self.plan(left, scope, tail, stats, words)?),
                Box::new(self.plan(right, scope, tail, stats, words)?),
            ),
            Expr::Group(inner) => self.plan(inner, scope, tail, stats, words)?,
        })
    }

    /// In how many of the scope's indexed messages the word or phrase occurs (FTS5's `n`). A
    /// phrase is counted by running it.
    fn doc_freq(&self, words: &[String], projects: &[u64]) -> Result<u64> {
        let mut n = 0;
        for project in projects {
            let terms = self.terms(words, *project);
            n += match terms.as_slice() {
                [term] => self.searcher.doc_freq(term)?,
                _ => PhraseQuery::new(terms).count(&self.searcher)? as u64,
            };
        }
        Ok(n)
    }

    /// The plan as a Tantivy query over one project's terms.
    fn query(&self, plan: &Plan, project: u64, viewers: Option<&[u64]>) -> Box<dyn Query> {
        let query = self.project_query(plan, project);
        let Some(viewers) = viewers else {
            // One boosted term alone is not pruned; as the one clause of a union it is.
            return match plan {
                Plan::Leaf { words, .. } if words.len() == 1 => Box::new(
                    BooleanQuery::with_minimum_required_clauses(vec![(Occur::Should, query)], 0),
                ),
                _ => query,
            };
        };
        let who: Vec<(Occur, Box<dyn Query>)> = viewers
            .iter()
            .map(|agent| {
                let term = Term::from_field_u64(self.fields.who, *agent);
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::Basic));
                (Occur::Should, query)
            })
            .collect();
        let filter = ConstScoreQuery::new(Box::new(BooleanQuery::new(who)), 0.0);
        Box::new(BooleanQuery::new(vec![(Occur::Must, query), (Occur::Must, Box::new(filter))]))
    }

    fn project_query(&self, plan: &Plan, project: u64) -> Box<dyn Query> {
        let clauses = |terms: &[Plan], occur: Occur| -> Vec<(Occur, Box<dyn Query>)> {
            terms.iter().map(|t| (occur, self.project_query(t, project))).collect()
        };
        match plan {
            Plan::Leaf { words, boost, .. } => {
                let mut terms = self.terms(words, project);
                let query: Box<dyn Query> = if terms.len() == 1 {
                    Box::new(TermQuery::new(terms.remove(0), IndexRecordOption::WithFreqs))
                } else {
                    Box::new(PhraseQuery::new(terms))
                };
                Box::new(BoostQuery::new(query, *boost))
            }
            Plan::And(terms) => Box::new(BooleanQuery::new(clauses(terms, Occur::Must))),
            Plan::Or(terms) => Box::new(BooleanQuery::new(clauses(terms, Occur::Should))),
            Plan::Not(left, right) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, self.project_query(left, project)),
                (Occur::MustNot, self.project_query(right, project)),
            ])),
            Plan::Nothing => Box::new(EmptyQuery),
        }
    }
}

/// The numbers FTS5's idf and length normalisation take, given to Tantivy's weights.
struct Stats {
    /// Messages in the scope, indexed or in the tail (FTS5's `N`).
    total: u64,
    /// Of which indexed.
    indexed: u64,
    /// Words in `total` messages at the average length over the index and tail (FTS5's
    /// `avgdl` is over every message).
    tokens: u64,
    /// Each project's term for a query word, with the word's frequency in the whole scope.
    doc_freqs: HashMap<Term, u64>,
}

impl Stats {
    fn of(snapshot: &Snapshot, scope: Scope<'_>, tail: &[(u64, [Vec<String>; 2])]) -> Result<Self> {
        let searcher = &snapshot.searcher;
        let mut indexed = 0;
        for project in scope.projects {
            indexed +=
                searcher.doc_freq(&Term::from_field_u64(snapshot.fields.project, *project))?;
        }
        let tail_tokens: usize = tail.iter().map(|(_, c)| c[0].len() + c[1].len()).sum();
        let all_tokens = Bm25StatisticsProvider::total_num_tokens(searcher, snapshot.fields.words)?
            + tail_tokens as u64;
        let all_docs = Bm25StatisticsProvider::total_num_docs(searcher)? + tail.len() as u64;
        let total = (indexed + tail.len() as u64).max(1);
        let tokens = if all_docs == 0 {
            total
        } else {
            (all_tokens as f64 * total as f64 / all_docs as f64).round().max(1.0) as u64
        };
        Ok(Self { total, indexed, tokens, doc_freqs: HashMap::new() })
    }
}

impl Bm25StatisticsProvider for Stats {
    fn total_num_tokens(&self, _: Field) -> tantivy::Result<u64> {
        Ok(self.tokens)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.total)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.doc_freqs.get(term).copied().unwrap_or_default().min(self.total))
    }
}

/// A tail message's score for the plan, as the index would score it; `None`: no match.
/// `columns` are the subject's and the body's words; `length` the message's length id.
fn score_tail(plan: &Plan, columns: &[Vec<String>; 2], length: u8) -> Option<Score> {
    match plan {
        Plan::Leaf { words, bm25, .. } => {
            let frequency: usize = columns.iter().map(|column| occurrences(column, words)).sum();
            (frequency > 0).then(|| bm25.score(length, frequency as u32))
        }
        Plan::And(terms) => {
            terms.iter().map(|t| score_tail(t, columns, length)).sum::<Option<Score>>()
        }
        Plan::Or(terms) => {
            let scores: Vec<Score> =
                terms.iter().filter_map(|t| score_tail(t, columns, length)).collect();
            (!scores.is_empty()).then(|| scores.iter().sum())
        }
        Plan::Not(left, right) => score_tail(right, columns, length)
            .is_none()
            .then(|| score_tail(left, columns, length))
            .flatten(),
        Plan::Nothing => None,
    }
}

/// How often `phrase` occurs in `column` (overlapping occurrences count, as in FTS5).
fn occurrences(column: &[String], phrase: &[String]) -> usize {
    if phrase.is_empty() || column.len() < phrase.len() {
        return 0;
    }
    column.windows(phrase.len()).filter(|window| *window == phrase).count()
}

#[cfg(test)]
mod tests;
