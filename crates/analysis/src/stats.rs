//! The statistics every published difference goes through, in one place.
//!
//! - Latencies come in clusters: one broadcast reaches every miner, so the unit is the tip
//!   or template, not the receipt. [`cluster_delta`] resamples whole clusters.
//! - Per-second series (CPU, bandwidth) autocorrelate: [`series_delta`] takes the
//!   means of contiguous batches as its units.
//! - Two sides indexed by the same network tips are compared paired ([`paired_delta`]):
//!   a resample draws tips once for both.
//! - Proportions (stale shares) cluster by tip too: a side's share gets a Wilson interval
//!   on the tips' effective number of outcomes ([`Counted::interval`]); a difference of two
//!   sides ([`proportion_delta`]) is paired by tip, and where counts are small, a
//!   sign-flip permutation test over tips ([`sign_flip_p`]) with Newcombe's interval from
//!   the two sides' intervals by tip. Never a share-by-share test, never a Wald interval.
//! - Below [`MIN_UNITS`] independent units on either side there is no interval and no
//!   significance: "too few". Above it, a bootstrap interval is widened for its few
//!   units (Student's t, see [`small_sample_widening`]), so that it holds 95% of the time.
//! - Many differences read together are corrected with [`benjamini_hochberg`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Resamples of the bootstrap; enough for a stable 95% interval.
const RESAMPLES: usize = 2000;

/// Resamples past zero below which a bootstrap p-value comes from the resamples' t tail
/// (their mean over their spread): a count this small cannot rank rows that far apart.
const FEW_IN_TAIL: f64 = 10.0;

/// Independent units (clusters, batches) each side needs for an interval.
pub const MIN_UNITS: usize = 5;

/// The normal quantile of a two-sided 95% interval.
pub(crate) const Z95: f64 = 1.959_963_984_540_054;

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
    /// 95% interval of `delta` (bootstrap, or Newcombe's); `None` with too few units.
    pub ci: Option<(f64, f64)>,
    /// Two-sided p-value of "no difference" (bootstrap, or the tips' sign flips); `None`
    /// with too few units.
    pub p_value: Option<f64>,
    /// The interval excludes zero (never with too few units).
    pub significant: bool,
    /// How the interval and the p-value were found.
    #[serde(default)]
    pub method: Method,
}

/// How a difference was tested.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Each side's units resampled on their own (they share none: templates of
    /// different nodes, blocks, seconds).
    #[default]
    Unpaired,
    /// The units both sides share (network tips) drawn once for both.
    Paired,
    /// A sign-flip permutation test over tips and Newcombe's interval from each side's
    /// interval by tip (an expected count under 5).
    #[serde(alias = "exact")]
    TipSignFlip,
    /// Runs drawn, then their tips (several runs a side).
    TwoStage,
}

impl Method {
    pub fn label(self) -> &'static str {
        match self {
            Method::Unpaired => "bootstrap of each side's units",
            Method::Paired => "paired bootstrap of the shared tips",
            Method::TipSignFlip => {
                "sign-flip permutation over tips, Newcombe's interval of tip-clustered Wilson intervals"
            }
            Method::TwoStage => "two-stage bootstrap: runs, then tips within runs",
        }
    }
}

impl Delta {
    /// Too few independent units on a side for an interval.
    pub fn too_few(&self) -> bool {
        self.ci.is_none()
    }
}

/// Samples with the unit each belongs to (the tip or template whose broadcast it is), in
/// the order they were taken. What the statistics need is kept per unit (its totals, for
/// the interval of the mean); the values themselves are kept in memory, or, in a long run,
/// appended to a file ([`Clustered::spilled_to`]) and read back once at its end, with a
/// histogram of 0.1% relative error in memory for the live summaries meanwhile. A unit's
/// name is kept once: a long run has millions of samples and a few hundred units.
#[derive(Debug)]
pub struct Clustered {
    units: Units,
    values: Values,
}

/// The units samples belong to, in the order they first appear, each named once, with
/// the totals of its samples. Two sides' units of the same name (the same network tip)
/// are the same unit: [`paired_delta`] resamples them together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Units {
    names: Vec<String>,
    index: std::collections::HashMap<String, u32>,
    totals: Vec<Totals>,
}

impl Units {
    /// A sample of `unit` adding `sum` and `weight` to its totals; the unit's index.
    fn add(&mut self, unit: &str, sum: f64, weight: f64) -> u32 {
        let i = match self.index.get(unit) {
            Some(i) => *i,
            None => {
                let i = self.names.len() as u32;
                self.names.push(unit.to_string());
                self.index.insert(unit.to_string(), i);
                self.totals.push(Totals::default());
                i
            }
        };
        let totals = &mut self.totals[i as usize];
        totals.sum += sum;
        totals.weight += weight;
        i
    }

    /// The totals of the unit `name`, if it has any.
    fn get(&self, name: &str) -> Option<Totals> {
        self.index.get(name).map(|i| self.totals[*i as usize])
    }

    /// Each unit's mean, by name, in the order the units first appeared.
    pub fn means(&self) -> impl Iterator<Item = (&str, f64)> {
        (self.names.iter().zip(&self.totals))
            .filter(|(_, t)| t.weight > 0.0)
            .map(|(name, t)| (name.as_str(), t.sum / t.weight))
    }

    /// Only the units `other` has too: what two sides compare unit for unit.
    pub fn shared_with(&self, other: &Units) -> Units {
        let mut shared = Units::default();
        for (name, t) in self.names.iter().zip(&self.totals) {
            if other.get(name).is_some_and(|o| o.weight > 0.0) && t.weight > 0.0 {
                shared.add(name, t.sum, t.weight);
            }
        }
        shared
    }

    /// How many units hold some weight.
    pub fn len(&self) -> usize {
        self.totals.iter().filter(|t| t.weight > 0.0).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Yes-or-no outcomes (a share stale or not, accepted or not) counted by the unit they
/// cluster in (the tip they were submitted under): per unit, the outcomes and the yeses.
/// Only the counts are kept, so a long run costs a few numbers per tip.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counted {
    units: Units,
}

impl Counted {
    pub fn push(&mut self, unit: &str, yes: bool) {
        self.units.add(unit, if yes { 1.0 } else { 0.0 }, 1.0);
    }

    /// The yeses.
    pub fn yes(&self) -> u64 {
        self.units.totals.iter().map(|t| t.sum as u64).sum()
    }

    /// All outcomes.
    pub fn total(&self) -> u64 {
        self.units.totals.iter().map(|t| t.weight as u64).sum()
    }

    pub fn units(&self) -> &Units {
        &self.units
    }

    /// The share of yeses with its 95% interval by unit (tip), both as fractions: the
    /// Wilson score interval on the effective number of outcomes n_eff = p(1 - p) / V,
    /// where V is the variance of the ratio of sums from the k units' totals
    /// (cluster-robust: V = k / (k - 1) x sum (y - p n)^2 / N^2), at most the N outcomes
    /// (no unit is worth more than independent outcomes), cut by (z / t(0.975, k - 1))^2
    /// for the few units V rests on: Korn and Graubard's effective sample size with its
    /// degrees of freedom. At a share of 0 or 1 the units say nothing of V: n_eff is N
    /// there, as they take it. Below [`MIN_UNITS`] units V is no estimate at all: each
    /// unit counts as one outcome (Kish's effective number of units, the most clustered
    /// the outcomes can be). `None` of nothing.
    pub fn interval(&self) -> Option<(f64, f64)> {
        let units = &self.units.totals;
        let (yes, n) = (self.yes() as f64, self.total() as f64);
        if n == 0.0 {
            return None;
        }
        let p = yes / n;
        let k = units.len() as f64;
        let n_eff = if units.len() < MIN_UNITS {
            effective_units(units)
        } else if p == 0.0 || p == 1.0 {
            n * (Z95 / t975(k - 1.0)).powi(2)
        } else {
            let squares: f64 = units.iter().map(|t| (t.sum - p * t.weight).powi(2)).sum();
            let variance = k / (k - 1.0) * squares / (n * n);
            let n_eff = if variance > 0.0 {
                (p * (1.0 - p) / variance).min(n)
            } else {
                n
            };
            n_eff * (Z95 / t975(k - 1.0)).powi(2)
        };
        wilson(p, n_eff)
    }

