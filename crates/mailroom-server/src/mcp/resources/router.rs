//! Matching `resource://` URIs against RFC 6570 templates of the form
//! `resource://a/{var}/b{?q1,q2}`: literal segments must be equal, `{var}` takes one
//! non-empty segment, and query parameters fill the rest (first value wins, blank values
//! dropped, percent-decoding applied). Splitting at the first `?` also covers clients that
//! leave the query glued to the last path segment.

use std::collections::HashMap;

/// A parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    /// Path segments after `resource://`; `Some(name)` for a variable.
    segments: Vec<Segment>,
    /// Whether the template has path variables (otherwise it also names a fixed URI).
    pub has_path_vars: bool,
    /// The URI without the query part (the fixed URI of parameterless resources).
    pub base: String,
}

#[derive(Debug, Clone)]
enum Segment {
    Literal(String),
    Var(String),
}

const SCHEME: &str = "resource://";

impl Template {
    /// Parses a template (a constant of the resource table; `resources::tests` checks them).
    pub fn parse(template: &str) -> Self {
        let base = template.split("{?").next().unwrap_or(template).to_string();
        let path = base.strip_prefix(SCHEME).unwrap_or(&base);
        let segments: Vec<Segment> = path
            .split('/')
            .map(|s| match s.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                Some(var) => Segment::Var(var.to_string()),
                None => Segment::Literal(s.to_string()),
            })
            .collect();
        let has_path_vars = segments.iter().any(|s| matches!(s, Segment::Var(_)));
        Self { segments, has_path_vars, base }
    }

    /// The parameters of `uri` if it matches.
    pub fn matches(&self, uri: &str) -> Option<Params> {
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let path = path.strip_prefix(SCHEME)?;
        let parts: Vec<&str> = path.split('/').collect();
        if parts.len() != self.segments.len() {
            return None;
        }
        let mut values = HashMap::new();
        for (segment, part) in self.segments.iter().zip(&parts) {
            match segment {
                Segment::Literal(text) if text == part => {}
                Segment::Literal(_) => return None,
                Segment::Var(_) if part.is_empty() => return None,
                Segment::Var(name) => {
                    values.insert(name.clone(), percent_decode(part));
                }
            }
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (key, value) = (percent_decode(key), percent_decode(value));
            if !value.trim().is_empty() && !values.contains_key(&key) {
                values.insert(key, value);
            }
        }
        Some(Params { values })
    }
}

/// Path variables and query parameters of a matched URI.
#[derive(Debug, Clone, Default)]
pub struct Params {
    values: HashMap<String, String>,
}

impl Params {
    /// A parameter's text.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A parameter's text, owned.
    pub fn string(&self, name: &str) -> Option<String> {
        self.get(name).map(str::to_string)
    }

    /// A boolean parameter: `1,true,t,yes,y,on` / `0,false,no,n,off`, anything else (or
    /// absence) gives `default` (docs/compat/resources.md §1).
    pub fn bool(&self, name: &str, default: bool) -> bool {
        match self.get(name).map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("1" | "true" | "t" | "yes" | "y" | "on") => true,
            Some("0" | "false" | "no" | "n" | "off") => false,
            _ => default,
        }
    }

    /// An integer parameter; absent or unreadable gives `None`.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.get(name)?.trim().parse().ok()
    }
}

/// Decodes `+` as a space (form encoding), then `%XX` escapes; an invalid escape stays as
/// written and invalid UTF-8 becomes U+FFFD, as Python's `parse_qs` reads a query.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " ")).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_variables_and_query_parameters() {
        let t = Template::parse("resource://inbox/{agent}{?project,limit}");
        assert!(t.has_path_vars);
        let p = t
            .matches("resource://inbox/Green%20Castle?project=%2Fabs%2Fp&limit=5&limit=9&x=")
            .expect("matches");
        assert_eq!(p.get("agent"), Some("Green Castle"));
        assert_eq!(p.get("project"), Some("/abs/p"));
        assert_eq!(p.int("limit"), Some(5), "the first value wins");
        assert_eq!(p.get("x"), None, "blank values are dropped");
        assert!(t.matches("resource://inbox/").is_none());
        assert!(t.matches("resource://inbox/a/b").is_none());
        assert!(t.matches("resource://outbox/a").is_none());
    }

    #[test]
    fn fixed_resources_match_with_or_without_a_query() {
        let t = Template::parse("resource://tooling/metrics{?format}");
        assert!(!t.has_path_vars);
        assert_eq!(t.base, "resource://tooling/metrics");
        assert!(t.matches("resource://tooling/metrics").is_some());
        let p = t.matches("resource://tooling/metrics?format=toon").expect("matches");
        assert_eq!(p.get("format"), Some("toon"));
    }

    #[test]
    fn booleans_and_bad_escapes() {
        let t = Template::parse("resource://x/{id}{?a,b,c}");
        let p = t.matches("resource://x/100%?a=YES&b=off&c=maybe").expect("matches");
        assert_eq!(p.get("id"), Some("100%"));
        assert!(p.bool("a", false));
        assert!(!p.bool("b", true));
        assert!(p.bool("c", true));
        assert!(!p.bool("missing", false));
        let p = t.matches("resource://x/a+b%2B%+f%4?a=%FF%zz").expect("matches");
        assert_eq!(p.get("id"), Some("a b+% f%4"), "`+` first, then only %XX with hex digits");
        assert_eq!(p.get("a"), Some("\u{fffd}%zz"));
    }
}
