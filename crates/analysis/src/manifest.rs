//! What the harness tells the analysis about a run: which role is which.

pub use mining::farm::PerMiner;
use model::run_dir::MANIFEST_FILE;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub scenario: String,
    /// Monotonic time the measured window starts (after warm-up) and ends.
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub node_role: String,
    pub link: LinkParams,
    pub sides: BTreeMap<String, SideRoles>,
    /// The order the sides started in, drawn from the seed (`Scenario::start_order`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_order: Vec<String>,
    /// The side every other is set against (`sv1` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// What the verdict's worth in sats a day is computed for.
    #[serde(default)]
    pub worth: WorthAssumptions,
    /// What ended the window, when the run could end it early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// The clocks the roles stamped events with, when their events came through the
    /// collector: each one's offset from the harness's clock, which the events were moved by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clocks: Vec<ClockOffset>,
    /// How the miners differ, alike on every side (miner `i` of each side is the same
    /// machine); empty when they do not.
    #[serde(default, skip_serializing_if = "PerMiner::is_empty")]
    pub per_miner: PerMiner,
    /// Set in an interim snapshot's manifest (`run --report-every`): the run went on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interim: Option<Interim>,
    /// A deployment's plan (`stratum-bench deploy`): its window counts from the moment
    /// its last role started, which [`Manifest::start_at`] sets once the run is collected.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_start: bool,
    /// The attacker on every side's link the scenario planned (`link.attack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<PlannedAttack>,
    /// How the rest of the network's blocks arrived (`network.arrivals`): regular ones set
    /// the pace of the tips every stale figure is measured on, so the summary names them.
    #[serde(default, skip_serializing_if = "is_poisson")]
    pub network_arrivals: model::network::Arrivals,
}

fn is_poisson(a: &model::network::Arrivals) -> bool {
    *a == model::network::Arrivals::Poisson
}

/// Where a run was when an interim snapshot of it was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interim {
    /// Seconds of the measured window behind the snapshot.
    pub measured_s: f64,
    /// The window the run was set to measure.
    pub planned_s: f64,
}

/// One monotonic clock (a host's boot) and how it relates to the harness's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// The clock's name: the boot id of its host (marked when a test shifted it).
    pub clock: String,
    /// The roles that read it.
    pub roles: Vec<String>,
    /// The clock's reading minus the harness's, as last estimated.
    pub offset_ns: i64,
    /// How far off the offset may be: per burst of probes, half the shortest round trip
    /// (the true offset lies within it); the widest of the run, as events were moved by
    /// every burst's estimate in turn.
    pub uncertainty_ns: u64,
    /// Whether events were moved by the offset; not for the harness's own clock, whose
    /// offset is zero by construction (its estimate is kept as a check).
    pub applied: bool,
    /// Probe exchanges made.
    pub exchanges: u64,
}

/// Why and when a run that stops when it knows ended its window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
/// A run that stopped itself is a sequential design: it stopped when every interval was
/// narrow enough (`headline::unresolved`), whatever the intervals showed, so its verdict
/// keeps its 5%.
pub struct Stopped {
    /// `every headline difference known to the precision asked`, `the duration cap`, or
    /// `interrupted`.
    pub reason: String,
    /// Seconds into the measured window.
    pub after_s: f64,
    /// The precision asked, in percent of the SV1 value.
    pub precision_pct: f64,
    /// What was still not known when it stopped.
    pub unresolved: Vec<String>,
}