    /// The yeses and outcomes of the unit `name` (none if it has none).
    fn at(&self, name: &str) -> (f64, f64) {
        self.units
            .get(name)
            .map_or((0.0, 0.0), |t| (t.sum, t.weight))
    }
}

/// Where a [`Clustered`]'s values are.
#[derive(Debug)]
enum Values {
    /// Each with its unit's index, in the order taken.
    Memory(Vec<(u32, f64)>),
    /// Appended to a file as they come; the sketch serves meanwhile.
    Spilled { spill: Spill, sketch: Sketch },
    /// Not here: a copy of spilled samples for a live summary, which reads the sketch.
    Sketched(Sketch),
}

#[derive(Debug)]
struct Spill {
    path: std::path::PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
    written: u64,
    /// Values a write failed for: reported at the end, never dropped silently.
    lost: u64,
}

/// The values as a histogram (in thousandths, 0.1% relative error), with the exact max.
#[derive(Debug, Clone)]
struct Sketch {
    histogram: hdrhistogram::Histogram<u64>,
    max: f64,
}

/// Bytes a spilled value takes: its unit's index and the value.
const SPILLED_BYTES: usize = 12;

impl Sketch {
    fn new() -> Sketch {
        Sketch {
            histogram: hdrhistogram::Histogram::new(3).expect("3 significant digits is valid"),
            max: f64::NEG_INFINITY,
        }
    }

    fn record(&mut self, v: f64) {
        if v.is_finite() {
            // It grows to hold any value: recording cannot fail.
            let _ = self.histogram.record((v.max(0.0) * 1e3).round() as u64);
            self.max = self.max.max(v);
        }
    }

    fn quantile(&self, q: f64) -> Option<f64> {
        (!self.histogram.is_empty())
            .then(|| (self.histogram.value_at_quantile(q) as f64 / 1e3).min(self.max))
    }
}

impl Default for Clustered {
    fn default() -> Self {
        Clustered {
            units: Units::default(),
            values: Values::Memory(Vec::new()),
        }
    }
}

/// A copy of spilled samples holds their units, totals and sketch, not their values: it
/// makes a live summary while the original goes on spilling.
impl Clone for Clustered {
    fn clone(&self) -> Self {
        Clustered {
            units: self.units.clone(),
            values: match &self.values {
                Values::Memory(values) => Values::Memory(values.clone()),
                Values::Spilled { sketch, .. } | Values::Sketched(sketch) => {
                    Values::Sketched(sketch.clone())
                }
            },
        }
    }
}

/// Equal samples: the same values of the same units. Samples whose values are not in
/// memory (spilled, or a live copy's) cannot be compared, and equal nothing.
impl PartialEq for Clustered {
    fn eq(&self, other: &Self) -> bool {
        let values = match (&self.values, &other.values) {
            (Values::Memory(a), Values::Memory(b)) => a == b,
            _ => false,
        };
        values && self.units == other.units
    }
}

impl Clustered {
    /// Samples whose values go to a file at `path` (created now) as they come.
    pub fn spilled_to(path: &std::path::Path) -> std::io::Result<Clustered> {
        let file = std::fs::File::create(path)?;
        Ok(Clustered {
            values: Values::Spilled {
                spill: Spill {
                    path: path.to_path_buf(),
                    out: Some(std::io::BufWriter::new(file)),
                    written: 0,
                    lost: 0,
                },
                sketch: Sketch::new(),
            },
            ..Clustered::default()
        })
    }

    pub fn push(&mut self, unit: &str, value: f64) {
        let i = self.units.add(unit, value, 1.0);
        match &mut self.values {
            Values::Memory(values) => values.push((i, value)),
            Values::Spilled { spill, sketch } => {
                sketch.record(value);
                spill.write(i, value);
            }
            Values::Sketched(sketch) => sketch.record(value),
        }
    }

    /// Spilled values read back into memory (the run has ended), and how many a write had
    /// failed for. Samples already in memory, or a live copy's sketch, stay as they are.
    pub fn load(mut self) -> (Clustered, u64) {
        let Values::Spilled { mut spill, sketch } = self.values else {
            return (self, 0);
        };
        match spill.read() {
            Ok((values, lost)) => {
                self.values = Values::Memory(values);
                (self, lost)
            }
            Err(e) => {
                tracing::warn!(path = %spill.path.display(), "spilled samples unreadable: {e:#}");
                let lost = spill.written + spill.lost;
                self.values = Values::Sketched(sketch);
                (self, lost)
            }
        }
    }

    /// The samples grouped by unit, in the order the units first appear: the values in
    /// memory (a live copy of spilled samples has none).
    pub fn clusters(&self) -> Vec<Vec<f64>> {
        let mut by_unit: Vec<Vec<f64>> = vec![Vec::new(); self.units.names.len()];
        if let Values::Memory(values) = &self.values {
            for (i, v) in values {
                by_unit[*i as usize].push(*v);
            }
        }
        by_unit
    }

    /// The values in memory, in the order taken (a live copy of spilled samples has none).
    pub fn values(&self) -> Vec<f64> {
        match &self.values {
            Values::Memory(values) => values.iter().map(|(_, v)| *v).collect(),
            _ => Vec::new(),
        }
    }

    /// How many samples there are.
    pub fn count(&self) -> u64 {
        self.units.totals.iter().map(|t| t.weight as u64).sum()
    }

    /// Their sum.
    fn sum(&self) -> f64 {
        self.units.totals.iter().map(|t| t.sum).sum()
    }

    /// The units' totals.
    pub(crate) fn totals(&self) -> &[Totals] {
        &self.units.totals
    }

    /// The units, by name.
    pub fn units(&self) -> &Units {
        &self.units
    }

    /// The mean with its interval by unit.
    pub fn mean(&self) -> Estimate {
        estimate(self.totals())
    }

    /// The distribution of the values, with the interval of their mean by unit: exact from
    /// values in memory; from a live copy's sketch, its quantiles within 0.1%.
    pub fn dist(&self) -> probe::Dist {
        let dist = match &self.values {
            Values::Memory(values) => {
                probe::Dist::of(&values.iter().map(|(_, v)| *v).collect::<Vec<_>>())
            }
            Values::Spilled { sketch, .. } | Values::Sketched(sketch) => {
                let count = self.count();
                probe::Dist {
                    count: count as usize,
                    mean: (count > 0).then(|| self.sum() / count as f64),
                    p50: sketch.quantile(0.50),
                    p90: sketch.quantile(0.90),
                    p99: sketch.quantile(0.99),
                    max: (count > 0).then_some(sketch.max),
                    mean_ci: None,
                    units: None,
                }
            }
        };
        with_interval(dist, &self.mean())
    }
}

impl Spill {
    fn write(&mut self, unit: u32, value: f64) {
        use std::io::Write;
        let mut bytes = [0u8; SPILLED_BYTES];
        bytes[..4].copy_from_slice(&unit.to_le_bytes());
        bytes[4..].copy_from_slice(&value.to_le_bytes());
        let written = self.out.as_mut().map(|out| out.write_all(&bytes));
        match written {
            Some(Ok(())) => self.written += 1,
            Some(Err(e)) => {
                tracing::warn!(path = %self.path.display(), "cannot spill samples: {e:#}");
                self.out = None;
                self.lost += 1;
            }
            None => self.lost += 1,
        }
    }

