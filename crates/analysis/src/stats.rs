//! Comparing two samples: difference of means with a bootstrap confidence interval.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Resamples of the bootstrap; enough for a stable 95% interval.
const RESAMPLES: usize = 2000;

/// B against A for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub mean_a: f64,
    pub mean_b: f64,
    /// `mean_b - mean_a`.
    pub delta: f64,
    /// `delta / mean_a * 100` (absent when `mean_a` is zero).
    pub pct: Option<f64>,
    /// 95% bootstrap interval of `delta`.
    pub ci_low: f64,
    pub ci_high: f64,
    /// The interval excludes zero.
    pub significant: bool,
}

pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The 95% interval of the mean of `xs` (normal approximation); `None` below 2 samples.
pub fn mean_interval(xs: &[f64]) -> Option<(f64, f64)> {
    let m = mean(xs)?;
    if xs.len() < 2 {
        return None;
    }
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
    let half = 1.96 * (var / xs.len() as f64).sqrt();
    Some((m - half, m + half))
}

/// Difference of means of `b` against `a`, with a percentile bootstrap interval
/// (seeded, so a report is reproducible). `None` when either side has no samples.
pub fn delta(a: &[f64], b: &[f64]) -> Option<Delta> {
    let (mean_a, mean_b) = (mean(a)?, mean(b)?);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let resample = |xs: &[f64], rng: &mut ChaCha8Rng| {
        (0..xs.len())
            .map(|_| xs[rng.gen_range(0..xs.len())])
            .sum::<f64>()
            / xs.len() as f64
    };
    let mut deltas: Vec<f64> = (0..RESAMPLES)
        .map(|_| resample(b, &mut rng) - resample(a, &mut rng))
        .collect();
    deltas.sort_by(f64::total_cmp);
    let ci_low = deltas[(RESAMPLES as f64 * 0.025) as usize];
    let ci_high = deltas[(RESAMPLES as f64 * 0.975) as usize - 1];
    let delta = mean_b - mean_a;
    Some(Delta {
        mean_a,
        mean_b,
        delta,
        pct: (mean_a != 0.0).then(|| delta / mean_a * 100.0),
        ci_low,
        ci_high,
        significant: ci_low > 0.0 || ci_high < 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_of_a_mean_needs_two_samples() {
        // Mean 3, sample variance ((1+1+1+1)/3 = 4/3), so half-width 1.96 * sqrt(4/3 / 4).
        let (lo, hi) = mean_interval(&[2.0, 4.0, 2.0, 4.0]).unwrap();
        let half = 1.96 * (1.0f64 / 3.0).sqrt();
        assert!((lo - (3.0 - half)).abs() < 1e-12 && (hi - (3.0 + half)).abs() < 1e-12);
        assert_eq!(mean_interval(&[5.0]), None);
    }

    #[test]
    fn a_sample_against_itself_is_not_different() {
        let xs: Vec<f64> = (0..200).map(|i| 50.0 + f64::from(i % 7)).collect();
        let d = delta(&xs, &xs).unwrap();
        assert_eq!(d.delta, 0.0);
        assert!(!d.significant);
        assert!(d.ci_low <= 0.0 && d.ci_high >= 0.0);
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
        assert!(d.significant && d.ci_high < -90.0 && d.ci_low > -105.0);
        assert!(delta(&[], &b).is_none());
    }
}
