//! A follower node's link to its peer, the node that is the network (see
//! [`crate::config::Follower`]): blocks arrive by the peer's ZMQ `rawblock`, blocks
//! submitted here leave by the peer's `submitblock`. Both go through whatever address the
//! options name, so the harness can put a WAN link relay between farm and pool.

use crate::service::Shared;
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
    /// same transaction stream at the same moments.
    pub start_mono_ns: u64,
}

/// Starts both directions: blocks from the peer, and `blocks` (submitted here) to it.
pub fn start(
    shared: Arc<Shared>,
    opts: &PeerOptions,
    blocks: mpsc::UnboundedReceiver<Block>,
) -> Vec<JoinHandle<()>> {
    let rpc = bitcoind_rpc::RpcClient::new(&opts.rpc_url, &opts.rpc_user, &opts.rpc_password);
    vec![
        tokio::spawn(receive_blocks(shared, opts.zmq.clone())),
        tokio::spawn(submit_blocks(rpc, blocks)),
    ]
}

/// Takes every block the peer publishes; reconnects when the subscription fails.
async fn receive_blocks(shared: Arc<Shared>, endpoint: String) {
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
                Ok(block) => shared.accept_peer_block(block),
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
