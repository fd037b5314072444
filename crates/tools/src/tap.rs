//! A tap in front of a real deployment (`stratum-bench tap`): the run's SV1 or SV2 tap,
//! on its own, between any miners (or a farm's proxy) and any pool, writing the usual events
//! into a directory of its own, serving its counters to Prometheus, and with the
//! operator's node's ZMQ, recording each new block as it is announced.

use analysis::tap::{TapProtocol, TapSetup, TapSummary, TAP_FILE};
use anyhow::{Context, Result};
use harness::metrics::Exposition;
use probe::tap::FinalEvents;
use probe::{Event, Recorder, TapStats};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What to tap, and where its results go.
pub struct TapOptions {
    pub listen: SocketAddr,
    /// `HOST:PORT` of the pool (or proxy) tapped.
    pub upstream: String,
    pub out: PathBuf,
    pub metrics_bind: Option<SocketAddr>,
    /// The operator's node's ZMQ endpoint publishing `hashblock`.
    pub node_zmq: Option<String>,
    /// Ends by itself after this long (else on Ctrl-C or SIGTERM).
    pub duration: Option<Duration>,
    /// Connections the tap must be able to hold (checked against the descriptor limit).
    pub max_connections: Option<u64>,
}

/// Which tap runs.
pub enum Protocol {
    /// The SV1 line relay.
    Sv1,
    /// The SV2 tap: with the pool's authority secret key (SRI's base58check text) it
    /// terminates Noise and decodes every frame; without it, it relays the encrypted
    /// stream and records reads and bytes only.
    Sv2 {
        authority_secret_key: Option<String>,
    },
}

/// A tap running, of either protocol.
enum Running {
    Sv1(sv1::tap::Sv1Tap),
    Sv2(sv2::tap::Tap),
}

impl Running {
    fn listen_addr(&self) -> SocketAddr {
        match self {
            Running::Sv1(t) => t.listen_addr,
            Running::Sv2(t) => t.listen_addr,
        }
    }

    fn stats(&self) -> &Arc<TapStats> {
        match self {
            Running::Sv1(t) => &t.stats.tap,
            Running::Sv2(t) => &t.stats,
        }
    }

    /// The tap of `protocol` on `listen`, in front of `upstream`; an SV2 tap with the
    /// pool's `keys` decodes what it relays.
    async fn start(
        protocol: &Protocol,
        listen: SocketAddr,
        upstream: SocketAddr,
        keys: Option<sv2_wire::AuthorityKeys>,
        recorder: &Recorder,
    ) -> Result<Running> {
        Ok(match protocol {
            Protocol::Sv1 => Running::Sv1(
                sv1::tap::start(
                    sv1::tap::Sv1TapConfig {
                        listen,
                        upstream,
                        connection_offset: 0,
                    },
                    recorder.clone(),
                )
                .await?,
            ),
            Protocol::Sv2 { .. } => Running::Sv2(
                sv2::tap::start(
                    sv2::tap::TapConfig {
                        listen,
                        pool: upstream,
                        keys,
                        upstream_public: None,
                        connection_offset: 0,
                    },
                    recorder.clone(),
                )
                .await?,
            ),
        })
    }

    fn stop(&self) {
        match self {
            Running::Sv1(t) => t.stop(),
            Running::Sv2(t) => t.stop(),
        }
    }

    /// What the tap writes at its end.
    fn final_events(&self) -> Vec<Event> {
        match self {
            Running::Sv1(t) => t.stats.final_events(),
            Running::Sv2(t) => t.stats.final_events(),
        }
    }
}

