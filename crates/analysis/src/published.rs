//! The published SV1/SV2 benchmark's results (16.5 h per configuration on testnet4, two
//! CPU miners per side, 60 s template refresh), and the published scale figures the
//! benches are shown beside; this run's SV1 side against the first.

use crate::summary::{SideSummary, Summary};

/// What a published SV1 number measures, so ours is read from the summary by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishedMetric {
    NewJobMean,
    NewPrevhashJobMean,
    AcceptancePct,
    StalePct,
    FarmTx,
    PoolTx,
}

impl PublishedMetric {
    /// This run's value on a side, where it has one.
    pub fn of(self, s: &SideSummary) -> Option<f64> {
        match self {
            PublishedMetric::NewJobMean => s.new_job_ms.mean,
            PublishedMetric::NewPrevhashJobMean => s.new_prevhash_job_ms.mean,
            PublishedMetric::AcceptancePct => s.shares.acceptance_pct,
            PublishedMetric::StalePct => s.shares.stale_pct,
            PublishedMetric::FarmTx => s.bandwidth_bytes_per_s.as_ref().map(|b| b.farm.tx),
            PublishedMetric::PoolTx => s.bandwidth_bytes_per_s.as_ref().map(|b| b.pool.tx),
        }
    }
}

/// One published number, for the SV1 side of the seed's two configurations.
pub struct Published {
    pub metric: PublishedMetric,
    pub label: &'static str,
    /// Configuration A's run (RTT 145 ms) and C's (RTT 129 ms); `None` where not published.
    pub config_a: Option<f64>,
    pub config_c: Option<f64>,
    pub unit: &'static str,
    /// How the seed measured it, and how we do.
    pub method_note: &'static str,
}

pub const SV1: &[Published] = &[
    Published {
        metric: PublishedMetric::NewJobMean,
        label: "new job, mean",
        config_a: Some(138.0),
        config_c: Some(122.0),
        unit: "ms",
        method_note: "Seed: template at a proxy before the pool to job at a proxy before the miner, last-value gauge averaged. Ours: template built at the node to job received by each miner, tied by marker txid, every event.",
    },
    Published {
        metric: PublishedMetric::NewPrevhashJobMean,
        label: "new job after a block, mean",
        config_a: Some(217.0),
        config_c: Some(144.0),
        unit: "ms",
        method_note: "Seed: new prev-hash template to new job, via proxies. Ours: tip change at the node to each miner's first job on it.",
    },
    Published {
        metric: PublishedMetric::AcceptancePct,
        label: "share acceptance",
        config_a: Some(99.6),
        config_c: Some(99.4),
        unit: "%",
        method_note: "Seed: counted at a proxy. Ours: counted where the pool decides.",
    },
    Published {
        metric: PublishedMetric::StalePct,
        label: "stale shares",
        config_a: Some(53.0 / 13642.0 * 100.0),
        config_c: Some(77.0 / 12036.0 * 100.0),
        unit: "% of submitted",
        method_note: "Seed: 53 of 13,642 (A) and 77 of 12,036 (C) as the pool judged. Ours: job outdated at the moment of submission, from the node's tip timeline.",
    },
    Published {
        metric: PublishedMetric::FarmTx,
        label: "farm bandwidth tx",
        config_a: Some(114.0),
        config_c: None,
        unit: "B/s",
        method_note: "Seed: tcpdump per container IP (A only). Ours: application bytes crossing the emulated WAN link.",
    },
    Published {
        metric: PublishedMetric::PoolTx,
        label: "pool bandwidth tx",
        config_a: Some(224.0),
        config_c: None,
        unit: "B/s",
        method_note: "Seed: tcpdump per container IP (A only). Ours: application bytes crossing the emulated WAN link.",
    },
];

/// One published number beside this run's.
pub struct BesidePublished {
    pub published: &'static Published,
    pub ours: Option<f64>,
    /// Ours against the published configuration A, in percent of it.
    pub vs_config_a_pct: Option<f64>,
}

/// This run's `sv1` side beside every published SV1 number; `None` without an `sv1` side.
pub fn beside_published(summary: &Summary) -> Option<Vec<BesidePublished>> {
    let sv1 = summary.sides.get(crate::headline::BASELINE)?;
    let rows = SV1
        .iter()
        .map(|p| {
            let ours = p.metric.of(sv1);
            let vs_config_a_pct = match (ours, p.config_a) {
                (Some(o), Some(a)) if a != 0.0 => Some((o - a) / a * 100.0),
                _ => None,
            };
            BesidePublished {
                published: p,
                ours,
                vs_config_a_pct,
            }
        })
        .collect();
    Some(rows)
}