    /// The values written, and how many were lost (the file is removed).
    fn read(&mut self) -> std::io::Result<(Vec<(u32, f64)>, u64)> {
        use std::io::Write;
        if let Some(mut out) = self.out.take() {
            out.flush()?;
        }
        let bytes = std::fs::read(&self.path)?;
        let values: Vec<(u32, f64)> = bytes
            .chunks_exact(SPILLED_BYTES)
            .map(|b| {
                let unit = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
                let value = f64::from_le_bytes(b[4..].try_into().expect("8 bytes"));
                (unit, value)
            })
            .collect();
        let _ = std::fs::remove_file(&self.path);
        let lost = self.lost + self.written.saturating_sub(values.len() as u64);
        Ok((values, lost))
    }
}

/// Time-weighted values (the template value mined on, weighed by how long) with the unit
/// each belongs to (the tip). Kept per distinct value, whose number grows with the
/// templates, not with the miners: exact, and small however long the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Weighted {
    units: Units,
    /// Total weight per value, in value order (by bits: values are finite, at least 0).
    by_value: std::collections::BTreeMap<u64, f64>,
    count: usize,
}

impl Weighted {
    pub fn push(&mut self, unit: &str, value: f64, weight: f64) {
        self.units.add(unit, value * weight, weight);
        *self.by_value.entry(value.max(0.0).to_bits()).or_default() += weight;
        self.count += 1;
    }

    /// The units' totals: a unit of no weight is no unit.
    pub(crate) fn totals(&self) -> Vec<Totals> {
        (self.units.totals.iter().copied())
            .filter(|t| t.weight > 0.0)
            .collect()
    }

    /// The units, by name.
    pub fn units(&self) -> &Units {
        &self.units
    }

    /// The weighted mean with its interval by unit.
    pub fn mean(&self) -> Estimate {
        estimate(&self.totals())
    }

