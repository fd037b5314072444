//! A farm of unequal machines, by hashrate: do the large miners lose more or less to stale
//! work than the small ones? (Their LAN delays differ; so may what a pool's vardiff does
//! to them.)
//!
//! Rules:
//! - Miners are ranked by hashrate (the run's per-miner multiples; ties by index) and cut
//!   into ten groups as equal in count as can be (fewer groups with fewer than ten miners).
//! - Per group: its miners' mean hashrate, the shares they submitted in the window and the
//!   stale ones among them, and their time on outdated work (a prev hash the network had
//!   moved past) in percent of their miner-time in the window.

use crate::jobs::WorkTime;
use crate::shares::MinerShares;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Groups miners are cut into by hashrate.
const GROUPS: usize = 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HashrateGroup {
    /// 1 for the smallest machines, up to 10 for the largest.
    pub group: u32,
    pub miners: u32,
    /// The group's mean hashrate as a multiple of the nominal one (1 is the farm's mean).
    pub hashrate_factor: f64,
    /// In hashes per second, when the run says the nominal hashrate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashrate_hs: Option<f64>,
    pub shares_submitted: u64,
    pub shares_stale: u64,
    pub stale_pct: Option<f64>,
    /// Miner-time on outdated work, in percent of the group's miner-time in the window.
    pub stale_work_pct: Option<f64>,
}

/// The side's miners by hashrate group; empty when the miners are alike (no multiples).
pub fn by_hashrate(
    factors: &[f64],
    nominal_hs: Option<f64>,
    shares: &BTreeMap<u32, MinerShares>,
    work: &BTreeMap<u32, WorkTime>,
    window_s: f64,
) -> Vec<HashrateGroup> {
    if factors.is_empty() {
        return Vec::new();
    }
    let mut ranked: Vec<u32> = (0..factors.len() as u32).collect();
    ranked.sort_by(|a, b| {
        factors[*a as usize]
            .total_cmp(&factors[*b as usize])
            .then(a.cmp(b))
    });
    let groups = GROUPS.min(ranked.len());
    (0..groups)
        .map(|g| {
            // Group g holds ranks [n*g/G, n*(g+1)/G): sizes differ by one at most.
            let members = &ranked[ranked.len() * g / groups..ranked.len() * (g + 1) / groups];
            let miners = members.len() as u32;
            let factor =
                members.iter().map(|m| factors[*m as usize]).sum::<f64>() / f64::from(miners);
            let (submitted, stale) = members
                .iter()
                .filter_map(|m| shares.get(m))
                .fold((0, 0), |(n, s), m| (n + m.submitted, s + m.stale));
            let stale_s: f64 = members
                .iter()
                .filter_map(|m| work.get(m))
                .map(|w| w.stale_s)
                .sum();
            let miner_s = f64::from(miners) * window_s;
            HashrateGroup {
                group: g as u32 + 1,
                miners,
                hashrate_factor: factor,
                hashrate_hs: nominal_hs.map(|h| h * factor),
                shares_submitted: submitted,
                shares_stale: stale,
                stale_pct: (submitted > 0).then(|| stale as f64 * 100.0 / submitted as f64),
                stale_work_pct: (miner_s > 0.0).then(|| stale_s / miner_s * 100.0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(stale_s: f64) -> WorkTime {
        WorkTime {
            valid_s: 10.0 - stale_s,
            stale_s,
            unmatched_s: 0.0,
        }
    }

    /// Worked by hand: 12 miners cut at n*g/10 = 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12 (group 5
    /// and group 10 hold two), a 10 s window.
    #[test]
    fn miners_are_ranked_by_hashrate_into_tenths() {
        // Miner i has multiple (12 - i) / 6.5: miner 11 smallest, miner 0 largest.
        let factors: Vec<f64> = (0..12).map(|i| f64::from(12 - i) / 6.5).collect();
        let shares: BTreeMap<u32, MinerShares> = (0..12)
            .map(|i| {
                (
                    i,
                    MinerShares {
                        submitted: 10,
                        stale: u64::from(i % 2),
                    },
                )
            })
            .collect();
        let work: BTreeMap<u32, WorkTime> =
            (0..12).map(|i| (i, work(f64::from(i) / 10.0))).collect();
        let g = by_hashrate(&factors, Some(1000.0), &shares, &work, 10.0);
        assert_eq!(g.len(), 10);
        let sizes: Vec<u32> = g.iter().map(|g| g.miners).collect();
        assert_eq!(sizes, vec![1, 1, 1, 1, 2, 1, 1, 1, 1, 2]);
        // Group 1: rank 0 = miner 11 (multiple 1/6.5); stale 1 of 10; 1.1 s of 10 s stale.
        assert_eq!(g[0].group, 1);
        assert!((g[0].hashrate_factor - 1.0 / 6.5).abs() < 1e-12);
        assert!((g[0].hashrate_hs.unwrap() - 1000.0 / 6.5).abs() < 1e-9);
        assert_eq!((g[0].shares_submitted, g[0].shares_stale), (10, 1));
        assert_eq!(g[0].stale_pct, Some(10.0));
        assert!((g[0].stale_work_pct.unwrap() - 11.0).abs() < 1e-9);
        // Group 5: ranks 4-5 = miners 7 and 6 (multiples 5/6.5, 6/6.5); stale 1 of 20;
        // (0.7 + 0.6) s of 20 miner-seconds.
        assert!((g[4].hashrate_factor - 5.5 / 6.5).abs() < 1e-12);
        assert_eq!((g[4].shares_submitted, g[4].shares_stale), (20, 1));
        assert_eq!(g[4].stale_pct, Some(5.0));
        assert!((g[4].stale_work_pct.unwrap() - 6.5).abs() < 1e-9);
        // Group 10: ranks 10-11 = miners 1 and 0, the largest.
        assert!((g[9].hashrate_factor - 23.0 / 13.0).abs() < 1e-12);
        assert_eq!(g[9].stale_pct, Some(5.0));
    }

    #[test]
    fn alike_miners_have_no_groups_and_few_miners_fewer_groups() {
        assert!(by_hashrate(&[], None, &BTreeMap::new(), &BTreeMap::new(), 10.0).is_empty());
        let g = by_hashrate(
            &[0.5, 1.5, 1.0],
            None,
            &BTreeMap::new(),
            &BTreeMap::new(),
            10.0,
        );
        assert_eq!(g.len(), 3);
        assert_eq!(g[2].hashrate_factor, 1.5);
        assert_eq!(
            (g[2].hashrate_hs, g[2].stale_pct),
            (None, None),
            "no shares: no rate"
        );
        assert_eq!(
            g[2].stale_work_pct,
            Some(0.0),
            "a miner with no jobs did no stale work"
        );
    }
}
