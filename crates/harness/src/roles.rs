//! One role per OS process, so each one's CPU and memory can be attributed.
//!
//! The harness writes a [`RoleSpec`] as JSON and starts `stratum-bench role --spec FILE`.
//! The role prints `READY {addresses}` on stdout once it serves, runs until SIGTERM or
//! SIGINT, then stops and writes out its events.

use anyhow::{Context, Result};
use probe::{Event, Recorder};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What announces a role is ready, followed by its [`Ready`] as JSON.
pub const READY_PREFIX: &str = "READY ";

/// What a role announces once it serves: where the others reach it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    /// Where it takes connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    /// A link's farm-side address of each of its routes, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<SocketAddr>,
    /// A node's RPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc: Option<SocketAddr>,
    /// A node's ZMQ publishers, `tcp://HOST:PORT`: every topic, and `hashblock` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zmq: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zmq_hashblock: Option<String>,
    /// A node's Template Distribution face.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tdp: Option<SocketAddr>,
    /// An SRI pool's Job Declarator Server, in its process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jds: Option<SocketAddr>,
    /// A node's virtual time zero on its host's monotonic clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_mono_ns: Option<u64>,
    /// An RPC tap's Mining IPC socket, in front of a real node's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<std::path::PathBuf>,
}

impl Ready {
    /// A role that takes connections at `addr` and announces nothing else.
    pub fn listening(addr: SocketAddr) -> Ready {
        Ready {
            listen: Some(addr),
            ..Ready::default()
        }
    }

    /// The ports of every TCP address it announces, in order.
    pub fn ports(&self) -> Vec<u16> {
        let zmq = |endpoint: &Option<String>| -> Option<SocketAddr> {
            endpoint.as_deref()?.strip_prefix("tcp://")?.parse().ok()
        };
        let mut ports: Vec<u16> = (self.listen.iter())
            .chain(&self.routes)
            .chain(&self.rpc)
            .chain(&self.tdp)
            .chain(&self.jds)
            .copied()
            .chain(zmq(&self.zmq))
            .chain(zmq(&self.zmq_hashblock))
            .map(|addr| addr.port())
            .collect();
        ports.sort_unstable();
        ports
    }
}

/// As it is announced and logged: JSON.
impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&json)
    }
}

/// A field of role `role`'s READY announcement the caller needs, or an error naming it.
pub fn announced<T: Clone>(field: &Option<T>, key: &str, role: &str) -> Result<T> {
    field
        .clone()
        .with_context(|| format!("role {role} announced no `{key}`"))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RoleSpec {
    Node {
        config: node::NodeConfig,
        rpc_user: String,
        rpc_password: String,
        /// The SV2 Template Distribution face, when a side needs it.
        tdp: Option<node::tdp::TdpOptions>,
        /// Where to serve Bitcoin Core's Mining IPC, when a side needs it.
        ipc_data_dir: Option<std::path::PathBuf>,
        /// The node a farm's node follows (its config says it is a follower).
        #[serde(default)]
        peer: Option<node::peer::PeerOptions>,
        /// The ports its RPC and ZMQ publishers bind: 0 for any, fixed in a deployment.
        #[serde(default)]
        ports: NodePorts,
    },
    Sv1Pool {
        config: sv1::pool::PoolConfig,
    },
    /// One site's WAN link: every connection between farm and pool of a side crosses it,
    /// each route with its own delays, all bytes counted together.
    Link {
        routes: Vec<LinkRoute>,
        /// An attacker on the link (scenario `link.attack`), on every route alike.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attack: Option<link::attack::ScheduledAttack>,
        /// Outages of the routes' far ends (scenario `faults`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        faults: Vec<link::fault::ScheduledFault>,
    },
    Sv1Miners {
        config: sv1::fleet::FleetConfig,
    },
    Sv2Miners {
        config: sv2::fleet::FleetConfig,
    },
    /// SRI's `pool_sv2`, with a config generated next to the spec.
    SriPool {
        params: sri::PoolParams,
    },
    /// SRI's `translator_sv2`, likewise.
    SriTranslator {
        params: sri::TranslatorParams,
    },
    /// SRI's `jd_client_sv2`, likewise.
    SriJdc {
        params: sri::JdcParams,
    },
    /// The Noise-terminating tap in front of an SV2 pool (or its JDS).
    Sv2Tap {
        config: sv2::tap::TapConfig,
    },
    /// The line relay in front of an SV1 pool.
    Sv1Tap {
        config: sv1::tap::Sv1TapConfig,
    },
    /// The RPC tap between the SV1 pools and a real node, with the node's tips.
    RpcTap {
        config: crate::rpc_tap::RpcTapConfig,
    },
}

impl RoleSpec {
    /// A tap on any loopback port, answering as the pool (`keys`) in front of `upstream`.
    pub fn tap(upstream: SocketAddr, keys: &sv2_wire::AuthorityKeys) -> RoleSpec {
        RoleSpec::sv2_tap(upstream, keys, None)
    }

    /// A tap answering with `keys` in front of a Template Provider whose own authority
    /// key is `upstream_public`.
    pub fn template_tap(
        upstream: SocketAddr,
        upstream_public: stratum_apps::key_utils::Secp256k1PublicKey,
        keys: &sv2_wire::AuthorityKeys,
    ) -> RoleSpec {
        RoleSpec::sv2_tap(upstream, keys, Some(upstream_public))
    }

    fn sv2_tap(
        upstream: SocketAddr,
        keys: &sv2_wire::AuthorityKeys,
        upstream_public: Option<stratum_apps::key_utils::Secp256k1PublicKey>,
    ) -> RoleSpec {
        RoleSpec::Sv2Tap {
            config: sv2::tap::TapConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                pool: upstream,
                keys: Some(keys.clone()),
                upstream_public,
            },
        }
    }
}

