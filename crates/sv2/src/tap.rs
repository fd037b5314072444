//! A Noise-terminating tap in front of an SV2 pool, where acceptance is decided.
//!
//! SV2 mining traffic is encrypted, and SRI's translator answers its SV1 miners before the
//! pool has judged a share, so the pool's verdicts can only be seen inside the encrypted
//! hop. The tap sits on the pool's site, right in front of the pool: it answers the
//! downstream's Noise handshake with the pool's own authority key (which the run made),
//! opens its own Noise session to the pool, and forwards every frame unchanged. On the way
//! it records each new block the pool announces (SetNewPrevHash, as it passes downstream)
//! and, per channel, each share submitted and the pool's answer:
//! SubmitShares.Success acknowledges every pending share up to its sequence number (a
//! batch), SubmitShares.Error rejects one. What the tap itself adds to each frame is
//! measured and written out at the end.
//!
//! In front of a Job Declarator Server (the pool's, which answers with the pool's key)
//! the same tap records each DeclareMiningJob with the JDS's answer and the time it took,
//! and each ProvideMissingTransactions request. Placed on the farm side of the link, that
//! time is the round trip the JDC waits for.
//!
//! In front of a Template Provider (sv2-tp, with its own authority key) the tap answers
//! the pool with a key the run made and records each template as the pool gets it: a
//! NewTemplate for now at once, a future one with the SetNewPrevHash that activates it.

