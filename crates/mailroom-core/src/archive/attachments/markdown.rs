//! The image references of a Markdown body, found as the reference's regex finds them.

use std::ops::Range;

/// Byte ranges of the text between the parentheses of every `![alt](...)` in `body`.
///
/// This mirrors the reference's regex `!\[[^\]]*\]\([^)]+\)` exactly (so an alt text may
/// span lines and the target ends at the first `)`): matching the same references keeps
/// bodies rewritten identically by both servers.
pub(super) fn find_image_refs(body: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = body[from..].find("![") {
        let start = from + offset;
        match match_image_ref(body.as_bytes(), start) {
            Some(inner) => {
                from = inner.end + 1;
                found.push(inner);
            }
            None => from = start + 1,
        }
    }
    found
}

/// Matches one reference whose `![` is at `start`; every delimiter is ASCII, so the
/// returned byte offsets are always char boundaries.
fn match_image_ref(bytes: &[u8], start: usize) -> Option<Range<usize>> {
    let alt_start = start + 2;
    let alt_end = alt_start + bytes[alt_start..].iter().position(|&b| b == b']')?;
    if bytes.get(alt_end + 1) != Some(&b'(') {
        return None;
    }
    let inner_start = alt_end + 2;
    let inner_end = inner_start + bytes[inner_start..].iter().position(|&b| b == b')')?;
    (inner_end > inner_start).then_some(inner_start..inner_end)
}

/// The parts of a reference's parenthesised text; `leading + target + rest` is the whole.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct RefParts<'a> {
    pub(super) leading: &'a str,
    pub(super) target: &'a str,
    pub(super) rest: &'a str,
}

/// Splits `  path "title"  ` into its surrounding whitespace, the target and an optional
/// CommonMark title (`"..."` or `'...'` after whitespace). The reference has no notion of
/// titles, so it never converts a titled reference; splitting the title off lets those
/// images be converted too, and the title is kept verbatim. A target containing spaces but
/// no title is taken whole, because file names may contain spaces.
pub(super) fn split_ref(inner: &str) -> RefParts<'_> {
    let core = inner.trim_start();
    let leading = &inner[..inner.len() - core.len()];
    let trimmed = core.trim_end();
    let target_len = title_start(trimmed)
        .map(|start| trimmed[..start].trim_end().len())
        .unwrap_or(trimmed.len());
    RefParts { leading, target: &core[..target_len], rest: &core[target_len..] }
}

/// Byte offset of a title's opening quote in `text` (which has no surrounding whitespace).
fn title_start(text: &str) -> Option<usize> {
    let quote = text.chars().last().filter(|c| *c == '"' || *c == '\'')?;
    let closing = text.len() - quote.len_utf8();
    text.char_indices().map(|(index, _)| index).find(|&index| {
        index < closing
            && text[index..].starts_with(quote)
            && text[..index].ends_with(char::is_whitespace)
            && !text[..index].trim().is_empty()
    })
}
