//! The published SV1/SV2 benchmark's results (16.5 h per configuration on testnet4, two
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