/// The ports a node role binds of its own accord (0: any free one).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct NodePorts {
    pub rpc: u16,
    pub zmq: u16,
    pub zmq_hashblock: u16,
}

impl RoleSpec {
    /// Gives every port the role would pick itself one from `next`: what lets a plan tell
    /// other roles where it will listen before it starts.
    pub fn fix_ports(&mut self, next: &mut impl FnMut() -> u16) {
        let mut fix = |port: &mut u16| {
            if *port == 0 {
                *port = next();
            }
        };
        let mut listens: Vec<&mut SocketAddr> = Vec::new();
        match self {
            RoleSpec::Node { ports, tdp, .. } => {
                for port in [&mut ports.rpc, &mut ports.zmq, &mut ports.zmq_hashblock] {
                    fix(port);
                }
                listens.extend(tdp.as_mut().map(|t| &mut t.bind));
            }
            RoleSpec::Sv1Pool { config } => listens.push(&mut config.listen),
            RoleSpec::Link { routes, .. } => {
                listens.extend(routes.iter_mut().map(|r| &mut r.listen))
            }
            RoleSpec::Sv1Miners { .. } | RoleSpec::Sv2Miners { .. } => {}
            RoleSpec::SriPool { params } => {
                listens.push(&mut params.listen);
                listens.extend(params.jds_listen.as_mut());
            }
            RoleSpec::SriTranslator { params } => listens.push(&mut params.listen),
            RoleSpec::SriJdc { params } => listens.push(&mut params.listen),
            RoleSpec::Sv2Tap { config } => listens.push(&mut config.listen),
            RoleSpec::Sv1Tap { config } => listens.push(&mut config.listen),
            RoleSpec::RpcTap { config } => listens.push(&mut config.listen),
        }
        for addr in listens {
            let mut port = addr.port();
            fix(&mut port);
            addr.set_port(port);
        }
    }

    /// What a role of this spec, its ports fixed, announces when it stands at `at`: a
    /// plan's stand-in for its READY line (with no node's start time, which a plan cannot
    /// know, and no RPC tap's socket: a real node is never planned).
    pub fn planned_ready(&self, at: IpAddr) -> Ready {
        let here = |addr: SocketAddr| SocketAddr::new(at, addr.port());
        let zmq = |port: u16| Some(format!("tcp://{}", SocketAddr::new(at, port)));
        match self {
            RoleSpec::Node { ports, tdp, .. } => Ready {
                rpc: Some(SocketAddr::new(at, ports.rpc)),
                zmq: zmq(ports.zmq),
                zmq_hashblock: zmq(ports.zmq_hashblock),
                tdp: tdp.as_ref().map(|t| here(t.bind)),
                ..Ready::default()
            },
            RoleSpec::Link { routes, .. } => Ready {
                routes: routes.iter().map(|r| here(r.listen)).collect(),
                ..Ready::default()
            },
            RoleSpec::Sv1Miners { .. } | RoleSpec::Sv2Miners { .. } => Ready::default(),
            RoleSpec::Sv1Pool { config } => Ready::listening(here(config.listen)),
            RoleSpec::SriPool { params } => Ready {
                jds: params.jds_listen.map(here),
                ..Ready::listening(here(params.listen))
            },
            RoleSpec::SriTranslator { params } => Ready::listening(here(params.listen)),
            RoleSpec::SriJdc { params } => Ready::listening(here(params.listen)),
            RoleSpec::Sv2Tap { config } => Ready::listening(here(config.listen)),
            RoleSpec::Sv1Tap { config } => Ready::listening(here(config.listen)),
            RoleSpec::RpcTap { config } => Ready::listening(here(config.listen)),
        }
    }
}

