//! A sweep's report: `sweep.md`, `sweep.html` (a chart per metric, a curve per side with
//! its 95% band, small multiples for a second key), `points.csv` and `fits.csv`, and the
//! curves written into `sweep.json`. The curves and fits come from `analysis::sweep`,
//! the release comparison from `analysis::compare`: this draws and words them.

use crate::compare::Comparison;
use crate::document::{Block, Document, Section};
use crate::run_data::RunData;
use crate::svg::{band_chart, Layers, Marker, Series};
use analysis::sweep::{
    analyse, is_release_key, CurveKind, Curves, Fit, LeftOutReadings, RunStatus, SweepAnalysis,
    SweepRecord, SweepRun, BUILTIN, POINTS_DIR, SWEEP_FILE,
};
use analysis::Summary;
use anyhow::{Context, Result};
use model::run_dir::SUMMARY_FILE;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Runs a release comparison judges by run needs this many a side to call a difference
/// significant.
const RELEASE_RUNS: u32 = 5;

/// What writing a sweep's report gave: the record with its curves, the files written, and
/// each release against the first when the sweep compares releases.
pub struct Written {
    pub record: SweepRecord,
    pub files: Vec<PathBuf>,
    pub releases: Vec<Comparison>,
}

/// Reads `sweep.json` in `dir`, computes the curves from the finished runs, writes them
/// back into it, and writes the report files.
pub fn write(dir: &Path) -> Result<Written> {
    let mut record = SweepRecord::load(dir)?;
    let mut problems = Vec::new();
    let mut loaded: Vec<(usize, Summary)> = Vec::new();
    for (i, run) in record.runs.iter().enumerate() {
        if run.status != RunStatus::Done {
            continue;
        }
        let file = dir.join(POINTS_DIR).join(&run.run.name).join(SUMMARY_FILE);
        match std::fs::read_to_string(&file)
            .map_err(anyhow::Error::from)
            .and_then(|t| Ok(serde_json::from_str::<Summary>(&t)?))
        {
            Ok(s) => loaded.push((i, s)),
            Err(e) => problems.push(format!("{}: {e:#}", file.display())),
        }
    }
    let runs: Vec<SweepRun> = (loaded.iter())
        .map(|(i, summary)| SweepRun {
            name: &record.runs[*i].run.name,
            settings: &record.runs[*i].run.settings,
            summary,
        })
        .collect();
    let analysis = analyse(&record.keys, record.zip, &runs);
    record.analysis = Some(analysis.clone());
    record.save(dir)?;
    // What a point's figures owe to the lab rather than the protocol, said beside it.
    let cautions: Vec<String> = (loaded.iter())
        .flat_map(|(i, s)| {
            let name = &record.runs[*i].run.name;
            (s.pool_warnings().into_iter())
                .chain(s.host_warning().map(|w| format!("host saturated: {w}")))
                .map(move |w| format!("{name}: {w}"))
        })
        .collect();

    let mut doc = document(&record, &analysis, &problems, &cautions);
    let mut files = Vec::new();
    let mut release_comparisons = Vec::new();
    if let Some((section, comparisons)) = releases(dir, &record)? {
        doc.sections.push(section);
        files.push((
            "releases.json",
            serde_json::to_string_pretty(&comparisons)? + "\n",
        ));
        release_comparisons = comparisons;
    }
    files.extend([
        ("sweep.md", doc.to_markdown()),
        ("sweep.html", doc.to_html()),
        ("points.csv", points_csv(&analysis)?),
        ("fits.csv", fits_csv(&analysis)?),
    ]);
    let mut written = vec![dir.join(SWEEP_FILE)];
    for (name, content) in files {
        let out = dir.join(name);
        std::fs::write(&out, content).with_context(|| format!("cannot write {}", out.display()))?;
        written.push(out);
    }
    Ok(Written {
        record,
        files: written,
        releases: release_comparisons,
    })
}

