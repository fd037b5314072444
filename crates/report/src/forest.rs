//! The report's first screen as pictures: each side's differences against the baseline
//! with their 95% intervals, one axis per measure (a forest plot), and each side's worth
//! as a bar with its interval. Every number drawn comes from `summary.json`.

use crate::svg::{escape, round_axis, style, tick_label, ticks};
use std::fmt::Write;

/// Narrow enough that two sit side by side on a laptop's page at their own text size.
const W: f64 = 680.0;
/// The metric's name ends here, the side's name at `SIDE_END`, the plot starts after.
const METRIC_END: f64 = 188.0;
const SIDE_END: f64 = 238.0;
const PLOT_START: f64 = 248.0;
/// The numbers to the right of the plot.
const TEXT_WIDTH: f64 = 206.0;
const TOP: f64 = 46.0;
const BOTTOM: f64 = 40.0;
const LINE: f64 = 13.0;

/// One row: a difference (or a worth) with its interval.
pub struct IntervalRow {
    /// The metric's name, written on the first row of its group only.
    pub group: String,
    pub side: String,
    /// The side's colour, as every chart of the report gives it.
    pub colour: usize,
    pub point: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// Filled when significant; hollow when no difference is shown.
    pub significant: bool,
    /// The numbers in words, one line each, right of the plot.
    pub text: Vec<String>,
}

/// How a row's value is drawn.
#[derive(Clone, Copy, PartialEq)]
pub enum Mark {
    /// A point and its interval: a difference.
    Point,
    /// A bar from zero and its interval: a worth.
    Bar,
}

