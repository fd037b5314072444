//! A fleet of SV1 miners in one process.
//!
//! Each miner is its own TCP connection and speaks SV1 as firmware does (subscribe,
//! authorize, then work). Hashing is real SHA256d over real headers, throttled to each
//! miner's configured hashrate by a few shared hashing threads, so shares are genuine and
//! arrive at the rate the share difficulty implies. Every job received, share sent and
//! answer got is recorded where it happens. It works against any SV1 pool.

use crate::job::Job;
use crate::wire::{read_line, write_message};
use anyhow::Result;
use bitcoin::{BlockHash, Target};
use mining::farm::{AbortOnDrop, Failover, PoolChoice, SessionEnd};
use probe::{mono_ns, Event, Recorder};
use std::net::SocketAddr;
use std::sync::Arc;
use sv1_wire::{Message, Method, Response, Submit};
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FleetConfig {
    pub pool: SocketAddr,
    #[serde(flatten)]
    pub machines: mining::farm::Machines,
    /// Workers are named `<prefix>.<index>`.
    pub worker_prefix: String,
    /// Also take jobs from datagrams the pool broadcasts to this address (every miner
    /// listens on it, as every device on a farm's LAN would); the TCP copy that follows
    /// is the fallback, and a job already taken is not taken twice.
    #[serde(default)]
    pub broadcast: Option<SocketAddr>,
    /// Ask the pool for this share difficulty (`mining.suggest_difficulty`, between
    /// subscribe and authorize, as ESP-Miner and other firmwares do): how every side gets
    /// the same shares per minute from a pool that would otherwise start its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest_difficulty: Option<f64>,
    /// The backup pool each miner turns to after `reconnect.failover_after` failures in a
    /// row (firmware's fallback pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<SocketAddr>,
}

impl FleetConfig {
    /// Where `choice` is.
    fn address(&self, choice: PoolChoice) -> SocketAddr {
        match (choice, self.backup) {
            (PoolChoice::Backup, Some(backup)) => backup,
            _ => self.pool,
        }
    }
}

/// A share a hashing thread found, for its miner's connection to send.
pub(crate) struct Found {
    job_id: String,
    prev_hash: BlockHash,
    extranonce2: Vec<u8>,
    ntime: u32,
    nonce: u32,
    block_hash: Option<BlockHash>,
}

/// What one miner is hashing on.
pub(crate) struct Work {
    job: Job,
    extranonce1: Vec<u8>,
    extranonce2_size: usize,
    extranonce2: u64,
    share_target: Target,
    block_target: Target,
    scanner: mining::HeaderScanner,
}

impl Work {
    fn new(
        job: Job,
        extranonce1: Vec<u8>,
        extranonce2_size: usize,
        extranonce2: u64,
        share_target: Target,
    ) -> Work {
        let block_target = Target::from_compact(job.bits);
        let header = Self::header(&job, &extranonce1, extranonce2_size, extranonce2);
        Work {
            job,
            extranonce1,
            extranonce2_size,
            extranonce2,
            share_target,
            block_target,
            scanner: mining::HeaderScanner::new(&header),
        }
    }

    fn extranonce2_bytes(size: usize, extranonce2: u64) -> Vec<u8> {
        extranonce2.to_be_bytes()[8 - size.min(8)..].to_vec()
    }

    fn header(
        job: &Job,
        extranonce1: &[u8],
        extranonce2_size: usize,
        extranonce2: u64,
    ) -> bitcoin::block::Header {
        let extranonce2 = Self::extranonce2_bytes(extranonce2_size, extranonce2);
        job.header(extranonce1, &extranonce2, job.ntime, 0, job.version)
    }
}

impl mining::hashing::Work for Work {
    type Share = Found;

    fn hash(&mut self, n: u64, found: &mut Vec<Found>) {
        for _ in 0..n {
            if self.scanner.exhausted() {
                self.extranonce2 += 1;
                let header = Self::header(
                    &self.job,
                    &self.extranonce1,
                    self.extranonce2_size,
                    self.extranonce2,
                );
                self.scanner = mining::HeaderScanner::new(&header);
            }
            let Some((nonce, hash)) = self.scanner.next() else {
                continue;
            };
            if self.share_target.is_met_by(hash) {
                found.push(Found {
                    job_id: self.job.job_id.clone(),
                    prev_hash: self.job.prev_hash,
                    extranonce2: Self::extranonce2_bytes(self.extranonce2_size, self.extranonce2),
                    ntime: self.job.ntime,
                    nonce,
                    block_hash: self.block_target.is_met_by(hash).then_some(hash),
                });
            }
        }
    }
}

pub(crate) type Slot = mining::hashing::Slot<Work>;

