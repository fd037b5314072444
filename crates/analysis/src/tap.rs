//! The summary of a standalone tap (`stratum-bench tap`): what crossed one real
//! deployment's pool connections, from the tap's events alone.
//!
//! Jobs are tied to the node's announced blocks by prev hash (SV1 `mining.notify`, SV2
//! `SetNewPrevHash`); shares to their worker by the name the miner submitted under, and
//! to their verdict by the pool's answer on the same connection. An interval between jobs
//! belongs to the broadcast that ended it, and a new-block job time to its block: one
//! broadcast reaches every connection, so those are the independent units.

use crate::stats::Clustered;
use probe::{Dist, Event, Record, ShareVerdict};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What a tap directory holds besides its events: how the tap was set up.
pub const TAP_FILE: &str = "tap.json";

/// How a tap was set up, written when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapSetup {
    /// `sv1` or `sv2`.
    pub protocol: String,
    pub listen: String,
    pub upstream: String,
    /// The operator's node's ZMQ endpoint, when new blocks were watched.
    pub node_zmq: Option<String>,
}

/// Shares of one worker by the pool's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerShares {
    pub worker: String,
    pub verdicts: BTreeMap<String, u64>,
    /// Difficulty credited for accepted shares, where the tap knew it.
    pub accepted_difficulty: f64,
}

/// A standalone tap's summary (`summary.json` in its directory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TapSummary {
    /// From the first event to the last, in seconds.
    pub duration_s: f64,
    /// Client connections the tap saw, those that ended while it ran, those it closed
    /// because the pool could not be reached, and how the ended ones ended (by reason).
    pub connections: u64,
    pub connections_ended: u64,
    pub upstream_unreachable: u64,
    pub end_reasons: BTreeMap<String, u64>,
    /// Shares by verdict, over every worker.
    pub verdicts: BTreeMap<String, u64>,
    pub workers: Vec<WorkerShares>,
    /// Jobs relayed to miners (one per connection that got it).
    pub jobs_relayed: u64,
    /// Between consecutive jobs on a connection, in ms (unit: the job that ended it).
    pub job_interval_ms: Dist,
    /// Blocks the node announced on ZMQ while the tap ran.
    pub blocks_announced: u64,
    /// From the node's announcement to each connection's first job on that block, in ms
    /// (unit: the block). Negative when the pool's job came first.
    pub new_block_job_ms: Dist,
    /// Announced blocks no connection got a job on (the pool is on another chain or
    /// another node, or the block came at the very end).
    pub blocks_without_job: u64,
    /// Bytes relayed, towards the pool (up) and from it (down), and per second.
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub bytes_up_per_s: f64,
    pub bytes_down_per_s: f64,
    /// What the tap added per line or frame it relayed, in ms.
    pub tap_added_up_ms: Option<Dist>,
    pub tap_added_down_ms: Option<Dist>,
    /// Lines passed on that were not JSON (SV1), towards the pool and from it.
    pub malformed_up: u64,
    pub malformed_down: u64,
    /// Event lines that could not be read, as `events/tap.jsonl:17`.
    pub unreadable: Vec<String>,
}

/// The summary of the tap directory `dir`.
pub fn summarize_dir(dir: &Path) -> TapSummary {
    let mut fold = TapFold::default();
    let read = crate::input::each_event(dir, |r| fold.consume(&r));
    let mut summary = fold.finish();
    summary.unreadable = read.unreadable;
    summary
}

/// The events folded one by one, in time order.
#[derive(Default)]
pub struct TapFold {
    first_ns: Option<u64>,
    last_ns: u64,
    connections: std::collections::HashSet<u32>,
    ended: u64,
    unreachable: u64,
    end_reasons: BTreeMap<String, u64>,
    workers: BTreeMap<String, WorkerShares>,
    jobs_relayed: u64,
    /// Each connection's last job time.
    last_job: HashMap<u32, u64>,
    job_interval_ms: Clustered,
    /// Blocks announced, by hash: when, and the connections that have had a job on it.
    announced: HashMap<String, (u64, std::collections::HashSet<u32>)>,
    new_block_job_ms: Clustered,
    bytes: (u64, u64),
    latency: Option<(Dist, Dist)>,
    malformed: (u64, u64),
}

