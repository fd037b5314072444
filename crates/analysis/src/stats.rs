//! The statistics every published difference goes through, in one place.
//!
//! - Latencies come in clusters: one broadcast reaches every miner, so the unit is the tip
//!   or template, not the receipt. [`cluster_delta`] resamples whole clusters.
//! - Per-second series (CPU, bandwidth) autocorrelate: [`series_delta`] takes the
//!   means of contiguous batches as its units.
//! - Proportions (stale shares) get a [`wilson`] interval, and a difference of two a
//!   [`two_proportion`] test.
//! - Below [`MIN_UNITS`] independent units on either side there is no interval and no
//!   significance: "too few". Above it, a bootstrap interval is widened for its few
//!   units (Student's t, see [`small_sample_widening`]), so that it holds 95% of the time.
//! - Many differences read together are corrected with [`benjamini_hochberg`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Resamples of the bootstrap; enough for a stable 95% interval.
const RESAMPLES: usize = 2000;

/// Independent units (clusters, batches) each side needs for an interval.
pub const MIN_UNITS: usize = 5;

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Batches a per-second series is cut into (fewer when it is short).
const SERIES_BATCHES: usize = 10;

/// B against A for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub mean_a: f64,
    pub mean_b: f64,
    /// `mean_b - mean_a`.
    pub delta: f64,
    /// `delta / mean_a * 100` (absent when `mean_a` is zero).
    pub pct: Option<f64>,
    /// Independent units behind each side (clusters or batches).
    pub units_a: usize,
    pub units_b: usize,
    /// 95% bootstrap interval of `delta`; `None` with too few units.
    pub ci: Option<(f64, f64)>,
    /// Two-sided bootstrap p-value of "no difference"; `None` with too few units.
    pub p_value: Option<f64>,
    /// The interval excludes zero (never with too few units).
    pub significant: bool,
}

impl Delta {
    /// Too few independent units on a side for an interval.
    pub fn too_few(&self) -> bool {
        self.ci.is_none()
    }
}

/// Samples with the unit each belongs to (the tip or template whose broadcast it is), in
/// the order they were taken: plain values, or (value, weight) pairs. A unit's name is
/// kept once: a long run has millions of samples and a few hundred units.
#[derive(Debug, Clone, PartialEq)]
pub struct Clustered<T = f64> {
    /// The units in the order they first appear.
    units: Vec<String>,
    index: std::collections::HashMap<String, u32>,
    samples: Vec<(u32, T)>,
}

impl<T> Default for Clustered<T> {
    fn default() -> Self {
        Clustered {
            units: Vec::new(),
            index: Default::default(),
            samples: Vec::new(),
        }
    }
}

impl<T: Clone> Clustered<T> {
    pub fn push(&mut self, unit: &str, value: T) {
        let i = match self.index.get(unit) {
            Some(i) => *i,
            None => {
                let i = self.units.len() as u32;
                self.units.push(unit.to_string());
                self.index.insert(unit.to_string(), i);
                i
            }
        };
        self.samples.push((i, value));
    }

    /// The samples grouped by unit, in the order the units first appear.
    pub fn clusters(&self) -> Vec<Vec<T>> {
        let mut by_unit: Vec<Vec<T>> = vec![Vec::new(); self.units.len()];
        for (i, v) in &self.samples {
            by_unit[*i as usize].push(v.clone());
        }
        by_unit
    }
}

impl Clustered {
    pub fn values(&self) -> Vec<f64> {
        self.samples.iter().map(|(_, v)| *v).collect()
    }

    /// The distribution of the values, with the interval of their mean by unit.
    pub fn dist(&self) -> probe::Dist {
        with_interval(
            probe::Dist::of(&self.values()),
            &cluster_mean(&self.clusters()),
        )
    }
}

/// `dist` with the interval of its mean and the units behind it from `mean`.
pub fn with_interval(dist: probe::Dist, mean: &Estimate) -> probe::Dist {
    probe::Dist {
        mean_ci: mean.ci,
        units: Some(mean.units),
        ..dist
    }
}

/// A point estimate with its 95% interval and the independent units behind it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub point: Option<f64>,
    /// `None` below [`MIN_UNITS`] units.
    pub ci: Option<(f64, f64)>,
    pub units: usize,
}

/// A cluster as a resample needs it: its samples' weighted sum and their total weight (a
/// plain sample weighs 1). A resample's mean is the sum of its clusters' sums over the sum
/// of their weights.
#[derive(Debug, Clone, Copy)]
struct Totals {
    sum: f64,
    weight: f64,
}

