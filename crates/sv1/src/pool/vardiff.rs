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
    /// than a factor of 1.5 over a full window (moves are at most 4x at a time).
    pub(crate) fn on_share(&mut self, now: Instant, current: f64) -> Option<f64> {
        self.shares += 1;
        let elapsed = now.duration_since(self.window_start);
        if elapsed < self.cfg.retarget {
            return None;
        }
        let rate = f64::from(self.shares) / elapsed.as_secs_f64() * 60.0;
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
        // 40 shares in a minute: 4x too many, so the difficulty goes up 4x.
        for i in 1..40 {
            assert_eq!(v.on_share(t0 + Duration::from_secs(i), 1.0), None);
        }
        assert_eq!(v.on_share(t0 + Duration::from_secs(60), 1.0), Some(4.0));
        // 10 a minute: left alone.
        for i in 1..10 {
            v.on_share(t0 + Duration::from_secs(60 + i), 4.0);
        }
        assert_eq!(v.on_share(t0 + Duration::from_secs(120), 4.0), None);
    }
}