/// Runs a tap until `duration` or a signal, then writes `summary.json` and returns it.
pub async fn run(protocol: Protocol, opts: TapOptions) -> Result<TapSummary> {
    let keys = match &protocol {
        Protocol::Sv2 {
            authority_secret_key: Some(text),
        } => Some(
            sv2_wire::AuthorityKeys::from_secret(text)
                .context("--authority-secret-key: not an SV2 authority secret key")?,
        ),
        _ => None,
    };
    let capacity = harness::limits::tap_capacity(opts.max_connections)?;
    let upstream = resolve(&opts.upstream).await?;
    let events = opts.out.join(model::run_dir::EVENTS_DIR);
    std::fs::create_dir_all(&events)
        .with_context(|| format!("cannot create {}", events.display()))?;
    let setup = TapSetup {
        protocol: match protocol {
            Protocol::Sv1 => TapProtocol::Sv1,
            Protocol::Sv2 { .. } => TapProtocol::Sv2,
        },
        listen: opts.listen.to_string(),
        upstream: opts.upstream.clone(),
        node_zmq: opts.node_zmq.clone(),
        decoded: matches!(protocol, Protocol::Sv1) || keys.is_some(),
    };
    write_json(&opts.out.join(TAP_FILE), &setup)?;
    // The node is checked before anything listens: a wrong endpoint fails the start.
    let hashblock = match &opts.node_zmq {
        Some(endpoint) => Some(sv1::hashblock::subscribe(endpoint).await?),
        None => None,
    };
    let metrics = match opts.metrics_bind {
        Some(bind) => Some(harness::metrics::bind_metrics(bind).await?),
        None => None,
    };
    let recorder = Recorder::to_file(&events.join("tap.jsonl"), "tap")?;
    let tap = Running::start(&protocol, opts.listen, upstream, keys, &recorder).await?;
    eprintln!(
        "{} tap on {} in front of {} (up to {capacity} connections{}); events in {}",
        setup.protocol.name(),
        tap.listen_addr(),
        opts.upstream,
        if setup.decoded {
            ""
        } else {
            ", encrypted: bytes and reads only"
        },
        opts.out.display()
    );
    let mut tasks = Vec::new();
    if let Some(sub) = hashblock {
        tasks.push(record_hashblocks(sub, recorder.clone()));
    }
    if let Some(listener) = metrics {
        let exposition = Arc::new(exposition(tap.stats()));
        tasks.push(serve_exposition(listener, exposition));
    }
    let (stats, sampling) = (tap.stats().clone(), recorder.clone());
    tasks.push(tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            sampling.record(stats.bytes_event());
        }
    }));
    match opts.duration {
        Some(d) => {
            tokio::select! {
                _ = tokio::time::sleep(d) => {}
                _ = harness::roles::terminated() => {}
            }
        }
        None => harness::roles::terminated().await,
    }
    tap.stop();
    for task in tasks {
        task.abort();
    }
    recorder.record(tap.stats().bytes_event());
    for event in tap.final_events() {
        recorder.record(event);
    }
    recorder.close()?;
    let summary = analysis::tap::summarize_dir(&opts.out);
    write_json(&opts.out.join(model::run_dir::SUMMARY_FILE), &summary)?;
    Ok(summary)
}

/// Records each block the node announces on its ZMQ hashblock, as it arrives.
fn record_hashblocks(
    mut sub: sv1::hashblock::Subscription,
    recorder: Recorder,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match sv1::hashblock::next_block(&mut sub).await {
                Ok(hash) => recorder.record(Event::NodeBlockAnnounced {
                    hash: hash.to_string(),
                }),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "the node's ZMQ");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    })
}

/// The tap's counters as Prometheus metrics.
fn exposition(stats: &TapStats) -> Exposition {
    let mut e = Exposition::default();
    let counters = [
        (
            "stratum_bench_tap_bytes_up",
            "Bytes the tap relayed towards the pool.",
            stats.bytes_up.clone(),
        ),
        (
            "stratum_bench_tap_bytes_down",
            "Bytes the tap relayed from the pool to its clients.",
            stats.bytes_down.clone(),
        ),
        (
            "stratum_bench_tap_connections",
            "Client connections the tap accepted.",
            stats.connections.clone(),
        ),
        (
            "stratum_bench_tap_upstream_unreachable",
            "Client connections the tap closed because the pool could not be reached.",
            stats.upstream_unreachable.clone(),
        ),
        (
            "stratum_bench_tap_jobs_relayed",
            "Jobs relayed to clients (SV1 mining.notify, SV2 NewMiningJob and NewExtendedMiningJob).",
            stats.jobs_relayed.clone(),
        ),
    ];
    for (name, help, counter) in counters {
        e.register_counter(name, help, counter);
    }
    e.register_counter(
        "stratum_bench_tap_shares",
        "Shares by the pool's verdict (accepted, stale, duplicate, low_difficulty, unknown_job, invalid).",
        stats.shares.clone(),
    );
    e.registry.register(
        "stratum_bench_tap_connections_open",
        "Client connections open through the tap now.",
        stats.connections_open.clone(),
    );
    e
}

/// Serves `/metrics` from `exposition` until aborted.
fn serve_exposition(
    listener: tokio::net::TcpListener,
    exposition: Arc<Exposition>,
) -> tokio::task::JoinHandle<()> {
    use axum::routing::get;
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let exposition = exposition.clone();
            async move {
                (
                    [("content-type", "text/plain; version=0.0.4")],
                    exposition.render(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    })
}

/// `HOST:PORT` to the first address it names.
async fn resolve(host_port: &str) -> Result<SocketAddr> {
    tokio::net::lookup_host(host_port)
        .await
        .with_context(|| format!("--upstream {host_port}: not a HOST:PORT this host can resolve"))?
        .next()
        .with_context(|| format!("--upstream {host_port}: resolves to no address"))
}

/// Writes `value` to `path` as indented JSON.
pub(crate) fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(value)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}