impl Manifest {
    /// The manifest of run directory `run_dir`.
    pub fn read(run_dir: &std::path::Path) -> anyhow::Result<Manifest> {
        use anyhow::Context;
        let path = run_dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("{} has no {MANIFEST_FILE}", run_dir.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a manifest of this version", path.display()))
    }

    pub fn window(&self) -> Window {
        Window {
            start_ns: self.window_start_ns,
            end_ns: self.window_end_ns,
        }
    }

    /// Every role the run starts, the node's first.
    pub fn roles(&self) -> Vec<String> {
        let mut roles = vec![self.node_role.clone()];
        for side in self.sides.values() {
            for role in &side.roles {
                if !roles.contains(role) {
                    roles.push(role.clone());
                }
            }
        }
        roles
    }

    /// A deployment's plan, its roles started by `started_ns` and its last event at
    /// `last_ns`: the window moved from the plan's offsets to that start, and ended at the
    /// last event when the deployment was stopped before the window's end.
    pub fn start_at(&mut self, started_ns: u64, last_ns: u64) {
        if !self.awaiting_start {
            return;
        }
        self.window_start_ns += started_ns;
        self.window_end_ns =
            (self.window_end_ns + started_ns).min(last_ns.max(self.window_start_ns));
        self.awaiting_start = false;
    }
}

/// When a deployment's roles had all started, from each role's first event.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentStart {
    /// The latest first event of the roles that sent any.
    pub at_ns: u64,
    /// The plan's roles that sent none: they never started, or their events never came.
    pub silent: Vec<String>,
}

/// When the roles of `m` had all started, from each role's first event (`first`, by role):
/// the harness starts its window's clock once every role is ready, and a role's first
/// event is its recorder's start. An error when no role of the plan sent any.
pub fn deployment_start(
    m: &Manifest,
    first: &BTreeMap<String, u64>,
) -> Result<DeploymentStart, String> {
    let roles = m.roles();
    let at_ns = roles.iter().filter_map(|r| first.get(r)).max().copied();
    let silent = roles
        .into_iter()
        .filter(|r| !first.contains_key(r))
        .collect();
    match at_ns {
        Some(at_ns) => Ok(DeploymentStart { at_ns, silent }),
        None => Err("no role of the deployment sent an event: the collector heard nothing".into()),
    }
}

/// The measured window, in monotonic nanoseconds; both ends belong to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Window {
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start_ns && t <= self.end_ns
    }

    /// Its length in seconds; zero while it has not begun (a live summary in warm-up).
    pub fn secs(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e9
    }

    /// The part of `[from, to)` inside the window, if any.
    pub fn clip(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let (from, to) = (from.max(self.start_ns), to.min(self.end_ns));
        (to > from).then_some((from, to))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkParams {
    pub rtt_ms: f64,
    pub jitter_ms: f64,
    /// Bits per second each way; `None` is unlimited.
    pub bandwidth_bps: Option<u64>,
}

/// The roles of one side (one configuration under test).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SideRoles {
    pub config: model::scenario::Config,
    pub miners: u32,
    /// Each miner's hashrate (hashes per second), for the work the pool should credit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miner_hashrate: Option<f64>,
    pub miners_role: String,
    /// Where share acceptance is decided.
    pub pool_role: String,
    /// Where it is decided for the side's backup pool (scenario `backup.pool`), when it
    /// has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_pool_role: Option<String>,
    pub link_role: String,
    /// This side's link round trip, when it differs from the scenario's.
    #[serde(default)]
    pub link_rtt_ms: Option<f64>,
    /// The farm's own node, where the farm builds its templates (configurations A, B).
    #[serde(default)]
    pub farm_node_role: Option<String>,
    /// The link carrying the emulation's own feed between the farm's node and the
    /// network's (whole blocks over ZMQ, submissions over RPC), counted apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feed_link_role: Option<String>,
    /// One-way delay between the farm's node and the network's (its peer hop): the
    /// median of its block lag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm_node_hop_ms: Option<f64>,
    /// The farm node's block lag as the scenario set it, in words with its source
    /// (`farm_node.block_lag`, `farm_node.block_lag_source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm_node_lag: Option<String>,
    /// The tap that sees the farm's job declarations (configurations A, B).
    #[serde(default)]
    pub job_declaration_role: Option<String>,
    /// Every role process of the side, for CPU and memory.
    pub roles: Vec<String>,
    /// An SV1 side's pool, by name and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_software: Option<String>,
    /// How that pool learns of blocks and refreshes jobs, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_policy: Option<String>,
    /// The tap between the side's pool and a Template Provider the run started (sv2-tp),
    /// where the pool's templates are seen as it gets them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_role: Option<String>,
}

