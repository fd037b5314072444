//! `stratum-bench run`: start the roles, measure, stop, summarise.

use crate::collector::Collector;
use crate::metrics::{render, RoleGauges};
use crate::process::{ready_field, stop_all, EventsTo, Launcher, RoleProcess};
use crate::roles::{LinkRoute, RoleSpec};
use crate::scenario::{Config, EventsSink, Scenario};
use analysis::headline::unresolved;
use analysis::manifest::{
    LinkParams, Manifest, Sample, SideRoles, Stopped, EVENTS_DIR, MANIFEST_FILE, SAMPLES_FILE,
};
use analysis::summary::{compute, summarize, Summary};
use anyhow::{Context, Result};
use parking_lot::Mutex;
use probe::{mono_ns, Event, Record, Recorder};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use stratum_apps::key_utils::Secp256k1PublicKey;

pub struct RunOptions {
    pub scenario: Scenario,
    /// Run directory; default `runs/<time>-<name>`.
    pub out: Option<PathBuf>,
    pub metrics_bind: SocketAddr,
    /// What the verdict's differences are worth computed for.
    pub worth: analysis::worth::WorthAssumptions,
    /// Stop once every headline difference is significant or known to within this many
    /// percent of SV1's value (the scenario's duration is then the cap).
    pub until_known_pct: Option<f64>,
    /// How roles start (the scenario's `placement` decides where their events go).
    pub launcher: Launcher,
    /// Test only: drop every collector connection once, this long into the run.
    pub cut_collector_after: Option<Duration>,
}

pub struct RunOutcome {
    pub dir: PathBuf,
    pub summary: Summary,
    pub interrupted: bool,
}

const NODE: &str = "node";
/// The widest uncertainty of a clock offset a run measures across.
const CLOCK_BOUND: Duration = Duration::from_millis(2);
const RPC_USER: &str = "stratum-bench";

/// What a side's SV1 miners authorize as, before `.<index>`, unless its pool wants another.
pub(crate) fn default_worker_prefix(side: &str) -> String {
    format!("{side}-miner")
}

/// The RPC user an SV1 side's pool logs in as: the node keeps a getblocktemplate cache per
/// user, so every pool is served as by a bitcoind of its own.
fn pool_rpc_user(side: &str) -> String {
    format!("{RPC_USER}.{side}")
}