use anyhow::{Context, Result};
use bitcoin::hashes::Hash;
use parking_lot::Mutex;
use probe::{mono_ns, Event, Histogram, Recorder, ShareVerdict, TapStats};
use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use stratum_apps::key_utils::Secp256k1PublicKey;
use stratum_apps::network_helpers::noise_stream::{
    NoiseTcpReadHalf, NoiseTcpStream, NoiseTcpWriteHalf,
};
use stratum_apps::network_helpers::{accept_noise_connection, connect_with_noise};
use stratum_apps::stratum_core::codec_sv2::{self, SerializedFrame};
use stratum_apps::stratum_core::framing_sv2::header::Header;
use stratum_apps::stratum_core::noise_sv2;
use stratum_apps::stratum_core::parsers_sv2::{JobDeclaration, Mining, TemplateDistribution};
use stratum_apps::utils::protocol_message_type::{protocol_message_type, MessageType};
use stratum_apps::utils::types::OutboundFrame;
use sv2_wire::AuthorityKeys;
use tokio::net::TcpStream;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TapConfig {
    pub listen: SocketAddr,
    pub pool: SocketAddr,
    /// The pool's authority key pair: with it the tap answers downstreams as the pool
    /// would and decodes every frame; without it the tap relays the encrypted stream as
    /// it is and records only its bytes.
    pub keys: Option<AuthorityKeys>,
    /// The upstream's own authority key, when it is not `keys`' (a Template Provider
    /// that made its own): the tap checks it as the pool would have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_public: Option<Secp256k1PublicKey>,
    /// Its connections are numbered from this plus one (a shard's own range).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connection_offset: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The SV2 tap, listening.
pub type Tap = probe::tap::Listening<TapStats>;

/// Starts the SV2 tap of `cfg`.
pub async fn start(cfg: TapConfig, recorder: Recorder) -> Result<Tap> {
    let listen = (cfg.listen, cfg.connection_offset);
    Tap::start(listen, "SV2 tap", TapStats::default(), Arc::clone, {
        move |stream, peer, connection, stats| {
            let (cfg, recorder) = (cfg.clone(), recorder.clone());
            async move { serve(stream, peer, connection, &cfg, &stats, &recorder).await }
        }
    })
    .await
}

/// One downstream's connection: to the pool and relayed until either side ends it; how it
/// ended is logged and recorded.
async fn serve(
    downstream: TcpStream,
    peer: SocketAddr,
    connection: u32,
    cfg: &TapConfig,
    stats: &TapStats,
    recorder: &Recorder,
) {
    let _ = downstream.set_nodelay(true);
    let connect_pool = || stats.connect_pool(cfg.pool, peer, connection, recorder);
    let ended = match &cfg.keys {
        // The handshake first: a client that fails it never costs the pool a connection.
        Some(keys) => {
            match accept_noise_connection(downstream, keys.public, keys.secret, 86_400).await {
                Ok(down) => match connect_pool().await {
                    Some(up) => {
                        let upstream = cfg.upstream_public.unwrap_or(keys.public);
                        relay(down, up, connection, upstream, stats, recorder).await
                    }
                    None => return,
                },
                Err(e) => Err(anyhow::anyhow!("downstream Noise handshake failed: {e}")),
            }
        }
        None => match connect_pool().await {
            Some(up) => relay_encrypted(downstream, up, connection, stats, recorder).await,
            None => return,
        },
    };
    // A JDC falling back, or a JDS going away, shows as its connection ending.
    probe::tap::connection_ended(peer, connection, ended, recorder);
}

/// A share's job id, and its channel's difficulty when it was sent.
type SentShare = (u32, Option<f64>);

/// Requests sent on one connection and not yet answered.
#[derive(Default)]
pub(crate) struct Pending {
    /// Shares: channel -> sequence -> the share.
    shares: Mutex<HashMap<u32, BTreeMap<u32, SentShare>>>,
    /// Channel -> the difficulty of its share target, from the channel's opening and
    /// each SetTarget (which applies to the shares sent after it).
    difficulty: Mutex<HashMap<u32, f64>>,
    /// Declared jobs: request id -> (when it passed, transactions besides the coinbase).
    declarations: Mutex<HashMap<u32, (u64, usize)>>,
    /// Channel -> the job its last SetNewPrevHash activated. The pool numbers a channel's
    /// jobs in order, so a job below it was built on an older tip.
    tip_jobs: Mutex<HashMap<u32, u32>>,
    /// What a Template Provider sent this connection's pool.
    templates: Mutex<TemplatesSent>,
}

/// A Template Provider's templates on one connection: the future ones waiting for their
/// SetNewPrevHash, the tip the last one activated, and whether the pool has work on it.
#[derive(Default)]
struct TemplatesSent {
    future: HashMap<u64, TemplateSeen>,
    prev_hash: Option<String>,
    worked_on: bool,
}

/// What a NewTemplate tells of the block it would make.
struct TemplateSeen {
    height: u32,
    value_sats: u64,
    marker_txid: Option<String>,
}

/// What the handshake puts on the wire: the initiator's ElligatorSwift key (up), and the
/// responder's key, static key and certificate (down).
const HANDSHAKE_UP_BYTES: u64 = noise_sv2::ELLSWIFT_ENCODING_SIZE as u64;
const HANDSHAKE_DOWN_BYTES: u64 = noise_sv2::INITIATOR_EXPECTED_HANDSHAKE_MESSAGE_SIZE as u64;

/// Relays with Noise terminated on both sides (the downstream's handshake done), decoding
/// every frame.
async fn relay(
    down: NoiseTcpStream,
    upstream: TcpStream,
    connection: u32,
    upstream_public: Secp256k1PublicKey,
    stats: &TapStats,
    recorder: &Recorder,
) -> Result<()> {
    let up = connect_with_noise(upstream, Some(upstream_public))
        .await
        .map_err(|e| anyhow::anyhow!("Noise handshake with the pool failed: {e}"))?;
    stats.bytes_up.inc_by(HANDSHAKE_UP_BYTES);
    stats.bytes_down.inc_by(HANDSHAKE_DOWN_BYTES);
    let (down_read, down_write) = down.into_split();
    let (up_read, up_write) = up.into_split();
    let pending = Pending::default();
    let to_pool = pump(
        down_read,
        up_write,
        |frame| note_request(frame, &pending),
        &stats.up_ns,
        &stats.bytes_up,
    );
    let from_pool = pump(
        up_read,
        down_write,
        |frame| note_answer(frame, connection, &pending, recorder, stats),
        &stats.down_ns,
        &stats.bytes_down,
    );
    // Both directions on this one task: a share is noted before its answer can be read.
    // The downstream closing ends ours to the pool, whose answers to the last shares are
    // still read for up to [`probe::tap::DRAIN`].
    tokio::pin!(to_pool, from_pool);
    let ended = tokio::select! {
        ended = &mut to_pool => {
            let _ = tokio::time::timeout(probe::tap::DRAIN, &mut from_pool).await;
            ended.context("from the downstream")
        }
        ended = &mut from_pool => ended.context("from the pool"),
    };
    let unanswered = pending.declarations.lock().len();
    if unanswered > 0 {
        recorder.record(Event::DeclarationsUnanswered { count: unanswered });
    }
    ended
}

/// Forwards frames from `from` to `to`, showing each to `look` first. Once `to` is gone,
/// frames are still read and shown (what the pool answered a miner that left is still
/// its verdict); the end of `from` ends it.
async fn pump(
    mut from: NoiseTcpReadHalf,
    mut to: NoiseTcpWriteHalf,
    mut look: impl FnMut(&mut SerializedFrame),
    added_ns: &Histogram,
    bytes: &Counter,
) -> Result<()> {
    let mut write_failed = None;
    loop {
        let mut frame = match from.read_frame().await {
            Ok(frame) => frame,
            Err(e) => {
                return Err(match write_failed {
                    Some(w) => anyhow::anyhow!("write: {w}"),
                    None => anyhow::anyhow!("read: {e}"),
                })
            }
        };
        let t_in = mono_ns();
        let header = frame.header();
        look(&mut frame);
        if write_failed.is_none() {
            match to.write_frame(OutboundFrame::Raw(frame)).await {
                Ok(()) => {
                    added_ns.record(mono_ns().saturating_sub(t_in));
                    bytes.inc_by(wire_bytes(&header));
                }
                Err(e) => write_failed = Some(e),
            }
        }
    }
}

/// A frame's size on the wire: its encrypted header, and its payload encrypted in chunks,
/// each with its MAC.
fn wire_bytes(header: &Header) -> u64 {
    (codec_sv2::ENCRYPTED_SV2_FRAME_HEADER_SIZE + codec_sv2::encrypted_payload_length(header))
        as u64
}

/// Relays the encrypted stream as it is (no key: nothing to decode), recording each read.
async fn relay_encrypted(
    downstream: TcpStream,
    upstream: TcpStream,
    connection: u32,
    stats: &TapStats,
    recorder: &Recorder,
) -> Result<()> {
    let (down_read, down_write) = downstream.into_split();
    let (up_read, up_write) = upstream.into_split();
    let to_pool = copy_reads(down_read, up_write, true, connection, stats, recorder);
    let from_pool = copy_reads(up_read, down_write, false, connection, stats, recorder);
    tokio::select! {
        ended = to_pool => ended.context("from the downstream"),
        ended = from_pool => ended.context("from the pool"),
    }
}

/// Copies `from` to `to` read by read, recording each read's size as it arrives.
async fn copy_reads(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    up: bool,
    connection: u32,
    stats: &TapStats,
    recorder: &Recorder,
) -> Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (added_ns, bytes) = match up {
        true => (&stats.up_ns, &stats.bytes_up),
        false => (&stats.down_ns, &stats.bytes_down),
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).await.context("read")?;
        if n == 0 {
            return Ok(());
        }
        let t_in = mono_ns();
        to.write_all(&buf[..n]).await.context("write")?;
        added_ns.record(mono_ns().saturating_sub(t_in));
        bytes.inc_by(n as u64);
        recorder.record_at(
            t_in,
            Event::EncryptedRead {
                connection,
                up,
                bytes: n,
            },
        );
    }
}

