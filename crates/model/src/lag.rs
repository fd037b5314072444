//! How much later than the pool's node a farm's own node hears of each block
//! (`farm_node.block_lag`): fixed, a lognormal by its median and 90th percentile, or
//! lags an operator measured (`stratum-bench race`), one drawn per block.
//!
//! A block's lag is drawn from the run's seed and the block's hash, so every farm node of
//! a run draws the same lag for the same block (sides A and B stay paired by tip). (Block
//! hashes carry the run's start time, so two runs of one seed draw different lags from the
//! same distribution.)

use rand::SeedableRng;
use rand_distr::Distribution;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// z of the standard normal's 90th percentile: p90 = median x exp(z90 x sigma).
const Z90: f64 = 1.281_551_565_545;

/// The longest lag a block is held: an hour. Longer is no lag but a node that is down;
/// a lognormal's far tail is cut here.
pub const MAX_MS: f64 = 3_600_000.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a lag in ms (25), a lognormal { median_ms = 454, p90_ms = 6925 } or measured lags { file = \"lags.txt\" }"
)]
pub enum BlockLag {
    /// The same lag for every block, in ms.
    Fixed(f64),
    /// A lognormal lag with this median and 90th percentile, in ms.
    LogNormal { median_ms: f64, p90_ms: f64 },
    /// Lags measured elsewhere (ms, one a line; `#` starts a comment), one drawn at random
    /// per block. `lags_ms` is filled from `file` when the scenario is read.
    Measured {
        file: PathBuf,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        lags_ms: Vec<f64>,
    },
}

impl Default for BlockLag {
    fn default() -> Self {
        BlockLag::Fixed(20.0)
    }
}

