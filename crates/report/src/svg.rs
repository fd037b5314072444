//! Charts as inline SVG: no script, no network, text that stays selectable in the PDF.

use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 45.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf",
];
/// After the colours, the dashes: 21 series before a (colour, dash) pair repeats.
const DASHES: &[&str] = &["none", "7 3", "2 3"];
/// The legend's line height.
const LEGEND_STEP: f64 = 18.0;

/// Series `i`'s colour and dash.
pub(crate) fn style(i: usize) -> (&'static str, &'static str) {
    (
        COLORS[i % COLORS.len()],
        DASHES[(i / COLORS.len()) % DASHES.len()],
    )
}

/// Series with at most this many points get a marker on each.
const MARKED_POINTS: usize = 24;

/// A CDF of fewer points is drawn as its points, said to be too few for a curve.
const MIN_CDF_POINTS: usize = 5;

/// One named line.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart of `series`; `step` draws each series as a staircase.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    step: bool,
) -> String {
    let layers = Layers {
        series,
        ..Layers::default()
    };
    chart(title, x_label, y_label, layers, step, false)
}

/// A place on the x axis to mark (a break-even), with its 95% interval shaded.
pub struct Marker {
    pub label: String,
    pub x: f64,
    pub ci: Option<(f64, f64)>,
}

/// A series' 95% interval as `(x, low, high)` points.
pub type Band = Vec<(f64, f64, f64)>;

/// What a chart draws: its lines, each one's band (`bands[i]` series i's, empty for
/// none), and markers across it.
#[derive(Default, Clone, Copy)]
pub struct Layers<'a> {
    pub series: &'a [Series],
    pub bands: &'a [Band],
    pub markers: &'a [Marker],
}

/// A line chart with each line's 95% interval as a shaded band, and vertical markers.
pub fn band_chart(title: &str, x_label: &str, y_label: &str, layers: Layers) -> String {
    chart(title, x_label, y_label, layers, false, false)
}

/// Empirical CDFs (from [`cdf`]) as staircases; a series of fewer than
/// [`MIN_CDF_POINTS`] is drawn as its points and said to be too few.
pub fn cdf_chart(title: &str, x_label: &str, series: &[Series]) -> String {
    let layers = Layers {
        series,
        ..Layers::default()
    };
    chart(title, x_label, "share of events", layers, true, true)
}

fn chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    layers: Layers,
    step: bool,
    cdf: bool,
) -> String {
    let Layers {
        series,
        bands,
        markers,
    } = layers;
    // Tall enough for every series' legend entry.
    let h = H.max(TOP + LEGEND_STEP * series.len() as f64 + 10.0);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" class="chart" role="img" aria-label="{t}"><text x="8" y="18" class="title">{t}</text>"#,
        t = escape(title)
    );
    let Some(frame) = Frame::of(series, bands, h) else {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" class="empty">no samples</text></svg>"#,
            W / 2.0 - 40.0,
            h / 2.0
        );
        return out;
    };
    frame.axes(&mut out, x_label, y_label);
    // Bands under the lines: the upper edge left to right, the lower back.
    for (i, band) in bands.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
        let (color, _) = style(i);
        let upper = band.iter().map(|&(x, _, hi)| (x, hi));
        let lower = band.iter().rev().map(|&(x, lo, _)| (x, lo));
        let points: Vec<String> = (upper.chain(lower))
            .map(|(x, y)| format!("{:.1},{:.1}", frame.px(x), frame.py(y)))
            .collect();
        let _ = write!(
            out,
            r#"<polygon points="{}" fill="{color}" fill-opacity="0.15" stroke="none"/>"#,
            points.join(" ")
        );
    }
    for (i, s) in series.iter().enumerate() {
        frame.series(&mut out, i, s, step, cdf);
    }
    // Each marker's label a line lower than the last: two sides' break-evens often
    // fall together.
    for (i, m) in markers.iter().filter(|m| frame.holds_x(m.x)).enumerate() {
        frame.marker(&mut out, m, i);
    }
    out.push_str("</svg>");
    out
}

/// Where a chart's values land: its axes, each (from, to, step), and its height.
struct Frame {
    x: (f64, f64, f64),
    y: (f64, f64, f64),
    h: f64,
}

