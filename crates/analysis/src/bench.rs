//! What the scale benchmarks write: plain data the benches produce and the report reads.
//! Each bench writes one JSON file (named here) into its output directory.

use crate::shares::AwaitingAnswers;
use probe::stats::percentile;
use probe::{Dist, Event, Record};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// `bench fanout`'s results, one per miner count.
pub const FANOUT_FILE: &str = "fanout.json";
/// The fan-out bench's A/A runs (`bench fanout --calibrate`).
pub const FANOUT_CALIBRATION_FILE: &str = "fanout-calibration.json";
/// `bench pool`'s ramp.
pub const POOL_FILE: &str = "pool-bench.json";
/// `bench template`'s latencies.
pub const TEMPLATE_FILE: &str = "template-bench.json";

/// How a job travels from the sender to the miners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FanoutMode {
    /// One write per miner's connection.
    Tcp,
    /// One UDP datagram to the loopback broadcast address, which every miner listens on
    /// (the software equivalent of FastProxy's layer-2 broadcast, 51 us), then the
    /// TCP writes as the fallback for a miner that missed it.
    UdpBroadcast,
    /// SV2 group channels: standard channels share connections (as devices behind a
    /// farm's proxy), and the pool sends each job once per connection, to the group.
    Sv2Group,
}

impl FanoutMode {
    pub fn name(self) -> &'static str {
        match self {
            FanoutMode::Tcp => "tcp",
            FanoutMode::UdpBroadcast => "udp-broadcast",
            FanoutMode::Sv2Group => "sv2-group",
        }
    }
}

impl std::str::FromStr for FanoutMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [
            FanoutMode::Tcp,
            FanoutMode::UdpBroadcast,
            FanoutMode::Sv2Group,
        ]
        .into_iter()
        .find(|m| m.name() == s)
        .ok_or_else(|| format!("{s:?} is not a mode: `tcp`, `udp-broadcast` or `sv2-group`"))
    }
}

/// The process that sends each new job to the miners.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FanoutVia {
    /// The built-in SV1 pool, to SV1 miners.
    #[default]
    Sv1Pool,
    /// SRI's translator (one aggregated channel up to the SRI pool), to SV1 miners.
    Translator,
    /// The SRI pool, to SV2 miners each on its own connection and standard channel.
    Sv2Pool,
    /// An SV1 pool already running at this address (anyone's), to SV1 miners.
    Sv1At(std::net::SocketAddr),
}

const BUILT_IN_SENDERS: [FanoutVia; 3] = [
    FanoutVia::Sv1Pool,
    FanoutVia::Translator,
    FanoutVia::Sv2Pool,
];

impl FanoutVia {
    pub fn name(self) -> String {
        match self {
            FanoutVia::Sv1Pool => "sv1-pool".into(),
            FanoutVia::Translator => "translator".into(),
            FanoutVia::Sv2Pool => "sv2-pool".into(),
            FanoutVia::Sv1At(addr) => addr.to_string(),
        }
    }
}

