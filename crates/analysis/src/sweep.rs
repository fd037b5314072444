//! A sweep's answer: every metric as a curve per side against the varied key, each point
//! with its 95% interval; the differences against the baseline as curves; the worth
//! against the key; the scale readings (link bytes per miner, pool CPU per share); and,
//! where the key is a number, a fitted line per side with its slope's interval and the
//! fit's residuals. The report only draws what this computes.
//!
//! A point run once keeps that run's interval (by tips, or batches of seconds). A point
//! run several times takes the runs as the units: the mean of the runs' estimates with a
//! t interval over them, never narrower than the runs' own intervals combined (two runs
//! that agree by chance do not make a point exact).
//!
//! The line is weighted least squares, each point weighted by its interval (1 / se^2),
//! the slope's interval from those weights; with more points than two, widened by the
//! residuals when they scatter more than the intervals say (the points do not lie on a
//! line as well as their precision claims). Without intervals, ordinary least squares
//! with the residuals' spread, which needs three points.

use crate::headline::Headline;
use crate::stats::{t975, Estimate, Z95};
use crate::worth::WorthAssumptions;
use crate::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The file in a sweep directory that holds its plan, each run's state and the curves.
pub const SWEEP_FILE: &str = "sweep.json";

/// Where a sweep keeps each run's directory.
pub const POINTS_DIR: &str = "points";

/// What `sweep.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// The scenario file, as given.
    pub scenario: String,
    pub name: String,
    /// The varied keys in order, and each one's values.
    pub keys: Vec<String>,
    pub values: Vec<Vec<String>>,
    pub zip: bool,
    pub repeat: u32,
    /// A digest of the scenario file's text: a sweep goes on only with the same file.
    #[serde(default)]
    pub scenario_digest: String,
    /// What every run is given beyond its point (`--set`, `--duration`, the worth flags):
    /// a sweep goes on only with the same.
    #[serde(default)]
    pub common_args: Vec<String>,
    /// Runs at once; above 1, each on 2 CPUs of its own, its fleets apart from its roles.
    #[serde(default)]
    pub jobs: usize,
    /// The scenario's duration and warm-up, as every point runs them (seconds).
    pub run_s: f64,
    /// One set for the whole sweep.
    pub worth: WorthAssumptions,
    pub runs: Vec<RunRecord>,
    /// Written with the report, from the finished runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<SweepAnalysis>,
}

/// The value of a `roles.<role>.command` key (and of `release`) that means the pinned SRI
/// build linked into stratum-bench.
pub const BUILTIN: &str = "builtin";

/// The pseudo-key of a whole release: a directory of pre-built SRI binaries (or
/// `builtin`).
pub const RELEASE_KEY: &str = "release";

/// The key sets which build of the SRI roles runs: a release or one role's command.
pub fn is_release_key(key: &str) -> bool {
    key == RELEASE_KEY || (key.starts_with("roles.") && key.ends_with(".command"))
}

impl SweepRecord {
    /// The record in `dir`.
    pub fn load(dir: &std::path::Path) -> anyhow::Result<SweepRecord> {
        use anyhow::Context;
        let path = dir.join(SWEEP_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "no sweep at {} (stratum-bench sweep writes one)",
                path.display()
            )
        })?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a sweep record", path.display()))
    }

    /// Writes the record into `dir` whole or not at all (a reader never sees half).
    pub fn save(&self, dir: &std::path::Path) -> anyhow::Result<()> {
        let tmp = dir.join(format!("{SWEEP_FILE}.tmp"));
        std::fs::write(&tmp, serde_json::to_string_pretty(self)? + "\n")?;
        std::fs::rename(&tmp, dir.join(SWEEP_FILE))?;
        Ok(())
    }

    /// Runs in `status`.
    pub fn count(&self, status: RunStatus) -> usize {
        self.runs.iter().filter(|r| r.status == status).count()
    }
}

/// One run of a sweep: a point's settings and which repeat of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRun {
    /// Its directory under the sweep's `points/`.
    pub name: String,
    /// Index of the point (the settings), repeats sharing it.
    pub point: usize,
    /// `(key, value)` in the plan's key order.
    pub settings: Vec<(String, String)>,
    pub repeat: u32,
    /// The run's seed: the scenario's, plus the repeat.
    pub seed: u64,
}

