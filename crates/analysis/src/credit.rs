//! Work a judge credited, as hashes: what an accepted share of a difficulty stands for,
//! summed with its variance for an interval.

use crate::stats::Z95;

/// Hashes one unit of share difficulty stands for (difficulty 1 is the `1d00ffff` target).
const HASHES_PER_DIFFICULTY: f64 = 4_294_967_296.0;

/// The hashes a share of `difficulty` stands for.
pub(crate) fn hashes_of(difficulty: f64) -> f64 {
    difficulty * HASHES_PER_DIFFICULTY
}

/// Work a judge credited: accepted shares, their hashes, and the hashes squared (for the
/// interval).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Credited {
    pub shares: u64,
    pub hashes: f64,
    pub hashes_sq: f64,
}

impl Credited {
    pub(crate) fn add(&mut self, difficulty: Option<f64>) {
        let hashes = difficulty.map_or(0.0, hashes_of);
        self.shares += 1;
        self.hashes += hashes;
        self.hashes_sq += hashes * hashes;
    }

    pub(crate) fn plus(self, other: Credited) -> Credited {
        Credited {
            shares: self.shares + other.shares,
            hashes: self.hashes + other.hashes,
            hashes_sq: self.hashes_sq + other.hashes_sq,
        }
    }

    /// In percent of `done` hashes, with its 95% interval: shares are found as a Poisson
    /// process, so the credited sum of difficulties d has variance sum(d^2) (normal
    /// approximation; with one difficulty, a relative half-width of 1.96 / sqrt(accepted
    /// shares)). No interval for nothing credited; `None` for no work done.
    pub fn pct_of(&self, done: f64) -> Option<(f64, Option<(f64, f64)>)> {
        (done > 0.0).then(|| {
            let pct = |hashes: f64| hashes / done * 100.0;
            let half = Z95 * self.hashes_sq.sqrt();
            let ci = (self.hashes > 0.0)
                .then(|| (pct((self.hashes - half).max(0.0)), pct(self.hashes + half)));
            (pct(self.hashes), ci)
        })
    }
}
