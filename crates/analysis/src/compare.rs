//! Run against run: every per-event latency per side, CPU and memory per role, bandwidth
//! per side, each as B against A with the difference of means and its interval (as a
//! node release benchmark report compares releases). Latencies are resampled by the
//! broadcast they belong to, per-second series by batch means, and significance is
//! controlled across the whole comparison. `report` only words the result.

use crate::headline::FDR;
use crate::manifest::{Manifest, Sample};
use crate::stats::{benjamini_hochberg, cluster_delta, series_delta, Delta};
use crate::Summary;
use probe::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one run contributes to a comparison.
pub struct RunView<'a> {
    pub summary: &'a Summary,
    pub manifest: &'a Manifest,
    pub samples: &'a [Sample],
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricComparison {
    /// Side or role the metric belongs to.
    pub subject: String,
    pub metric: String,
    pub unit: String,
    pub a: Dist,
    pub b: Dist,
    /// B against A; `None` when either run has no samples. Its `significant` holds only
    /// when the difference survives false discovery rate control across the comparison.
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

/// (subject, metric, unit).
type MetricKey = (String, String, String);

/// A metric's samples by their independent units.
enum Units {
    /// Receipts grouped by the broadcast they belong to.
    Clusters(Vec<Vec<f64>>),
    /// A per-second series, compared by batch means.
    Series(Vec<f64>),
    /// A level the run settles at (CPU, memory): one unit per run, whatever its samples.
    Run(Vec<f64>),
}

impl Units {
    fn values(&self) -> Vec<f64> {
        match self {
            Units::Clusters(c) => c.concat(),
            Units::Series(s) | Units::Run(s) => s.clone(),
        }
    }
}

/// Every metric both runs have, B against A, in (subject, metric) order; significance
/// controlled across all of them at [`FDR`].
pub fn compare(a: &RunView, b: &RunView) -> Vec<MetricComparison> {
    let (sa, sb) = (comparable_samples(a), comparable_samples(b));
    let mut rows: Vec<MetricComparison> = sa
        .iter()
        .filter_map(|(key, ua)| {
            let ub = sb.get(key)?;
            let delta = match (ua, ub) {
                (Units::Clusters(x), Units::Clusters(y)) => cluster_delta(x, y),
                (Units::Series(x), Units::Series(y)) => series_delta(x, y),
                (Units::Run(x), Units::Run(y)) => {
                    cluster_delta(std::slice::from_ref(x), std::slice::from_ref(y))
                }
                _ => None,
            };
            Some(MetricComparison {
                subject: key.0.clone(),
                metric: key.1.clone(),
                unit: key.2.clone(),
                a: Dist::of(&ua.values()),
                b: Dist::of(&ub.values()),
                delta,
            })
        })
        .collect();
    let tested: Vec<(usize, f64)> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.delta.as_ref()?.p_value.map(|p| (i, p)))
        .collect();
    let p: Vec<f64> = tested.iter().map(|t| t.1).collect();
    for ((i, _), kept) in tested.iter().zip(benjamini_hochberg(&p, FDR)) {
        if let Some(d) = rows[*i].delta.as_mut() {
            d.significant = d.significant && kept;
        }
    }
    rows
}