/// One run of the sweep and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    #[serde(flatten)]
    pub run: PointRun,
    pub status: RunStatus,
    /// Wall time of the run, when it ran in this sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Not run yet.
    Pending,
    /// Its run directory is whole (a summary of a run that was not interrupted).
    Done,
    /// The run ended in an error (recorded); the sweep went on.
    Failed,
    /// Stopped by Ctrl-C: run again, it starts over.
    Interrupted,
}

/// One finished run of a sweep, as the analysis reads it.
pub struct SweepRun<'a> {
    /// `(key, value)` of the point, the varied keys in order.
    pub settings: &'a [(String, String)],
    pub summary: &'a Summary,
}

/// What the curves are of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CurveKind {
    /// Each side's own value.
    Side,
    /// Each side against the baseline: its difference.
    Difference,
    /// Sats a day for the farm the sweep's worth assumptions describe.
    Worth,
    /// What limits mining at scale: per-miner traffic, pool CPU per share.
    Scale,
}

/// One metric across the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curves {
    pub metric: String,
    pub label: String,
    pub kind: CurveKind,
    pub points: Vec<CurvePoint>,
    /// One per side and panel, where the key is a number and two points or more have
    /// values.
    pub fits: Vec<Fit>,
}

/// One side at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub side: String,
    /// The other varied keys' settings ("miners.count=100"); empty with one key.
    pub panel: String,
    /// The value of the key along the x axis, as given.
    pub x: String,
    pub x_value: Option<f64>,
    pub value: Option<f64>,
    /// 95% interval; `None` when no run had one.
    pub ci: Option<(f64, f64)>,
    /// Standard error of `value`, what a line through the points weighs it by.
    pub se: Option<f64>,
    /// Runs behind the point.
    pub runs: usize,
}

/// `value = intercept + slope x key`, fitted to one side's points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub side: String,
    pub panel: String,
    pub intercept: f64,
    pub slope: f64,
    /// 95%; `None` when the points cannot give one (two points without intervals).
    pub slope_ci: Option<(f64, f64)>,
    pub points: usize,
    /// `(x, value - fitted)` at each point.
    pub residuals: Vec<(f64, f64)>,
}

/// The whole sweep's curves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAnalysis {
    /// The key along the x axis: the first varied.
    pub key: String,
    /// The other varied keys: one panel per combination of their values.
    pub panels_by: Vec<String>,
    /// Every value of `key` is a number.
    pub numeric: bool,
    pub baseline: String,
    pub curves: Vec<Curves>,
    /// Where a farm-node side's new-block job crosses the baseline's, when the sweep
    /// varies the farm node's lag ([`LAG_KEY`]): its break-even lag over every point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crossings: Vec<Crossing>,
}

/// The scenario key of the farm node's lag: a sweep along it has crossings.
pub const LAG_KEY: &str = "farm_node.block_lag";

/// A side's break-even lag along a sweep of the farm node's lag: below it the side's
/// miners reach new-block work sooner than the baseline's, above it later. Every point's
/// run measures the break-even itself (the lag moves the side's job, not the baseline's
/// or the roles' own time): `lag_ms` is their mean. The points share the seed's network
/// (they are not independent repeats), so `ci` is the envelope of their own intervals,
/// not a narrower combined one. `line_lag_ms` is where the fitted line of the new-block
/// job's difference crosses zero: the same crossing read from the curves, a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crossing {
    pub side: String,
    pub panel: String,
    pub lag_ms: f64,
    pub ci: Option<(f64, f64)>,
    pub runs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_lag_ms: Option<f64>,
}

/// One run's reading of one metric for one side.
struct Reading {
    metric: String,
    label: String,
    kind: CurveKind,
    side: String,
    estimate: Estimate,
}

