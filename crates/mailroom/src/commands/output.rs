//! How the operator's commands print: `--json` for scripts (the server's own JSON, pretty),
//! otherwise a table with a header and left-aligned columns.

use serde_json::Value;

/// A table's columns and rows, printed aligned.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    if rows.is_empty() {
        return "(none)\n".to_string();
    }
    let mut lines = vec![headers.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    lines.extend(rows);
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            lines.iter().map(|l| l.get(c).map_or(0, |cell| cell.chars().count())).max().unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in lines {
        let cells: Vec<String> =
            line.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Prints `value` as JSON when `json`, else what `text` makes of it.
pub fn print(json: bool, value: &Value, text: impl FnOnce(&Value) -> String) {
    if json {
        println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
    } else {
        print!("{}", text(value));
    }
}

/// A JSON field as table text: strings bare, null as "-", anything else as JSON.
pub fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        other => other.to_string(),
    }
}

/// The cells of `keys` in `item`, in that order: a table's row.
pub fn fields(item: &Value, keys: &[&str]) -> Vec<String> {
    keys.iter().map(|key| cell(&item[*key])).collect()
}

/// The items of a JSON array (none when it is not one).
pub fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_an_empty_table_says_so() {
        let out = table(
            &["id", "subject"],
            vec![vec!["7".into(), "hello".into()], vec!["12".into(), "x".into()]],
        );
        assert_eq!(out, "id  subject\n7   hello\n12  x\n");
        assert_eq!(table(&["a"], Vec::new()), "(none)\n");
        assert_eq!(cell(&Value::Null), "-");
    }
}