/// Rows of intervals on one horizontal axis, zero marked.
pub fn interval_chart(title: &str, axis: &str, rows: &[IntervalRow], mark: Mark) -> String {
    let heights: Vec<f64> = (rows.iter())
        .map(|r| 8.0 + LINE * r.text.len().max(1) as f64)
        .collect();
    let h = TOP + heights.iter().sum::<f64>() + BOTTOM;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" class="chart forest" role="img" aria-label="{t}"><text x="8" y="18" class="title">{t}</text>"#,
        t = escape(title)
    );
    let legend = match mark {
        Mark::Point => "● significant (95% interval excludes 0, 5% false discovery rate)   ○ no difference shown",
        Mark::Bar => "solid: the 95% interval (the line) excludes 0   pale: it does not",
    };
    let _ = write!(out, r#"<text x="8" y="34" class="legend">{legend}</text>"#);
    let ends = (rows.iter())
        .flat_map(|r| {
            r.point
                .into_iter()
                .chain(r.ci.into_iter().flat_map(|(lo, hi)| [lo, hi]))
        })
        .filter(|v| v.is_finite());
    let (lo, hi) = ends.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi - lo < 1e-12 {
        (-1.0, 1.0)
    } else {
        (lo, hi)
    };
    let (x0, x1, step) = round_axis(lo, hi);
    let plot_end = W - TEXT_WIDTH - 8.0;
    let px = |v: f64| PLOT_START + (v - x0) / (x1 - x0) * (plot_end - PLOT_START);
    let bottom = h - BOTTOM;
    for v in ticks(x0, x1, step) {
        let _ = write!(
            out,
            r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{bottom:.1}" class="grid"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
            bottom + 14.0,
            tick_label(v, step),
            x = px(v),
        );
    }
    let _ = write!(
        out,
        r#"<line x1="{z:.1}" y1="{TOP}" x2="{z:.1}" y2="{bottom:.1}" class="axis"/><text x="{:.1}" y="{:.1}" class="label" text-anchor="middle">{}</text>"#,
        (PLOT_START + plot_end) / 2.0,
        h - 8.0,
        escape(axis),
        z = px(0.0),
    );
    let mut y = TOP;
    for (i, (row, height)) in rows.iter().zip(&heights).enumerate() {
        let mid = y + height / 2.0;
        let (colour, _) = style(row.colour);
        if i % 2 == 1 {
            let _ = write!(
                out,
                r##"<rect x="0" y="{y:.1}" width="{W}" height="{height:.1}" fill="#f5f7fa"/>"##
            );
        }
        let first_of_group = i == 0 || rows[i - 1].group != row.group;
        if first_of_group {
            let _ = write!(
                out,
                r#"<text x="{METRIC_END}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
                mid + 4.0,
                escape(&row.group)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{SIDE_END}" y="{:.1}" class="tick" text-anchor="end" fill="{colour}">{}</text>"#,
            mid + 4.0,
            escape(&row.side)
        );
        if let (Mark::Bar, Some(p)) = (mark, row.point) {
            let (a, b) = (px(0.0).min(px(p)), px(0.0).max(px(p)));
            let opacity = if row.significant { 0.8 } else { 0.3 };
            let _ = write!(
                out,
                r#"<rect x="{a:.1}" y="{:.1}" width="{:.1}" height="9" fill="{colour}" fill-opacity="{opacity}"/>"#,
                mid - 4.5,
                (b - a).max(1.0)
            );
        }
        if let Some((lo, hi)) = row.ci {
            let (a, b) = (px(lo), px(hi));
            let stroke = if mark == Mark::Bar { "#1d2330" } else { colour };
            let _ = write!(
                out,
                r#"<path d="M{a:.1},{t:.1}V{u:.1}M{a:.1},{mid:.1}H{b:.1}M{b:.1},{t:.1}V{u:.1}" stroke="{stroke}" stroke-width="1.5" fill="none"/>"#,
                t = mid - 4.0,
                u = mid + 4.0,
            );
        }
        if let (Mark::Point, Some(p)) = (mark, row.point) {
            let fill = if row.significant { colour } else { "white" };
            let _ = write!(
                out,
                r#"<circle cx="{:.1}" cy="{mid:.1}" r="4.5" fill="{fill}" stroke="{colour}" stroke-width="1.5"/>"#,
                px(p)
            );
        }
        let first_line = mid - LINE * (row.text.len() as f64 - 1.0) / 2.0 + 4.0;
        for (k, line) in row.text.iter().enumerate() {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
                W - TEXT_WIDTH,
                first_line + LINE * k as f64,
                escape(line)
            );
        }
        y += height;
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(side: &str, point: f64, ci: (f64, f64), significant: bool) -> IntervalRow {
        IntervalRow {
            group: "new job after a block, mean ms".into(),
            side: side.into(),
            colour: 0,
            point: Some(point),
            ci: Some(ci),
            significant,
            text: vec![format!("{point:+.1} [{:+.1}, {:+.1}]", ci.0, ci.1)],
        }
    }

    /// -30 [-31, -29] and +0.1 [-0.1, 0.4] on an axis from -40 to 10 (round steps of 10):
    /// zero at 4/5 of the plot, the first point filled at 1/5, the second hollow beside zero.
    #[test]
    fn each_difference_sits_at_its_value_with_its_interval() {
        let svg = interval_chart(
            "Differences against sv1, ms",
            "difference, ms",
            &[
                row("sv2-a", -30.0, (-31.0, -29.0), true),
                row("sv2-c", 0.1, (-0.1, 0.4), false),
            ],
            Mark::Point,
        );
        let plot = W - TEXT_WIDTH - 8.0 - PLOT_START;
        let at = |v: f64| PLOT_START + (v + 40.0) / 50.0 * plot;
        assert!(
            svg.contains(&format!(r#"x1="{:.1}" y1="{TOP}""#, at(0.0))),
            "{svg}"
        );
        assert!(
            svg.contains(&format!(r#"<circle cx="{:.1}""#, at(-30.0))),
            "{svg}"
        );
        assert!(svg.contains(&format!("M{:.1},", at(-31.0))), "{svg}");
        assert!(svg.contains(r#"fill="white""#), "the second is hollow");
        // The group's name once, both sides' names and numbers.
        assert_eq!(svg.matches("new job after a block, mean ms").count(), 1);
        assert!(svg.contains("sv2-c") && svg.contains("+0.1 [-0.1, +0.4]"));
    }

    /// A worth of +2 [1.5, 2.5] on an axis to 3 is a bar from zero to 2 and its interval's line.
    #[test]
    fn a_worth_is_a_bar_from_zero() {
        let svg = interval_chart(
            "Worth",
            "sats a day",
            &[row("sv2-a", 2.0, (1.5, 2.5), true)],
            Mark::Bar,
        );
        let plot = W - TEXT_WIDTH - 8.0 - PLOT_START;
        let at = |v: f64| PLOT_START + v / 3.0 * plot;
        assert!(
            svg.contains(&format!(r#"<rect x="{:.1}""#, at(0.0)))
                && svg.contains(&format!(r#"width="{:.1}" height="9""#, at(2.0) - at(0.0))),
            "{svg}"
        );
        assert!(!svg.contains("<circle"));
    }
}
