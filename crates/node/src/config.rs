//! What a scenario can say about the simulated network.

use bitcoin::CompactTarget;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The whole simulated network, as seen by one node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeConfig {
    /// Seeds every random draw: the same seed gives the same chain and mempool.
    pub seed: u64,
    /// Mean time between blocks of the whole network (ours plus the rest).
    #[serde(with = "model::duration")]
    pub block_interval: Duration,
    /// Share of the network hashrate held by the miners under test, in `[0, 1]`. The rest
    /// of the network finds blocks at `(1 - share) / block_interval`.
    pub hashrate_share: f64,
    /// Network block arrival times after start, replacing the Poisson process (for tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripted_arrivals: Option<Vec<Duration>>,
    /// Without scripted times: the network's blocks drawn as a Poisson process, or one
    /// every mean gap from the start (`network.arrivals`).
    #[serde(default)]
    pub arrivals: model::network::Arrivals,
    /// The block target.
    pub difficulty: Difficulty,
    /// Height of the chain's base block (the first block this node knows).
    pub start_height: u32,
    /// UNIX time of the start; header times are `time_base` plus elapsed time. `None`
    /// means "now", which is what a live node wants; tests fix it for determinism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_base: Option<u32>,
    pub mempool: MempoolConfig,
    /// A cached template is served until the tip changes, or the mempool changed and this
    /// long has passed since it was built (bitcoind rebuilds after 5 s).
    #[serde(with = "model::duration")]
    pub template_refresh: Duration,
    /// A node that follows another one (the miner-side node of a farm) instead of being
    /// the network: see [`Follower`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follower: Option<Follower>,
}

/// Followers number their templates from here or above (see [`Follower::template_ids_from`]);
/// the network's node from 1, so its ids never reach this range.
pub const FOLLOWER_TEMPLATE_IDS: u64 = 1 << 40;

/// How a follower sees the network. Its chain is its peer's: it finds no blocks itself,
/// takes every block its peer relays, and passes blocks submitted to it on to the peer.
/// Its mempool is its own view of the same transaction stream (the same seed): each
/// transaction reaches it `tx_delay` after the peer, and only a deterministic `overlap`
/// share of them does, so templates built at the farm can differ from the pool's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Follower {
    /// Share of the network's transactions this node's mempool gets, in `[0, 1]`.
    pub overlap: f64,
    #[serde(with = "model::duration")]
    pub tx_delay: Duration,
    /// How much later than the peer this node takes each block, and how much later than
    /// its submission here the peer gets a block found at this node: one draw per block.
    #[serde(default)]
    pub block_lag: model::lag::BlockLag,
    /// Where this node numbers its templates from. Marker transactions derive from the seed
    /// and the template id, so every node of a run needs its own range (the network's
    /// starts at 1) for a job to be tied to the one template it came from.
    pub template_ids_from: u64,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            seed: 1,
            block_interval: Duration::from_secs(600),
            hashrate_share: 0.0,
            scripted_arrivals: None,
            arrivals: Default::default(),
            difficulty: Difficulty::RegtestEasy,
            start_height: 880_000,
            time_base: None,
            mempool: MempoolConfig::preset(MempoolPreset::Mainnet),
            template_refresh: Duration::from_secs(5),
            follower: None,
        }
    }
}

/// How hard a block is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    /// Bitcoin Core's regtest target (`207fffff`): about every second hash is a block.
    RegtestEasy,
    /// A Bitcoin difficulty (1.0 is the `1d00ffff` target); fractions go down to regtest.
    Fixed(f64),
    /// Calibrated so that miners under test hashing at this many hashes per second find
    /// blocks at `hashrate_share / block_interval`.
    MinerHashrate(f64),
}

impl NodeConfig {
    /// The compact target every block must carry.
    pub fn bits(&self) -> CompactTarget {
        match self.difficulty {
            Difficulty::RegtestEasy => CompactTarget::from_consensus(REGTEST_BITS),
            Difficulty::Fixed(d) => compact_from_difficulty(d),
            Difficulty::MinerHashrate(hps) => {
                let share = self.hashrate_share.max(1e-9);
                let hashes_per_block = hps * self.block_interval.as_secs_f64() / share;
                compact_from_difficulty(hashes_per_block / 2f64.powi(32))
            }
        }
    }

