//! Run against run: every latency per side, CPU and memory per role, bandwidth per side,
//! with p50/p90/p99, the difference of means, its 95% bootstrap interval and whether it
//! is significant (as a node release benchmark report compares releases).

use crate::document::{Block, Document, Section};
use crate::run_data::RunData;
use analysis::bandwidth::{link_counters, link_rates};
use analysis::stats::{delta, Delta};
use anyhow::{bail, Result};
use probe::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Side or role the metric belongs to.
    pub subject: String,
    pub metric: String,
    pub unit: String,
    pub a: Dist,
    pub b: Dist,
    /// B against A; `None` when either run has no samples.
    pub delta: Option<Delta>,
}

impl MetricComparison {
    /// Worse in B by more than `pct` percent, and significantly so (every metric compared
    /// here is better lower: latency, CPU, memory, bytes).
    pub fn regressed(&self, pct: f64) -> bool {
        self.delta
            .as_ref()
            .is_some_and(|d| d.significant && d.delta > 0.0 && d.pct.is_some_and(|p| p > pct))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub run_a: String,
    pub run_b: String,
    pub metrics: Vec<MetricComparison>,
}

/// Per-event samples of every compared metric of a run, by (subject, metric, unit).
fn samples(run: &RunData) -> Result<BTreeMap<(String, String, String), Vec<f64>>> {
    let (Some(summary), Some(manifest)) = (&run.summary, &run.manifest) else {
        bail!(
            "{} is a partial run (no manifest.json): nothing to compare",
            run.dir.display()
        );
    };
    let mut out = BTreeMap::new();
    let mut put = |subject: &str, metric: &str, unit: &str, xs: Vec<f64>| {
        out.insert(
            (subject.to_string(), metric.to_string(), unit.to_string()),
            xs,
        );
    };
    for (name, side) in &summary.sides {
        put(name, "new job", "ms", side.samples.new_job_ms.clone());
        put(
            name,
            "new job after a block",
            "ms",
            side.samples.new_prevhash_job_ms.clone(),
        );
        put(
            name,
            "block propagation",
            "ms",
            side.samples.block_propagation_ms.clone(),
        );
        if let Some(roles) = manifest.sides.get(name) {
            let in_window =
                |t: &u64| (manifest.window_start_ns..=manifest.window_end_ns).contains(t);
            let counters: Vec<_> = link_counters(&run.events, &roles.link_role)
                .into_iter()
                .filter(|c| in_window(&c.0))
                .collect();
            let rates = link_rates(&counters);
            put(name, "farm tx", "B/s", rates.iter().map(|r| r.1).collect());
            put(name, "farm rx", "B/s", rates.iter().map(|r| r.2).collect());
        }
    }
    let mut roles: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for s in run
        .samples
        .iter()
        .filter(|s| s.t_ns >= manifest.window_start_ns && s.t_ns <= manifest.window_end_ns)
    {
        let e = roles.entry(&s.role).or_default();
        e.0.push(s.cpu_pct);
        e.1.push(s.rss_bytes as f64 / 1e6);
    }
    for (role, (cpu, rss)) in roles {
        put(role, "CPU", "% of a core", cpu);
        put(role, "RSS", "MB", rss);
    }
    Ok(out)
}

pub fn compare(a: &RunData, b: &RunData) -> Result<Comparison> {
    let (sa, sb) = (samples(a)?, samples(b)?);
    let metrics = sa
        .iter()
        .filter_map(|(key, xa)| {
            let xb = sb.get(key)?;
            Some(MetricComparison {
                subject: key.0.clone(),
                metric: key.1.clone(),
                unit: key.2.clone(),
                a: Dist::of(xa),
                b: Dist::of(xb),
                delta: delta(xa, xb),
            })
        })
        .collect();
    Ok(Comparison {
        run_a: a.dir.display().to_string(),
        run_b: b.dir.display().to_string(),
        metrics,
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
                        format!("{:+.1} to {:+.1}", d.ci_low, d.ci_high),
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
                blocks: vec![
                    Block::Table {
                        head: ["subject", "metric", "A p50 / p90 / p99", "B p50 / p90 / p99", "mean A -> B", "delta", "delta %", "95% CI of delta", "significant"]
                            .map(String::from)
                            .to_vec(),
                        rows,
                    },
                    Block::Para("Significant: the 95% bootstrap interval of the difference of means excludes zero. Every metric here is better lower.".into()),
                ],
            }],
        }
    }
}
