//! bitcoind's ZMQ notifications: `hashblock` and `rawblock`.
//!
//! Each message has bitcoind's three frames: topic, body, and a 4-byte little-endian
//! sequence number counted per topic.

use anyhow::{Context, Result};
use bytes::Bytes;
use std::collections::HashMap;
use tokio::sync::mpsc;
use zeromq::{PubSocket, Socket, SocketSend, ZmqMessage};

/// One notification to publish.
pub struct Notification {
    pub topic: &'static str,
    pub body: Vec<u8>,
}

/// Binds a publisher on `endpoint` (`tcp://127.0.0.1:28332`) and returns the bound
/// endpoint and the task that publishes what arrives on the returned sender.
pub async fn start_publisher(
    endpoint: &str,
) -> Result<(
    String,
    mpsc::UnboundedSender<Notification>,
    tokio::task::JoinHandle<()>,
)> {
    let mut socket = PubSocket::new();
    let bound = socket
        .bind(endpoint)
        .await
        .with_context(|| format!("cannot bind ZMQ publisher on {endpoint} (is the port in use? choose another with --zmq-bind)"))?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Notification>();
    let task = tokio::spawn(async move {
        let mut sequences: HashMap<&'static str, u32> = HashMap::new();
        while let Some(note) = rx.recv().await {
            let seq = sequences.entry(note.topic).or_insert(0);
            let frames = vec![
                Bytes::from_static(note.topic.as_bytes()),
                Bytes::from(note.body),
                Bytes::copy_from_slice(&seq.to_le_bytes()),
            ];
            *seq = seq.wrapping_add(1);
            let msg = ZmqMessage::try_from(frames).expect("three frames");
            if let Err(e) = socket.send(msg).await {
                tracing::warn!(error = %e, topic = note.topic, "ZMQ publish failed");
            }
        }
    });
    Ok((bound.to_string(), tx, task))
}
