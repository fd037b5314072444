//! `stratum-bench node`: the simulated network behind bitcoind's RPC and ZMQ.

use anyhow::{bail, Context, Result};
use clap::Args;
use model::duration::parse_duration;
use node::{
    Difficulty, MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions, RpcAuth,
};
use probe::Recorder;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A status line on stdout. A reader that went away (`... | head -1`) loses the rest of
/// them; the node serves on, and still shuts down cleanly and closes its events file.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

#[derive(Args)]
pub struct NodeArgs {
    /// Address for JSON-RPC. Keep it on loopback unless other hosts must reach it.
    #[arg(long, default_value = "127.0.0.1:18443")]
    rpc_bind: SocketAddr,
    /// RPC user name (with --rpc-password). Without both, a cookie file is used.
    #[arg(long, requires = "rpc_password")]
    rpc_user: Option<String>,
    /// RPC password (with --rpc-user).
    #[arg(long, requires = "rpc_user")]
    rpc_password: Option<String>,
    /// Cookie file to write (`__cookie__:<random>`), as bitcoind does; pools configured
    /// with a cookie path read it. Default: DATADIR/regtest/.cookie.
    #[arg(long, conflicts_with = "rpc_user")]
    rpc_cookie: Option<PathBuf>,
    /// Directory for the cookie file (and later the IPC socket).
    #[arg(long, default_value = "/tmp/stratum-bench-node")]
    datadir: PathBuf,
    /// ZMQ publisher endpoint for `hashblock` and `rawblock`.
    #[arg(long, default_value = "tcp://127.0.0.1:28332")]
    zmq_bind: String,
    /// Also publish `hashblock` alone on this endpoint, as bitcoind does with
    /// `-zmqpubhashblock` on an address of its own (for example tcp://127.0.0.1:28334):
    /// point a pool's hashblock subscription there, and it gets no whole blocks even if it
    /// subscribes to every topic (ckpool does).
    #[arg(long, value_name = "ENDPOINT")]
    zmq_hashblock_bind: Option<String>,
    /// Publish no ZMQ notifications.
    #[arg(long)]
    no_zmq: bool,
    /// Mean time between blocks of the whole network (for example 600s, 30s, 2m).
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    block_interval: Duration,
    /// Share of the network hashrate held by the miners under test (0 to 1). The rest of
    /// the network finds blocks at (1 - share) / block-interval.
    #[arg(long, default_value_t = 0.0)]
    hashrate_share: f64,
    /// Block difficulty: `regtest` (about every second hash is a block) or a number,
    /// where 1 is the classic `1d00ffff` target.
    #[arg(long, default_value = "regtest", conflicts_with = "miner_hashrate")]
    difficulty: String,
    /// Instead of --difficulty: the hashes per second of the miners under test; the
    /// target is set so they find blocks at hashrate-share / block-interval.
    #[arg(long, requires = "hashrate_share")]
    miner_hashrate: Option<f64>,
    /// Network block arrival times after start, comma separated (for example
    /// `5s,12s,40s`), instead of random arrivals.
    #[arg(long, value_delimiter = ',', value_parser = parse_duration)]
    arrivals: Option<Vec<Duration>>,
    /// Seed of every random draw: the same seed gives the same chain and mempool.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Mempool preset: mainnet (5 tx/s, a few sat/vB, 6,000 txs at start), testnet
    /// (sparse, 1 sat/vB) or empty.
    #[arg(long, default_value = "mainnet", value_parser = MempoolPreset::parse)]
    preset: MempoolPreset,
    /// Transactions per second arriving in the mempool (overrides the preset).
    #[arg(long)]
    tx_rate: Option<f64>,
    /// Transactions in the mempool at start (overrides the preset).
    #[arg(long)]
    initial_txs: Option<usize>,
    /// Height of the first block (subsidy follows mainnet's halving schedule).
    #[arg(long, default_value_t = 880_000)]
    start_height: u32,
    /// A cached template is rebuilt once the mempool changed and this long has passed.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    template_refresh: Duration,
    /// Append timestamped events (tips, templates, submissions) to this JSON-lines file.
    #[arg(long)]
    events: Option<PathBuf>,
    /// Serve the SV2 Template Distribution Protocol (Noise) here, as a Template Provider
    /// for an SV2 pool or Job Declarator Client (for example 127.0.0.1:8442).
    #[arg(long)]
    tdp_bind: Option<SocketAddr>,
    /// The Template Provider's authority secret key (base58check, as SRI configs write
    /// keys); a fresh pair is made when absent. The public key is printed at start.
    #[arg(long, requires = "tdp_bind")]
    tdp_secret_key: Option<String>,
    /// How often the current template is offered to TDP clients on the same tip.
    #[arg(long, default_value = "30s", value_parser = parse_duration, requires = "tdp_bind")]
    tdp_interval: Duration,
    /// Fee gain (sats) a same-tip template needs before it is sent to TDP clients.
    #[arg(long, default_value_t = 0, requires = "tdp_bind")]
    tdp_fee_threshold: u64,
    /// Serve Bitcoin Core's Mining IPC at DIR/regtest/node.sock, for an SRI pool, JDS or
    /// JDC configured with `BitcoinCoreIpc`, `network = "regtest"`, `data_dir = DIR`, or
    /// for sv2-tp.
    #[arg(long, value_name = "DIR")]
    ipc_datadir: Option<PathBuf>,
    /// The Mining IPC interface served, as the Bitcoin Core release: 31 (what the SRI
    /// roles pinned here speak) or 32 (v32.1: submitBlock, getTransactionsByTxID and
    /// getTransactionsByWitnessID added, submitSolution moved to @10 and the old @7
    /// refused).
    #[arg(
        long,
        value_name = "VERSION",
        default_value = "31",
        requires = "ipc_datadir"
    )]
    mining_ipc: node::ipc::MiningInterface,
    /// Stop after this long (default: until Ctrl-C, SIGTERM or the `stop` RPC).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
}