impl TapFold {
    pub fn consume(&mut self, r: &Record) {
        if matches!(r.event, Event::ClockAnchor { .. }) {
            return;
        }
        self.first_ns.get_or_insert(r.t_ns);
        self.last_ns = self.last_ns.max(r.t_ns);
        match &r.event {
            Event::Sv1JobRelayed {
                connection,
                job_id,
                prev_hash,
                ..
            } => self.job(r.t_ns, *connection, job_id, prev_hash),
            Event::NewPrevHashRelayed {
                connection,
                prev_hash,
            } => self.job(r.t_ns, *connection, prev_hash, prev_hash),
            Event::ShareJudged {
                worker,
                verdict,
                difficulty,
                ..
            } => {
                let w = self
                    .workers
                    .entry(worker.clone())
                    .or_insert_with(|| WorkerShares {
                        worker: worker.clone(),
                        ..WorkerShares::default()
                    });
                *w.verdicts.entry(verdict.name().to_string()).or_default() += 1;
                if *verdict == ShareVerdict::Accepted {
                    w.accepted_difficulty += difficulty.unwrap_or(0.0);
                }
            }
            Event::NodeBlockAnnounced { hash } => {
                self.announced
                    .entry(hash.clone())
                    .or_insert_with(|| (r.t_ns, Default::default()));
            }
            Event::TapConnectionEnded { connection, reason } => {
                self.connections.insert(*connection);
                self.ended += 1;
                *self.end_reasons.entry(reason_kind(reason)).or_default() += 1;
            }
            Event::TapUpstreamUnreachable { connection, .. } => {
                self.connections.insert(*connection);
                self.unreachable += 1;
            }
            Event::TapBytes {
                up_bytes,
                down_bytes,
            } => self.bytes = (*up_bytes, *down_bytes),
            Event::TapLatency { up_ms, down_ms } => {
                self.latency = Some((up_ms.clone(), down_ms.clone()))
            }
            Event::TapMalformedLines { up, down } => self.malformed = (*up, *down),
            _ => {}
        }
    }

    /// A job relayed on `connection` at `t`: `job` names the broadcast, `prev_hash` its tip.
    fn job(&mut self, t: u64, connection: u32, job: &str, prev_hash: &str) {
        self.connections.insert(connection);
        self.jobs_relayed += 1;
        if let Some(last) = self.last_job.insert(connection, t) {
            let unit = format!("{prev_hash}/{job}");
            self.job_interval_ms
                .push(&unit, t.saturating_sub(last) as f64 / 1e6);
        }
        if let Some((announced_ns, reached)) = self.announced.get_mut(prev_hash) {
            if reached.insert(connection) {
                let ms = (t as f64 - *announced_ns as f64) / 1e6;
                self.new_block_job_ms.push(prev_hash, ms);
            }
        }
    }

    pub fn finish(self) -> TapSummary {
        let duration_s = self.last_ns.saturating_sub(self.first_ns.unwrap_or(0)) as f64 / 1e9;
        let per_s = |bytes: u64| {
            if duration_s > 0.0 {
                bytes as f64 / duration_s
            } else {
                0.0
            }
        };
        let mut verdicts = BTreeMap::new();
        for w in self.workers.values() {
            for (v, n) in &w.verdicts {
                *verdicts.entry(v.clone()).or_default() += n;
            }
        }
        let blocks_without_job = (self.announced.values())
            .filter(|(_, reached)| reached.is_empty())
            .count() as u64;
        TapSummary {
            duration_s,
            connections: self.connections.len() as u64,
            connections_ended: self.ended,
            upstream_unreachable: self.unreachable,
            end_reasons: self.end_reasons,
            verdicts,
            workers: self.workers.into_values().collect(),
            jobs_relayed: self.jobs_relayed,
            job_interval_ms: self.job_interval_ms.dist(),
            blocks_announced: self.announced.len() as u64,
            new_block_job_ms: self.new_block_job_ms.dist(),
            blocks_without_job,
            bytes_up: self.bytes.0,
            bytes_down: self.bytes.1,
            bytes_up_per_s: per_s(self.bytes.0),
            bytes_down_per_s: per_s(self.bytes.1),
            tap_added_up_ms: self.latency.as_ref().map(|l| l.0.clone()),
            tap_added_down_ms: self.latency.map(|l| l.1),
            malformed_up: self.malformed.0,
            malformed_down: self.malformed.1,
            unreadable: Vec::new(),
        }
    }
}

