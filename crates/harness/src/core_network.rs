//! A real Bitcoin Core as the run's network (`[node] program`): the role starts it on a
//! custom signet whose challenge is `OP_TRUE` (a block takes real work there, about 4.8
//! million hashes, so a share at a pool's difficulty is not a block, as on a real chain;
//! on regtest every share would be one), funds a key of ours, fills Core's mempool with
//! transactions it signs (Core built here has no wallet), and stands for the rest of the
//! network: it grinds a block of its own on Core's newest template ahead of time and
//! submits it at the scenario's times (Poisson, or regular with `network.arrivals`).
//!
//! The run reaches this Core as it reaches any real node: through the RPC tap (which
//! records its templates and, without ZMQ, its tips by `waitfornewblock`) and the IPC
//! tap. What it records itself is each network block it submitted, how late against its
//! time, and whether Core took it (`NetworkBlockSent`).

use crate::roles::{Ready, Role, Running};
use anyhow::{Context, Result};
use bitcoin::{BlockHash, ScriptBuf};
use core_node::{funds, Chain, CoreNode, SolvedBlock};
use probe::{Event, Recorder};
use rand::SeedableRng;
use rand_distr::Distribution;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// What the role needs to stand a Core up as the network.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CoreNetworkConfig {
    /// `bitcoin-node`, v31 or later, built with IPC.
    pub program: PathBuf,
    /// Its data directory, in the run directory: its log stays there.
    pub datadir: PathBuf,
    /// Its RPC password (user [`core_node::RPC_USER`]), shared with the RPC tap.
    pub rpc_password: String,
    /// Seeds the key, the fees, the arrivals and the network's block times.
    pub seed: u64,
    /// Mean time between the rest of the network's blocks: the scenario's interval over
    /// the share of the hashrate that is not ours.
    pub network_block_interval: Duration,
    /// At that mean, drawn or regular (`network.arrivals`).
    #[serde(default)]
    pub arrivals: model::network::Arrivals,
    /// Transactions in the mempool at the start, and arriving per second after.
    pub initial_txs: usize,
    pub tx_rate: f64,
    /// How long the run lasts, warm-up included: coins are made for all of it.
    pub lasts: Duration,
}

impl CoreNetworkConfig {
    /// Coins for the start's mempool and every arrival, with room for a Poisson count
    /// above its mean.
    fn coins(&self) -> usize {
        let arrivals = self.tx_rate * self.lasts.as_secs_f64();
        self.initial_txs + (arrivals * 1.3 + 50.0).ceil() as usize
    }
}

/// The running Core and the tasks that fill it and find the network's blocks.
pub struct CoreNetwork {
    core: Arc<CoreNode>,
    rpc: std::net::SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

/// The rest of the network's payout: a key that is no one's here, so its coinbases are
/// told from ours by the script alone.
fn network_script() -> ScriptBuf {
    use bitcoin::hashes::Hash;
    ScriptBuf::new_p2wsh(&bitcoin::WScriptHash::from_byte_array([0x4e; 32]))
}

impl Role for CoreNetworkConfig {
    type Running = CoreNetwork;
    async fn start(self, recorder: &Recorder) -> Result<CoreNetwork> {
        let core = CoreNode::start(
            &self.program,
            &self.datadir,
            Chain::Signet,
            &self.rpc_password,
        )
        .await
        .map_err(|e| anyhow::anyhow!("scenario field `node.program`: {e:#}"))?;
        let started = std::time::Instant::now();
        let mut funds = funds::Funds::mine_and_split(&core, self.coins(), self.seed)
            .await
            .context("funding a key of ours on Core's signet")?;
        let fill: Vec<_> = (0..self.initial_txs)
            .filter_map(|_| funds.spend_one())
            .collect();
        funds::send(&core, &fill).await?;
        tracing::info!(
            version = %core.version,
            coins = funds.coins(),
            mempool = fill.len(),
            secs = started.elapsed().as_secs_f64(),
            "Bitcoin Core's signet funded and its mempool filled"
        );
        let rpc = core
            .rpc_url
            .trim_start_matches("http://")
            .parse()
            .context("Core's RPC address")?;
        let core = Arc::new(core);
        let tasks = vec![
            tokio::spawn(arrivals(core.clone(), funds, self.tx_rate, self.seed)),
            tokio::spawn(network_blocks(
                core.clone(),
                self.network_block_interval,
                self.arrivals,
                self.seed,
                recorder.clone(),
            )),
        ];
        Ok(CoreNetwork { core, rpc, tasks })
    }
}

impl Running for CoreNetwork {
    fn ready(&self) -> Ready {
        Ready {
            rpc: Some(self.rpc),
            ipc: Some(self.core.ipc_socket.clone()),
            ..Ready::default()
        }
    }
    /// Core that stops answering for 5 s ends the role: the run records it and finishes
    /// with what it has.
    async fn ended(&mut self) -> Result<()> {
        let mut silent = 0;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match self
                .core
                .rpc
                .call::<u64>("getblockcount", serde_json::json!([]))
                .await
            {
                Ok(_) => silent = 0,
                Err(e) if silent >= 4 => {
                    anyhow::bail!(
                        "Bitcoin Core stopped answering (its log: {}): {e}",
                        self.core.log.display()
                    )
                }
                Err(_) => silent += 1,
            }
        }
    }
    async fn stop(self, _: &Recorder) -> Result<()> {
        for task in &self.tasks {
            task.abort();
        }
        for task in self.tasks {
            let _ = task.await;
        }
        match Arc::try_unwrap(self.core) {
            Ok(core) => core.stop().await,
            Err(_) => anyhow::bail!("Bitcoin Core is still in use as the role stops"),
        }
    }
}