impl NodeArgs {
    fn tdp_options(&self) -> Result<Option<node::tdp::TdpOptions>> {
        let Some(bind) = self.tdp_bind else {
            return Ok(None);
        };
        let keys = match &self.tdp_secret_key {
            Some(text) => node::tdp::AuthorityKeys::from_secret(text)
                .context("--tdp-secret-key is not a base58check secret key")?,
            None => node::tdp::AuthorityKeys::generate(),
        };
        Ok(Some(node::tdp::TdpOptions {
            bind,
            keys,
            interval: self.tdp_interval,
            fee_threshold_sats: self.tdp_fee_threshold,
        }))
    }

    fn config(&self) -> Result<NodeConfig> {
        let difficulty = match (self.miner_hashrate, self.difficulty.as_str()) {
            (Some(hps), _) => Difficulty::MinerHashrate(hps),
            (None, "regtest") => Difficulty::RegtestEasy,
            (None, d) => Difficulty::Fixed(d.parse().with_context(|| {
                format!("--difficulty: {d:?} is neither `regtest` nor a number")
            })?),
        };
        let mut mempool = MempoolConfig::preset(self.preset);
        if let Some(rate) = self.tx_rate {
            mempool.tx_rate = rate;
        }
        if let Some(n) = self.initial_txs {
            mempool.initial_txs = n;
        }
        let config = NodeConfig {
            seed: self.seed,
            block_interval: self.block_interval,
            hashrate_share: self.hashrate_share,
            scripted_arrivals: self.arrivals.clone(),
            arrivals: Default::default(),
            difficulty,
            start_height: self.start_height,
            time_base: None,
            mempool,
            template_refresh: self.template_refresh,
            follower: None,
        };
        if let Err(e) = config.validate() {
            bail!("{e}");
        }
        Ok(config)
    }
}

pub async fn run(args: NodeArgs) -> Result<()> {
    let config = args.config()?;
    if !args.rpc_bind.ip().is_loopback() {
        tracing::warn!(bind = %args.rpc_bind, "RPC listens beyond loopback: anyone who can reach it and knows the credentials can use it");
    }
    let auth = match (&args.rpc_user, &args.rpc_password) {
        (Some(user), Some(password)) => RpcAuth::UserPassword {
            user: user.clone(),
            password: password.clone(),
        },
        _ => RpcAuth::Cookie {
            path: args
                .rpc_cookie
                .clone()
                .unwrap_or_else(|| args.datadir.join("regtest").join(".cookie")),
        },
    };
    // One key pair, generated once: the one served is the one printed.
    let tdp = args.tdp_options()?;
    let recorder = match &args.events {
        Some(path) => Recorder::to_file(path, "node")?,
        None => Recorder::disabled(),
    };
    let node = NodeHandle::start(NodeOptions {
        config,
        rpc_bind: args.rpc_bind,
        auth,
        zmq_bind: (!args.no_zmq).then(|| args.zmq_bind.clone()),
        zmq_hashblock_bind: args.zmq_hashblock_bind.clone().filter(|_| !args.no_zmq),
        recorder: recorder.clone(),
        value_sample_interval: Duration::from_secs(1),
        tdp: tdp.clone(),
        ipc: (args.ipc_datadir.clone()).map(|data_dir| node::ipc::IpcOptions {
            data_dir,
            interface: args.mining_ipc,
        }),
        peer: None,
    })
    .await?;
    {
        let state = node.state();
        let template_value = state.network_template_value().0;
        say!(
            "node ready: RPC http://{} ({}), ZMQ {}{}, chain regtest at height {}, {} txs in mempool, best template {:.8} BTC",
            node.rpc_addr,
            match &node.cookie_path {
                Some(p) => format!("cookie {}", p.display()),
                None => "user/password".into(),
            },
            node.zmq_endpoint.as_deref().unwrap_or("off"),
            node.zmq_hashblock_endpoint
                .as_deref()
                .map_or(String::new(), |e| format!(" (hashblock alone at {e})")),
            state.chain().height(),
            state.mempool().len(),
            template_value as f64 / 1e8,
        );
    }
    if let Some(ipc) = &node.ipc {
        say!("mining IPC ready: {}", ipc.socket.display());
    }
    if let (Some(addr), Some(tdp)) = (node.tdp_addr, &tdp) {
        say!(
            "template provider ready: TDP (Noise) on {addr}, authority public key {}",
            tdp.keys.public
        );
    }
    let start_height = node.state().chain().height();
    let deadline = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = deadline => {}
        _ = harness::roles::terminated() => tracing::info!("stopped by SIGINT or SIGTERM"),
        _ = node.stopped() => tracing::info!("stop requested over RPC"),
    }
    {
        let state = node.state();
        let (value, fees) = state.network_template_value();
        say!(
            "node stopping: height {} ({} blocks), {} txs in mempool, best template {:.8} BTC ({} sats of fees)",
            state.chain().height(),
            state.chain().height() - start_height,
            state.mempool().len(),
            value as f64 / 1e8,
            fees,
        );
    }
    node.shutdown().await?;
    recorder.close()
}
