//! A lock-free, bounded histogram for hot paths that record per-event values.
//!
//! Log-linear buckets: 16 sub-buckets per power of two, so a reported percentile is within
//! 1/16 (6.25%) of the true value; count, sum and max are exact. Memory is fixed
//! (1,024 counters) however many values are recorded.

use crate::stats::Dist;
use std::sync::atomic::{AtomicU64, Ordering};

const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = 64 * SUB;

pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum: AtomicU64,
    max: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

/// Bucket of `v`: values below 16 are exact, above that 16 buckets per power of two.
fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS
    let mantissa = (v >> (exp - SUB_BITS)) as usize & (SUB - 1);
    (exp - SUB_BITS + 1) as usize * SUB + mantissa
}

/// Upper bound of the values in bucket `i` (what a percentile reports).
fn bucket_high(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let exp = (i / SUB) as u32 + SUB_BITS - 1;
    let mantissa = (i % SUB) as u64;
    let low = (1u64 << exp) | (mantissa << (exp - SUB_BITS));
    low + (1u64 << (exp - SUB_BITS)) - 1
}

impl Histogram {
    pub fn record(&self, v: u64) {
        self.buckets[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Smallest bucket bound at or above the `q` quantile (nearest rank).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                return Some(bucket_high(i).min(self.max.load(Ordering::Relaxed)));
            }
        }
        Some(self.max.load(Ordering::Relaxed))
    }

    /// The summary, with every value divided by `unit` (1e6 turns ns into ms).
    pub fn dist(&self, unit: f64) -> Dist {
        let n = self.count();
        let scaled = |v: Option<u64>| v.map(|x| x as f64 / unit);
        Dist {
            count: n as usize,
            mean: (n > 0).then(|| self.sum.load(Ordering::Relaxed) as f64 / n as f64 / unit),
            p50: scaled(self.quantile(0.50)),
            p90: scaled(self.quantile(0.90)),
            p99: scaled(self.quantile(0.99)),
            max: scaled((n > 0).then(|| self.max.load(Ordering::Relaxed))),
            mean_ci: None,
            units: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..100_000u64).chain([u64::MAX / 2, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b >= last && b < BUCKETS, "bucket of {v}");
            assert!(bucket_high(b) >= v, "{v} above its bucket bound");
            last = b;
        }
    }

    #[test]
    fn percentiles_within_the_bucket_precision() {
        let h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let d = h.dist(1.0);
        assert_eq!(d.count, 10_000);
        assert_eq!(d.mean, Some(5_000_500.0));
        assert_eq!(d.max, Some(10_000_000.0));
        for (got, want) in [
            (d.p50, 5_000_000.0),
            (d.p90, 9_000_000.0),
            (d.p99, 9_900_000.0),
        ] {
            let got = got.unwrap();
            assert!(got >= want && got <= want * 1.0625, "{got} vs {want}");
        }
        assert_eq!(Histogram::default().dist(1.0).p50, None);
    }
}
