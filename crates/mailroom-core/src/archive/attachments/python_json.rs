//! JSON laid out as the reference's Python writes it, so manifests and audit logs are
//! byte-identical across the two servers.
//!
//! Integration note: `archive::format::python_json` already renders the pretty form (it also
//! escapes DEL and spells floats like Python); use it instead of [`python_json_pretty`] and
//! keep only the one-line form, ideally next to it in `format.rs`.

use serde_json::Value;

/// `json.dumps(v, indent=2, sort_keys=True)`, byte for byte.
pub(super) fn python_json_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_python_json(value, Some(0), &mut out);
    out
}

/// `json.dumps(v, sort_keys=True)`: one line with `", "` and `": "` separators.
pub(super) fn python_json_line(value: &Value) -> String {
    let mut out = String::new();
    write_python_json(value, None, &mut out);
    out
}

/// Writes `value` as Python's `json` module does with `sort_keys=True` and `ensure_ascii`.
/// Keys are sorted here rather than trusting serde_json's map order, which becomes insertion
/// order if any crate in the build enables its `preserve_order` feature.
fn write_python_json(value: &Value, indent: Option<usize>, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|left, right| left.0.cmp(right.0));
            let items = entries.into_iter().map(|(key, item)| (Some(key.as_str()), item));
            write_python_container(('{', '}'), items, indent, out);
        }
        Value::Array(items) => {
            write_python_container(('[', ']'), items.iter().map(|item| (None, item)), indent, out);
        }
        Value::String(text) => out.push_str(&escape_non_ascii(&value_text(text))),
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_python_container<'v>(
    (open, close): (char, char),
    items: impl ExactSizeIterator<Item = (Option<&'v str>, &'v Value)>,
    indent: Option<usize>,
    out: &mut String,
) {
    out.push(open);
    let empty = items.len() == 0;
    let inner = indent.map(|level| level + 1);
    for (index, (key, item)) in items.enumerate() {
        out.push_str(match (index, indent) {
            (0, None) => "",
            (_, None) => ", ",
            (0, Some(_)) => "\n",
            (_, Some(_)) => ",\n",
        });
        if let Some(level) = inner {
            out.push_str(&"  ".repeat(level));
        }
        if let Some(key) = key {
            out.push_str(&escape_non_ascii(&value_text(key)));
            out.push_str(": ");
        }
        write_python_json(item, inner, out);
    }
    if let (Some(level), false) = (indent, empty) {
        out.push('\n');
        out.push_str(&"  ".repeat(level));
    }
    out.push(close);
}

/// A JSON string literal with serde_json's escaping, which matches Python's for ASCII.
fn value_text(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// Python's `ensure_ascii`: every non-ASCII character becomes `\uXXXX` (UTF-16 units).
fn escape_non_ascii(json_text: &str) -> String {
    let mut escaped = String::with_capacity(json_text.len());
    let mut units = [0u16; 2];
    for character in json_text.chars() {
        if character.is_ascii() {
            escaped.push(character);
        } else {
            for unit in character.encode_utf16(&mut units) {
                escaped.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    escaped
}