/// The samples of every compared metric of a run, inside its measured window, by unit.
fn comparable_samples(run: &RunView) -> BTreeMap<MetricKey, Units> {
    let window = run.manifest.window();
    let mut out = BTreeMap::new();
    let mut put = |subject: &str, metric: &str, unit: &str, xs: Units| {
        out.insert((subject.into(), metric.into(), unit.into()), xs);
    };
    for (name, side) in &run.summary.sides {
        let s = &side.samples;
        put(
            name,
            "new job",
            "ms",
            Units::Clusters(s.new_job_ms.clusters()),
        );
        let after_block = Units::Clusters(s.new_prevhash_job_ms.clusters());
        put(name, "new job after a block", "ms", after_block);
        let propagation = Units::Clusters(s.block_propagation_ms.clusters());
        put(name, "block propagation", "ms", propagation);
        put(
            name,
            "farm tx",
            "B/s",
            Units::Series(s.farm_tx_per_s.clone()),
        );
        put(
            name,
            "farm rx",
            "B/s",
            Units::Series(s.farm_rx_per_s.clone()),
        );
    }
    let mut roles: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for s in run.samples.iter().filter(|s| window.contains(s.t_ns)) {
        let e = roles.entry(&s.role).or_default();
        e.0.push(s.cpu_pct);
        e.1.push(s.rss_bytes as f64 / 1e6);
    }
    // A role's CPU and memory are levels a run settles at: set by that run's workload
    // (its seed's transactions, shares, blocks) and the process's own state, nearly
    // steady within it and different from run to run. Batches inside one run measure how
    // well that run's level is known, not how much it moves between runs (two A/A runs of
    // seeds 1 and 2 had the fleet's CPU at 0.6% and 0.3% with batch intervals excluding
    // zero): one run is one unit, too few to call a difference significant.
    for (role, (cpu, rss)) in roles {
        put(role, "CPU", "% of a core", Units::Run(cpu));
        put(role, "RSS", "MB", Units::Run(rss));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::compute;
    use crate::testing::*;
    use probe::{Record, TipCause};

    fn sample(t_ns: u64, role: &str, cpu_pct: f64, rss_bytes: u64) -> Sample {
        Sample {
            t_ns,
            role: role.into(),
            cpu_pct,
            rss_bytes,
        }
    }

    /// Six tips, at 1-6 s, each with its template: miner 0 gets tip k's job
    /// `after_ms + k` ms later (k = 0..5), miner 1 20 ms after that; the link carries
    /// `up_per_s` bytes each second, counted every second.
    fn run(after_ms: u64, up_per_s: u64) -> (Manifest, Vec<Record>, Vec<Sample>) {
        let m = manifest(vec![sv1_side()]);
        let mut events = Vec::new();
        for k in 0..6u64 {
            let t = (1_000 + 1_000 * k) * MS;
            let (hash, marker) = (format!("P{k}"), format!("A{k}"));
            events.push(tip(t, &hash, TipCause::Network));
            events.push(template(t, "node", &marker, &hash, 100));
            events.push(job(t + (after_ms + k) * MS, 0, &hash, Some(&marker)));
            events.push(job(t + (after_ms + 20 + k) * MS, 1, &hash, Some(&marker)));
        }
        for j in 0..=12u64 {
            events.push(link_bytes(j * 1_000 * MS, "link", j * up_per_s, 0));
        }
        let samples = vec![
            sample(1_000 * MS, "pool", 10.0, 2_000_000),
            sample(2_000 * MS, "pool", 30.0, 4_000_000),
            sample(11_000 * MS, "pool", 99.0, 9_000_000),
        ];
        (m, events, samples)
    }

    fn view<'a>(s: &'a Summary, m: &'a Manifest, p: &'a [Sample]) -> RunView<'a> {
        RunView {
            summary: s,
            manifest: m,
            samples: p,
        }
    }

    #[test]
    fn every_metric_b_against_a_by_its_units_inside_the_window() {
        let (ma, ea, pa) = run(50, 1_000);
        let (mb, eb, pb) = run(80, 2_000);
        let (sa, sb) = (compute(&ma, &ea, &pa), compute(&mb, &eb, &pb));
        let rows = compare(&view(&sa, &ma, &pa), &view(&sb, &mb, &pb));
        let get = |subject: &str, metric: &str| {
            rows.iter()
                .find(|r| r.subject == subject && r.metric == metric)
                .unwrap_or_else(|| panic!("{subject} {metric}"))
        };
        // New-block jobs: A's tip k averages 60 + k ms (mean 62.5 over k = 0..5), B's
        // 90 + k (92.5): +30 ms, +48%, six tips a side.
        let d = get("sv1", "new job after a block").delta.clone().unwrap();
        assert_eq!((d.mean_a, d.mean_b, d.delta), (62.5, 92.5, 30.0));
        assert_eq!((d.units_a, d.units_b), (6, 6));
        assert!((d.pct.unwrap() - 48.0).abs() < 1e-12);
        let (lo, hi) = d.ci.unwrap();
        assert!(d.significant && lo > 25.0 && hi < 35.0, "{d:?}");
        // Farm tx: 1,000 B/s every second of the 10 s window against 2,000: exactly +1,000.
        let tx = get("sv1", "farm tx").delta.clone().unwrap();
        assert_eq!((tx.mean_a, tx.mean_b, tx.units_a), (1_000.0, 2_000.0, 10));
        assert_eq!(tx.ci, Some((1_000.0, 1_000.0)));
        // Nothing received on either side: no difference.
        assert!(!get("sv1", "farm rx").delta.as_ref().unwrap().significant);
        // The pool's CPU and RSS from the two samples inside the window: 20% and 3 MB,
        // one run a side: too few for an interval.
        let cpu = get("pool", "CPU");
        assert_eq!(cpu.a.mean, Some(20.0));
        assert_eq!(
            cpu.delta.as_ref().map(|d| (d.units_a, d.too_few())),
            Some((1, true))
        );
        let rss = get("pool", "RSS");
        assert_eq!(rss.a.mean, Some(3.0));
        assert_eq!(
            rss.delta.as_ref().map(|d| (d.units_a, d.too_few())),
            Some((1, true))
        );
        // No blocks in either run: the metric is there with no delta.
        assert!(get("sv1", "block propagation").delta.is_none());
        // +48% is a regression beyond 10%, not beyond 60%.
        let row = get("sv1", "new job after a block");
        assert!(row.regressed(10.0) && !row.regressed(60.0));
    }

    #[test]
    fn a_run_against_itself_differs_in_nothing() {
        let (m, e, p) = run(50, 1_000);
        let s = compute(&m, &e, &p);
        let rows = compare(&view(&s, &m, &p), &view(&s, &m, &p));
        assert!(!rows.is_empty());
        assert!(rows
            .iter()
            .all(|r| r.delta.as_ref().is_none_or(|d| !d.significant)));
    }
}
