//! The SV1 tap: a transparent relay on the pool site, right in front of an SV1 pool, as
//! the SV2 sides have theirs in front of the SRI pool, so every side crosses the same kind
//! of hop and its verdicts are read at the same place.
//!
//! It passes every byte on unchanged, line by line in both directions, and records, stamped
//! as each line passes: every `mining.notify` (job id, prev hash, clean flag, first merkle
//! branch), every `mining.set_difficulty`, and every `mining.submit` with the pool's answer
//! (accepted, or the error mapped to stale / duplicate / low difficulty / unknown job /
//! other, its text kept). What it adds per line, each way, is measured. A line that is not
//! JSON is passed on and counted; a line over [`MAX_LINE`] closes that connection with
//! a logged reason, and the tap serves on.

use crate::job::Job;
use crate::wire::{read_raw_line, MAX_LINE};
use anyhow::{Context, Result};
use parking_lot::Mutex;
use probe::{mono_ns, Event, Histogram, Recorder, ShareVerdict, TapStats};
use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use sv1_wire::{codes, Id, Message, Method, ParseError, Response};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sv1TapConfig {
    pub listen: SocketAddr,
    /// The pool the tap relays to.
    pub upstream: SocketAddr,
    /// Its connections are numbered from this plus one (a shard's own range).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_offset: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What the tap measured of itself, and counts as it goes.
#[derive(Default)]
pub struct Sv1TapStats {
    pub tap: Arc<TapStats>,
    /// Lines that were not JSON, towards the pool and from it.
    pub malformed_up: AtomicU64,
    pub malformed_down: AtomicU64,
}

impl probe::tap::FinalEvents for Sv1TapStats {
    fn final_events(&self) -> Vec<Event> {
        vec![
            self.tap.latency_event(),
            Event::TapMalformedLines {
                up: self.malformed_up.load(Ordering::Relaxed),
                down: self.malformed_down.load(Ordering::Relaxed),
            },
        ]
    }
}

/// The SV1 tap, listening.
pub type Sv1Tap = probe::tap::Listening<Sv1TapStats>;

/// Starts the SV1 tap of `cfg`.
pub async fn start(cfg: Sv1TapConfig, recorder: Recorder) -> Result<Sv1Tap> {
    let tap = |stats: &Arc<Sv1TapStats>| stats.tap.clone();
    let listen = (cfg.listen, cfg.connection_offset);
    Sv1Tap::start(listen, "SV1 tap", Sv1TapStats::default(), tap, {
        move |stream, peer, connection, stats| {
            let recorder = recorder.clone();
            async move { serve(stream, peer, cfg.upstream, connection, &stats, &recorder).await }
        }
    })
    .await
}

/// What the tap keeps of one connection, between its two directions.
#[derive(Default)]
pub(crate) struct Connection {
    /// Submits waiting for the pool's answer, by request id: (worker, job id).
    pending: HashMap<String, (String, String)>,
    /// The last `mining.set_difficulty`.
    difficulty: Option<f64>,
    /// The difficulty in force when each job was sent: a miner applies a new difficulty
    /// from its next job, and a pool credits a share at its job's.
    job_difficulty: HashMap<String, f64>,
}

/// Submits awaiting their answer on one connection (a pool answers within seconds; a
/// miner sends a few a second at most).
const MAX_UNANSWERED: usize = 4096;

/// Jobs whose difficulty is kept between clean jobs (a pool that never sends one).
const MAX_JOBS_KEPT: usize = 1024;

impl Connection {
    fn job_sent(&mut self, job_id: &str, clean: bool) {
        if clean || self.job_difficulty.len() >= MAX_JOBS_KEPT {
            self.job_difficulty.clear();
        }
        if let Some(d) = self.difficulty {
            self.job_difficulty.insert(job_id.to_string(), d);
        }
    }

    /// The difficulty a share on `job_id` counts at.
    fn share_difficulty(&self, job_id: &str) -> Option<f64> {
        self.job_difficulty.get(job_id).copied().or(self.difficulty)
    }
}

/// One client's connection: to the pool and relayed until either side ends it; how it
/// ended is logged and recorded.
async fn serve(
    downstream: TcpStream,
    peer: SocketAddr,
    upstream: SocketAddr,
    connection: u32,
    stats: &Arc<Sv1TapStats>,
    recorder: &Recorder,
) {
    let _ = downstream.set_nodelay(true);
    let Some(pool) = (stats.tap)
        .connect_pool(upstream, peer, connection, recorder)
        .await
    else {
        return;
    };
    let ended = relay(
        downstream,
        pool,
        connection,
        stats.clone(),
        recorder.clone(),
    )
    .await;
    probe::tap::connection_ended(peer, connection, ended, recorder);
}

async fn relay(
    downstream: TcpStream,
    pool: TcpStream,
    connection: u32,
    stats: Arc<Sv1TapStats>,
    recorder: Recorder,
) -> Result<()> {
    let (down_read, down_write) = downstream.into_split();
    let (up_read, up_write) = pool.into_split();
    let conn: Arc<Mutex<Connection>> = Arc::default();
    let to_pool = pump(
        down_read,
        up_write,
        |_, msg| note_request(msg, &conn),
        Direction {
            added_ns: &stats.tap.up_ns,
            bytes: &stats.tap.bytes_up,
            malformed: &stats.malformed_up,
        },
    );
    let from_pool = pump(
        up_read,
        down_write,
        |t, msg| note_answer(t, msg, connection, &conn, &recorder, &stats),
        Direction {
            added_ns: &stats.tap.down_ns,
            bytes: &stats.tap.bytes_down,
            malformed: &stats.malformed_down,
        },
    );
    // Both directions run on this one task, so a submit is noted (right after its write,
    // with no await between) before its answer can be read. The pool ending its side ends
    // the connection. The miner ending its side closes ours to the pool, whose answers to
    // the last submits are still read for up to [`probe::tap::DRAIN`]: the pool credited them.
    tokio::pin!(to_pool, from_pool);
    tokio::select! {
        ended = &mut to_pool => {
            let _ = tokio::time::timeout(probe::tap::DRAIN, &mut from_pool).await;
            ended.context("from the miner")
        }
        ended = &mut from_pool => ended.context("from the pool"),
    }
}

/// What one direction of the relay counts.
struct Direction<'a> {
    added_ns: &'a Histogram,
    bytes: &'a Counter,
    malformed: &'a AtomicU64,
}

