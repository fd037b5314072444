//! The summary as a terminal reads it: the conclusions first, then a padded table with the
//! sides as columns (in blocks when they do not fit side by side), the verdict as a table
//! per side, the worth's assumptions once. Every line within [`Terminal::width`] columns;
//! colour only when asked (a terminal). It reads `summary.json`'s data and computes
//! nothing: `run` prints it at the end, `show` prints it again.

use crate::svg::{estimate, grouped, percent, signed};
use analysis::headline::Reading;
use analysis::manifest::{Manifest, WorthChange};
use analysis::metric::Headline;
use analysis::worth::{pct_text, sats_text};
use analysis::Summary;
use anyhow::{Context, Result};
use comfy_table::{
    Cell, Color, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle, Width,
};
use model::run_dir::SUMMARY_FILE;
use model::scenario::Config;
use probe::Dist;
use std::collections::BTreeMap;
use std::path::Path;

/// How the summary is drawn.
#[derive(Debug, Clone)]
pub struct Terminal {
    /// The widest a line may be.
    pub width: usize,
    /// Colour the verdict's readings (green better, red worse): on a terminal only.
    pub colour: bool,
    /// Also the links' relay lateness and the taps' added time.
    pub verbose: bool,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal {
            width: 100,
            colour: false,
            verbose: false,
        }
    }
}

/// A finished run's summary as [`render`] draws it: its `summary.json`, and the pools its
/// manifest names.
pub fn show(run_dir: &Path, t: &Terminal, change: &WorthChange) -> Result<String> {
    crate::run_data::is_run(run_dir)?;
    if !change.is_empty() {
        let summary = repriced(run_dir, change)?;
        let a = &summary.worth_assumptions;
        let said = format!(
            "re-priced for a {} farm on a {} network, {:.0} s blocks worth {} sats (the run as written: stratum-bench show {})",
            analysis::worth::hashrate_label(a.farm_hashrate),
            analysis::worth::hashrate_label(a.network_hashrate),
            a.block_interval_s,
            a.block_value_sats.map_or("-".into(), |v| grouped(v, 0)),
            run_dir.display()
        );
        let head = wrap(&said, t.width, "  ").join("\n");
        return Ok(format!(
            "{head}\n\n{}",
            render(&summary, &pools_of(run_dir), t)
        ));
    }
    let path = run_dir.join(SUMMARY_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} has no {SUMMARY_FILE}: the run did not finish (stratum-bench report {} draws what it has)",
            run_dir.display(),
            run_dir.display()
        )
    })?;
    let summary: Summary = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a summary this tool reads", path.display()))?;
    Ok(render(&summary, &pools_of(run_dir), t))
}

/// The run's summary priced at `change`: the analysis runs again over its events with the
/// worth's assumptions changed, and nothing is written (`show RUN_DIR --hashrate ...`).
pub fn repriced(run_dir: &Path, change: &WorthChange) -> Result<Summary> {
    let events = run_dir.join(model::run_dir::EVENTS_DIR);
    anyhow::ensure!(
        events.is_dir(),
        "{} has no events: pricing a run again runs its analysis again over them",
        run_dir.display()
    );
    let mut m = Manifest::read(run_dir)?;
    m.worth = change.applied(&m.worth);
    let (summary, _) = analysis::stream::summarize_dir(run_dir, &m, |_| {})
        .with_context(|| format!("cannot summarize {}", run_dir.display()))?;
    Ok(summary)
}

/// The pool software each side ran, by side, as the run's manifest names it (none when the
/// manifest is missing or unreadable: the table then says nothing of pools).
pub fn pools_of(run_dir: &Path) -> BTreeMap<String, String> {
    let manifest = Manifest::read(run_dir).ok();
    (manifest.iter())
        .flat_map(|m| m.sides.iter())
        .filter_map(|(side, roles)| Some((side.clone(), roles.pool_software.clone()?)))
        .collect()
}