/// The fleet, mining until stopped.
pub type FleetHandle = mining::hashing::Fleet;

/// Starts the fleet `cfg` describes, recording into `recorder`.
pub fn start(cfg: FleetConfig, recorder: Recorder) -> Result<FleetHandle> {
    let m = &cfg.machines;
    let (miners, ramp, threads, rates) = (m.miners, m.ramp, m.hash_threads, m.hashrates());
    // One config for every miner: it holds each miner's draws, so a copy a miner would
    // grow the fleet's memory with the square of its miners.
    let cfg = Arc::new(cfg);
    FleetHandle::start(miners, ramp, threads, rates, |index, slot, shares, stop| {
        run_miner(index, cfg.clone(), slot, shares, recorder.clone(), stop)
    })
}

/// One miner, for as long as the fleet runs: a session with its pool, and another after
/// each it loses, as firmware reconnects (`mining::farm::reconnecting`).
async fn run_miner(
    index: u32,
    cfg: Arc<FleetConfig>,
    slot: Arc<Slot>,
    shares: mpsc::UnboundedReceiver<Found>,
    recorder: Recorder,
    mut stop: watch::Receiver<bool>,
) {
    let (reconnect, has_backup) = (cfg.machines.reconnect, cfg.backup.is_some());
    let mut sessions = Sessions {
        index,
        cfg,
        slot,
        recorder: recorder.clone(),
        shares,
        miner: MinerState::new(index),
    };
    let life = mining::farm::reconnecting(index, &reconnect, has_backup, &recorder, &mut sessions);
    tokio::select! {
        _ = life => {}
        _ = stop.changed() => {}
    }
}

/// One miner's sessions with its pool.
struct Sessions {
    index: u32,
    cfg: Arc<FleetConfig>,
    slot: Arc<Slot>,
    recorder: Recorder,
    shares: mpsc::UnboundedReceiver<Found>,
    miner: MinerState,
}

impl mining::farm::Sessions for Sessions {
    async fn session(&mut self, failover: &mut Failover) -> SessionEnd {
        let index = self.index;
        let stream = match TcpStream::connect(self.cfg.address(failover.pool())).await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(miner = index, error = %e, "cannot connect; retrying");
                return SessionEnd::Refused;
            }
        };
        // What was found for a session that ended is never sent (firmware clears its
        // queue when it reconnects), and nothing is found before the new session's job.
        let unsent = std::iter::from_fn(|| self.shares.try_recv().ok()).count();
        if unsent > 0 {
            tracing::debug!(miner = index, unsent, "shares found without a pool");
        }
        self.miner = MinerState {
            next_share_id: self.miner.next_share_id,
            ..MinerState::new(index)
        };
        let ended = self.mine(stream, failover).await;
        // Without a pool the job is dead: nothing to hash until the next one.
        self.slot.set(None);
        ended
    }
}

/// Whether the pool at `pool` serves work: a `mining.notify` within the check's time of
/// subscribing and authorizing as `worker` (ESP-Miner's heartbeat of its primary).
async fn serves_work(pool: SocketAddr, worker: String) -> bool {
    let check = async {
        let stream = TcpStream::connect(pool).await.ok()?;
        let (read, mut write) = stream.into_split();
        write_message(&mut write, &subscribe()).await.ok()?;
        write_message(&mut write, &authorize(&worker)).await.ok()?;
        let mut read = BufReader::new(read);
        let mut line = Vec::new();
        loop {
            read_line(&mut read, &mut line).await.ok()?;
            if let Ok(Message::Request {
                method: Method::Notify(_),
                ..
            }) = Message::parse(&line)
            {
                return Some(());
            }
            line.clear();
        }
    };
    tokio::time::timeout(mining::farm::PRIMARY_CHECK_TIMEOUT, check)
        .await
        .ok()
        .flatten()
        .is_some()
}

/// A miner's first words to its pool, as firmware's (their ids are what [`MinerState`]
/// knows their answers by).
fn subscribe() -> Message {
    let method = Method::Subscribe {
        user_agent: Some("stratum-bench/0.1".into()),
    };
    Message::Request {
        id: 1.into(),
        method,
    }
}

fn authorize(worker: &str) -> Message {
    let method = Method::Authorize {
        worker: worker.to_string(),
        password: Some("x".into()),
    };
    Message::Request {
        id: 2.into(),
        method,
    }
}

