//! One side's part of `summary.json`, and the per-event values behind its distributions:
//! what the headline, the clocks and the sweeps read of a side.

use crate::bandwidth::Bandwidth;
use crate::declaration::JobDeclarationSummary;
use crate::jobs::WorkTime;
use crate::paths::PathReadings;
use crate::resources::RoleResources;
use crate::shares::{BlockCounts, PoolWork, ShareCounts};
use crate::stats::{Clustered, Estimate};
use probe::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SideSummary {
    pub config: model::scenario::Config,
    pub miners: u32,
    /// The round trip of this side's link.
    #[serde(default)]
    pub link_rtt_ms: f64,
    /// The side mines on its farm's own node's templates (configurations A, B): its
    /// template value follows the scenario's `farm_node.mempool_overlap`, and its farm
    /// bandwidth holds that node's modelled peer traffic.
    #[serde(default)]
    pub farm_node: bool,
    pub shares: ShareCounts,
    /// The pool's view: work credited by accepted shares against work done.
    #[serde(default)]
    pub pool_work: PoolWork,
    pub blocks: BlockCounts,
    pub block_propagation_ms: Dist,
    pub new_job_ms: Dist,
    pub new_prevhash_job_ms: Dist,
    /// From a share's submission to the answer its miner got: from the pool across the
    /// link (SV1, D) or from the farm's proxy (A, B, C), before the pool judges.
    #[serde(default)]
    pub share_answer_ms: Dist,
    /// What each latency's path crosses, and what was added beyond its configured delay.
    pub readings: PathReadings,
    /// Time-weighted over valid work only: while a miner's job was on the network's tip.
    pub template_value_sats: Dist,
    /// The side's template value against the network's best, both means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_value_vs_network: Option<Delta>,
    /// Each template the side's miners mined on validly, once, at the first moment one
    /// did: `(seconds into the window, sats)`, in time order. The report draws it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates_mined: Vec<(f64, f64)>,
    /// Miner-seconds of valid, stale and unmatched work in the window.
    #[serde(default)]
    pub work_s: WorkTime,
    /// Stale work as time, the measure that carries over to any block rate: after each
    /// tip, each miner's wait from the tip change at the node to its first job on it or a
    /// later tip (a tip it got no job on counts until the next), in ms, averaged over
    /// miners and tips; its interval resamples tips.
    #[serde(default)]
    pub stale_wait_ms: Dist,
    /// Miner-tips without any job (in `stale_wait_ms`, until the next tip).
    #[serde(default)]
    pub tips_without_work: u64,
    /// The same wait as a share of the work at the real network's pace: wait / its block
    /// interval (`worth_assumptions.block_interval_s`), in percent. What a farm loses.
    #[serde(default)]
    pub stale_work_real_pct: Estimate,
    /// The share of the miners' time that could only make stale shares at the run's own
    /// pace (its simulated blocks come far faster than the real network's): from each tip
    /// change to each miner's first job on it or a later tip (at most until the next tip),
    /// summed, over miners x window, in percent; its interval resamples tips.
    #[serde(default)]
    pub stale_work_pct: Estimate,
    /// The pool's view of it: the work whose shares reached the pool after the pool moved
    /// to the new tip. The pool sits beside the network's node and moves with it, so each
    /// miner's stale time grows by the shares' one-way trip across the link (shares in
    /// flight, fresh when sent). Interval by tip.
    #[serde(default)]
    pub pool_stale_work_pct: Estimate,
    /// With miners of unequal hashrate: shares and stale work by hashrate tenth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_hashrate: Vec<crate::farm::HashrateGroup>,
    /// `None` when the side's link recorded nothing.
    pub bandwidth_bytes_per_s: Option<Bandwidth>,
    /// The farm's bytes per second as means with intervals by batches of seconds: what a
    /// curve across runs draws as a band.
    #[serde(default)]
    pub farm_rates: FarmRates,
    /// What the farm's job declarations met at the pool's JDS (configurations A, B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_declaration: Option<JobDeclarationSummary>,
    /// What the Template Provider the run started for the side (sv2-tp) gave its pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_provider: Option<crate::template_provider::TemplateProviderSummary>,
    /// For a side on its farm's own node (A, B): that node's lag, the roles' own time and
    /// the break-even lag against the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm_node_lag: Option<crate::farm_lag::FarmNodeLag>,
    /// The side's own role processes (the shared network node is under `network`).
    pub roles: BTreeMap<String, RoleResources>,
    /// What its pool costs the pool's operator (no CPU or memory when the pool was not
    /// sampled: a pool not ours to watch).
    #[serde(default)]
    pub pool_costs: crate::resources::PoolCosts,
    /// What the emulation itself costs the side: its relays' and its fleet's CPU, and the
    /// relays' own lateness.
    #[serde(default)]
    pub emulation: crate::resources::Emulation,
    /// Connections the side's pool refused: nothing listened where its taps reach it. A
    /// pool that stops serving while its process runs on (no exit records it) shows here;
    /// while it refused, the side measured that pool, not the protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_refused: Option<PoolRefused>,
    /// The per-event values behind the distributions, by the unit each belongs to.
    #[serde(skip)]
    pub samples: LatencySamples,
}