impl BlockLag {
    /// Reads a measured lag's file (relative to `base`, the scenario's folder), once.
    pub fn load(&mut self, base: &Path) -> Result<(), String> {
        if let BlockLag::Measured { file, lags_ms } = self {
            if !lags_ms.is_empty() {
                return Ok(());
            }
            let path = if file.is_absolute() {
                file.clone()
            } else {
                base.join(&*file)
            };
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            *lags_ms = parse_lags(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Why the lag cannot be drawn from, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        let ms = |x: f64| (0.0..=MAX_MS).contains(&x);
        match self {
            BlockLag::Fixed(x) if !ms(*x) => Err(format!("{x} is not a lag in ms (0 to an hour)")),
            BlockLag::LogNormal { median_ms, p90_ms } => {
                if !(ms(*median_ms) && *median_ms > 0.0) {
                    Err(format!(
                        "median_ms {median_ms} is not a lag above 0 ms, up to an hour"
                    ))
                } else if !(ms(*p90_ms) && p90_ms >= median_ms) {
                    Err(format!(
                        "p90_ms {p90_ms} is below median_ms {median_ms} or above an hour: a 90th percentile is at least the median"
                    ))
                } else {
                    Ok(())
                }
            }
            BlockLag::Measured { file, lags_ms } if lags_ms.is_empty() => {
                Err(format!("{} holds no lag", file.display()))
            }
            BlockLag::Measured { lags_ms, .. } => match lags_ms.iter().find(|x| !ms(**x)) {
                Some(x) => Err(format!("{x} is not a lag in ms (0 to an hour)")),
                None => Ok(()),
            },
            BlockLag::Fixed(_) => Ok(()),
        }
    }

    /// The lag of the block with this hash, in a run of this seed.
    pub fn draw(&self, seed: u64, block_hash: &[u8; 32]) -> Duration {
        let mut word = [0u8; 8];
        word.copy_from_slice(&block_hash[..8]);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ u64::from_le_bytes(word));
        let ms = match self {
            BlockLag::Fixed(x) => *x,
            BlockLag::LogNormal { median_ms, p90_ms } => {
                let sigma = (p90_ms / median_ms).ln() / Z90;
                match rand_distr::LogNormal::new(median_ms.ln(), sigma) {
                    Ok(d) => d.sample(&mut rng),
                    Err(_) => *median_ms,
                }
            }
            BlockLag::Measured { lags_ms, .. } if lags_ms.is_empty() => 0.0,
            BlockLag::Measured { lags_ms, .. } => {
                lags_ms[rand::Rng::gen_range(&mut rng, 0..lags_ms.len())]
            }
        };
        Duration::from_secs_f64(ms.clamp(0.0, MAX_MS) / 1e3)
    }

    /// The median lag, in ms: what a single "hop" stands for where one number is needed.
    pub fn median_ms(&self) -> f64 {
        match self {
            BlockLag::Fixed(x) => *x,
            BlockLag::LogNormal { median_ms, .. } => *median_ms,
            BlockLag::Measured { lags_ms, .. } => {
                let mut xs = lags_ms.clone();
                xs.sort_by(f64::total_cmp);
                match xs.len() {
                    0 => 0.0,
                    n if n % 2 == 1 => xs[n / 2],
                    n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
                }
            }
        }
    }

    /// The lag in words: "20 ms", "lognormal, median 454 ms, p90 6925 ms", "measured, 144
    /// lags from lags.txt (median 310 ms)".
    pub fn describe(&self) -> String {
        match self {
            BlockLag::Fixed(x) => format!("{x} ms"),
            BlockLag::LogNormal { median_ms, p90_ms } => {
                format!("lognormal, median {median_ms} ms, p90 {p90_ms} ms")
            }
            BlockLag::Measured { file, lags_ms } => format!(
                "measured, {} lags from {} (median {} ms)",
                lags_ms.len(),
                file.display(),
                self.median_ms()
            ),
        }
    }
}

/// Lags in ms, one a line; blank lines and `#` comments skipped. An empty list or a line
/// that is no number is an error naming the line.
pub fn parse_lags(text: &str) -> Result<Vec<f64>, String> {
    let mut lags = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match line.parse::<f64>() {
            Ok(x) if (0.0..=MAX_MS).contains(&x) => lags.push(x),
            _ => {
                return Err(format!(
                    "line {}: {line:?} is not a lag in ms (0 to an hour; a node ahead of the \
                     pool's is a lag of 0)",
                    i + 1
                ))
            }
        }
    }
    if lags.is_empty() {
        return Err("no lag in the file (one a line, in ms)".into());
    }
    Ok(lags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(i: u32) -> [u8; 32] {
        let mut h = [0u8; 32];
        // A block hash is uniform: spread the test's over the first word.
        h[..8].copy_from_slice(&(u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes());
        h
    }

    #[test]
    fn a_fixed_lag_is_the_same_for_every_block() {
        let lag = BlockLag::Fixed(80.0);
        assert_eq!(lag.draw(1, &hash(1)), Duration::from_millis(80));
        assert_eq!(lag.draw(7, &hash(2)), Duration::from_millis(80));
    }

    #[test]
    fn a_lognormal_has_its_median_and_p90_and_draws_are_repeatable() {
        // Fechner et al.'s median of 454 ms with 5% past 15 s: sigma = ln(15000 / 454) /
        // 1.645 = 2.126, so p90 = 454 x exp(1.2816 x 2.126) = 6925 ms; 20,000 draws put
        // their median and p90 within a few percent of those.
        let lag = BlockLag::LogNormal {
            median_ms: 454.0,
            p90_ms: 6925.0,
        };
        let mut xs: Vec<f64> = (0..20_000)
            .map(|i| lag.draw(3, &hash(i)).as_secs_f64() * 1e3)
            .collect();
        xs.sort_by(f64::total_cmp);
        let (median, p90) = (xs[10_000], xs[18_000]);
        assert!((median / 454.0 - 1.0).abs() < 0.05, "median {median}");
        assert!((p90 / 6925.0 - 1.0).abs() < 0.08, "p90 {p90}");
        // The same block, the same seed: the same lag (every farm node of a run).
        assert_eq!(lag.draw(3, &hash(5)), lag.draw(3, &hash(5)));
        assert_ne!(lag.draw(3, &hash(5)), lag.draw(4, &hash(5)));
    }

    #[test]
    fn measured_lags_are_drawn_from_the_file_and_bad_files_say_why() {
        let lags = parse_lags("# race, 3 blocks\n120\n\n300.5 # slow one\n80\n").unwrap();
        assert_eq!(lags, vec![120.0, 300.5, 80.0]);
        let lag = BlockLag::Measured {
            file: "lags.txt".into(),
            lags_ms: lags.clone(),
        };
        assert_eq!(lag.median_ms(), 120.0);
        for i in 0..50 {
            let ms = lag.draw(1, &hash(i)).as_secs_f64() * 1e3;
            assert!(lags.iter().any(|x| (x - ms).abs() < 1e-6), "{ms}");
        }
        assert!(parse_lags("12\nabc\n")
            .unwrap_err()
            .starts_with("line 2: \"abc\" is not a lag in ms"));
        assert!(parse_lags("1e300\n").unwrap_err().contains("line 1"));
        assert!(parse_lags("# nothing\n").unwrap_err().contains("no lag"));
        assert!(parse_lags("-5\n").unwrap_err().contains("line 1"));
    }

    #[test]
    fn a_lag_that_cannot_be_drawn_from_says_why() {
        assert!(BlockLag::Fixed(-1.0).check().unwrap_err().contains("-1"));
        let low = BlockLag::LogNormal {
            median_ms: 454.0,
            p90_ms: 100.0,
        };
        assert!(low.check().unwrap_err().contains("below median_ms"));
        let endless = BlockLag::LogNormal {
            median_ms: 454.0,
            p90_ms: 1e300,
        };
        assert!(endless.check().is_err());
        // The far tail of a lognormal is cut at an hour, never a panic.
        let wide = BlockLag::LogNormal {
            median_ms: 3_000_000.0,
            p90_ms: 3_600_000.0,
        };
        assert!((0..200).all(|i| wide.draw(1, &hash(i)) <= Duration::from_secs(3600)));
        assert!(BlockLag::Fixed(0.0).check().is_ok());
    }

    #[test]
    fn a_scenario_writes_a_lag_three_ways() {
        #[derive(Deserialize)]
        struct S {
            block_lag: BlockLag,
        }
        let read = |t: &str| toml::from_str::<S>(t).map(|s| s.block_lag);
        assert_eq!(read("block_lag = 25").unwrap(), BlockLag::Fixed(25.0));
        assert_eq!(
            read("block_lag = { median_ms = 454, p90_ms = 6925 }").unwrap(),
            BlockLag::LogNormal {
                median_ms: 454.0,
                p90_ms: 6925.0
            }
        );
        assert!(matches!(
            read("block_lag = { file = \"lags.txt\" }").unwrap(),
            BlockLag::Measured { .. }
        ));
        assert!(read("block_lag = { median = 4 }").is_err());
    }
}