impl Sessions {
    /// Subscribes, authorizes and mines on `stream` until the connection ends, the pool
    /// is silent for `reconnect.silence`, or, on the backup, the primary serves again.
    async fn mine(&mut self, stream: TcpStream, failover: &mut Failover) -> SessionEnd {
        let Sessions {
            index,
            cfg,
            slot,
            recorder,
            shares,
            miner,
        } = self;
        let index = *index;
        let _ = stream.set_nodelay(true);
        let (read, mut write) = stream.into_split();
        let worker = format!("{}.{index}", cfg.worker_prefix);
        let broadcast = match cfg.broadcast.map(broadcast_listener).transpose() {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(
                    miner = index,
                    error = format!("{e:#}"),
                    "cannot listen for job broadcasts"
                );
                return SessionEnd::CannotMine;
            }
        };
        // Both ways across the farm's LAN: what the pool sends reaches the miner, and what the
        // miner sends leaves for the pool, this much later.
        let lan = cfg.machines.per_miner.lan_delay(index);
        let (incoming_tx, incoming) = mpsc::unbounded_channel();
        let _listeners = AbortOnDrop(
            [
                Some(tokio::spawn(read_lines(read, incoming_tx.clone()))),
                broadcast.map(|socket| tokio::spawn(read_datagrams(socket, incoming_tx))),
            ]
            .into_iter()
            .flatten()
            .collect(),
        );
        let mut incoming = mining::farm::lan_hop(incoming, lan, mono_ns);
        let (outgoing_tx, outgoing) = mpsc::unbounded_channel();
        let mut outgoing = mining::farm::lan_hop(outgoing, lan, mono_ns);
        let suggest = (cfg.suggest_difficulty).map(|d| Message::Request {
            id: 3.into(),
            method: Method::SuggestDifficulty(d),
        });
        let hellos = [Some(subscribe()), suggest, Some(authorize(&worker))];
        for hello in hellos.into_iter().flatten() {
            let _ = outgoing_tx.send((mono_ns(), hello));
        }
        let silence = tokio::time::sleep(cfg.machines.reconnect.silence);
        tokio::pin!(silence);
        let every = cfg.machines.reconnect.primary_check_every;
        let check = || serves_work(cfg.pool, worker.clone());
        let primary_back = mining::farm::primary_back(failover.pool(), every, check);
        tokio::pin!(primary_back);
        let ended = loop {
            tokio::select! {
                Some((t, message)) = incoming.recv() => match message {
                    FromPool::Message(bytes) => {
                        silence.as_mut().reset(tokio::time::Instant::now() + cfg.machines.reconnect.silence);
                        failover.answered();
                        miner.handle(&bytes, t, slot, recorder)
                    }
                    FromPool::Closed(e) => {
                        tracing::info!(miner = index, error = %e, "pool connection ended");
                        break SessionEnd::Lost;
                    }
                },
                _ = &mut silence => {
                    tracing::info!(miner = index, "the pool is silent; connecting again");
                    break SessionEnd::Lost;
                }
                Some(share) = shares.recv() => {
                    let id = miner.next_share_id;
                    miner.next_share_id += 1;
                    let msg = Message::Request {
                        id: id.into(),
                        method: Method::Submit(Submit {
                            worker: worker.clone(),
                            job_id: share.job_id.clone(),
                            extranonce2: hex::encode(&share.extranonce2),
                            ntime: format!("{:08x}", share.ntime),
                            nonce: format!("{:08x}", share.nonce),
                            version_bits: None,
                        }),
                    };
                    recorder.record(Event::ShareSubmitted {
                        miner: index,
                        share_id: id,
                        job_id: share.job_id,
                        prev_hash: share.prev_hash.to_string(),
                        block_hash: share.block_hash.map(|h| h.to_string()),
                    });
                    let _ = outgoing_tx.send((mono_ns(), msg));
                }
                Some((_, msg)) = outgoing.recv() => {
                    if write_message(&mut write, &msg).await.is_err() {
                        break SessionEnd::Lost;
                    }
                }
                _ = &mut primary_back => {
                    tracing::info!(miner = index, "the primary serves work again");
                    break SessionEnd::PrimaryBack;
                }
            }
        };
        ended
    }
}

/// What reaches a miner from its pool, with the moment it did.
enum FromPool {
    /// A line over TCP, or a job datagram broadcast on the farm's LAN.
    Message(Vec<u8>),
    Closed(crate::wire::ReadError),
}

/// The pool's lines, each stamped as it is read (a line read cannot be cancelled halfway,
/// so it has its own task).
async fn read_lines(
    read: tokio::net::tcp::OwnedReadHalf,
    to: mpsc::UnboundedSender<(u64, FromPool)>,
) {
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        let got = read_line(&mut read, &mut line).await;
        let t = mono_ns();
        let message = match got {
            Ok(()) => FromPool::Message(std::mem::take(&mut line)),
            Err(e) => FromPool::Closed(e),
        };
        let closed = matches!(message, FromPool::Closed(_));
        if to.send((t, message)).is_err() || closed {
            return;
        }
    }
}