/// A pool that stopped taking connections (its process may live on, or have exited): how
/// many its taps could not open, from when.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolRefused {
    pub connections: u64,
    /// The first and the last, in seconds from the window's start (negative: in the
    /// warm-up).
    pub first_s: f64,
    #[serde(default)]
    pub last_s: f64,
}

impl PoolRefused {
    /// `side`'s pool's refusals in words, with what they do to its figures.
    pub fn in_words(&self, side: &str) -> String {
        format!(
            "{side}'s pool refused connections from {} to {} ({} its taps could not open): while it did, {side} measured a pool that was not serving, not the protocol",
            moment(self.first_s),
            moment(self.last_s),
            self.connections
        )
    }

    /// Whether a refusal fell in the measured window: refusals in the warm-up alone (a pool
    /// slow to listen that then served) leave the window's figures the protocol's.
    pub fn in_window(&self) -> bool {
        self.last_s >= 0.0
    }

    /// The same, short, for a line that says more.
    pub fn briefly(&self, side: &str) -> String {
        format!(
            "{side}'s pool refused connections from {}",
            moment(self.first_s)
        )
    }
}

/// Seconds from the window's start, as a moment of the run.
fn moment(s: f64) -> String {
    if s < 0.0 {
        format!("{:.0} s before the window", -s)
    } else {
        format!("{s:.0} s into the window")
    }
}

impl SideSummary {
    /// The side's pool process: the harness names it `pool-<side>` (a backup's
    /// `pool-<side>-backup` sorts after it). Its verdicts' role is the tap in front of it,
    /// another process.
    pub fn pool_process(&self) -> Option<&RoleResources> {
        (self.roles.iter()).find_map(|(role, r)| role.starts_with("pool-").then_some(r))
    }

    /// What its pool costs, from the side's own figures over `window_s` (so a summary of
    /// an earlier version, without `pool_costs`, gives them too).
    pub fn pool_costs_over(&self, window_s: f64) -> crate::resources::PoolCosts {
        crate::resources::PoolCosts::of(
            self.pool_process(),
            self.miners,
            self.shares.accepted,
            window_s,
            &self.farm_rates.pool_both,
        )
    }
}

/// Link traffic, bytes per second: the farm's each way (its node's modelled relay in, as
/// the headline counts it) and what the pool's end carries both ways (the link alone).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FarmRates {
    pub tx: Estimate,
    pub rx: Estimate,
    pub pool_both: Estimate,
}

#[derive(Debug, Clone, Default)]
pub struct LatencySamples {
    /// By the tip the template builds on.
    pub new_job_ms: Clustered,
    /// By tip.
    pub new_prevhash_job_ms: Clustered,
    /// By block.
    pub block_propagation_ms: Clustered,
    /// By the tip each share was submitted under.
    pub share_answer_ms: Clustered,
    /// Template values weighted by valid miner-time, by tip.
    pub template_value: crate::stats::Weighted,
    /// By tip: each miner's wait for work on it (`stale_wait_ms`).
    pub stale_wait_ms: Clustered,
    /// By tip (A, B): the farm node's lag behind the network's node, one value a tip.
    pub farm_node_lag_ms: Clustered,
    /// By tip (A, B): each miner's new-block job less the tip's farm node lag.
    pub own_new_block_ms: Clustered,
    /// Shares submitted, stale or not, by tip.
    pub stale_by_tip: crate::stats::Counted,
    /// The pool's verdicts, accepted or not, by tip.
    pub accepted_by_tip: crate::stats::Counted,
    /// The farm's bytes per second, second by second through the window.
    pub farm_tx_per_s: Vec<f64>,
    pub farm_rx_per_s: Vec<f64>,
}

/// A side's value against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub sv2: f64,
    pub sv1: f64,
    pub delta: f64,
    /// `None` when the SV1 value is zero.
    pub pct: Option<f64>,
}

impl Delta {
    /// `sv2` against `sv1`: the difference, and in percent of SV1 when SV1 is not zero.
    pub fn of(sv2: f64, sv1: f64) -> Delta {
        let delta = sv2 - sv1;
        Delta {
            sv2,
            sv1,
            delta,
            pct: (sv1 != 0.0).then(|| delta / sv1.abs() * 100.0),
        }
    }
}
