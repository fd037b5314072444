//! What the farm's own node sets in configurations A and B. SRI's JDC moves its miners to
//! a new block only when the farm's node hears of it, so a side's new-block job is that
//! node's lag behind the pool's plus what the roles add. Measured per tip: the lag (the
//! farm node's tip change after the network's, same hash), the roles' own time (each
//! miner's new-block job less the tip's lag) and the break-even lag: the lag at which
//! the side's new-block job would equal the baseline's, per tip the baseline's new-block
//! job less the side's own time, its mean with an interval paired by tip.

use crate::side::LatencySamples;
use crate::stats::{paired_delta, Estimate};
use probe::Dist;
use serde::{Deserialize, Serialize};

/// A farm-node side's lag, own time and break-even.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FarmNodeLag {
    /// The lag the scenario set, in words with its source (`farm_node.block_lag`).
    pub assumed: String,
    /// The lag as it happened, per tip: the farm node's tip change after the network's.
    pub lag_ms: Dist,
    /// What the side's roles add beyond the lag: new-block job less the tip's lag.
    pub own_ms: Dist,
    /// The lag below which the side's miners reach new-block work sooner than the
    /// baseline's: per tip, the baseline's new-block job less this side's own time; the
    /// mean over tips with its 95% interval (tips resampled once for both sides).
    pub break_even_lag_ms: Estimate,
    /// Tips the side and the baseline both have, and those of them on which the side's
    /// miners reached new-block work later than the baseline's (the tip's lag past that
    /// tip's break-even). A heavy-tailed lag leaves the mean difference's interval wide;
    /// this count says how often the lag decided, tip by tip.
    #[serde(default)]
    pub tips_compared: usize,
    #[serde(default)]
    pub tips_later: usize,
}

impl FarmNodeLag {
    /// The side's lag facts from its samples, with the break-even against `baseline`'s
    /// new-block jobs (`None`: no baseline side).
    pub fn of(
        assumed: &str,
        side: &LatencySamples,
        baseline: Option<&LatencySamples>,
    ) -> FarmNodeLag {
        // Only the tips both have (the farm's own blocks have no lag, a tip a side got no
        // job on no job time): the break-even and the count are of the same tips.
        let own = side.own_new_block_ms.units();
        let (own, base) = match baseline {
            Some(b) => {
                let base = b.new_prevhash_job_ms.units();
                (own.shared_with(base), base.shared_with(own))
            }
            None => (own.clone(), Default::default()),
        };
        let break_even = baseline.and_then(|_| paired_delta(&own, &base));
        let jobs: std::collections::HashMap<&str, f64> =
            side.new_prevhash_job_ms.units().means().collect();
        let later: Vec<bool> = (base.means())
            .filter_map(|(tip, b)| jobs.get(tip).map(|job| *job > b))
            .collect();
        FarmNodeLag {
            assumed: assumed.into(),
            lag_ms: side.farm_node_lag_ms.dist(),
            own_ms: side.own_new_block_ms.dist(),
            tips_compared: later.len(),
            tips_later: later.iter().filter(|l| **l).count(),
            break_even_lag_ms: match break_even {
                Some(d) => Estimate {
                    point: Some(d.delta),
                    ci: d.ci,
                    units: d.units_a.min(d.units_b),
                },
                None => Estimate::default(),
            },
        }
    }

    /// The break-even in words: "49.6 ms [49.0, 50.2]".
    pub fn break_even_in_words(&self) -> Option<String> {
        let be = &self.break_even_lag_ms;
        match (be.point, be.ci) {
            (Some(x), Some((lo, hi))) => Some(format!("{x:.1} ms [{lo:.1}, {hi:.1}]")),
            (Some(x), None) => Some(format!("{x:.1} ms (too few tips for an interval)")),
            (None, _) => None,
        }
    }

