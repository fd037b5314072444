//! The built-in solo SV1 pool: any bitcoind-compatible node behind it, any SV1 miner in
//! front. Jobs are refreshed on an interval and replaced at once (clean) when the node
//! reports a new tip over ZMQ `hashblock` (or longpoll, without ZMQ). Shares are fully
//! validated, and a block-level share goes to the node with `submitblock`.

pub(crate) mod connection;
mod session;
pub mod templates;
mod vardiff;

use anyhow::{Context, Result};
use bitcoin::{BlockHash, ScriptBuf, TxMerkleNode};
use bitcoind_rpc::RpcClient;
use connection::{Deliver, Delivery, FanOut};
use mining::refresh::{RefreshPolicy, RefreshTimer};
use parking_lot::{Mutex, RwLock};
use probe::{Event, Recorder};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use templates::{fetch, job_for, PoolJob};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use vardiff::VardiffConfig;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PoolConfig {
    pub listen: SocketAddr,
    pub rpc_url: String,
    pub rpc_user: String,
    pub rpc_password: String,
    /// ZMQ endpoint publishing `hashblock`; without it the pool longpolls.
    pub zmq: Option<String>,
    pub payout_script: ScriptBuf,
    pub coinbase_tag: String,
    /// A new job (same tip, fresh template) this long after the last one.
    pub job_refresh: Duration,
    /// ... when its fees grew by at least this much over the last job's.
    #[serde(default)]
    pub refresh_fee_threshold_sats: u64,
    pub vardiff: VardiffConfig,
    /// Bits miners may roll (BIP310 `version-rolling`).
    pub version_rolling_mask: u32,
    /// Also send every job once as a UDP datagram to this broadcast address (the software
    /// equivalent of FastProxy's layer-2 broadcast), before the per-miner TCP
    /// writes, which stay as the fallback for a miner that missed it.
    #[serde(default)]
    pub broadcast: Option<SocketAddr>,
}

/// Jobs sent on recent tips, to tell a stale share from an unknown one.
struct JobBook {
    tip: BlockHash,
    by_id: HashMap<String, Arc<PoolJob>>,
    order: VecDeque<String>,
}

pub(crate) const JOBS_KEPT: usize = 512;
/// How long after a job's broadcast datagram its TCP copy follows.
const BROADCAST_FALLBACK_DELAY: Duration = Duration::from_millis(50);

pub(crate) struct Shared {
    cfg: PoolConfig,
    rpc: RpcClient,
    jobs: RwLock<JobBook>,
    /// The job a miner gets when it becomes ready, or again under a new difficulty.
    latest: RwLock<Arc<PoolJob>>,
    /// The connections ready for work, which the fan-out writes each job to. By listing
    /// number, so a fan-out walks them about in the order they came, which is about the
    /// order their memory (ours and the kernel's sockets) was allocated in: walked in a
    /// hash map's order it waited on memory at every connection, in the kernel most of all
    /// (docs/benches.md).
    listed: Mutex<BTreeMap<u64, Arc<dyn Deliver>>>,
    /// Held through a fan-out: with broadcast, a job's delayed pass may meet the next's,
    /// and a miner must not get the older after the newer.
    fanning_out: Mutex<()>,
    next_listing: AtomicU64,
    /// The socket jobs are broadcast from, when configured.
    broadcast: Option<std::net::UdpSocket>,
    recorder: Recorder,
    next_extranonce1: AtomicU32,
    next_job: AtomicU64,
}

/// How a share's job stands.
pub(crate) enum JobState {
    Current(Arc<PoolJob>),
    Stale,
    Unknown,
}

impl Shared {
    pub(crate) fn job(&self, id: &str) -> JobState {
        let book = self.jobs.read();
        match book.by_id.get(id) {
            Some(j) if j.job.prev_hash == book.tip => JobState::Current(j.clone()),
            Some(_) => JobState::Stale,
            None => JobState::Unknown,
        }
    }

