//! JSON laid out byte for byte as the reference's Python writes it: `json.dumps` with
//! `sort_keys=True` and the default `ensure_ascii`, pretty (`indent=2`, message front matter,
//! profiles, manifests) or on one line (audit logs). Matching the bytes keeps the two servers'
//! archives interchangeable.

use std::io;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use serde_json::ser::{CharEscape, Formatter, PrettyFormatter};

/// Renders `value` exactly as Python's `json.dumps(value, indent=2, sort_keys=True)` does.
///
/// That is the reference's only JSON layout on disk (front matter, profiles, reservations), so
/// matching it byte for byte keeps the two servers' archives interchangeable. It means: two-space
/// indent, `": "` between key and value, keys in code-point order, `[]` and `{}` for empty
/// containers, every character outside printable ASCII escaped as lowercase `\uXXXX` (astral
/// characters as UTF-16 surrogate pairs), `/` left alone, and floats in Python's `repr` form.
pub fn python_json(value: &Value) -> String {
    render(value, PythonFormatter { pretty: Some(PrettyFormatter::with_indent(b"  ")) })
}

/// Renders `value` as Python's `json.dumps(value, sort_keys=True)`: one line, `", "` between
/// items and `": "` between key and value, the same escapes and floats as [`python_json`].
pub fn python_json_line(value: &Value) -> String {
    render(value, PythonFormatter { pretty: None })
}

fn render(value: &Value, formatter: PythonFormatter) -> String {
    let mut buffer = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut buffer, formatter);
    // Serialising a `Value` into memory has no failure mode: every key is a string, every number
    // is finite and a `Vec` accepts every write. The check documents that rather than hiding it.
    let written = SortedKeys(value).serialize(&mut serializer);
    debug_assert!(written.is_ok(), "serialising a JSON value into memory failed: {written:?}");
    // The formatter escapes everything outside ASCII, so the bytes are always valid UTF-8.
    String::from_utf8(buffer)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Serialises a `Value` with object keys sorted.
///
/// `serde_json::Map` is sorted already unless some crate in the build enables serde_json's
/// `preserve_order` feature, which Cargo would then turn on for us too and silently reorder
/// every file we write. Sorting here makes the output independent of that feature.
struct SortedKeys<'a>(&'a Value);

impl Serialize for SortedKeys<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Array(items) => {
                let mut sequence = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    sequence.serialize_element(&SortedKeys(item))?;
                }
                sequence.end()
            }
            Value::Object(entries) => {
                let mut sorted: Vec<(&String, &Value)> = entries.iter().collect();
                sorted.sort_unstable_by(|left, right| left.0.cmp(right.0));
                let mut map = serializer.serialize_map(Some(sorted.len()))?;
                for (key, item) in sorted {
                    map.serialize_entry(key, &SortedKeys(item))?;
                }
                map.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

/// Python's layouts with Python's string escapes and float spelling.
///
/// With `pretty`, the layout methods are delegated to [`PrettyFormatter`], whose output for
/// `indent=2` already matches Python's (including `[]`/`{}` for empty containers). Without it,
/// the one-line layout puts a space after every `,` and `:`, as Python's default separators do.
struct PythonFormatter {
    pretty: Option<PrettyFormatter<'static>>,
}

impl Formatter for PythonFormatter {
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.begin_array(writer),
            None => writer.write_all(b"["),
        }
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.end_array(writer),
            None => writer.write_all(b"]"),
        }
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.begin_array_value(writer, first),
            None if first => Ok(()),
            None => writer.write_all(b", "),
        }
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.end_array_value(writer),
            None => Ok(()),
        }
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.begin_object(writer),
            None => writer.write_all(b"{"),
        }
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.end_object(writer),
            None => writer.write_all(b"}"),
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.begin_object_key(writer, first),
            None if first => Ok(()),
            None => writer.write_all(b", "),
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.begin_object_value(writer),
            None => writer.write_all(b": "),
        }
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        match &mut self.pretty {
            Some(pretty) => pretty.end_object_value(writer),
            None => Ok(()),
        }
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(python_float_repr(value).as_bytes())
    }

    /// Escapes what serde_json leaves alone but Python's `ensure_ascii` does not: DEL and
    /// every non-ASCII character.
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut unwritten_from = 0;
        for (index, character) in fragment.char_indices() {
            if is_printable_ascii(character) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[unwritten_from..index])?;
            write_unicode_escape(writer, character)?;
            unwritten_from = index + character.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[unwritten_from..])
    }

    /// serde_json's escapes are Python's (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, lowercase
    /// `\u00XX`), except that Python never escapes `/`.
    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        match char_escape {
            CharEscape::Solidus => writer.write_all(b"/"),
            other => PrettyFormatter::new().write_char_escape(writer, other),
        }
    }
}

/// Whether Python's `ensure_ascii` writes `character` as is (space through `~`).
fn is_printable_ascii(character: char) -> bool {
    (' '..='~').contains(&character)
}

