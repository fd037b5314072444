//! A follower node's link to its peer, the node that is the network (see
//! [`crate::config::Follower`]): blocks arrive by the peer's ZMQ `rawblock`, blocks
//! submitted here leave by the peer's `submitblock`. Both go through whatever address the
//! options name, so the harness can put a WAN link relay between farm and pool.
//!
//! A ZMQ subscriber misses what is published before its subscription reaches the
//! publisher, and while it reconnects. As a real node asks its peer for a block's unknown
//! parent, the follower fetches what it missed with `getblock HASH 0`: at every
//! (re)subscription up to the peer's best block, and for a relayed block whose parent it
//! lacks.

use crate::shared::Shared;
use crate::state::PeerBlock;
use bitcoin::Block;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerOptions {
    /// The peer's JSON-RPC URL and credentials.
    pub rpc_url: String,
    pub rpc_user: String,
    pub rpc_password: String,
    /// The peer's ZMQ publisher, `tcp://host:port`.
    pub zmq: String,
    /// The peer's virtual time zero on this host's monotonic clock: both nodes draw the
    /// same transaction stream at the same moments. None: asked of the peer at start (a
    /// deployment's nodes start on their own), which must then share this host's clock.
    pub start_mono_ns: Option<u64>,
}

/// The non-Core RPC method by which a follower asks its peer when the peer's tip changed
/// to a block (`[hash]`, answered with the host's monotonic ns, or null for a block it
/// does not remember): a follower on the same host counts its lag from there, not from
/// when the block crossed to it. An RPC method no Core client calls, not a ZMQ topic: a
/// pool subscribed to every topic (ckpool) must see bitcoind's alone.
pub const TIP_CLOCK_METHOD: &str = "getsimulationtipclock";

/// When the peer's tip changed to `hash`, if it says.
async fn tip_changed_at(rpc: &bitcoind_rpc::RpcClient, hash: &bitcoin::BlockHash) -> Option<u64> {
    let answer = rpc.call::<Option<u64>>(TIP_CLOCK_METHOD, serde_json::json!([hash.to_string()]));
    match answer.await {
        Ok(at) => at,
        Err(e) => {
            tracing::warn!(error = %e, "the peer did not say when its tip changed: the lag runs from arrival");
            None
        }
    }
}

/// The instant `mono_ns` (this host's monotonic clock) was, now.
fn instant_of(mono_ns: u64) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let age = Duration::from_nanos(probe::mono_ns().saturating_sub(mono_ns));
    now.checked_sub(age).unwrap_or(now)
}

/// The non-Core RPC method that tells a follower its peer's virtual time zero.
pub const CLOCK_METHOD: &str = "getsimulationclock";

/// What [`CLOCK_METHOD`] answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimulationClock {
    /// Virtual time zero on the node's monotonic clock.
    pub start_mono_ns: u64,
    /// The clock it is read on (`probe::clock::clock_id`).
    pub clock: String,
}

/// The peer's virtual time zero: as given, or asked of the peer (again while it cannot be
/// reached, for up to `patience`), refused when the peer reads another host's clock.
pub async fn peer_start(opts: &PeerOptions, patience: Duration) -> anyhow::Result<u64> {
    if let Some(start) = opts.start_mono_ns {
        return Ok(start);
    }
    let rpc = bitcoind_rpc::RpcClient::new(&opts.rpc_url, &opts.rpc_user, &opts.rpc_password);
    let deadline = tokio::time::Instant::now() + patience;
    let answer: SimulationClock = loop {
        match rpc.call(CLOCK_METHOD, serde_json::json!([])).await {
            Ok(answer) => break answer,
            // Not listening yet: it is starting.
            Err(bitcoind_rpc::RpcCallError::Transport(_))
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => anyhow::bail!("the peer at {} did not say its clock: {e}", opts.rpc_url),
        }
    };
    let own = probe::clock::clock_id();
    anyhow::ensure!(
        answer.clock == own,
        "the peer at {} reads clock {} and this node {own}: a follower shares its peer's host",
        opts.rpc_url,
        answer.clock
    );
    Ok(answer.start_mono_ns)
}

/// The lag of this node behind its peer, block by block: drawn from the run's seed and
/// each block's hash (see [`model::lag`]).
#[derive(Debug, Clone)]
pub struct Lag {
    pub block_lag: model::lag::BlockLag,
    pub seed: u64,
}

impl Lag {
    fn of(&self, block: &Block) -> Duration {
        use bitcoin::hashes::Hash;
        (self.block_lag).draw(self.seed, &block.block_hash().to_byte_array())
    }
}

/// Starts both directions: blocks from the peer, and `blocks` (submitted here) to it, each
/// held for its lag.
pub fn start(
    shared: Arc<Shared>,
    opts: &PeerOptions,
    lag: Lag,
    blocks: mpsc::UnboundedReceiver<Block>,
) -> Vec<JoinHandle<()>> {
    let rpc = || bitcoind_rpc::RpcClient::new(&opts.rpc_url, &opts.rpc_user, &opts.rpc_password);
    let (heard, to_take) = mpsc::unbounded_channel();
    vec![
        tokio::spawn(receive_blocks(
            shared.clone(),
            opts.zmq.clone(),
            rpc(),
            heard,
        )),
        tokio::spawn(take_blocks(shared, rpc(), lag.clone(), to_take)),
        tokio::spawn(submit_blocks(rpc(), lag, blocks)),
    ]
}

/// Blocks a follower fetches at most to catch up at once; further behind, it waits for
/// the next relayed block to try again.
const MAX_CATCH_UP: usize = 1_000;