impl std::str::FromStr for FanoutVia {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        BUILT_IN_SENDERS
            .into_iter()
            .find(|v| v.name() == s)
            .or_else(|| s.parse().ok().map(FanoutVia::Sv1At))
            .ok_or_else(|| {
                format!(
                    "{s:?} is not a sender: `sv1-pool`, `translator`, `sv2-pool`, or an SV1 pool's HOST:PORT (for example 127.0.0.1:3333)"
                )
            })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FanoutResult {
    /// The process that sent the jobs.
    #[serde(default)]
    pub via: FanoutVia,
    /// The SRI pool's build when it was not the linked release: "pool_sv2 0.6.0 (PATH)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_build: Option<String>,
    pub mode: FanoutMode,
    pub miners: u32,
    pub rounds: usize,
    /// From the sender having the job to the last miner having it, one value per round.
    pub last_miner_ms: Dist,
    /// From the sender having the job to the first miner having it, one value per round:
    /// what every miner waits regardless of the count (for `sv2-pool`, where the pool's
    /// own moment cannot be seen, the node's new tip and its hop to the pool).
    #[serde(default)]
    pub first_miner_ms: Dist,
    /// Median time to the last miner divided by the miners.
    pub us_per_miner: Option<f64>,
    /// From the sender having the job to its last write of it returning, one value per
    /// round: the sender's own fan-out, comparable with the floor (our SV1 pool in `tcp`
    /// mode only; the SRI apps' writes cannot be seen).
    #[serde(default)]
    pub sender_writes_ms: Dist,
    /// Median sender fan-out divided by the miners.
    #[serde(default)]
    pub sender_us_per_miner: Option<f64>,
    /// Every miner's delivery time, all rounds.
    pub delivery_ms: Dist,
    /// Miners that never got a round's job (summed over rounds).
    pub missing: u64,
    /// CPU the sender process spent per fan-out; `None` when below the kernel's
    /// accounting tick over all rounds.
    pub sender_cpu_ms_per_round: Option<f64>,
    /// The machine's floor: one write per connected loopback socket whose reader waits
    /// in another process (as a miner does), measured on `floor_miners` sockets (one per
    /// connection), per miner (with grouped channels one write serves a connection's
    /// miners).
    pub floor_us_per_miner: f64,
    /// The same loop to sockets nobody waits on (both ends in one process, at most as
    /// many as it holds): the kernel's write alone, without waking a reader. Absent in
    /// results from before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bare_floor_us_per_miner: Option<f64>,
    /// Bytes each floor writes a connection; absent in results from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_write_bytes: Option<u32>,
    /// The waited floor was timed after each of the sender's rounds, its miners still
    /// connected (the median of those loops); false in results from before, whose floor
    /// ran once the sender and its miners had stopped.
    #[serde(default)]
    pub floor_between_rounds: bool,
    pub floor_miners: u32,
    /// Fleet processes the miners were spread over.
    pub fleets: u32,
    /// In `sv2-group` mode, the channels sharing each connection.
    #[serde(default)]
    pub group_size: Option<u32>,
    /// The CPUs the sender and the miners were kept on (`--isolate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuSplit>,
    /// Each round's sender fan-out beside the floor loop timed right after it (our SV1
    /// pool in `tcp` mode; empty in results from before rounds were paired).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paired_rounds: Vec<PairedRound>,
}

/// One round of the fan-out bench: the sender's own fan-out and the floor's loop timed
/// just after it on the same machine, per miner.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedRound {
    pub sender_us_per_miner: f64,
    pub floor_us_per_miner: f64,
}

impl FanoutResult {
    /// The floor whose readers wait, per miner; unknown in results from before it was
    /// measured, whose only floor was the one nobody waited on.
    pub fn floor(&self) -> Option<f64> {
        (self.bare_floor_us_per_miner).map(|_| self.floor_us_per_miner)
    }

    /// The floor nobody waited on, per miner: in older results, their `floor_us_per_miner`.
    pub fn bare_floor(&self) -> f64 {
        (self.bare_floor_us_per_miner).unwrap_or(self.floor_us_per_miner)
    }

    /// The median time to the last miner, per miner, in multiples of the floor.
    pub fn times_floor(&self) -> Option<f64> {
        Some(self.us_per_miner? / self.floor()?)
    }

    /// The sender's own fan-out per miner, in multiples of the floor.
    pub fn sender_times_floor(&self) -> Option<f64> {
        Some(self.sender_us_per_miner? / self.floor()?)
    }

    /// The sender's fan-out over the floor, round by round: the geometric mean of each
    /// round's ratio to the floor loop timed after it, with its 95% interval (each round a
    /// unit; none below [`crate::stats::MIN_UNITS`] rounds). Pairing takes out what moves
    /// the machine between rounds, which a ratio of the two medians leaves in; a ratio's
    /// logarithm is averaged so that 2x and 0.5x cancel. The interval is one run's: rounds
    /// back to back share the machine's minute, and another run may sit elsewhere. `None`
    /// without a paired round that has both times.
    pub fn sender_over_floor_by_round(&self) -> Option<crate::stats::Estimate> {
        ratio_by_round(&self.paired_rounds)
    }
}

/// The geometric mean of `rounds`' sender-over-floor ratios with its 95% interval, each
/// round a unit (see [`FanoutResult::sender_over_floor_by_round`]).
fn ratio_by_round(rounds: &[PairedRound]) -> Option<crate::stats::Estimate> {
    let logs: Vec<Vec<f64>> = (rounds.iter())
        .filter(|r| r.sender_us_per_miner > 0.0 && r.floor_us_per_miner > 0.0)
        .map(|r| vec![(r.sender_us_per_miner / r.floor_us_per_miner).ln()])
        .collect();
    let log_mean = crate::stats::cluster_mean(&logs);
    Some(crate::stats::Estimate {
        point: Some(log_mean.point?.exp()),
        ci: log_mean.ci.map(|(lo, hi)| (lo.exp(), hi.exp())),
        units: log_mean.units,
    })
}