/// Plain clusters' totals; empty clusters are no unit.
fn totals(clusters: &[Vec<f64>]) -> Vec<Totals> {
    (clusters.iter().filter(|c| !c.is_empty()))
        .map(|c| Totals {
            sum: c.iter().sum(),
            weight: c.len() as f64,
        })
        .collect()
}

/// Weighted clusters' totals; a cluster of no weight is no unit.
fn weighted_totals(clusters: &[Vec<(f64, f64)>]) -> Vec<Totals> {
    clusters
        .iter()
        .map(|c| Totals {
            sum: c.iter().map(|(v, w)| v * w).sum(),
            weight: c.iter().map(|(_, w)| w).sum(),
        })
        .filter(|t| t.weight > 0.0)
        .collect()
}

/// The mean of clustered samples with a cluster bootstrap interval (seeded).
pub fn cluster_mean(clusters: &[Vec<f64>]) -> Estimate {
    estimate(&totals(clusters))
}

/// The weighted mean of weighted clusters (a time-weighted mean, by tip) with a cluster
/// bootstrap interval.
pub fn weighted_cluster_mean(clusters: &[Vec<(f64, f64)>]) -> Estimate {
    estimate(&weighted_totals(clusters))
}

/// The mean of a per-second series with the interval of its batch means.
pub fn series_mean(xs: &[f64]) -> Estimate {
    cluster_mean(&batches(xs))
}

fn estimate(clusters: &[Totals]) -> Estimate {
    let point = pooled_mean(clusters);
    let ci = point.filter(|_| clusters.len() >= MIN_UNITS).map(|p| {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
        let widen = small_sample_widening(clusters.len());
        let mut means: Vec<f64> = (0..RESAMPLES)
            .map(|_| p + widen * (resample_mean(clusters, &mut rng) - p))
            .collect();
        means.sort_by(f64::total_cmp);
        percentile_interval(&means)
    });
    Estimate {
        point,
        ci,
        units: clusters.len(),
    }
}

/// One bootstrap resample of whole clusters: the mean over all the samples it holds.
fn resample_mean(clusters: &[Totals], rng: &mut ChaCha8Rng) -> f64 {
    let (mut sum, mut weight) = (0.0, 0.0);
    for _ in 0..clusters.len() {
        let c = clusters[rng.gen_range(0..clusters.len())];
        sum += c.sum;
        weight += c.weight;
    }
    sum / weight
}

/// How much wider a bootstrap interval from `n` units must be to hold 95% of the time.
/// The bootstrap spreads a mean by its plug-in variance, (n - 1) / n of the unbiased one,
/// and a normal quantile where a mean of n units follows Student's t with n - 1 degrees of
/// freedom: at 5 units a percentile interval covers about 85%, not 95%. Each resample's
/// distance from the estimate is scaled by t(0.975, n - 1) / z(0.975) x sqrt(n / (n - 1)):
/// 1.58 at 5 units, 1.22 at 10, 1.06 at 30, towards 1.
fn small_sample_widening(n: usize) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let n = n as f64;
    t975(n - 1.0) / Z95 * (n / (n - 1.0)).sqrt()
}

/// Student's t quantile at 0.975 with `df` degrees of freedom: the table to 30, then the
/// Cornish-Fisher expansion (within 0.001 there).
fn t975(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df <= 30.0 {
        return TABLE[(df.round() as usize).clamp(1, 30) - 1];
    }
    let z = Z95;
    z + (z.powi(3) + z) / (4.0 * df)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * df * df)
}

/// The 2.5th and 97.5th percentiles of sorted bootstrap statistics.
fn percentile_interval(sorted: &[f64]) -> (f64, f64) {
    (
        sorted[(RESAMPLES as f64 * 0.025) as usize],
        sorted[(RESAMPLES as f64 * 0.975) as usize - 1],
    )
}

