//! Run against run: every per-event latency per side, CPU and memory per role, bandwidth
//! per side, each as B against A with the difference of means and its interval (as a
//! node release benchmark report compares releases). A side of the comparison is one run
//! or several (seeds of one setting).
//!
//! One run against one run says whether these two runs differ: their tips and seconds
//! are the units, and what a seed or the machine's moment does to a whole run is not in
//! the interval. Several runs a side say whether the settings (releases) differ: every
//! metric is judged by run, latencies by a two-stage bootstrap (runs, then tips within
//! runs), a level a run settles at (CPU, memory, bandwidth) by each run's level. The
//! [`Scope`] says which question was answered. Significance is controlled across the
//! whole comparison. `report` only words the result.

use crate::charts::Charts;
use crate::headline::FDR;
use crate::manifest::{Manifest, Sample};
use crate::stats::{benjamini_hochberg, cluster_delta, series_delta, two_stage_delta, Delta};
use crate::Summary;
use probe::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one run contributes to a comparison.
pub struct RunView<'a> {
    pub summary: &'a Summary,
    pub charts: &'a Charts,
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
    /// Worse in B by more than `pct` percent, and significantly so: the whole interval is
    /// past `pct` percent of A, not only the point; from a mean of zero in A (no stale
    /// work), any increase is past every percentage (every metric compared here is better
    /// lower: latency, stale work, CPU, memory, bytes).
    pub fn regressed(&self, pct: f64) -> bool {
        self.delta.as_ref().is_some_and(|d| {
            let least = d.ci.map(|(lo, _)| lo);
            let past = match least {
                Some(lo) if d.mean_a == 0.0 => lo > 0.0,
                Some(lo) => lo / d.mean_a.abs() * 100.0 > pct,
                None => false,
            };
            d.significant && past
        })
    }

    /// What a release gate judges: each side's latencies and stale work (what the miners
    /// see of the release) and the SRI roles' CPU and memory (what it costs). Bandwidth follows the
    /// shares the seed drew, and the other roles are not the release's.
    pub fn is_headline(&self) -> bool {
        let sri_role = ["pool-sv2", "translator-", "jdc-"]
            .iter()
            .any(|p| self.subject.starts_with(p));
        HEADLINE_SIDE_METRICS.contains(&self.metric.as_str())
            || (sri_role && matches!(self.metric.as_str(), "CPU" | "RSS"))
    }
}

/// Each side's figures a comparison holds that a release gate judges: its latencies and
/// its stale work.
const HEADLINE_SIDE_METRICS: [&str; 4] = [
    "new job",
    "new job after a block",
    "block propagation",
    "stale work",
];

/// The headline metrics of `metrics` worse than A by more than `pct` percent, the whole
/// 95% interval past it (a release gate's failures).
pub fn regressions(metrics: &[MetricComparison], pct: f64) -> Vec<&MetricComparison> {
    (metrics.iter())
        .filter(|m| m.is_headline() && m.regressed(pct))
        .collect()
}

/// What a comparison can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One run a side: whether these two runs differ, not their settings.
    Runs,
    /// Several runs a side: whether the settings (releases) differ, run-to-run variation
    /// counted.
    Settings,
}

impl Scope {
    /// The scope of a comparison of `a` runs against `b`.
    pub fn of(a: usize, b: usize) -> Scope {
        if a > 1 && b > 1 {
            Scope::Settings
        } else {
            Scope::Runs
        }
    }

    pub fn says(self) -> &'static str {
        match self {
            Scope::Runs => "these two runs differ (one run a side: a seed or a busy moment of the machine can make the difference; run several seeds a side to judge the settings)",
            Scope::Settings => "the settings differ (several runs a side: run-to-run variation counted)",
        }
    }
}

/// (subject, metric, unit).
type MetricKey = (String, String, String);

/// A metric's samples by their independent units.
enum Units {
    /// Receipts grouped by the broadcast they belong to.
    Clusters(Vec<Vec<f64>>),
    /// Several runs' clusters, by run.
    RunClusters(Vec<Vec<Vec<f64>>>),
    /// One run's per-second series, compared by batch means.
    Series(Vec<f64>),
    /// A level runs settle at: each run's samples one unit, whatever their number.
    Runs(Vec<Vec<f64>>),
}

impl Units {
    fn values(&self) -> Vec<f64> {
        match self {
            Units::Clusters(c) | Units::Runs(c) => c.concat(),
            Units::RunClusters(r) => r.iter().flat_map(|c| c.concat()).collect(),
            Units::Series(s) => s.clone(),
        }
    }