/// The round-by-round interval held to identical sides: runs in which a floor loop stands
/// in for the sender, timed where the sender's fan-out is (the same gap before the floor
/// loop it is paired with). The true ratio is 1, so the share of runs whose interval
/// leaves 1 out is how often the interval calls identical sides different: about 5% if it
/// holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloorCalibration {
    /// The connections each floor wrote to.
    pub miners: u32,
    /// Each run's rounds: the stand-in's loop as the sender, the floor's after it.
    pub runs: Vec<Vec<PairedRound>>,
}

/// What a calibration's runs say together.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationSummary {
    /// Runs with an interval.
    pub with_interval: usize,
    /// Those whose 95% interval leaves 1 out: identical sides called different.
    pub leaving_out_one: usize,
    /// That share's Wilson 95% interval.
    pub share_ci: Option<(f64, f64)>,
    /// The runs' geometric means (every run with one): lowest, highest, mean and standard
    /// deviation. A mean away from 1 is a bias of the pairing, not chance.
    pub means: Option<[f64; 4]>,
}

impl FloorCalibration {
    /// Each run's ratio by round, as the bench reports a sender's.
    pub fn estimates(&self) -> Vec<crate::stats::Estimate> {
        self.runs.iter().filter_map(|r| ratio_by_round(r)).collect()
    }