/// Fetches from the peer every block from `hash` back to one this node has, and takes
/// them oldest first.
async fn catch_up(
    shared: &Shared,
    rpc: &bitcoind_rpc::RpcClient,
    hash: bitcoin::BlockHash,
) -> anyhow::Result<usize> {
    use anyhow::Context;
    let mut missing = Vec::new();
    let mut next = hash;
    while !shared.sync().has_block(&next) {
        anyhow::ensure!(
            missing.len() < MAX_CATCH_UP,
            "more than {MAX_CATCH_UP} blocks behind the peer"
        );
        let hex: String = rpc
            .call("getblock", serde_json::json!([next.to_string(), 0]))
            .await
            .with_context(|| format!("getblock {next} from the peer"))?;
        let block: Block = bitcoin::consensus::encode::deserialize_hex(&hex)
            .with_context(|| format!("the peer's block {next} does not decode"))?;
        next = block.header.prev_blockhash;
        missing.push(block);
    }
    let fetched = missing.len();
    for block in missing.into_iter().rev() {
        shared.accept_peer_block(block);
    }
    Ok(fetched)
}

/// Catches up to the peer's best block (after a subscription, when blocks may have been
/// published unseen).
async fn catch_up_to_best(shared: &Shared, rpc: &bitcoind_rpc::RpcClient) {
    let best = rpc
        .call::<String>("getbestblockhash", serde_json::json!([]))
        .await
        .map_err(anyhow::Error::from)
        .and_then(|h| h.parse::<bitcoin::BlockHash>().map_err(anyhow::Error::from));
    let result = match best {
        Ok(best) => catch_up(shared, rpc, best).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(0) => {}
        Ok(n) => tracing::info!(blocks = n, "caught up with the peer's best block"),
        Err(e) => tracing::warn!(error = %e, "cannot catch up with the peer"),
    }
}

/// Hears every block the peer publishes (passed on with when it was heard), and takes
/// what it missed at once (a resubscription catches up, as a node syncs); reconnects when
/// the subscription fails.
async fn receive_blocks(
    shared: Arc<Shared>,
    endpoint: String,
    rpc: bitcoind_rpc::RpcClient,
    heard: mpsc::UnboundedSender<(tokio::time::Instant, Block)>,
) {
    use zeromq::{Socket, SocketRecv};
    loop {
        let mut sub = zeromq::SubSocket::new();
        let subscribed = async {
            sub.connect(&endpoint).await?;
            sub.subscribe("rawblock").await
        };
        if let Err(e) = subscribed.await {
            tracing::warn!(%endpoint, error = %e, "cannot subscribe to the peer's blocks; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        catch_up_to_best(&shared, &rpc).await;
        loop {
            let message = match sub.recv().await {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(error = %e, "peer block subscription failed; resubscribing");
                    break;
                }
            };
            let arrived = tokio::time::Instant::now();
            let Some(body) = message.get(1) else {
                tracing::warn!("a peer ZMQ message without a body: ignored");
                continue;
            };
            match bitcoin::consensus::deserialize::<Block>(body) {
                Ok(block) => {
                    if heard.send((arrived, block)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the peer published a block that does not decode: ignored")
                }
            }
        }
    }
}

/// Takes each heard block its lag after it was heard, in the order heard (a node takes a
/// block after its parent), fetching the parents it lacks.
async fn take_blocks(
    shared: Arc<Shared>,
    rpc: bitcoind_rpc::RpcClient,
    lag: Lag,
    mut heard: mpsc::UnboundedReceiver<(tokio::time::Instant, Block)>,
) {
    while let Some((at, block)) = heard.recv().await {
        // A block this node has (found here, and published back by the peer) waits for
        // nothing: holding it would hold the blocks behind it.
        let hash = block.block_hash();
        if shared.sync().has_block(&hash) {
            continue;
        }
        // The lag runs from the peer's tip change where the peer says when (the
        // emulation's own feed is no part of it), else from arrival.
        let from = tip_changed_at(&rpc, &hash).await.map_or(at, instant_of);
        until(from + lag.of(&block)).await;
        if let PeerBlock::Orphan { parent } = shared.accept_peer_block(block.clone()) {
            match catch_up(&shared, &rpc, parent).await {
                Ok(n) => {
                    tracing::info!(blocks = n, "fetched the blocks a relayed block builds on");
                    shared.accept_peer_block(block);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a relayed block builds on blocks this node cannot fetch: ignored")
                }
            }
        }
    }
}

/// Waits until `due`: the timer to its last ms (it fires up to a ms late), then yields
/// until the instant, so a lag is kept to well under a ms.
async fn until(due: tokio::time::Instant) {
    let early = due.checked_sub(Duration::from_millis(1)).unwrap_or(due);
    tokio::time::sleep_until(early).await;
    while tokio::time::Instant::now() < due {
        tokio::task::yield_now().await;
    }
}

/// Passes blocks submitted here to the peer, in order, each its lag after it was
/// submitted, logging its verdict.
async fn submit_blocks(
    rpc: bitcoind_rpc::RpcClient,
    lag: Lag,
    mut blocks: mpsc::UnboundedReceiver<Block>,
) {
    while let Some(block) = blocks.recv().await {
        until(tokio::time::Instant::now() + lag.of(&block)).await;
        let hash = block.block_hash();
        let hex = bitcoin::consensus::encode::serialize_hex(&block);
        match rpc
            .call::<serde_json::Value>("submitblock", serde_json::json!([hex]))
            .await
        {
            Ok(serde_json::Value::Null) => {
                tracing::info!(%hash, "the peer accepted a block submitted here")
            }
            Ok(reason) => {
                tracing::info!(%hash, %reason, "the peer rejected a block submitted here")
            }
            Err(e) => {
                tracing::warn!(%hash, error = %e, "cannot pass a submitted block to the peer")
            }
        }
    }
}