pub async fn run(mut opts: RunOptions) -> Result<RunOutcome> {
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_dir(&opts.scenario.name));
    for sub in [EVENTS_DIR, "logs"] {
        std::fs::create_dir_all(dir.join(sub))
            .with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
    }
    if opts.scenario.placement.isolate {
        opts.launcher.cpus = Some(crate::process::isolated_cpus()?);
    }
    let collector = match opts.scenario.placement.events {
        EventsSink::File => None,
        EventsSink::Collector => {
            let bind = SocketAddr::from(([127, 0, 0, 1], 0));
            let collector = Collector::start(bind, dir.join(EVENTS_DIR)).await?;
            opts.launcher.events = EventsTo::Collector(collector.addr);
            Some(collector)
        }
    };
    let s = &opts.scenario;
    // Role specs and configs hold the run's RPC password and authority keys: the owner's.
    probe::private::create_dir(&dir.join("roles"))
        .with_context(|| format!("cannot create {}", dir.join("roles").display()))?;
    std::fs::write(
        dir.join("scenario.toml"),
        toml::to_string(s).context("scenario serialises")?,
    )?;
    std::fs::write(
        dir.join(crate::host::HOST_FILE),
        serde_json::to_string_pretty(&crate::host::Host::capture())?,
    )?;
    // Fail before anything starts when the metrics port is taken.
    let metrics_listener = tokio::net::TcpListener::bind(opts.metrics_bind)
        .await
        .with_context(|| {
            format!(
                "cannot serve metrics on {} (port {} in use? choose another with --metrics-bind)",
                opts.metrics_bind,
                opts.metrics_bind.port()
            )
        })?;
    // The address bound, not the one asked for: `--metrics-bind 127.0.0.1:0` takes any port.
    eprintln!(
        "metrics on http://{}/metrics",
        metrics_listener.local_addr()?
    );
    let harness_events = Recorder::to_file(&dir.join(EVENTS_DIR).join("harness.jsonl"), "harness")?;

    let mut roles: Vec<RoleProcess> = Vec::new();
    let mut started = start_roles(&opts, &dir, &mut roles).await;
    if let (Ok(_), Some(collector)) = (&started, &collector) {
        // Measuring across a clock known no better than this would measure the clock.
        if let Err(e) = collector.check_clocks(CLOCK_BOUND).await {
            started = Err(e);
        }
    }
    let sides = match started {
        Ok(sides) => sides,
        Err(e) => {
            stop_all(&mut roles).await;
            return Err(e);
        }
    };

    let t0 = mono_ns();
    let mut manifest = Manifest {
        scenario: s.name.clone(),
        window_start_ns: t0 + s.warmup.as_nanos() as u64,
        window_end_ns: t0 + (s.warmup + s.duration).as_nanos() as u64,
        node_role: NODE.into(),
        link: LinkParams {
            rtt_ms: s.link.rtt_ms,
            jitter_ms: s.link.jitter_ms,
            bandwidth_bps: s.link.bandwidth_mbps.map(|m| (m * 1e6) as u64),
        },
        sides,
        worth: opts.worth.clone(),
        stopped: None,
        clocks: Vec::new(),
    };
    let mut cut_pending = opts.cut_collector_after;
    let live = Arc::new(Mutex::new((None::<Summary>, RoleGauges::new())));
    let server = {
        let live = live.clone();
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let live = live.clone();
                async move {
                    let (summary, gauges) = &*live.lock();
                    let body = summary
                        .as_ref()
                        .map(|s| render(s, gauges))
                        .unwrap_or_default();
                    ([("content-type", "text/plain; version=0.0.4")], body)
                }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(metrics_listener, app).await;
        })
    };

    let mut samples_file = std::fs::File::create(dir.join(SAMPLES_FILE))?;
    let mut tail = Tail::new(dir.join(EVENTS_DIR));
    let mut samples: Vec<Sample> = Vec::new();
    let total = s.warmup + s.duration;
    let interactive = std::io::stderr().is_terminal();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut interrupted = false;
    let mut second = 0u64;
    let mut stopped: Option<Stopped> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = tokio::signal::ctrl_c() => {
                interrupted = true;
                eprintln!("\ninterrupted: stopping the roles and writing the run");
                break;
            }
        }
        second += 1;
        let now = mono_ns();
        if let (Some(after), Some(collector)) = (cut_pending, &collector) {
            if Duration::from_nanos(now.saturating_sub(t0)) >= after {
                tracing::warn!("test: dropping every collector connection");
                collector.cut_connections();
                cut_pending = None;
            }
        }
        let mut gauges = RoleGauges::new();
        for role in roles.iter_mut() {
            if let Some((cpu, rss)) = role.meter.sample() {
                let cpu = cpu.unwrap_or(0.0);
                gauges.insert(role.name.clone(), (cpu, rss));
                let sample = Sample {
                    t_ns: now,
                    role: role.name.clone(),
                    cpu_pct: cpu,
                    rss_bytes: rss,
                };
                writeln!(samples_file, "{}", serde_json::to_string(&sample)?)?;
                samples.push(sample);
            }
            if let Some(status) = role.newly_exited() {
                tracing::error!(role = %role.name, %status, "role exited during the run; see logs/{}.log", role.name);
                harness_events.record(Event::RoleExited {
                    name: role.name.clone(),
                    status: status.to_string(),
                });
            }
        }
        if second.is_multiple_of(2) || now >= manifest.window_end_ns {
            let so_far = Manifest {
                window_end_ns: now.min(manifest.window_end_ns),
                ..manifest.clone()
            };
            let summary = compute(&so_far, tail.read_new(), &samples);
            progress(&summary, now.saturating_sub(t0), total, interactive);
            if let Some(pct) = opts.until_known_pct {
                let open = unresolved(&summary.verdict, pct);
                let at_cap = now >= manifest.window_end_ns;
                // Checked every 10 s of the window, so a chance early crossing weighs less.
                let checkpoint = summary.duration_s >= 10.0 && second.is_multiple_of(10);
                if (checkpoint && open.is_empty() && !summary.verdict.is_empty()) || at_cap {
                    stopped = Some(Stopped {
                        reason: if at_cap {
                            "the duration cap"
                        } else {
                            "every headline difference known"
                        }
                        .into(),
                        after_s: summary.duration_s,
                        precision_pct: pct,
                        unresolved: open,
                    });
                    // The window ends here; the check below ends the loop.
                    manifest.window_end_ns = now.min(manifest.window_end_ns);
                }
            }
            *live.lock() = (Some(summary), gauges);
        } else {
            live.lock().1 = gauges;
        }
        if now >= manifest.window_end_ns {
            break;
        }
    }
    if interrupted {
        manifest.window_end_ns = mono_ns().min(manifest.window_end_ns);
        if let Some(pct) = opts.until_known_pct {
            stopped = Some(Stopped {
                reason: "interrupted".into(),
                after_s: manifest.window().secs(),
                precision_pct: pct,
                unresolved: Vec::new(),
            });
        }
    } else {
        // What happened just before the window closed is still on its way (a job for a
        // tip found in the last milliseconds crosses the link after it): let it land.
        tokio::time::sleep(drain_time(s.link.longest_rtt())).await;
    }
    if interactive {
        eprintln!();
    }
    if let Some(collector) = &collector {
        // The last probes, while every role still answers.
        collector.probe_again().await;
    }
    stop_all(&mut roles).await;
    if let Some(collector) = collector {
        // Every role has handed over its events by now: its close waits for that.
        manifest.clocks = collector.clocks();
    }
    server.abort();
    harness_events.close()?;
    manifest.stopped = stopped;
    std::fs::write(
        dir.join(MANIFEST_FILE),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    let summary = summarize(&dir)?;
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    Ok(RunOutcome {
        dir,
        summary,
        interrupted,
    })
}

/// How long the roles keep running after the measured window: a second, plus two round
/// trips of the link.
fn drain_time(rtt_ms: f64) -> Duration {
    Duration::from_secs(1) + Duration::from_secs_f64(2.0 * rtt_ms.max(0.0) / 1e3)
}

