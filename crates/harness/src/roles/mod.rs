//! One role per OS process, so each one's CPU and memory can be attributed.
//!
//! The harness writes a [`RoleSpec`] as JSON and starts `stratum-bench role --spec FILE`.
//! The role prints `READY {addresses}` on stdout once it serves, runs until SIGTERM or
//! SIGINT, then stops and writes out its events.

mod serving;
pub use serving::WINDOW_NOTICE;

pub use serving::{serve, Link, Role, Running, SriApp};

use anyhow::{Context, Result};
use probe::Recorder;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
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
        /// Where and which Bitcoin Core Mining IPC to serve, when a side needs it.
        ipc: Option<node::ipc::IpcOptions>,
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
        /// The attack's and the outages' times count from the run's window opening: taken
        /// to be this long after the link's start until the harness says when it opened
        /// (on the link's stdin, once every role has started).
        #[serde(default)]
        warmup: Duration,
    },
    Sv1Miners {
        config: sv1::fleet::FleetConfig,
    },
    Sv2Miners {
        config: sv2::fleet::FleetConfig,
    },
    /// The fan-out bench's floor receivers: they read and drop what the floor writes.
    FloorPeers {
        config: crate::floor_peers::FloorPeersConfig,
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
    /// A real Bitcoin Core the run starts as its network (`[node] program`).
    CoreNetwork {
        config: crate::core_network::CoreNetworkConfig,
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

    /// This tap as shard `k` of a sharded one: the same, numbering its connections apart
    /// (`model::shard::connection_offset`). Any other role is as it was.
    pub fn tap_shard(&self, k: u32) -> RoleSpec {
        let mut spec = self.clone();
        let offset = model::shard::connection_offset(k);
        match &mut spec {
            RoleSpec::Sv1Tap { config } => config.connection_offset = offset,
            RoleSpec::Sv2Tap { config } => config.connection_offset = offset,
            _ => {}
        }
        spec
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
                connection_offset: 0,
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
            RoleSpec::Sv1Miners { .. }
            | RoleSpec::Sv2Miners { .. }
            | RoleSpec::FloorPeers { .. } => {}
            // Core picks its own RPC port; a real node is never planned.
            RoleSpec::CoreNetwork { .. } => {}
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
            RoleSpec::Sv1Miners { .. }
            | RoleSpec::Sv2Miners { .. }
            | RoleSpec::FloorPeers { .. } => Ready::default(),
            RoleSpec::CoreNetwork { .. } => Ready::default(),
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
    /// `listen` is shared with the other shards of the link (`link::Listen`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    pub upstream: SocketAddr,
    pub config: link::LinkConfig,
}

/// Runs role `name` as `spec` describes it, recording into `recorder`; what the role binds
/// of its own accord (the node's RPC and ZMQ) binds `bind_ip` (127.0.0.1 but in a
/// container).
pub async fn run_role(
    spec_path: &Path,
    name: &str,
    recorder: Recorder,
    bind_ip: IpAddr,
) -> Result<()> {
    let text = std::fs::read_to_string(spec_path)
        .with_context(|| format!("cannot read role spec {}", spec_path.display()))?;
    let spec: RoleSpec = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a role spec", spec_path.display()))?;
    let fds = crate::limits::raise_fd_limit();
    tracing::debug!(fds, "file descriptor limit");
    // An SRI app's config is written beside its spec.
    let sri = |app: sri::App, config: String, announce: Ready| -> Result<SriApp> {
        let path = spec_path.with_extension("toml");
        probe::private::write(&path, config)?;
        Ok(SriApp {
            app,
            config: path,
            announce,
        })
    };
    let r = &recorder;
    match spec {
        RoleSpec::Node {
            config,
            rpc_user,
            rpc_password,
            tdp,
            ipc,
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
                ipc,
                peer,
            };
            serve(options, name, r).await?
        }
        RoleSpec::Sv1Pool { config } => serve(config, name, r).await?,
        RoleSpec::Link {
            routes,
            attack,
            faults,
            warmup,
        } => {
            let link = Link {
                routes,
                attack,
                faults,
                warmup,
            };
            serve(link, name, r).await?
        }
        RoleSpec::Sv1Miners { config } => serve(config, name, r).await?,
        RoleSpec::Sv2Miners { config } => serve(config, name, r).await?,
        RoleSpec::FloorPeers { config } => serve(config, name, r).await?,
        RoleSpec::SriPool { params } => {
            let announce = Ready {
                jds: params.jds_listen,
                ..Ready::listening(params.listen)
            };
            let app = sri(sri::App::Pool, sri::pool_config(&params)?, announce)?;
            serve(app, name, r).await?
        }
        RoleSpec::SriTranslator { params } => {
            let config = sri::translator_config(&params);
            let app = sri(
                sri::App::Translator,
                config,
                Ready::listening(params.listen),
            )?;
            serve(app, name, r).await?
        }
        RoleSpec::SriJdc { params } => {
            let config = sri::jdc_config(&params);
            let announce = Ready::listening(params.listen);
            serve(
                sri(sri::App::JobDeclaratorClient, config, announce)?,
                name,
                r,
            )
            .await?
        }
        RoleSpec::Sv2Tap { config } => serve(config, name, r).await?,
        RoleSpec::RpcTap { config } => serve(config, name, r).await?,
        RoleSpec::CoreNetwork { config } => serve(config, name, r).await?,
        RoleSpec::Sv1Tap { config } => serve(config, name, r).await?,
    }
    recorder.close()
}

fn ready(announced: &Ready) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{READY_PREFIX}{announced}");
    let _ = out.flush();
}

/// Resolves on SIGTERM (the harness stopping the run) or SIGINT (Ctrl-C).
pub use lifecycle::terminated;
