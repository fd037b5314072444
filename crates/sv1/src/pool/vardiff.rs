//! Variable difficulty: each connection's share difficulty is steered so that it sends
//! about `shares_per_min` shares a minute.

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct VardiffConfig {
    pub shares_per_min: f64,
    pub start: f64,
    pub min: f64,
    pub max: f64,
    /// How long a window of shares is before the difficulty is reconsidered.
    pub retarget: Duration,
}

/// Shares that are enough to see a miner is far too fast for its difficulty.
const FAST_RETARGET_SHARES: u32 = 16;

pub(crate) struct Vardiff {
    cfg: VardiffConfig,
    window_start: Instant,
    shares: u32,
}

impl Vardiff {
    pub(crate) fn new(cfg: VardiffConfig) -> Self {
        Vardiff {
            cfg,
            window_start: Instant::now(),
            shares: 0,
        }
    }

    /// Counts an accepted share; returns a new difficulty when the rate is off by more
    /// than a factor of 1.5 over a full window (moves are at most 4x at a time). A miner
    /// far faster than its difficulty (a real ASIC or GPU at a start difficulty meant
    /// for a throttled miner) is retargeted as soon as its shares show it, so that it is
    /// steered down within a second instead of flooding the pool for a whole window.
    pub(crate) fn on_share(&mut self, now: Instant, current: f64) -> Option<f64> {
        self.shares += 1;
        let elapsed = now.duration_since(self.window_start);
        let expected = self.cfg.shares_per_min * elapsed.as_secs_f64() / 60.0;
        let flooding =
            self.shares >= FAST_RETARGET_SHARES && f64::from(self.shares) > 4.0 * expected;
        if elapsed < self.cfg.retarget && !flooding {
            return None;
        }
        let rate = f64::from(self.shares) / elapsed.as_secs_f64().max(1e-3) * 60.0;
        self.window_start = now;
        self.shares = 0;
        let ratio = rate / self.cfg.shares_per_min;
        if (1.0 / 1.5..=1.5).contains(&ratio) {
            return None;
        }
        let next = (current * ratio.clamp(0.25, 4.0)).clamp(self.cfg.min, self.cfg.max);
        (next != current).then_some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steers_towards_the_target_rate() {
        let cfg = VardiffConfig {
            shares_per_min: 10.0,
            start: 1.0,
            min: 0.001,
            max: 1000.0,
            retarget: Duration::from_secs(60),
        };
        let mut v = Vardiff::new(cfg);
        let t0 = v.window_start;
        // 30 shares in a minute: 3x too many, so the difficulty goes up 3x at the window.
        for i in 1..30 {
            assert_eq!(v.on_share(t0 + Duration::from_secs(2 * i), 1.0), None);
        }
        let up = v.on_share(t0 + Duration::from_secs(60), 1.0).unwrap();
        assert!((up - 3.0).abs() < 1e-9, "{up}");
        // 10 a minute: left alone.
        for i in 1..10 {
            v.on_share(t0 + Duration::from_secs(60 + 6 * i), 3.0);
        }
        assert_eq!(v.on_share(t0 + Duration::from_secs(120), 3.0), None);
    }

    #[test]
    fn a_flooding_miner_is_steered_at_once() {
        let cfg = VardiffConfig {
            shares_per_min: 10.0,
            start: 1.0,
            min: 1e-9,
            max: 1e9,
            retarget: Duration::from_secs(60),
        };
        let mut v = Vardiff::new(cfg);
        let t0 = v.window_start;
        let mut d = 1.0;
        let mut t = t0;
        // 1000 shares a second at the start difficulty: up 4x per 16 shares.
        for _ in 0..100 {
            t += Duration::from_millis(1);
            if let Some(next) = v.on_share(t, d) {
                d = next;
            }
        }
        assert!(
            d >= 4f64.powi(5),
            "difficulty only reached {d} after 100 ms"
        );
    }
}
