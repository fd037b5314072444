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

/// What a tap relays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TapProtocol {
    Sv1,
    Sv2,
}

impl TapProtocol {
    pub fn name(self) -> &'static str {
        match self {
            TapProtocol::Sv1 => "SV1",
            TapProtocol::Sv2 => "SV2",
        }
    }
}

/// How a tap was set up, written when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapSetup {
    pub protocol: TapProtocol,
    pub listen: String,
    pub upstream: String,
    /// The operator's node's ZMQ endpoint, when new blocks were watched.
    pub node_zmq: Option<String>,
    /// Whether the tap read the messages: false for an SV2 tap without the pool's key,
    /// which sees encrypted bytes only.
    pub decoded: bool,
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
    /// New work relayed to miners, one per connection (SV2: per channel) that got it: SV1
    /// `mining.notify`; SV2 a job for now, or the SetNewPrevHash that starts a future one.
    pub jobs_relayed: u64,
    /// Between consecutive jobs on a connection (SV2: a channel), in ms (unit: the
    /// broadcast that ended it).
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
    /// An SV2 tap without the pool's key: the reads of encrypted bytes it relayed, towards
    /// the pool and from it, and their sizes in bytes. Frames cannot be told apart in an
    /// encrypted stream, so a read stands for one frame or a few that came together.
    pub encrypted_reads_up: u64,
    pub encrypted_reads_down: u64,
    pub encrypted_read_bytes_up: Option<Dist>,
    pub encrypted_read_bytes_down: Option<Dist>,
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
    /// Each job stream's last job time: a connection (SV1), or a channel on one (SV2).
    last_job: HashMap<(u32, u32), u64>,
    /// Each SV2 channel's tip, and the jobs for now it had since: the nth job after a tip
    /// on every channel comes from the same template, so it names the broadcast.
    sv2_tip: HashMap<(u32, u32), (String, u32)>,
    job_interval_ms: Clustered,
    /// Blocks announced, by hash: when, and the connections that have had a job on it.
    announced: HashMap<String, (u64, std::collections::HashSet<u32>)>,
    new_block_job_ms: Clustered,
    bytes: (u64, u64),
    latency: Option<(Dist, Dist)>,
    malformed: (u64, u64),
    /// Sizes of encrypted reads, towards the pool and from it.
    encrypted_reads: (Vec<f64>, Vec<f64>),
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
            } => self.job(
                r.t_ns,
                (*connection, 0),
                &format!("{prev_hash}/{job_id}"),
                Some(prev_hash),
            ),
            Event::NewPrevHashRelayed {
                connection,
                channel,
                prev_hash,
            } => {
                let key = (*connection, *channel);
                self.sv2_tip.insert(key, (prev_hash.clone(), 0));
                self.job(r.t_ns, key, &format!("{prev_hash}/0"), Some(prev_hash));
            }
            Event::Sv2JobRelayed {
                connection,
                channel,
                ..
            } => {
                let key = (*connection, *channel);
                let (tip, since) = self.sv2_tip.entry(key).or_default();
                *since += 1;
                let unit = format!("{tip}/{since}");
                self.job(r.t_ns, key, &unit, None);
            }
            Event::EncryptedRead {
                connection,
                up,
                bytes,
            } => {
                self.connections.insert(*connection);
                let sizes = match up {
                    true => &mut self.encrypted_reads.0,
                    false => &mut self.encrypted_reads.1,
                };
                sizes.push(*bytes as f64);
            }
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

    /// A job relayed at `t` on `stream` (connection, channel): `broadcast` names the
    /// broadcast it came in, `new_tip` the block when it starts work on one.
    fn job(&mut self, t: u64, stream: (u32, u32), broadcast: &str, new_tip: Option<&str>) {
        let connection = stream.0;
        self.connections.insert(connection);
        self.jobs_relayed += 1;
        if let Some(last) = self.last_job.insert(stream, t) {
            self.job_interval_ms
                .push(broadcast, t.saturating_sub(last) as f64 / 1e6);
        }
        let Some(prev_hash) = new_tip else { return };
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
            encrypted_reads_up: self.encrypted_reads.0.len() as u64,
            encrypted_reads_down: self.encrypted_reads.1.len() as u64,
            encrypted_read_bytes_up: sizes(&self.encrypted_reads.0),
            encrypted_read_bytes_down: sizes(&self.encrypted_reads.1),
            unreadable: Vec::new(),
        }
    }
}

/// The distribution of read sizes, when there were reads.
fn sizes(reads: &[f64]) -> Option<Dist> {
    (!reads.is_empty()).then(|| Dist::of(reads))
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
                    refused: true,
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

    /// One SV2 connection with two channels, then an encrypted stream: by hand below.
    #[test]
    fn sv2_channels_and_an_encrypted_stream_worked_by_hand() {
        let tip = |t_ms, channel, prev: &str| {
            at(
                t_ms,
                Event::NewPrevHashRelayed {
                    connection: 1,
                    channel,
                    prev_hash: prev.into(),
                },
            )
        };
        let job = |t_ms, channel, job_id| {
            at(
                t_ms,
                Event::Sv2JobRelayed {
                    connection: 1,
                    channel,
                    job_id,
                },
            )
        };
        let read = |t_ms, up, bytes| {
            at(
                t_ms,
                Event::EncryptedRead {
                    connection: 2,
                    up,
                    bytes,
                },
            )
        };
        let events = [
            tip(0, 1, "h0"),
            tip(10, 2, "h0"),
            // The first template after h0, on both channels: one broadcast.
            job(300, 1, 7),
            job(310, 2, 9),
            at(1_000, Event::NodeBlockAnnounced { hash: "h1".into() }),
            tip(1_003, 1, "h1"),
            tip(1_005, 2, "h1"),
            read(1_100, true, 64),
            read(1_101, false, 234),
            read(1_200, true, 100),
        ];
        let mut fold = TapFold::default();
        for e in &events {
            fold.consume(e);
        }
        let s = fold.finish();
        assert_eq!(s.connections, 2);
        assert_eq!(s.jobs_relayed, 6);
        // Channel 1: 300 and 703 ms; channel 2: 300 and 695 ms. Two broadcasts (h0's
        // first job, h1), so two units.
        assert_eq!(s.job_interval_ms.count, 4);
        assert_eq!(s.job_interval_ms.units, Some(2));
        assert_eq!(s.job_interval_ms.mean, Some(499.5));
        assert_eq!(s.job_interval_ms.max, Some(703.0));
        // The connection's first job on h1 is 3 ms after the node's block; its second
        // channel does not count again.
        assert_eq!(s.new_block_job_ms.count, 1);
        assert_eq!(s.new_block_job_ms.mean, Some(3.0));
        // Reads: 64 and 100 bytes up, 234 down.
        assert_eq!((s.encrypted_reads_up, s.encrypted_reads_down), (2, 1));
        let up = s.encrypted_read_bytes_up.unwrap();
        assert_eq!((up.mean, up.max), (Some(82.0), Some(100.0)));
        assert_eq!(s.encrypted_read_bytes_down.unwrap().max, Some(234.0));
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