/// One relayed service: the farm connects to `listen`, the relay connects to `upstream`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkRoute {
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
    pub config: link::LinkConfig,
}

/// Runs the role described in `spec`, recording into `recorder`; what the role binds of
/// its own accord (the node's RPC and ZMQ) binds `bind_ip` (127.0.0.1 but in a container).
pub async fn run_role(spec_path: &Path, recorder: Recorder, bind_ip: IpAddr) -> Result<()> {
    let text = std::fs::read_to_string(spec_path)
        .with_context(|| format!("cannot read role spec {}", spec_path.display()))?;
    let spec: RoleSpec = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a role spec", spec_path.display()))?;
    let fds = crate::limits::raise_fd_limit();
    tracing::debug!(fds, "file descriptor limit");
    match spec {
        RoleSpec::Node {
            config,
            rpc_user,
            rpc_password,
            tdp,
            ipc_data_dir,
            peer,
            ports,
        } => {
            let options = node::NodeOptions {
                config,
                rpc_bind: SocketAddr::new(bind_ip, ports.rpc),
                auth: node::RpcAuth::UserPassword {
                    user: rpc_user,
                    password: rpc_password,
                },
                zmq_bind: Some(format!("tcp://{}", SocketAddr::new(bind_ip, ports.zmq))),
                // What a pool's hashblock subscription is given, as a bitcoind set up with
                // one address per topic.
                zmq_hashblock_bind: Some(format!(
                    "tcp://{}",
                    SocketAddr::new(bind_ip, ports.zmq_hashblock)
                )),
                recorder: recorder.clone(),
                value_sample_interval: Duration::from_secs(1),
                tdp,
                ipc_data_dir,
                peer,
            };
            run_node(options).await?;
        }
        RoleSpec::Sv1Pool { config } => {
            let pool = sv1::pool::PoolHandle::start(config, recorder.clone()).await?;
            ready(&Ready::listening(pool.listen_addr));
            terminated().await;
            pool.stop();
        }
        RoleSpec::Link {
            routes,
            attack,
            faults,
        } => run_link(routes, attack, faults, &recorder).await?,
        RoleSpec::Sv1Miners { config } => {
            let fleet = sv1::fleet::FleetHandle::start(config, recorder.clone())?;
            ready(&Ready::default());
            terminated().await;
            fleet.stop().await;
        }
        RoleSpec::Sv2Miners { config } => {
            let fleet = sv2::fleet::FleetHandle::start(config, recorder.clone())?;
            ready(&Ready::default());
            terminated().await;
            fleet.stop().await;
        }
        RoleSpec::SriPool { params } => {
            let config = spec_path.with_extension("toml");
            probe::private::write(&config, sri::pool_config(&params)?)?;
            let announce = Ready {
                jds: params.jds_listen,
                ..Ready::listening(params.listen)
            };
            run_sri(sri::App::Pool, &config, announce).await?;
        }
        RoleSpec::SriTranslator { params } => {
            let config = spec_path.with_extension("toml");
            probe::private::write(&config, sri::translator_config(&params))?;
            run_sri(
                sri::App::Translator,
                &config,
                Ready::listening(params.listen),
            )
            .await?;
        }
        RoleSpec::SriJdc { params } => {
            let config = spec_path.with_extension("toml");
            probe::private::write(&config, sri::jdc_config(&params))?;
            let announce = Ready::listening(params.listen);
            run_sri(sri::App::JobDeclaratorClient, &config, announce).await?;
        }
        RoleSpec::Sv2Tap { config } => {
            let tap = sv2::tap::Tap::start(config, recorder.clone()).await?;
            ready(&Ready::listening(tap.listen_addr));
            terminated().await;
            recorder.record(tap.stats.latency_event());
            tap.stop();
        }
        RoleSpec::RpcTap { config } => {
            let tap = crate::rpc_tap::RpcTap::start(config, recorder.clone()).await?;
            ready(&Ready {
                ipc: tap.ipc.as_ref().map(|ipc| ipc.socket.clone()),
                ..Ready::listening(tap.listen_addr)
            });
            terminated().await;
            tap.stop();
        }
        RoleSpec::Sv1Tap { config } => {
            let tap = sv1::tap::Sv1Tap::start(config, recorder.clone()).await?;
            ready(&Ready::listening(tap.listen_addr));
            terminated().await;
            for event in tap.stats.final_events() {
                recorder.record(event);
            }
            tap.stop();
        }
    }
    recorder.close()
}

