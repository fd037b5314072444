//! Run against run, worded: the numbers come from `analysis::compare`.

use crate::document::{Block, Document, Section};
use crate::run_data::RunData;
pub use analysis::compare::MetricComparison;
use analysis::compare::RunView;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub run_a: String,
    pub run_b: String,
    /// Each run's SV1 pools, by side: `A sv1: stratum-bench's built-in SV1 pool 0.1.0`.
    #[serde(default)]
    pub pools: Vec<String>,
    /// What the comparison can say: these runs differ, or these settings do.
    pub scope: analysis::compare::Scope,
    pub metrics: Vec<MetricComparison>,
}

/// The headline metrics worse than A beyond `pct` percent in any of `comparisons` (see
/// `analysis::compare::regressions`), one line each, naming B and what was judged.
pub fn regressions(comparisons: &[Comparison], pct: f64) -> Vec<String> {
    (comparisons.iter())
        .flat_map(|c| {
            analysis::compare::regressions(&c.metrics, pct)
                .into_iter()
                .map(move |m| {
                    format!(
                        "{}: {} {} ({}); judged: {}",
                        c.run_b,
                        m.subject,
                        m.metric,
                        m.unit,
                        c.scope.says()
                    )
                })
        })
        .collect()
}

/// B against A, as the analysis compares them, each side one run or several (seeds of one
/// setting); a partial run has nothing to compare.
pub fn compare(a: &[RunData], b: &[RunData]) -> Result<Comparison> {
    let view_a = a.iter().map(view).collect::<Result<Vec<_>>>()?;
    let view_b = b.iter().map(view).collect::<Result<Vec<_>>>()?;
    let mut pools: Vec<String> = [("A", &view_a), ("B", &view_b)]
        .into_iter()
        .flat_map(|(run, views)| {
            views.iter().flat_map(move |v| {
                v.manifest.sides.iter().filter_map(move |(side, roles)| {
                    Some(format!("{run} {side}: {}", roles.pool_software.as_deref()?))
                })
            })
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    pools.retain(|p| seen.insert(p.clone()));
    Ok(Comparison {
        run_a: names(a),
        run_b: names(b),
        pools,
        scope: analysis::compare::Scope::of(a.len(), b.len()),
        metrics: analysis::compare::compare(&view_a, &view_b),
    })
}

/// A side's runs, as the comparison names them.
fn names(runs: &[RunData]) -> String {
    let dirs: Vec<String> = runs.iter().map(|r| r.dir.display().to_string()).collect();
    match dirs.len() {
        1 => dirs.concat(),
        n => format!("{n} runs ({})", dirs.join(", ")),
    }
}

fn view(run: &RunData) -> Result<RunView<'_>> {
    let (Some(summary), Some(manifest)) = (&run.summary, &run.manifest) else {
        bail!(
            "{} is a partial run (no manifest.json): nothing to compare",
            run.dir.display()
        );
    };
    Ok(RunView {
        summary,
        charts: &run.charts,
        manifest,
        samples: &run.samples,
    })
}

impl Comparison {
    pub fn document(&self) -> Document {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
        let rows = self
            .metrics
            .iter()
            .map(|m| {
                let (d, pct, ci, sig) = match &m.delta {
                    Some(d) => (
                        format!("{:+.1}", d.delta),
                        d.pct.map_or("-".into(), |p| format!("{p:+.1}%")),
                        d.ci.map_or(
                            format!("too few (n = {} and {})", d.units_a, d.units_b),
                            |(lo, hi)| format!("{lo:+.1} to {hi:+.1}"),
                        ),
                        if d.significant { "yes" } else { "no" }.to_string(),
                    ),
                    None => ("-".into(), "-".into(), "-".into(), "too few samples".into()),
                };
                vec![
                    m.subject.clone(),
                    format!("{} ({})", m.metric, m.unit),
                    format!("{} / {} / {}", f(m.a.p50), f(m.a.p90), f(m.a.p99)),
                    format!("{} / {} / {}", f(m.b.p50), f(m.b.p90), f(m.b.p99)),
                    format!("{} -> {}", f(m.a.mean), f(m.b.mean)),
                    d,
                    pct,
                    ci,
                    sig,
                ]
            })
            .collect();
        Document {
            title: "stratum-bench comparison".into(),
            subtitle: format!("A: {}  B: {}", self.run_a, self.run_b),
            sections: vec![Section {
                title: "B against A".into(),
                blocks: [
                    Some(Block::Para(format!("What this comparison can say: whether {}.", self.scope.says()))),
                    (!self.pools.is_empty())
                        .then(|| Block::Para(format!("SV1 pools: {}.", self.pools.join("; ")))),
                    Some(Block::Table {
                        head: ["subject", "metric", "first p50 / p90 / p99", "this p50 / p90 / p99", "mean first -> this", "delta", "delta %", "95% CI of delta", "significant"]
                            .map(String::from)
                            .to_vec(),
                        rows,
                    }),
                    Some(Block::Para(format!("Significant: the 95% bootstrap interval of the difference of means excludes zero, and the difference survives Benjamini-Hochberg control of the false discovery rate at {:.0}% across this table. With one run a side, latencies are resampled by the tip whose broadcast they belong to and per-second bandwidth by batch means; with several, latencies by run and then by tip within the runs drawn, and bandwidth by each run's level; a role's CPU and memory are levels a run settles at, set by its seed's workload and different from run to run, so one run is one unit and their difference is shown, never called significant; below {} such units a side is too few for an interval. Every metric here is better lower.", analysis::headline::FDR * 100.0, analysis::stats::MIN_UNITS))),
                ]
                .into_iter()
                .flatten()
                .collect(),
            }],
        }
    }
}