impl SideRoles {
    /// Whether `role` decides the side's shares: its pool's tap (any of its shards), or
    /// its backup pool's.
    pub fn judges(&self, role: &str) -> bool {
        self.is_pool(role) || self.backup_pool_role.as_deref() == Some(role)
    }

    /// The side's relays among its roles: its WAN links (every shard, its farm node's
    /// feed) and its taps (in front of its pool, every shard, its backup, its JDS, its
    /// Template Provider): what the emulation puts on the path.
    pub fn relays(&self) -> Vec<String> {
        let others = [
            &self.backup_pool_role,
            &self.feed_link_role,
            &self.job_declaration_role,
            &self.template_role,
        ];
        (self.roles.iter())
            .filter(|role| {
                model::shard::is_of(role, &self.link_role)
                    || self.is_pool(role)
                    || others.iter().any(|o| o.as_deref() == Some(role.as_str()))
            })
            .cloned()
            .collect()
    }

    /// Whether `role` is the tap in front of the side's pool, or one of its shards.
    pub fn is_pool(&self, role: &str) -> bool {
        model::shard::is_of(role, &self.pool_role)
    }
}

/// One resource sample of one role process, or of the host (role [`HOST_ROLE`]: its CPU
/// in percent of one core summed over cores, its memory in use, and `host`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sample {
    pub t_ns: u64,
    pub role: String,
    /// CPU since the previous sample, percent of one core.
    pub cpu_pct: f64,
    /// The process's CPU time so far, user and system, seconds (its kernel ticks); absent
    /// for the host and in runs from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
    pub rss_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostReading>,
}

/// The role name of the host's own samples.
pub const HOST_ROLE: &str = "host";

impl Sample {
    /// A host's second as a sample of role `role`: its CPU all cores' busy share (percent
    /// of one core, as a role's), its memory what is not available.
    pub fn of_host(t_ns: u64, role: &str, reading: HostReading) -> Sample {
        Sample {
            t_ns,
            role: role.to_string(),
            cpu_pct: reading.busy_pct * reading.core_busy_pct.len() as f64,
            cpu_s: None,
            rss_bytes: reading
                .mem_total_bytes
                .saturating_sub(reading.mem_available_bytes),
            host: Some(reading),
        }
    }
}

pub use probe::event::HostReading;

/// The attack a run planned (`link.attack`), as the manifest records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedAttack {
    pub kind: model::attack::AttackKind,
    /// Seconds into the window it was planned for.
    pub at_s: f64,
    /// The worker the attacker credits (hijack-worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

const SECONDS_PER_DAY: f64 = 86_400.0;

/// What the worth is computed for; written beside every figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorthAssumptions {
    /// The farm's hashrate, hashes per second.
    pub farm_hashrate: f64,
    /// The whole network's, hashes per second.
    pub network_hashrate: f64,
    /// The real network's block interval, seconds.
    pub block_interval_s: f64,
    /// A block's value in sats; `None`: the run's network template value (its subsidy and
    /// fees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_value_sats: Option<f64>,
}

impl Default for WorthAssumptions {
    /// 1 PH/s on a 1 ZH/s network with 600 s blocks.
    fn default() -> Self {
        WorthAssumptions {
            farm_hashrate: 1e15,
            network_hashrate: 1e21,
            block_interval_s: 600.0,
            block_value_sats: None,
        }
    }
}

impl WorthAssumptions {
    /// Blocks the farm finds a day.
    pub fn farm_blocks_per_day(&self) -> f64 {
        self.farm_hashrate / self.network_hashrate * SECONDS_PER_DAY / self.block_interval_s
    }