/// Difference of means of clustered samples (each inner list one cluster: the receipts
/// of one broadcast), with a cluster bootstrap: whole clusters are resampled, and each
/// resample's mean is over all the receipts it holds. Seeded, so a report is reproducible.
/// `None` when either side has no samples.
pub fn cluster_delta(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<Delta> {
    delta_of(&totals(a), &totals(b))
}

/// [`cluster_delta`] of weighted clusters: time-weighted means, resampling units.
pub fn weighted_cluster_delta(a: &[Vec<(f64, f64)>], b: &[Vec<(f64, f64)>]) -> Option<Delta> {
    delta_of(&weighted_totals(a), &weighted_totals(b))
}

fn delta_of(a: &[Totals], b: &[Totals]) -> Option<Delta> {
    let (mean_a, mean_b) = (pooled_mean(a)?, pooled_mean(b)?);
    let delta = mean_b - mean_a;
    let mut d = Delta {
        mean_a,
        mean_b,
        delta,
        pct: (mean_a != 0.0).then(|| delta / mean_a * 100.0),
        units_a: a.len(),
        units_b: b.len(),
        ci: None,
        p_value: None,
        significant: false,
    };
    if a.len() < MIN_UNITS || b.len() < MIN_UNITS {
        return Some(d);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let widen = small_sample_widening(a.len().min(b.len()));
    let mut deltas: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let ra = resample_mean(a, &mut rng);
            delta + widen * (resample_mean(b, &mut rng) - ra - delta)
        })
        .collect();
    deltas.sort_by(f64::total_cmp);
    let (low, high) = percentile_interval(&deltas);
    let at_or_below = deltas.iter().filter(|x| **x <= 0.0).count() as f64 / RESAMPLES as f64;
    let at_or_above = deltas.iter().filter(|x| **x >= 0.0).count() as f64 / RESAMPLES as f64;
    d.ci = Some((low, high));
    d.p_value = Some((2.0 * at_or_below.min(at_or_above)).min(1.0));
    d.significant = low > 0.0 || high < 0.0;
    Some(d)
}

/// Difference of means of two per-second series, by batch means: each series is cut into
/// up to [`SERIES_BATCHES`] contiguous batches, and the batches are the units.
pub fn series_delta(a: &[f64], b: &[f64]) -> Option<Delta> {
    cluster_delta(&batches(a), &batches(b))
}

/// `xs` in contiguous batches of equal length (the remainder joins the last batch).
fn batches(xs: &[f64]) -> Vec<Vec<f64>> {
    if xs.is_empty() {
        return Vec::new();
    }
    let count = SERIES_BATCHES.min(xs.len());
    let len = xs.len() / count;
    let mut out: Vec<Vec<f64>> = xs.chunks(len).map(<[f64]>::to_vec).collect();
    while out.len() > count {
        let tail = out.pop().expect("more than one batch");
        out.last_mut().expect("a batch").extend(tail);
    }
    out
}

fn pooled_mean(clusters: &[Totals]) -> Option<f64> {
    let weight: f64 = clusters.iter().map(|c| c.weight).sum();
    (weight > 0.0).then(|| clusters.iter().map(|c| c.sum).sum::<f64>() / weight)
}

/// The Wilson score 95% interval of a proportion `successes / n`; `None` of nothing.
pub fn wilson(successes: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (x, n) = (successes as f64, n as f64);
    let p = x / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    Some(((center - half).max(0.0), (center + half).min(1.0)))
}

/// Two proportions compared: B's against A's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProportionDelta {
    pub p_a: f64,
    pub p_b: f64,
    /// `p_b - p_a`.
    pub delta: f64,
    /// The pooled two-proportion z statistic and its two-sided p-value.
    pub z: f64,
    pub p_value: f64,
    pub significant: bool,
}

/// The two-proportion z test of `x_b / n_b` against `x_a / n_a` (pooled variance);
/// `None` when a side has nothing, or when neither has any success or failure (no
/// variance to test against).
pub fn two_proportion(x_a: u64, n_a: u64, x_b: u64, n_b: u64) -> Option<ProportionDelta> {
    if n_a == 0 || n_b == 0 {
        return None;
    }
    let (p_a, p_b) = (x_a as f64 / n_a as f64, x_b as f64 / n_b as f64);
    let pooled = (x_a + x_b) as f64 / (n_a + n_b) as f64;
    let se = (pooled * (1.0 - pooled) * (1.0 / n_a as f64 + 1.0 / n_b as f64)).sqrt();
    if se == 0.0 {
        return None;
    }
    let z = (p_b - p_a) / se;
    let p_value = 2.0 * (1.0 - normal_cdf(z.abs()));
    Some(ProportionDelta {
        p_a,
        p_b,
        delta: p_b - p_a,
        z,
        p_value,
        significant: p_value < 0.05,
    })
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26 for erf; error below 1.5e-7).
fn normal_cdf(x: f64) -> f64 {
    let t = x.abs() / std::f64::consts::SQRT_2;
    let k = 1.0 / (1.0 + 0.327_591_1 * t);
    let poly = k
        * (0.254_829_592
            + k * (-0.284_496_736
                + k * (1.421_413_741 + k * (-1.453_152_027 + k * 1.061_405_429))));
    let erf = 1.0 - poly * (-t * t).exp();
    0.5 * (1.0 + erf.copysign(x))
}