/// A connection's end reason without what differs per connection (addresses, counts),
/// so a thousand connections that ended alike count under one reason.
fn reason_kind(reason: &str) -> String {
    let first = reason.split(": ").next().unwrap_or(reason);
    first.chars().filter(|c| !c.is_ascii_digit()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_ms: u64, event: Event) -> Record {
        Record {
            t_ns: t_ms * 1_000_000,
            role: "tap".into(),
            event,
        }
    }

    fn job(t_ms: u64, connection: u32, job_id: &str, prev_hash: &str) -> Record {
        at(
            t_ms,
            Event::Sv1JobRelayed {
                connection,
                job_id: job_id.into(),
                prev_hash: prev_hash.into(),
                marker_txid: None,
                clean: false,
            },
        )
    }

    fn judged(t_ms: u64, worker: &str, verdict: ShareVerdict, difficulty: f64) -> Record {
        at(
            t_ms,
            Event::ShareJudged {
                worker: worker.into(),
                job_id: "j".into(),
                verdict,
                block_hash: None,
                reason: None,
                difficulty: Some(difficulty),
            },
        )
    }

    /// Two connections, a block announced at 1,000 ms: worked out by hand below.
    #[test]
    fn a_tapped_deployment_worked_by_hand() {
        let events = [
            job(0, 1, "a", "h0"),
            job(10, 2, "a", "h0"),
            at(1_000, Event::NodeBlockAnnounced { hash: "h1".into() }),
            // The pool's clean job on h1: connection 1 after 4 ms, connection 2 after 6.
            job(1_004, 1, "b", "h1"),
            job(1_006, 2, "b", "h1"),
            // A refresh on h1 does not count as a new-block job again.
            job(1_504, 1, "c", "h1"),
            // A block no connection ever got a job on.
            at(1_800, Event::NodeBlockAnnounced { hash: "h2".into() }),
            judged(1_100, "w.1", ShareVerdict::Accepted, 8.0),
            judged(1_200, "w.1", ShareVerdict::Stale, 8.0),
            judged(1_300, "w.2", ShareVerdict::Accepted, 4.0),
            at(
                1_400,
                Event::TapConnectionEnded {
                    connection: 2,
                    reason: "from the pool: read: connection reset by peer 127.0.0.1:3333".into(),
                },
            ),
            at(
                1_500,
                Event::TapUpstreamUnreachable {
                    connection: 3,
                    reason: "cannot reach the pool".into(),
                },
            ),
            at(
                2_000,
                Event::TapBytes {
                    up_bytes: 4_000,
                    down_bytes: 10_000,
                },
            ),
        ];
        let mut fold = TapFold::default();
        for e in &events {
            fold.consume(e);
        }
        let s = fold.finish();
        // 0 ms to 2,000 ms.
        assert_eq!(s.duration_s, 2.0);
        assert_eq!(s.connections, 3);
        assert_eq!(s.connections_ended, 1);
        assert_eq!(s.upstream_unreachable, 1);
        assert_eq!(s.end_reasons.get("from the pool"), Some(&1));
        assert_eq!(s.jobs_relayed, 5);
        // Intervals: connection 1: 1,004 and 500 ms; connection 2: 996 ms.
        assert_eq!(s.job_interval_ms.count, 3);
        assert_eq!(s.job_interval_ms.max, Some(1_004.0));
        assert_eq!(s.job_interval_ms.p50, Some(996.0));
        // New-block jobs: 4 and 6 ms, on one block (one unit: too few for an interval).
        assert_eq!(s.blocks_announced, 2);
        assert_eq!(s.blocks_without_job, 1);
        assert_eq!(s.new_block_job_ms.count, 2);
        assert_eq!(s.new_block_job_ms.mean, Some(5.0));
        assert_eq!(s.new_block_job_ms.units, Some(1));
        assert_eq!(s.new_block_job_ms.mean_ci, None);
        // Shares: w.1 one accepted (difficulty 8) and one stale, w.2 one accepted.
        assert_eq!(s.verdicts.get("accepted"), Some(&2));
        assert_eq!(s.verdicts.get("stale"), Some(&1));
        assert_eq!(s.workers.len(), 2);
        assert_eq!(s.workers[0].worker, "w.1");
        assert_eq!(s.workers[0].accepted_difficulty, 8.0);
        // 4,000 and 10,000 bytes over 2 s.
        assert_eq!((s.bytes_up_per_s, s.bytes_down_per_s), (2_000.0, 5_000.0));
    }

    #[test]
    fn end_reasons_group_connections_that_ended_alike() {
        assert_eq!(
            reason_kind("from the miner: read (lines are bounded to 16384 bytes)"),
            "from the miner"
        );
        assert_eq!(reason_kind("closed"), "closed");
    }
}