fn default_dir(name: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, mo, d) = civil_from_days(days as i64);
    PathBuf::from("runs").join(format!(
        "{y:04}{mo:02}{d:02}-{:02}{:02}{:02}-{name}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Gregorian date of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Starts the node, then per side the pool, link and miners; returns the sides' roles.
async fn start_roles(
    opts: &RunOptions,
    dir: &Path,
    roles: &mut Vec<RoleProcess>,
) -> Result<BTreeMap<String, SideRoles>> {
    let s = &opts.scenario;
    let password = format!("{:x}", mono_ns() ^ u64::from(std::process::id()));
    let mut mempool = node::MempoolConfig::preset(
        node::MempoolPreset::parse(&s.network.mempool).map_err(anyhow::Error::msg)?,
    );
    mempool.max_txs = mempool.max_txs.max(mempool.initial_txs);
    let now_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs() as u32;
    let node_cfg = node::NodeConfig {
        seed: s.seed,
        block_interval: s.network.block_interval,
        hashrate_share: s.network.hashrate_share,
        scripted_arrivals: None,
        difficulty: node::Difficulty::MinerHashrate(s.total_hashrate()),
        start_height: s.network.start_height,
        // Fixed, so a farm's node builds on the very same base block.
        time_base: Some(now_unix),
        mempool,
        template_refresh: s.network.template_refresh,
        follower: None,
    };
    // The SV2 sides' template provider: the node's TDP face, or its Mining IPC face (the
    // only one the pool runs its JDS with).
    let configs: Vec<Config> = s.sides.iter().filter_map(|x| Config::of_side(x)).collect();
    let sv2 = configs.iter().any(|c| c.pool_templates());
    let ipc_sides = configs.iter().any(|c| c.declares_jobs());
    let ipc = s.sv2.template_provider == "ipc";
    let tdp = (sv2 && !ipc).then(|| node::tdp::TdpOptions {
        bind: "127.0.0.1:0".parse().expect("an address"),
        keys: node::tdp::AuthorityKeys::generate(),
        interval: s.pool.job_refresh,
        fee_threshold_sats: s.pool.refresh_fee_threshold_sats,
    });
    let tp_public = tdp.as_ref().map(|t| t.keys.public);
    let ipc_data_dir = if (sv2 && ipc) || ipc_sides {
        Some(ipc_dir(dir, NODE)?)
    } else {
        None
    };
    let ready = spawn(
        opts,
        dir,
        NODE,
        &RoleSpec::Node {
            config: node_cfg.clone(),
            rpc_user: RPC_USER.into(),
            rpc_password: password.clone(),
            tdp,
            ipc_data_dir: ipc_data_dir.clone(),
            peer: None,
        },
        roles,
    )
    .await?;
    let rpc = ready_field(&ready, "rpc", NODE)?;
    let zmq = ready.get("zmq").and_then(Value::as_str).map(str::to_string);
    let zmq_hashblock = ready.get("zmq_hashblock").and_then(Value::as_str);
    let ipc_templates = ipc_data_dir.map(|data_dir| ipc_source(s, data_dir));
    let templates = match tp_public {
        Some(public) => Some(sri::TemplateSource::Tdp {
            address: ready_field(&ready, "tdp", NODE)?.parse()?,
            public,
        }),
        None => ipc_templates.clone(),
    };
    let network = NetworkNode {
        rpc: rpc.parse()?,
        password: password.clone(),
        zmq: zmq
            .as_deref()
            .and_then(|z| z.strip_prefix("tcp://"))
            .context("the node publishes no ZMQ endpoint")?
            .parse()?,
        start_mono_ns: ready
            .get("start_mono_ns")
            .and_then(Value::as_u64)
            .context("the node did not say when it started")?,
        config: node_cfg,
        ipc: ipc_templates,
    };
    let mut sides = BTreeMap::new();
    for (i, side) in s.sides.iter().enumerate() {
        let farm_port = s.link.farm_port.map_or(0, |p| p + i as u16);
        let config = Config::of_side(side).context("the scenario names only known sides")?;
        let side_roles = match config {
            Config::Sv1 => {
                let node_rpc = (rpc.as_str(), password.as_str(), zmq.clone());
                let node = (node_rpc, zmq_hashblock);
                start_sv1_side(opts, dir, side, node, farm_port, roles).await?
            }
            Config::Sv2C | Config::Sv2D => {
                let templates = templates
                    .clone()
                    .context("an SV2 side has the node's template provider")?;
                start_sv2_pool_side(opts, dir, side, templates, farm_port, roles).await?
            }
            Config::Sv2A | Config::Sv2B => {
                start_sv2_jd_side(opts, dir, side, &network, farm_port, roles).await?
            }
        };
        sides.insert(side.clone(), side_roles);
    }
    Ok(sides)
}

/// Our own SV1 pool on the node: where it listens.
async fn builtin_sv1_pool(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    pool: &str,
    (rpc, password, zmq): (&str, &str, Option<String>),
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let s = &opts.scenario;
    let pool_ready = spawn(
        opts,
        dir,
        pool,
        &RoleSpec::Sv1Pool {
            config: sv1::pool::PoolConfig {
                listen: "127.0.0.1:0".parse()?,
                rpc_url: format!("http://{rpc}"),
                rpc_user: pool_rpc_user(side),
                rpc_password: password.into(),
                zmq,
                payout_script: payout_script(),
                coinbase_tag: format!("/stratum-bench {side}/"),
                job_refresh: s.pool.job_refresh,
                refresh_fee_threshold_sats: s.pool.refresh_fee_threshold_sats,
                vardiff: sv1::pool::VardiffConfig {
                    shares_per_min: s.miners.shares_per_min,
                    start: s.start_difficulty(),
                    min: s.start_difficulty() / 1000.0,
                    max: s.start_difficulty() * 1e6,
                    retarget: s.pool.vardiff_retarget,
                },
                version_rolling_mask: 0x1fff_e000,
                broadcast: None,
            },
        },
        roles,
    )
    .await?;
    let pool_addr: SocketAddr = ready_field(&pool_ready, "listen", pool)?.parse()?;
    Ok(pool_addr)
}

/// The SV1 baseline: SV1 miners -> link -> built-in SV1 pool -> node RPC and ZMQ.
async fn start_sv1_side(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    ((rpc, password, zmq), zmq_hashblock): ((&str, &str, Option<String>), Option<&str>),
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let pool = format!("pool-{side}");
    let (pool_addr, pool_name, pool_policy, worker_prefix) = match s.external_pool(side) {
        Some(external) => {
            let resolved = crate::external_pool::resolve(external, Path::new(""), side)?;
            let listen = free_local_port()?;
            let rpc_user = pool_rpc_user(side);
            let site = crate::external_pool::Site {
                rpc: rpc.parse().context("the node's RPC address")?,
                rpc_user: &rpc_user,
                rpc_password: password,
                zmq: zmq.as_deref(),
                zmq_hashblock,
                difficulty: s.start_difficulty(),
                job_refresh_s: s.pool.job_refresh.as_secs_f64(),
                payout_address: bitcoin::Address::from_script(
                    &payout_script(),
                    bitcoin::Network::Regtest,
                )?
                .to_string(),
                run_dir: dir,
                launcher: &opts.launcher,
                cache_dir: &crate::external_pool::cache_dir(),
            };
            let started = resolved.start(&site, side, &pool, listen).await?;
            roles.push(started.process);
            let prefix = started.worker_prefix;
            (listen, Some(resolved.name), resolved.policy, prefix)
        }
        None => (
            builtin_sv1_pool(opts, dir, side, &pool, (rpc, password, zmq), roles).await?,
            None,
            None,
            default_worker_prefix(side),
        ),
    };
    // The same hop every SV2 side crosses: a tap on the pool site, where verdicts are read.
    let tap = format!("tap-{side}");
    let tap_ready = spawn(
        opts,
        dir,
        &tap,
        &RoleSpec::Sv1Tap {
            config: sv1::tap::Sv1TapConfig {
                listen: "127.0.0.1:0".parse()?,
                upstream: pool_addr,
            },
        },
        roles,
    )
    .await?;
    let tap_addr: SocketAddr = ready_field(&tap_ready, "listen", &tap)?.parse()?;
    let (link, link_addr) = spawn_link(opts, dir, side, farm_port, tap_addr, roles).await?;
    eprintln!("{side}: SV1 miners connect to stratum+tcp://{link_addr} (farm side of the link)");
    let miners = spawn_sv1_miners(opts, dir, (side, &worker_prefix), link_addr, roles).await?;
    Ok(SideRoles {
        config: config_name(side),
        miners: s.miners.count,
        miner_hashrate: Some(s.miner_hashrate()),
        miners_role: miners.clone(),
        pool_role: tap.clone(),
        link_role: link.clone(),
        link_rtt_ms: side_rtt(s, side),
        farm_node_role: None,
        farm_node_hop_ms: None,
        feed_link_role: None,
        job_declaration_role: None,
        roles: vec![NODE.into(), pool, tap, link, miners],
        pool_software: Some(pool_name.unwrap_or_else(|| {
            format!("stratum-bench's built-in SV1 pool {}", env!("CARGO_PKG_VERSION"))
        })),
        pool_policy: pool_policy.or_else(|| {
            Some("ZMQ hashblock, a job on every new tip and after pool.job_refresh, one write per job, vardiff".into())
        }),
    })
}

/// Configurations C and D, with the SRI pool on the pool site (tap in front of it, so
/// acceptance is what the pool decides) and the node as its Template Provider:
/// C: SV1 miners -> SRI translator (farm) -> link -> tap -> SRI pool;
/// D: SV2 miners -> link -> tap -> SRI pool.
async fn start_sv2_pool_side(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    templates: sri::TemplateSource,
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let PoolSite {
        keys,
        pool,
        tap,
        tap_addr,
    } = spawn_pool_site(opts, dir, side, templates, None, roles).await?;
    if Config::of_side(side) == Some(Config::Sv2D) {
        let (link, link_addr) = spawn_link(opts, dir, side, farm_port, tap_addr, roles).await?;
        eprintln!(
            "{side}: SV2 miners connect to {link_addr} (farm side of the link; pool key {})",
            keys.public
        );
        let miners = spawn_sv2_miners(opts, dir, side, link_addr, keys.public, roles).await?;
        return Ok(SideRoles {
            config: config_name(side),
            miners: s.miners.count,
            miner_hashrate: Some(s.miner_hashrate()),
            miners_role: miners.clone(),
            pool_role: tap.clone(),
            link_role: link.clone(),
            link_rtt_ms: side_rtt(s, side),
            farm_node_role: None,
            farm_node_hop_ms: None,
            feed_link_role: None,
            job_declaration_role: None,
            roles: vec![NODE.into(), pool, tap, link, miners],
            pool_software: None,
            pool_policy: None,
        });
    }
    let (link, link_addr) = spawn_link(opts, dir, side, 0, tap_addr, roles).await?;
    let translator = format!("translator-{side}");
    let translator_addr = spawn_translator(
        opts,
        dir,
        &translator,
        farm_port,
        (link_addr, keys.public),
        roles,
    )
    .await?;
    eprintln!(
        "{side}: SV1 miners connect to stratum+tcp://{translator_addr} (the SRI translator, farm site)"
    );
    let miners = spawn_sv1_miners(
        opts,
        dir,
        (side, &default_worker_prefix(side)),
        translator_addr,
        roles,
    )
    .await?;
    Ok(SideRoles {
        config: config_name(side),
        miners: s.miners.count,
        miner_hashrate: Some(s.miner_hashrate()),
        miners_role: miners.clone(),
        pool_role: tap.clone(),
        link_role: link.clone(),
        link_rtt_ms: side_rtt(s, side),
        farm_node_role: None,
        farm_node_hop_ms: None,
        feed_link_role: None,
        job_declaration_role: None,
        roles: vec![NODE.into(), pool, tap, link, translator, miners],
        pool_software: None,
        pool_policy: None,
    })
}

/// The pool site of an SV2 side: the SRI pool and the tap in front of it.
struct PoolSite {
    /// The pool's authority keys, made for the run (the taps answer with them).
    keys: node::tdp::AuthorityKeys,
    pool: String,
    tap: String,
    tap_addr: SocketAddr,
}

/// Starts the SRI pool on `templates` (with its JDS at `jds_listen`, if any) and its tap.
async fn spawn_pool_site(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    templates: sri::TemplateSource,
    jds_listen: Option<SocketAddr>,
    roles: &mut Vec<RoleProcess>,
) -> Result<PoolSite> {
    let s = &opts.scenario;
    let keys = node::tdp::AuthorityKeys::generate();
    let pool = format!("pool-{side}");
    let params = sri::PoolParams {
        listen: free_local_port()?,
        authority_public: keys.public,
        authority_secret: keys.secret,
        templates,
        payout_script_hex: payout_script().to_hex_string(),
        signature: format!("stratum-bench {side}"),
        shares_per_minute: s.miners.shares_per_min,
        share_batch_size: s.sv2.share_batch_size,
        jds_listen,
    };
    let pool_addr = spawn_sri(
        opts,
        dir,
        &pool,
        s.roles.pool.as_ref(),
        (params.listen, sri::pool_config(&params)?),
        RoleSpec::SriPool { params },
        roles,
    )
    .await?;
    let tap = format!("tap-{side}");
    let tap_addr = spawn_tap(opts, dir, &tap, pool_addr, &keys, roles).await?;
    Ok(PoolSite {
        keys,
        pool,
        tap,
        tap_addr,
    })
}

/// SRI's translator on the farm site (on `farm_port`, 0 for any) for the SV1 miners, with
/// `upstream` (an SV2 pool, or a JDC) and its key.
async fn spawn_translator(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    farm_port: u16,
    (upstream, upstream_public): (SocketAddr, Secp256k1PublicKey),
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let s = &opts.scenario;
    let params = sri::TranslatorParams {
        listen: if farm_port == 0 {
            free_local_port()?
        } else {
            SocketAddr::from(([127, 0, 0, 1], farm_port))
        },
        upstream,
        upstream_public,
        user_identity: format!("stratum-bench-{name}"),
        miner_hashrate: s.miner_hashrate(),
        shares_per_minute: s.miners.shares_per_min,
        aggregate_channels: s.sv2.aggregate_channels,
    };
    spawn_sri(
        opts,
        dir,
        name,
        s.roles.translator.as_ref(),
        (params.listen, sri::translator_config(&params)),
        RoleSpec::SriTranslator { params },
        roles,
    )
    .await
}

/// Our SV2 miners, connecting to `upstream` (a pool, a JDC, or the link) with its key.
async fn spawn_sv2_miners(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    upstream: SocketAddr,
    upstream_public: Secp256k1PublicKey,
    roles: &mut Vec<RoleProcess>,
) -> Result<String> {
    let s = &opts.scenario;
    let miners = format!("miners-{side}");
    spawn(
        opts,
        dir,
        &miners,
        &RoleSpec::Sv2Miners {
            config: sv2::fleet::FleetConfig {
                pool: upstream,
                pool_public: upstream_public,
                miners: s.miners.count,
                hashrate: s.miner_hashrate(),
                user_prefix: format!("{side}-miner"),
                ramp: s.miners.ramp,
                channel: s.sv2.channel,
                channels_per_connection: 1,
                hash_threads: s.miners.hash_threads,
            },
        },
        roles,
    )
    .await?;
    Ok(miners)
}

/// The node that is the network, as the farm's nodes and the pools reach it.
struct NetworkNode {
    rpc: SocketAddr,
    password: String,
    zmq: SocketAddr,
    start_mono_ns: u64,
    config: node::NodeConfig,
    /// Its Mining IPC face, as a pool's template source.
    ipc: Option<sri::TemplateSource>,
}

/// Where a node role serves Bitcoin Core's Mining IPC, checked to fit a UNIX socket path.
fn ipc_dir(run_dir: &Path, node_role: &str) -> Result<PathBuf> {
    let dir = std::path::absolute(run_dir.join(format!("{node_role}-ipc")))?;
    let socket = node::ipc::socket_path(&dir);
    // sun_path holds 108 bytes.
    anyhow::ensure!(
        socket.as_os_str().len() < 108,
        "the IPC socket path {} is too long for a UNIX socket: choose a shorter --out",
        socket.display()
    );
    Ok(dir)
}

/// A node's IPC face as a template source, on the scenario's refresh policy.
fn ipc_source(s: &Scenario, data_dir: PathBuf) -> sri::TemplateSource {
    sri::TemplateSource::Ipc {
        data_dir,
        fee_threshold: s.pool.refresh_fee_threshold_sats,
        min_interval_s: s.pool.job_refresh.as_secs().clamp(1, 255) as u8,
    }
}

/// Configurations A and B, where the farm declares its own jobs:
/// A: SV1 miners -> SRI translator -> SRI JDC -> link -> tap -> SRI pool (+ JDS);
/// B: SV2 miners -> SRI JDC -> link -> tap -> SRI pool (+ JDS).
/// The JDC builds jobs from the farm's own node, which follows the network's node across
/// the same link, and declares them to the pool's JDS through a farm-side tap (which sees
/// each DeclareMiningJob round trip as the JDC waits for it).
async fn start_sv2_jd_side(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    network: &NetworkNode,
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let jds_listen = free_local_port()?;
    let templates = network
        .ipc
        .clone()
        .context("a job-declaring side needs the node's IPC face")?;
    let PoolSite {
        keys: pool_keys,
        pool,
        tap,
        tap_addr,
    } = spawn_pool_site(opts, dir, side, templates, Some(jds_listen), roles).await?;

    // Mining and job declaration cross the side's link, where their bytes are counted; the
    // farm node's blocks (ZMQ) and submissions (RPC) cross the feed link at the nodes'
    // propagation delay.
    let propagation = Duration::from_secs_f64(s.farm_node.propagation_ms / 1e3);
    let p2p = link::LinkConfig {
        up_delay: propagation,
        down_delay: propagation,
        ..wan(s, side)
    };
    let route = |upstream, config| LinkRoute {
        listen: "127.0.0.1:0".parse().expect("an address"),
        upstream,
        config,
    };
    let (link, farm_side) = spawn_link_routes(
        opts,
        dir,
        &format!("link-{side}"),
        vec![
            route(tap_addr, wan(s, side)),
            route(jds_listen, wan(s, side)),
        ],
        roles,
    )
    .await?;
    let [pool_via_link, jds_via_link] = farm_side[..] else {
        anyhow::bail!("{link} has two routes");
    };
    // The emulation's own feed between the nodes (whole blocks, RPC submissions) crosses
    // a link of its own, so its bytes stay apart from what the farm's node would really
    // move (modelled by the node: transaction relay and compact blocks).
    let (feed_link, feed_side) = spawn_link_routes(
        opts,
        dir,
        &format!("feed-{side}"),
        vec![route(network.zmq, p2p), route(network.rpc, p2p)],
        roles,
    )
    .await?;
    let [zmq_via_link, rpc_via_link] = feed_side[..] else {
        anyhow::bail!("{feed_link} has two routes");
    };

    let farm_node = format!("node-{side}");
    let farm_ipc = ipc_dir(dir, &farm_node)?;
    spawn(
        opts,
        dir,
        &farm_node,
        &RoleSpec::Node {
            config: node::NodeConfig {
                follower: Some(node::Follower {
                    overlap: s.farm_node.mempool_overlap,
                    tx_delay: propagation,
                    // Each farm node its own range, by the side's place in the run.
                    template_ids_from: node::config::FOLLOWER_TEMPLATE_IDS
                        * (1 + s.sides.iter().position(|x| x == side).unwrap_or(0) as u64),
                }),
                ..network.config.clone()
            },
            rpc_user: RPC_USER.into(),
            rpc_password: network.password.clone(),
            tdp: None,
            ipc_data_dir: Some(farm_ipc.clone()),
            peer: Some(node::peer::PeerOptions {
                rpc_url: format!("http://{rpc_via_link}"),
                rpc_user: RPC_USER.into(),
                rpc_password: network.password.clone(),
                zmq: format!("tcp://{zmq_via_link}"),
                start_mono_ns: network.start_mono_ns,
            }),
        },
        roles,
    )
    .await?;

    let jd_tap = format!("jdtap-{side}");
    let jd_tap_addr = spawn_tap(opts, dir, &jd_tap, jds_via_link, &pool_keys, roles).await?;
    let jdc = format!("jdc-{side}");
    let jdc_keys = node::tdp::AuthorityKeys::generate();
    let jdc_params = sri::JdcParams {
        listen: if farm_port == 0 || Config::of_side(side) == Some(Config::Sv2A) {
            free_local_port()?
        } else {
            SocketAddr::from(([127, 0, 0, 1], farm_port))
        },
        authority_public: jdc_keys.public,
        authority_secret: jdc_keys.secret,
        templates: ipc_source(s, farm_ipc),
        pool: pool_via_link,
        jds: jd_tap_addr,
        pool_public: pool_keys.public,
        user_identity: format!("stratum-bench-{side}"),
        solo_payout_script_hex: payout_script().to_hex_string(),
        signature: format!("stratum-bench {side} farm"),
        shares_per_minute: s.miners.shares_per_min,
        share_batch_size: s.sv2.share_batch_size,
    };
    let jdc_addr = spawn_sri(
        opts,
        dir,
        &jdc,
        s.roles.jdc.as_ref(),
        (jdc_params.listen, sri::jdc_config(&jdc_params)),
        RoleSpec::SriJdc { params: jdc_params },
        roles,
    )
    .await?;

    let mut side_roles = vec![
        NODE.to_string(),
        pool,
        tap.clone(),
        link.clone(),
        feed_link.clone(),
        farm_node.clone(),
        jd_tap.clone(),
        jdc,
    ];
    let miners = if Config::of_side(side) == Some(Config::Sv2B) {
        eprintln!(
            "{side}: SV2 miners connect to {jdc_addr} (the SRI JDC, farm site; key {})",
            jdc_keys.public
        );
        spawn_sv2_miners(opts, dir, side, jdc_addr, jdc_keys.public, roles).await?
    } else {
        let translator = format!("translator-{side}");
        let translator_addr = spawn_translator(
            opts,
            dir,
            &translator,
            farm_port,
            (jdc_addr, jdc_keys.public),
            roles,
        )
        .await?;
        side_roles.push(translator);
        eprintln!(
            "{side}: SV1 miners connect to stratum+tcp://{translator_addr} (the SRI translator, farm site)"
        );
        spawn_sv1_miners(
            opts,
            dir,
            (side, &default_worker_prefix(side)),
            translator_addr,
            roles,
        )
        .await?
    };
    side_roles.push(miners.clone());
    Ok(SideRoles {
        config: config_name(side),
        miners: s.miners.count,
        miner_hashrate: Some(s.miner_hashrate()),
        miners_role: miners,
        pool_role: tap,
        link_role: link,
        link_rtt_ms: side_rtt(s, side),
        farm_node_role: Some(farm_node),
        farm_node_hop_ms: Some(s.farm_node.propagation_ms),
        feed_link_role: Some(feed_link.clone()),
        job_declaration_role: Some(jd_tap),
        roles: side_roles,
        pool_software: None,
        pool_policy: None,
    })
}

/// A Noise-terminating tap answering as the pool (`keys`) in front of `upstream`.
async fn spawn_tap(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    upstream: SocketAddr,
    keys: &node::tdp::AuthorityKeys,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let ready = spawn(opts, dir, name, &RoleSpec::tap(upstream, keys), roles).await?;
    Ok(ready_field(&ready, "listen", name)?.parse()?)
}

/// Starts an SRI role: the pinned build linked into stratum-bench (`spec`), or the
/// scenario's other build of it (`command`, given the same generated config).
#[allow(clippy::too_many_arguments)]
async fn spawn_sri(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    command: Option<&crate::scenario::RoleCommand>,
    (listen, config): (SocketAddr, String),
    spec: RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    match command {
        None => {
            let ready = spawn(opts, dir, name, &spec, roles).await?;
            Ok(ready_field(&ready, "listen", name)?.parse()?)
        }
        Some(other) => {
            let path = dir.join("roles").join(format!("{name}.toml"));
            probe::private::write(&path, config)
                .with_context(|| format!("cannot write {}", path.display()))?;
            // SRI's binaries take their config as `-c CONFIG`.
            let argv: Vec<String> = (other.command.split_whitespace().map(str::to_string))
                .chain(["-c".to_string(), path.display().to_string()])
                .collect();
            let role =
                RoleProcess::spawn_command(&opts.launcher, &argv, None, dir, name, listen).await?;
            roles.push(role);
            Ok(listen)
        }
    }
}

/// The WAN link of a side with one route, from the farm (`farm_port`, 0 for any) to
/// `upstream`.
async fn spawn_link(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    farm_port: u16,
    upstream: SocketAddr,
    roles: &mut Vec<RoleProcess>,
) -> Result<(String, SocketAddr)> {
    let route = LinkRoute {
        listen: SocketAddr::from(([127, 0, 0, 1], farm_port)),
        upstream,
        config: wan(&opts.scenario, side),
    };
    let (link, listening) =
        spawn_link_routes(opts, dir, &format!("link-{side}"), vec![route], roles).await?;
    Ok((link, listening[0]))
}

/// The WAN link of a side carrying several services; returns the link's role and the
/// farm-side address of each route, in order.
async fn spawn_link_routes(
    opts: &RunOptions,
    dir: &Path,
    link: &str,
    routes: Vec<LinkRoute>,
    roles: &mut Vec<RoleProcess>,
) -> Result<(String, Vec<SocketAddr>)> {
    let link = link.to_string();
    let count = routes.len();
    let ready = spawn(opts, dir, &link, &RoleSpec::Link { routes }, roles).await?;
    let listening: Vec<SocketAddr> = ready
        .get("listen")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str()?.parse().ok())
        .collect();
    anyhow::ensure!(
        listening.len() == count,
        "{link} announced {} of its {count} routes",
        listening.len()
    );
    Ok((link, listening))
}

/// `side`'s own link round trip, when the scenario gives it one.
/// The name of the configuration `side` runs (what the manifest records of it).
fn config_name(side: &str) -> String {
    Config::of_side(side).map_or_else(|| side.to_string(), |c| c.name().to_string())
}

fn side_rtt(s: &Scenario, side: &str) -> Option<f64> {
    s.link.side_rtt_ms.get(side).copied()
}

/// The WAN link of `side`, each way.
fn wan(s: &Scenario, side: &str) -> link::LinkConfig {
    link::LinkConfig {
        jitter: Duration::from_secs_f64(s.link.jitter_ms / 1e3),
        bandwidth_bps: s.link.bandwidth_mbps.map(|m| (m * 1e6) as u64),
        ..link::LinkConfig::from_rtt(Duration::from_secs_f64(s.link.rtt_of(side) / 1e3))
    }
}

/// The SV1 miners of `side`, authorizing as `<worker_prefix>.<index>`.
async fn spawn_sv1_miners(
    opts: &RunOptions,
    dir: &Path,
    (side, worker_prefix): (&str, &str),
    pool: SocketAddr,
    roles: &mut Vec<RoleProcess>,
) -> Result<String> {
    let s = &opts.scenario;
    let miners = format!("miners-{side}");
    spawn(
        opts,
        dir,
        &miners,
        &RoleSpec::Sv1Miners {
            config: sv1::fleet::FleetConfig {
                pool,
                miners: s.miners.count,
                hashrate: s.miner_hashrate(),
                worker_prefix: worker_prefix.to_string(),
                ramp: s.miners.ramp,
                hash_threads: s.miners.hash_threads,
                broadcast: None,
            },
        },
        roles,
    )
    .await?;
    Ok(miners)
}

/// Where the pools under test pay: anyone-can-spend P2WSH(OP_TRUE), as the simulated
/// network's own miners do.
pub(crate) fn payout_script() -> bitcoin::ScriptBuf {
    bitcoin::ScriptBuf::new_p2wsh(&bitcoin::WScriptHash::from_raw_hash(
        bitcoin::hashes::Hash::hash(&[0x51]),
    ))
}

/// A loopback port free now, for a role that must be told its port up front.
///
/// Taken below the ephemeral range when there is room: a port the kernel hands out for
/// outgoing connections could be given to another connection (a miner's, say) between
/// this check and the role binding it.
pub(crate) fn free_local_port() -> Result<SocketAddr> {
    use rand::Rng;
    let (ephemeral_low, _) = crate::limits::ephemeral_range();
    if ephemeral_low > 20_000 {
        let mut rng = rand::thread_rng();
        for _ in 0..64 {
            let port = rng.gen_range(10_000..ephemeral_low);
            if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                return Ok(listener.local_addr()?);
            }
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("no free local port")?;
    Ok(listener.local_addr()?)
}

/// Starts a role and keeps it in `roles` (so it is stopped with the others).
async fn spawn(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    spec: &RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<Value> {
    let (role, ready) = RoleProcess::spawn(&opts.launcher, dir, name, spec).await?;
    roles.push(role);
    Ok(ready)
}

/// Reads what the roles appended to their event files since the last call.
struct Tail {
    dir: PathBuf,
    offsets: HashMap<PathBuf, u64>,
    records: Vec<Record>,
}

impl Tail {
    fn new(dir: PathBuf) -> Self {
        Tail {
            dir,
            offsets: HashMap::new(),
            records: Vec::new(),
        }
    }

    /// Every record so far, after reading what was appended since the last call.
    fn read_new(&mut self) -> &[Record] {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return &self.records;
        };
        for path in entries.flatten().map(|e| e.path()) {
            let offset = self.offsets.entry(path.clone()).or_insert(0);
            let Ok(mut f) = std::fs::File::open(&path) else {
                continue;
            };
            if f.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut text = String::new();
            if f.read_to_string(&mut text).is_err() {
                continue;
            }
            // Only whole lines; a line still being written is read next time.
            let complete = text.rfind('\n').map_or(0, |i| i + 1);
            for line in text[..complete].lines() {
                if let Ok(r) = serde_json::from_str::<Record>(line) {
                    self.records.push(r);
                }
            }
            *offset += complete as u64;
        }
        &self.records
    }
}

fn progress(s: &Summary, elapsed_ns: u64, total: Duration, interactive: bool) {
    let mut line = format!(
        "[{:>4.0}s / {:.0}s]",
        elapsed_ns as f64 / 1e9,
        total.as_secs_f64()
    );
    for (name, side) in &s.sides {
        line.push_str(&format!(
            "  {name}: shares {} ok {} stale {}, blocks {}/{}, new-block jobs {}",
            side.shares.submitted,
            side.shares.accepted,
            side.shares.stale,
            side.blocks.accepted,
            side.blocks.found,
            side.new_prevhash_job_ms.count
        ));
    }
    line.push_str(&format!("  | network blocks {}", s.network.blocks));
    if interactive {
        eprint!("\r{line}\x1b[K");
    } else {
        eprintln!("{line}");
    }
}
