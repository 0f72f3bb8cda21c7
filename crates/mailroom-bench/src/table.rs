//! The lab's tables, for the terminal (aligned columns) and for the Markdown pages `--out`
//! writes: one function builds a table's cells, and [`render`] only lays them out, so the two
//! formats differ in their separators and nothing else.

/// How a table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Right-aligned columns, each as wide as its widest cell.
    Text,
    /// A Markdown table.
    Markdown,
}

/// `rows` under `headers`, one cell per header in each row, one line per row.
pub(crate) fn render(layout: Layout, headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut lines: Vec<Vec<String>> = Vec::with_capacity(rows.len() + 1);
    lines.push(headers.iter().map(|h| h.to_string()).collect());
    lines.extend(rows);
    let (open, between, close) = match layout {
        Layout::Text => {
            let width = |column: usize| {
                lines.iter().map(|line| line[column].chars().count()).max().unwrap_or(0)
            };
            let widths: Vec<usize> = (0..headers.len()).map(width).collect();
            for line in &mut lines {
                for (cell, width) in line.iter_mut().zip(&widths) {
                    *cell = format!("{cell:>width$}");
                }
            }
            ("", "  ", "")
        }
        Layout::Markdown => ("| ", " | ", " |"),
    };
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        out.push_str(open);
        out.push_str(&line.join(between));
        out.push_str(close);
        out.push('\n');
        if index == 0 && layout == Layout::Markdown {
            out.push('|');
            out.push_str(&"---|".repeat(headers.len()));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Vec<String>> {
        vec![vec!["1".into(), "—".into()], vec!["200".into(), "1.50×".into()]]
    }

    #[test]
    fn text_aligns_right_and_markdown_adds_the_rule() {
        assert_eq!(
            render(Layout::Text, &["n", "ratio"], rows()),
            "  n  ratio\n  1      —\n200  1.50×\n"
        );
        assert_eq!(
            render(Layout::Markdown, &["n", "ratio"], rows()),
            "| n | ratio |\n|---|---|\n| 1 | — |\n| 200 | 1.50× |\n"
        );
    }
}