impl Frame {
    /// The axes that hold every point and band edge, widened to round steps; `None`
    /// without a finite point.
    fn of(series: &[Series], bands: &[Band], h: f64) -> Option<Frame> {
        let all = series.iter().flat_map(|s| s.points.iter().copied());
        let band_ends = (bands.iter().flatten()).flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in all
            .chain(band_ends)
            .filter(|p| p.0.is_finite() && p.1.is_finite())
        {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            return None;
        }
        if y0 > 0.0 && y0 < (y1 - y0) * 2.0 {
            y0 = 0.0; // start at zero unless that would flatten the lines
        }
        if (x1 - x0).abs() < f64::EPSILON {
            x1 = x0 + 1.0;
        }
        if (y1 - y0).abs() < f64::EPSILON {
            y1 = y0 + y0.abs().max(1.0) * 0.1;
            y0 -= (y1 - y0).max(1e-9);
        }
        // Round ticks: each axis widened to whole steps of 1, 2, 2.5 or 5 times a power of
        // ten (a run's first second at 0.577 s starts the axis at 0).
        Some(Frame {
            x: round_axis(x0, x1),
            y: round_axis(y0, y1),
            h,
        })
    }

    fn holds_x(&self, x: f64) -> bool {
        x.is_finite() && x >= self.x.0 && x <= self.x.1
    }

    /// A dashed vertical line at the marker, its interval shaded, its label at the top
    /// (the `i`th label's line).
    fn marker(&self, out: &mut String, m: &Marker, i: usize) {
        let (top, bottom) = (TOP, self.h - BOTTOM);
        if let Some((lo, hi)) = m.ci {
            let (lo, hi) = (lo.max(self.x.0), hi.min(self.x.1));
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="dimgray" fill-opacity="0.15"/>"#,
                self.px(lo),
                (self.px(hi) - self.px(lo)).max(1.0),
                bottom - top
            );
        }
        let x = self.px(m.x);
        let _ = write!(
            out,
            r#"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="dimgray" stroke-width="1.2" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
            x + 4.0,
            top + 12.0 + 14.0 * i as f64,
            escape(&m.label)
        );
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.x.0) / (self.x.1 - self.x.0) * (W - LEFT - RIGHT)
    }

    fn py(&self, y: f64) -> f64 {
        self.h - BOTTOM - (y - self.y.0) / (self.y.1 - self.y.0) * (self.h - TOP - BOTTOM)
    }

    /// Axes, ticks, grid lines and labels.
    fn axes(&self, out: &mut String, x_label: &str, y_label: &str) {
        let h = self.h;
        let _ = write!(
            out,
            r#"<line x1="{LEFT}" y1="{b}" x2="{r}" y2="{b}" class="axis"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{b}" class="axis"/>"#,
            b = h - BOTTOM,
            r = W - RIGHT
        );
        let (x0, x1, x_step) = self.x;
        for xv in ticks(x0, x1, x_step) {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
                self.px(xv),
                h - BOTTOM + 16.0,
                tick_label(xv, x_step),
            );
        }
        let (y0, y1, y_step) = self.y;
        for yv in ticks(y0, y1, y_step) {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" class="grid"/>"#,
                LEFT - 6.0,
                self.py(yv) + 4.0,
                tick_label(yv, y_step),
                self.py(yv),
                W - RIGHT,
                self.py(yv)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" class="label" text-anchor="middle">{}</text><text x="14" y="{:.1}" class="label" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
            LEFT + (W - LEFT - RIGHT) / 2.0,
            h - 8.0,
            escape(x_label),
            TOP + (h - TOP - BOTTOM) / 2.0,
            TOP + (h - TOP - BOTTOM) / 2.0,
            escape(y_label)
        );
    }

    /// Series `i`: its line (a staircase with `step`), its points where they are few, and
    /// its legend entry.
    fn series(&self, out: &mut String, i: usize, s: &Series, step: bool, cdf: bool) {
        let (color, dash) = style(i);
        let mut path = String::new();
        let mut last: Option<(f64, f64)> = None;
        for &(x, y) in &s.points {
            let (px, py) = (self.px(x), self.py(y));
            match last {
                None => {
                    let _ = write!(path, "M{px:.1},{py:.1}");
                }
                Some((_, ly)) if step => {
                    let _ = write!(path, " L{px:.1},{:.1} L{px:.1},{py:.1}", self.py(ly));
                }
                Some(_) => {
                    let _ = write!(path, " L{px:.1},{py:.1}");
                }
            }
            last = Some((x, y));
        }
        // A few measured points (one per miner count, say) are marked, so a single point
        // still shows; a CDF of a handful is only its points.
        let sparse = cdf && s.points.len() < MIN_CDF_POINTS;
        if sparse {
            path.clear();
        }
        if (!step && s.points.len() <= MARKED_POINTS) || sparse {
            for &(x, y) in &s.points {
                let _ = write!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                    self.px(x),
                    self.py(y)
                );
            }
        }
        // A path only where there is a line to draw: every path drawn has points.
        if !path.is_empty() {
            let _ = write!(
                out,
                r#"<path d="{path}" fill="none" stroke="{color}" stroke-width="1.8" stroke-dasharray="{dash}"/>"#
            );
        }
        let y = TOP + 13.5 + LEGEND_STEP * i as f64;
        let _ = write!(
            out,
            r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}" class="legend">{}</text>"#,
            W - RIGHT + 8.0,
            W - RIGHT + 24.0,
            W - RIGHT + 28.0,
            y + 2.5,
            escape(&if s.points.is_empty() {
                format!("{} (no data)", s.name)
            } else if sparse {
                format!("{} (n = {}, too few)", s.name, s.points.len())
            } else {
                s.name.clone()
            })
        );
    }
}

