//! The headline metrics, each named once (as criterion names its estimates): what the
//! terminal table and the "SV2 delta" lines lead with. A renamed summary field is a
//! compile error here, never a silently missing row.

use crate::summary::{Delta, SideSummary, Summary};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Headline {
    NewJobP50,
    NewPrevhashJobP50,
    BlockPropagationP50,
    AcceptancePct,
    PoolCreditedPct,
    StaleShares,
    StalePct,
    StaleWorkS,
    TemplateValueMean,
    FarmTx,
    FarmRx,
}

impl Headline {
    pub const ALL: [Headline; 11] = [
        Headline::NewJobP50,
        Headline::NewPrevhashJobP50,
        Headline::BlockPropagationP50,
        Headline::AcceptancePct,
        Headline::PoolCreditedPct,
        Headline::StaleShares,
        Headline::StalePct,
        Headline::StaleWorkS,
        Headline::TemplateValueMean,
        Headline::FarmTx,
        Headline::FarmRx,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Headline::NewJobP50 => "new job p50 ms",
            Headline::NewPrevhashJobP50 => "new job after a block p50 ms",
            Headline::BlockPropagationP50 => "block propagation p50 ms",
            Headline::AcceptancePct => "acceptance %",
            Headline::PoolCreditedPct => "work credited by the pool %",
            Headline::StaleShares => "stale shares",
            Headline::StalePct => "stale shares %",
            Headline::StaleWorkS => "stale work (miner-seconds)",
            Headline::TemplateValueMean => "template value mean sats",
            Headline::FarmTx => "farm tx bytes/s",
            Headline::FarmRx => "farm rx bytes/s",
        }
    }

    /// The metric's value on one side; `None` where the side has none.
    pub fn of(self, s: &SideSummary) -> Option<f64> {
        match self {
            Headline::NewJobP50 => s.new_job_ms.p50,
            Headline::NewPrevhashJobP50 => s.new_prevhash_job_ms.p50,
            Headline::BlockPropagationP50 => s.block_propagation_ms.p50,
            Headline::AcceptancePct => s.shares.acceptance_pct,
            Headline::PoolCreditedPct => s.pool_work.credited_pct,
            Headline::StaleShares => Some(s.shares.stale as f64),
            Headline::StalePct => s.shares.stale_pct,
            Headline::StaleWorkS => Some(s.work_s.stale_s),
            Headline::TemplateValueMean => s.template_value_sats.mean,
            Headline::FarmTx => s.bandwidth_bytes_per_s.as_ref().map(|b| b.farm.tx),
            Headline::FarmRx => s.bandwidth_bytes_per_s.as_ref().map(|b| b.farm.rx),
        }
    }
}

/// Every SV2 side's headline metrics against the `sv1` side, where both have a value.
pub fn headline_deltas(summary: &Summary) -> Vec<(&str, Vec<(Headline, Delta)>)> {
    let Some(sv1) = summary.sides.get("sv1") else {
        return Vec::new();
    };
    summary
        .sides
        .iter()
        .filter(|(name, _)| name.starts_with("sv2"))
        .map(|(name, side)| {
            let rows = Headline::ALL
                .into_iter()
                .filter_map(|h| Some((h, Delta::of(h.of(side)?, h.of(sv1)?))))
                .collect();
            (name.as_str(), rows)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::compute;
    use crate::testing::*;
    use probe::TipCause;

    #[test]
    fn each_side_against_sv1_only_where_both_have_the_metric() {
        let mut farm = farm_side();
        farm.1.miners_role = "miners".into(); // the same miners' events on both sides
        let m = manifest(vec![sv1_side(), farm]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_010 * MS, "node", "A", "P", 100),
            template(1_030 * MS, "node-farm", "F", "P", 100),
            job(1_070 * MS, 0, "P", Some("A")),
            job(1_070 * MS, 1, "P", Some("F")),
            share(2_000 * MS, 0, 1, "P", None),
            link_bytes(0, "link", 0, 0),
            link_bytes(10_000 * MS, "link", 1_000, 2_000),
        ];
        let s = compute(&m, &events, &[]);
        let d = headline_deltas(&s);
        assert_eq!(d.len(), 1);
        let (side, rows) = &d[0];
        assert_eq!(*side, "sv2-a");
        let get = |h| rows.iter().find(|(x, _)| *x == h).map(|(_, d)| d.clone());
        // sv1 ties miner 0's job (60 ms), sv2-a miner 1's (40 ms).
        assert_eq!(get(Headline::NewJobP50), Some(Delta::of(40.0, 60.0)));
        assert_eq!(get(Headline::StaleShares), Some(Delta::of(0.0, 0.0)));
        // sv2-a's link recorded nothing: no bandwidth row, not a zero.
        assert_eq!(get(Headline::FarmTx), None);
        // No pool verdicts on either side: no acceptance.
        assert_eq!(get(Headline::AcceptancePct), None);
    }
}
