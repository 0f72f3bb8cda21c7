//! Message bodies as HTML: Markdown rendered by pulldown-cmark, then sanitised by ammonia with
//! the reference's allow-list (docs/compat/http.md §7): formatting, lists, tables, code,
//! headings, links (http, https, mailto) and images (http, https, and `data:` only for raster
//! images). Whatever else a body smuggles in (scripts, event handlers, styles, frames, SVG,
//! `javascript:` URLs) is dropped; raw HTML in Markdown is sanitised like the rest.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

use pulldown_cmark::{Event, Options, Parser, TagEnd, html};

const TAGS: &[&str] = &[
    "a",
    "abbr",
    "acronym",
    "b",
    "blockquote",
    "br",
    "code",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "li",
    "ol",
    "p",
    "pre",
    "span",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
];

/// `data:` URLs an image may use: raster formats a browser cannot run script from.
const DATA_IMAGE_PREFIXES: &[&str] =
    &["data:image/png;", "data:image/jpeg;", "data:image/gif;", "data:image/webp;"];

/// Whether a `data:` URL is an image of a raster format (as a browser reads the URL).
pub fn is_data_image(url: &str) -> bool {
    let url = normalised(url);
    DATA_IMAGE_PREFIXES.iter().any(|p| url.starts_with(p))
}

static SANITIZER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut builder = ammonia::Builder::empty();
    builder
        .tags(TAGS.iter().copied().collect())
        .tag_attributes(
            [
                ("a", ["href", "title"].into_iter().collect::<HashSet<_>>()),
                ("img", ["src", "alt", "title", "width", "height"].into_iter().collect()),
                ("abbr", ["title"].into_iter().collect()),
                ("acronym", ["title"].into_iter().collect()),
                ("th", ["align"].into_iter().collect()),
                ("td", ["align"].into_iter().collect()),
            ]
            .into_iter()
            .collect(),
        )
        .url_schemes(["http", "https", "mailto", "data"].into_iter().collect())
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        .attribute_filter(|element, attribute, value| match (element, attribute) {
            ("a", "href") if is_data_url(value) => None,
            ("img", "src") if is_data_url(value) => is_data_image(value).then_some(value.into()),
            _ => Some(Cow::Borrowed(value)),
        });
    builder
});

/// A URL as a browser reads its scheme: without the tabs, newlines and other control
/// characters and spaces it skips, lower-cased.
fn normalised(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_ascii_control() && !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn is_data_url(value: &str) -> bool {
    normalised(value).starts_with("data:")
}

/// A Markdown body as sanitised HTML.
pub fn render(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut unsafe_html = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut unsafe_html, Parser::new_ext(markdown, options));
    SANITIZER.clean(&unsafe_html).to_string()
}

/// Whether a tag ends a block, after which an excerpt needs a space.
fn ends_block(end: &TagEnd) -> bool {
    matches!(
        end,
        TagEnd::Paragraph
            | TagEnd::Heading(_)
            | TagEnd::BlockQuote(_)
            | TagEnd::CodeBlock
            | TagEnd::Item
            | TagEnd::TableCell
            | TagEnd::HtmlBlock
    )
}

/// The text a reader sees in a Markdown snippet (an excerpt), its markup dropped: emphasis,
/// code ticks, link targets, HTML tags.
pub fn plain_text(markdown: &str) -> String {
    let mut text = String::with_capacity(markdown.len());
    for event in Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            Event::SoftBreak | Event::HardBreak if !text.ends_with(' ') => text.push(' '),
            Event::End(end) if ends_block(&end) && !text.ends_with(' ') => {
                text.push(' ');
            }
            _ => {}
        }
    }
    text.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_read_as_text() {
        assert_eq!(
            plain_text("We split **checkout** into `three` steps."),
            "We split checkout into three steps."
        );
        assert_eq!(plain_text("[a link](https://x.example) and <b>bold</b>"), "a link and bold");
        assert_eq!(plain_text("<script>alert(1)</script>"), "");
    }

    fn check(markdown: &str, absent: &[&str], present: &[&str]) {
        let html = render(markdown);
        let lower = html.to_ascii_lowercase();
        for needle in absent {
            assert!(!lower.contains(needle), "{markdown:?} → {html} keeps {needle}");
        }
        for needle in present {
            assert!(html.contains(needle), "{markdown:?} → {html} lacks {needle}");
        }
    }

    #[test]
    fn markdown_keeps_its_formatting() {
        check("**bold** and `code`", &[], &["<strong>bold</strong>", "<code>code</code>"]);
        check("| a | b |\n|---|---|\n| 1 | 2 |", &[], &["<table>", "<td>1</td>"]);
        check("[site](https://example.com)", &[], &["href=\"https://example.com\"", "noopener"]);
        check("![x](data:image/webp;base64,AAAA)", &[], &["src=\"data:image/webp;base64,AAAA\""]);
    }

    #[test]
    fn hostile_markup_is_dropped() {
        check("<script>alert(1)</script>", &["<script"], &[]);
        check("<img src=x onerror=alert(1)>", &["onerror"], &[]);
        check("[x](javascript:alert(1))", &["javascript:"], &[]);
        check("[x](JaVaScRiPt:alert(1))", &["javascript:"], &[]);
        check("<a href=\"data:text/html,<script>alert(1)</script>\">x</a>", &["data:"], &[]);
        check("![x](data:image/svg+xml;base64,PHN2Zz4=)", &["data:"], &[]);
        check("<svg onload=alert(1)><circle/></svg>", &["<svg", "onload"], &[]);
        check("<math><mtext><script>alert(1)</script></mtext></math>", &["<math", "<script"], &[]);
        check("<p style=\"background:url(javascript:alert(1))\">x</p>", &["style", "url("], &[]);
        check("<iframe src=\"https://example.com\"></iframe>", &["<iframe"], &[]);
        check("<a href=\"/relative\">x</a>", &["href"], &[]);
    }
}
