//! TOON (Token-Oriented Object Notation) encoding of JSON values, the compact format the
//! reference offers with `format=toon` (docs/compat/tools.md §1.3).
//!
//! Follows the encoding rules of the TOON specification (github.com/toon-format/spec): two-space
//! indentation, `key: value` fields, inline primitive arrays `key[N]: a,b`, tabular arrays of
//! uniform flat objects `key[N]{a,b}:` with one row per line, list form (`- item`) otherwise,
//! comma delimiter, strings quoted only when a decoder could misread them, canonical numbers.
//! This is the stable core shared by the v3 specification and the 4.x drafts' default
//! ("auto") layout. Not covered (optional or draft forms): key folding, tab/pipe delimiters,
//! the columnar and keyed / nested-field-group tabular forms (such arrays use the list form,
//! still valid TOON), and the drafts' options that drop nulls or empty arrays. Empty arrays
//! are written `key[0]:`, the v3 form (some 4.x drafts write `key: []`). Object keys come
//! out in `serde_json::Map` order (sorted), which the encoder is free to choose.

use serde_json::{Map, Number, Value};

/// The encoder's name, reported in `meta.encoder` of TOON envelopes.
pub const ENCODER_NAME: &str = "mailroom-toon";

const INDENT: &str = "  ";
const DELIMITER: char = ',';

/// Encodes a JSON value as a TOON document (no trailing newline).
pub fn encode(value: &Value) -> String {
    let mut lines = Vec::new();
    match value {
        Value::Object(map) => write_fields(&mut lines, 0, map),
        Value::Array(items) => write_array(&mut lines, 0, None, items),
        primitive => lines.push(primitive_text(primitive)),
    }
    lines.join("\n")
}

fn indent(depth: usize) -> String {
    INDENT.repeat(depth)
}

fn write_fields(lines: &mut Vec<String>, depth: usize, map: &Map<String, Value>) {
    for (key, value) in map {
        write_field(lines, depth, key, value);
    }
}

fn write_field(lines: &mut Vec<String>, depth: usize, key: &str, value: &Value) {
    match value {
        Value::Object(map) => {
            lines.push(format!("{}{}:", indent(depth), key_text(key)));
            write_fields(lines, depth + 1, map);
        }
        Value::Array(items) => write_array(lines, depth, Some(key), items),
        primitive => {
            lines.push(format!("{}{}: {}", indent(depth), key_text(key), primitive_text(primitive)))
        }
    }
}

fn write_array(lines: &mut Vec<String>, depth: usize, key: Option<&str>, items: &[Value]) {
    let head =
        format!("{}{}[{}]", indent(depth), key.map(key_text).unwrap_or_default(), items.len());
    if items.is_empty() {
        lines.push(format!("{head}:"));
    } else if items.iter().all(is_primitive) {
        let row: Vec<String> = items.iter().map(primitive_text).collect();
        lines.push(format!("{head}: {}", row.join(&DELIMITER.to_string())));
    } else if let Some(fields) = tabular_fields(items) {
        let header: Vec<String> = fields.iter().map(|f| key_text(f)).collect();
        lines.push(format!("{head}{{{}}}:", header.join(&DELIMITER.to_string())));
        for item in items {
            let row: Vec<String> =
                fields.iter().map(|f| primitive_text(&item[f.as_str()])).collect();
            lines.push(format!("{}{}", indent(depth + 1), row.join(&DELIMITER.to_string())));
        }
    } else {
        lines.push(format!("{head}:"));
        for item in items {
            write_list_item(lines, depth + 1, item);
        }
    }
}

/// One `- ` item. Objects and arrays are written one level deeper and their first line's
/// indentation is replaced by the hyphen, which puts the first field on the hyphen line and
/// the rest (and any nested content) exactly where the specification wants them.
fn write_list_item(lines: &mut Vec<String>, depth: usize, item: &Value) {
    let mut nested = Vec::new();
    match item {
        Value::Object(map) if map.is_empty() => {
            lines.push(format!("{}-", indent(depth)));
            return;
        }
        Value::Object(map) => write_fields(&mut nested, depth + 1, map),
        Value::Array(items) => write_array(&mut nested, depth + 1, None, items),
        primitive => {
            lines.push(format!("{}- {}", indent(depth), primitive_text(primitive)));
            return;
        }
    }
    if let Some(first) = nested.first_mut() {
        let inner = indent(depth + 1);
        let rest = first.strip_prefix(inner.as_str()).unwrap_or(first).to_string();
        *first = format!("{}- {rest}", indent(depth));
    }
    lines.extend(nested);
}

