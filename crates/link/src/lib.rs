//! A userspace WAN link between two sites.
//!
//! This machine's kernel has no `tc netem`, so every connection that crosses the WAN goes
//! through this relay: it accepts on the farm side, connects to the pool side, and holds
//! every chunk of bytes for the link's one-way delay (plus jitter and serialisation time
//! at the bandwidth cap) before writing it on. Order is kept, as TCP keeps it. Bytes are
//! counted per direction, and the relay measures its own lateness: how far past the due
//! time each chunk was actually written. Chunks are released against absolute deadlines
//! by a timer finer than tokio's millisecond wheel ([`timer`]).

pub mod attack;
pub mod fault;
pub mod timer;
mod window;

pub use window::{WindowClock, WindowOpening};

use anyhow::{Context, Result};
use attack::{Attacker, Connection};
use fault::Outages;
use probe::event::LinkEnd;
use probe::{mono_ns, Histogram};
use rand::Rng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What the link does to traffic.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkConfig {
    /// One-way delay farm -> pool.
    pub up_delay: Duration,
    /// One-way delay pool -> farm.
    pub down_delay: Duration,
    /// Extra delay drawn uniformly from `[0, jitter]` per chunk (order is kept).
    pub jitter: Duration,
    /// Bits per second in each direction; `None` is unlimited.
    pub bandwidth_bps: Option<u64>,
}

impl LinkConfig {
    /// A symmetric link with this round-trip time.
    pub fn from_rtt(rtt: Duration) -> Self {
        LinkConfig {
            up_delay: rtt / 2,
            down_delay: rtt / 2,
            jitter: Duration::ZERO,
            bandwidth_bps: None,
        }
    }
}

/// A direction across the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Farm to pool.
    Up,
    /// Pool to farm.
    Down,
}

/// Counters of one direction, shared by all connections.
#[derive(Default)]
pub struct DirectionStats {
    pub bytes: AtomicU64,
    pub chunks: AtomicU64,
    /// Nanoseconds each chunk was written past its due time (the relay's own latency).
    pub lateness_ns: Histogram,
}

impl DirectionStats {
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
pub struct LinkStats {
    pub up: DirectionStats,
    pub down: DirectionStats,
    pub connections: AtomicU64,
}

impl LinkStats {
    pub fn direction(&self, d: Direction) -> &DirectionStats {
        match d {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }
}

/// A running relay.
pub struct Relay {
    pub listen_addr: SocketAddr,
    pub stats: Arc<LinkStats>,
    accept: JoinHandle<()>,
}

impl Relay {
    /// Listens on `listen` (the farm side) and relays every connection to `upstream`.
    pub async fn start(listen: SocketAddr, upstream: SocketAddr, cfg: LinkConfig) -> Result<Relay> {
        let listen = Listen::alone(listen);
        Self::start_counted(listen, upstream, cfg, Arc::default(), Hazards::default()).await
    }

    /// Like [`Relay::start`], counting into `stats`, which several relays of one link
    /// (one per service crossing it) may share, with the link's attacker and this
    /// route's outages, if any.
    pub async fn start_counted(
        listen: Listen,
        upstream: SocketAddr,
        cfg: LinkConfig,
        stats: Arc<LinkStats>,
        hazards: Hazards,
    ) -> Result<Relay> {
        let listener = listen.bind().with_context(|| {
            format!(
                "cannot listen for the WAN link on {} (port in use?)",
                listen.addr
            )
        })?;
        let listen_addr = listener.local_addr()?;
        let listen = Listen {
            addr: listen_addr,
            ..listen
        };
        let shared = stats.clone();
        let Hazards { attacker, outages } = hazards;
        let accept = tokio::spawn(async move {
            let mut listener = listener;
            let mut window = outages.window();
            loop {
                let next_drop = fault::next_drop(&outages.now(), mono_ns());
                if let Some(down) = next_drop.filter(|d| d.from_ns <= mono_ns()) {
                    // The far end is down: the port refuses connections until it is back.
                    drop(listener);
                    timer::sleep_until_ns(down.until_ns).await;
                    listener = rebind(listen).await;
                    continue;
                }
                let accepted = probe::listen::accept_next("link", || listener.accept());
                // The window's opening moving moves the outages: they are read again.
                let (farm, peer) = match next_drop {
                    Some(down) => tokio::select! {
                        accepted = accepted => accepted,
                        _ = timer::sleep_until_ns(down.from_ns) => continue,
                        _ = window.moved() => continue,
                    },
                    None => tokio::select! {
                        accepted = accepted => accepted,
                        _ = window.moved() => continue,
                    },
                };
                let stats = shared.clone();
                let attacked = attacker.as_ref().map(Attacker::connection);
                let outages = outages.clone();
                tokio::spawn(async move {
                    let relayed = relay_connection(farm, upstream, cfg, stats, attacked, outages);
                    if let Err(e) = relayed.await {
                        tracing::info!(%peer, error = %e, "link connection ended");
                    }
                });
            }
        });
        Ok(Relay {
            listen_addr,
            stats,
            accept,
        })
    }

