//! The published results of shared/seeds/000 (16.5 h per configuration on testnet4, two
//! CPU miners per side, 60 s template refresh), to show beside a seed-context run.

/// One published number, for the SV1 side of the seed's two configurations.
pub struct Published {
    pub metric: &'static str,
    /// Configuration A's run (RTT 145 ms) and C's (RTT 129 ms).
    pub config_a: f64,
    pub config_c: f64,
    pub unit: &'static str,
    /// How the seed measured it, and how we do.
    pub method_note: &'static str,
}

pub const SV1: &[Published] = &[
    Published {
        metric: "new job, mean",
        config_a: 138.0,
        config_c: 122.0,
        unit: "ms",
        method_note: "Seed: template at a proxy before the pool to job at a proxy before the miner, last-value gauge averaged. Ours: template built at the node to job received by each miner, tied by marker txid, every event.",
    },
    Published {
        metric: "new job after a block, mean",
        config_a: 217.0,
        config_c: 144.0,
        unit: "ms",
        method_note: "Seed: new prev-hash template to new job, via proxies. Ours: tip change at the node to each miner's first job on it.",
    },
    Published {
        metric: "share acceptance",
        config_a: 99.6,
        config_c: 99.4,
        unit: "%",
        method_note: "Seed: counted at a proxy. Ours: counted where the pool decides.",
    },
    Published {
        metric: "stale shares",
        config_a: 53.0 / 13642.0 * 100.0,
        config_c: 77.0 / 12036.0 * 100.0,
        unit: "% of submitted",
        method_note: "Seed: 53 of 13,642 (A) and 77 of 12,036 (C) as the pool judged. Ours: job outdated at the moment of submission, from the node's tip timeline.",
    },
    Published {
        metric: "farm bandwidth tx",
        config_a: 114.0,
        config_c: f64::NAN,
        unit: "B/s",
        method_note: "Seed: tcpdump per container IP (A only). Ours: application bytes crossing the emulated WAN link.",
    },
    Published {
        metric: "pool bandwidth tx",
        config_a: 224.0,
        config_c: f64::NAN,
        unit: "B/s",
        method_note: "Seed: tcpdump per container IP (A only). Ours: application bytes crossing the emulated WAN link.",
    },
];

/// Why a template value cannot be compared across the two: testnet4 pays 50 BTC.
pub const TEMPLATE_VALUE_NOTE: &str = "The seed's template values (about 500,005,274 sats for SV1) are testnet4's: a 50 BTC subsidy and almost no fees. Ours follow the scenario's height and mempool preset, so only the deltas between sides compare.";
