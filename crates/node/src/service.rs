//! Runs the simulated network in real time behind its RPC and ZMQ faces.

use crate::config::NodeConfig;
use crate::shared::Shared;
use crate::state::NodeState;
use crate::zmq::start_publisher;
use anyhow::{Context, Result};
use parking_lot::MutexGuard;
use probe::{mono_ns, Recorder};
use rand::Rng;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a follower waits for its peer to say its clock (a deployment starts both at
/// once).
const PEER_PATIENCE: Duration = Duration::from_secs(120);

/// How RPC clients authenticate, as with bitcoind.
#[derive(Debug, Clone)]
pub enum RpcAuth {
    /// `rpcuser` / `rpcpassword`.
    UserPassword { user: String, password: String },
    /// A cookie file `__cookie__:<random>` written at start and removed at shutdown.
    Cookie { path: PathBuf },
}

pub struct NodeOptions {
    pub config: NodeConfig,
    pub rpc_bind: SocketAddr,
    pub auth: RpcAuth,
    /// `tcp://127.0.0.1:28332`, publishing `hashblock` and `rawblock`; `None` publishes
    /// nothing.
    pub zmq_bind: Option<String>,
    /// A publisher of `hashblock` alone, as bitcoind has with `-zmqpubhashblock` on an
    /// address of its own: a subscriber that subscribes to every topic there (ckpool does,
    /// by mistake) gets no whole blocks.
    pub zmq_hashblock_bind: Option<String>,
    pub recorder: Recorder,
    /// How often the network's best template value is sampled.
    pub value_sample_interval: Duration,
    /// The SV2 Template Distribution face; `None` serves none.
    pub tdp: Option<crate::tdp::TdpOptions>,
    /// Serve Bitcoin Core's Mining IPC at `<data_dir>/regtest/node.sock`; `None` serves
    /// none.
    pub ipc: Option<crate::ipc::IpcOptions>,
    /// The node this one follows, when its config makes it a follower.
    pub peer: Option<crate::peer::PeerOptions>,
}

impl NodeOptions {
    /// A node with its RPC face alone, on a free loopback port: no ZMQ, no SV2 faces, no
    /// events, no peer. Callers change what they need with `..NodeOptions::local(..)`.
    pub fn local(config: NodeConfig, auth: RpcAuth) -> NodeOptions {
        NodeOptions {
            config,
            rpc_bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            auth,
            zmq_bind: None,
            zmq_hashblock_bind: None,
            recorder: Recorder::disabled(),
            value_sample_interval: Duration::from_secs(1),
            tdp: None,
            ipc: None,
            peer: None,
        }
    }
}

/// A running node.
pub struct NodeHandle {
    pub rpc_addr: SocketAddr,
    pub tdp_addr: Option<SocketAddr>,
    /// The IPC face (its socket is removed when the node is dropped).
    pub ipc: Option<crate::ipc::IpcFace>,
    pub zmq_endpoint: Option<String>,
    /// The `hashblock`-only publisher's endpoint, when one was asked for.
    pub zmq_hashblock_endpoint: Option<String>,
    pub cookie_path: Option<PathBuf>,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl NodeHandle {
    /// Builds the network and opens its faces. Fails, naming the address, when a port is
    /// taken.
    pub async fn start(opts: NodeOptions) -> Result<NodeHandle> {
        let now_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs() as u32;
        let state = NodeState::new(opts.config, opts.recorder, now_unix)
            .map_err(|e| anyhow::anyhow!("invalid network configuration: {e}"))?;

        let listener = tokio::net::TcpListener::bind(opts.rpc_bind)
            .await
            .with_context(|| {
                format!(
                    "cannot listen for RPC on {} (is another node or bitcoind using port {}? choose another with --rpc-bind)",
                    opts.rpc_bind,
                    opts.rpc_bind.port()
                )
            })?;
        let rpc_addr = listener.local_addr()?;

        let mut tasks = Vec::new();
        let mut zmq = Vec::new();
        let mut publish = async |bind: &Option<String>,
                                 topics: &'static [&'static str]|
               -> Result<Option<String>> {
            let Some(endpoint) = bind else {
                return Ok(None);
            };
            let (bound, tx, task) = start_publisher(endpoint).await?;
            tasks.push(task);
            zmq.push((topics, tx));
            Ok(Some(bound))
        };
        let zmq_endpoint = publish(&opts.zmq_bind, &["hashblock", "rawblock"]).await?;
        let zmq_hashblock_endpoint = publish(&opts.zmq_hashblock_bind, &["hashblock"]).await?;

        let (user, password, cookie_path) = match opts.auth {
            RpcAuth::UserPassword { user, password } => (user, password, None),
            RpcAuth::Cookie { path } => {
                let secret: [u8; 32] = rand::thread_rng().gen();
                let password = hex::encode(secret);
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                }
                probe::private::write(&path, format!("__cookie__:{password}"))
                    .with_context(|| format!("cannot write cookie file {}", path.display()))?;
                ("__cookie__".to_string(), password, Some(path))
            }
        };

        let follower = state.config().follower.clone();
        let seed = state.config().seed;
        anyhow::ensure!(
            follower.is_some() == opts.peer.is_some(),
            "a follower node needs its peer, and only a follower has one"
        );
        let (to_peer, peer_blocks) = match opts.peer.is_some() {
            true => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let mut shared = Shared::new(state, user, password);
        shared.start_mono_ns = match &opts.peer {
            Some(peer) => crate::peer::peer_start(peer, PEER_PATIENCE).await?,
            None => mono_ns(),
        };
        shared.zmq = zmq;
        shared.zmq_endpoint = zmq_endpoint.clone();
        shared.to_peer = to_peer;
        shared.tx_delay_ns = (follower.as_ref()).map_or(0, |f| f.tx_delay.as_nanos() as u64);
        let shared = Arc::new(shared);
        if let (Some(peer), Some(blocks), Some(f)) = (&opts.peer, peer_blocks, follower) {
            let lag = crate::peer::Lag {
                block_lag: f.block_lag,
                seed,
            };
            tasks.extend(crate::peer::start(shared.clone(), peer, lag, blocks));
        }

        tasks.push(tokio::spawn(drive(
            shared.clone(),
            opts.value_sample_interval,
        )));
        let tdp_addr = match opts.tdp {
            Some(tdp) => {
                let (addr, task) = crate::tdp::start(shared.clone(), tdp).await?;
                tasks.push(task);
                Some(addr)
            }
            None => None,
        };
        let ipc = match &opts.ipc {
            Some(options) => Some(crate::ipc::start(shared.clone(), options)?),
            None => None,
        };
        let app = crate::rpc::router(shared.clone());
        let mut stop = shared.stop.subscribe();
        tasks.push(tokio::spawn(async move {
            // Replies are sent at once, not held back by Nagle's algorithm.
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            });
            if let Err(e) = serve.await {
                tracing::error!(error = %e, "RPC server failed");
            }
        }));
        tracing::info!(%rpc_addr, zmq = ?zmq_endpoint, zmq_hashblock = ?zmq_hashblock_endpoint, tdp = ?tdp_addr, ipc = ?ipc.as_ref().map(|i| &i.socket), "node ready");
        Ok(NodeHandle {
            rpc_addr,
            tdp_addr,
            ipc,
            zmq_endpoint,
            zmq_hashblock_endpoint,
            cookie_path,
            shared,
            tasks,
        })
    }

    /// Virtual time zero on this host's monotonic clock.
    pub fn start_mono_ns(&self) -> u64 {
        self.shared.start_mono_ns()
    }

    /// The rest of the network finds a block now (benchmarks and tests); returns the
    /// monotonic time at which every face was told.
    pub fn mine_block(&self) -> u64 {
        let tip = self.shared.sync().mine_network_block(None);
        let told = mono_ns();
        self.shared.announce(&[tip]);
        told
    }

    /// The simulation, up to date.
    pub fn state(&self) -> MutexGuard<'_, NodeState> {
        self.shared.sync()
    }

    /// Resolves when a client called `stop`.
    pub async fn stopped(&self) {
        let mut stop = self.shared.stop.subscribe();
        let _ = stop.wait_for(|s| *s).await;
    }

    /// Stops every face and the driver, and removes the cookie file.
    pub async fn shutdown(self) -> Result<()> {
        self.shared.request_stop();
        for task in self.tasks {
            task.abort();
            let _ = task.await;
        }
        if let Some(path) = &self.cookie_path {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }
}

/// Applies arrivals as they fall due and samples the network template value.
async fn drive(shared: Arc<Shared>, sample_every: Duration) {
    let sample_ns = sample_every.as_nanos().max(1) as u64;
    let mut next_sample = 0u64;
    loop {
        let next_event = shared.state.lock().next_event_ns().unwrap_or(u64::MAX);
        let wake = next_event.min(next_sample);
        // In the node's own (lagged) time, or a follower spins through its lag.
        let now = shared.virtual_now_ns();
        if wake > now {
            tokio::time::sleep(Duration::from_nanos(wake - now)).await;
        }
        let state = shared.sync();
        if state.now_ns() >= next_sample {
            state.record_network_template_value();
            if state.config().follower.is_some() {
                state.recorder().record(probe::Event::TxRelayModelled {
                    bytes: state.relayed_tx_bytes(),
                });
                let blocks = state.compact_block_bytes();
                state.recorder().record(probe::Event::BlockRelayModelled {
                    received: blocks.received,
                    sent: blocks.sent,
                });
            }
            next_sample = state.now_ns() - state.now_ns() % sample_ns + sample_ns;
        }
    }
}
