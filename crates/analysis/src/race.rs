//! `stratum-bench race`: who tells a farm of a new block first, its own node or its pool,
//! and what that makes configurations A and B worth against SV1 for it.
//!
//! Under SV1 miners move to a new block when the pool's `mining.notify` carries a new prev
//! hash; under A and B (SRI's Job Declarator Client) when the farm's own node hears of the
//! block. A race records, at the farm, both arrivals of every block on one monotonic clock,
//! tied by the block's hash, never by time. The summary is computed here, once, from the
//! recorded events alone: the live line, `summary.json` and `race --show` all read it.
//!
//! Lead = node arrival - pool arrival (ms): positive when the pool told the farm first.
//! Then A's new-block work comes later than SV1's by lead + the farm roles' own time
//! (`roles_ms`: JDC and translator building the job), and a delay of t ms after every block
//! costs t / (T x 1000) of the farm's revenue at T-second blocks (see [`crate::worth`]).

use crate::stats::{cluster_mean, MIN_UNITS};
use crate::worth::{hashrate_label, WorthAssumptions};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The summary's schema: what `race --show` (and `show`) recognise a race by.
pub const SCHEMA: &str = "stratum-bench/race-summary/1";

/// The events file of a race directory, and its summary.
pub const EVENTS_FILE: &str = "events.jsonl";
pub const SUMMARY_FILE: &str = "summary.json";

/// SV2 farm roles' own time for a new-block job (JDC + translator), ms: configuration A's
/// new-block job minus the farm node's lag, as stratum-bench's default run measures it
/// (`sides.sv2-a.farm_node_lag.own_ms`: mean 1.6 ms on 2 cores).
pub const DEFAULT_ROLES_MS: f64 = 1.6;

/// A block's value when none is given: the subsidy alone (3.125 BTC), fees left out, so
/// the worth is a floor.
pub const DEFAULT_BLOCK_VALUE_SATS: f64 = 312_500_000.0;

/// One line of a race's events file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaceRecord {
    /// `CLOCK_MONOTONIC` nanoseconds (`probe::clock::mono_ns`) when it happened.
    pub t_ns: u64,
    #[serde(flatten)]
    pub event: RaceEvent,
}

/// Who told the farm of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The farm's node, by ZMQ `hashblock`.
    Node,
    /// The pool: SV1 `mining.notify` with a new prev hash, SV2 `SetNewPrevHash`.
    Pool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RaceEvent {
    /// A race (or its resumption after a restart) began.
    Started {
        wall_ns: u64,
        /// The monotonic clock's name (its boot): a resumed race on another boot cannot
        /// tie its arrivals to the earlier ones'.
        clock: String,
        node: String,
        pool: String,
        worker: String,
    },
    /// A block announced by `source`; only its first arrival from each source counts.
    Block { source: Source, hash: String },
    /// A pool session gave its first work: `tip` is the block it was on, which is no
    /// notice (the block came before the session).
    PoolSession { tip: String },
    /// The pool session was lost (or could not be had): no pool notice can arrive until
    /// the gap ends.
    GapBegan { reason: String },
    /// A new pool session gave work again.
    GapEnded,
    /// The race stopped: Ctrl-C, SIGTERM, its duration, or an error.
    Stopped { reason: String },
}

/// What the summary is computed with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaceParams {
    /// A block one source announced is settled as one-sided this long after, seconds.
    pub settle_s: f64,
    /// The SV2 farm roles' own time for a new-block job, ms (an assumption).
    pub roles_ms: f64,
    /// Farm and network hashrate, block interval; `block_value_sats` `None` is
    /// [`DEFAULT_BLOCK_VALUE_SATS`].
    pub worth: WorthAssumptions,
}