/// Writes `character` as one `\uXXXX` per UTF-16 code unit, in lowercase hex like Python.
fn write_unicode_escape<W: ?Sized + io::Write>(writer: &mut W, character: char) -> io::Result<()> {
    let mut units = [0_u16; 2];
    for unit in character.encode_utf16(&mut units) {
        write!(writer, "\\u{unit:04x}")?;
    }
    Ok(())
}

/// Python's `repr(float)`: the shortest digits that round-trip, in positional notation when the
/// decimal exponent is in `-4..16` (always with a fractional part, `100.0`) and otherwise in
/// scientific notation with a signed, at least two-digit exponent (`1e+16`, `2.5e-05`).
fn python_float_repr(value: f64) -> String {
    let scientific = shortest_scientific(value);
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return scientific;
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(unsigned) => ("-", unsigned),
        None => ("", mantissa),
    };
    if !(-4..16).contains(&exponent) {
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{exponent_sign}{:02}", exponent.unsigned_abs());
    }
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    format!("{sign}{}", positional_digits(&digits, exponent))
}

/// `value` in Rust's scientific notation (`d.ddde-x`) with the digits Python's `repr` picks: the
/// fewest that read back as `value` and, among those, the closest to it.
///
/// Rust's `{:e}` finds the fewest digits but, when two candidates are equally close, may end on
/// the other one (`959579170482118.3` where Python prints `...118.2`). Re-rounding to that many
/// digits with `{:.N e}`, which rounds the exact value half to even, settles such ties Python's way.
fn shortest_scientific(value: f64) -> String {
    let shortest = format!("{value:e}");
    let mantissa = shortest.split('e').next().unwrap_or_default();
    let significant_digits = mantissa.chars().filter(char::is_ascii_digit).count();
    format!("{value:.precision$e}", precision = significant_digits.saturating_sub(1))
}

/// Places the decimal point in `digits` (the significand `d.ddd` without its point) for a
/// decimal exponent in `-4..16`, padding with zeros as needed.
fn positional_digits(digits: &str, exponent: i32) -> String {
    let Ok(integer_len) = usize::try_from(exponent).map(|exponent| exponent + 1) else {
        let leading_zeros = usize::try_from(exponent.unsigned_abs() - 1).unwrap_or(0);
        return format!("0.{}{digits}", "0".repeat(leading_zeros));
    };
    match (digits.get(..integer_len), digits.get(integer_len..)) {
        (Some(integer), Some(fraction)) if !fraction.is_empty() => format!("{integer}.{fraction}"),
        _ => format!("{digits}{}.0", "0".repeat(integer_len.saturating_sub(digits.len()))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn python_json_matches_json_dumps() {
        // Expected strings are Python 3's json.dumps(value, indent=2, sort_keys=True).
        let cases = [
            (json!(null), "null"),
            (json!(true), "true"),
            (json!(-7), "-7"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(1.5), "1.5"),
            (json!(100.0), "100.0"),
            (json!(-0.0), "-0.0"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!(1e16), "1e+16"),
            (json!(123456789012345680.0), "1.2345678901234568e+17"),
            // Exactly halfway between two shortest candidates; Python rounds to the even one.
            (json!(959_579_170_482_118.0 + 0.25), "959579170482118.2"),
            (json!("é"), r#""\u00e9""#),
            (json!("😀"), r#""\ud83d\ude00""#),
            (json!("a/b"), r#""a/b""#),
            (json!("\"\\\n\r\t\u{8}\u{c}"), r#""\"\\\n\r\t\b\f""#),
            (json!("\u{0}\u{1f}\u{7f}\u{ffff}"), r#""\u0000\u001f\u007f\uffff""#),
            (json!([]), "[]"),
            (json!({}), "{}"),
            (json!([1, [], {}]), "[\n  1,\n  [],\n  {}\n]"),
            (
                json!({"b": {"z": [1.5, "x"], "a": null}, "a": [], "é": 1, "Z": 2}),
                "{\n  \"Z\": 2,\n  \"a\": [],\n  \"b\": {\n    \"a\": null,\n    \"z\": [\n      1.5,\n      \
                 \"x\"\n    ]\n  },\n  \"\\u00e9\": 1\n}",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(python_json(&value), expected, "{value}");
        }
    }

    #[test]
    fn the_one_line_form_uses_pythons_default_separators() {
        // Expected: Python 3's json.dumps(value, sort_keys=True).
        let value = json!({"b": 1, "a": "é", "c": null, "d": [1, 2.5], "e": "😀", "f": {}});
        let expected =
            r#"{"a": "\u00e9", "b": 1, "c": null, "d": [1, 2.5], "e": "\ud83d\ude00", "f": {}}"#;
        assert_eq!(python_json_line(&value), expected);
        assert_eq!(python_json_line(&json!([])), "[]");
    }
}