/// `[lo, hi]` widened to whole steps, the step 1, 2, 2.5 or 5 times a power of ten that
/// makes about four of them.
pub(crate) fn round_axis(lo: f64, hi: f64) -> (f64, f64, f64) {
    let raw = (hi - lo) / 4.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * power);
    ((lo / step).floor() * step, (hi / step).ceil() * step, step)
}

/// A tick's label: as many decimals as its axis's step has, the same on every tick (0.000,
/// 0.005, 0.010; 0, 20, 40); from ten thousand, in k, M or G.
pub(crate) fn tick_label(v: f64, step: f64) -> String {
    if v.abs() >= 1e4 {
        return number(v);
    }
    let places = (0..6)
        .find(|&d| {
            let scaled = step * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(6) as usize;
    format!("{v:.places$}")
}

/// The ticks from `lo` to `hi` a `step` apart (both ends whole steps).
pub(crate) fn ticks(lo: f64, hi: f64, step: f64) -> impl Iterator<Item = f64> {
    let n = ((hi - lo) / step).round() as i64;
    (0..=n).map(move |i| lo + i as f64 * step)
}

/// The empirical CDF of `samples`: (value, share of samples at or below it).
pub fn cdf(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// A compact human number for axis ticks.
/// `v` with `places` decimals and its whole part in groups of three: 312,557,572.
pub fn grouped(v: f64, places: usize) -> String {
    let text = format!("{:.places$}", v.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(fraction);
    }
    if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
}

/// [`grouped`] with a sign on a positive number: +1,234.
pub fn signed(v: f64, places: usize) -> String {
    let text = grouped(v, places);
    if v > 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        format!("+{text}")
    } else {
        text
    }
}

/// An estimate as a reader takes it: `1.234 (1.100 to 1.400)`, or with too few units
/// `1.234 (too few: n = 3)`; `-` without a value.
pub fn estimate(e: &analysis::stats::Estimate, places: usize) -> String {
    match (e.point, e.ci) {
        (Some(p), Some((lo, hi))) => format!(
            "{} ({} to {})",
            grouped(p, places),
            grouped(lo, places),
            grouped(hi, places)
        ),
        (Some(p), None) => format!("{} (too few: n = {})", grouped(p, places), e.units),
        _ => "-".into(),
    }
}

/// A share in percent with its interval: `0.210% (0.070 to 0.600)`; `-` without one.
pub fn percent(p: Option<f64>, ci: Option<(f64, f64)>, places: usize) -> String {
    match (p, ci) {
        (Some(p), Some((lo, hi))) => format!("{p:.places$}% ({lo:.places$} to {hi:.places$})"),
        (Some(p), None) => format!("{p:.places$}%"),
        _ => "-".into(),
    }
}

pub fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A break-even at x = 50 [45, 55] on an axis from 0 to 100 is a dashed line at its
    /// place with its interval shaded and its label; one past the axis is not drawn.
    #[test]
    fn a_marker_is_a_dashed_line_over_its_shaded_interval() {
        let series = [Series {
            name: "sv2-a".into(),
            points: vec![(0.0, 10.0), (100.0, 110.0)],
        }];
        let marker = |x: f64| Marker {
            label: format!("sv2-a break-even {x:.0} ms"),
            x,
            ci: Some((x - 5.0, x + 5.0)),
        };
        let drawn = |markers: &[Marker]| {
            let layers = Layers {
                series: &series,
                markers,
                ..Layers::default()
            };
            band_chart("t", "lag", "ms", layers)
        };
        let svg = drawn(&[marker(50.0)]);
        assert!(svg.contains("sv2-a break-even 50 ms"), "{svg}");
        assert!(svg.contains(r#"stroke-dasharray="4 3""#));
        assert_eq!(svg.matches("<rect").count(), 1);
        // Two at one place: the second label a line under the first.
        let two = drawn(&[marker(50.0), marker(50.0)]);
        assert!(two.contains(r#"y="42.0" class="tick">sv2-a break-even 50 ms"#));
        assert!(two.contains(r#"y="56.0" class="tick">sv2-a break-even 50 ms"#));
        let outside = drawn(&[marker(400.0)]);
        assert!(!outside.contains("break-even") && !outside.contains("<rect"));
    }

    #[test]
    fn charts_draw_every_series_or_say_empty() {
        let svg = cdf_chart(
            "t",
            "x",
            &[
                Series {
                    name: "a".into(),
                    points: (0..6).map(|i| (f64::from(i), f64::from(i) / 6.0)).collect(),
                },
                Series {
                    name: "b<&>".into(),
                    points: cdf(&[3.0, 1.0, 2.0]),
                },
            ],
        );
        // Three points of a CDF: markers, no curve through them, and no empty path.
        assert_eq!(svg.matches("<path").count(), 1);
        assert!(svg.contains("b&lt;&amp;&gt; (n = 3, too few)"));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(!svg.contains(r#"d="""#));
        assert!(line_chart("t", "x", "y", &[], false).contains("no samples"));
        let one = Series {
            name: "one".into(),
            points: vec![(225.0, 26.8)],
        };
        assert_eq!(
            line_chart("t", "x", "y", &[one], false)
                .matches("<circle")
                .count(),
            1
        );
        assert_eq!(
            cdf(&[3.0, 1.0, 2.0]),
            vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]
        );
    }

    #[test]
    fn every_series_has_its_own_look_and_a_legend_inside_the_chart() {
        // 24 series, as the report's CPU chart has roles: one with no points.
        let series: Vec<Series> = (0..24)
            .map(|i| Series {
                name: format!("role-{i}"),
                points: if i == 5 {
                    vec![]
                } else {
                    (0..30).map(|t| (f64::from(t), f64::from(i * t))).collect()
                },
            })
            .collect();
        let svg = line_chart("t", "x", "y", &series, false);
        let height: f64 = svg
            .split("viewBox=\"0 0 640 ")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|h| h.parse().ok())
            .unwrap();
        assert_eq!(svg.matches(r#"class="legend""#).count(), 24);
        // The last entry's text (its baseline 16 below the first's top) inside the chart.
        let last = TOP + 16.0 + LEGEND_STEP * 23.0;
        assert!(last < height, "{last} falls off a chart {height} high");
        // Every path drawn has points; the empty series is said so, not drawn.
        assert_eq!(svg.matches("<path").count(), 23);
        assert!(!svg.contains(r#"d="""#));
        assert!(svg.contains("role-5 (no data)"));
        // No two of 21 series look alike.
        let looks: std::collections::BTreeSet<_> = (0..21).map(style).collect();
        assert_eq!(looks.len(), 21);
    }

    #[test]
    fn axes_are_whole_steps_from_round_numbers() {
        // Seconds of a run from its first sample at 0.577 s to 299.4 s: 0 to 300 by 100.
        assert_eq!(round_axis(0.577, 299.4), (0.0, 300.0, 100.0));
        // Template values from 312.50M to 313.08M: 312.4M to 313.2M by 0.2M.
        let (lo, hi, step) = round_axis(312_500_000.0, 313_080_000.0);
        assert_eq!(step, 200_000.0);
        assert_eq!((lo, hi), (312_400_000.0, 313_200_000.0));
        // A size from zero stays at zero: 0 to 2,351 bytes/s by 1,000.
        assert_eq!(round_axis(0.0, 2_351.0), (0.0, 3_000.0, 1_000.0));
        assert_eq!(round_axis(-23.3, 80.0), (-50.0, 100.0, 50.0));
        let t: Vec<f64> = ticks(0.0, 300.0, 100.0).collect();
        assert_eq!(t, [0.0, 100.0, 200.0, 300.0]);
        // The chart prints those ticks.
        let svg = line_chart(
            "t",
            "s",
            "B/s",
            &[Series {
                name: "a".into(),
                points: vec![(0.577, 10.0), (299.4, 2_351.0)],
            }],
            false,
        );
        for label in [">0<", ">100<", ">300<", ">1000<", ">3000<"] {
            assert!(svg.contains(label), "{label}: {svg}");
        }
    }

    #[test]
    fn tick_labels_have_their_steps_decimals() {
        assert_eq!(tick_label(0.0, 0.005), "0.000");
        assert_eq!(tick_label(0.015, 0.005), "0.015");
        assert_eq!(tick_label(0.5, 0.25), "0.50");
        assert_eq!(tick_label(40.0, 20.0), "40");
        assert_eq!(tick_label(2.5, 2.5), "2.5");
        assert_eq!(tick_label(25_000.0, 5_000.0), "25.0k");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(312_557_572.4, 0), "312,557,572");
        assert_eq!(grouped(-16_518.9, 0), "-16,519");
        assert_eq!(grouped(1_234.56, 1), "1,234.6");
        assert_eq!(grouped(0.1797, 3), "0.180");
        assert_eq!(grouped(-0.0001, 3), "0.000");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(signed(16_518.9, 0), "+16,519");
        assert_eq!(signed(0.0001, 3), "0.000");
        assert_eq!(signed(-2.25, 1), "-2.2");
    }
}
