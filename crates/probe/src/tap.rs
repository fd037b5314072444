//! What a tap measures of itself and counts as it goes, and how it takes and ends its
//! clients' connections, whichever protocol it relays.

use crate::{Event, Histogram, Recorder, ShareVerdict};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;

/// How long a tap still reads the pool's answers after a miner closed its connection: the
/// pool credited the last shares, so their verdicts count.
pub const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// A tap's own cost and its counts. The counters are `prometheus-client` ones, so a
/// standalone tap serves them as they are.
#[derive(Default)]
pub struct TapStats {
    /// What the tap adds, per direction, in nanoseconds: from a message read whole on one
    /// side to it written on the other (up: towards the pool).
    pub up_ns: Histogram,
    pub down_ns: Histogram,
    /// Bytes relayed towards the pool and from it, as they cross the wire.
    pub bytes_up: Counter,
    pub bytes_down: Counter,
    /// Client connections accepted, those open now, and those closed because the pool
    /// could not be reached.
    pub connections: Counter,
    pub connections_open: Gauge,
    pub upstream_unreachable: Counter,
    /// Jobs relayed to miners.
    pub jobs_relayed: Counter,
    /// Shares by the pool's answer.
    pub shares: Family<VerdictLabel, Counter>,
}

/// A share's verdict as a metric label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabel {
    pub verdict: &'static str,
}

/// What a tap's counters write when it stops.
pub trait FinalEvents {
    fn final_events(&self) -> Vec<Event>;
}

impl FinalEvents for TapStats {
    fn final_events(&self) -> Vec<Event> {
        vec![self.latency_event()]
    }
}

impl TapStats {
    /// The event a tap writes at its end.
    pub fn latency_event(&self) -> Event {
        Event::TapLatency {
            up_ms: self.up_ns.dist(1e6),
            down_ms: self.down_ns.dist(1e6),
        }
    }

    /// The bytes relayed so far, as an event.
    pub fn bytes_event(&self) -> Event {
        Event::TapBytes {
            up_bytes: self.bytes_up.get(),
            down_bytes: self.bytes_down.get(),
        }
    }

    /// Counts a share the pool judged.
    pub fn count_share(&self, verdict: ShareVerdict) {
        let label = VerdictLabel {
            verdict: verdict.name(),
        };
        self.shares.get_or_create(&label).inc();
    }

    /// A connection to `pool` for client connection `connection` (from `peer`). When the
    /// pool cannot be reached, that is counted, logged and recorded, and the client's
    /// connection is to be closed.
    pub async fn connect_pool(
        &self,
        pool: SocketAddr,
        peer: SocketAddr,
        connection: u32,
        recorder: &Recorder,
    ) -> Option<TcpStream> {
        match TcpStream::connect(pool).await {
            Ok(upstream) => {
                let _ = upstream.set_nodelay(true);
                Some(upstream)
            }
            Err(e) => {
                let reason = format!("cannot reach the pool at {pool}: {e}");
                tracing::warn!(%peer, connection, %reason, "tapped connection closed");
                self.upstream_unreachable.inc();
                recorder.record(Event::TapUpstreamUnreachable {
                    connection,
                    reason,
                    refused: e.kind() == std::io::ErrorKind::ConnectionRefused,
                });
                None
            }
        }
    }
}

/// Accepts clients on `listener` until aborted, numbering their connections from
/// `offset + 1` and counting them in `stats`; `serve` serves each on a task of its own.
pub fn accept_clients<F, Fut>(
    listener: tokio::net::TcpListener,
    (what, offset): (&'static str, u32),
    stats: Arc<TapStats>,
    serve: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(TcpStream, SocketAddr, u32) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut connection = offset;
        loop {
            let (stream, peer) = crate::listen::accept_next(what, || listener.accept()).await;
            connection += 1;
            let (served, stats) = (serve(stream, peer, connection), stats.clone());
            tokio::spawn(async move {
                stats.connections.inc();
                stats.connections_open.inc();
                served.await;
                stats.connections_open.dec();
            });
        }
    })
}

/// A tap listening for clients: where, its counters, and the task accepting them.
pub struct Listening<S> {
    pub listen_addr: SocketAddr,
    pub stats: Arc<S>,
    task: tokio::task::JoinHandle<()>,
}

impl<S: Send + Sync + 'static> Listening<S> {
    /// Listens on `listen` as `what` and serves each client with `serve` (handed the
    /// counters), counting its connections in the part of `stats` that `tap` picks and
    /// numbering them from `connection_offset + 1` (a shard's numbers are its own:
    /// `model::shard::connection_offset`).
    pub async fn start<F, Fut>(
        (listen, connection_offset): (SocketAddr, u32),
        what: &'static str,
        stats: S,
        tap: impl FnOnce(&Arc<S>) -> Arc<TapStats>,
        serve: F,
    ) -> anyhow::Result<Listening<S>>
    where
        F: Fn(TcpStream, SocketAddr, u32, Arc<S>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        use anyhow::Context;
        let listener = (tokio::net::TcpListener::bind(listen).await)
            .with_context(|| format!("{what} cannot listen on {listen}"))?;
        let listen_addr = listener.local_addr()?;
        let stats = Arc::new(stats);
        let shared = stats.clone();
        let accepting = (what, connection_offset);
        let task = accept_clients(listener, accepting, tap(&stats), move |stream, peer, n| {
            serve(stream, peer, n, shared.clone())
        });
        Ok(Listening {
            listen_addr,
            stats,
            task,
        })
    }

    pub fn stop(&self) {
        self.task.abort();
    }
}

/// Logs and records how a tapped connection ended.
pub fn connection_ended(
    peer: SocketAddr,
    connection: u32,
    ended: anyhow::Result<()>,
    recorder: &Recorder,
) {
    let reason = ended.map_or_else(|e| format!("{e:#}"), |()| "closed".to_string());
    tracing::info!(%peer, connection, %reason, "tapped connection ended");
    recorder.record(Event::TapConnectionEnded { connection, reason });
}