/// The node until the run ends, its addresses in its READY line.
async fn run_node(options: node::NodeOptions) -> Result<()> {
    let node = node::NodeHandle::start(options).await?;
    ready(&Ready {
        rpc: Some(node.rpc_addr),
        zmq: node.zmq_endpoint.clone(),
        zmq_hashblock: node.zmq_hashblock_endpoint.clone(),
        tdp: node.tdp_addr,
        start_mono_ns: Some(node.start_mono_ns()),
        ..Ready::default()
    });
    terminated().await;
    node.shutdown().await
}

/// A side's link: a relay per route (with the link's attacker, if any), its bytes counted
/// every second and its lateness at the end.
async fn run_link(
    routes: Vec<LinkRoute>,
    attack: Option<link::attack::ScheduledAttack>,
    faults: Vec<link::fault::ScheduledFault>,
    recorder: &Recorder,
) -> Result<()> {
    let stats = Arc::new(link::LinkStats::default());
    let start_ns = probe::mono_ns();
    let attacker = attack.map(|a| link::attack::Attacker::start(a, recorder.clone()));
    // A fault of a route this link does not carry (the JDS of a side without one) is not
    // this link's.
    let faults: Vec<_> = (faults.into_iter())
        .filter(|f| f.routes.iter().all(|r| *r < routes.len()))
        .collect();
    link::fault::announce(&faults, start_ns, recorder);
    let mut relays = Vec::new();
    for (i, route) in routes.into_iter().enumerate() {
        let hazards = link::Hazards {
            attacker: attacker.clone(),
            outages: link::fault::outages_of(&faults, i, start_ns),
        };
        relays.push(
            link::Relay::start_counted(
                route.listen,
                route.upstream,
                route.config,
                stats.clone(),
                hazards,
            )
            .await?,
        );
    }
    ready(&Ready {
        routes: relays.iter().map(|r| r.listen_addr).collect(),
        ..Ready::default()
    });
    let bytes = |stats: &link::LinkStats| Event::LinkBytes {
        up_bytes: stats.up.bytes(),
        down_bytes: stats.down.bytes(),
    };
    let (counted, counting) = (stats.clone(), recorder.clone());
    let sampler = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            counting.record(bytes(&counted));
        }
    });
    terminated().await;
    sampler.abort();
    recorder.record(bytes(&stats));
    recorder.record(Event::LinkLateness {
        up_ms: stats.up.lateness_ns.dist(1e6),
        down_ms: stats.down.lateness_ns.dist(1e6),
    });
    for relay in relays {
        relay.stop();
    }
    Ok(())
}

/// Runs an SRI app until the run ends, announcing `announce` once it listens; an app
/// that stops by itself ends the role with its error (the harness records the role's
/// exit).
async fn run_sri(app: sri::App, config: &Path, announce: Ready) -> Result<()> {
    let listen = announced(&announce.listen, "listen", &format!("{app:?}"))?;
    let mut running = sri::Running::start(app, config)?;
    running
        .wait_listening(listen, Duration::from_secs(25))
        .await
        .with_context(|| format!("{app:?} did not start (config {})", config.display()))?;
    ready(&announce);
    let ended = tokio::select! {
        _ = terminated() => None,
        result = running.finished() => Some(result),
    };
    match ended {
        None => {
            running.stop().await;
            Ok(())
        }
        Some(result) => {
            result?;
            anyhow::bail!("{app:?} stopped by itself")
        }
    }
}

fn ready(announced: &Ready) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{READY_PREFIX}{announced}");
    let _ = out.flush();
}

/// Resolves on SIGTERM (the harness stopping the run) or SIGINT (Ctrl-C).
pub async fn terminated() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
