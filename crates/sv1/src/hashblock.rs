//! A node's ZMQ `hashblock` announcements, as a pool (or a tap beside one) receives them.

use anyhow::{bail, Context, Result};
use bitcoin::BlockHash;
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SubSocket};

/// A subscription to a node's `hashblock` topic.
pub type Subscription = SubSocket;

/// A subscription to `hashblock` at `endpoint` (`tcp://HOST:PORT`), within 5 s.
pub async fn subscribe(endpoint: &str) -> Result<Subscription> {
    let mut sub = SubSocket::new();
    let subscribed = async {
        sub.connect(endpoint).await?;
        sub.subscribe("hashblock").await
    };
    match tokio::time::timeout(Duration::from_secs(5), subscribed).await {
        Ok(Ok(())) => Ok(sub),
        Ok(Err(e)) => Err(e).with_context(|| format!("cannot subscribe to ZMQ at {endpoint}")),
        Err(_) => bail!("ZMQ at {endpoint} did not answer in 5 s"),
    }
}

/// The next block hash announced: bitcoind sends its 32 bytes in display (big-endian)
/// order, after the topic; other topics and malformed messages are skipped, with a log.
pub async fn next_block(sub: &mut Subscription) -> Result<BlockHash> {
    loop {
        let msg = sub.recv().await.context("ZMQ receive failed")?;
        let frames: Vec<&[u8]> = msg.iter().map(|f| f.as_ref()).collect();
        match frames.as_slice() {
            [b"hashblock", hash, ..] if hash.len() == 32 => {
                return hex::encode(hash)
                    .parse()
                    .context("a hashblock body is a block hash");
            }
            _ => tracing::warn!(
                frames = frames.len(),
                "a ZMQ message that is not a hashblock"
            ),
        }
    }
}