/// `pools`: the pool software each side ran, by side (from the run's manifest).
pub fn render(s: &Summary, pools: &BTreeMap<String, String>, t: &Terminal) -> String {
    let mut out = Vec::new();
    for (side, c) in &s.conclusions {
        let mut lines = wrap(&c.text, t.width, "  ");
        // The side's name, bold on a terminal: where each bottom line starts.
        if let Some(rest) = (lines.first_mut()).and_then(|l| l.strip_prefix(side.as_str())) {
            lines[0] = format!("{}{rest}", paint(t, BOLD, side));
        }
        out.extend(lines);
        if let Some(pool) = &c.pool {
            out.extend(wrap(&format!("{side}: {pool}"), t.width, "  "));
        }
    }
    for caveat in crate::readings::caveats(s) {
        out.extend(wrap(&caveat, t.width, "  "));
    }
    for (side, security) in &s.security {
        let text = crate::security::reading(side, security);
        out.extend(wrap(&format!("security: {text}"), t.width, "  "));
    }
    for (side, outages) in &s.outages {
        for outage in outages {
            let text = crate::outage::reading(side, outage);
            out.extend(wrap(&format!("outage: {text}"), t.width, "  "));
        }
    }
    out.push(String::new());
    out.extend(wrap(&context(s), t.width, "  "));
    if let Some(builds) = crate::readings::template_builds(&s.network.template_builds) {
        out.extend(wrap(&builds, t.width, "  "));
    }
    for (side, pool) in pools {
        out.extend(wrap(&format!("{side}'s pool: {pool}"), t.width, "  "));
    }
    out.push(String::new());
    out.extend(side_tables(s, t));
    out.extend(notes(s, t));
    let host_warning = s.host_warning();
    if let Some(warning) = &host_warning {
        let text = format!("WARNING host saturated: {warning}; latencies marked [host-saturated]");
        out.extend((wrap(&text, t.width, "  ").iter()).map(|l| paint(t, YELLOW, l)));
    }
    for warning in s.pool_warnings() {
        let text = format!("WARNING pool stopped: {warning}");
        out.extend((wrap(&text, t.width, "  ").iter()).map(|l| paint(t, YELLOW, l)));
    }
    for (side, rows) in &s.verdict {
        out.push(String::new());
        out.extend(wrap(
            &format!(
                "verdict, {side} against {} (95% intervals; significant under a 5% false discovery rate):",
                s.baseline
            ),
            t.width,
            "  ",
        ));
        out.extend(lines(&verdict_table(
            side,
            &s.baseline,
            rows,
            host_warning.is_some(),
            t,
        )));
        if let Some(worth) = s.worth.get(side).filter(|w| !w.is_empty()) {
            out.extend(lines(&worth_table(worth, t)));
        }
        // What a scenario parameter or a model sets, once per row it marks.
        for row in rows {
            if let Some(m) = &row.modelled {
                out.extend(wrap(
                    &format!("* {}: {m}; in no worth total", row.metric.label()),
                    t.width,
                    "    ",
                ));
            }
            if let Some(m) = &row.assumed {
                out.extend(wrap(
                    &format!("+ {}: {m}; worth at the assumed lag", row.metric.label()),
                    t.width,
                    "    ",
                ));
            }
            if let Some(note) = row.metric.def().note {
                let line = format!("- {}: {note}", row.metric.label());
                out.extend(wrap(&line, t.width, "    "));
            }
        }
        if let Some(lag) = s.sides.get(side).and_then(|x| x.farm_node_lag.as_ref()) {
            out.extend(wrap(&crate::readings::farm_node_lag(lag), t.width, "    "));
        }
    }
    if !s.worth.is_empty() {
        let a = &s.worth_assumptions;
        out.push(String::new());
        out.extend(wrap(
            &format!(
                "worth for a {} farm on a {} network, {:.0} s blocks of {} sats (--hashrate, --network-hashrate, --real-block-interval, --block-value-sats)",
                analysis::worth::hashrate_label(a.farm_hashrate),
                analysis::worth::hashrate_label(a.network_hashrate),
                a.block_interval_s,
                grouped(a.block_value_sats.unwrap_or_default(), 0),
            ),
            t.width,
            "  ",
        ));
    }
    if let Some(st) = &s.stopped {
        out.extend(wrap(
            &format!(
                "sequential: stopped after {:.0} s of the window: {} (known: a 95% interval within {}% of the baseline, wherever it lies, so the verdict keeps its 5%){}",
                st.after_s,
                st.reason,
                st.precision_pct,
                if st.unresolved.is_empty() {
                    String::new()
                } else {
                    format!("; still open: {}", st.unresolved.join(", "))
                }
            ),
            t.width,
            "  ",
        ));
    }
    if !s.unmatched.is_empty() {
        let counts: Vec<String> = (s.unmatched.iter())
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        out.extend(wrap(
            &format!("unmatched events: {}", counts.join(", ")),
            t.width,
            "  ",
        ));
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// The run in one sentence: what, how long, and the block pace every stale figure is at.
fn context(s: &Summary) -> String {
    let pace = s.network.block_interval_s.map_or(String::new(), |i| {
        format!(" (one every {i:.1} s here; mainnet's come every 600 s, so stale shares there are that much rarer)")
    });
    format!(
        "{}: {:.0} s measured, link round trip {} ms; the network found {} blocks{pace}; best template mean {} sats",
        s.scenario,
        s.duration_s,
        s.link.rtt_ms,
        s.network.blocks,
        s.network
            .template_value_sats
            .mean
            .map_or("-".into(), |v| grouped(v, 0)),
    )
}

/// Percentiles in one cell: `p50 / p90 / p99 (n)`.
fn percentiles(d: &Dist) -> String {
    if d.count == 0 {
        return "no samples".into();
    }
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| grouped(v, 1));
    format!("{} / {} / {} ({})", f(d.p50), f(d.p90), f(d.p99), d.count)
}

/// An estimate's point alone, or "-" (the pool's costs: their intervals are in the report).
fn point(e: &analysis::stats::Estimate, places: usize) -> String {
    e.point.map_or("-".into(), |v| grouped(v, places))
}

/// One row per figure, one column per side.
fn side_rows(s: &Summary) -> Vec<(String, Vec<String>)> {
    let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    let real_blocks = format!(
        "stale work % at {:.0} s blocks (95%)",
        s.worth_assumptions.block_interval_s
    );
    let labels = [
        "shares submitted (a miner a minute)",
        "judged: accepted / stale / rejected",
        "acceptance % (95%)",
        "stale at the pool % (95%)",
        "stale by the tip timeline (95%)",
        "work credited by the pool % (95%)",
        "blocks found / accepted",
        "stale work after a block, mean ms (95%)",
        &real_blocks,
        "stale work % at this run's pace (95%)",
        "template value, mean sats",
        "work valid / stale / unmatched, miner-s",
        "farm tx / rx bytes/s",
        "pool CPU, millicores / ms a share",
        "pool CPU a miner, millicores",
        "pool memory MB / link B/s a miner",
    ];
    let mut rows: Vec<(String, Vec<String>)> = (labels.into_iter())
        .map(|l| (l.to_string(), vec![]))
        .collect();
    for side in s.sides.values() {
        let c = &side.shares;
        let cells = [
            format!("{} ({})", c.submitted, f(c.per_miner_min)),
            format!("{} / {} / {}", c.accepted, c.pool_stale, c.rejected),
            percent(c.acceptance_pct, c.acceptance_pct_ci, 1),
            percent(c.pool_stale_pct, c.pool_stale_pct_ci, 2),
            format!("{}: {}", c.stale, percent(c.stale_pct, c.stale_pct_ci, 2)),
            percent(
                side.pool_work.credited_pct,
                side.pool_work.credited_pct_ci,
                1,
            ),
            format!("{} / {}", side.blocks.found, side.blocks.accepted),
            estimate(&analysis::stats::Estimate::mean_of(&side.stale_wait_ms), 1),
            estimate(&side.stale_work_real_pct, 4),
            estimate(&side.stale_work_pct, 2),
            side.template_value_sats
                .mean
                .map_or("-".into(), |v| grouped(v, 0)),
            format!(
                "{:.0} / {:.1} / {:.1}",
                side.work_s.valid_s, side.work_s.stale_s, side.work_s.unmatched_s
            ),
            side.bandwidth_bytes_per_s
                .as_ref()
                .map_or("not recorded".into(), |b| {
                    format!("{} / {}", grouped(b.farm.tx, 0), grouped(b.farm.rx, 0))
                }),
            format!(
                "{} / {}",
                point(&side.pool_costs.cpu_cores.scaled(1_000.0), 2),
                point(&side.pool_costs.cpu_ms_per_share, 2)
            ),
            point(&side.pool_costs.cpu_millicores_per_miner, 2),
            format!(
                "{} / {}",
                (side.pool_costs.rss_bytes).map_or("-".into(), |b| grouped(b / 1e6, 1)),
                point(&side.pool_costs.link_bytes_per_s_per_miner, 0)
            ),
        ];
        for (row, cell) in rows.iter_mut().zip(cells) {
            row.1.push(cell);
        }
    }
    // Each latency's percentiles, after the blocks.
    let blocks = (rows
        .iter()
        .position(|(l, _)| l == "blocks found / accepted"))
    .map_or(rows.len(), |i| i + 1);
    let latencies = Headline::distributions().enumerate().map(|(i, (_, d))| {
        let label = match i {
            0 => format!("{} ms: p50 / p90 / p99 (n)", d.title),
            _ => format!("{} ms", d.title),
        };
        let cells = s.sides.values().map(|side| percentiles((d.dist)(side)));
        (label, cells.collect())
    });
    rows.splice(blocks..blocks, latencies);
    rows
}

/// The sides' table, in as few blocks of sides as fit the width.
fn side_tables(s: &Summary, t: &Terminal) -> Vec<String> {
    let names: Vec<&String> = s.sides.keys().collect();
    if names.is_empty() {
        return vec!["no sides".into()];
    }
    let rows = side_rows(s);
    let block = |from: usize, to: usize, arrangement: ContentArrangement| {
        let mut table = table(t, arrangement);
        let mut header = vec![String::new()];
        header.extend(names[from..to].iter().map(|n| n.to_string()));
        table.set_header(header);
        for (label, cells) in &rows {
            let mut row = vec![label.clone()];
            row.extend(cells[from..to].iter().cloned());
            table.add_row(row);
        }
        table.to_string()
    };
    // The fewest blocks, as even as they can be (5 sides in two blocks are 3 + 2, not
    // 4 + 1), whose sides fit side by side at their natural widths; one side a block that
    // is still too wide wraps its cells.
    let fits = |text: &str| text.lines().all(|l| l.chars().count() <= t.width);
    let n = names.len();
    let size = (1..=n)
        .map(|blocks| n.div_ceil(blocks))
        .find(|&size| {
            (0..n).step_by(size).all(|from| {
                fits(&block(
                    from,
                    (from + size).min(n),
                    ContentArrangement::Disabled,
                ))
            })
        })
        .unwrap_or(1);
    let mut out = Vec::new();
    for from in (0..names.len()).step_by(size) {
        if from > 0 {
            out.push(String::new());
        }
        let text = block(
            from,
            (from + size).min(names.len()),
            ContentArrangement::Dynamic,
        );
        out.extend(text.lines().map(|l| l.trim_end().to_string()));
    }
    out
}

/// A table's lines, without the padding after the last column.
fn lines(table: &Table) -> Vec<String> {
    (table.lines()).map(|l| l.trim_end().to_string()).collect()
}

/// The first column at least as wide as its widest label, so labels do not wrap while
/// there is room.
fn labels_whole(table: &mut Table, labels: impl Iterator<Item = usize>) {
    // The boundary holds the cell's padding, a space each side.
    let widest = labels.max().unwrap_or(0) + 2;
    if let Some(column) = table.column_mut(0) {
        column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(
            u16::try_from(widest).unwrap_or(u16::MAX),
        )));
    }
}

