//! One role per OS process, so each one's CPU and memory can be attributed.
//!
//! The harness writes a [`RoleSpec`] as JSON and starts `stratum-bench role --spec FILE`.
//! The role prints `READY {addresses}` on stdout once it serves, runs until SIGTERM or
//! SIGINT, then stops and writes out its events.

use anyhow::{Context, Result};
use probe::{Event, Recorder};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// What announces a role is ready, followed by a JSON object of its addresses.
pub const READY_PREFIX: &str = "READY ";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RoleSpec {
    Node {
        config: node::NodeConfig,
        rpc_user: String,
        rpc_password: String,
    },
    Sv1Pool {
        config: sv1::pool::PoolConfig,
    },
    Link {
        listen: SocketAddr,
        upstream: SocketAddr,
        config: link::LinkConfig,
    },
    Sv1Miners {
        config: sv1::fleet::FleetConfig,
    },
}

/// Runs the role described in `spec`, recording as `name` into `events`.
pub async fn run_role(spec: &Path, events: &Path, name: &str) -> Result<()> {
    let text = std::fs::read_to_string(spec)
        .with_context(|| format!("cannot read role spec {}", spec.display()))?;
    let spec: RoleSpec = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a role spec", spec.display()))?;
    let recorder = Recorder::to_file(events, name)?;
    let fds = crate::limits::raise_fd_limit();
    tracing::debug!(fds, "file descriptor limit");
    match spec {
        RoleSpec::Node {
            config,
            rpc_user,
            rpc_password,
        } => {
            let node = node::NodeHandle::start(node::NodeOptions {
                config,
                rpc_bind: "127.0.0.1:0".parse()?,
                auth: node::RpcAuth::UserPassword {
                    user: rpc_user,
                    password: rpc_password,
                },
                zmq_bind: Some("tcp://127.0.0.1:0".into()),
                recorder: recorder.clone(),
                value_sample_interval: Duration::from_secs(1),
            })
            .await?;
            ready(json!({"rpc": node.rpc_addr, "zmq": node.zmq_endpoint}));
            terminated().await;
            node.shutdown().await?;
        }
        RoleSpec::Sv1Pool { config } => {
            let pool = sv1::pool::PoolHandle::start(config, recorder.clone()).await?;
            ready(json!({"listen": pool.listen_addr}));
            terminated().await;
            pool.stop();
        }
        RoleSpec::Link {
            listen,
            upstream,
            config,
        } => {
            let relay = link::Relay::start(listen, upstream, config).await?;
            ready(json!({"listen": relay.listen_addr}));
            let stats = relay.stats.clone();
            let counting = recorder.clone();
            let sampler = tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tick.tick().await;
                    counting.record(Event::LinkBytes {
                        up_bytes: stats.up.bytes(),
                        down_bytes: stats.down.bytes(),
                    });
                }
            });
            terminated().await;
            sampler.abort();
            recorder.record(Event::LinkBytes {
                up_bytes: relay.stats.up.bytes(),
                down_bytes: relay.stats.down.bytes(),
            });
            recorder.record(Event::LinkLateness {
                up_ms: relay.stats.up.lateness_ns.dist(1e6),
                down_ms: relay.stats.down.lateness_ns.dist(1e6),
            });
            relay.stop();
        }
        RoleSpec::Sv1Miners { config } => {
            let fleet = sv1::fleet::FleetHandle::start(config, recorder.clone())?;
            ready(json!({}));
            terminated().await;
            fleet.stop().await;
        }
    }
    recorder.close()
}

fn ready(addresses: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{READY_PREFIX}{addresses}");
    let _ = out.flush();
}

/// Resolves on SIGTERM (the harness stopping the run) or SIGINT (Ctrl-C).
async fn terminated() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