/// Forwards lines from `from` to `to` unchanged, then shows each SV1 one to `look`, with
/// the moment it was read whole. Once `to` is gone, lines are still read and shown (what
/// the pool answered a miner that left is still its verdict); the end of `from` ends it.
async fn pump(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut look: impl FnMut(u64, &Message),
    counts: Direction<'_>,
) -> Result<()> {
    let mut from = BufReader::new(from);
    let mut line = Vec::with_capacity(1024);
    let mut write_failed = None;
    loop {
        line.clear();
        let read = read_raw_line(&mut from, &mut line)
            .await
            .with_context(|| format!("read (lines are bounded to {MAX_LINE} bytes)"));
        if let Err(e) = read {
            return Err(match write_failed {
                Some(w) => anyhow::Error::new(w).context("write"),
                None => e,
            });
        }
        let t_in = mono_ns();
        // Passed on first: reading the line for the record is outside what the tap adds.
        if write_failed.is_none() {
            match to.write_all(&line).await {
                Ok(()) => {
                    counts.added_ns.record(mono_ns().saturating_sub(t_in));
                    counts.bytes.inc_by(line.len() as u64);
                }
                Err(e) => write_failed = Some(e),
            }
        }
        match Message::parse(&line) {
            Ok(msg) => look(t_in, &msg),
            Err(ParseError::Json(_)) => {
                counts.malformed.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::debug!(error = %e, "a message the tap cannot read"),
        }
    }
}

/// Notes a `mining.submit` going to the pool, to pair it with its answer.
pub(crate) fn note_request(msg: &Message, conn: &Mutex<Connection>) {
    let Message::Request {
        id,
        method: Method::Submit(submit),
    } = msg
    else {
        return;
    };
    if *id == Id::Null {
        return;
    }
    let mut conn = conn.lock();
    if conn.pending.len() >= MAX_UNANSWERED {
        // A pool that answers no submit would make the tap hold every one of them.
        tracing::warn!(
            unanswered = conn.pending.len(),
            "the pool left this many submits unanswered; the tap stops waiting for them"
        );
        conn.pending.clear();
    }
    let share = (submit.worker.clone(), submit.job_id.clone());
    conn.pending.insert(id.to_string(), share);
}

/// Notes what the pool sent a miner: a job, a difficulty, or the answer to a share.
pub(crate) fn note_answer(
    t: u64,
    msg: &Message,
    connection: u32,
    conn: &Mutex<Connection>,
    recorder: &Recorder,
    stats: &Sv1TapStats,
) {
    match msg {
        Message::Request {
            method: Method::Notify(notify),
            ..
        } => match Job::from_notify(notify) {
            Ok(job) => {
                conn.lock().job_sent(&job.job_id, job.clean);
                stats.tap.jobs_relayed.inc();
                recorder.record_at(
                    t,
                    Event::Sv1JobRelayed {
                        connection,
                        marker_txid: job.marker_txid().map(|m| m.to_string()),
                        job_id: job.job_id,
                        prev_hash: job.prev_hash.to_string(),
                        clean: job.clean,
                    },
                )
            }
            Err(e) => tracing::debug!(error = %e, "a mining.notify the tap cannot read"),
        },
        Message::Request {
            method: Method::SetDifficulty(difficulty),
            ..
        } => {
            let difficulty = *difficulty;
            conn.lock().difficulty = Some(difficulty);
            recorder.record_at(
                t,
                Event::Sv1DifficultySet {
                    connection,
                    difficulty,
                },
            );
        }
        Message::Request { .. } => {}
        Message::Response(answer) => {
            let (worker, job_id, difficulty) = {
                let mut c = conn.lock();
                let Some((worker, job_id)) = c.pending.remove(&answer.id.to_string()) else {
                    return;
                };
                let difficulty = c.share_difficulty(&job_id);
                (worker, job_id, difficulty)
            };
            let (verdict, reason) = answer_verdict(answer);
            stats.tap.count_share(verdict);
            recorder.record_at(
                t,
                Event::ShareJudged {
                    worker,
                    job_id,
                    verdict,
                    block_hash: None,
                    reason,
                    difficulty,
                },
            );
        }
    }
}

/// A pool's answer to `mining.submit` as a verdict, with its error text. Pools word their
/// errors differently (`Stale`, `Job not found`, `Duplicate share`, `Above target`...), so
/// the text decides where it is telling, else the cgminer-era code.
fn answer_verdict(answer: &Response) -> (ShareVerdict, Option<String>) {
    if answer.accepted() {
        return (ShareVerdict::Accepted, None);
    }
    let rejection = answer.rejection().unwrap_or_default();
    let (code, text) = (rejection.code, rejection.message);
    let words = text.as_deref().unwrap_or_default().to_ascii_lowercase();
    let verdict = if words.contains("stale") {
        ShareVerdict::Stale
    } else if words.contains("duplicate") {
        ShareVerdict::Duplicate
    } else if words.contains("low difficulty")
        || words.contains("above target")
        || words.contains("high-hash")
    {
        ShareVerdict::LowDifficulty
    } else if words.contains("job not found") || words.contains("unknown job") {
        ShareVerdict::UnknownJob
    } else {
        match code {
            Some(codes::JOB_NOT_FOUND) => ShareVerdict::UnknownJob,
            Some(codes::DUPLICATE) => ShareVerdict::Duplicate,
            Some(codes::LOW_DIFFICULTY) => ShareVerdict::LowDifficulty,
            _ => ShareVerdict::Invalid,
        }
    };
    let error = &answer.error;
    let reason = text.or_else(|| (!error.is_null()).then(|| error.to_string()));
    (
        verdict,
        reason.or_else(|| Some("rejected without an error".into())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn answer_verdict(answer: &Value) -> (ShareVerdict, Option<String>) {
        match Message::parse(answer.to_string().as_bytes()).unwrap() {
            Message::Response(answer) => super::answer_verdict(&answer),
            other => panic!("not an answer: {other}"),
        }
    }

    #[test]
    fn pools_answers_are_mapped_by_their_words_then_their_codes() {
        let cases = [
            (
                json!({"id": 1, "result": true, "error": null}),
                ShareVerdict::Accepted,
            ),
            (
                json!({"id": 1, "result": null, "error": [21, "Stale job", null]}),
                ShareVerdict::Stale,
            ),
            (
                json!({"id": 1, "result": false, "error": [21, "Job not found", null]}),
                ShareVerdict::UnknownJob,
            ),
            (
                json!({"id": 1, "result": null, "error": [22, "Duplicate share", null]}),
                ShareVerdict::Duplicate,
            ),
            (
                json!({"id": 1, "result": false, "error": {"code": 23, "message": "Low difficulty share"}}),
                ShareVerdict::LowDifficulty,
            ),
            (
                json!({"id": 1, "result": false, "error": "Above target"}),
                ShareVerdict::LowDifficulty,
            ),
            (
                json!({"id": 1, "result": null, "error": [23, "Share rejected", null]}),
                ShareVerdict::LowDifficulty,
            ),
            (
                json!({"id": 1, "result": null, "error": [24, "Unauthorized worker", null]}),
                ShareVerdict::Invalid,
            ),
            (
                json!({"id": 1, "result": false, "error": null}),
                ShareVerdict::Invalid,
            ),
        ];
        for (answer, expected) in cases {
            assert_eq!(answer_verdict(&answer).0, expected, "{answer}");
        }
        assert_eq!(
            answer_verdict(&json!({"id": 1, "result": null, "error": [21, "Stale job", null]})).1,
            Some("Stale job".into())
        );
        assert_eq!(answer_verdict(&json!({"id": 1, "result": true})).1, None);
    }
}
