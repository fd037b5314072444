//! bitcoind's ZMQ notifications: `hashblock` and `rawblock`, published by libzmq as
//! bitcoind's are, so subscribers see what they see with bitcoind: PINGs answered (ZMTP
//! heartbeats), each topic sent only to those subscribed to it.
//!
//! Each message has bitcoind's three frames: topic, body, and a 4-byte little-endian
//! sequence number counted per topic.

use anyhow::{Context, Result};
use std::collections::HashMap;
use tokio::sync::mpsc;

/// One notification to publish.
pub struct Notification {
    pub topic: &'static str,
    pub body: Vec<u8>,
}

/// Binds a publisher on `endpoint` (`tcp://127.0.0.1:28332`; port 0 picks one) and returns
/// the bound endpoint and the task that publishes what arrives on the returned sender.
/// Aborting the task closes the socket.
pub async fn start_publisher(
    endpoint: &str,
) -> Result<(
    String,
    mpsc::UnboundedSender<Notification>,
    tokio::task::JoinHandle<()>,
)> {
    let context = zmq::Context::new();
    let socket = context
        .socket(zmq::PUB)
        .context("cannot create a ZMQ publisher")?;
    // Nothing waits for slow subscribers at close; a publisher never blocks on them.
    socket.set_linger(0)?;
    socket.bind(endpoint).with_context(|| {
        format!("cannot bind ZMQ publisher on {endpoint} (is the port in use? choose another with --zmq-bind)")
    })?;
    let bound = socket.get_last_endpoint()?.map_err(|raw| {
        anyhow::anyhow!("libzmq reported a bound endpoint that is not text: {raw:?}")
    })?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Notification>();
    // The socket holds its context: both end when the task does.
    let task = tokio::spawn(async move {
        let mut sequences: HashMap<&'static str, u32> = HashMap::new();
        while let Some(note) = rx.recv().await {
            let seq = sequences.entry(note.topic).or_insert(0);
            let frames: [&[u8]; 3] = [note.topic.as_bytes(), &note.body, &seq.to_le_bytes()];
            *seq = seq.wrapping_add(1);
            // A PUB socket queues or drops (at its high-water mark); it never blocks here.
            if let Err(e) = socket.send_multipart(frames, 0) {
                tracing::warn!(error = %e, topic = note.topic, "ZMQ publish failed");
            }
        }
    });
    Ok((bound, tx, task))
}