/// What the table's rows need said: where the pool judged fewer shares than the miners
/// sent, the Template Provider's times, and (verbose) the links' and taps' own costs.
fn notes(s: &Summary, t: &Terminal) -> Vec<String> {
    let mut lines = Vec::new();
    let mut say = |text: String| lines.extend(wrap(&text, t.width, "  "));
    for (name, side) in &s.sides {
        let c = &side.shares;
        let judged = c.accepted + c.pool_stale + c.rejected;
        if judged >= c.submitted {
            continue;
        }
        // A proxy between the miners and the pool forwards only shares that meet the
        // pool's target; without one, the rest got no verdict in the window.
        let proxy = match side.config {
            Config::Sv2A | Config::Sv2B => Some("the JDC"),
            Config::Sv2C => Some("the translator"),
            Config::Sv1 | Config::Sv2D => None,
        };
        say(match proxy {
            Some(proxy) => format!(
                "{name}: the pool judged {judged} of the {} shares the miners submitted: {proxy} sends upstream only shares that meet the pool's target",
                c.submitted
            ),
            None => format!(
                "{name}: the pool judged {judged} of the {} shares the miners submitted; the rest got no verdict in the window",
                c.submitted
            ),
        });
    }
    for (side, tp) in (s.sides.iter()).filter_map(|(n, x)| Some((n, x.template_provider.as_ref()?)))
    {
        say(format!(
            "{side}: template on a new tip at the pool, ms (Template Provider): {}; tips missed {}, refreshes {}",
            percentiles(&tp.new_tip_ms),
            tp.tips_missed,
            tp.refreshes
        ));
    }
    if t.verbose {
        for (role, lateness) in &s.link.relay_lateness_ms {
            say(format!(
                "{role} relay lateness ms, up: {}; down: {}",
                percentiles(&lateness.up),
                percentiles(&lateness.down)
            ));
        }
        for (role, added) in &s.link.tap_latency_ms {
            say(format!(
                "{role} tap added ms, to the pool: {}; from it: {}",
                percentiles(&added.up),
                percentiles(&added.down)
            ));
        }
    }
    if !lines.is_empty() {
        lines.insert(0, String::new());
    }
    lines
}

