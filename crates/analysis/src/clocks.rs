//! What clock offsets between hosts do to the latencies measured across them.
//!
//! A latency is the difference of two stamps, each moved onto the harness's clock by its
//! own clock's estimated offset (the harness's own clock is exact). Each estimate is off by
//! at most its stated uncertainty, so a latency between roles on two moved clocks is off
//! by at most the sum of theirs; the bound for every latency of a run is the sum of the
//! two widest.

use crate::manifest::ClockOffset;
use crate::side::SideSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A latency whose median is within ten times the clocks' uncertainty: the uncertainty
/// is over 10% of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockLimited {
    pub side: String,
    pub metric: String,
    pub p50_ms: f64,
    pub uncertainty_ms: f64,
}

/// The most any latency between two of the run's roles may be off through clock offsets,
/// in ms; `None` when every event was stamped on the harness's own clock.
pub fn cross_clock_uncertainty_ms(clocks: &[ClockOffset]) -> Option<f64> {
    let mut moved: Vec<u64> = clocks
        .iter()
        .filter(|c| c.applied)
        .map(|c| c.uncertainty_ns)
        .collect();
    if moved.is_empty() {
        return None;
    }
    moved.sort_unstable_by(|a, b| b.cmp(a));
    Some(moved.iter().take(2).sum::<u64>() as f64 / 1e6)
}

/// The sides' latencies that the clocks' uncertainty `uncertainty_ms` blurs by over 10%.
pub fn clock_limited(
    sides: &BTreeMap<String, SideSummary>,
    uncertainty_ms: Option<f64>,
) -> Vec<ClockLimited> {
    let Some(uncertainty_ms) = uncertainty_ms else {
        return Vec::new();
    };
    let mut limited = Vec::new();
    for (side, summary) in sides {
        for (metric, dist) in [
            ("new_job_ms", &summary.new_job_ms),
            ("new_prevhash_job_ms", &summary.new_prevhash_job_ms),
            ("block_propagation_ms", &summary.block_propagation_ms),
        ] {
            if let Some(p50) = dist.p50.filter(|p50| uncertainty_ms > 0.1 * p50.abs()) {
                limited.push(ClockLimited {
                    side: side.clone(),
                    metric: metric.into(),
                    p50_ms: p50,
                    uncertainty_ms,
                });
            }
        }
    }
    limited
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(uncertainty_ns: u64, applied: bool) -> ClockOffset {
        ClockOffset {
            clock: format!("boot-{uncertainty_ns}"),
            roles: vec![],
            offset_ns: 0,
            uncertainty_ns,
            applied,
            exchanges: 8,
        }
    }

    #[test]
    fn the_bound_is_the_two_widest_moved_clocks() {
        assert_eq!(cross_clock_uncertainty_ms(&[]), None);
        // The harness's own clock is exact, whatever its check probes said.
        assert_eq!(cross_clock_uncertainty_ms(&[clock(900_000, false)]), None);
        assert_eq!(
            cross_clock_uncertainty_ms(&[clock(900_000, false), clock(40_000, true)]),
            Some(0.04)
        );
        // 0.3 ms + 0.2 ms: a latency from the first host to the second.
        let three = [
            clock(200_000, true),
            clock(100_000, true),
            clock(300_000, true),
        ];
        assert_eq!(cross_clock_uncertainty_ms(&three), Some(0.5));
    }

    #[test]
    fn a_latency_is_flagged_when_the_bound_passes_a_tenth_of_its_median() {
        let empty = crate::testing::manifest(vec![crate::testing::sv1_side()]);
        let mut side = crate::stream::compute(&empty, &[], &[]).sides["sv1"].clone();
        side.new_job_ms.p50 = Some(4.0);
        side.new_prevhash_job_ms.p50 = Some(6.0);
        let sides = BTreeMap::from([("sv1".to_string(), side)]);
        // 0.5 ms: over 10% of 4 ms, under 10% of 6 ms; no block propagation measured.
        let flagged = clock_limited(&sides, Some(0.5));
        assert_eq!(
            flagged,
            vec![ClockLimited {
                side: "sv1".into(),
                metric: "new_job_ms".into(),
                p50_ms: 4.0,
                uncertainty_ms: 0.5,
            }]
        );
        assert!(clock_limited(&sides, None).is_empty());
        assert!(clock_limited(&sides, Some(0.4)).is_empty());
    }
}