/// Why a template value cannot be compared across the two: testnet4 pays 50 BTC.
pub const TEMPLATE_VALUE_NOTE: &str = "The seed's template values (about 500,005,274 sats for SV1) are testnet4's: a 50 BTC subsidy and almost no fees. Ours follow the scenario's height and mempool preset, so only the deltas between sides compare.";

/// A published scale figure, with the hardware it was measured on.
pub struct SeedFigure {
    pub what: &'static str,
    pub value: f64,
    pub unit: &'static str,
    /// Where it comes from and on what.
    pub source: &'static str,
}

const FASTPROXY: &str =
    "FastProxy (Zhong et al.), proxy on an Intel i7 at 2.1 GHz, miners on Xeon servers, 1 Gbps Ethernet";

/// FastProxy (Zhong et al.), Table I: one job to 225 miners.
pub const FANOUT: &[SeedFigure] = &[
    SeedFigure {
        what: "TCP proxy, 225 miners, time to send to all",
        value: 6030.0,
        unit: "us",
        source: FASTPROXY,
    },
    SeedFigure {
        what: "TCP proxy, per miner",
        value: 26.8,
        unit: "us",
        source: FASTPROXY,
    },
    SeedFigure {
        what: "software layer-2 broadcast, 225 miners",
        value: 51.0,
        unit: "us",
        source: FASTPROXY,
    },
    SeedFigure {
        what: "FPGA layer-2 broadcast (Zynq), 225 miners",
        value: 2.9,
        unit: "us",
        source: "FastProxy (Zhong et al.), Xilinx XC7Z045 at 125 MHz",
    },
];
/// FastProxy's TCP proxy, per miner, and its software broadcast (us), for the charts.
pub const FASTPROXY_TCP_US_PER_MINER: f64 = 26.8;
pub const FASTPROXY_BROADCAST_US: f64 = 51.0;

const GOPOOL: &str = "the goPool operator notes, AMD Ryzen 9 7950X, 16 cores, Go 1.24";

/// the goPool operator notes: share handling capacity.
pub const POOL: &[SeedFigure] = &[SeedFigure {
    what: "share parsing and validation throughput, CPU only, network ignored",
    value: 1_160_000.0,
    unit: "shares/s",
    source: GOPOOL,
}];

const GBT_LIGHT: &str =
    "BCHN's getblocktemplatelight notes (Bitcoin Cash Node v0.21.2), 6,000-tx mempool (1.27 MB), hardware not stated";

/// BCHN's getblocktemplatelight notes: template call times (averages) with 6,000 transactions.
pub const TEMPLATE: &[SeedFigure] = &[
    SeedFigure {
        what: "getblocktemplatelight fresh",
        value: 62.025,
        unit: "ms",
        source: GBT_LIGHT,
    },
    SeedFigure {
        what: "getblocktemplatelight cached",
        value: 0.917,
        unit: "ms",
        source: GBT_LIGHT,
    },
    SeedFigure {
        what: "getblocktemplate fresh",
        value: 164.023,
        unit: "ms",
        source: GBT_LIGHT,
    },
    SeedFigure {
        what: "getblocktemplate cached",
        value: 117.277,
        unit: "ms",
        source: GBT_LIGHT,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::TipCause;

    #[test]
    fn the_sv1_side_beside_the_published_numbers() {
        let m = manifest(vec![sv1_side()]);
        // One tip; the two miners get their job 52 and 52 ms later: mean 52 ms.
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_000 * MS, "node", "A", "P", 100),
            job(1_052 * MS, 0, "P", Some("A")),
            job(1_052 * MS, 1, "P", Some("A")),
        ];
        let s = computed(&m, &events, &[]);
        let rows = beside_published(&s).unwrap();
        let row = |metric| rows.iter().find(|r| r.published.metric == metric).unwrap();
        let after_block = row(PublishedMetric::NewPrevhashJobMean);
        assert_eq!(after_block.ours, Some(52.0));
        // (52 - 217) / 217 = -76.0369%.
        let pct = after_block.vs_config_a_pct.unwrap();
        assert!((pct - (-76.0369)).abs() < 1e-4, "{pct}");
        // No shares judged and no link recorded: nothing to set beside the seed's.
        assert_eq!(row(PublishedMetric::AcceptancePct).ours, None);
        assert_eq!(row(PublishedMetric::FarmTx).vs_config_a_pct, None);
        // The seed's stale rate, worked by hand: 53 / 13,642 = 0.3885%.
        let stale = row(PublishedMetric::StalePct).published.config_a.unwrap();
        assert!((stale - 0.388506).abs() < 1e-6, "{stale}");

        let no_sv1 = computed(&manifest(vec![farm_side()]), &events, &[]);
        assert!(beside_published(&no_sv1).is_none());
    }
}
