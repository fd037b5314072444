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
    /// The window's shares weighted by the difficulty each was judged at.
    work: f64,
}

impl Vardiff {
    pub(crate) fn new(cfg: VardiffConfig) -> Self {
        Vardiff {
            cfg,
            window_start: Instant::now(),
            shares: 0,
            work: 0.0,
        }
    }

    /// Counts an accepted share judged at difficulty `judged` (shares in flight across a
    /// retarget are judged at the easier one, and count for less); returns a new
    /// difficulty when the rate at `current` is off by more than a factor of 1.5 over a
    /// full window (moves are at most 4x at a time). A miner far faster than its
    /// difficulty (a real ASIC or GPU at a start difficulty meant for a throttled miner)
    /// is retargeted as soon as its shares show it, and the pool tells it at once, so
    /// that it is steered within a second instead of flooding the pool for a window.
    pub(crate) fn on_share(&mut self, now: Instant, judged: f64, current: f64) -> Option<f64> {
        self.shares += 1;
        self.work += judged;
        let elapsed = now.duration_since(self.window_start);
        let expected = self.cfg.shares_per_min * elapsed.as_secs_f64() / 60.0;
        let at_current = self.work / current;
        let flooding = self.shares >= FAST_RETARGET_SHARES && at_current > 4.0 * expected;
        if elapsed < self.cfg.retarget && !flooding {
            return None;
        }
        let rate = at_current / elapsed.as_secs_f64().max(1e-3) * 60.0;
        self.window_start = now;
        self.shares = 0;
        self.work = 0.0;
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

    /// Ten shares a minute from difficulty 1, reconsidered every minute.
    fn ten_a_minute(min: f64, max: f64) -> VardiffConfig {
        VardiffConfig {
            shares_per_min: 10.0,
            start: 1.0,
            min,
            max,
            retarget: Duration::from_secs(60),
        }
    }

    #[test]
    fn steers_towards_the_target_rate() {
        let mut v = Vardiff::new(ten_a_minute(0.001, 1000.0));
        let t0 = v.window_start;
        // 30 shares in a minute: 3x too many, so the difficulty goes up 3x at the window.
        for i in 1..30 {
            assert_eq!(v.on_share(t0 + Duration::from_secs(2 * i), 1.0, 1.0), None);
        }
        let up = v.on_share(t0 + Duration::from_secs(60), 1.0, 1.0).unwrap();
        assert!((up - 3.0).abs() < 1e-9, "{up}");
        // 10 a minute: left alone.
        for i in 1..10 {
            v.on_share(t0 + Duration::from_secs(60 + 6 * i), 3.0, 3.0);
        }
        assert_eq!(v.on_share(t0 + Duration::from_secs(120), 3.0, 3.0), None);
    }

    #[test]
    fn shares_judged_at_an_easier_difficulty_count_for_less() {
        let mut v = Vardiff::new(ten_a_minute(0.001, 1000.0));
        let t0 = v.window_start;
        // 60 shares a minute, all of work queued at difficulty 1 before the miner heard
        // of 6: ten a minute at 6, so no further rise.
        for i in 1..=60 {
            assert_eq!(v.on_share(t0 + Duration::from_secs(i), 1.0, 6.0), None);
        }
    }

    #[test]
    fn a_flooding_miner_is_steered_at_once() {
        let mut v = Vardiff::new(ten_a_minute(1e-9, 1e9));
        let t0 = v.window_start;
        let mut d = 1.0;
        let mut t = t0;
        // 1000 shares a second at the start difficulty: up 4x per 16 shares.
        for _ in 0..100 {
            t += Duration::from_millis(1);
            if let Some(next) = v.on_share(t, d, d) {
                d = next;
            }
        }
        assert!(
            d >= 4f64.powi(5),
            "difficulty only reached {d} after 100 ms"
        );
    }
}
