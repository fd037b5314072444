//! Run against run: every per-event latency per side, CPU and memory per role, bandwidth
//! per side, each as B against A with the difference of means and its interval (as a
//! node release benchmark report compares releases). `report` only words the result.

use crate::bandwidth::{link_counters, link_rates};
use crate::manifest::{Manifest, Sample};
use crate::stats::{delta, Delta};
use crate::Summary;
use probe::{Dist, Record};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one run contributes to a comparison.
pub struct RunView<'a> {
    pub summary: &'a Summary,
    pub manifest: &'a Manifest,
    pub events: &'a [Record],
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

/// (subject, metric, unit).
type MetricKey = (String, String, String);

/// Every metric both runs have, B against A, in (subject, metric) order.
pub fn compare(a: &RunView, b: &RunView) -> Vec<MetricComparison> {
    let (sa, sb) = (comparable_samples(a), comparable_samples(b));
    sa.iter()
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
        .collect()
}

/// The per-event (or per-second) samples of every compared metric of a run, inside its
/// measured window.
fn comparable_samples(run: &RunView) -> BTreeMap<MetricKey, Vec<f64>> {
    let window = run.manifest.window();
    let mut out = BTreeMap::new();
    let mut put = |subject: &str, metric: &str, unit: &str, xs: Vec<f64>| {
        out.insert((subject.into(), metric.into(), unit.into()), xs);
    };
    for (name, side) in &run.summary.sides {
        put(name, "new job", "ms", side.samples.new_job_ms.clone());
        let after_block = side.samples.new_prevhash_job_ms.clone();
        put(name, "new job after a block", "ms", after_block);
        let propagation = side.samples.block_propagation_ms.clone();
        put(name, "block propagation", "ms", propagation);
        if let Some(roles) = run.manifest.sides.get(name) {
            let counters: Vec<_> = link_counters(run.events, &roles.link_role)
                .into_iter()
                .filter(|c| window.contains(c.0))
                .collect();
            let rates = link_rates(&counters);
            put(name, "farm tx", "B/s", rates.iter().map(|r| r.1).collect());
            put(name, "farm rx", "B/s", rates.iter().map(|r| r.2).collect());
        }
    }
    let mut roles: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for s in run.samples.iter().filter(|s| window.contains(s.t_ns)) {
        let e = roles.entry(&s.role).or_default();
        e.0.push(s.cpu_pct);
        e.1.push(s.rss_bytes as f64 / 1e6);
    }
    for (role, (cpu, rss)) in roles {
        put(role, "CPU", "% of a core", cpu);
        put(role, "RSS", "MB", rss);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::compute;
    use crate::testing::*;
    use probe::TipCause;

    fn sample(t_ns: u64, role: &str, cpu_pct: f64, rss_bytes: u64) -> Sample {
        Sample {
            t_ns,
            role: role.into(),
            cpu_pct,
            rss_bytes,
        }
    }

    /// One tip at 1 s; miner 0 gets its job `after_ms` later, miner 1 20 ms after that.
    fn run(after_ms: u64, link_up_bytes: u64) -> (Manifest, Vec<Record>, Vec<Sample>) {
        let m = manifest(vec![sv1_side()]);
        let events = vec![
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_000 * MS, "node", "A", "P", 100),
            job(1_000 * MS + after_ms * MS, 0, "P", Some("A")),
            job(1_020 * MS + after_ms * MS, 1, "P", Some("A")),
            link_bytes(0, "link", 0, 0),
            link_bytes(2_000 * MS, "link", link_up_bytes, 0),
            link_bytes(4_000 * MS, "link", 3 * link_up_bytes, 0),
            // After the window: not a rate sample.
            link_bytes(12_000 * MS, "link", 100 * link_up_bytes, 0),
        ];
        let samples = vec![
            sample(1_000 * MS, "pool", 10.0, 2_000_000),
            sample(2_000 * MS, "pool", 30.0, 4_000_000),
            sample(11_000 * MS, "pool", 99.0, 9_000_000),
        ];
        (m, events, samples)
    }

    #[test]
    fn every_metric_b_against_a_from_samples_inside_the_window() {
        let (ma, ea, pa) = run(50, 1_000);
        let (mb, eb, pb) = run(80, 2_000);
        let (sa, sb) = (compute(&ma, &ea, &pa), compute(&mb, &eb, &pb));
        let a = RunView {
            summary: &sa,
            manifest: &ma,
            events: &ea,
            samples: &pa,
        };
        let b = RunView {
            summary: &sb,
            manifest: &mb,
            events: &eb,
            samples: &pb,
        };
        let rows = compare(&a, &b);
        let get = |subject: &str, metric: &str| {
            rows.iter()
                .find(|r| r.subject == subject && r.metric == metric)
                .unwrap_or_else(|| panic!("{subject} {metric}"))
        };
        // New-block jobs: A 50 and 70 ms (mean 60), B 80 and 100 ms (mean 90): +30 ms, +50%.
        let d = get("sv1", "new job after a block").delta.clone().unwrap();
        assert_eq!((d.mean_a, d.mean_b, d.delta), (60.0, 90.0, 30.0));
        assert_eq!(d.pct, Some(50.0));
        // Farm tx: A 1,000 B over 0-2 s then 2,000 B over 2-4 s = 500 and 1,000 B/s;
        // B twice that. The counter after the window is no sample.
        let tx = get("sv1", "farm tx");
        assert_eq!(tx.a.count, 2);
        assert_eq!(tx.delta.as_ref().unwrap().mean_a, 750.0);
        assert_eq!(tx.delta.as_ref().unwrap().mean_b, 1_500.0);
        // The pool's CPU and RSS from the two samples inside the window: 20% and 3 MB.
        assert_eq!(get("pool", "CPU").a.mean, Some(20.0));
        assert_eq!(get("pool", "RSS").unit, "MB");
        assert_eq!(get("pool", "RSS").a.mean, Some(3.0));
        // No blocks in either run: the metric is there with no delta.
        assert!(get("sv1", "block propagation").delta.is_none());
        // Every resample of A averages 50-70 ms and of B 80-100 ms, so the interval
        // excludes zero; +50% is a regression beyond 10%, not beyond 60%.
        assert!(d.significant && d.ci_low >= 10.0, "{d:?}");
        let row = get("sv1", "new job after a block");
        assert!(row.regressed(10.0) && !row.regressed(60.0));
    }
}