/// The frame's message decoded as `T`, when it is of protocol `kind`.
fn decoded<'a, T>(frame: &'a mut SerializedFrame, kind: MessageType) -> Option<T>
where
    T: TryFrom<(u8, &'a mut [u8])>,
{
    let header = frame.header();
    if protocol_message_type(header.ext_type(), header.msg_type()) != kind {
        return None;
    }
    T::try_from((header.msg_type(), frame.payload())).ok()
}

/// Notes a request going upstream: a share, or a declared job.
pub(crate) fn note_request(frame: &mut SerializedFrame, pending: &Pending) {
    if let Some(JobDeclaration::DeclareMiningJob(d)) =
        decoded::<JobDeclaration>(frame, MessageType::JobDeclaration)
    {
        pending
            .declarations
            .lock()
            .insert(d.request_id, (mono_ns(), d.wtxid_list.len()));
        return;
    }
    let (channel, sequence, job) = match decoded::<Mining>(frame, MessageType::Mining) {
        Some(Mining::SubmitSharesExtended(s)) => (s.channel_id, s.sequence_number, s.job_id),
        Some(Mining::SubmitSharesStandard(s)) => (s.channel_id, s.sequence_number, s.job_id),
        _ => return,
    };
    let difficulty = pending.difficulty.lock().get(&channel).copied();
    pending
        .shares
        .lock()
        .entry(channel)
        .or_default()
        .insert(sequence, (job, difficulty));
}

/// Records the JDS's answer to a declared job, or its request for transactions.
fn note_declaration_answer(
    message: JobDeclaration<'_>,
    connection: u32,
    pending: &Pending,
    recorder: &Recorder,
) {
    let t = mono_ns();
    let (request_id, error) = match message {
        JobDeclaration::DeclareMiningJobSuccess(s) => (s.request_id, None),
        JobDeclaration::DeclareMiningJobError(e) => (
            e.request_id,
            Some(String::from_utf8_lossy(e.error_code.as_ref()).to_string()),
        ),
        JobDeclaration::ProvideMissingTransactions(p) => {
            recorder.record_at(
                t,
                Event::MissingTransactionsRequested {
                    connection,
                    request_id: p.request_id,
                    count: p.unknown_tx_position_list.len(),
                },
            );
            return;
        }
        _ => return,
    };
    let Some((sent, tx_count)) = pending.declarations.lock().remove(&request_id) else {
        return;
    };
    recorder.record_at(
        t,
        Event::JobDeclared {
            connection,
            request_id,
            tx_count,
            round_trip_ms: (t - sent) as f64 / 1e6,
            error,
        },
    );
}

pub(crate) fn note_answer(
    frame: &mut SerializedFrame,
    connection: u32,
    pending: &Pending,
    recorder: &Recorder,
    stats: &TapStats,
) {
    if let Some(message) = decoded::<JobDeclaration>(frame, MessageType::JobDeclaration) {
        return note_declaration_answer(message, connection, pending, recorder);
    }
    if let Some(message) = decoded::<TemplateDistribution>(frame, MessageType::TemplateDistribution)
    {
        return note_template(message, pending, recorder);
    }
    let t = mono_ns();
    let set_target = |channel: u32, target: &[u8]| {
        if let Some(d) = target_difficulty(target) {
            pending.difficulty.lock().insert(channel, d);
        }
    };
    // A job is counted, and recorded when the channel works on it now (a future job
    // becomes work with its SetNewPrevHash, recorded as that).
    let job_relayed = |channel: u32, job_id: u32, future: bool| {
        stats.jobs_relayed.inc();
        if !future {
            let event = Event::Sv2JobRelayed {
                connection,
                channel,
                job_id,
            };
            recorder.record_at(t, event);
        }
    };
    type Judged = (u32, SentShare, ShareVerdict, Option<String>);
    let judged: Vec<Judged> = match decoded::<Mining>(frame, MessageType::Mining) {
        Some(Mining::OpenStandardMiningChannelSuccess(m)) => {
            return set_target(m.channel_id, m.target.as_ref());
        }
        Some(Mining::OpenExtendedMiningChannelSuccess(m)) => {
            return set_target(m.channel_id, m.target.as_ref());
        }
        Some(Mining::SetTarget(m)) => {
            return set_target(m.channel_id, m.maximum_target.as_ref());
        }
        Some(Mining::NewMiningJob(j)) => {
            return job_relayed(j.channel_id, j.job_id, j.is_future());
        }
        Some(Mining::NewExtendedMiningJob(j)) => {
            return job_relayed(j.channel_id, j.job_id, j.is_future());
        }
        Some(Mining::SetNewPrevHash(p)) => {
            pending.tip_jobs.lock().insert(p.channel_id, p.job_id);
            let prev = bitcoin::BlockHash::from_byte_array(
                p.prev_hash.as_ref().try_into().expect("32 bytes"),
            );
            recorder.record_at(
                t,
                Event::NewPrevHashRelayed {
                    connection,
                    channel: p.channel_id,
                    prev_hash: prev.to_string(),
                },
            );
            return;
        }
        Some(Mining::SubmitSharesSuccess(s)) => {
            let mut pending = pending.shares.lock();
            let Some(channel) = pending.get_mut(&s.channel_id) else {
                return;
            };
            let acked = acknowledge(channel, s.last_sequence_number);
            if acked.len() != s.new_submits_accepted_count as usize {
                tracing::debug!(
                    channel = s.channel_id,
                    acknowledged = s.new_submits_accepted_count,
                    pending = acked.len(),
                    "a batch acknowledgement covers a different number of shares than were pending"
                );
            }
            acked
                .into_iter()
                .map(|share| (s.channel_id, share, ShareVerdict::Accepted, None))
                .collect()
        }
        Some(Mining::SubmitSharesError(e)) => {
            let code = String::from_utf8_lossy(e.error_code.as_ref()).to_string();
            let job = pending
                .shares
                .lock()
                .get_mut(&e.channel_id)
                .and_then(|c| c.remove(&e.sequence_number));
            let Some(share) = job else { return };
            let tip_job = pending.tip_jobs.lock().get(&e.channel_id).copied();
            let verdict = error_verdict(&code, share.0, tip_job);
            vec![(e.channel_id, share, verdict, Some(code))]
        }
        _ => return,
    };
    for (channel, (job, difficulty), verdict, reason) in judged {
        stats.count_share(verdict);
        recorder.record_at(
            t,
            Event::ShareJudged {
                worker: format!("connection-{connection}/channel-{channel}"),
                job_id: job.to_string(),
                verdict,
                block_hash: None,
                reason,
                difficulty,
            },
        );
    }
}

/// Records a template as the pool gets it from its Template Provider.
fn note_template(message: TemplateDistribution<'_>, pending: &Pending, recorder: &Recorder) {
    let t = mono_ns();
    let news = match message {
        TemplateDistribution::NewTemplate(n) => TemplateNews::Template {
            id: n.template_id,
            future: n.future_template,
            seen: TemplateSeen {
                height: bip34_height(n.coinbase_prefix.as_ref()).unwrap_or_else(|| {
                    tracing::debug!(
                        template = n.template_id,
                        "no BIP34 height in the coinbase prefix; recorded as 0"
                    );
                    0
                }),
                value_sats: n.coinbase_tx_value_remaining,
                marker_txid: (n.merkle_path.iter().next())
                    .and_then(|m| <[u8; 32]>::try_from(m.as_ref()).ok())
                    .map(|m| bitcoin::Txid::from_byte_array(m).to_string()),
            },
        },
        TemplateDistribution::SetNewPrevHash(p) => TemplateNews::Tip {
            id: p.template_id,
            prev_hash: bitcoin::BlockHash::from_byte_array(
                p.prev_hash.as_ref().try_into().expect("32 bytes"),
            )
            .to_string(),
        },
        _ => return,
    };
    let Some((seen, prev_hash, reason)) = pending.templates.lock().take(news) else {
        return;
    };
    recorder.record_at(
        t,
        Event::PoolTemplate {
            height: seen.height,
            prev_hash,
            value_sats: seen.value_sats,
            marker_txid: seen.marker_txid,
            reason: reason.into(),
        },
    );
}

/// A Template Provider's message, as far as the pool's work goes.
enum TemplateNews {
    Template {
        id: u64,
        future: bool,
        seen: TemplateSeen,
    },
    Tip {
        id: u64,
        prev_hash: String,
    },
}

impl TemplatesSent {
    /// The template the pool can work on now, if `news` gives it one: a template for now
    /// at once (on the tip last activated), a future one when its SetNewPrevHash comes;
    /// with its tip and why: `new_tip` for the first on a tip, `refresh` after it.
    fn take(&mut self, news: TemplateNews) -> Option<(TemplateSeen, String, &'static str)> {
        match news {
            TemplateNews::Template {
                id,
                future: true,
                seen,
            } => {
                self.future.insert(id, seen);
                None
            }
            TemplateNews::Template { seen, .. } => {
                let prev_hash = self.prev_hash.clone()?;
                let why = if self.worked_on { "refresh" } else { "new_tip" };
                self.worked_on = true;
                Some((seen, prev_hash, why))
            }
            TemplateNews::Tip { id, prev_hash } => {
                let same_tip = self.prev_hash.as_ref() == Some(&prev_hash);
                self.prev_hash = Some(prev_hash.clone());
                let seen = self.future.remove(&id);
                // Futures on the old tip are of no use now.
                self.future.clear();
                self.worked_on = seen.is_some() || (same_tip && self.worked_on);
                Some((seen?, prev_hash, "new_tip"))
            }
        }
    }
}

/// The block height a coinbase's script starts with (BIP34): a small number's opcode, or
/// a push of up to 4 little-endian bytes.
fn bip34_height(prefix: &[u8]) -> Option<u32> {
    match *prefix.first()? {
        op @ 0x51..=0x60 => Some(u32::from(op - 0x50)),
        len @ 1..=4 => {
            let bytes = prefix.get(1..=usize::from(len))?;
            Some(bytes.iter().rev().fold(0, |h, b| h << 8 | u32::from(*b)))
        }
        _ => None,
    }
}

/// The shares a SubmitShares.Success acknowledges: every one pending on the channel up to
/// `last_sequence` (a batch), in sequence order; the later ones stay pending.
fn acknowledge(channel: &mut BTreeMap<u32, SentShare>, last_sequence: u32) -> Vec<SentShare> {
    let acked = match last_sequence.checked_add(1) {
        Some(next) => {
            let rest = channel.split_off(&next);
            std::mem::replace(channel, rest)
        }
        None => std::mem::take(channel),
    };
    acked.into_values().collect()
}

/// A SubmitShares.Error as a verdict. The pool forgets a channel's jobs at a new tip and
/// answers a late share on one with `invalid-job-id`: stale, as SV1 pools and the
/// built-in pool say, when the job is older than the one the channel's last
/// SetNewPrevHash activated (the pool numbers a channel's jobs in order).
fn error_verdict(code: &str, job: u32, tip_job: Option<u32>) -> ShareVerdict {
    if code == "invalid-job-id" && tip_job.is_some_and(|tip| job < tip) {
        ShareVerdict::Stale
    } else {
        verdict_of(code)
    }
}

/// The share difficulty of a little-endian U256 target as the mining protocol carries it
/// (1 is the `1d00ffff` target).
fn target_difficulty(target: &[u8]) -> Option<f64> {
    let le = <[u8; 32]>::try_from(target).ok()?;
    Some(bitcoin::Target::from_le_bytes(le).difficulty_float())
}

/// The pool's error code as a verdict (codes of the SV2 mining protocol).
fn verdict_of(code: &str) -> ShareVerdict {
    match code {
        "stale-share" => ShareVerdict::Stale,
        "duplicate-share" => ShareVerdict::Duplicate,
        "difficulty-too-low" => ShareVerdict::LowDifficulty,
        "invalid-job-id" => ShareVerdict::UnknownJob,
        _ => ShareVerdict::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_the_pools_work_when_its_tip_is_known() {
        let seen = |height| TemplateSeen {
            height,
            value_sats: 312_500_000,
            marker_txid: None,
        };
        let mut sent = TemplatesSent::default();
        // A template for now before any tip: nothing to work on yet.
        let now = |id, height| TemplateNews::Template {
            id,
            future: false,
            seen: seen(height),
        };
        assert!(sent.take(now(1, 100)).is_none());
        // A future template waits for its SetNewPrevHash, which makes it the work.
        let future = |id, height| TemplateNews::Template {
            id,
            future: true,
            seen: seen(height),
        };
        assert!(sent.take(future(2, 101)).is_none());
        assert!(sent.take(future(3, 101)).is_none());
        let tip = |id, prev: &str| TemplateNews::Tip {
            id,
            prev_hash: prev.into(),
        };
        let (work, prev, why) = sent.take(tip(3, "P")).expect("the future template");
        assert_eq!((work.height, prev.as_str(), why), (101, "P", "new_tip"));
        // The other future one is gone with the old tip.
        assert!(sent.take(tip(2, "P")).is_none());
        // A refresh is on the tip last activated.
        let (work, prev, why) = sent.take(now(4, 101)).expect("a refresh");
        assert_eq!((work.height, prev.as_str(), why), (101, "P", "refresh"));
        // A SetNewPrevHash naming no future template still moves the tip, and the first
        // template for now on it is the pool's first work there.
        assert!(sent.take(tip(9, "Q")).is_none());
        let (_, prev, why) = sent.take(now(10, 102)).expect("work on Q");
        assert_eq!((prev.as_str(), why), ("Q", "new_tip"));
        assert_eq!(sent.take(now(11, 102)).map(|w| w.2), Some("refresh"));
    }

    #[test]
    fn the_height_is_read_from_the_coinbase_prefix() {
        // 880,001 = 0x0d6d81, pushed as 3 little-endian bytes.
        assert_eq!(bip34_height(&[3, 0x81, 0x6d, 0x0d, 0xff]), Some(880_001));
        assert_eq!(bip34_height(&[0x51]), Some(1));
        assert_eq!(bip34_height(&[0x60]), Some(16));
        assert_eq!(bip34_height(&[1, 17]), Some(17));
        assert_eq!(bip34_height(&[3, 1]), None, "a push longer than the prefix");
        assert_eq!(bip34_height(&[]), None);
    }

    #[test]
    fn a_success_acknowledges_every_pending_share_up_to_its_sequence() {
        let mut channel: BTreeMap<u32, SentShare> = [
            (1, (10, Some(1.0))),
            (2, (10, Some(1.0))),
            (3, (11, Some(2.0))),
            (5, (11, Some(2.0))),
        ]
        .into();
        // A batch of three: 1, 2, 3; 5 waits for its own answer.
        assert_eq!(
            acknowledge(&mut channel, 3),
            vec![(10, Some(1.0)), (10, Some(1.0)), (11, Some(2.0))]
        );
        assert_eq!(channel.keys().copied().collect::<Vec<_>>(), vec![5]);
        // Nothing pending below the sequence: nothing acknowledged twice.
        assert!(acknowledge(&mut channel, 4).is_empty());
        assert_eq!(acknowledge(&mut channel, 5), vec![(11, Some(2.0))]);
        // The last sequence number takes all that is left (no wrap to zero).
        let mut last: BTreeMap<u32, SentShare> =
            [(u32::MAX - 1, (1, None)), (u32::MAX, (1, None))].into();
        assert_eq!(acknowledge(&mut last, u32::MAX).len(), 2);
    }

    #[test]
    fn invalid_job_id_for_a_job_before_the_tip_is_stale() {
        assert_eq!(
            error_verdict("invalid-job-id", 4, Some(5)),
            ShareVerdict::Stale
        );
        // On the current tip's jobs, or with no tip seen, it is an unknown job.
        assert_eq!(
            error_verdict("invalid-job-id", 5, Some(5)),
            ShareVerdict::UnknownJob
        );
        assert_eq!(
            error_verdict("invalid-job-id", 4, None),
            ShareVerdict::UnknownJob
        );
        assert_eq!(
            error_verdict("stale-share", 9, Some(5)),
            ShareVerdict::Stale
        );
        assert_eq!(
            error_verdict("difficulty-too-low", 4, Some(5)),
            ShareVerdict::LowDifficulty
        );
    }

    #[test]
    fn a_channel_target_is_its_share_difficulty() {
        // 0x00000000ffff0000...: difficulty 1, little-endian on the wire.
        let mut be = [0u8; 32];
        be[4] = 0xff;
        be[5] = 0xff;
        let mut le = be;
        le.reverse();
        assert_eq!(target_difficulty(&le), Some(1.0));
        // Half the target, twice the difficulty.
        be[4] = 0x7f;
        be[5] = 0xff;
        be[6] = 0x80;
        let mut le = be;
        le.reverse();
        assert!((target_difficulty(&le).unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(target_difficulty(&[0u8; 31]), None);
    }
}