    fn publish(self: &Arc<Self>, job: Arc<PoolJob>) {
        {
            let mut book = self.jobs.write();
            book.tip = job.job.prev_hash;
            book.by_id.insert(job.job.job_id.clone(), job.clone());
            book.order.push_back(job.job.job_id.clone());
            while book.order.len() > JOBS_KEPT {
                let old = book.order.pop_front().expect("not empty");
                book.by_id.remove(&old);
            }
        }
        self.recorder.record(Event::JobBroadcast {
            job_id: job.job.job_id.clone(),
            prev_hash: job.job.prev_hash.to_string(),
            marker_txid: job.template.marker_txid().map(|t| t.to_string()),
            clean: job.job.clean,
            miners: self.listed.lock().len(),
        });
        let (Some(socket), Some(to)) = (&self.broadcast, self.cfg.broadcast) else {
            self.fan_out(job);
            return;
        };
        let line = &job.notify_lines[usize::from(job.job.clean)];
        if let Err(e) = socket.send_to(line, to) {
            tracing::warn!(%to, error = %e, "job broadcast failed; TCP still carries it");
        }
        // The TCP copy is the fallback for a miner that missed the datagram: sent a little
        // later, so it does not compete with the broadcast for the miners' attention.
        let shared = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(BROADCAST_FALLBACK_DELAY).await;
            let newest = shared.jobs.read().order.back() == Some(&job.job.job_id);
            if newest {
                shared.fan_out(job);
            }
        });
    }

    /// Writes `job` to every ready connection in one pass, each one `write` the socket
    /// takes at once (a full socket's connection sends the rest itself). The job is current
    /// before the connections are read, so a miner ready during the pass gets it either way.
    fn fan_out(&self, job: Arc<PoolJob>) {
        let _one_at_a_time = self.fanning_out.lock();
        if job.number < self.latest.read().number {
            return;
        }
        *self.latest.write() = job.clone();
        let connections: Vec<Arc<dyn Deliver>> = self.listed.lock().values().cloned().collect();
        let fan_out = FanOut::new(&job, connections.len(), self.recorder.clone());
        for connection in &connections {
            connection.offer(&job, Delivery(fan_out.clone()));
        }
    }

    fn current_job(&self) -> Arc<PoolJob> {
        self.latest.read().clone()
    }

    /// Lists a connection ready for work, until the listing is dropped.
    fn list(self: &Arc<Self>, connection: Arc<dyn Deliver>) -> Listing {
        let key = self.next_listing.fetch_add(1, Ordering::Relaxed);
        self.listed.lock().insert(key, connection);
        Listing {
            shared: self.clone(),
            key,
        }
    }

    fn tip(&self) -> BlockHash {
        self.jobs.read().tip
    }

    /// The pool's state, `first_job` published; no task or listener is started.
    pub(crate) fn new(
        cfg: PoolConfig,
        rpc: RpcClient,
        broadcast: Option<std::net::UdpSocket>,
        recorder: Recorder,
        first_job: PoolJob,
    ) -> Arc<Shared> {
        let first_job = Arc::new(first_job);
        let shared = Arc::new(Shared {
            broadcast,
            jobs: RwLock::new(JobBook {
                tip: first_job.job.prev_hash,
                by_id: HashMap::new(),
                order: VecDeque::new(),
            }),
            latest: RwLock::new(first_job.clone()),
            listed: Mutex::new(BTreeMap::new()),
            fanning_out: Mutex::new(()),
            next_listing: AtomicU64::new(0),
            rpc,
            recorder,
            next_extranonce1: AtomicU32::new(1),
            next_job: AtomicU64::new(2),
            cfg,
        });
        shared.publish(first_job);
        shared
    }
}

/// A connection's place in the fan-out: gone with the connection's task, however it ends.
struct Listing {
    shared: Arc<Shared>,
    key: u64,
}

impl Drop for Listing {
    fn drop(&mut self) {
        self.shared.listed.lock().remove(&self.key);
    }
}