fn document(
    record: &SweepRecord,
    a: &SweepAnalysis,
    problems: &[String],
    cautions: &[String],
) -> Document {
    let count = |s: RunStatus| record.count(s);
    let w = &record.worth;
    let mut head = vec![
        Block::Para(format!(
            "{} varied over {}; {} point(s), {} run(s) each ({} in all): {} done, {} failed, {} not run. Each run {:.0} s of warm-up and measurement, {}.",
            record.keys.join(" and "),
            (record.keys.iter().zip(&record.values))
                .map(|(k, v)| format!("{k} = {}", v.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
            record.runs.len() / record.repeat.max(1) as usize,
            record.repeat,
            record.runs.len(),
            count(RunStatus::Done),
            count(RunStatus::Failed),
            count(RunStatus::Pending) + count(RunStatus::Interrupted),
            record.run_s,
            if record.jobs > 1 {
                format!("{} at a time, each on 2 CPUs of its own (its miner fleets apart from its roles)", record.jobs)
            } else {
                "one at a time".to_string()
            },
        )),
        Block::Para(format!(
            "Worth, set once for the sweep: a {} farm on a {} network, priced at {:.0} s blocks, a block worth {}. The stale work's worth is physics (a wait of t ms after every block costs t / {:.0} of the farm's revenue); the hashrates and block value are these assumptions.",
            analysis::worth::hashrate_label(w.farm_hashrate),
            analysis::worth::hashrate_label(w.network_hashrate),
            w.block_interval_s,
            w.block_value_sats.map_or("the run's network templates' value".into(), |v| format!("{v:.0} sats")),
            w.block_interval_s * 1e3,
        )),
        Block::Table {
            head: ["run", "setting", "seed", "status", "wall s", "error"].map(String::from).to_vec(),
            rows: (record.runs.iter())
                .map(|r| {
                    vec![
                        r.run.name.clone(),
                        (r.run.settings.iter()).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
                        r.run.seed.to_string(),
                        format!("{:?}", r.status).to_lowercase(),
                        r.wall_s.map_or("-".into(), |s| format!("{s:.0}")),
                        r.error.clone().unwrap_or_default(),
                    ]
                })
                .collect(),
        },
    ];
    for p in problems {
        head.push(Block::Note(format!("unreadable run: {p}")));
    }
    for c in cautions {
        head.push(Block::Note(format!("{c}.")));
    }
    for l in &a.left_out {
        let at = [l.panel.as_str(), &format!("{}={}", a.key, l.x)]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(", ");
        let what = match l.readings {
            LeftOutReadings::All => "every reading",
            LeftOutReadings::Comparisons => "its differences, worth and break-even",
        };
        head.push(Block::Note(format!(
            "Left out of the curves and lines: {} at {at} (run {}), {what}: {}.",
            l.side, l.run, l.why
        )));
    }
    let mut sections = vec![Section {
        title: "What was swept".into(),
        blocks: head,
    }];
    if !a.crossings.is_empty() {
        sections.push(crossings(a));
    }
    if a.numeric {
        sections.push(slopes(a));
    } else if !a.curves.is_empty() {
        sections.push(Section {
            title: "Along the x axis".into(),
            blocks: vec![Block::Para(format!(
                "{} is not a number: the charts place its values in order, {}.",
                a.key,
                categories(a)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("{i} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))],
        });
    }
    for (kind, title) in [
        (CurveKind::Side, "Each side".to_string()),
        (
            CurveKind::Difference,
            format!("Each side against {}", a.baseline),
        ),
        (
            CurveKind::Worth,
            "Worth: sats a day, and % of the farm's revenue".to_string(),
        ),
        (
            CurveKind::Scale,
            "At scale: per miner and per share".to_string(),
        ),
        (
            CurveKind::Emulation,
            "What the emulation adds at each point: the relays' and the fleet's CPU, the relays' own delay (not the pool's, not the protocol's)".to_string(),
        ),
    ] {
        let blocks: Vec<Block> = (a.curves.iter())
            .filter(|c| c.kind == kind)
            .flat_map(|c| curve_blocks(a, c))
            .collect();
        if !blocks.is_empty() {
            sections.push(Section { title, blocks });
        }
    }
    Document {
        title: format!("stratum-bench sweep: {}", record.name),
        subtitle: format!("scenario {}", record.scenario),
        sections,
    }
}

/// Where each farm-node side's new-block job crosses the baseline's, along its lag.
fn crossings(a: &SweepAnalysis) -> Section {
    let mut blocks = vec![Block::Para(format!(
        "SRI's JDC moves its miners to a new block only when the farm's own node hears of \
         it, so a farm-node side's new-block job grows one ms for each ms of that node's lag \
         while {}'s stays where its pool puts it. They cross at the break-even lag: below it \
         the side's miners reach new-block work sooner and its stale work is worth more, \
         above it later and less. Each run measures the break-even itself (per tip, {}'s \
         new-block job less the side's own time beyond the lag): the table gives their mean \
         with the envelope of their 95% intervals (the points share the seed's network, so \
         they are not independent repeats), and where the fitted line of the new-block \
         job's difference crosses zero, the same crossing read from the curves. The charts \
         mark it with its interval. Your own node's lag: `stratum-bench race`.",
        a.baseline, a.baseline
    ))];
    blocks.push(Block::Table {
        head: [
            "side",
            "panel",
            "break-even lag, ms (the points' 95% envelope)",
            "where the fitted difference crosses 0, ms",
            "runs",
        ]
        .map(String::from)
        .to_vec(),
        rows: (a.crossings.iter())
            .map(|c| {
                vec![
                    c.side.clone(),
                    c.panel.clone(),
                    value(Some(c.lag_ms), c.ci),
                    value(c.line_lag_ms, None),
                    c.runs.to_string(),
                ]
            })
            .collect(),
    });
    Section {
        title: format!("Where A and B cross {}", a.baseline),
        blocks,
    }
}

/// The crossings a chart of `c` marks in `panel`: the break-even on the charts of the
/// new-block job, the stale work and their worth.
fn markers(a: &SweepAnalysis, c: &Curves, panel: &str) -> Vec<Marker> {
    use analysis::metric::Headline;
    use analysis::sweep::{difference_key, WORTH_STALE_WAIT, WORTH_TOTAL, WORTH_TOTAL_PCT};
    let marked = [Headline::NewPrevhashJobMs, Headline::StaleWaitMs];
    let headline = |h: &Headline| c.metric == h.key() || c.metric == difference_key(*h);
    if !marked.iter().any(headline)
        && ![WORTH_STALE_WAIT, WORTH_TOTAL, WORTH_TOTAL_PCT].contains(&c.metric.as_str())
    {
        return Vec::new();
    }
    (a.crossings.iter())
        .filter(|x| x.panel == panel)
        .map(|x| Marker {
            label: format!("{} break-even {:.0} ms", x.side, x.lag_ms),
            x: x.lag_ms,
            ci: x.ci,
        })
        .collect()
}

/// The values of the x key in order.
fn categories(a: &SweepAnalysis) -> Vec<String> {
    let mut xs: Vec<String> = Vec::new();
    for p in a.curves.iter().flat_map(|c| &c.points) {
        if !xs.contains(&p.x) {
            xs.push(p.x.clone());
        }
    }
    xs
}

fn slopes(a: &SweepAnalysis) -> Section {
    let rows: Vec<Vec<String>> = (a.curves.iter())
        .filter(|c| c.kind != CurveKind::Worth)
        .flat_map(|c| c.fits.iter().map(move |f| (c, f)))
        .map(|(c, f)| {
            vec![
                format!("{}{}", c.label, kind_suffix(c.kind, &a.baseline)),
                f.side.clone(),
                f.panel.clone(),
                value(Some(f.slope), f.slope_ci),
                match (f.slope_p_value, f.significant) {
                    (None, _) => "-",
                    (_, true) => "yes",
                    _ => "no",
                }
                .to_string(),
                value(Some(f.intercept), None),
                f.points.to_string(),
                value(largest_residual(f), None),
                f.goodness.map_or("-".into(), |g| {
                    format!("{:.2} on {}, p {:.3}", g.chi2, g.df, g.p_value)
                }),
            ]
        })
        .collect();
    Section {
        title: format!("Slopes against {}", a.key),
        blocks: vec![
            Block::Para(format!(
                "Each side's points fitted as a line, value = intercept + slope x {}: weighted by each point's standard error, the slope's 95% interval from those weights (Student's t on Satterthwaite's degrees of freedom where a point's error is the spread of few runs), widened only when the fit's chi-square says the points scatter about the line more than their intervals allow (p < 0.05). A slope whose interval holds 0 cannot be told from flat; significant: it stays so read with every other slope of the sweep (Benjamini-Hochberg at 5%).{}",
                a.key,
                if a.key.starts_with("link.") && a.key.contains("rtt") {
                    " With only the link's round trip varied, a job that crosses the link once grows by half of it (slope 0.5); one made at the farm does not grow (slope 0)."
                } else {
                    ""
                }
            )),
            Block::Table {
                head: ["metric", "side", "panel", "slope [95%]", "significant", "intercept", "points", "largest residual", "chi-square"]
                    .map(String::from)
                    .to_vec(),
                rows,
            },
        ],
    }
}

fn kind_suffix(kind: CurveKind, baseline: &str) -> String {
    match kind {
        CurveKind::Difference => format!(" (against {baseline})"),
        _ => String::new(),
    }
}

fn largest_residual(f: &Fit) -> Option<f64> {
    (f.residuals.iter())
        .map(|r| r.1)
        .max_by(|x, y| x.abs().total_cmp(&y.abs()))
}

/// A chart per panel and a table of the points.
fn curve_blocks(a: &SweepAnalysis, c: &Curves) -> Vec<Block> {
    let xs = categories(a);
    let x_of = |p: &analysis::sweep::CurvePoint| {
        if a.numeric {
            p.x_value.unwrap_or_default()
        } else {
            xs.iter().position(|x| *x == p.x).unwrap_or_default() as f64
        }
    };
    let mut panels: Vec<String> = Vec::new();
    let mut sides: Vec<String> = Vec::new();
    for p in &c.points {
        if !panels.contains(&p.panel) {
            panels.push(p.panel.clone());
        }
        if !sides.contains(&p.side) {
            sides.push(p.side.clone());
        }
    }
    let title = format!("{}{}", c.label, kind_suffix(c.kind, &a.baseline));
    let mut blocks = Vec::new();
    for panel in &panels {
        let mut series = Vec::new();
        let mut bands = Vec::new();
        for side in &sides {
            let mine: Vec<_> = (c.points.iter())
                .filter(|p| p.side == *side && p.panel == *panel && p.value.is_some())
                .collect();
            series.push(Series {
                name: side.clone(),
                points: mine
                    .iter()
                    .map(|p| (x_of(p), p.value.unwrap_or_default()))
                    .collect(),
            });
            bands.push(
                (mine.iter())
                    .filter_map(|p| p.ci.map(|(lo, hi)| (x_of(p), lo, hi)))
                    .collect(),
            );
        }
        let chart_title = if panel.is_empty() {
            title.clone()
        } else {
            format!("{title}, {panel}")
        };
        let marks = markers(a, c, panel);
        blocks.push(Block::Chart {
            svg: band_chart(
                &chart_title,
                &a.key,
                &c.label,
                Layers {
                    series: &series,
                    bands: &bands,
                    markers: &marks,
                },
            ),
            title: chart_title,
        });
    }
    let mut head = vec![a.key.clone()];
    if panels.len() > 1 {
        head.push("panel".into());
    }
    head.extend(sides.iter().cloned());
    let mut rows = Vec::new();
    for panel in &panels {
        for x in &xs {
            let mut row = vec![x.clone()];
            if panels.len() > 1 {
                row.push(panel.clone());
            }
            for side in &sides {
                let p =
                    (c.points.iter()).find(|p| p.side == *side && p.panel == *panel && p.x == *x);
                row.push(p.map_or("-".into(), |p| {
                    let v = value(p.value, p.ci);
                    if p.runs > 1 {
                        format!("{v} ({} runs)", p.runs)
                    } else {
                        v
                    }
                }));
            }
            rows.push(row);
        }
    }
    blocks.push(Block::Para(format!(
        "{title}: each point's value and 95% interval."
    )));
    blocks.push(Block::Table { head, rows });
    blocks
}

/// A value with its interval, to three significant figures or to whole units.
fn value(v: Option<f64>, ci: Option<(f64, f64)>) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    let scale = [v, ci.map_or(v, |c| c.0), ci.map_or(v, |c| c.1)]
        .iter()
        .fold(0.0_f64, |m, x| m.max(x.abs()));
    let places = if scale >= 100.0 {
        0
    } else if scale >= 1.0 {
        2
    } else {
        4
    };
    match ci {
        Some((lo, hi)) => format!("{v:.places$} [{lo:.places$}, {hi:.places$}]"),
        None => format!("{v:.places$}"),
    }
}

fn number(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| v.to_string())
}

fn points_csv(a: &SweepAnalysis) -> Result<String> {
    let mut rows = Vec::new();
    for c in &a.curves {
        for p in &c.points {
            rows.push(vec![
                c.metric.clone(),
                format!("{:?}", c.kind).to_lowercase(),
                p.side.clone(),
                p.panel.clone(),
                a.key.clone(),
                p.x.clone(),
                number(p.value),
                number(p.ci.map(|c| c.0)),
                number(p.ci.map(|c| c.1)),
                p.runs.to_string(),
            ]);
        }
    }
    let header = [
        "metric", "kind", "side", "panel", "key", "x", "value", "ci_low", "ci_high", "runs",
    ];
    crate::export::table(&header, rows)
}

fn fits_csv(a: &SweepAnalysis) -> Result<String> {
    let mut rows = Vec::new();
    for c in &a.curves {
        for f in &c.fits {
            rows.push(vec![
                c.metric.clone(),
                format!("{:?}", c.kind).to_lowercase(),
                f.side.clone(),
                f.panel.clone(),
                f.slope.to_string(),
                number(f.slope_ci.map(|c| c.0)),
                number(f.slope_ci.map(|c| c.1)),
                number(f.slope_df),
                number(f.slope_p_value),
                f.significant.to_string(),
                f.intercept.to_string(),
                f.points.to_string(),
                (f.residuals.iter())
                    .map(|(x, r)| format!("{x}:{r}"))
                    .collect::<Vec<_>>()
                    .join(";"),
                number(f.goodness.map(|g| g.chi2)),
                number(f.goodness.map(|g| g.df as f64)),
                number(f.goodness.map(|g| g.p_value)),
            ]);
        }
    }
    let header = [
        "metric",
        "kind",
        "side",
        "panel",
        "slope",
        "slope_ci_low",
        "slope_ci_high",
        "slope_df",
        "slope_p_value",
        "significant",
        "intercept",
        "points",
        "residuals",
        "chi2",
        "chi2_df",
        "chi2_p_value",
    ];
    crate::export::table(&header, rows)
}

/// Release against release, when the sweep's one key is a release or an SRI role's
/// command: each value's runs against the first value's, every metric's centiles and the
/// difference with its interval, CPU and memory per role.
fn releases(dir: &Path, record: &SweepRecord) -> Result<Option<(Section, Vec<Comparison>)>> {
    let [key] = record.keys.as_slice() else {
        return Ok(None);
    };
    if !is_release_key(key) {
        return Ok(None);
    }
    let mut by_value: BTreeMap<usize, Vec<RunData>> = BTreeMap::new();
    let mut unreadable = Vec::new();
    for r in record.runs.iter().filter(|r| r.status == RunStatus::Done) {
        match RunData::load(&dir.join(POINTS_DIR).join(&r.run.name)) {
            Ok(run) => by_value.entry(r.run.point).or_default().push(run),
            Err(e) => unreadable.push(Block::Note(format!("{}: {e:#}", r.run.name))),
        }
    }
    let mut blocks = vec![Block::Para(format!(
        "Each release against the first, {} = {}: every latency's centiles, role CPU and memory and bandwidth, the difference of means with its 95% interval and whether it survives false discovery rate control. With {RELEASE_RUNS} runs or more a release, the runs are the units and the table judges the releases; with fewer it judges these runs only.",
        key,
        record.values[0].first().map_or("-", String::as_str)
    ))];
    blocks.extend(unreadable);
    let values = record.values.first().map_or(&[][..], Vec::as_slice);
    if values.iter().any(|v| v == BUILTIN) && values.iter().any(|v| v != BUILTIN) {
        blocks.push(Block::Note(format!(
            "{BUILTIN} runs the SRI role inside stratum-bench's own process (its code, its event recorder); a binary given as a path is a process of its own. The role's memory and CPU differ by that embedding whatever the release: to judge releases on them, give each as a binary."
        )));
    }
    if record.repeat < RELEASE_RUNS {
        blocks.push(Block::Note(format!(
            "{} run(s) a release: below {RELEASE_RUNS}, a role's CPU and memory are one unit a run and never significant; run with --repeat {RELEASE_RUNS} to judge the releases.",
            record.repeat
        )));
    }
    let Some(base) = by_value.get(&0) else {
        blocks.push(Block::Note(
            "the first release has no finished run: nothing to compare against".into(),
        ));
        let section = Section {
            title: "Release against release".into(),
            blocks,
        };
        return Ok(Some((section, Vec::new())));
    };
    let mut comparisons = Vec::new();
    for (point, runs) in &by_value {
        // Which SRI roles this value swapped, and which stayed linked, as the runs record.
        if let Some(roles) = (runs.iter())
            .filter_map(|r| r.host.as_ref())
            .find(|h| !h.sri_roles.is_empty())
        {
            blocks.push(Block::Para(format!(
                "{key} = {}: {}.",
                record.values[0].get(*point).map_or("-", String::as_str),
                roles.sri_roles.join("; ")
            )));
        }
    }
    for (point, runs) in by_value.iter().filter(|(p, _)| **p != 0) {
        let c = crate::compare::compare(base, runs)?;
        let flagged = c
            .metrics
            .iter()
            .filter(|m| m.delta.as_ref().is_some_and(|d| d.significant))
            .count();
        blocks.push(Block::Para(format!(
            "{} = {} against the first: {} metric(s), {flagged} significantly different ({}).",
            key,
            record.values[0].get(*point).map_or("-", String::as_str),
            c.metrics.len(),
            c.scope.says()
        )));
        for s in c.document().sections {
            blocks.extend(s.blocks);
        }
        comparisons.push(c);
    }
    let section = Section {
        title: "Release against release".into(),
        blocks,
    };
    Ok(Some((section, comparisons)))
}