    pub fn summary(&self) -> CalibrationSummary {
        let estimates = self.estimates();
        let intervals: Vec<(f64, f64)> = estimates.iter().filter_map(|e| e.ci).collect();
        let leaving_out_one = (intervals.iter())
            .filter(|&&(lo, hi)| lo > 1.0 || hi < 1.0)
            .count();
        let n = intervals.len() as f64;
        let points: Vec<f64> = estimates.iter().filter_map(|e| e.point).collect();
        let means = (points.len() >= 2).then(|| {
            let mean = points.iter().sum::<f64>() / points.len() as f64;
            let var =
                points.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / (points.len() - 1) as f64;
            let lowest = points.iter().copied().fold(f64::INFINITY, f64::min);
            let highest = points.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            [lowest, highest, mean, var.sqrt()]
        });
        CalibrationSummary {
            with_interval: intervals.len(),
            leaving_out_one,
            share_ci: crate::stats::wilson(leaving_out_one as f64 / n.max(1.0), n),
            means,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolBenchReport {
    pub target: String,
    pub miners: u32,
    pub steps: Vec<StepResult>,
    pub max_sustained_shares_per_s: Option<f64>,
    pub pool_rss_per_miner_bytes: Option<f64>,
    /// The CPUs each role group was kept on (`--isolate`); none when they shared all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<CpuSplit>,
}

/// Which CPUs the roles under test and the load generators were kept on, apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSplit {
    pub under_test: Vec<usize>,
    pub load: Vec<usize>,
}

impl CpuSplit {
    /// `available` CPUs in two halves: the first for the roles under test, the rest (at
    /// least one) for the load generators; `None` with fewer than two.
    pub fn halves(available: &[usize]) -> Option<CpuSplit> {
        if available.len() < 2 {
            return None;
        }
        let (under_test, load) = available.split_at(available.len() / 2);
        Some(CpuSplit {
            under_test: under_test.to_vec(),
            load: load.to_vec(),
        })
    }
}

impl PoolBenchReport {
    /// Validated shares per pool CPU-second at the busiest sustained step: comparable
    /// with a CPU-only figure, since the pool process did nothing else.
    pub fn shares_per_cpu_second(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter(|s| s.verdict == Verdict::Sustained)
            .max_by(|a, b| a.accepted_per_s.total_cmp(&b.accepted_per_s))
            .and_then(|s| s.pool_cpu_us_per_share)
            .map(|us| 1e6 / us)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    pub offered_per_s: f64,
    pub submitted: u64,
    pub accepted: u64,
    /// Rejected, or never answered.
    pub errors: u64,
    pub accepted_per_s: f64,
    pub latency_ms: Dist,
    pub p95_ms: Option<f64>,
    /// The pool process's CPU over the step (built-in target only).
    pub pool_cpu_pct: Option<f64>,
    pub pool_cpu_us_per_share: Option<f64>,
    pub pool_rss_bytes: Option<u64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", content = "reason", rename_all = "snake_case")]
pub enum Verdict {
    Sustained,
    Stop(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TemplateBenchReport {
    /// `builtin` or the node's URL.
    pub node: String,
    /// One per mempool size, smallest first (one for a node given by URL).
    pub mempools: Vec<TemplateMempool>,
}

/// Every case measured on one mempool.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TemplateMempool {
    /// Transactions in the mempool at the start (`None` for a node given by URL).
    pub mempool_txs: Option<usize>,
    /// Transactions in the first template.
    pub template_txs: Option<usize>,
    pub cases: Vec<TemplateCase>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TemplateCase {
    /// For example `getblocktemplatelight fresh`.
    pub name: String,
    /// What the case's reply weighs, when it is a reply.
    pub reply_bytes: Option<usize>,
    pub latency_ms: Dist,
    /// Every call's time, for the distribution chart.
    pub samples_ms: Vec<f64>,
}

/// One step of the pool bench from its fleet's events: every share submitted in the
/// window `(from, to)` (ns) and its answer, whenever that came; `pool` the pool process's
/// CPU over the window (percent of a core) and memory at its end, when it was measured.
pub fn step_result(
    events: &[Record],
    (from, to): (u64, u64),
    offered_per_s: f64,
    pool: Option<(Option<f64>, u64)>,
    p99_bound_ms: f64,
) -> StepResult {
    let mut awaiting = AwaitingAnswers::default();
    let mut latencies = Vec::new();
    let (mut submitted, mut accepted, mut errors) = (0u64, 0u64, 0u64);
    for r in events {
        match r.event {
            Event::ShareSubmitted {
                miner, share_id, ..
            } if (from..to).contains(&r.t_ns) => {
                // A repeated id is one share.
                submitted += u64::from(awaiting.submitted(miner, share_id, r.t_ns, ()));
            }
            Event::ShareAnswered {
                miner,
                share_id,
                accepted: verdict,
                ..
            } => match (awaiting.answered(miner, share_id), verdict) {
                (Some((t_sub, ())), true) => {
                    accepted += 1;
                    latencies.push(r.t_ns.saturating_sub(t_sub) as f64 / 1e6);
                }
                (Some(_), false) => errors += 1,
                (None, _) => {}
            },
            _ => {}
        }
    }
    // Never answered: errors too.
    errors += awaiting.waiting() as u64;
    let secs = to.saturating_sub(from) as f64 / 1e9;
    let accepted_per_s = accepted as f64 / secs;
    let latency = Dist::of(&latencies);
    let cpu = pool.and_then(|(cpu, _)| cpu);
    StepResult {
        offered_per_s,
        submitted,
        accepted,
        errors,
        accepted_per_s,
        p95_ms: percentile(&latencies, 0.95),
        verdict: judge(
            offered_per_s,
            submitted,
            errors,
            accepted_per_s,
            latency.p99,
            p99_bound_ms,
        ),
        latency_ms: latency,
        pool_cpu_pct: cpu,
        pool_cpu_us_per_share: cpu
            .filter(|_| accepted > 0)
            .map(|c| c / 100.0 * 1e6 / accepted_per_s),
        pool_rss_bytes: pool.map(|(_, rss)| rss),
    }
}

/// The ramp's rule: a step is sustained when (almost) every share was accepted, the pool
/// answered as fast as it was asked, and the p99 stayed within the bound.
pub fn judge(
    offered_per_s: f64,
    submitted: u64,
    errors: u64,
    accepted_per_s: f64,
    p99_ms: Option<f64>,
    bound_ms: f64,
) -> Verdict {
    if submitted == 0 {
        return Verdict::Stop(
            "no share was submitted (is the fleet able to reach the pool?)".into(),
        );
    }
    if errors as f64 > 0.001 * submitted as f64 {
        return Verdict::Stop(format!(
            "{errors} of {submitted} shares rejected or unanswered"
        ));
    }
    if let Some(p99) = p99_ms.filter(|p| *p > bound_ms) {
        return Verdict::Stop(format!(
            "share response p99 {p99:.2} ms passed the {bound_ms} ms bound"
        ));
    }
    if accepted_per_s < 0.9 * offered_per_s {
        return Verdict::Stop(format!(
            "saturated: {accepted_per_s:.0} shares/s answered of {offered_per_s:.0} offered"
        ));
    }
    Verdict::Sustained
}

/// Deliveries of one round's job, each miner counted once.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub delivered: Vec<f64>,
    pub missing: u32,
}

/// Ties each new block's start `(hash, t_ns)` to the miners' receipts of work on it
/// `(miner, prev_hash, t_ns)`: a miner's first receipt counts, repeats do not; a miner
/// without one is missing.
pub fn account(
    starts: &[(String, u64)],
    receipts: &[(u32, String, u64)],
    miners: u32,
) -> Vec<Round> {
    let mut first: HashMap<(&str, u32), u64> = HashMap::new();
    for (miner, block, t) in receipts {
        let e = first.entry((block.as_str(), *miner)).or_insert(*t);
        *e = (*e).min(*t);
    }
    starts
        .iter()
        .map(|(block, t0)| {
            let delivered: Vec<f64> = (0..miners)
                .filter_map(|m| first.get(&(block.as_str(), m)))
                .map(|t| t.saturating_sub(*t0) as f64 / 1e6)
                .collect();
            Round {
                missing: miners - delivered.len() as u32,
                delivered,
            }
        })
        .collect()
}

/// A fan-out's figures from its rounds: each round's last and first miner, every
/// delivery, the miners never reached, and the last miner's median per miner.
#[derive(Debug, Clone, PartialEq)]
pub struct Deliveries {
    pub last_miner_ms: Dist,
    pub first_miner_ms: Dist,
    pub delivery_ms: Dist,
    pub missing: u64,
    /// The median round's last delivery over the miners, in microseconds a miner.
    pub us_per_miner: Option<f64>,
}

impl Deliveries {
    pub fn of(rounds: &[Round], miners: u32) -> Deliveries {
        let last: Vec<f64> = (rounds.iter())
            .filter_map(|r| r.delivered.iter().copied().reduce(f64::max))
            .collect();
        let first: Vec<f64> = (rounds.iter())
            .filter_map(|r| r.delivered.iter().copied().reduce(f64::min))
            .collect();
        let all: Vec<f64> = (rounds.iter())
            .flat_map(|r| r.delivered.iter().copied())
            .collect();
        let last_miner_ms = Dist::of(&last);
        Deliveries {
            us_per_miner: last_miner_ms.p50.map(|ms| ms * 1e3 / f64::from(miners)),
            last_miner_ms,
            first_miner_ms: Dist::of(&first),
            delivery_ms: Dist::of(&all),
            missing: rounds.iter().map(|r| u64::from(r.missing)).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_miner_counts_once_and_the_missing_are_reported() {
        let ms = 1_000_000;
        let starts = vec![("a".to_string(), 10 * ms), ("b".to_string(), 100 * ms)];
        let receipts = vec![
            (0, "a".to_string(), 11 * ms),
            (1, "a".to_string(), 13 * ms),
            (1, "a".to_string(), 12 * ms), // work on block a twice: its first arrival counts
            (2, "a".to_string(), 15 * ms),
            (0, "b".to_string(), 101 * ms),
            (2, "b".to_string(), 104 * ms), // miner 1 never got b
            (7, "b".to_string(), 105 * ms), // not one of the 3 miners
        ];
        let rounds = account(&starts, &receipts, 3);
        assert_eq!(
            rounds[0],
            Round {
                delivered: vec![1.0, 2.0, 5.0],
                missing: 0
            }
        );
        assert_eq!(
            rounds[1],
            Round {
                delivered: vec![1.0, 4.0],
                missing: 1
            }
        );
    }

    #[test]
    fn a_fan_outs_figures_from_its_rounds() {
        // Rounds of 3 miners: 1, 2, 5 ms; then 1, 4 ms and one never reached.
        let rounds = [
            Round {
                delivered: vec![1.0, 2.0, 5.0],
                missing: 0,
            },
            Round {
                delivered: vec![1.0, 4.0],
                missing: 1,
            },
        ];
        let d = Deliveries::of(&rounds, 3);
        // Last miners 5 and 4 ms: median (nearest rank) 4 ms, 4,000 us / 3 miners.
        assert_eq!(d.last_miner_ms.p50, Some(4.0));
        assert_eq!(d.last_miner_ms.max, Some(5.0));
        assert!((d.us_per_miner.unwrap() - 4_000.0 / 3.0).abs() < 1e-9);
        assert_eq!(d.first_miner_ms.mean, Some(1.0));
        // Every delivery: 13 ms over 5.
        assert_eq!(d.delivery_ms.count, 5);
        assert!((d.delivery_ms.mean.unwrap() - 2.6).abs() < 1e-12);
        assert_eq!(d.missing, 1);
    }

    #[test]
    fn the_ramp_stops_for_errors_latency_or_saturation() {
        assert_eq!(
            judge(1000.0, 10_000, 0, 995.0, Some(0.8), 5.0),
            Verdict::Sustained
        );
        // 0.1% errors are tolerated, more are not.
        assert_eq!(
            judge(1000.0, 10_000, 10, 995.0, Some(0.8), 5.0),
            Verdict::Sustained
        );
        assert!(
            matches!(judge(1000.0, 10_000, 11, 995.0, Some(0.8), 5.0), Verdict::Stop(w) if w.contains("11 of 10000"))
        );
        assert!(
            matches!(judge(1000.0, 10_000, 0, 995.0, Some(7.5), 5.0), Verdict::Stop(w) if w.contains("7.50 ms"))
        );
        assert!(
            matches!(judge(1000.0, 8_000, 0, 800.0, Some(0.8), 5.0), Verdict::Stop(w) if w.contains("saturated"))
        );
        assert!(
            matches!(judge(1000.0, 0, 0, 0.0, None, 5.0), Verdict::Stop(w) if w.contains("no share"))
        );
    }

    #[test]
    fn a_step_counts_the_windows_shares_and_their_answers() {
        let rec = |t_ms: u64, event: Event| Record {
            t_ns: t_ms * 1_000_000,
            role: "fleet".into(),
            event,
        };
        let sent = |miner: u32, share_id: u64| Event::ShareSubmitted {
            miner,
            share_id,
            job_id: "1".into(),
            prev_hash: "p".into(),
            block_hash: None,
        };
        let answer = |miner: u32, share_id: u64, accepted: bool| Event::ShareAnswered {
            miner,
            share_id,
            accepted,
            error: None,
        };
        // A window of 1 s (1,000 to 2,000 ms): three shares in it, answered after 2 ms
        // and 4 ms, and one rejected; one before it, whose answer counts for nothing.
        let events = vec![
            rec(900, sent(0, 1)),
            rec(905, answer(0, 1, true)),
            rec(1_100, sent(0, 2)),
            rec(1_102, answer(0, 2, true)),
            rec(1_200, sent(1, 1)),
            rec(1_204, answer(1, 1, true)),
            rec(1_300, sent(1, 2)),
            rec(1_301, answer(1, 2, false)),
        ];
        let s = step_result(
            &events,
            (1_000_000_000, 2_000_000_000),
            3.0,
            Some((Some(50.0), 7)),
            5.0,
        );
        assert_eq!((s.submitted, s.accepted, s.errors), (3, 2, 1));
        assert_eq!(s.accepted_per_s, 2.0);
        assert_eq!(s.latency_ms.count, 2);
        assert_eq!(s.latency_ms.mean, Some(3.0));
        assert_eq!(s.p95_ms, Some(4.0));
        // Half a core for 2 shares a second: 0.5 s / 2 = 250,000 us a share.
        assert_eq!(s.pool_cpu_us_per_share, Some(250_000.0));
        assert_eq!(s.pool_rss_bytes, Some(7));
        // One error in three is more than 0.1%: the ramp stops there.
        assert_eq!(
            s.verdict,
            Verdict::Stop("1 of 3 shares rejected or unanswered".into())
        );
        // No pool measured: no CPU figures.
        let s = step_result(&events, (1_000_000_000, 2_000_000_000), 3.0, None, 5.0);
        assert_eq!((s.pool_cpu_pct, s.pool_cpu_us_per_share), (None, None));
    }

    #[test]
    fn cpus_split_in_halves_with_the_load_on_the_rest() {
        assert_eq!(CpuSplit::halves(&[0]), None);
        let two = CpuSplit::halves(&[0, 1]).unwrap();
        assert_eq!((two.under_test, two.load), (vec![0], vec![1]));
        let five = CpuSplit::halves(&[0, 2, 3, 5, 7]).unwrap();
        assert_eq!((five.under_test, five.load), (vec![0, 2], vec![3, 5, 7]));
    }

    /// One fan-out of 1,000 miners in one round, rounds unpaired.
    fn fanout_result() -> FanoutResult {
        FanoutResult {
            via: FanoutVia::Sv1Pool,
            pool_build: None,
            mode: FanoutMode::Tcp,
            miners: 1000,
            rounds: 1,
            last_miner_ms: Dist::of(&[30.0]),
            first_miner_ms: Dist::of(&[0.2]),
            us_per_miner: Some(30.0),
            sender_writes_ms: Dist::of(&[10.5]),
            sender_us_per_miner: Some(10.5),
            delivery_ms: Dist::of(&[15.0]),
            missing: 0,
            sender_cpu_ms_per_round: None,
            floor_us_per_miner: 7.0,
            bare_floor_us_per_miner: Some(3.5),
            floor_write_bytes: Some(600),
            floor_between_rounds: true,
            floor_miners: 1000,
            fleets: 1,
            group_size: None,
            cpus: None,
            paired_rounds: Vec::new(),
        }
    }

    #[test]
    fn fanout_in_multiples_of_the_floor() {
        let r = fanout_result();
        // 30 / 7 = 4.2857x the floor; the sender's 10.5 / 7 = 1.5x.
        assert_eq!(r.sender_over_floor_by_round(), None);
        assert!((r.times_floor().unwrap() - 4.285714).abs() < 1e-6);
        assert_eq!(r.sender_times_floor(), Some(1.5));
        assert_eq!(r.bare_floor(), 3.5);
        // A result from before the floor woke its readers: its floor was nobody waiting,
        // and nothing is set against a floor it did not measure.
        let older = FanoutResult {
            bare_floor_us_per_miner: None,
            ..r.clone()
        };
        assert_eq!((older.floor(), older.bare_floor()), (None, 7.0));
        assert_eq!(older.sender_times_floor(), None);
        let unseen = FanoutResult {
            sender_us_per_miner: None,
            ..r
        };
        assert_eq!(unseen.sender_times_floor(), None);
    }

    /// Worked by hand: rounds at 1.1, 1.21 (= 1.1 squared), 1.0, 1.21 and 1.0 times
    /// their floors (each floor different: only the ratio counts). Their logarithms are
    /// ln 1.1 x (1, 2, 0, 2, 0), whose mean is ln 1.1: the geometric mean is 1.1, where the
    /// arithmetic mean of the ratios would be 1.104. Five rounds give an interval, and it
    /// holds the point within the rounds' spread widened for their few (t at 4 degrees of
    /// freedom: 2.776 / 1.96); four give none, and a round with no time counts as none.
    #[test]
    fn the_sender_over_the_floor_round_by_round() {
        let round = |ratio: f64, floor: f64| PairedRound {
            sender_us_per_miner: ratio * floor,
            floor_us_per_miner: floor,
        };
        let five = vec![
            round(1.1, 2.0),
            round(1.21, 1.0),
            round(1.0, 3.0),
            round(1.21, 2.5),
            round(1.0, 1.5),
        ];
        let r = FanoutResult {
            paired_rounds: five.clone(),
            ..fanout_result()
        };
        let e = r.sender_over_floor_by_round().unwrap();
        assert!((e.point.unwrap() - 1.1).abs() < 1e-9, "{e:?}");
        assert_eq!(e.units, 5);
        let (lo, hi) = e.ci.unwrap();
        // By hand, as Student's t would give it: the log-ratios' deviations from their mean
        // are ln 1.1 x (0, 1, -1, 1, -1), sd ln 1.1 = 0.0953, so the mean's standard error
        // is 0.0953 / sqrt 5 = 0.0426, and t(0.975, 4) = 2.776 puts the interval at
        // ln 1.1 +- 0.118: 0.977 to 1.238 times the floor. The bootstrap, widened for five
        // units, lands within 0.01 of both.
        assert!(
            (lo - 0.977).abs() < 0.01 && (hi - 1.238).abs() < 0.01,
            "{lo} {hi}"
        );
        let four = FanoutResult {
            paired_rounds: five[..4].to_vec(),
            ..fanout_result()
        };
        assert_eq!(four.sender_over_floor_by_round().unwrap().ci, None);
        let with_an_empty_round = FanoutResult {
            paired_rounds: [five[..4].to_vec(), vec![round(0.0, 1.0)]].concat(),
            ..fanout_result()
        };
        let e = with_an_empty_round.sender_over_floor_by_round().unwrap();
        assert_eq!((e.units, e.ci), (4, None));
        let no_times = FanoutResult {
            paired_rounds: vec![round(0.0, 1.0)],
            ..fanout_result()
        };
        assert_eq!(no_times.sender_over_floor_by_round(), None);
    }

    /// Worked by hand from the rounds above (interval 0.977 to 1.238, geometric mean 1.1):
    /// the same rounds 1.1 times slower put every log-ratio ln 1.1 higher, so their interval
    /// is 1.1 times that one, 1.075 to 1.362, and leaves 1 out above; 1.21 times faster,
    /// 0.807 to 1.023, which keeps it; 1.331 times faster, 0.734 to 0.930, which leaves it
    /// out below; four rounds have no interval and are not counted. So 4 runs have an
    /// interval and 2 of them call identical sides different: Wilson's interval for 2 of 4
    /// is centred on 0.5 with half-width 1.96 x sqrt(0.0625 + 3.8415 / 64) / (1 + 3.8415 /
    /// 4) = 0.350, 0.150 to 0.850. The runs' geometric means are 1.1, 1.21, 0.909, 0.826
    /// and, for the four rounds, 1.1 ^ (5/4) = 1.126: lowest 0.826, highest 1.21, mean
    /// 1.034, standard deviation sqrt(0.10257 / 4) = 0.160.
    #[test]
    fn an_a_a_calibration_counts_the_intervals_that_leave_one_out() {
        let rounds = |scale: f64, n: usize| -> Vec<PairedRound> {
            ([1.1, 1.21, 1.0, 1.21, 1.0].iter().take(n))
                .map(|r| PairedRound {
                    sender_us_per_miner: r * scale * 4.0,
                    floor_us_per_miner: 4.0,
                })
                .collect()
        };
        let calibration = FloorCalibration {
            miners: 1000,
            runs: vec![
                rounds(1.0, 5),
                rounds(1.1, 5),
                rounds(1.0 / 1.21, 5),
                rounds(1.0 / 1.331, 5),
                rounds(1.0, 4),
            ],
        };
        let estimates = calibration.estimates();
        assert_eq!(estimates.len(), 5, "four rounds still have a point");
        let (lo, hi) = estimates[1].ci.unwrap();
        assert!(
            (lo - 1.075).abs() < 0.012 && (hi - 1.362).abs() < 0.012,
            "{lo} {hi}"
        );
        let (lo, hi) = estimates[2].ci.unwrap();
        assert!(
            (lo - 0.807).abs() < 0.01 && (hi - 1.023).abs() < 0.01,
            "{lo} {hi}"
        );
        let summary = calibration.summary();
        assert_eq!((summary.with_interval, summary.leaving_out_one), (4, 2));
        let (lo, hi) = summary.share_ci.unwrap();
        assert!(
            (lo - 0.150).abs() < 0.001 && (hi - 0.850).abs() < 0.001,
            "{lo} {hi}"
        );
        let [lowest, highest, mean, sd] = summary.means.unwrap();
        assert!((lowest - 0.8264).abs() < 1e-3 && (highest - 1.21).abs() < 1e-9);
        assert!(
            (mean - 1.0344).abs() < 1e-3 && (sd - 0.1601).abs() < 1e-3,
            "{mean} {sd}"
        );
    }

    #[test]
    fn shares_per_cpu_second_at_the_busiest_sustained_step() {
        let step = |accepted_per_s: f64, us_per_share: f64, verdict: Verdict| StepResult {
            offered_per_s: accepted_per_s,
            submitted: 0,
            accepted: 0,
            errors: 0,
            accepted_per_s,
            latency_ms: Dist::of(&[]),
            p95_ms: None,
            pool_cpu_pct: None,
            pool_cpu_us_per_share: Some(us_per_share),
            pool_rss_bytes: None,
            verdict,
        };
        let r = PoolBenchReport {
            target: "builtin".into(),
            miners: 10,
            steps: vec![
                step(1_000.0, 2.0, Verdict::Sustained),
                step(4_000.0, 8.0, Verdict::Sustained),
                // Busier, but not sustained: not the figure.
                step(8_000.0, 1.0, Verdict::Stop("p99 over the bound".into())),
            ],
            max_sustained_shares_per_s: Some(4_000.0),
            pool_rss_per_miner_bytes: None,
            cpus: None,
        };
        // 8 us of pool CPU per share at 4,000/s: 1e6 / 8 = 125,000 shares per CPU-second.
        assert_eq!(r.shares_per_cpu_second(), Some(125_000.0));
    }
}