impl Default for RaceParams {
    fn default() -> Self {
        RaceParams {
            settle_s: 60.0,
            roles_ms: DEFAULT_ROLES_MS,
            worth: WorthAssumptions::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaceSummary {
    pub schema: String,
    pub node: String,
    pub pool: String,
    pub worker: String,
    /// Starts of the race into this directory (1 + restarts).
    pub sessions: usize,
    /// Seconds recorded, over all sessions.
    pub recorded_s: f64,
    pub blocks: BlockCounts,
    pub gaps: Gaps,
    pub lead_ms: Lead,
    pub config_ab: ConfigAb,
    /// Why the last session stopped, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub params: RaceParams,
}

/// Every block seen, each in exactly one row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockCounts {
    pub seen: usize,
    /// Both told the farm: each has a lead.
    pub both: usize,
    /// Only the node, settled (no pool notice within the settle time).
    pub only_node: usize,
    /// Only the pool, settled.
    pub only_pool: usize,
    /// Only the node, while the pool session was down: the pool could not tell.
    pub node_during_gap: usize,
    /// One source so far, within the settle time of the end.
    pub pending: usize,
    /// Both told the farm, but on different clocks (a resumption on another boot): no lead.
    pub other_clock: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gaps {
    /// Pool sessions lost or not had.
    pub count: usize,
    pub total_s: f64,
    pub longest_s: f64,
}

/// The lead's distribution over blocks (nearest-rank percentiles), and a 95% interval of
/// its mean with blocks as the unit (bootstrap, seeded); none below
/// [`MIN_UNITS`] blocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lead {
    pub n: usize,
    pub mean: Option<f64>,
    pub mean_ci: Option<(f64, f64)>,
    pub p10: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Blocks where the pool told first (lead > 0), and the node first (lead < 0).
    pub pool_first: usize,
    pub node_first: usize,
    /// Fewer than [`MIN_UNITS`] blocks: no interval.
    pub too_few: bool,
}

/// What configurations A and B would do for this farm, against SV1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigAb {
    /// A's (and B's) new-block work later than SV1's by this, ms (negative: sooner):
    /// mean lead + `roles_ms`.
    pub later_than_sv1_ms: Option<f64>,
    pub later_ci: Option<(f64, f64)>,
    /// The assumed farm roles' time.
    pub roles_ms: f64,
    /// Sats a day A and B earn more than SV1 (negative: less), at the assumptions.
    pub sats_per_day: Option<f64>,
    pub sats_per_day_ci: Option<(f64, f64)>,
    /// The same as a percent of the farm's revenue, with its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_revenue: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_revenue_ci: Option<(f64, f64)>,
    /// A ms of delay after every block, in sats a day.
    pub sats_per_day_per_ms: f64,
    /// The farm's revenue, sats a day.
    pub farm_sats_per_day: f64,
    pub block_value_sats: f64,
    pub assumptions: Vec<String>,
}

/// A block's first arrival from each source, and the clock each was stamped on.
#[derive(Default)]
struct Arrivals {
    node: Option<(u64, usize)>,
    pool: Option<(u64, usize)>,
    first: u64,
}

/// The race summarised from its records (in file order), as at `end_ns` on the same clock
/// as the last session's records.
pub fn summarize(records: &[RaceRecord], end_ns: u64, p: &RaceParams) -> RaceSummary {
    let mut identity = (String::new(), String::new(), String::new());
    let mut clocks: Vec<String> = Vec::new();
    let mut clock = 0usize;
    let mut sessions = 0usize;
    let mut recorded_ns = 0u64;
    let mut session_start: Option<u64> = None;
    let mut last_t = 0u64;
    let mut stopped = None;
    let mut blocks: BTreeMap<&str, Arrivals> = BTreeMap::new();
    // Gaps of the pool session on the current clock: (began, ended).
    let mut gaps: Vec<(u64, Option<u64>, usize)> = Vec::new();
    let close_session = |start: Option<u64>, last: u64, recorded: &mut u64| {
        if let Some(s) = start {
            *recorded += last.saturating_sub(s);
        }
    };
    for r in records {
        match &r.event {
            RaceEvent::Started {
                clock: c,
                node,
                pool,
                worker,
                ..
            } => {
                close_session(session_start, last_t, &mut recorded_ns);
                // A gap open when the last session ended ends with it.
                if let Some(g) = gaps.last_mut().filter(|g| g.1.is_none()) {
                    g.1 = Some(last_t);
                }
                sessions += 1;
                session_start = Some(r.t_ns);
                clock = clocks.iter().position(|k| k == c).unwrap_or_else(|| {
                    clocks.push(c.clone());
                    clocks.len() - 1
                });
                if identity.0.is_empty() {
                    identity = (node.clone(), pool.clone(), worker.clone());
                }
                stopped = None;
            }
            RaceEvent::Block { source, hash } => {
                let a = blocks.entry(hash).or_insert_with(|| Arrivals {
                    first: r.t_ns,
                    ..Arrivals::default()
                });
                let slot = match source {
                    Source::Node => &mut a.node,
                    Source::Pool => &mut a.pool,
                };
                slot.get_or_insert((r.t_ns, clock));
            }
            RaceEvent::GapBegan { .. } => {
                if gaps.last().is_none_or(|g| g.1.is_some()) {
                    gaps.push((r.t_ns, None, clock));
                }
            }
            RaceEvent::GapEnded => {
                if let Some(g) = gaps.last_mut().filter(|g| g.1.is_none()) {
                    g.1 = Some(r.t_ns);
                }
            }
            RaceEvent::PoolSession { .. } => {}
            RaceEvent::Stopped { reason } => stopped = Some(reason.clone()),
        }
        last_t = r.t_ns;
    }
    let end_ns = end_ns.max(last_t);
    close_session(session_start, end_ns, &mut recorded_ns);
    let settle_ns = (p.settle_s * 1e9) as u64;
    let in_gap = |t: u64, c: usize| {
        gaps.iter()
            .any(|&(b, e, gc)| gc == c && t >= b && t <= e.unwrap_or(end_ns))
    };
    let mut counts = BlockCounts {
        seen: blocks.len(),
        ..BlockCounts::default()
    };
    let mut leads = Vec::new();
    for a in blocks.values() {
        match (a.node, a.pool) {
            (Some((n, nc)), Some((q, qc))) if nc == qc => {
                counts.both += 1;
                leads.push((n as f64 - q as f64) / 1e6);
            }
            (Some(_), Some(_)) => counts.other_clock += 1,
            // The pool could not tell while its session was down: no wait for it.
            (Some((n, c)), None) if in_gap(n, c) => counts.node_during_gap += 1,
            _ if end_ns.saturating_sub(a.first) < settle_ns => counts.pending += 1,
            (Some(_), None) => counts.only_node += 1,
            _ => counts.only_pool += 1,
        }
    }
    let gaps = Gaps {
        count: gaps.len(),
        total_s: (gaps.iter())
            .map(|g| g.1.unwrap_or(end_ns).saturating_sub(g.0) as f64 / 1e9)
            .fold(0.0, |a, b| a + b),
        longest_s: (gaps.iter())
            .map(|g| g.1.unwrap_or(end_ns).saturating_sub(g.0) as f64 / 1e9)
            .fold(0.0, f64::max),
    };
    let lead_ms = lead(&leads);
    let config_ab = config_ab(&lead_ms, p);
    RaceSummary {
        schema: SCHEMA.into(),
        node: identity.0,
        pool: identity.1,
        worker: identity.2,
        sessions,
        recorded_s: recorded_ns as f64 / 1e9,
        blocks: counts,
        gaps,
        lead_ms,
        config_ab,
        stopped,
        params: p.clone(),
    }
}

fn lead(leads: &[f64]) -> Lead {
    let pct = |q| probe::stats::percentile(leads, q);
    // Each block its own unit: one block's two arrivals are one cause.
    let units: Vec<Vec<f64>> = leads.iter().map(|x| vec![*x]).collect();
    let mean = cluster_mean(&units);
    Lead {
        n: leads.len(),
        mean: mean.point,
        mean_ci: mean.ci,
        p10: pct(0.10),
        p50: pct(0.50),
        p90: pct(0.90),
        min: leads.iter().copied().reduce(f64::min),
        max: leads.iter().copied().reduce(f64::max),
        pool_first: leads.iter().filter(|x| **x > 0.0).count(),
        node_first: leads.iter().filter(|x| **x < 0.0).count(),
        too_few: leads.len() < MIN_UNITS,
    }
}

fn config_ab(lead: &Lead, p: &RaceParams) -> ConfigAb {
    let a = &p.worth;
    let v = a.block_value_sats.unwrap_or(DEFAULT_BLOCK_VALUE_SATS);
    let farm_sats_per_day = a.farm_blocks_per_day() * v;
    // A delay of t ms after every block wastes t / (T x 1000) of the farm's hashing.
    let per_ms = farm_sats_per_day / (a.block_interval_s * 1e3);
    let later = lead.mean.map(|m| m + p.roles_ms);
    let later_ci = lead
        .mean_ci
        .map(|(lo, hi)| (lo + p.roles_ms, hi + p.roles_ms));
    let value = |ms: f64| -ms * per_ms;
    let pct = crate::worth::pct_of(farm_sats_per_day);
    let value_label = match a.block_value_sats {
        Some(v) => format!("{v:.0} sats a block"),
        None => format!("{DEFAULT_BLOCK_VALUE_SATS:.0} sats a block (the subsidy; fees left out)"),
    };
    ConfigAb {
        later_than_sv1_ms: later,
        later_ci,
        roles_ms: p.roles_ms,
        sats_per_day: later.map(value),
        // Later is worse: the interval's ends swap.
        sats_per_day_ci: later_ci.map(|(lo, hi)| (value(hi), value(lo))),
        pct_of_revenue: later.map(|ms| pct(value(ms))),
        pct_of_revenue_ci: later_ci.map(|(lo, hi)| (pct(value(hi)), pct(value(lo)))),
        sats_per_day_per_ms: per_ms,
        farm_sats_per_day,
        block_value_sats: v,
        assumptions: vec![
            format!(
                "the SV2 farm roles (JDC, translator) take {} ms to build a new-block job \
                 (stratum-bench's default run: configuration A's new-block job minus its \
                 farm node's lag; --roles-ms)",
                p.roles_ms
            ),
            format!(
                "a farm of {} on a network of {}, blocks every {} s worth {value_label}",
                hashrate_label(a.farm_hashrate),
                hashrate_label(a.network_hashrate),
                a.block_interval_s
            ),
            "the race is measured at the farm: the pool's notice already includes the pool's \
             link"
                .into(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    fn rec(t_ns: u64, event: RaceEvent) -> RaceRecord {
        RaceRecord { t_ns, event }
    }

    fn started(t: u64, clock: &str) -> RaceRecord {
        rec(
            t,
            RaceEvent::Started {
                wall_ns: 0,
                clock: clock.into(),
                node: "tcp://127.0.0.1:28332".into(),
                pool: "stratum+tcp://pool:3333".into(),
                worker: "farm.1".into(),
            },
        )
    }

    fn block(t: u64, source: Source, hash: &str) -> RaceRecord {
        rec(
            t,
            RaceEvent::Block {
                source,
                hash: hash.into(),
            },
        )
    }

    /// Blocks h1..h4 seen by both: leads (node - pool) +10, -5, +20, +3 ms (h1 pool at
    /// 100 s, node at 100.010 s; h2 node at 200 s, pool at 200.005 s; ...). h5 only the
    /// node (300 s), h6 only the pool (400 s), h7 node-only while the pool session was down
    /// (gap 500 s to 530 s, node at 510 s), h8 only the node at 590 s, 10 s before the
    /// end: pending under the 60 s settle time. A pool notice of h1 again (a reorg back)
    /// keeps its first arrival.
    #[test]
    fn blocks_are_tied_by_hash_and_every_block_counted_once() {
        let r = [
            started(0, "boot-a"),
            rec(S, RaceEvent::PoolSession { tip: "h0".into() }),
            block(100 * S, Source::Pool, "h1"),
            block(100 * S + 10 * MS, Source::Node, "h1"),
            block(200 * S, Source::Node, "h2"),
            block(200 * S + 5 * MS, Source::Pool, "h2"),
            block(250 * S, Source::Pool, "h3"),
            block(250 * S + 20 * MS, Source::Node, "h3"),
            block(280 * S, Source::Pool, "h4"),
            block(280 * S + 3 * MS, Source::Node, "h4"),
            block(281 * S, Source::Pool, "h1"),
            block(300 * S, Source::Node, "h5"),
            block(400 * S, Source::Pool, "h6"),
            rec(
                500 * S,
                RaceEvent::GapBegan {
                    reason: "closed".into(),
                },
            ),
            block(510 * S, Source::Node, "h7"),
            rec(530 * S, RaceEvent::GapEnded),
            rec(530 * S, RaceEvent::PoolSession { tip: "h7".into() }),
            block(590 * S, Source::Node, "h8"),
        ];
        let s = summarize(&r, 600 * S, &RaceParams::default());
        assert_eq!(
            s.blocks,
            BlockCounts {
                seen: 8,
                both: 4,
                only_node: 1,
                only_pool: 1,
                node_during_gap: 1,
                pending: 1,
                other_clock: 0,
            }
        );
        assert_eq!(s.gaps.count, 1);
        assert!((s.gaps.total_s - 30.0).abs() < 1e-9);
        assert!((s.recorded_s - 600.0).abs() < 1e-9);
        let l = &s.lead_ms;
        // Sorted: -5, 3, 10, 20; mean 28 / 4 = 7; nearest rank p10 = rank 1, p50 = rank 2,
        // p90 = rank 4.
        assert_eq!(l.n, 4);
        assert!((l.mean.unwrap() - 7.0).abs() < 1e-9);
        assert_eq!(
            (l.p10, l.p50, l.p90, l.min, l.max),
            (Some(-5.0), Some(3.0), Some(20.0), Some(-5.0), Some(20.0))
        );
        assert_eq!((l.pool_first, l.node_first), (3, 1));
        // Under 5 blocks: no interval, said so.
        assert!(l.too_few);
        assert_eq!(l.mean_ci, None);
        // A: later by 7 + 1.6 = 8.6 ms.
        assert!((s.config_ab.later_than_sv1_ms.unwrap() - 8.6).abs() < 1e-9);
        assert_eq!(s.config_ab.later_ci, None);
        // Ten minutes on, h8 is settled as node-only.
        let later = summarize(&r, 660 * S, &RaceParams::default());
        assert_eq!((later.blocks.only_node, later.blocks.pending), (2, 0));
        // A block the node announced 5 s into a gap still open is no pending one.
        let in_gap = summarize(&r[..15], 515 * S, &RaceParams::default());
        assert_eq!(
            (in_gap.blocks.node_during_gap, in_gap.blocks.pending),
            (1, 0)
        );
        assert!(
            (in_gap.gaps.total_s - 15.0).abs() < 1e-9,
            "open until the end"
        );
    }

    /// 1 PH/s of a 1 ZH/s network finds 1e-6 x 144 = 0.000144 blocks a day, worth
    /// 0.000144 x 312,500,000 = 45,000 sats a day. A delay of 100 ms after every block
    /// costs 100 / 600,000 of it: 7.5 sats a day; a ms is 0.075.
    #[test]
    fn a_hundred_ms_at_a_petahash_is_worth_seven_and_a_half_sats_a_day() {
        // Five blocks the node heard 98.4 ms after the pool: with 1.6 ms of roles, A is
        // 100 ms later than SV1.
        let mut r = vec![started(0, "boot")];
        for i in 0..5u64 {
            let h = format!("h{i}");
            r.push(block((i + 1) * 10 * S, Source::Pool, &h));
            r.push(block((i + 1) * 10 * S + 98_400_000, Source::Node, &h));
        }
        let s = summarize(&r, 1_000 * S, &RaceParams::default());
        let c = &s.config_ab;
        assert!((c.farm_sats_per_day - 45_000.0).abs() < 1e-6);
        assert!((c.sats_per_day_per_ms - 0.075).abs() < 1e-12);
        assert!((c.later_than_sv1_ms.unwrap() - 100.0).abs() < 1e-6);
        assert!((c.sats_per_day.unwrap() + 7.5).abs() < 1e-6);
        // 100 ms of every 600,000: -0.016667% of the farm's revenue.
        assert!((c.pct_of_revenue.unwrap() + 100.0 / 6_000.0).abs() < 1e-9);
        // Five equal leads: an interval, of width zero, shifted by the roles' time alike.
        assert!(!s.lead_ms.too_few);
        let (lo, hi) = s.lead_ms.mean_ci.unwrap();
        assert!((lo - 98.4).abs() < 1e-6 && (hi - 98.4).abs() < 1e-6);
        let (lo, hi) = c.later_ci.unwrap();
        assert!((lo - 100.0).abs() < 1e-6 && (hi - 100.0).abs() < 1e-6);
        let (lo, hi) = c.sats_per_day_ci.unwrap();
        assert!((lo + 7.5).abs() < 1e-6 && (hi + 7.5).abs() < 1e-6);
        // Ten times the farm: ten times the worth.
        let mut p = RaceParams::default();
        p.worth.farm_hashrate = 1e16;
        let s = summarize(&r, 1_000 * S, &p);
        assert!((s.config_ab.sats_per_day.unwrap() + 75.0).abs() < 1e-6);
    }

    /// The interval of the mean lead takes blocks as units: it holds the mean and widens
    /// with their spread.
    #[test]
    fn the_mean_leads_interval_is_over_blocks() {
        let mut r = vec![started(0, "boot")];
        for (i, lead_ms) in [-4i64, -2, 0, 2, 4, 6].iter().enumerate() {
            let h = format!("h{i}");
            let t = (i as u64 + 1) * 10 * S;
            r.push(block(t, Source::Pool, &h));
            r.push(block(
                t.saturating_add_signed(lead_ms * MS as i64),
                Source::Node,
                &h,
            ));
        }
        let s = summarize(&r, 1_000 * S, &RaceParams::default());
        let (lo, hi) = s.lead_ms.mean_ci.unwrap();
        assert!((s.lead_ms.mean.unwrap() - 1.0).abs() < 1e-9);
        assert!(lo < 1.0 && hi > 1.0 && lo > -4.0 && hi < 6.0, "{lo} {hi}");
        let (a_lo, a_hi) = s.config_ab.later_ci.unwrap();
        assert!((a_lo - lo - 1.6).abs() < 1e-9 && (a_hi - hi - 1.6).abs() < 1e-9);
    }

    /// A resumed race: the second session's blocks add to the first's; a gap open when
    /// the first session stopped ends there; a block whose two arrivals were stamped on
    /// different boots' clocks has no lead.
    #[test]
    fn a_resumed_race_counts_both_sessions() {
        let r = [
            started(0, "boot-a"),
            block(10 * S, Source::Pool, "h1"),
            block(10 * S + 4 * MS, Source::Node, "h1"),
            rec(
                20 * S,
                RaceEvent::GapBegan {
                    reason: "closed".into(),
                },
            ),
            block(25 * S, Source::Node, "h2"),
            rec(
                30 * S,
                RaceEvent::Stopped {
                    reason: "SIGTERM".into(),
                },
            ),
            started(100 * S, "boot-a"),
            block(110 * S, Source::Node, "h3"),
            block(110 * S + 2 * MS, Source::Pool, "h3"),
            started(5 * S, "boot-b"),
            block(10 * S, Source::Node, "h4"),
            block(200 * S, Source::Pool, "h4"),
        ];
        let s = summarize(&r, 300 * S, &RaceParams::default());
        assert_eq!(s.sessions, 3);
        assert_eq!(s.stopped, None, "the last session did not stop");
        assert_eq!(
            s.blocks.both, 3,
            "h1, h3, and h4 (its arrivals on one clock)"
        );
        assert_eq!(s.blocks.node_during_gap, 1);
        assert_eq!(s.blocks.other_clock, 0);
        assert_eq!((s.gaps.count, s.gaps.total_s), (1, 10.0));
        assert_eq!(s.lead_ms.n, 3);
        // 30 s, then 110.002 - 100 = 10.002 s to the last record, then 300 - 5 s.
        assert!((s.recorded_s - 335.002).abs() < 1e-9, "{}", s.recorded_s);
        let crossed = [
            started(0, "boot-a"),
            block(10 * S, Source::Node, "h1"),
            started(5 * S, "boot-b"),
            block(6 * S, Source::Pool, "h1"),
        ];
        let s = summarize(&crossed, 100 * S, &RaceParams::default());
        assert_eq!((s.blocks.other_clock, s.lead_ms.n), (1, 0));
    }

    #[test]
    fn records_read_back_as_written() {
        let r = block(7, Source::Node, "ab");
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(
            line,
            r#"{"t_ns":7,"kind":"block","source":"node","hash":"ab"}"#
        );
        assert_eq!(serde_json::from_str::<RaceRecord>(&line).unwrap(), r);
    }
}