    /// The sentence for the side's conclusion: "sooner only while your farm's node hears of
    /// blocks within X ms [lo, hi] of your pool's on average; here Y was assumed (source),
    /// later on k of n tips".
    pub fn in_words(&self) -> String {
        let Some(within) = self.break_even_in_words() else {
            return format!("farm node lag assumed {}", self.assumed);
        };
        format!(
            "sooner only while your farm's node hears of blocks within {within} of your \
             pool's on average; here {} was assumed, later on {} of {} tips \
             (`stratum-bench race` measures yours)",
            self.assumed, self.tips_later, self.tips_compared
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five tips: the baseline's miners get new-block work 52 ms after each; the side's
    /// farm node takes them 20, 30, 40, 50 and 60 ms late and its miners get work 2.5 ms
    /// after that (two miners: 2 and 3 ms). Own time 2.5 ms on every tip; break-even per
    /// tip 52 - 2.5 = 49.5 ms, on every tip, so its interval is the point.
    #[test]
    fn the_break_even_is_the_baselines_job_less_the_sides_own_time_by_tip() {
        let mut side = LatencySamples::default();
        let mut base = LatencySamples::default();
        for (i, lag) in [20.0, 30.0, 40.0, 50.0, 60.0].into_iter().enumerate() {
            let tip = format!("tip{i}");
            side.farm_node_lag_ms.push(&tip, lag);
            for own in [2.0, 3.0] {
                side.new_prevhash_job_ms.push(&tip, lag + own);
                side.own_new_block_ms.push(&tip, own);
            }
            base.new_prevhash_job_ms.push(&tip, 52.0);
        }
        let f = FarmNodeLag::of("20 ms (test)", &side, Some(&base));
        assert_eq!(f.lag_ms.mean, Some(40.0));
        assert_eq!(f.own_ms.mean, Some(2.5));
        let be = &f.break_even_lag_ms;
        assert!((be.point.unwrap() - 49.5).abs() < 1e-9);
        let (lo, hi) = be.ci.unwrap();
        assert!(
            (lo - 49.5).abs() < 1e-9 && (hi - 49.5).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(be.units, 5);
        assert!(f.in_words().starts_with(
            "sooner only while your farm's node hears of blocks within 49.5 ms [49.5, 49.5] \
             of your pool's on average"
        ));
        assert!(f.in_words().contains("here 20 ms (test) was assumed"));
        // Lags of 50 and 60 ms (jobs of 52.5 and 62.5 ms) passed the tips' 49.5 ms; 20,
        // 30 and 40 did not.
        assert_eq!((f.tips_later, f.tips_compared), (2, 5));
        assert!(
            f.in_words().contains("later on 2 of 5 tips"),
            "{}",
            f.in_words()
        );
    }

    /// The baseline has a sixth tip the side has no own time on (a block the farm found):
    /// it is left out of the break-even, whose units are the five both have.
    #[test]
    fn the_break_even_is_of_the_tips_both_sides_have() {
        let mut side = LatencySamples::default();
        let mut base = LatencySamples::default();
        for i in 0..5 {
            let tip = format!("tip{i}");
            side.farm_node_lag_ms.push(&tip, 20.0);
            side.new_prevhash_job_ms.push(&tip, 22.0);
            side.own_new_block_ms.push(&tip, 2.0);
            base.new_prevhash_job_ms.push(&tip, 52.0);
        }
        side.new_prevhash_job_ms.push("own", 0.0);
        base.new_prevhash_job_ms.push("own", 500.0);
        let f = FarmNodeLag::of("20 ms", &side, Some(&base));
        assert!((f.break_even_lag_ms.point.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(f.break_even_lag_ms.units, 5);
        assert_eq!((f.tips_later, f.tips_compared), (0, 5));
    }

    #[test]
    fn with_too_few_tips_the_break_even_has_no_interval_and_says_so() {
        let mut side = LatencySamples::default();
        let mut base = LatencySamples::default();
        for i in 0..2 {
            let tip = format!("tip{i}");
            side.own_new_block_ms.push(&tip, 3.0);
            base.new_prevhash_job_ms.push(&tip, 50.0);
        }
        let f = FarmNodeLag::of("20 ms", &side, Some(&base));
        assert_eq!(f.break_even_lag_ms.point, Some(47.0));
        assert_eq!(f.break_even_lag_ms.ci, None);
        assert!(f.in_words().contains("47.0 ms (too few tips"));
        assert_eq!(
            FarmNodeLag::of("20 ms", &side, None)
                .break_even_lag_ms
                .point,
            None
        );
    }
}
