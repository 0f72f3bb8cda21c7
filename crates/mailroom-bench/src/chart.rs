//! Minimal SVG line charts for `--out`: throughput over time for a run, latency against
//! concurrency for a ramp. Hand-written SVG: no plotting dependency for two charts.

use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const MARGIN_LEFT: f64 = 70.0;
const MARGIN_RIGHT: f64 = 130.0;
const MARGIN_Y: f64 = 40.0;
const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/// One named line of (x, y) points.
pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// Renders a line chart with both axes starting at zero (so ratios read honestly).
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series<'_>]) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (max_x, max_y) = all.fold((0.0_f64, 0.0_f64), |(mx, my), &(x, y)| (mx.max(x), my.max(y)));
    let (max_x, max_y) = (nice_ceiling(max_x), nice_ceiling(max_y));
    let plot_width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let plot_height = HEIGHT - 2.0 * MARGIN_Y;
    let px = |x: f64| MARGIN_LEFT + x / max_x * plot_width;
    let py = |y: f64| HEIGHT - MARGIN_Y - y / max_y * plot_height;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="20" font-size="14">{}</text>"#,
        MARGIN_LEFT,
        escape(title)
    );
    for tick in 0..=4 {
        let fraction = f64::from(tick) / 4.0;
        let (y, x) = (py(max_y * fraction), px(max_x * fraction));
        let _ = writeln!(
            svg,
            r##"<line x1="{MARGIN_LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            WIDTH - MARGIN_RIGHT,
            MARGIN_LEFT - 6.0,
            y + 4.0,
            label(max_y * fraction)
        );
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            HEIGHT - MARGIN_Y + 16.0,
            label(max_x * fraction)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        MARGIN_LEFT + plot_width / 2.0,
        HEIGHT - 6.0,
        escape(x_label)
    );
    let _ = writeln!(
        svg,
        r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        MARGIN_Y + plot_height / 2.0,
        MARGIN_Y + plot_height / 2.0,
        escape(y_label)
    );
    for (index, line) in series.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let points: Vec<String> =
            line.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        let legend_y = MARGIN_Y + 16.0 * index as f64;
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{legend_y:.1}" fill="{colour}">{}</text>"#,
            WIDTH - MARGIN_RIGHT + 10.0,
            escape(line.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// The smallest 1, 2 or 5 × 10ⁿ at or above `value` (1 for an empty chart).
fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|c| *c >= value).unwrap_or(value)
}

fn label(value: f64) -> String {
    if value >= 100.0 || value == value.round() {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_round_up_to_readable_values() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(7.3), 10.0);
        assert_eq!(nice_ceiling(180.0), 200.0);
        assert_eq!(nice_ceiling(4100.0), 5000.0);
        assert_eq!(nice_ceiling(1.0), 1.0);
    }

    #[test]
    fn a_chart_has_one_polyline_per_series_inside_the_plot() {
        let series = [
            Series { name: "p50 <ms>", points: vec![(10.0, 1.0), (100.0, 4.0)] },
            Series { name: "p99", points: vec![(10.0, 3.0), (100.0, 9.0)] },
        ];
        let svg = line_chart("latency", "connections", "ms", &series);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("p50 &lt;ms&gt;"));
        // (100, 9) on axes up to 100 and 10: the right edge, 90 % of the way up.
        let right = WIDTH - MARGIN_RIGHT;
        let y = HEIGHT - MARGIN_Y - 0.9 * (HEIGHT - 2.0 * MARGIN_Y);
        assert!(svg.contains(&format!("{right:.1},{y:.1}")), "{svg}");
    }
}