pub struct PoolHandle {
    pub listen_addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl PoolHandle {
    /// Connects to the node (failing fast when it does not answer), gets the first
    /// template, and starts accepting miners.
    pub async fn start(cfg: PoolConfig, recorder: Recorder) -> Result<PoolHandle> {
        templates::check_tag(&cfg.coinbase_tag)?;
        let rpc = RpcClient::new(&cfg.rpc_url, &cfg.rpc_user, &cfg.rpc_password);
        let first = tokio::time::timeout(Duration::from_secs(15), fetch(&rpc, None))
            .await
            .map_err(|_| anyhow::anyhow!("the node at {} did not answer within 15 s", cfg.rpc_url))?
            .with_context(|| format!("cannot get a template from the node at {}", cfg.rpc_url))?;
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .with_context(|| {
                format!(
                    "cannot listen for miners on {} (port {} in use?)",
                    cfg.listen,
                    cfg.listen.port()
                )
            })?;
        let listen_addr = listener.local_addr()?;
        let first_job = job_for(&cfg, first, 1, true, "start", &recorder);
        let broadcast = match cfg.broadcast {
            Some(_) => {
                let socket = std::net::UdpSocket::bind("127.0.0.1:0")
                    .context("cannot open the job broadcast socket")?;
                socket
                    .set_broadcast(true)
                    .context("cannot enable broadcast on the job socket")?;
                Some(socket)
            }
            None => None,
        };
        let shared = Shared::new(cfg, rpc, broadcast, recorder, first_job);

        let mut tasks = Vec::new();
        let (tip_tx, tip_rx) = mpsc::unbounded_channel();
        // Subscribed before the pool is ready, so no block after this goes unannounced.
        let hashblock = match &shared.cfg.zmq {
            Some(endpoint) => subscribe_hashblock(endpoint).await,
            None => None,
        };
        tasks.push(tokio::spawn(watch_tip(shared.clone(), hashblock, tip_tx)));
        tasks.push(tokio::spawn(refresh_jobs(shared.clone(), tip_rx)));
        let accepting = shared.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let (stream, peer) =
                    probe::listen::accept_next("SV1 pool", || listener.accept()).await;
                tokio::spawn(connection::serve(stream, peer, accepting.clone()));
            }
        }));
        tracing::info!(%listen_addr, "SV1 pool ready");
        Ok(PoolHandle { listen_addr, tasks })
    }

    pub fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
    }
}

/// A subscription to the node's `hashblock`, or `None` (logged) when the node has none:
/// the pool then longpolls.
async fn subscribe_hashblock(endpoint: &str) -> Option<zeromq::SubSocket> {
    crate::hashblock::subscribe(endpoint)
        .await
        .inspect_err(|e| tracing::warn!(error = %format!("{e:#}"), "longpolling instead"))
        .ok()
}

/// Signals each new tip: from ZMQ `hashblock` when subscribed, else by longpoll.
async fn watch_tip(
    shared: Arc<Shared>,
    hashblock: Option<zeromq::SubSocket>,
    tip: mpsc::UnboundedSender<()>,
) {
    if let Some(mut sub) = hashblock {
        use zeromq::SocketRecv;
        // A block announced between the first template and the subscription was never
        // told: look once.
        if tip.send(()).is_err() {
            return;
        }
        loop {
            match sub.recv().await {
                Ok(_) => {
                    if tip.send(()).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "ZMQ receive failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    let mut longpollid: Option<String> = None;
    loop {
        match fetch(&shared.rpc, longpollid.as_deref()).await {
            Ok(t) => {
                let changed = t.prev_hash != shared.tip();
                longpollid = t.longpollid.clone();
                if changed && tip.send(()).is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "longpoll failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Publishes a clean job on every new tip, and a fresh job on the same tip on the one
/// refresh rule every side follows ([`mining::refresh`]): `job_refresh` after the last job,
/// when the node's template changed and its fees grew by `refresh_fee_threshold_sats`.
async fn refresh_jobs(shared: Arc<Shared>, mut tips: mpsc::UnboundedReceiver<()>) {
    let policy = RefreshPolicy {
        interval: shared.cfg.job_refresh,
        fee_threshold_sats: shared.cfg.refresh_fee_threshold_sats,
    };
    let mut timer = RefreshTimer::start(policy, Instant::now());
    // The last template a job was made of: its marker (first branch) and value.
    let mut sent: Option<(Option<TxMerkleNode>, u64)> = None;
    loop {
        let reason = tokio::select! {
            t = tips.recv() => match t { Some(()) => "new_tip", None => return },
            _ = tokio::time::sleep_until(timer.due()) => "refresh",
        };
        let template = match fetch(&shared.rpc, None).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "cannot refresh the template");
                timer.recheck(Instant::now());
                continue;
            }
        };
        let clean = template.prev_hash != shared.tip();
        if reason == "new_tip" && !clean {
            continue; // already on this tip (a refresh got there first)
        }
        let marker = template.branch.first().copied();
        let worth = |(last_marker, last_value): (Option<TxMerkleNode>, u64)| {
            last_marker != marker && policy.worth_sending(last_value, template.value)
        };
        if !clean && sent.is_some_and(|s| !worth(s)) {
            timer.recheck(Instant::now());
            continue;
        }
        sent = Some((marker, template.value));
        let number = shared.next_job.fetch_add(1, Ordering::Relaxed);
        let job = job_for(
            &shared.cfg,
            template,
            number,
            clean,
            reason,
            &shared.recorder,
        );
        shared.publish(Arc::new(job));
        timer.restart(Instant::now());
    }
}