/// Transactions of ours into Core's mempool at Poisson times, `rate` a second, until the
/// coins run out (they are made to last the run).
async fn arrivals(core: Arc<CoreNode>, mut funds: funds::Funds, rate: f64, seed: u64) {
    if rate <= 0.0 {
        return;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7478);
    let gap = rand_distr::Exp::new(rate).expect("a positive rate");
    while let Some(tx) = funds.spend_one() {
        tokio::time::sleep(Duration::from_secs_f64(gap.sample(&mut rng))).await;
        if let Err(e) = funds::send(&core, &[tx]).await {
            tracing::warn!(error = %format!("{e:#}"), "Core refused a transaction of ours");
        }
    }
    tracing::warn!("the coins made for the run's transactions ran out");
}

/// The rest of the network: a block ground ahead on Core's newest tip, submitted at each
/// of its times (Poisson, or one every mean gap); if the tip moved since (a block of our miners), it is ground again
/// there and then. It is late by that, or when grinding outlasted the gap; the event and
/// the log say by how much.
async fn network_blocks(
    core: Arc<CoreNode>,
    mean: Duration,
    arrivals: model::network::Arrivals,
    seed: u64,
    recorder: Recorder,
) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x626c6f636b);
    let gap = rand_distr::Exp::new(1.0 / mean.as_secs_f64()).expect("a positive interval");
    let mut due = tokio::time::Instant::now();
    let mut ready: Option<SolvedBlock> = None;
    loop {
        due += arrivals.gap(mean, || Duration::from_secs_f64(gap.sample(&mut rng)));
        // Ground ahead; ground again whenever the tip moves before the block is due.
        while tokio::time::Instant::now() < due {
            let tip = best(&core).await;
            if ready.as_ref().map(|b| b.prev_hash) != tip {
                ready = solve(&core).await;
            }
            let poll = Duration::from_millis(100);
            tokio::time::sleep_until(due.min(tokio::time::Instant::now() + poll)).await;
        }
        let tip = best(&core).await;
        if ready.as_ref().map(|b| b.prev_hash) != tip {
            ready = solve(&core).await;
        }
        let Some(block) = ready.take() else {
            tracing::warn!("no block of the network's was ground in time: this one is not sent");
            continue;
        };
        let late = due.elapsed();
        let answer = core.submit(&block).await;
        recorder.record(Event::NetworkBlockSent {
            hash: block.hash.to_string(),
            late_ns: late.as_nanos() as u64,
            accepted: answer.is_ok(),
        });
        let late_ms = late.as_secs_f64() * 1e3;
        match answer {
            Ok(()) => tracing::info!(
                height = block.height,
                txs = block.tx_count,
                late_ms,
                "the network's block"
            ),
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "the network's block"),
        }
    }
}

async fn best(core: &CoreNode) -> Option<BlockHash> {
    (core.call("getbestblockhash", serde_json::json!([])).await)
        .inspect_err(|e| tracing::warn!(error = %format!("{e:#}"), "Core's best block"))
        .ok()
}

/// One thread at the lowest priority: the run's miners and roles come first (grinding at
/// full priority right after a tip, on 2 cores, slowed the SRI sides' new-block jobs).
async fn solve(core: &CoreNode) -> Option<SolvedBlock> {
    (core
        .solve(&network_script(), b"/stratum-bench network/", 1, true)
        .await)
        .inspect_err(|e| tracing::warn!(error = %format!("{e:#}"), "grinding the network's block"))
        .ok()
}