    /// The clusters by the run they came from.
    fn clusters_by_run(&self) -> Vec<Vec<Vec<f64>>> {
        match self {
            Units::RunClusters(r) => r.clone(),
            Units::Clusters(c) => vec![c.clone()],
            other => other.by_run().into_iter().map(|run| vec![run]).collect(),
        }
    }

    /// The samples by the run they came from.
    fn by_run(&self) -> Vec<Vec<f64>> {
        match self {
            Units::Runs(r) => r.clone(),
            other => vec![other.values()],
        }
    }

    /// These units and another run's of the same metric, as one side's.
    fn merge(self, other: Units) -> Units {
        match (self, other) {
            // Several runs' tips: two stages, runs and then their tips.
            (a @ (Units::Clusters(_) | Units::RunClusters(_)), b @ Units::Clusters(_)) => {
                Units::RunClusters([a.clusters_by_run(), b.clusters_by_run()].concat())
            }
            // Several runs' series: each run's level is a unit, as its seed set it.
            (a, b) => Units::Runs([a.by_run(), b.by_run()].concat()),
        }
    }
}

/// Every metric both sides have, B against A, in (subject, metric) order; each side one
/// run or several; significance controlled across all of them at [`FDR`].
pub fn compare(a: &[RunView], b: &[RunView]) -> Vec<MetricComparison> {
    let (sa, sb) = (side_samples(a), side_samples(b));
    let mut rows: Vec<MetricComparison> = sa
        .iter()
        .filter_map(|(key, ua)| {
            let ub = sb.get(key)?;
            let delta = match (ua, ub) {
                (Units::Clusters(x), Units::Clusters(y)) => cluster_delta(x, y),
                (x @ Units::RunClusters(_), y) | (x, y @ Units::RunClusters(_)) => {
                    two_stage_delta(&x.clusters_by_run(), &y.clusters_by_run())
                }
                (Units::Series(x), Units::Series(y)) => series_delta(x, y),
                (Units::Runs(x), Units::Runs(y)) => cluster_delta(x, y),
                // One run against several: both by run.
                (x, y) => cluster_delta(&x.by_run(), &y.by_run()),
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

/// The samples of every compared metric of one side's runs, by unit: what only some of its
/// runs have is left out.
fn side_samples(runs: &[RunView]) -> BTreeMap<MetricKey, Units> {
    let mut per_run = runs.iter().map(run_samples);
    let first = per_run.next().unwrap_or_default();
    per_run.fold(first, |side, mut run| {
        side.into_iter()
            .filter_map(|(key, units)| {
                let other = run.remove(&key)?;
                Some((key, units.merge(other)))
            })
            .collect()
    })
}

/// The samples of every compared metric of a run, inside its measured window, by unit.
fn run_samples(run: &RunView) -> BTreeMap<MetricKey, Units> {
    let window = run.manifest.window();
    let mut out = BTreeMap::new();
    let mut put = |subject: &str, metric: &str, unit: &str, xs: Units| {
        out.insert((subject.into(), metric.into(), unit.into()), xs);
    };
    for (name, s) in &run.charts.sides {
        for (h, d) in crate::metric::Headline::distributions() {
            if let Some(clusters) = s.latencies.get(&h) {
                put(name, d.title, "ms", Units::Clusters(clusters.clone()));
            }
        }
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
    // A side's stale work is one figure of its whole run (work on a tip the network left,
    // over all its work): one unit a run, judged only with several runs a side.
    for (name, side) in &run.summary.sides {
        if let Some(stale) = side.stale_work_pct.point {
            put(
                name,
                "stale work",
                "% of work",
                Units::Runs(vec![vec![stale]]),
            );
        }
    }
    let mut roles: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    // The host's samples are the machine's, not a role's.
    let role_samples = run.samples.iter().filter(|s| s.host.is_none());
    for s in role_samples.filter(|s| window.contains(s.t_ns)) {
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
        put(role, "CPU", "% of a core", Units::Runs(vec![cpu]));
        put(role, "RSS", "MB", Units::Runs(vec![rss]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::{Record, TipCause};

    fn sample(t_ns: u64, role: &str, cpu_pct: f64, rss_bytes: u64) -> Sample {
        Sample {
            t_ns,
            role: role.into(),
            cpu_pct,
            cpu_s: None,
            rss_bytes,
            host: None,
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

    fn view<'a>(s: &'a Summary, c: &'a Charts, m: &'a Manifest, p: &'a [Sample]) -> RunView<'a> {
        RunView {
            summary: s,
            charts: c,
            manifest: m,
            samples: p,
        }
    }

    #[test]
    fn every_metric_b_against_a_by_its_units_inside_the_window() {
        let (ma, ea, pa) = run(50, 1_000);
        let (mb, eb, pb) = run(80, 2_000);
        let (sa, sb) = (computed(&ma, &ea, &pa), computed(&mb, &eb, &pb));
        let (ca, cb) = (Charts::of(&sa), Charts::of(&sb));
        let rows = compare(&[view(&sa, &ca, &ma, &pa)], &[view(&sb, &cb, &mb, &pb)]);
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

    /// A gate's row: A's mean 100, B's worse by the middle of the interval `ci`.
    fn row(subject: &str, metric: &str, ci: (f64, f64), significant: bool) -> MetricComparison {
        row_from(100.0, subject, metric, ci, significant)
    }

    fn row_from(
        mean_a: f64,
        subject: &str,
        metric: &str,
        ci: (f64, f64),
        significant: bool,
    ) -> MetricComparison {
        MetricComparison {
            subject: subject.into(),
            metric: metric.into(),
            unit: "ms".into(),
            a: Dist::default(),
            b: Dist::default(),
            delta: Some(Delta {
                mean_a,
                mean_b: mean_a + (ci.0 + ci.1) / 2.0,
                delta: (ci.0 + ci.1) / 2.0,
                pct: Some((ci.0 + ci.1) / 2.0),
                units_a: 5,
                units_b: 5,
                ci: Some(ci),
                p_value: Some(if significant { 0.001 } else { 0.2 }),
                significant,
                method: Default::default(),
            }),
        }
    }

    #[test]
    fn a_release_gate_fails_on_headline_metrics_whose_whole_interval_is_past_the_bound() {
        let rows = vec![
            // +12 to +20 ms on A's 100: at least 12% worse, past 10%.
            row("sv2-c", "new job after a block", (12.0, 20.0), true),
            // +8 to +30: the point (+19%) is past 10%, the interval's end (8%) is not.
            row("sv2-c", "new job", (8.0, 30.0), true),
            // The pool's CPU 15 to 25 points above 100: past 10%.
            row("pool-sv2-c", "CPU", (15.0, 25.0), true),
            // The miners' CPU is not the release's, however much worse.
            row("miners-sv2-c", "CPU", (50.0, 60.0), true),
            // Bandwidth is not a headline metric.
            row("sv2-c", "farm tx", (50.0, 60.0), true),
            // Past the bound but not significant once the table's tests are counted.
            row("sv2-d", "block propagation", (40.0, 60.0), false),
        ];
        let failed: Vec<(&str, &str)> = regressions(&rows, 10.0)
            .iter()
            .map(|m| (m.subject.as_str(), m.metric.as_str()))
            .collect();
        assert_eq!(
            failed,
            [("sv2-c", "new job after a block"), ("pool-sv2-c", "CPU")]
        );
        // The bound is strict: at 15%, the pool's CPU (at least 15%) is not past it, nor is
        // the latency (at least 12%); just under 12%, both are.
        assert!(regressions(&rows, 15.0).is_empty());
        assert_eq!(regressions(&rows, 11.9).len(), 2);
        // No stale work at all in A: any significant increase is past every bound, a
        // decrease or an interval reaching zero is not.
        let from_zero = |ci| row_from(0.0, "sv2-a", "stale work", ci, true);
        assert!(from_zero((0.5, 3.0)).regressed(1e6));
        assert!(!from_zero((0.0, 3.0)).regressed(0.0));
        assert!(!from_zero((-3.0, -0.5)).regressed(0.0));
    }

    #[test]
    fn runs_closer_than_their_tips_spread_are_not_called_different() {
        // B's jobs come 1 ms later at every tip than A's (51 + k against 50 + k): tips
        // spread over 5 ms (sd 1.87), six a side, so the mean of six is known to about
        // +-0.8 ms a side and 1 ms is no difference. Read receipt by receipt (two miners
        // a tip as if independent), it would look twice as precise.
        let (ma, ea, pa) = run(50, 1_000);
        let (mb, eb, pb) = run(51, 1_000);
        let (sa, sb) = (computed(&ma, &ea, &pa), computed(&mb, &eb, &pb));
        let (ca, cb) = (Charts::of(&sa), Charts::of(&sb));
        let rows = compare(&[view(&sa, &ca, &ma, &pa)], &[view(&sb, &cb, &mb, &pb)]);
        let row = rows
            .iter()
            .find(|r| r.metric == "new job after a block")
            .unwrap();
        let d = row.delta.as_ref().unwrap();
        assert!((d.delta - 1.0).abs() < 1e-9, "{d:?}");
        let (lo, hi) = d.ci.unwrap();
        assert!(lo < 0.0 && hi > 2.0 && !d.significant, "{d:?}");
        assert!(rows
            .iter()
            .all(|r| r.delta.as_ref().is_none_or(|d| !d.significant)));
    }

    #[test]
    fn several_runs_a_side_judge_a_level_by_run() {
        // Five seeds a side; the pool's CPU in the window is 20% + k (k = 0..4) in A and
        // 30% + k in B: each run one unit, five a side, +10 points exactly.
        let side = |base: f64| -> Vec<(Manifest, Vec<Record>, Vec<Sample>)> {
            (0..5)
                .map(|k| {
                    let (m, e, mut p) = run(50, 1_000);
                    for s in &mut p {
                        s.cpu_pct = base + f64::from(k);
                    }
                    (m, e, p)
                })
                .collect()
        };
        let (a, b) = (side(20.0), side(30.0));
        let summaries = |runs: &[(Manifest, Vec<Record>, Vec<Sample>)]| {
            (runs.iter())
                .map(|(m, e, p)| {
                    let s = computed(m, e, p);
                    let c = Charts::of(&s);
                    (s, c)
                })
                .collect::<Vec<_>>()
        };
        let (mut sa, mut sb) = (summaries(&a), summaries(&b));
        // Each run's stale work: 1% to 5% in A's runs, 11% to 15% in B's.
        for (k, ((a, _), (b, _))) in sa.iter_mut().zip(&mut sb).enumerate() {
            let stale = 1.0 + k as f64;
            a.sides.get_mut("sv1").unwrap().stale_work_pct.point = Some(stale);
            b.sides.get_mut("sv1").unwrap().stale_work_pct.point = Some(stale + 10.0);
        }
        let (va, vb): (Vec<RunView>, Vec<RunView>) = (
            a.iter()
                .zip(&sa)
                .map(|((m, _, p), (s, c))| view(s, c, m, p))
                .collect(),
            b.iter()
                .zip(&sb)
                .map(|((m, _, p), (s, c))| view(s, c, m, p))
                .collect(),
        );
        let rows = compare(&va, &vb);
        let row = |metric: &str| {
            rows.iter()
                .find(|r| r.subject == "pool" && r.metric == metric)
                .unwrap()
                .delta
                .clone()
                .unwrap()
        };
        let cpu = row("CPU");
        assert_eq!((cpu.units_a, cpu.units_b), (5, 5));
        assert_eq!((cpu.mean_a, cpu.mean_b, cpu.delta), (22.0, 32.0, 10.0));
        assert!(cpu.significant, "{cpu:?}");
        // The same memory in every run: no difference.
        assert!(!row("RSS").significant);
        // Tips of five runs a side: the runs are the units, their tips drawn within them.
        let after_block = rows
            .iter()
            .find(|r| r.metric == "new job after a block")
            .unwrap();
        let d = after_block.delta.as_ref().unwrap();
        assert_eq!((d.units_a, d.method), (5, crate::stats::Method::TwoStage));
        // Bandwidth by run too: five equal runs a side.
        let tx = rows.iter().find(|r| r.metric == "farm tx").unwrap();
        assert_eq!(tx.delta.as_ref().unwrap().units_a, 5);
        // Stale work is one figure a run: means 3% and 13%, +10 points, five runs a side;
        // a headline metric, so a gate at 100% fails on it (its interval's lower end is
        // above +3 points, over 100% of A's 3).
        let stale = rows.iter().find(|r| r.metric == "stale work").unwrap();
        let d = stale.delta.as_ref().unwrap();
        assert_eq!((d.units_a, d.units_b), (5, 5));
        assert_eq!((d.mean_a, d.mean_b, d.delta), (3.0, 13.0, 10.0));
        assert!(d.significant, "{d:?}");
        assert!(stale.is_headline());
        let failed = regressions(&rows, 100.0);
        assert!(
            failed.iter().any(|m| m.metric == "stale work"),
            "{failed:?}"
        );
    }
}