/// Which of `p_values` stay significant when they are read together, controlling the
/// false discovery rate at `q` (Benjamini-Hochberg): sort ascending, find the largest
/// rank k with p(k) <= k / m * q, and keep the k smallest.
pub fn benjamini_hochberg(p_values: &[f64], q: f64) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|i, j| p_values[*i].total_cmp(&p_values[*j]));
    let kept = order
        .iter()
        .enumerate()
        .filter(|(rank, i)| p_values[**i] <= (rank + 1) as f64 / m as f64 * q)
        .map(|(rank, _)| rank + 1)
        .max()
        .unwrap_or(0);
    let mut out = vec![false; m];
    for i in &order[..kept] {
        out[*i] = true;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Difference of means of independent samples `b` against `a`: each sample is its own unit.
    pub fn delta(a: &[f64], b: &[f64]) -> Option<Delta> {
        let singles = |xs: &[f64]| xs.iter().map(|x| vec![*x]).collect::<Vec<_>>();
        cluster_delta(&singles(a), &singles(b))
    }

    #[test]
    fn one_sample_is_never_significant() {
        let d = delta(&[10.0], &[1_000.0]).unwrap();
        assert_eq!(d.delta, 990.0);
        assert!(d.too_few() && !d.significant && d.p_value.is_none());
        // Four clusters against forty: still too few on one side.
        let four: Vec<Vec<f64>> = (0..4).map(|_| vec![1.0; 10]).collect();
        let forty: Vec<Vec<f64>> = (0..40).map(|_| vec![9.0; 10]).collect();
        assert!(cluster_delta(&four, &forty).unwrap().too_few());
    }

    #[test]
    fn a_sample_against_itself_is_not_different() {
        let xs: Vec<f64> = (0..200).map(|i| 50.0 + f64::from(i % 7)).collect();
        let d = delta(&xs, &xs).unwrap();
        assert_eq!(d.delta, 0.0);
        assert!(!d.significant);
        let (lo, hi) = d.ci.unwrap();
        assert!(lo <= 0.0 && hi >= 0.0);
        assert!(d.p_value.unwrap() > 0.5, "{d:?}");
    }

    #[test]
    fn a_shift_larger_than_the_noise_is_significant() {
        let a: Vec<f64> = (0..100).map(|i| 138.0 + f64::from(i % 11) - 5.0).collect();
        let b: Vec<f64> = (0..100).map(|i| 40.9 + f64::from(i % 11) - 5.0).collect();
        let d = delta(&a, &b).unwrap();
        // The noise i % 11 - 5 over 100 values averages -0.05, on both sides alike.
        assert!((d.mean_a - 137.95).abs() < 1e-9, "{}", d.mean_a);
        assert!((d.delta - (40.9 - 138.0)).abs() < 1e-9);
        assert!((d.pct.unwrap() - (40.9 - 138.0) / 137.95 * 100.0).abs() < 1e-9);
        let (lo, hi) = d.ci.unwrap();
        assert!(d.significant && hi < -90.0 && lo > -105.0);
        assert_eq!(d.p_value, Some(0.0));
        assert!(delta(&[], &b).is_none());
    }

    #[test]
    fn the_cluster_bootstrap_resamples_broadcasts_not_receipts() {
        // Ten tips; every miner of a tip got its job at the same moment: 10 receipts per
        // cluster, clusters at 50 + (tip % 5) ms. A shifted 2 ms later on every tip.
        let a: Vec<Vec<f64>> = (0..10).map(|t| vec![50.0 + f64::from(t % 5); 10]).collect();
        let b: Vec<Vec<f64>> = (0..10).map(|t| vec![52.0 + f64::from(t % 5); 10]).collect();
        let clustered = cluster_delta(&a, &b).unwrap();
        assert_eq!((clustered.units_a, clustered.units_b), (10, 10));
        assert!((clustered.delta - 2.0).abs() < 1e-12);
        // Treated as 100 independent receipts, the interval is about sqrt(10) narrower.
        let flat = |c: &[Vec<f64>]| c.concat();
        let naive = delta(&flat(&a), &flat(&b)).unwrap();
        let width = |d: &Delta| d.ci.map(|(lo, hi)| hi - lo).unwrap();
        let ratio = width(&clustered) / width(&naive);
        assert!((2.4..4.0).contains(&ratio), "{ratio}");
        // The cluster means' spread (sd sqrt(2), 10 per side) puts +-1.24 ms around 2 ms:
        // significant, with the interval inside (0, 4).
        let (lo, hi) = clustered.ci.unwrap();
        assert!(
            clustered.significant && lo > 0.0 && hi < 4.0,
            "{clustered:?}"
        );
        // A constant shift with no spread at all is exactly the shift.
        let flat_a: Vec<Vec<f64>> = (0..6).map(|_| vec![10.0, 10.0]).collect();
        let flat_b: Vec<Vec<f64>> = (0..6).map(|_| vec![12.0]).collect();
        assert_eq!(
            cluster_delta(&flat_a, &flat_b).unwrap().ci,
            Some((2.0, 2.0))
        );
    }

    #[test]
    fn clustered_samples_group_by_unit_in_first_seen_order() {
        let mut c = Clustered::default();
        for (unit, v) in [
            ("tip1", 50.0),
            ("tip2", 70.0),
            ("tip1", 52.0),
            ("tip3", 1.0),
        ] {
            c.push(unit, v);
        }
        assert_eq!(c.values(), vec![50.0, 70.0, 52.0, 1.0]);
        assert_eq!(c.clusters(), vec![vec![50.0, 52.0], vec![70.0], vec![1.0]]);
        // Three units: a mean, no interval.
        let e = cluster_mean(&c.clusters());
        assert_eq!((e.point, e.ci, e.units), (Some(43.25), None, 3));
        // Five identical clusters: the interval is the point.
        let same: Vec<Vec<f64>> = (0..5).map(|_| vec![4.0, 6.0]).collect();
        assert_eq!(cluster_mean(&same).ci, Some((5.0, 5.0)));
    }

    #[test]
    fn a_series_is_compared_by_batch_means() {
        assert_eq!(batches(&[1.0, 2.0, 3.0]).len(), 3);
        // 25 samples in 10 batches of 2, the last taking the remaining 5.
        let b = batches(&(0..25).map(f64::from).collect::<Vec<_>>());
        assert_eq!(b.len(), 10);
        assert_eq!(b[0], vec![0.0, 1.0]);
        assert_eq!(b[9], vec![18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0]);
        // Three seconds of a series: three units, too few.
        assert!(series_delta(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0])
            .unwrap()
            .too_few());
        assert_eq!(series_delta(&b.concat(), &b.concat()).unwrap().units_a, 10);
    }

    #[test]
    fn a_series_mean_and_a_weighted_mean_by_their_units() {
        // 1..=20 in 10 batches of two: mean 10.5 over 10 units, inside the batch range.
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let e = series_mean(&xs);
        assert_eq!((e.point, e.units), (Some(10.5), 10));
        let (lo, hi) = e.ci.unwrap();
        assert!(lo > 1.5 && lo < 10.5 && hi > 10.5 && hi < 19.5, "{e:?}");
        // Weights, not counts: 10 for 3 s and 20 for 1 s is 12.5; four units are too few.
        let w = weighted_cluster_mean(&[vec![(10.0, 3.0)], vec![(20.0, 1.0)], vec![], vec![]]);
        assert_eq!((w.point, w.ci, w.units), (Some(12.5), None, 2));
        // Weighted against unweighted: the same clusters at weight 1 give the plain delta.
        let plain: Vec<Vec<f64>> = (0..6).map(|i| vec![f64::from(i), 1.0]).collect();
        let ones: Vec<Vec<(f64, f64)>> = plain
            .iter()
            .map(|c| c.iter().map(|x| (*x, 1.0)).collect())
            .collect();
        let shifted: Vec<Vec<f64>> = plain
            .iter()
            .map(|c| c.iter().map(|x| x + 2.0).collect())
            .collect();
        let shifted_ones: Vec<Vec<(f64, f64)>> = shifted
            .iter()
            .map(|c| c.iter().map(|x| (*x, 1.0)).collect())
            .collect();
        assert_eq!(
            weighted_cluster_delta(&ones, &shifted_ones),
            cluster_delta(&plain, &shifted)
        );
    }

    #[test]
    fn few_units_widen_the_interval_by_students_t() {
        // t(0.975, 4) / z x sqrt(5 / 4) and t(0.975, 9) / z x sqrt(10 / 9), by hand.
        assert!((small_sample_widening(5) - 2.776 / Z95 * 1.25f64.sqrt()).abs() < 1e-12);
        assert!((small_sample_widening(5) - 1.5836).abs() < 1e-4);
        assert!((small_sample_widening(10) - 1.2165).abs() < 1e-4);
        // Past the table, the expansion: t(0.975, 40) = 2.0211.
        assert!((t975(40.0) - 2.0211).abs() < 1e-3);
        assert!(small_sample_widening(1_000) < 1.002);
    }

    /// 600 experiments of 6 units drawn from a normal of mean 10: the interval of the mean
    /// holds it about 95% of the time (93.8% with this seed; the plain percentile bootstrap
    /// 86.2%, which fails here).
    #[test]
    fn an_interval_from_six_units_holds_the_mean_95_percent_of_the_time() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut normal = || {
            let (u, v): (f64, f64) = (rng.gen_range(f64::MIN_POSITIVE..1.0), rng.gen());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let trials = 600;
        let held = (0..trials)
            .filter(|_| {
                let units: Vec<Vec<f64>> = (0..6).map(|_| vec![10.0 + normal()]).collect();
                let (lo, hi) = cluster_mean(&units).ci.unwrap();
                lo <= 10.0 && 10.0 <= hi
            })
            .count();
        let coverage = held as f64 / f64::from(trials);
        assert!((0.92..=0.985).contains(&coverage), "{coverage}");
    }

    #[test]
    fn wilson_intervals_worked_by_hand() {
        // 0 of 10: [0, z^2 / (n + z^2)] = 3.841459 / 13.841459 = 0.277533.
        let (lo, hi) = wilson(0, 10).unwrap();
        assert!(lo.abs() < 1e-12 && (hi - 0.277_533).abs() < 1e-6, "{hi}");
        // 5 of 10: centre 0.5, half 1.959964 * sqrt(0.025 + 0.0096037) / 1.3841459
        //   = 1.959964 * 0.1860207 / 1.3841459 = 0.263407.
        let (lo, hi) = wilson(5, 10).unwrap();
        assert!(
            (lo - 0.236_593).abs() < 1e-6 && (hi - 0.763_407).abs() < 1e-6,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn two_proportions_worked_by_hand() {
        // The published results: 53 of 13,642 SV1 shares stale, 0 of 3,525 with A.
        // Pooled 53 / 17,167 = 0.0030873; se = sqrt(0.0030873 x 0.9969127 x (1/13642 +
        // 1/3525)) = sqrt(0.0030778 x 0.00035699) = 0.0010482; z = -0.0038851 / 0.0010482
        // = -3.7064; two-sided p = 0.00021.
        let d = two_proportion(53, 13_642, 0, 3_525).unwrap();
        assert!((d.z - (-3.7064)).abs() < 1e-3, "{}", d.z);
        assert!((d.p_value - 0.000_21).abs() < 1e-5, "{}", d.p_value);
        assert!(d.significant);
        // 1 of 80 against 0 of 80: pooled 1/160, se = sqrt(0.00625 x 0.99375 x 2/80)
        // = 0.012461, z = -0.0125 / 0.012461 = -1.00314, p = 0.3158: not significant.
        let d = two_proportion(1, 80, 0, 80).unwrap();
        assert!((d.z - (-1.003_14)).abs() < 1e-4, "{}", d.z);
        assert!((d.p_value - 0.315_79).abs() < 1e-4, "{}", d.p_value);
        assert!(!d.significant);
        // Nothing stale on either side: nothing to test.
        assert!(two_proportion(0, 80, 0, 80).is_none());
    }

    #[test]
    fn benjamini_hochberg_on_fixed_lists() {
        // Sorted 0.005, 0.01, 0.03, 0.04 against 0.0125, 0.025, 0.0375, 0.05: the 4th
        // passes, so all four stay.
        assert_eq!(
            benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005], 0.05),
            vec![true; 4]
        );
        // 0.01, 0.02, 0.03 pass their ranks, 0.5 does not.
        assert_eq!(
            benjamini_hochberg(&[0.5, 0.01, 0.03, 0.02], 0.05),
            vec![false, true, true, true]
        );
        // 0.04 alone would pass at 0.05; among five with nothing smaller, 0.04 > 1/5 x 0.05.
        assert_eq!(
            benjamini_hochberg(&[0.04, 0.3, 0.5, 0.7, 0.9], 0.05),
            vec![false; 5]
        );
        assert!(benjamini_hochberg(&[], 0.05).is_empty());
    }
}