    pub fn stop(self) {
        self.accept.abort();
    }
}

/// What may befall a relay's connections besides delay: an attacker on the path, and
/// outages of the far end.
#[derive(Default)]
pub struct Hazards {
    pub attacker: Option<Arc<Attacker>>,
    pub outages: Outages,
}

/// Where a relay listens for the farm, and whether it shares that address with other
/// relays (the shards of one link, `SO_REUSEPORT`: the kernel spreads the farm's
/// connections over them).
#[derive(Debug, Clone, Copy)]
pub struct Listen {
    pub addr: SocketAddr,
    pub shared: bool,
}

impl Listen {
    /// `addr`, to this relay alone.
    pub fn alone(addr: SocketAddr) -> Listen {
        Listen {
            addr,
            shared: false,
        }
    }

    fn bind(self) -> std::io::Result<TcpListener> {
        let socket = match self.addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        // As `TcpListener::bind` does: a port in TIME_WAIT can be listened on again.
        socket.set_reuseaddr(true)?;
        socket.set_reuseport(self.shared)?;
        socket.bind(self.addr)?;
        socket.listen(1024)
    }
}

/// The farm-side port again after an outage; retried while something else holds it.
async fn rebind(listen: Listen) -> TcpListener {
    loop {
        match listen.bind() {
            Ok(listener) => return listener,
            Err(e) => {
                let addr = listen.addr;
                tracing::warn!(%addr, error = %e, "cannot listen again after the outage; retrying");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn relay_connection(
    farm: TcpStream,
    upstream: SocketAddr,
    cfg: LinkConfig,
    stats: Arc<LinkStats>,
    attacked: Option<Arc<Mutex<Connection>>>,
    outages: Outages,
) -> Result<()> {
    let pool = TcpStream::connect(upstream)
        .await
        .with_context(|| format!("link cannot reach the pool side at {upstream}"))?;
    farm.set_nodelay(true)?;
    pool.set_nodelay(true)?;
    stats.connections.fetch_add(1, Ordering::Relaxed);
    let (farm_r, farm_w) = farm.into_split();
    let (pool_r, pool_w) = pool.into_split();
    let ends = Ends {
        attacked,
        first_closed: Arc::default(),
        outages: outages.clone(),
    };
    let mut up = tokio::spawn(pump(
        farm_r,
        pool_w,
        cfg.up_delay,
        cfg,
        stats.clone(),
        Direction::Up,
        ends.clone(),
    ));
    let mut down = tokio::spawn(pump(
        pool_r,
        farm_w,
        cfg.down_delay,
        cfg,
        stats,
        Direction::Down,
        ends.clone(),
    ));
    // When either side closes, the other direction finishes delivering what is in flight;
    // when the far end drops, both close at once, and what is in flight is lost.
    let aborts = [up.abort_handle(), down.abort_handle()];
    let relayed = async {
        let _ = tokio::join!(&mut up, &mut down);
    };
    tokio::pin!(relayed);
    let mut window = outages.window();
    loop {
        match fault::next_drop(&outages.now(), mono_ns()) {
            None => tokio::select! {
                _ = &mut relayed => break,
                _ = window.moved() => {}
            },
            Some(down_at) => tokio::select! {
                _ = &mut relayed => break,
                _ = timer::sleep_until_ns(down_at.from_ns) => {
                    // The window may have moved the drop since: only a drop due now ends it.
                    let now = mono_ns();
                    if fault::next_drop(&outages.now(), now).is_some_and(|d| d.from_ns <= now) {
                        aborts.iter().for_each(tokio::task::AbortHandle::abort);
                        let _ = ends.first_closed.set((LinkEnd::Pool, mono_ns()));
                        break;
                    }
                }
                _ = window.moved() => {}
            },
        }
    }
    if let (Some(attacked), Some(&(by, t_ns))) = (&ends.attacked, ends.first_closed.get()) {
        attacked.lock().unwrap().closed(by, t_ns);
    }
    Ok(())
}

/// What both directions of a connection share: the attacker's hold on it, and which end
/// closed first, when.
#[derive(Clone)]
struct Ends {
    attacked: Option<Arc<Mutex<Connection>>>,
    first_closed: Arc<OnceLock<(LinkEnd, u64)>>,
    outages: Outages,
}

/// A chunk of bytes in flight, due for writing at `due_ns`.
struct InFlight {
    due_ns: u64,
    bytes: Vec<u8>,
}

/// Moves bytes one way: the reader stamps and schedules, the writer delivers on time.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    delay: Duration,
    cfg: LinkConfig,
    stats: Arc<LinkStats>,
    direction: Direction,
    ends: Ends,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<InFlight>();
    let writer_stats = stats.clone();
    let writer = tokio::spawn(async move {
        let dir = writer_stats.direction(direction);
        while let Some(chunk) = rx.recv().await {
            timer::sleep_until_ns(chunk.due_ns).await;
            if to.write_all(&chunk.bytes).await.is_err() {
                return;
            }
            dir.lateness_ns
                .record(mono_ns().saturating_sub(chunk.due_ns));
        }
        let _ = to.shutdown().await;
    });
    // A pump aborted (the far end dropped) takes its writer with it: what is in flight is
    // lost, not delivered late.
    let _writer_goes_too = AbortOnDrop(writer.abort_handle());

    let dir = stats.direction(direction);
    let delay_ns = delay.as_nanos() as u64;
    let jitter_ns = cfg.jitter.as_nanos() as u64;
    // When the emulated wire finishes sending what was queued before (bandwidth cap), and
    // the last due time (delivery stays in order even with jitter).
    let mut wire_free_ns = 0u64;
    let mut last_due_ns = 0u64;
    // SV1 and SV2 messages are small; a modest buffer keeps 10,000 relayed connections cheap.
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let end = match direction {
                    Direction::Up => LinkEnd::Farm,
                    Direction::Down => LinkEnd::Pool,
                };
                let _ = ends.first_closed.set((end, mono_ns()));
                break;
            }
            Ok(n) => n,
        };
        let arrived = mono_ns();
        let bytes = match &ends.attacked {
            Some(attacked) => attacked.lock().unwrap().pass(direction, &buf[..n]),
            None => buf[..n].to_vec(),
        };
        if bytes.is_empty() {
            continue;
        }
        let n = bytes.len();
        let sent = match cfg.bandwidth_bps {
            Some(bps) => {
                wire_free_ns =
                    wire_free_ns.max(arrived) + n as u64 * 8 * 1_000_000_000 / bps.max(1);
                wire_free_ns
            }
            None => arrived,
        };
        let jitter = if jitter_ns > 0 {
            rand::thread_rng().gen_range(0..=jitter_ns)
        } else {
            0
        };
        let due = fault::held_by_stalls(&ends.outages.now(), arrived, sent + jitter, delay_ns);
        last_due_ns = last_due_ns.max(due);
        dir.bytes.fetch_add(n as u64, Ordering::Relaxed);
        dir.chunks.fetch_add(1, Ordering::Relaxed);
        if tx
            .send(InFlight {
                due_ns: last_due_ns,
                bytes,
            })
            .is_err()
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A TCP echo peer on `addr`: the far end for measuring what the link itself adds.
pub async fn echo_peer(addr: SocketAddr) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for the echo peer on {addr}"))?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok(bound)
}

/// Round-trip times of `n` small request/response exchanges over one connection.
pub async fn round_trips(addr: SocketAddr, n: usize) -> Result<Vec<Duration>> {
    let mut s = TcpStream::connect(addr)
        .await
        .with_context(|| format!("cannot connect to {addr}"))?;
    s.set_nodelay(true)?;
    let mut out = Vec::with_capacity(n);
    let mut buf = [0u8; 128];
    for i in 0..n {
        let msg = format!("{{\"id\":{i},\"method\":\"mining.submit\",\"params\":[]}}\n");
        let t = std::time::Instant::now();
        s.write_all(msg.as_bytes()).await?;
        let mut got = 0;
        while got < msg.len() {
            let r = s.read(&mut buf[got..]).await?;
            anyhow::ensure!(r > 0, "the peer closed the connection");
            got += r;
        }
        out.push(t.elapsed());
    }
    Ok(out)
}