/// The job datagrams broadcast on the farm's LAN, each stamped as it is received.
async fn read_datagrams(socket: tokio::net::UdpSocket, to: mpsc::UnboundedSender<(u64, FromPool)>) {
    let mut datagram = vec![0u8; 65536];
    while let Ok(n) = socket.recv(&mut datagram).await {
        if to
            .send((mono_ns(), FromPool::Message(datagram[..n].to_vec())))
            .is_err()
        {
            return;
        }
    }
}

/// A UDP socket on the broadcast address, shared with the other miners listening there.
fn broadcast_listener(addr: SocketAddr) -> anyhow::Result<tokio::net::UdpSocket> {
    use anyhow::Context;
    let socket = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket
        .bind(&addr.into())
        .with_context(|| format!("cannot bind the broadcast address {addr}"))?;
    Ok(tokio::net::UdpSocket::from_std(socket.into())?)
}

pub(crate) struct MinerState {
    index: u32,
    /// The job being mined: a broadcast job arriving again over TCP is not new work.
    current_job: Option<String>,
    extranonce1: Option<Vec<u8>>,
    extranonce2_size: usize,
    next_extranonce2: u64,
    share_target: Target,
    next_share_id: u64,
}

impl MinerState {
    pub(crate) fn new(index: u32) -> MinerState {
        MinerState {
            index,
            extranonce1: None,
            extranonce2_size: 8,
            next_extranonce2: u64::from(index) << 32,
            share_target: mining::target_from_difficulty(1.0),
            next_share_id: 100,
            current_job: None,
        }
    }

    pub(crate) fn handle(&mut self, line: &[u8], t: u64, slot: &Slot, recorder: &Recorder) {
        let method = match Message::parse(line) {
            Ok(Message::Request { method, .. }) => method,
            Ok(Message::Response(answer)) => return self.reply(&answer, t, recorder),
            Err(e) => {
                tracing::warn!(miner = self.index, error = %e, "unreadable line from the pool");
                return;
            }
        };
        match method {
            Method::Notify(notify) => {
                let job = match Job::from_notify(&notify) {
                    Ok(j) => j,
                    Err(e) => {
                        tracing::warn!(miner = self.index, error = %e, "bad mining.notify");
                        return;
                    }
                };
                if self.current_job.as_ref() == Some(&job.job_id) {
                    return;
                }
                self.current_job = Some(job.job_id.clone());
                recorder.record_at(
                    t,
                    Event::JobReceived {
                        miner: self.index,
                        job_id: job.job_id.clone(),
                        prev_hash: job.prev_hash.to_string(),
                        marker_txid: job.marker_txid().map(|m| m.to_string()),
                        clean: job.clean,
                        work_id: Some(mining::work_id(&job.prev_hash, &job.merkle_branch)),
                    },
                );
                let Some(extranonce1) = self.extranonce1.clone() else {
                    return;
                };
                self.next_extranonce2 += 1;
                let work = Work::new(
                    job,
                    extranonce1,
                    self.extranonce2_size,
                    self.next_extranonce2,
                    self.share_target,
                );
                slot.set(Some(work));
            }
            Method::SetDifficulty(d) if d > 0.0 => {
                self.share_target = mining::target_from_difficulty(d);
                let target = self.share_target;
                slot.with(|w| w.share_target = target);
            }
            _ => {}
        }
    }

    fn reply(&mut self, answer: &Response, t: u64, recorder: &Recorder) {
        match answer.id.as_u64() {
            Some(1) => {
                let subscribed = answer.subscribed();
                self.extranonce1 =
                    (subscribed.as_ref()).and_then(|s| hex::decode(&s.extranonce1).ok());
                self.extranonce2_size =
                    subscribed.map_or(8, |s| s.extranonce2_size.clamp(1, 8) as usize);
                if self.extranonce1.is_none() {
                    tracing::warn!(miner = self.index, "subscribe reply without extranonce1");
                }
            }
            Some(2) if !answer.accepted() => {
                tracing::warn!(miner = self.index, reply = %answer, "authorization refused");
            }
            // A pool may set the difficulty instead of answering (public-pool does).
            Some(3) if answer.error.is_object() || answer.error.is_array() => {
                tracing::warn!(miner = self.index, reply = %answer, "suggested difficulty refused");
            }
            Some(id) if id >= 100 => {
                let accepted = answer.accepted();
                let error = (!accepted).then(|| answer.error.to_string());
                recorder.record_at(
                    t,
                    Event::ShareAnswered {
                        miner: self.index,
                        share_id: id,
                        accepted,
                        error,
                    },
                );
            }
            _ => {}
        }
    }
}
