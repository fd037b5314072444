//! Every role behind one trait: started from its spec, it announces where it can be
//! reached ([`Ready`]); it serves until the run stops it (or, for an SRI app, until it
//! ends by itself), then records what it measured to the end and lets go. [`serve`] is
//! that life, the same for every role.

use super::{announced, ready, terminated, LinkRoute, Ready};
use anyhow::{bail, Context, Result};
use probe::tap::FinalEvents;
use probe::{Event, Recorder};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A role, as its spec describes it.
pub trait Role {
    type Running: Running;
    /// Starts the role, recording into `recorder`.
    fn start(self, recorder: &Recorder) -> impl Future<Output = Result<Self::Running>>;
}

/// A role serving.
pub trait Running {
    /// Where the others reach it: its READY line.
    fn ready(&self) -> Ready;
    /// Resolves when the role ends by itself (an SRI app that exits); ours never do.
    fn ended(&mut self) -> impl Future<Output = Result<()>> {
        std::future::pending()
    }
    /// Stops it, recording what it measured to the end.
    fn stop(self, recorder: &Recorder) -> impl Future<Output = Result<()>>;
}

/// A role's life: started, announced, served until SIGTERM or SIGINT, stopped. A role
/// that ends by itself ends the process with its error (the harness records the exit).
pub async fn serve(role: impl Role, name: &str, recorder: &Recorder) -> Result<()> {
    let mut running = role.start(recorder).await?;
    ready(&running.ready());
    let ended = tokio::select! {
        _ = terminated() => None,
        result = running.ended() => Some(result),
    };
    match ended {
        None => running.stop(recorder).await,
        Some(result) => {
            result?;
            bail!("{name} stopped by itself")
        }
    }
}

impl Role for node::NodeOptions {
    type Running = node::NodeHandle;
    async fn start(self, _: &Recorder) -> Result<node::NodeHandle> {
        node::NodeHandle::start(self).await
    }
}

impl Running for node::NodeHandle {
    fn ready(&self) -> Ready {
        Ready {
            rpc: Some(self.rpc_addr),
            zmq: self.zmq_endpoint.clone(),
            zmq_hashblock: self.zmq_hashblock_endpoint.clone(),
            tdp: self.tdp_addr,
            start_mono_ns: Some(self.start_mono_ns()),
            ..Ready::default()
        }
    }
    async fn stop(self, _: &Recorder) -> Result<()> {
        self.shutdown().await
    }
}

impl Role for sv1::pool::PoolConfig {
    type Running = sv1::pool::PoolHandle;
    async fn start(self, recorder: &Recorder) -> Result<sv1::pool::PoolHandle> {
        sv1::pool::PoolHandle::start(self, recorder.clone()).await
    }
}

impl Running for sv1::pool::PoolHandle {
    fn ready(&self) -> Ready {
        Ready::listening(self.listen_addr)
    }
    async fn stop(self, _: &Recorder) -> Result<()> {
        sv1::pool::PoolHandle::stop(self);
        Ok(())
    }
}

impl Role for sv1::fleet::FleetConfig {
    type Running = mining::hashing::Fleet;
    async fn start(self, recorder: &Recorder) -> Result<mining::hashing::Fleet> {
        sv1::fleet::start(self, recorder.clone())
    }
}

impl Role for sv2::fleet::FleetConfig {
    type Running = mining::hashing::Fleet;
    async fn start(self, recorder: &Recorder) -> Result<mining::hashing::Fleet> {
        sv2::fleet::start(self, recorder.clone())
    }
}

/// Either protocol's miners: they listen nowhere.
impl Running for mining::hashing::Fleet {
    fn ready(&self) -> Ready {
        Ready::default()
    }
    async fn stop(self, _: &Recorder) -> Result<()> {
        mining::hashing::Fleet::stop(self).await;
        Ok(())
    }
}

impl Role for sv2::tap::TapConfig {
    type Running = sv2::tap::Tap;
    async fn start(self, recorder: &Recorder) -> Result<sv2::tap::Tap> {
        sv2::tap::start(self, recorder.clone()).await
    }
}

impl Role for sv1::tap::Sv1TapConfig {
    type Running = sv1::tap::Sv1Tap;
    async fn start(self, recorder: &Recorder) -> Result<sv1::tap::Sv1Tap> {
        sv1::tap::start(self, recorder.clone()).await
    }
}

/// Either protocol's tap: it listens, and records its final counters when stopped.
impl<S: FinalEvents + Send + Sync + 'static> Running for probe::tap::Listening<S> {
    fn ready(&self) -> Ready {
        Ready::listening(self.listen_addr)
    }
    async fn stop(self, recorder: &Recorder) -> Result<()> {
        for event in self.stats.final_events() {
            recorder.record(event);
        }
        probe::tap::Listening::stop(&self);
        Ok(())
    }
}

impl Role for crate::rpc_tap::RpcTapConfig {
    type Running = crate::rpc_tap::RpcTap;
    async fn start(self, recorder: &Recorder) -> Result<crate::rpc_tap::RpcTap> {
        crate::rpc_tap::RpcTap::start(self, recorder.clone()).await
    }
}