    /// The farm's revenue a day, in sats: its blocks a day at `block_value` sats each (the
    /// assumptions' own value when they give one). The worth's scale: a delay of t ms after
    /// every block costs t / (block interval in ms) of it.
    pub fn farm_revenue_per_day(&self, block_value: f64) -> f64 {
        self.farm_blocks_per_day() * self.block_value_sats.unwrap_or(block_value)
    }

    /// Blocks the farm finds in expectation in `seconds` of its work.
    pub fn farm_blocks_in(&self, seconds: f64) -> f64 {
        self.farm_blocks_per_day() * seconds / SECONDS_PER_DAY
    }
}

/// The assumptions a finished run is priced at again, each where given (`show --hashrate`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorthChange {
    pub farm_hashrate: Option<f64>,
    pub network_hashrate: Option<f64>,
    pub block_interval_s: Option<f64>,
    pub block_value_sats: Option<f64>,
}

impl WorthChange {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == WorthChange::default()
    }

    /// `a` with what is given changed.
    pub fn applied(&self, a: &WorthAssumptions) -> WorthAssumptions {
        WorthAssumptions {
            farm_hashrate: self.farm_hashrate.unwrap_or(a.farm_hashrate),
            network_hashrate: self.network_hashrate.unwrap_or(a.network_hashrate),
            block_interval_s: self.block_interval_s.unwrap_or(a.block_interval_s),
            block_value_sats: self.block_value_sats.or(a.block_value_sats),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{farm_side, manifest, sv1_side, MS};

    /// A deployment planned with 2 s of warm-up and 10 s measured: its roles' first events
    /// at 5.000 s (node), 5.300 s (pool), 6.250 s (miners) on the collector's clock, the
    /// farm side's roles silent. The window opens 2 s after the last start, 8.250 s, and
    /// ends 10 s later, 18.250 s; stopped at 12.000 s, it ends there.
    #[test]
    fn a_deployments_window_opens_after_its_last_role_started() {
        let mut m = manifest(vec![sv1_side(), farm_side()]);
        m.window_start_ns = 2_000 * MS;
        m.window_end_ns = 12_000 * MS;
        m.awaiting_start = true;
        let first = BTreeMap::from([
            ("node".to_string(), 5_000 * MS),
            ("pool".to_string(), 5_300 * MS),
            ("miners".to_string(), 6_250 * MS),
            // Not a role of the plan: it sets nothing.
            ("stranger".to_string(), 9_000 * MS),
        ]);
        let started = deployment_start(&m, &first).unwrap();
        assert_eq!(started.at_ns, 6_250 * MS);
        let farm_roles = &m.sides["sv2-a"].roles;
        let silent: Vec<&String> = farm_roles.iter().filter(|r| *r != "node").collect();
        assert_eq!(started.silent.iter().collect::<Vec<_>>(), silent);

        let mut whole = m.clone();
        whole.start_at(started.at_ns, 30_000 * MS);
        assert_eq!(
            (whole.window_start_ns, whole.window_end_ns),
            (8_250 * MS, 18_250 * MS)
        );
        assert!(!whole.awaiting_start);
        // Started once, it is not moved again.
        whole.start_at(1_000 * MS, 30_000 * MS);
        assert_eq!(whole.window_start_ns, 8_250 * MS);

        let mut cut = m.clone();
        cut.start_at(started.at_ns, 12_000 * MS);
        assert_eq!(
            (cut.window_start_ns, cut.window_end_ns),
            (8_250 * MS, 12_000 * MS)
        );
        // Stopped in its warm-up, the window is empty, not reversed.
        let mut early = m.clone();
        early.start_at(started.at_ns, 7_000 * MS);
        assert_eq!(early.window().secs(), 0.0);

        assert!(deployment_start(&m, &BTreeMap::new()).is_err());
    }
}