/// The header fields when every item is a non-empty object with the same keys and only
/// primitive values (the tabular form), in the first object's key order.
fn tabular_fields(items: &[Value]) -> Option<Vec<String>> {
    let first = items.first()?.as_object()?;
    if first.is_empty() {
        return None;
    }
    let uniform = items.iter().all(|item| {
        item.as_object().is_some_and(|map| {
            map.len() == first.len() && first.keys().all(|k| map.get(k).is_some_and(is_primitive))
        })
    });
    uniform.then(|| first.keys().cloned().collect())
}

fn is_primitive(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

fn primitive_text(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_text(n),
        Value::String(s) if needs_quotes(s) => quoted(s),
        Value::String(s) => s.clone(),
        // Containers never reach here (callers check), but stay lossless if they do.
        other => quoted(&other.to_string()),
    }
}

/// Canonical decimal form: no exponent, no `-0`, shortest round-trip digits.
fn number_text(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    match n.as_f64() {
        Some(0.0) => "0".to_string(),
        // Rust's `Display` for f64 is the shortest round-trip form and never uses an exponent.
        Some(f) => f.to_string(),
        None => n.to_string(),
    }
}

/// Whether an unquoted string could be misread: as a literal or number, as structure (colon,
/// brackets, braces, quotes, delimiter), as a list marker or comment, or lose whitespace.
fn needs_quotes(s: &str) -> bool {
    s.is_empty()
        || s.trim() != s
        || matches!(s, "true" | "false" | "null")
        || looks_numeric(s)
        || s.starts_with('-')
        || s.starts_with('#')
        || s.starts_with('\u{feff}')
        || s.chars().any(|c| {
            matches!(c, ':' | '"' | '\\' | '[' | ']' | '{' | '}') || c == DELIMITER || c < ' '
        })
}

/// `[+-]?digits(.digits)?(e[+-]?digits)?`: what a decoder would read as a number.
fn looks_numeric(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => digits(int) && digits(frac),
        None => digits(mantissa),
    };
    mantissa_ok && exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)))
}

fn key_text(key: &str) -> String {
    let mut chars = key.chars();
    let bare = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if bare { key.to_string() } else { quoted(key) }
}

fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Examples from the specification's encode fixtures (tests/fixtures/encode/*.json), with
    /// object keys written in sorted order because `serde_json::Map` sorts them.
    fn check(input: Value, expected: &str) {
        assert_eq!(encode(&input), expected, "input {input}");
    }

    #[test]
    fn primitives_and_quoting() {
        check(json!("hello"), "hello");
        check(json!("Ada_99"), "Ada_99");
        check(json!(""), "\"\"");
        check(json!("true"), "\"true\"");
        check(json!("null"), "\"null\"");
        check(json!("42"), "\"42\"");
        check(json!("3.14"), "\"3.14\"");
        check(json!("1e-6"), "\"1e-6\"");
        check(json!("05"), "\"05\"");
        check(json!("+1"), "\"+1\"");
        check(json!("Users\\path"), "\"Users\\\\path\"");
        check(json!("a-b #c"), "a-b #c");
        check(json!("- item"), "\"- item\"");
        check(json!("#hello"), "\"#hello\"");
        check(json!("a[test]"), "\"a[test]\"");
        check(json!("{key}"), "\"{key}\"");
        check(json!("café"), "café");
        check(json!("hello 👋 world"), "hello 👋 world");
        check(json!("a,🚀"), "\"a,🚀\"");
        check(json!(42), "42");
        check(json!(2.5), "2.5");
        check(json!(-7), "-7");
        check(json!(-0.0), "0");
        check(json!(1e6), "1000000");
        check(json!(0.000001), "0.000001");
        check(json!(9007199254740991_i64), "9007199254740991");
        check(json!(true), "true");
        check(json!(null), "null");
        check(
            json!(["line1\nline2", "tab\there", "return\rcarriage"]),
            "[3]: \"line1\\nline2\",\"tab\\there\",\"return\\rcarriage\"",
        );
        check(
            json!([0.3333333333333333, 0.30000000000000004, -0.000001]),
            "[3]: 0.3333333333333333,0.30000000000000004,-0.000001",
        );
        check(json!({"a": ".5", "b": "NaN", "c": "True"}), "a: .5\nb: NaN\nc: True");
        check(json!({"marker": "-", "note": "- item"}), "marker: \"-\"\nnote: \"- item\"");
        check(json!({"items": ["-", "-x"]}), "items[2]: \"-\",\"-x\"");
    }

    #[test]
    fn objects_and_keys() {
        check(
            json!({"active": true, "id": 123, "name": "Ada"}),
            "active: true\nid: 123\nname: Ada",
        );
        check(json!({"id": 123, "value": null}), "id: 123\nvalue: null");
        check(json!({}), "");
        check(json!({"note": "a:b"}), "note: \"a:b\"");
        check(json!({"note": "a,b"}), "note: \"a,b\"");
        check(json!({"text": "say \"hello\""}), "text: \"say \\\"hello\\\"\"");
        check(json!({"text": " padded "}), "text: \" padded \"");
        check(json!({"v": "-7.5"}), "v: \"-7.5\"");
        check(json!({"order:id": 7}), "\"order:id\": 7");
        check(json!({"full name": "Ada"}), "\"full name\": Ada");
        check(json!({"-lead": 1}), "\"-lead\": 1");
        check(json!({"123": "x"}), "\"123\": x");
        check(json!({"": 1}), "\"\": 1");
        check(json!({"café": 1}), "\"café\": 1");
        check(json!({"x\u{1f}y": 2}), "\"x\\u001fy\": 2");
        check(json!({"a": {"b": {"c": "deep"}}}), "a:\n  b:\n    c: deep");
        check(json!({"user": {}}), "user:");
        check(json!({"": {"a": 1}}), "\"\":\n  a: 1");
    }

    #[test]
    fn arrays_tabular_and_list_forms() {
        check(
            json!({"rows": [{"__proto__": "a", "x": 1}, {"__proto__": "b", "x": 2}]}),
            "rows[2]{__proto__,x}:\n  a,1\n  b,2",
        );
        check(
            json!({"items": [{"a": 1, "b": 2, "c": 3}, {"c": 30, "b": 20, "a": 10}]}),
            "items[2]{a,b,c}:\n  1,2,3\n  10,20,30",
        );
        check(
            json!({"items": [{"id": 1, "name": "First"}, {"extra": true, "id": 2, "name": "Second"}]}),
            "items[2]:\n  - id: 1\n    name: First\n  - extra: true\n    id: 2\n    name: Second",
        );
        check(
            json!({"items": [{"id": 1, "nested": {"x": 1}}, {"id": 2, "nested": {"y": 2}}]}),
            "items[2]:\n  - id: 1\n    nested:\n      x: 1\n  - id: 2\n    nested:\n      y: 2",
        );
        check(
            json!({"items": [{"name": "Ada", "nums": [1, 2, 3]}]}),
            "items[1]:\n  - name: Ada\n    nums[3]: 1,2,3",
        );
        check(
            json!({"items": [{"matrix": [[1, 2], [3, 4]], "name": "grid"}]}),
            "items[1]:\n  - matrix[2]:\n      - [2]: 1,2\n      - [2]: 3,4\n    name: grid",
        );
        check(
            json!({"items": [{"status": "active", "users": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob"}]}]}),
            "items[1]:\n  - status: active\n    users[2]{id,name}:\n      1,Ada\n      2,Bob",
        );
        check(
            json!({"items": [{"users": [{"id": 1}, {"id": 2}]}]}),
            "items[1]:\n  - users[2]{id}:\n      1\n      2",
        );
        check(
            json!({"items": [{"users": [{"id": 1, "name": "Ada"}, {"id": 2}]}]}),
            "items[1]:\n  - users[2]:\n      - id: 1\n        name: Ada\n      - id: 2",
        );
        check(json!({"items": ["first", "second", {}]}), "items[3]:\n  - first\n  - second\n  -");
        check(json!({"items": [{}, {}]}), "items[2]:\n  -\n  -");
        check(json!({"items": [{"a": {}, "b": 1}]}), "items[1]:\n  - a:\n    b: 1");
        check(json!({"id": 1, "name": "Alice", "tags": []}), "id: 1\nname: Alice\ntags[0]:");
        check(
            json!([{"id": 1, "name": "Alice"}, {"id": 2, "name": "Bob"}]),
            "[2]{id,name}:\n  1,Alice\n  2,Bob",
        );
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            "(?s).{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("(?s).{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Any result encodes without a panic (keys and strings with delimiters, quotes,
        /// newlines and control characters included, nested to depth 4).
        #[test]
        fn any_value_encodes(value in any_json()) {
            let _ = encode(&value);
        }
    }
}