impl Running for crate::rpc_tap::RpcTap {
    fn ready(&self) -> Ready {
        Ready {
            ipc: self.ipc.as_ref().map(|ipc| ipc.socket.clone()),
            ..Ready::listening(self.listen_addr)
        }
    }
    async fn stop(self, _: &Recorder) -> Result<()> {
        crate::rpc_tap::RpcTap::stop(&self);
        self.settle().await;
        Ok(())
    }
}

/// An SRI app with its config written, announcing `announce` once it listens.
pub struct SriApp {
    pub app: sri::App,
    pub config: PathBuf,
    pub announce: Ready,
}

pub struct RunningSri {
    running: sri::Running,
    announce: Ready,
}

impl Role for SriApp {
    type Running = RunningSri;
    async fn start(self, _: &Recorder) -> Result<RunningSri> {
        let app = self.app;
        let listen = announced(&self.announce.listen, "listen", &format!("{app:?}"))?;
        let mut running = sri::Running::start(app, &self.config)?;
        running
            .wait_listening(listen, Duration::from_secs(25))
            .await
            .with_context(|| format!("{app:?} did not start (config {})", self.config.display()))?;
        Ok(RunningSri {
            running,
            announce: self.announce,
        })
    }
}

impl Running for RunningSri {
    fn ready(&self) -> Ready {
        self.announce.clone()
    }
    async fn ended(&mut self) -> Result<()> {
        self.running.finished().await
    }
    async fn stop(self, _: &Recorder) -> Result<()> {
        self.running.stop().await;
        Ok(())
    }
}

/// A side's link: a relay per route, with the link's attacker and outages.
pub struct Link {
    pub routes: Vec<LinkRoute>,
    pub attack: Option<link::attack::ScheduledAttack>,
    pub faults: Vec<link::fault::ScheduledFault>,
    /// The window is taken to open this long after the link's start, until told.
    pub warmup: Duration,
}

/// The line the harness writes on a link's stdin once every role has started.
pub const WINDOW_NOTICE: &str = "window-opens-in-ns";

/// The link's relays, their bytes counted every second.
pub struct RunningLink {
    relays: Vec<link::Relay>,
    stats: Arc<link::LinkStats>,
    sampler: tokio::task::JoinHandle<()>,
    window_notice: tokio::task::JoinHandle<()>,
}

/// Moves the window's opening when the harness says (`window-opens-in-ns N` on stdin).
/// Stdin closed without it (a swarm service has none): the link's own guess stands.
async fn follow_window_notice(opening: link::WindowOpening) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let told = (line.strip_prefix(WINDOW_NOTICE)).and_then(|n| n.trim().parse::<u64>().ok());
        match told {
            Some(in_ns) => opening.opens_in(in_ns),
            None => tracing::warn!(%line, "not a window notice: ignored"),
        }
    }
}

fn link_bytes(stats: &link::LinkStats) -> Event {
    Event::LinkBytes {
        up_bytes: stats.up.bytes(),
        down_bytes: stats.down.bytes(),
    }
}

impl Role for Link {
    type Running = RunningLink;
    async fn start(self, recorder: &Recorder) -> Result<RunningLink> {
        let stats = Arc::new(link::LinkStats::default());
        let start_ns = probe::mono_ns();
        let (opening, window) = link::WindowClock::new(start_ns + self.warmup.as_nanos() as u64);
        let window_notice = tokio::spawn(follow_window_notice(opening));
        let attacker = (self.attack)
            .map(|a| link::attack::Attacker::start(a, window.clone(), recorder.clone()));
        // A fault of a route this link does not carry (the JDS of a side without one) is
        // not this link's.
        let routes = self.routes.len();
        let faults: Vec<_> = (self.faults.into_iter())
            .filter(|f| f.routes.iter().all(|r| *r < routes))
            .collect();
        link::fault::announce(&faults, &window, recorder);
        let mut relays = Vec::new();
        for (i, route) in self.routes.into_iter().enumerate() {
            let hazards = link::Hazards {
                attacker: attacker.clone(),
                outages: link::fault::Outages::of_route(&faults, i, window.clone()),
            };
            let listen = link::Listen {
                addr: route.listen,
                shared: route.shared,
            };
            let relay = link::Relay::start_counted(
                listen,
                route.upstream,
                route.config,
                stats.clone(),
                hazards,
            );
            relays.push(relay.await?);
        }
        let (counted, counting) = (stats.clone(), recorder.clone());
        let sampler = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                counting.record(link_bytes(&counted));
            }
        });
        Ok(RunningLink {
            relays,
            stats,
            sampler,
            window_notice,
        })
    }
}

impl Running for RunningLink {
    fn ready(&self) -> Ready {
        Ready {
            routes: self.relays.iter().map(|r| r.listen_addr).collect(),
            ..Ready::default()
        }
    }
    async fn stop(self, recorder: &Recorder) -> Result<()> {
        self.sampler.abort();
        self.window_notice.abort();
        recorder.record(link_bytes(&self.stats));
        recorder.record(Event::LinkLateness {
            up_ms: self.stats.up.lateness_ns.dist(1e6),
            down_ms: self.stats.down.lateness_ns.dist(1e6),
        });
        for relay in self.relays {
            relay.stop();
        }
        Ok(())
    }
}