    /// The weighted distribution: each value counts for its weight; the mean's interval
    /// resamples the units.
    pub fn dist(&self) -> probe::Dist {
        let total: f64 = self.by_value.values().sum();
        let mean = self.mean();
        if self.count == 0 || total <= 0.0 {
            return probe::Dist::of(&[]);
        }
        let quantile = |q: f64| {
            let mut seen = 0.0;
            for (v, w) in &self.by_value {
                seen += w;
                if seen >= q * total {
                    return Some(f64::from_bits(*v));
                }
            }
            self.by_value.keys().last().map(|v| f64::from_bits(*v))
        };
        let dist = probe::Dist {
            count: self.count,
            mean: mean.point,
            p50: quantile(0.5),
            p90: quantile(0.9),
            p99: quantile(0.99),
            max: self.by_value.keys().last().map(|v| f64::from_bits(*v)),
            mean_ci: None,
            units: None,
        };
        with_interval(dist, &mean)
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

impl Estimate {
    /// The mean of a distribution with its interval, as an estimate.
    pub fn mean_of(d: &probe::Dist) -> Estimate {
        Estimate {
            point: d.mean,
            ci: d.mean_ci,
            units: d.units.unwrap_or_default(),
        }
    }

    /// The estimate of `by` times the quantity (a rate per miner, ms per share).
    pub fn scaled(&self, by: f64) -> Estimate {
        Estimate {
            point: self.point.map(|p| p * by),
            ci: self.ci.map(|(lo, hi)| {
                let (a, b) = (lo * by, hi * by);
                (a.min(b), a.max(b))
            }),
            units: self.units,
        }
    }

    /// The estimate of a quantity that cannot leave `low..=high` (a percentage of time):
    /// its interval cut to that range. A resample of few units, widened for their few,
    /// can reach past it (98% stale work with an interval to 156%).
    pub fn within(mut self, low: f64, high: f64) -> Estimate {
        self.ci = self
            .ci
            .map(|(lo, hi)| (lo.clamp(low, high), hi.clamp(low, high)));
        self
    }
}

/// A cluster as a resample needs it: its samples' weighted sum and their total weight (a
/// plain sample weighs 1). A resample's mean is the sum of its clusters' sums over the sum
/// of their weights.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Totals {
    pub(crate) sum: f64,
    pub(crate) weight: f64,
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

/// The mean of clustered samples with a cluster bootstrap interval (seeded).
pub fn cluster_mean(clusters: &[Vec<f64>]) -> Estimate {
    estimate(&totals(clusters))
}

/// The mean of a per-second series with the interval of its batch means.
pub fn series_mean(xs: &[f64]) -> Estimate {
    cluster_mean(&batches(xs))
}

fn estimate(clusters: &[Totals]) -> Estimate {
    let point = pooled_mean(clusters);
    let ci = point.filter(|_| clusters.len() >= MIN_UNITS).map(|p| {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
        let widen = small_sample_widening(effective_units(clusters));
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
pub(crate) fn small_sample_widening(n: f64) -> f64 {
    if n < 2.0 {
        return small_sample_widening(2.0);
    }
    t975(n - 1.0) / Z95 * (n / (n - 1.0)).sqrt()
}

/// [`small_sample_widening`] for two sides resampled apart, with as many units or as
/// spread as they happen to be (a side's blocks are as many as it found): each side's
/// variance of its mean (linearized, for a ratio of sums), unbiased against the plug-in
/// one the bootstrap uses, and Welch-Satterthwaite's degrees of freedom for their sum.
/// Taking the smaller side's units instead over-widens when they differ (10 blocks
/// against 14 would be judged as 10 against 10).
fn welch_widening(a: &[Totals], b: &[Totals]) -> f64 {
    // (plug-in variance of the mean, unbiased variance, effective units)
    let side = |units: &[Totals]| {
        let weight: f64 = units.iter().map(|t| t.weight).sum();
        let mean = units.iter().map(|t| t.sum).sum::<f64>() / weight;
        let plug_in = (units.iter())
            .map(|t| (t.sum - mean * t.weight).powi(2))
            .sum::<f64>()
            / (weight * weight);
        let n = effective_units(units).max(2.0);
        (plug_in, plug_in * n / (n - 1.0), n)
    };
    let ((pa, ua, na), (pb, ub, nb)) = (side(a), side(b));
    if pa + pb <= 0.0 {
        return 1.0;
    }
    // Welch-Satterthwaite, in shares of the sum so that tiny variances cannot underflow.
    let (sa, sb) = (ua / (ua + ub), ub / (ua + ub));
    let df = 1.0 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    t975(df) / Z95 * ((ua + ub) / (pa + pb)).sqrt()
}

/// Student's t quantile at 0.975 with `df` degrees of freedom: the table to 30 (a fractional
/// df rounded down), then the
/// Cornish-Fisher expansion (within 0.001 there).
pub(crate) fn t975(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df <= 30.0 {
        // A fractional df (Welch, effective units) takes the row below: the wider one.
        return TABLE[(df.floor() as usize).clamp(1, 30) - 1];
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

/// [`cluster_delta`] of the samples' units.
pub fn clustered_delta(a: &Clustered, b: &Clustered) -> Option<Delta> {
    delta_of(a.totals(), b.totals())
}

/// [`cluster_delta`] of time-weighted means, resampling units.
pub fn weighted_delta(a: &Weighted, b: &Weighted) -> Option<Delta> {
    delta_of(&a.totals(), &b.totals())
}

/// Kish's effective number of units: (sum of weights)^2 / sum of squared weights. Units
/// of unequal weight (tips of unequal length, a few of which hold most of the valid work)
/// vary their mean as fewer equal units would; the small-sample widening must count
/// those, or it under-corrects.
pub(crate) fn effective_units(units: &[Totals]) -> f64 {
    let (sum, squares) = (units.iter()).fold((0.0, 0.0), |(s, q), t| {
        (s + t.weight, q + t.weight * t.weight)
    });
    if squares > 0.0 {
        sum * sum / squares
    } else {
        0.0
    }
}

fn delta_of(a: &[Totals], b: &[Totals]) -> Option<Delta> {
    let mut d = point_delta(a, b, Method::Unpaired)?;
    if d.too_few_units() {
        return Some(d);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let widen = welch_widening(a, b);
    let deltas = (0..RESAMPLES)
        .map(|_| {
            let ra = resample_mean(a, &mut rng);
            d.delta + widen * (resample_mean(b, &mut rng) - ra - d.delta)
        })
        .collect();
    d.set_interval(deltas);
    Some(d)
}

/// B against A where both are indexed by the same units (the network's tips, by name):
/// each resample draws units once, from those either side has, and applies the draw to
/// both. What a tip does to both sides (a slow template build) cancels in the difference
/// instead of widening it, and what helps one side at the other's expense (one pool wins
/// the node's lock, the other waits) widens it, as it must. A unit one side lacks counts
/// on the other side alone. Seeded.
pub fn paired_delta(a: &Units, b: &Units) -> Option<Delta> {
    let zero = Totals::default();
    let mut names: Vec<&str> = a.names.iter().map(String::as_str).collect();
    names.extend((b.names.iter().map(String::as_str)).filter(|n| a.get(n).is_none()));
    let pairs: Vec<(Totals, Totals)> = (names.iter())
        .map(|n| (a.get(n).unwrap_or(zero), b.get(n).unwrap_or(zero)))
        .filter(|(x, y)| x.weight > 0.0 || y.weight > 0.0)
        .collect();
    let side = |pick: fn(&(Totals, Totals)) -> Totals| -> Vec<Totals> {
        (pairs.iter().map(pick))
            .filter(|t| t.weight > 0.0)
            .collect()
    };
    let (a, b) = (side(|p| p.0), side(|p| p.1));
    // Sides that share too few units (a farm node's tips named apart, say) are no pair.
    let shared = (pairs.iter())
        .filter(|(x, y)| x.weight > 0.0 && y.weight > 0.0)
        .count();
    if shared < MIN_UNITS {
        return delta_of(&a, &b);
    }
    let mut d = point_delta(&a, &b, Method::Paired)?;
    if d.too_few_units() {
        return Some(d);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let both: Vec<Totals> = (pairs.iter())
        .map(|(x, y)| Totals {
            sum: 0.0,
            weight: x.weight + y.weight,
        })
        .collect();
    let units = [&a, &b, &both].map(|units| effective_units(units));
    let widen = small_sample_widening(units.into_iter().fold(f64::INFINITY, f64::min));
    let mut deltas = Vec::with_capacity(RESAMPLES);
    while deltas.len() < RESAMPLES {
        let (mut ra, mut rb) = (zero, zero);
        for _ in 0..pairs.len() {
            let (x, y) = pairs[rng.gen_range(0..pairs.len())];
            (ra.sum, ra.weight) = (ra.sum + x.sum, ra.weight + x.weight);
            (rb.sum, rb.weight) = (rb.sum + y.sum, rb.weight + y.weight);
        }
        // A draw that holds none of a side's units has no mean there: drawn again (each
        // side has at least MIN_UNITS units, so this ends).
        if ra.weight > 0.0 && rb.weight > 0.0 {
            let resampled = rb.sum / rb.weight - ra.sum / ra.weight;
            deltas.push(d.delta + widen * (resampled - d.delta));
        }
    }
    d.set_interval(deltas);
    Some(d)
}

/// The two means and their difference, no interval yet.
fn point_delta(a: &[Totals], b: &[Totals], method: Method) -> Option<Delta> {
    let (mean_a, mean_b) = (pooled_mean(a)?, pooled_mean(b)?);
    let delta = mean_b - mean_a;
    Some(Delta {
        mean_a,
        mean_b,
        delta,
        pct: (mean_a != 0.0).then(|| delta / mean_a * 100.0),
        units_a: a.len(),
        units_b: b.len(),
        ci: None,
        p_value: None,
        significant: false,
        method,
    })
}

impl Delta {
    fn too_few_units(&self) -> bool {
        self.units_a < MIN_UNITS || self.units_b < MIN_UNITS
    }

    /// The interval, p-value and significance from bootstrap differences.
    fn set_interval(&mut self, mut deltas: Vec<f64>) {
        deltas.sort_by(f64::total_cmp);
        let (low, high) = percentile_interval(&deltas);
        let share = |pick: fn(f64) -> bool| {
            deltas.iter().filter(|x| pick(**x)).count() as f64 / deltas.len() as f64
        };
        let (at_or_below, at_or_above) = (share(|x| x <= 0.0), share(|x| x >= 0.0));
        self.ci = Some((low, high));
        let tail = at_or_below.min(at_or_above);
        let n = deltas.len() as f64;
        self.p_value = Some(if tail * n >= FEW_IN_TAIL {
            (2.0 * tail).min(1.0)
        } else {
            // A tail few resamples reach says only "under a few in 2,000", and 1 / 2,001
            // for every such row would tie them all: Benjamini-Hochberg over a hundred
            // rows or more could then pass none, however far. The resamples' t tail ranks
            // them by distance instead.
            let mean = deltas.iter().sum::<f64>() / n;
            let sd = (deltas.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            // Student's t on the fewer side's units less one: past the 97.5% point the
            // resamples' widening no longer matches t, and a normal tail would make a
            // five-tip row look as sure as a hundred-tip one.
            // It only ever lowers what the count says, never raises it.
            let counted = (2.0 * tail).max(1.0 / (n + 1.0));
            let df = (self.units_a.min(self.units_b) as f64 - 1.0).max(1.0);
            match StudentsT::new(0.0, 1.0, df) {
                Ok(t) if sd > 0.0 => {
                    (2.0 * t.sf(mean.abs() / sd)).clamp(f64::MIN_POSITIVE, counted)
                }
                _ => counted,
            }
        });
        self.significant = low > 0.0 || high < 0.0;
    }

    /// Every value times `k` (a proportion in percent).
    fn scaled(mut self, k: f64) -> Delta {
        (self.mean_a, self.mean_b, self.delta) = (self.mean_a * k, self.mean_b * k, self.delta * k);
        self.ci = self.ci.map(|(lo, hi)| (lo * k, hi * k));
        self
    }
}

/// Difference of means where each side is several runs, each holding its clusters (the
/// tips of one run): a two-stage bootstrap draws runs, then the clusters within each run
/// drawn, so the interval holds both how a run's tips vary and how runs vary (a release
/// is judged over seeds, not one run's tips). The runs are the units: fewer than
/// [`MIN_UNITS`] a side is too few. Seeded.
pub fn two_stage_delta(a: &[Vec<Vec<f64>>], b: &[Vec<Vec<f64>>]) -> Option<Delta> {
    let runs = |side: &[Vec<Vec<f64>>]| -> Vec<Vec<Totals>> {
        (side.iter().map(|run| totals(run)))
            .filter(|run| !run.is_empty())
            .collect()
    };
    let (ra, rb) = (runs(a), runs(b));
    let whole = |runs: &[Vec<Totals>]| -> Vec<Totals> {
        (runs.iter())
            .map(|run| {
                run.iter().fold(Totals::default(), |t, c| Totals {
                    sum: t.sum + c.sum,
                    weight: t.weight + c.weight,
                })
            })
            .collect()
    };
    let (wa, wb) = (whole(&ra), whole(&rb));
    let mut d = point_delta(&wa, &wb, Method::TwoStage)?;
    if d.too_few_units() {
        return Some(d);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let widen = welch_widening(&wa, &wb);
    let mut resample = |runs: &[Vec<Totals>]| {
        let mut t = Totals::default();
        for _ in 0..runs.len() {
            let run = &runs[rng.gen_range(0..runs.len())];
            for _ in 0..run.len() {
                let c = run[rng.gen_range(0..run.len())];
                (t.sum, t.weight) = (t.sum + c.sum, t.weight + c.weight);
            }
        }
        t.sum / t.weight
    };
    let deltas = (0..RESAMPLES)
        .map(|_| {
            let x = resample(&ra);
            d.delta + widen * (resample(&rb) - x - d.delta)
        })
        .collect();
    d.set_interval(deltas);
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

/// The Wilson score 95% interval of a proportion `p` of `n` outcomes (an effective number
/// of outcomes need not be whole); `None` of nothing.
pub fn wilson(p: f64, n: f64) -> Option<(f64, f64)> {
    if n <= 0.0 {
        return None;
    }
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    Some(((center - half).max(0.0), (center + half).min(1.0)))
}

/// B's share of yeses against A's, in percentage points, by the units the outcomes
/// cluster in (a share's tip: every miner of a side waits on the same broadcast, so stale
/// shares come in bursts), paired where the units are shared. With an expected count under
/// 5 in the two-by-two table, a resample of tips has too few yeses to spread: the tips'
/// differences go to a sign-flip permutation test ([`sign_flip_p`] of
/// [`tip_differences`]), the interval is Newcombe's from each side's interval by tip
/// ([`Counted::interval`]), and significance needs both. Otherwise the paired bootstrap of
/// the units. Fewer than [`MIN_UNITS`] units on a side: too few. `None` when a side has no
/// outcomes.
pub fn proportion_delta(a: &Counted, b: &Counted) -> Option<Delta> {
    let (x_a, n_a, x_b, n_b) = (a.yes(), a.total(), b.yes(), b.total());
    if n_a == 0 || n_b == 0 {
        return None;
    }
    if min_expected(x_a, n_a, x_b, n_b) >= 5.0 {
        return paired_delta(a.units(), b.units()).map(|d| d.scaled(100.0));
    }
    let mut d = point_delta(&a.units.totals, &b.units.totals, Method::TipSignFlip)?;
    if !d.too_few_units() {
        let (low, high) = newcombe(d.mean_a, a.interval()?, d.mean_b, b.interval()?);
        let p = sign_flip_p(&tip_differences(a, b));
        d.ci = Some((low, high));
        d.p_value = Some(p);
        d.significant = p < 0.05 && (low > 0.0 || high < 0.0);
    }
    Some(d.scaled(100.0))
}

/// The smallest expected count of the two-by-two table (side x yes/no) if both sides
/// shared one rate.
pub fn min_expected(x_a: u64, n_a: u64, x_b: u64, n_b: u64) -> f64 {
    let n = (n_a + n_b) as f64;
    let (yes, no) = ((x_a + x_b) as f64, (n_a + n_b - x_a - x_b) as f64);
    let (small_side, small_outcome) = ((n_a.min(n_b)) as f64, yes.min(no));
    small_side * small_outcome / n
}

/// Each tip's difference between the sides, B's yeses less A's, each less what the rate
/// of both sides together expects of its outcomes: (y_b - p n_b) - (y_a - p n_a), over the
/// tips either side has. Swapping the sides at a tip, as "no difference" allows, flips its
/// sign and leaves p as it is; the sum is 2 N_a N_b / N x (B's rate - A's).
pub fn tip_differences(a: &Counted, b: &Counted) -> Vec<f64> {
    let yes = (a.yes() + b.yes()) as f64;
    let p = yes / (a.total() + b.total()) as f64;
    let names = (a.units.names.iter())
        .chain((b.units.names.iter()).filter(|name| !a.units.index.contains_key(name.as_str())));
    names
        .map(|name| {
            let ((y_a, n_a), (y_b, n_b)) = (a.at(name), b.at(name));
            (y_b - p * n_b) - (y_a - p * n_a)
        })
        .collect()
}

/// Tips whose sign patterns [`sign_flip_p`] enumerates, all 2^16 of them; past this, draws.
const ENUMERATED_TIPS: usize = 16;

/// Sign patterns [`sign_flip_p`] draws past [`ENUMERATED_TIPS`]: its p-value's floor, 1 in
/// 20,001, is below the smallest threshold Benjamini-Hochberg sets a run's verdict up to
/// a hundred rows (0.05 / 100; eleven sides of 9 rows), and its Monte Carlo error at 0.05
/// is 0.0015.
const SIGN_FLIP_DRAWS: usize = 20_000;

/// The two-sided p-value of a sign-flip permutation test of `differences` (one a tip,
/// independent, each as likely either sign under "no difference"): the share of the ways
/// to flip their signs whose sum lies at least as far from zero as theirs. Differences of
/// zero change no sum and are left out; up to [`ENUMERATED_TIPS`] others, every pattern
/// is counted (exact); past that, [`SIGN_FLIP_DRAWS`] seeded draws, as (1 + as far) /
/// (1 + draws).
pub fn sign_flip_p(differences: &[f64]) -> f64 {
    let d: Vec<f64> = differences.iter().copied().filter(|x| *x != 0.0).collect();
    let seen: f64 = d.iter().sum();
    // Sums equal but for rounding count as equal.
    let far = |sum: f64| sum.abs() >= seen.abs() - 1e-9 * d.iter().map(|x| x.abs()).sum::<f64>();
    if d.len() <= ENUMERATED_TIPS {
        // In Gray code order: each pattern flips one sign of the one before.
        let (mut sum, mut signs, mut count) = (seen, vec![1.0; d.len()], 0u64);
        for pattern in 0..1u64 << d.len() {
            if pattern > 0 {
                let i = pattern.trailing_zeros() as usize;
                signs[i] = -signs[i];
                sum += 2.0 * signs[i] * d[i];
            }
            count += u64::from(far(sum));
        }
        return count as f64 / (1u64 << d.len()) as f64;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let as_far = (0..SIGN_FLIP_DRAWS)
        .filter(|_| {
            let mut sum = 0.0;
            for chunk in d.chunks(64) {
                let bits: u64 = rng.gen();
                for (i, x) in chunk.iter().enumerate() {
                    sum += if (bits >> i) & 1 == 1 { -x } else { *x };
                }
            }
            far(sum)
        })
        .count();
    (1 + as_far) as f64 / (1 + SIGN_FLIP_DRAWS) as f64
}

/// Newcombe's interval of `p_b - p_a` from each rate's own 95% interval, square and add
/// (his method 10, here with the intervals by tip of [`Counted::interval`]): each end
/// goes as far as the two sides' distances to their own ends towards it, combined.
pub fn newcombe(p_a: f64, (l_a, u_a): (f64, f64), p_b: f64, (l_b, u_b): (f64, f64)) -> (f64, f64) {
    let d = p_b - p_a;
    (
        d - ((p_b - l_b).powi(2) + (u_a - p_a).powi(2)).sqrt(),
        d + ((u_b - p_b).powi(2) + (p_a - l_a).powi(2)).sqrt(),
    )
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
    fn two_halves_of_one_sample_are_not_different() {
        // 50 + (i mod 7) for i < 200, split by parity: the even i's residues sum to 14 x 21
        // + 0 + 2 = 296 over 100 values, the odd i's 14 x 21 + 1 + 3 = 298: means 52.96
        // and 52.98, 0.02 apart, against a standard error of the difference near 0.28.
        let half = |parity: i32| -> Vec<f64> {
            (0..200)
                .filter(|i| i % 2 == parity)
                .map(|i| 50.0 + f64::from(i % 7))
                .collect()
        };
        let d = delta(&half(0), &half(1)).unwrap();
        assert!((d.delta - 0.02).abs() < 1e-9, "{d:?}");
        assert!(!d.significant);
        let (lo, hi) = d.ci.unwrap();
        assert!(lo < -0.3 && hi > 0.3, "{d:?}");
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
        // No resample reaches zero: the p-value is the resamples' t tail (99 df), far
        // under the 1 / 2,001 a count of 2,000 could show, and never 0.
        assert!(
            d.p_value.is_some_and(|p| p > 0.0 && p < 1.0 / 2_001.0),
            "{d:?}"
        );
        assert!(delta(&[], &b).is_none());
    }

    /// Bootstrap differences half at 3 and half at 5, 100 units a side: none at or below
    /// zero, so the p-value is the t tail at mean 4 over sd sqrt(2000 / 1999) = 1.00025,
    /// on 99 degrees of freedom: 2 x P(T99 > 3.999) = 0.0001227 (by Simpson's rule on the
    /// t density; a normal tail would say 0.0000636), under the 1 / 2,001 = 0.0005 the
    /// count could show. With 10 units a side, T9's tail at 3.999 is 0.0031 (Simpson
    /// again), above what the count shows: the count's 1 / 2,001 stands. With 10 of the
    /// differences at -1, the tail is counted: 2 x 10 / 2000 = 0.01.
    #[test]
    fn a_tail_no_resample_reaches_is_priced_by_t_not_the_floor() {
        let far: Vec<f64> = (0..2000)
            .map(|i| if i % 2 == 0 { 3.0 } else { 5.0 })
            .collect();
        let mut many = delta(&[1.0; 100], &[4.0; 100]).unwrap();
        many.set_interval(far.clone());
        let p = many.p_value.unwrap();
        assert!((p - 0.0001227).abs() < 1e-6, "{p}");
        let mut few = delta(&[1.0; 10], &[4.0; 10]).unwrap();
        few.set_interval(far);
        assert_eq!(few.p_value, Some(1.0 / 2_001.0));
        let mut counted: Vec<f64> = (0..1990).map(|i| 3.0 + f64::from(i % 2) * 2.0).collect();
        counted.extend([-1.0; 10]);
        few.set_interval(counted);
        assert!(
            (few.p_value.unwrap() - 0.01).abs() < 1e-12,
            "{:?}",
            few.p_value
        );
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
    fn spilled_samples_come_back_whole_and_a_live_copy_reads_the_sketch() {
        let dir = crate::testing::scratch_dir("stats");
        let path = dir.join("new_job_ms.values");
        let mut spilled = Clustered::spilled_to(&path).unwrap();
        let mut memory = Clustered::default();
        // 10,000 receipts of 20 templates: 0.5 ms to 5,000 ms.
        for i in 1..=10_000u32 {
            let (unit, v) = (format!("template{}", i % 20), f64::from(i) / 2.0);
            spilled.push(&unit, v);
            memory.push(&unit, v);
        }
        // A live copy: the units' totals exactly, the quantiles within the sketch's 0.1%.
        let live = spilled.clone();
        assert!(live.values().is_empty(), "a live copy holds no values");
        let (exact, sketched) = (memory.dist(), live.dist());
        assert_eq!(
            (sketched.count, sketched.max, sketched.units),
            (10_000, Some(5_000.0), Some(20))
        );
        assert!((sketched.mean.unwrap() - 2_500.25).abs() < 1e-9);
        assert_eq!(
            sketched.mean_ci, exact.mean_ci,
            "the interval is by unit totals"
        );
        for (got, want) in [
            (sketched.p50, exact.p50),
            (sketched.p90, exact.p90),
            (sketched.p99, exact.p99),
        ] {
            let (got, want) = (got.unwrap(), want.unwrap());
            assert!((got - want).abs() <= want * 1e-3, "{got} vs {want}");
        }
        // At the end the values come back from disk, exactly, and the file goes.
        let (loaded, lost) = spilled.load();
        assert_eq!((loaded, lost), (memory.clone(), 0));
        assert!(!path.exists());
        // A live copy loads as what it is.
        assert_eq!(live.clone().load().0.dist(), live.dist());
        std::fs::remove_dir_all(&dir).unwrap();
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
        // Units of no weight are no units.
        let mut w = Weighted::default();
        for (unit, value, weight) in [("a", 10.0, 3.0), ("b", 20.0, 1.0), ("c", 5.0, 0.0)] {
            w.push(unit, value, weight);
        }
        let e = w.mean();
        assert_eq!((e.point, e.ci, e.units), (Some(12.5), None, 2));
        // Weighted against unweighted: the same clusters at weight 1 give the plain delta.
        let plain: Vec<Vec<f64>> = (0..6).map(|i| vec![f64::from(i), 1.0]).collect();
        let shifted: Vec<Vec<f64>> = plain
            .iter()
            .map(|c| c.iter().map(|x| x + 2.0).collect())
            .collect();
        let weighted = |clusters: &[Vec<f64>]| {
            let mut w = Weighted::default();
            for (unit, c) in clusters.iter().enumerate() {
                c.iter().for_each(|x| w.push(&unit.to_string(), *x, 1.0));
            }
            w
        };
        assert_eq!(
            weighted_delta(&weighted(&plain), &weighted(&shifted)),
            cluster_delta(&plain, &shifted)
        );
    }

    #[test]
    fn a_percentage_keeps_its_interval_within_0_and_100() {
        // Five tips, one holding all the stale work (each scaled so their mean is the
        // side's): 100%, with a widened interval from below 0 to past 100.
        let tips = [vec![0.0], vec![0.0], vec![0.0], vec![0.0], vec![500.0]];
        let e = cluster_mean(&tips);
        let (lo, hi) = e.ci.unwrap();
        assert!(lo < 0.0 && hi > 100.0, "{e:?}");
        let bounded = e.clone().within(0.0, 100.0);
        assert_eq!((bounded.point, bounded.units), (e.point, 5));
        assert_eq!(bounded.ci, Some((0.0, 100.0)));
    }

    #[test]
    fn few_units_widen_the_interval_by_students_t() {
        // t(0.975, 4) / z x sqrt(5 / 4) and t(0.975, 9) / z x sqrt(10 / 9), by hand.
        assert!((small_sample_widening(5.0) - 2.776 / Z95 * 1.25f64.sqrt()).abs() < 1e-12);
        assert!((small_sample_widening(5.0) - 1.5836).abs() < 1e-4);
        assert!((small_sample_widening(10.0) - 1.2165).abs() < 1e-4);
        // Past the table, the expansion: t(0.975, 40) = 2.0211.
        assert!((t975(40.0) - 2.0211).abs() < 1e-3);
        assert!(small_sample_widening(1_000.0) < 1.002);
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
        let (lo, hi) = wilson(0.0, 10.0).unwrap();
        assert!(lo.abs() < 1e-12 && (hi - 0.277_533).abs() < 1e-6, "{hi}");
        // 5 of 10: centre 0.5, half 1.959964 * sqrt(0.025 + 0.0096037) / 1.3841459
        //   = 1.959964 * 0.1860207 / 1.3841459 = 0.263407.
        let (lo, hi) = wilson(0.5, 10.0).unwrap();
        assert!(
            (lo - 0.236_593).abs() < 1e-6 && (hi - 0.763_407).abs() < 1e-6,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0.0, 0.0), None);
    }

    #[test]
    fn several_runs_are_judged_by_run_then_by_tip() {
        // Five runs a side, six tips each, every tip of run r at 10 + r ms in A and
        // 11 + r in B: means 12 and 13, +1 ms. The runs spread by 1.58 ms (sd of 0..4), so
        // a run-level mean of five is known to about +-0.7 ms a side: 1 ms is no
        // difference. Pooling the 30 tips a side as if from one run would see a spread of
        // 1.44 over 30 (+-0.26 a side) and call +1 ms significant.
        let side = |base: f64| -> Vec<Vec<Vec<f64>>> {
            (0..5)
                .map(|r| vec![vec![base + f64::from(r); 2]; 6])
                .collect()
        };
        let d = two_stage_delta(&side(10.0), &side(11.0)).unwrap();
        assert_eq!((d.mean_a, d.mean_b, d.delta), (12.0, 13.0, 1.0));
        assert_eq!((d.units_a, d.units_b, d.method), (5, 5, Method::TwoStage));
        let (lo, hi) = d.ci.unwrap();
        assert!(lo < 0.0 && hi > 2.0 && !d.significant, "{d:?}");
        let pooled = cluster_delta(&side(10.0).concat(), &side(11.0).concat()).unwrap();
        assert!(pooled.significant, "{pooled:?}");
        // Four runs a side: too few.
        assert!(two_stage_delta(&side(10.0)[..4], &side(11.0))
            .unwrap()
            .too_few());
    }

    /// A side's outcomes: `tips` tips, at each `n` outcomes of which `yes(tip)` are yes.
    fn counted(tips: usize, n: u64, yes: impl Fn(usize) -> u64) -> Counted {
        let mut c = Counted::default();
        for tip in 0..tips {
            for k in 0..n {
                c.push(&format!("T{tip}"), k < yes(tip));
            }
        }
        c
    }

    #[test]
    fn proportions_cluster_by_tip_and_go_to_the_tips_sign_flips_when_counts_are_small() {
        // 20 tips of 100 shares. A: 40 stale, all at tip 0; B: 40 stale, 2 at each tip.
        // Expected counts are 40 at least: the paired tip bootstrap. Both 2.0%, delta 0.
        let a = counted(20, 100, |t| if t == 0 { 40 } else { 0 });
        let b = counted(20, 100, |_| 2);
        let d = proportion_delta(&a, &b).unwrap();
        assert_eq!((d.mean_a, d.mean_b, d.delta), (2.0, 2.0, 0.0));
        assert_eq!((d.method, d.units_a, d.units_b), (Method::Paired, 20, 20));
        // A's stale shares are one burst: a resample holds tip 0 some number of times, as
        // often as a Binomial(20, 1/20), so A's rate runs from 0 to a multiple of 2%: the
        // interval spans several points, where shares counted one by one (a Wilson
        // interval of 80 of 4,000 each) would give +-0.6 points.
        let (lo, hi) = d.ci.unwrap();
        assert!(lo < -1.5 && hi > 1.5, "{lo} {hi}");
        assert!(!d.significant);
        // One burst of 6 stale shares at one tip of A's ten, none in B's: 10 tips of 20
        // shares a side, 6 of 400 stale, an expected count of 3. Fisher's test on the 400
        // shares said p = 2 x C(200,6) / C(400,6) = 0.030: "significant". By tip, p = 6 / 400
        // and each tip's difference (0 - 20p) - (y_a - 20p) is -6 at the burst, 0 elsewhere:
        // the two sign patterns of the one tip that differs are both as far from 0: p = 1.
        let a = counted(10, 20, |t| if t == 0 { 6 } else { 0 });
        let b = counted(10, 20, |_| 0);
        assert_eq!(tip_differences(&a, &b)[..2], [-6.0, 0.0]);
        let d = proportion_delta(&a, &b).unwrap();
        assert_eq!(
            (d.method, d.units_a, d.units_b),
            (Method::TipSignFlip, 10, 10)
        );
        assert!((d.mean_a - 3.0).abs() < 1e-12 && d.mean_b == 0.0);
        assert_eq!(d.p_value, Some(1.0));
        // Newcombe's interval from the sides' intervals by tip. A: 6 of 200 = 3%, residuals
        // y - 0.03 x 20 of 5.4 once and -0.6 nine times, squares 32.4, V = 10/9 x 32.4 /
        // 200^2 = 0.0009, n_eff = 0.03 x 0.97 / 0.0009 = 32.333, x (1.959964 / t(0.975, 9)
        // = 2.262)^2 = 0.750774: 24.275, Wilson [0.42182%, 18.42103%]. B: 0 of 200,
        // n_eff = 200 x 0.750774 = 150.155, [0, 3.841459 / 153.996 = 2.49450%]. Low: -3 -
        // sqrt(0^2 + (18.42103 - 3)^2) = -18.42103; high: -3 + sqrt(2.49450^2 + (3 -
        // 0.42182)^2) = -3 + 3.58742 = +0.58742: it holds 0, as the sign flips say.
        let (lo, hi) = d.ci.unwrap();
        assert!(
            (lo + 18.421_03).abs() < 1e-4 && (hi - 0.587_42).abs() < 1e-4,
            "{lo} {hi}"
        );
        assert!(!d.significant);
        // Four tips: too few, whatever the test.
        let d = proportion_delta(&counted(4, 20, |_| 1), &b).unwrap();
        assert!(d.ci.is_none() && d.p_value.is_none() && !d.significant);
        assert_eq!(d.method, Method::TipSignFlip);
        // Summaries written when it was Fisher's test still read.
        let old: Method = serde_json::from_str("\"exact\"").unwrap();
        assert_eq!(old, Method::TipSignFlip);
        // A tip only one side has is a difference of its own: A's 6 tips, 1 stale share at
        // the sixth, against 5 of them in B with none. p = 1 / 220, that tip's difference
        // -(1 - 20p) = -0.909091, every other 0: p = 1 again.
        let (a, b) = (counted(6, 20, |t| u64::from(t == 5)), counted(5, 20, |_| 0));
        let differences = tip_differences(&a, &b);
        assert_eq!(differences.len(), 6);
        assert!((differences[5] + 1.0 - 20.0 / 220.0).abs() < 1e-12);
        let d = proportion_delta(&a, &b).unwrap();
        assert_eq!((d.units_a, d.units_b, d.p_value), (6, 5, Some(1.0)));
    }

    #[test]
    fn a_sign_flip_test_over_tips_worked_by_hand() {
        // Four tips, differences 3, 1, 1, -1: sum 4. With +3, the three +-1 sum to 3 (1
        // pattern), 1 (3), -1 (3) or -3 (1): totals 6, 4, 2, 0, and 6 or 4 is as far as 4
        // in 4 patterns; -3 mirrors them: 8 of 16, p = 0.5.
        assert_eq!(sign_flip_p(&[3.0, 1.0, 1.0, -1.0]), 0.5);
        // Four tips each 2 more on B: only all + and all - reach |8|: p = 2 / 16 = 0.125,
        // the least four tips can give (five: 2 / 32 = 0.0625; six: 2 / 64 = 0.031).
        assert_eq!(sign_flip_p(&[2.0; 4]), 0.125);
        assert_eq!(sign_flip_p(&[2.0; 6]), 2.0 / 64.0);
        // Tips that do not differ change no sum: left out, as if absent.
        assert_eq!(sign_flip_p(&[2.0, 0.0, 2.0, 0.0, 2.0, 2.0]), 0.125);
        // One burst at one tip, all the rest alike: both patterns are as far: p = 1.
        assert_eq!(sign_flip_p(&[-6.0, 0.0, 0.0, 0.0, 0.0]), 1.0);
        assert_eq!(sign_flip_p(&[]), 1.0);
        // 17 tips are drawn, not enumerated: 17 of +1 is as far only at all + or all -,
        // 2 of 131,072 patterns (1.5e-5); 20,000 draws find one or none, and p stays
        // at its floor, (1 + 0) / 20,001, or barely above.
        let p = sign_flip_p(&[1.0; 17]);
        assert!((1.0 / 20_001.0..=3.0 / 20_001.0).contains(&p), "{p}");
        // And on 20 tips alike but for a burst, the draws agree with enumeration's 1.
        let mut d = vec![0.01; 19];
        d.push(-6.0);
        assert_eq!(sign_flip_p(&d), 1.0);
    }

    #[test]
    fn a_share_by_tip_has_its_interval_worked_by_hand() {
        // 5 tips of 10 shares, 5 stale all at the last: p = 0.1. Residuals y - p n: -1 four
        // times and 4: squares 20, V = 5/4 x 20 / 50^2 = 0.01 (shares one by one: 0.09 /
        // 50 = 0.0018, a design effect of 5.56). n_eff = 0.09 / 0.01 = 9, x (1.959964 /
        // t(0.975, 4) = 2.776)^2 = 0.498476: 4.486418. Wilson at 0.1 of 4.486418: z^2 / n =
        // 0.856244, centre (0.1 + 0.428122) / 1.856244 = 0.284511, half 1.959964 x
        // sqrt(0.020061 + 0.047713) / 1.856244 = 0.274880: [0.009631, 0.559391]. Counted
        // share by share, 5 of 50 would read [0.0435, 0.2136].
        let c = counted(5, 10, |t| if t == 4 { 5 } else { 0 });
        let (lo, hi) = c.interval().unwrap();
        assert!(
            (lo - 0.009_631).abs() < 1e-6 && (hi - 0.559_391).abs() < 1e-6,
            "{lo} {hi}"
        );
        // Four tips, too few for V: each tip is one outcome, n_eff = 40^2 / (4 x 10^2) = 4.
        // Wilson at 5 / 40 = 0.125 of 4: centre (0.125 + 0.480182) / 1.960365 = 0.308708,
        // half 1.959964 x sqrt(0.027344 + 0.060023) / 1.960365 = 0.295518: [0.013191,
        // 0.604227].
        let c = counted(4, 10, |t| if t == 3 { 5 } else { 0 });
        let (lo, hi) = c.interval().unwrap();
        assert!(
            (lo - 0.013_191).abs() < 1e-6 && (hi - 0.604_227).abs() < 1e-6,
            "{lo} {hi}"
        );
        // None stale of 5 tips x 10: V says nothing, n_eff = 50 x 0.498476 = 24.92455:
        // [0, 3.841459 / 28.76601 = 0.133542].
        let (lo, hi) = counted(5, 10, |_| 0).interval().unwrap();
        assert!(lo == 0.0 && (hi - 0.133_542).abs() < 1e-6, "{hi}");
        // Spread evenly (1 of 10 at every tip), no tip varies: no worse than independent
        // shares, n_eff = 50 x 0.498476 = 24.92: Wilson at 0.1 of 24.92, inside 0..0.35.
        let (lo, hi) = counted(5, 10, |_| 1).interval().unwrap();
        assert!(lo > 0.02 && hi < 0.35, "{lo} {hi}");
        assert_eq!(Counted::default().interval(), None);
    }

    /// Units named `T0..`, each holding the samples `values(tip)`.
    fn units_of(tips: usize, values: impl Fn(usize) -> Vec<f64>) -> Clustered {
        let mut c = Clustered::default();
        for tip in 0..tips {
            for v in values(tip) {
                c.push(&format!("T{tip}"), v);
            }
        }
        c
    }

    #[test]
    fn shared_tips_are_resampled_together() {
        // B is A plus 3 ms at every tip, and tips vary widely (10 + 7 x (tip mod 5) ms, 2
        // miners each): every paired resample differs by exactly 3, so the interval is
        // [3, 3]; resampled apart, the tips' spread (sd about 10 ms) would swamp it.
        let a = units_of(20, |t| vec![10.0 + 7.0 * (t % 5) as f64; 2]);
        let b = units_of(20, |t| vec![13.0 + 7.0 * (t % 5) as f64; 2]);
        let paired = paired_delta(a.units(), b.units()).unwrap();
        assert!((paired.delta - 3.0).abs() < 1e-9);
        let (lo, hi) = paired.ci.unwrap();
        assert!(
            (lo - 3.0).abs() < 1e-9 && (hi - 3.0).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(paired.method, Method::Paired);
        assert!(paired.p_value.unwrap() < 0.001, "{paired:?}");
        let apart = clustered_delta(&a, &b).unwrap();
        let (lo, hi) = apart.ci.unwrap();
        assert!(lo < 0.0 && hi > 6.0, "{lo} {hi}");
        // Opposite fortunes at each tip (one pool wins the node's lock, the other waits):
        // A = 20 + e, B = 20 - e with e = +-5 alternating, means equal. Each tip's
        // difference is -+10, so the paired mean difference has a standard error of
        // 10 / sqrt(20) = 2.24 ms; resampled apart, each side's 5 / sqrt(20) = 1.12 ms
        // gives sqrt(2) x 1.12 = 1.58: an interval sqrt(2) too narrow.
        let e = |t: usize| if t.is_multiple_of(2) { 5.0 } else { -5.0 };
        let a = units_of(20, |t| vec![20.0 + e(t)]);
        let b = units_of(20, |t| vec![20.0 - e(t)]);
        let paired = paired_delta(a.units(), b.units()).unwrap();
        let apart = clustered_delta(&a, &b).unwrap();
        let width = |d: &Delta| d.ci.map(|(lo, hi)| hi - lo).unwrap();
        assert_eq!(paired.delta, 0.0);
        let ratio = width(&paired) / width(&apart);
        assert!((1.25..1.6).contains(&ratio), "{paired:?} {apart:?}");
        // A tip only B has counts on B's side alone: A's 5 tips at 10, B's same 5 at 10
        // and a sixth at 40: B's mean (50 + 40) / 6 = 15.
        let a = units_of(5, |_| vec![10.0]);
        let b = units_of(6, |t| vec![if t == 5 { 40.0 } else { 10.0 }]);
        let d = paired_delta(a.units(), b.units()).unwrap();
        assert_eq!(
            (d.mean_a, d.mean_b, d.units_a, d.units_b),
            (10.0, 15.0, 5, 6)
        );
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