/// The sweep's curves from its finished runs; `keys` the varied keys in order. With
/// `zip` the keys move together along one curve (no panels).
pub fn analyse(keys: &[String], zip: bool, runs: &[SweepRun]) -> SweepAnalysis {
    let key = keys.first().cloned().unwrap_or_default();
    let x_of = |settings: &[(String, String)]| {
        (settings.iter())
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let panel_of = |settings: &[(String, String)]| {
        (settings.iter())
            .filter(|(k, _)| *k != key && !zip)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Points in the order the sweep ran them, which is the order of the values given.
    let mut order: Vec<(String, String)> = Vec::new();
    // (metric, side, panel, x) -> the runs' estimates
    let mut grouped: BTreeMap<(String, String, String, String), Vec<Estimate>> = BTreeMap::new();
    let mut metrics: Vec<(String, String, CurveKind)> = Vec::new();
    let mut baseline = String::new();
    for run in runs {
        let (x, panel) = (x_of(run.settings), panel_of(run.settings));
        if !order.contains(&(panel.clone(), x.clone())) {
            order.push((panel.clone(), x.clone()));
        }
        baseline = run.summary.baseline.clone();
        for r in readings(run.summary) {
            if !metrics.iter().any(|(m, _, _)| *m == r.metric) {
                metrics.push((r.metric.clone(), r.label.clone(), r.kind));
            }
            (grouped
                .entry((r.metric, r.side, panel.clone(), x.clone()))
                .or_default())
            .push(r.estimate);
        }
    }
    let numeric = !order.is_empty() && order.iter().all(|(_, x)| x.parse::<f64>().is_ok());
    if numeric {
        // Along the axis, whatever order the values were given in.
        let at = |x: &str| x.parse::<f64>().unwrap_or_default();
        order.sort_by(|a, b| a.0.cmp(&b.0).then(at(&a.1).total_cmp(&at(&b.1))));
    }
    let curves: Vec<Curves> = (metrics.into_iter())
        .map(|(metric, label, kind)| {
            let mut points = Vec::new();
            let sides: Vec<String> = {
                let mut s: Vec<String> = (grouped.keys())
                    .filter(|(m, ..)| *m == metric)
                    .map(|(_, side, ..)| side.clone())
                    .collect();
                s.dedup();
                s
            };
            for side in &sides {
                for (panel, x) in &order {
                    let k = (metric.clone(), side.clone(), panel.clone(), x.clone());
                    let Some(estimates) = grouped.get(&k) else {
                        continue;
                    };
                    let c = combine(estimates);
                    points.push(CurvePoint {
                        side: side.clone(),
                        panel: panel.clone(),
                        x: x.clone(),
                        x_value: x.parse().ok(),
                        value: c.value,
                        ci: c.ci,
                        se: c.se,
                        runs: estimates.iter().filter(|e| e.point.is_some()).count(),
                    });
                }
            }
            let fits = if numeric { fits(&points) } else { Vec::new() };
            Curves {
                metric,
                label,
                kind,
                points,
                fits,
            }
        })
        .collect();
    // Along the lag, the runs' break-evens are one quantity measured at every point.
    let mut crossings = Vec::new();
    if key == LAG_KEY && numeric {
        let mut by_side: BTreeMap<(String, String), Vec<Estimate>> = BTreeMap::new();
        for ((metric, side, panel, _), estimates) in &grouped {
            if metric == BREAK_EVEN {
                (by_side.entry((side.clone(), panel.clone())).or_default())
                    .extend(estimates.iter().cloned());
            }
        }
        let difference_line = |side: &str, panel: &str| {
            (curves.iter())
                .filter(|c| c.metric == "NewPrevhashJobMsDifference")
                .flat_map(|c| &c.fits)
                .find(|f| f.side == side && f.panel == panel && f.slope > 0.0)
                .map(|f| -f.intercept / f.slope)
        };
        for ((side, panel), estimates) in by_side {
            let points: Vec<f64> = estimates.iter().filter_map(|e| e.point).collect();
            if points.is_empty() {
                continue;
            }
            let cis: Vec<(f64, f64)> = estimates.iter().filter_map(|e| e.ci).collect();
            let envelope = (!cis.is_empty()).then(|| {
                let lo = cis.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
                let hi = cis.iter().map(|c| c.1).fold(f64::NEG_INFINITY, f64::max);
                (lo, hi)
            });
            crossings.push(Crossing {
                line_lag_ms: difference_line(&side, &panel),
                lag_ms: points.iter().sum::<f64>() / points.len() as f64,
                ci: envelope,
                runs: points.len(),
                side,
                panel,
            });
        }
    }
    SweepAnalysis {
        key,
        panels_by: keys.iter().skip(1).cloned().collect(),
        numeric,
        baseline,
        curves,
        crossings,
    }
}

/// The reading of a farm-node side's break-even lag.
const BREAK_EVEN: &str = "BreakEvenLagMs";

/// Every reading one run gives.
fn readings(s: &Summary) -> Vec<Reading> {
    let mut out = Vec::new();
    let mut push = |metric: &str, label: &str, kind: CurveKind, side: &str, estimate: Estimate| {
        out.push(Reading {
            metric: metric.into(),
            label: label.into(),
            kind,
            side: side.into(),
            estimate,
        })
    };
    for (name, side) in &s.sides {
        for h in Headline::ALL {
            push(
                &format!("{h:?}"),
                h.label(),
                CurveKind::Side,
                name,
                side_estimate(h, side),
            );
        }
        if let Some(lag) = &side.farm_node_lag {
            push(
                BREAK_EVEN,
                "break-even farm node lag, ms (below it, new-block work sooner than the baseline's)",
                CurveKind::Side,
                name,
                lag.break_even_lag_ms.clone(),
            );
        }
        let miners = f64::from(side.miners.max(1));
        push(
            "PoolLinkBytesPerMiner",
            "bytes/s per miner at the pool's end of the link (both ways)",
            CurveKind::Scale,
            name,
            scaled(&side.farm_rates.pool_both, 1.0 / miners),
        );
        if let Some((_, pool)) = side
            .roles
            .iter()
            .find(|(role, _)| role.starts_with("pool-"))
        {
            let cpu = Estimate::mean_of(&pool.cpu_pct);
            push(
                "PoolCpuPct",
                "pool CPU, % of a core",
                CurveKind::Scale,
                name,
                cpu.clone(),
            );
            // Per accepted share, in ms: the share rate is counted, not estimated, so the
            // interval is the CPU's. Behind an aggregating translator the pool sees only
            // the shares that meet the one channel's target, a few a minute whatever the
            // miners: its CPU in all is the reading to compare there.
            let shares_per_s = side.shares.accepted as f64 / s.duration_s;
            if shares_per_s > 0.0 {
                push(
                    "PoolCpuMsPerShare",
                    "pool CPU ms per accepted share",
                    CurveKind::Scale,
                    name,
                    scaled(&cpu, 10.0 / shares_per_s),
                );
            }
        }
    }
    for (name, rows) in &s.verdict {
        for r in rows {
            let estimate = Estimate {
                point: r.delta,
                ci: r.ci,
                units: r.units.0.min(r.units.1),
            };
            push(
                &format!("{:?}Difference", r.metric),
                r.metric.label(),
                CurveKind::Difference,
                name,
                estimate,
            );
        }
    }
    for (name, rows) in &s.worth {
        if let Some(w) = rows.iter().find(|w| w.metric == Headline::StaleWaitMs) {
            push(
                "WorthStaleWait",
                "worth of the stale work after a block, sats a day",
                CurveKind::Worth,
                name,
                Estimate {
                    point: w.sats_per_day,
                    ci: w.ci,
                    units: 0,
                },
            );
        }
    }
    for (name, c) in &s.conclusions {
        push(
            "WorthTotal",
            "worth of what the protocol sets, sats a day (sum of the priced rows)",
            CurveKind::Worth,
            name,
            Estimate {
                point: c.worth_sats_per_day,
                ci: None,
                units: 0,
            },
        );
    }
    out
}

/// A side's own value of a headline metric, with its interval where the run has one.
fn side_estimate(h: Headline, side: &crate::side::SideSummary) -> Estimate {
    let counted = |p: Option<f64>, ci: Option<(f64, f64)>| Estimate {
        point: p,
        ci,
        units: 0,
    };
    match h {
        Headline::NewJobMs => Estimate::mean_of(&side.new_job_ms),
        Headline::NewPrevhashJobMs => Estimate::mean_of(&side.new_prevhash_job_ms),
        Headline::StaleWaitMs => Estimate::mean_of(&side.stale_wait_ms),
        Headline::BlockPropagationMs => Estimate::mean_of(&side.block_propagation_ms),
        Headline::TemplateValueSats => Estimate::mean_of(&side.template_value_sats),
        Headline::StaleSharesPct => counted(side.shares.stale_pct, side.shares.stale_pct_ci),
        Headline::AcceptancePct => counted(side.shares.acceptance_pct, None),
        Headline::FarmTxBytesPerS => side.farm_rates.tx.clone(),
        Headline::FarmRxBytesPerS => side.farm_rates.rx.clone(),
    }
}

fn scaled(e: &Estimate, by: f64) -> Estimate {
    Estimate {
        point: e.point.map(|p| p * by),
        ci: e.ci.map(|(lo, hi)| (lo * by, hi * by)),
        units: e.units,
    }
}

/// A point's value from its runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Combined {
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub se: Option<f64>,
}

/// The runs of one point as one value and interval: one run as it is (its 95% interval's
/// half-width over 1.96 as its standard error); several by the runs (mean, t interval over
/// the runs), at least as wide as their own intervals combined.
pub fn combine(estimates: &[Estimate]) -> Combined {
    let measured: Vec<&Estimate> = estimates.iter().filter(|e| e.point.is_some()).collect();
    let own_se = |e: &Estimate| e.ci.map(|(lo, hi)| (hi - lo) / 2.0 / Z95);
    match measured.as_slice() {
        [] => Combined {
            value: None,
            ci: None,
            se: None,
        },
        [one] => Combined {
            value: one.point,
            ci: one.ci,
            se: own_se(one),
        },
        runs => {
            let n = runs.len() as f64;
            let xs: Vec<f64> = runs.iter().filter_map(|e| e.point).collect();
            let mean = xs.iter().sum::<f64>() / n;
            let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            let between_se = sd / n.sqrt();
            let within_se = (runs.iter())
                .map(|e| own_se(e).map(|se| se * se))
                .sum::<Option<f64>>()
                .map(|s| s.sqrt() / n);
            let half = (t975(n - 1.0) * between_se).max(within_se.map_or(0.0, |w| Z95 * w));
            Combined {
                value: Some(mean),
                ci: Some((mean - half, mean + half)),
                se: Some(between_se.max(within_se.unwrap_or(0.0))),
            }
        }
    }
}

/// A line per side and panel through its points.
fn fits(points: &[CurvePoint]) -> Vec<Fit> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for p in points {
        let g = (p.side.clone(), p.panel.clone());
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    (groups.into_iter())
        .filter_map(|(side, panel)| {
            let xy: Vec<(f64, f64, Option<f64>)> = (points.iter())
                .filter(|p| p.side == side && p.panel == panel)
                .filter_map(|p| Some((p.x_value?, p.value?, p.se)))
                .collect();
            let line = fit_line(&xy)?;
            Some(Fit {
                side,
                panel,
                ..line
            })
        })
        .collect()
}

/// Weighted least squares of `(x, y, se of y)`; see the module's words.
pub fn fit_line(points: &[(f64, f64, Option<f64>)]) -> Option<Fit> {
    let n = points.len();
    let weighted = points.iter().all(|p| p.2.is_some_and(|se| se > 0.0));
    let w = |p: &(f64, f64, Option<f64>)| match p.2 {
        Some(se) if weighted => 1.0 / (se * se),
        _ => 1.0,
    };
    let sw: f64 = points.iter().map(w).sum();
    if n < 2 || sw <= 0.0 {
        return None;
    }
    let xm = points.iter().map(|p| w(p) * p.0).sum::<f64>() / sw;
    let ym = points.iter().map(|p| w(p) * p.1).sum::<f64>() / sw;
    let sxx: f64 = points.iter().map(|p| w(p) * (p.0 - xm).powi(2)).sum();
    if sxx <= 0.0 {
        return None; // every point at one x: no slope
    }
    let slope = points
        .iter()
        .map(|p| w(p) * (p.0 - xm) * (p.1 - ym))
        .sum::<f64>()
        / sxx;
    let intercept = ym - slope * xm;
    let residuals: Vec<(f64, f64)> = (points.iter())
        .map(|p| (p.0, p.1 - intercept - slope * p.0))
        .collect();
    let df = n as f64 - 2.0;
    let scatter = (points.iter().zip(&residuals))
        .map(|(p, r)| w(p) * r.1 * r.1)
        .sum::<f64>();
    let half = if weighted {
        // The points' own precision; scatter beyond it (a ratio over 1) widens the line's,
        // never narrows it.
        let from_intervals = Z95 * (1.0 / sxx).sqrt();
        let from_scatter = (df > 0.0).then(|| t975(df) * (scatter / df / sxx).sqrt());
        Some(from_scatter.map_or(from_intervals, |s| s.max(from_intervals)))
    } else {
        (df > 0.0).then(|| t975(df) * (scatter / df / sxx).sqrt())
    };
    Some(Fit {
        side: String::new(),
        panel: String::new(),
        intercept,
        slope,
        slope_ci: half.map(|h| (slope - h, slope + h)),
        points: n,
        residuals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        computed, farm_side, job, job_to, manifest, sv1_side, template, tip, tip_at, MS,
    };
    use probe::TipCause;

    /// A run of ten tips 900 ms apart: SV1's miner gets each tip's job `sv1_ms` after it
    /// (1 ms more on odd tips), A's from the farm's node 2 ms after it (the same wobble).
    /// The sweep along `key` of one run a point: `(value, its summary)`.
    fn analysed(key: &str, points: &[(&str, &Summary)]) -> SweepAnalysis {
        let settings: Vec<Vec<(String, String)>> = (points.iter())
            .map(|(x, _)| vec![(key.to_string(), x.to_string())])
            .collect();
        let runs: Vec<SweepRun> = (settings.iter().zip(points))
            .map(|(settings, (_, summary))| SweepRun { settings, summary })
            .collect();
        analyse(&[key.into()], false, &runs)
    }

    fn run(sv1_ms: u64) -> Summary {
        let m = manifest(vec![sv1_side(), farm_side()]);
        let mut events = Vec::new();
        for k in 1..=10u64 {
            let (t, p, wobble) = (k * 900 * MS, format!("P{k}"), k % 2);
            let (a, f) = (format!("A{k}"), format!("F{k}"));
            events.push(tip(t, &p, TipCause::Network));
            events.push(template(t, "node", &a, &p, 100));
            events.push(template(t, "node-farm", &f, &p, 100));
            events.push(job(t + (sv1_ms + wobble) * MS, 0, &p, Some(&a)));
            events.push(job_to("miners-a", t + (2 + wobble) * MS, 0, &p, Some(&f)));
        }
        computed(&m, &events, &[])
    }

    /// A sweep of the farm node's lag, worked by hand: ten tips 900 ms apart; SV1's
    /// miner gets new-block work 50 or 51 ms after each (odd tips 51), A's farm node takes
    /// each tip `lag` ms late and A's miner gets work 2 or 3 ms after that. A's own time
    /// is 2 or 3 ms, with SV1's wobble: the break-even per tip is (50 + w) - (2 + w) =
    /// 48 ms at every tip and at every lag, so the crossing is 48 ms, its interval 48 to 48.
    #[test]
    fn a_sweep_of_the_farm_nodes_lag_crosses_sv1_at_the_break_even() {
        let lagged = |lag: u64| {
            let m = manifest(vec![sv1_side(), farm_side()]);
            let mut events = Vec::new();
            for k in 1..=10u64 {
                let (t, p, wobble) = (k * 900 * MS, format!("P{k}"), k % 2);
                let (a, f) = (format!("A{k}"), format!("F{k}"));
                events.push(tip(t, &p, TipCause::Network));
                events.push(tip_at("node-farm", t + lag * MS, &p, TipCause::Network));
                events.push(template(t, "node", &a, &p, 100));
                events.push(template(t + lag * MS, "node-farm", &f, &p, 100));
                events.push(job(t + (50 + wobble) * MS, 0, &p, Some(&a)));
                let at = t + (lag + 2 + wobble) * MS;
                events.push(job_to("miners-a", at, 0, &p, Some(&f)));
            }
            computed(&m, &events, &[])
        };
        let (none, late) = (lagged(0), lagged(100));
        let lag = none.sides["sv2-a"].farm_node_lag.as_ref().unwrap();
        assert_eq!(lag.lag_ms.mean, Some(0.0));
        assert!(close(lag.own_ms.mean.unwrap(), 2.5));
        let a = analysed(LAG_KEY, &[("0", &none), ("100", &late)]);
        let [c] = a.crossings.as_slice() else {
            panic!("{:?}", a.crossings)
        };
        assert_eq!((c.side.as_str(), c.runs), ("sv2-a", 2));
        assert!(close(c.lag_ms, 48.0), "{c:?}");
        // A against SV1: -48 ms at no lag, +52 at 100: the line crosses 0 at 48 ms too.
        assert!(close(c.line_lag_ms.unwrap(), 48.0), "{c:?}");
        let (lo, hi) = c.ci.unwrap();
        assert!(close(lo, 48.0) && close(hi, 48.0), "{lo} {hi}");
        // A's new-block job moves one for one with the lag: slope 1.
        let job = (a.curves.iter())
            .find(|c| c.metric == "NewPrevhashJobMs" && c.kind == CurveKind::Side)
            .unwrap();
        let fit = job.fits.iter().find(|f| f.side == "sv2-a").unwrap();
        assert!(close(fit.slope, 1.0), "{fit:?}");
        // Along another key, no crossing is claimed.
        assert!(analysed("link.rtt_ms", &[("100", &none)])
            .crossings
            .is_empty());
    }

    /// Worked by hand: at x = 100 SV1's new-block job is 50 or 51 ms (mean 50.5), at
    /// x = 200 100 or 101 (mean 100.5): slope 50 / 100 = 0.5, intercept 0.5. A's is 2.5
    /// at both: slope 0, its interval holding 0. A against SV1: -48 and -98, slope -0.5.
    #[test]
    fn curves_and_slopes_of_two_points_worked_by_hand() {
        let (near, far) = (run(50), run(100));
        let a = analysed("link.rtt_ms", &[("100", &near), ("200", &far)]);
        assert!(a.numeric && a.panels_by.is_empty() && a.baseline == "sv1");
        let curve = |metric: &str, kind: CurveKind| {
            (a.curves.iter())
                .find(|c| c.metric == metric && c.kind == kind)
                .unwrap_or_else(|| panic!("{metric}"))
        };
        let side = curve("NewPrevhashJobMs", CurveKind::Side);
        let sv1: Vec<f64> = (side.points.iter())
            .filter(|p| p.side == "sv1")
            .filter_map(|p| p.value)
            .collect();
        assert!(close(sv1[0], 50.5) && close(sv1[1], 100.5), "{sv1:?}");
        let fit = |c: &Curves, side: &str| c.fits.iter().find(|f| f.side == side).unwrap().clone();
        let f = fit(side, "sv1");
        assert!(close(f.slope, 0.5) && close(f.intercept, 0.5), "{f:?}");
        let (lo, hi) = f.slope_ci.unwrap();
        assert!(lo < 0.5 && 0.5 < hi, "{lo} {hi}");
        let farm = fit(side, "sv2-a");
        let (lo, hi) = farm.slope_ci.unwrap();
        assert!(close(farm.slope, 0.0) && lo <= 0.0 && 0.0 <= hi, "{farm:?}");
        let d = fit(
            curve("NewPrevhashJobMsDifference", CurveKind::Difference),
            "sv2-a",
        );
        assert!(close(d.slope, -0.5) && close(d.intercept, 2.0), "{d:?}");
        // A key that is no number: curves, and no lines.
        let (sa, sb) = (
            vec![("release".to_string(), "builtin".to_string())],
            vec![("release".to_string(), "/opt/next".to_string())],
        );
        let named = [
            SweepRun {
                settings: &sa,
                summary: &near,
            },
            SweepRun {
                settings: &sb,
                summary: &far,
            },
        ];
        let a = analyse(&["release".into()], false, &named);
        assert!(!a.numeric && a.curves.iter().all(|c| c.fits.is_empty()));
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-3
    }

    /// Worked by hand: (0, 1) and (10, 6), each +-1 (se 1): slope 0.5, intercept 1;
    /// the weighted spread of x is 25 + 25 = 50, so the slope's se is sqrt(1/50) =
    /// 0.14142 and its interval 0.5 +- 1.96 x 0.14142 = [0.2228, 0.7772].
    #[test]
    fn two_points_with_intervals_give_a_slope_with_one() {
        let f = fit_line(&[(0.0, 1.0, Some(1.0)), (10.0, 6.0, Some(1.0))]).unwrap();
        assert!(close(f.slope, 0.5) && close(f.intercept, 1.0), "{f:?}");
        let (lo, hi) = f.slope_ci.unwrap();
        assert!(close(lo, 0.2228) && close(hi, 0.7772), "{lo} {hi}");
        assert!(f.residuals.iter().all(|r| r.1.abs() < 1e-9));
    }

    /// Worked by hand, no intervals: (0, 0), (1, 1), (2, 3). Mean x 1, mean y 4/3,
    /// Sxx 2, Sxy 3: slope 1.5, intercept -1/6; residuals 1/6, -1/3, 1/6 (sum of squares
    /// 1/6), s^2 = 1/6 on 1 df, se = sqrt(1/12) = 0.28868, t(1) 12.706: +-3.6679.
    #[test]
    fn three_points_without_intervals_take_the_residuals_spread() {
        let f = fit_line(&[(0.0, 0.0, None), (1.0, 1.0, None), (2.0, 3.0, None)]).unwrap();
        assert!(
            close(f.slope, 1.5) && close(f.intercept, -1.0 / 6.0),
            "{f:?}"
        );
        let (lo, hi) = f.slope_ci.unwrap();
        assert!(
            close(lo, 1.5 - 3.6679) && close(hi, 1.5 + 3.6679),
            "{lo} {hi}"
        );
        assert!(close(f.residuals[1].1, -1.0 / 3.0));
        // Two points and no intervals: a slope, and nothing to say how sure it is.
        let two = fit_line(&[(0.0, 0.0, None), (1.0, 1.0, None)]).unwrap();
        assert_eq!(two.slope_ci, None);
        // One x only: no line.
        assert!(fit_line(&[(5.0, 0.0, None), (5.0, 1.0, None)]).is_none());
    }

    /// Scatter beyond the points' intervals widens the slope's: (0, 0), (1, 3), (2, 2),
    /// each se 0.1 (weights 100). Mean x 1, mean y 5/3; Sxx = 100 x 2 = 200, Sxy = 100 x
    /// (5/3 + 1/3) = 200: slope 1, intercept 2/3; residuals -2/3, 4/3, -2/3 (weighted sum
    /// of squares 100 x 24/9 = 266.67 on 1 df: phi 266.67), so the se is sqrt(266.67 /
    /// 200) = 1.1547 and the half-width t(1) 12.706 x 1.1547 = 14.672, where the
    /// intervals alone would give 1.96 x sqrt(1/200) = 0.139.
    #[test]
    fn scatter_beyond_the_intervals_widens_the_slope() {
        let f = fit_line(&[
            (0.0, 0.0, Some(0.1)),
            (1.0, 3.0, Some(0.1)),
            (2.0, 2.0, Some(0.1)),
        ])
        .unwrap();
        assert!(
            close(f.slope, 1.0) && close(f.intercept, 2.0 / 3.0),
            "{f:?}"
        );
        let (lo, hi) = f.slope_ci.unwrap();
        assert!(
            close(hi - 1.0, 14.672) && close(1.0 - lo, 14.672),
            "{lo} {hi}"
        );
    }

    /// Three runs of a point, 10, 12 and 14, each +-1: mean 12, sd 2, t(2) 4.303 x 2 /
    /// sqrt 3 = 4.9686 over the runs, wider than their own intervals combined (sqrt 3 / 3
    /// = 0.577): [7.0314, 16.9686]. One run keeps its own interval.
    #[test]
    fn repeats_are_the_units_of_a_point() {
        let e = |p: f64| Estimate {
            point: Some(p),
            ci: Some((p - 1.0, p + 1.0)),
            units: 10,
        };
        let c = combine(&[e(10.0), e(12.0), e(14.0)]);
        assert!(close(c.value.unwrap(), 12.0));
        // Its standard error, what a line weighs it by: 2 / sqrt 3 = 1.1547.
        assert!(close(c.se.unwrap(), 1.1547), "{c:?}");
        let (lo, hi) = c.ci.unwrap();
        assert!(close(lo, 7.0314) && close(hi, 16.9686), "{lo} {hi}");
        // Runs that agree exactly still carry their own precision: sqrt(2) / 2.
        let (lo, hi) = combine(&[e(5.0), e(5.0)]).ci.unwrap();
        let half = 2.0_f64.sqrt() / 2.0;
        assert!(close(hi - 5.0, half) && close(5.0 - lo, half), "{lo} {hi}");
        let one = combine(&[e(3.0)]);
        assert_eq!((one.value, one.ci), (Some(3.0), Some((2.0, 4.0))));
        assert!(close(one.se.unwrap(), 1.0 / Z95));
        assert_eq!(combine(&[]).value, None);
    }
}