fn verdict_table(
    side: &str,
    baseline: &str,
    rows: &[analysis::headline::VerdictRow],
    host_saturated: bool,
    t: &Terminal,
) -> Table {
    let mut table = table(t, ContentArrangement::Dynamic);
    table.set_header(vec![
        "".to_string(),
        side.to_string(),
        baseline.to_string(),
        "difference\n95% interval".into(),
        "reading".into(),
    ]);
    for row in rows {
        let places = row.metric.decimals();
        let cell = |x: Option<f64>| x.map_or("-".to_string(), |v| grouped(v, places));
        let difference = match (row.delta, row.pct) {
            (None, _) => "-".to_string(),
            (Some(d), None) => signed(d, places),
            // A percentage that rounds to nothing hides the difference: say "<0.1%".
            (Some(d), Some(p)) if p.abs() < 0.05 && d != 0.0 => {
                format!("{} (<0.1%)", signed(d, places))
            }
            (Some(d), Some(p)) => format!("{} ({p:+.1}%)", signed(d, places)),
        };
        let interval = match (row.ci, &row.no_interval) {
            (Some((lo, hi)), _) => format!("[{}, {}]", signed(lo, places), signed(hi, places)),
            (None, Some(why)) => why.clone(),
            (None, None) => "-".into(),
        };
        let reading = row.reading();
        let mut words = match reading {
            // The interval's column says why.
            Reading::NoInterval => "-".to_string(),
            _ => reading.label().to_string(),
        };
        if row.modelled.is_some() {
            words.push_str(" *");
        }
        if row.assumed.is_some() {
            words.push_str(" +");
        }
        if host_saturated && row.metric.is_latency() {
            words.push_str(" [host-saturated]");
        }
        let colour = match reading {
            Reading::Better => Some(Color::Green),
            Reading::Worse => Some(Color::Red),
            _ => None,
        };
        let mut reading_cell = Cell::new(words);
        if let Some(c) = colour {
            reading_cell = reading_cell.fg(c);
        }
        table.add_row(vec![
            Cell::new(row.metric.label()),
            Cell::new(cell(row.sv2)),
            Cell::new(cell(row.sv1)),
            Cell::new(format!("{difference}\n{interval}")),
            reading_cell,
        ]);
    }
    labels_whole(&mut table, rows.iter().map(|r| r.metric.label().len()));
    table
}

