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

/// Starts both directions: blocks from the peer, and `blocks` (submitted here) to it.
pub fn start(
    shared: Arc<Shared>,
    opts: &PeerOptions,
    blocks: mpsc::UnboundedReceiver<Block>,
) -> Vec<JoinHandle<()>> {
    let rpc = || bitcoind_rpc::RpcClient::new(&opts.rpc_url, &opts.rpc_user, &opts.rpc_password);
    vec![
        tokio::spawn(receive_blocks(shared, opts.zmq.clone(), rpc())),
        tokio::spawn(submit_blocks(rpc(), blocks)),
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

/// Takes every block the peer publishes, and what it missed; reconnects when the
/// subscription fails.
async fn receive_blocks(shared: Arc<Shared>, endpoint: String, rpc: bitcoind_rpc::RpcClient) {
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
            let Some(body) = message.get(1) else {
                tracing::warn!("a peer ZMQ message without a body: ignored");
                continue;
            };
            match bitcoin::consensus::deserialize::<Block>(body) {
                Ok(block) => {
                    if let PeerBlock::Orphan { parent } = shared.accept_peer_block(block.clone()) {
                        match catch_up(&shared, &rpc, parent).await {
                            Ok(n) => {
                                tracing::info!(
                                    blocks = n,
                                    "fetched the blocks a relayed block builds on"
                                );
                                shared.accept_peer_block(block);
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "a relayed block builds on blocks this node cannot fetch: ignored")
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the peer published a block that does not decode: ignored")
                }
            }
        }
    }
}

/// Passes blocks submitted here to the peer, in order, logging its verdict.
async fn submit_blocks(rpc: bitcoind_rpc::RpcClient, mut blocks: mpsc::UnboundedReceiver<Block>) {
    while let Some(block) = blocks.recv().await {
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