    /// Checks ranges; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.hashrate_share) {
            return Err(format!(
                "network.hashrate_share: {} is not a share between 0 and 1",
                self.hashrate_share
            ));
        }
        if self.block_interval.is_zero() {
            return Err("network.block_interval: must be longer than zero".into());
        }
        match self.difficulty {
            Difficulty::Fixed(d) if !(d.is_finite() && d > 0.0) => {
                return Err(format!("network.difficulty: {d} is not a positive number"))
            }
            Difficulty::MinerHashrate(h) if !(h.is_finite() && h > 0.0) => {
                return Err(format!(
                    "network.miner_hashrate: {h} is not a positive rate"
                ))
            }
            Difficulty::MinerHashrate(_) if self.hashrate_share == 0.0 => {
                return Err("network.miner_hashrate: needs a hashrate_share above 0".into())
            }
            _ => {}
        }
        if let Some(f) = &self.follower {
            if !(0.0..=1.0).contains(&f.overlap) {
                return Err(format!(
                    "farm_node.mempool_overlap: {} is not a share between 0 and 1",
                    f.overlap
                ));
            }
            if f.template_ids_from < FOLLOWER_TEMPLATE_IDS {
                return Err(format!(
                    "follower.template_ids_from: {} is inside the network node's range (below {FOLLOWER_TEMPLATE_IDS})",
                    f.template_ids_from
                ));
            }
        }
        self.mempool.validate()
    }
}

pub use mining::{compact_from_difficulty, REGTEST_BITS};

/// Transactions arriving in the mempool.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MempoolConfig {
    pub preset: MempoolPreset,
    /// Mean arrivals per second (a Poisson process).
    pub tx_rate: f64,
    /// Fee rate in sat/vB: log-normal with this median and log-space sigma, at least 1.
    pub feerate_median: f64,
    pub feerate_sigma: f64,
    /// Virtual size in vB: log-normal with this median and log-space sigma.
    pub vsize_median: f64,
    pub vsize_sigma: f64,
    /// Share of transactions that are legacy (no witness); the rest spend P2WPKH.
    pub legacy_share: f64,
    /// Transactions in the mempool at start.
    pub initial_txs: usize,
    /// Beyond this count the lowest fee rates are evicted, as bitcoind's size limit does.
    pub max_txs: usize,
}

pub use model::network::MempoolPreset;

impl MempoolConfig {
    pub fn preset(preset: MempoolPreset) -> Self {
        match preset {
            MempoolPreset::Mainnet => MempoolConfig {
                preset,
                tx_rate: 5.0,
                feerate_median: 4.0,
                feerate_sigma: 1.1,
                vsize_median: 180.0,
                vsize_sigma: 0.6,
                legacy_share: 0.1,
                initial_txs: 6000,
                max_txs: 100_000,
            },
            MempoolPreset::Testnet => MempoolConfig {
                preset,
                tx_rate: 0.3,
                feerate_median: 1.0,
                feerate_sigma: 0.3,
                vsize_median: 160.0,
                vsize_sigma: 0.5,
                legacy_share: 0.2,
                initial_txs: 50,
                max_txs: 100_000,
            },
            MempoolPreset::Empty => MempoolConfig {
                preset,
                tx_rate: 0.0,
                feerate_median: 1.0,
                feerate_sigma: 0.0,
                vsize_median: 150.0,
                vsize_sigma: 0.0,
                legacy_share: 0.0,
                initial_txs: 0,
                max_txs: 100_000,
            },
        }
    }

    fn validate(&self) -> Result<(), String> {
        let checks: [(&str, f64, bool); 6] = [
            ("tx_rate", self.tx_rate, self.tx_rate >= 0.0),
            (
                "feerate_median",
                self.feerate_median,
                self.feerate_median > 0.0,
            ),
            (
                "feerate_sigma",
                self.feerate_sigma,
                self.feerate_sigma >= 0.0,
            ),
            ("vsize_median", self.vsize_median, self.vsize_median >= 60.0),
            ("vsize_sigma", self.vsize_sigma, self.vsize_sigma >= 0.0),
            (
                "legacy_share",
                self.legacy_share,
                (0.0..=1.0).contains(&self.legacy_share),
            ),
        ];
        for (field, value, ok) in checks {
            if !ok || !value.is_finite() {
                return Err(format!("network.mempool.{field}: {value} is out of range"));
            }
        }
        if self.max_txs == 0 {
            return Err("network.mempool.max_txs: must be at least 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_fields_are_named() {
        let mut c = NodeConfig {
            hashrate_share: 1.5,
            ..NodeConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("hashrate_share"));
        c.hashrate_share = 0.5;
        c.mempool.legacy_share = -1.0;
        assert!(c.validate().unwrap_err().contains("legacy_share"));
    }
}