fn worth_table(rows: &[analysis::worth::WorthRow], t: &Terminal) -> Table {
    let mut table = table(t, ContentArrangement::Dynamic);
    table.set_header(vec![
        "worth",
        "sats a day",
        "95% interval",
        "of revenue (95%)",
        "a ms",
        "",
    ]);
    for w in rows {
        table.add_row(vec![
            w.metric.label().to_string(),
            w.sats_per_day.map_or(w.how.clone(), sats_text),
            w.ci.map_or(String::new(), |(lo, hi)| {
                format!("[{}, {}]", sats_text(lo), sats_text(hi))
            }),
            w.pct_of_revenue
                .map_or(String::new(), |p| pct_text(p, w.pct_of_revenue_ci)),
            w.per_ms.map_or(String::new(), |x| format!("{x:.4}")),
            match (&w.modelled, &w.assumed) {
                (Some(_), _) => "*",
                (None, Some(_)) => "+",
                (None, None) => "",
            }
            .to_string(),
        ]);
    }
    labels_whole(&mut table, rows.iter().map(|w| w.metric.label().len()));
    table
}

/// A table with padded columns, a line under the header and nothing else drawn.
fn table(t: &Terminal, arrangement: ContentArrangement) -> Table {
    let mut table = Table::new();
    table
        .load_style(TableStyle::new().header_separator(LineStyle::none().fill('-').junction(' ')))
        .set_content_arrangement(arrangement)
        .set_width(u16::try_from(t.width).unwrap_or(u16::MAX));
    if t.colour {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    table
}

const BOLD: &str = "\x1b[1m";
const YELLOW: &str = "\x1b[33m";

/// `text` in an ANSI style on a terminal, as it is elsewhere.
fn paint(t: &Terminal, style: &str, text: &str) -> String {
    if t.colour {
        format!("{style}{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Words wrapped to `width` columns, lines after the first indented.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        // A continuation line's indent goes only where the word still fits after it.
        let indent = if indent.len() + word.chars().count() > width {
            ""
        } else {
            indent
        };
        if line.is_empty() {
            if !lines.is_empty() {
                line.push_str(indent);
            }
        } else {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_wrap_within_the_width_and_lines_after_the_first_are_indented() {
        let lines = wrap("one two three four five six", 10, "  ");
        assert_eq!(lines, ["one two", "  three", "  four", "  five six"]);
        assert_eq!(wrap("", 10, "  "), [""]);
        // A word longer than the width has a line of its own; one that fits only without
        // the indent goes without it.
        assert_eq!(wrap("a abcdefghijkl b", 5, ""), ["a", "abcdefghijkl", "b"]);
        assert_eq!(wrap("a abcde", 5, "  "), ["a", "abcde"]);
    }
}
