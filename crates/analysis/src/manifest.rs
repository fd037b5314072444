//! What the harness tells the analysis about a run: which role is which.

pub use mining::farm::PerMiner;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const MANIFEST_FILE: &str = "manifest.json";
pub const SAMPLES_FILE: &str = "samples.jsonl";
pub const EVENTS_DIR: &str = "events";
pub const SUMMARY_FILE: &str = "summary.json";

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
    pub worth: crate::worth::WorthAssumptions,
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
    pub fn window(&self) -> Window {
        Window {
            start_ns: self.window_start_ns,
            end_ns: self.window_end_ns,
        }
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
    pub config: String,
    pub miners: u32,
    /// Each miner's hashrate (hashes per second), for the work the pool should credit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miner_hashrate: Option<f64>,
    pub miners_role: String,
    /// Where share acceptance is decided.
    pub pool_role: String,
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
    /// One-way delay between the farm's node and the network's (its peer hop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub farm_node_hop_ms: Option<f64>,
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

/// The machine's own state over one second, as node exporter reads it from /proc: what
/// says whether the roles had the CPU they needed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostReading {
    /// Each online core's busy share of the second (everything but idle and iowait),
    /// percent, in the order of their numbers.
    pub core_busy_pct: Vec<f64>,
    /// All cores' busy share, percent.
    pub busy_pct: f64,
    /// The busy share of the CPUs the run's roles may use, percent, when those are not all
    /// of the host's (a CPU set of the run's, or `--isolate`'s half): their saturation is
    /// the roles' wait, whatever the other cores do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_cpus_busy_pct: Option<f64>,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
    /// The run directory's filesystem.
    pub fs_avail_bytes: u64,
    pub fs_size_bytes: u64,
    /// Time the run's control group was held back by its CPU quota in the second (its
    /// `cpu.stat`, cgroup v1 or v2), ms; absent without a readable cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_ms: Option<f64>,
}
