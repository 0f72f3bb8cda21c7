//! Whether two projects look like siblings (parts of one product: an API and its web client,
//! a service and its deploy repository), scored 0..1 from what mailroom knows of them: how
//! alike their directory names are, whether they share a parent directory, how many agents
//! work in both, and how alike their README/AGENTS excerpts read. The web UI suggests pairs
//! scoring at least [`SUGGEST_AT`]; a person confirms or dismisses them.

use std::collections::BTreeSet;

use super::similarity::sequence_ratio;

/// Pairs scoring at least this are suggested.
pub const SUGGEST_AT: f64 = 0.5;

/// What a project's score is computed from.
#[derive(Debug, Clone, Default)]
pub struct ProjectFacts {
    /// The project's human key (usually its directory).
    pub human_key: String,
    /// Its agents' names.
    pub agents: Vec<String>,
    /// The opening of its README/AGENTS files, when its directory is readable here.
    pub docs: Option<String>,
}

/// A pair's score and the reasons, one clause each.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub score: f64,
    pub rationale: String,
}

/// Each signal's weight; a signal missing for the pair (no agents, no docs) leaves the others
/// to carry the score.
const NAME_WEIGHT: f64 = 0.4;
const PARENT_WEIGHT: f64 = 0.1;
const AGENTS_WEIGHT: f64 = 0.3;
const DOCS_WEIGHT: f64 = 0.2;

/// Words shorter than this say little about a project.
const MIN_WORD: usize = 4;

pub fn score(a: &ProjectFacts, b: &ProjectFacts) -> Scored {
    let mut total = 0.0;
    let mut weights = 0.0;
    let mut reasons = Vec::new();

    let (name_a, name_b) = (base_name(&a.human_key), base_name(&b.human_key));
    let names = sequence_ratio(&name_a, &name_b);
    total += NAME_WEIGHT * names;
    weights += NAME_WEIGHT;
    reasons.push(format!("names {:.0}% alike ({name_a}, {name_b})", names * 100.0));

    let (parent_a, parent_b) = (parent(&a.human_key), parent(&b.human_key));
    if let (Some(pa), Some(pb)) = (&parent_a, &parent_b) {
        let same = pa == pb;
        total += PARENT_WEIGHT * f64::from(u8::from(same));
        weights += PARENT_WEIGHT;
        if same {
            reasons.push(format!("both in {pa}"));
        }
    }

    let agents_a: BTreeSet<&str> = a.agents.iter().map(String::as_str).collect();
    let agents_b: BTreeSet<&str> = b.agents.iter().map(String::as_str).collect();
    if !agents_a.is_empty() && !agents_b.is_empty() {
        let shared: Vec<&str> = agents_a.intersection(&agents_b).copied().collect();
        let union = agents_a.union(&agents_b).count();
        total += AGENTS_WEIGHT * shared.len() as f64 / union as f64;
        weights += AGENTS_WEIGHT;
        if !shared.is_empty() {
            let listed: Vec<&str> = shared.iter().take(5).copied().collect();
            reasons.push(format!("{} agent(s) in both ({})", shared.len(), listed.join(", ")));
        }
    }

    if let (Some(docs_a), Some(docs_b)) = (&a.docs, &b.docs) {
        let (words_a, words_b) = (words(docs_a), words(docs_b));
        if !words_a.is_empty() && !words_b.is_empty() {
            let shared = words_a.intersection(&words_b).count();
            let alike = shared as f64 / words_a.union(&words_b).count() as f64;
            total += DOCS_WEIGHT * alike;
            weights += DOCS_WEIGHT;
            reasons.push(format!("READMEs {:.0}% alike", alike * 100.0));
        }
    }

    let score = if weights > 0.0 { (total / weights).clamp(0.0, 1.0) } else { 0.0 };
    Scored { score, rationale: reasons.join("; ") }
}

/// The last component of a path-like key, lowercased; the key itself when it has none.
fn base_name(key: &str) -> String {
    let trimmed = key.trim_end_matches('/');
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_lowercase()
}

/// The directory above a path-like key (not `/` itself).
fn parent(key: &str) -> Option<String> {
    let trimmed = key.trim_end_matches('/');
    let (dir, _) = trimmed.rsplit_once('/')?;
    (!dir.is_empty()).then(|| dir.to_string())
}

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= MIN_WORD)
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(key: &str, agents: &[&str], docs: Option<&str>) -> ProjectFacts {
        ProjectFacts {
            human_key: key.into(),
            agents: agents.iter().map(|a| a.to_string()).collect(),
            docs: docs.map(str::to_string),
        }
    }

    #[test]
    fn parts_of_one_product_score_high_and_strangers_low() {
        let api =
            facts("/work/acme-api", &["BlueLake", "GreenCastle"], Some("Acme billing service API"));
        let web = facts(
            "/work/acme-web",
            &["BlueLake", "GreenCastle", "RedStone"],
            Some("Acme billing web client"),
        );
        let other =
            facts("/srv/telescope", &["PinkFox"], Some("Star catalogue reduction pipeline"));
        let pair = score(&api, &web);
        assert!(pair.score >= SUGGEST_AT, "{pair:?}");
        assert!(pair.rationale.contains("2 agent(s) in both (BlueLake, GreenCastle)"), "{pair:?}");
        assert!(pair.rationale.contains("both in /work"), "{pair:?}");
        let strangers = score(&api, &other);
        assert!(strangers.score < SUGGEST_AT, "{strangers:?}");
        assert_eq!(score(&api, &web).score, score(&web, &api).score, "symmetric");
    }

    #[test]
    fn missing_signals_leave_the_others_to_decide() {
        let a = facts("x", &[], None);
        let b = facts("x", &[], None);
        let same = score(&a, &b);
        assert_eq!(same.score, 1.0, "{same:?}");
        let c = facts("completely-different", &[], None);
        assert!(score(&a, &c).score < 0.2);
    }
}
