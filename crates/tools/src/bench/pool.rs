//! `stratum-bench bench pool`: how many shares a second a pool sustains, and how fast it
//! answers. Share load comes from a miner fleet in a separate process and is ramped, step
//! by step, until the share response p99 passes a bound, errors appear, or the pool stops
//! keeping up.

use analysis::bench::{step_result, PoolBenchReport, StepResult, Verdict, POOL_FILE};
use anyhow::{Context, Result};
use harness::builtin::{start_builtin, start_sri_pool, start_template_provider, TemplateProvider};
use harness::process::{meter_of, stop_all, Launcher, RoleProcess};
use harness::procs::CpuMeter;
use harness::roles::RoleSpec;
use mining::farm::Machines;
use probe::mono_ns;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Hashes a share takes at the built-in pool's fixed bench difficulty: cheap for the fleet,
/// so the load measures the pool.
const BENCH_HASHES_PER_SHARE: f64 = 16.0;
/// Time for connections to settle before a step is measured.
const STEP_WARMUP: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub enum PoolTarget {
    /// Our node and built-in SV1 pool, each as its own process.
    Builtin,
    /// Our node as Template Provider and the SRI pool, loaded by SV2 miners (one extended
    /// channel each). The SRI pool sets each channel's target from the channel's nominal
    /// hashrate and its configured shares per minute, so each step runs a fresh pool
    /// configured for that step's rate. The linked release, or another build of
    /// `pool_sv2` (identified), given the same config.
    Sri(Option<sri::release::Build>),
    /// Any SV1 pool on this machine (or in a namespace made for the test).
    Address(SocketAddr),
}

pub struct PoolBenchOptions {
    pub target: PoolTarget,
    pub miners: u32,
    /// Shares per second offered at the first step (all miners together).
    pub rate: f64,
    /// Each step offers this many times the previous one.
    pub factor: f64,
    pub step: Duration,
    pub max_steps: usize,
    pub p99_bound_ms: f64,
    /// The difficulty the target pool sets (for `Address`; the built-in pool's is fixed).
    pub share_difficulty: Option<f64>,
    pub out: PathBuf,
    pub launcher: Launcher,
}

pub async fn run(opts: PoolBenchOptions) -> Result<PoolBenchReport> {
    // The miners reach the pool with nothing between them: only its bound applies.
    harness::limits::miners_fit(opts.miners)?;
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("cannot create {}", opts.out.display()))?;
    let mut roles: Vec<RoleProcess> = Vec::new();
    let outcome = ramp(&opts, &mut roles).await;
    stop_all(&mut roles).await;
    let report = outcome?;
    std::fs::write(
        opts.out.join(POOL_FILE),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    Ok(report)
}

async fn ramp(opts: &PoolBenchOptions, roles: &mut Vec<RoleProcess>) -> Result<PoolBenchReport> {
    // A pool at an address is not ours: its process is found by the socket it listens on.
    let mut foreign: Option<CpuMeter> = None;
    let (load, target) = match &opts.target {
        PoolTarget::Address(addr) => {
            // Fail fast when nothing answers there.
            tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
                .await
                .map_err(|_| anyhow::anyhow!("no SV1 pool answered at {addr} within 5 s"))?
                .with_context(|| format!("no SV1 pool at {addr}"))?;
            let d = opts
                .share_difficulty
                .context("--share-difficulty: say the difficulty the pool at that address sets")?;
            foreign = harness::procs::listener_pid(*addr).map(CpuMeter::new);
            if foreign.is_none() {
                eprintln!("the process listening on {addr} is not visible here: its CPU and memory are left out");
            }
            (
                Load::Sv1 {
                    pool: *addr,
                    hashes_per_share: mining::hashes_per_difficulty(d),
                },
                addr.to_string(),
            )
        }
        PoolTarget::Builtin => {
            let d = BENCH_HASHES_PER_SHARE / mining::hashes_per_difficulty(1.0);
            let builtin = start_builtin(&opts.launcher, &opts.out, d, None, roles).await?;
            (
                Load::Sv1 {
                    pool: builtin.pool,
                    hashes_per_share: mining::hashes_per_difficulty(d),
                },
                "builtin".to_string(),
            )
        }
        PoolTarget::Sri(build) => (
            Load::Sri(start_template_provider(&opts.launcher, &opts.out, roles).await?),
            match build {
                Some(b) => format!("sri: {b} ({})", b.program.display()),
                None => "sri".to_string(),
            },
        ),
    };
    let mut idle_rss = meter_of(roles, "pool")
        .or(foreign.as_mut())
        .and_then(CpuMeter::sample)
        .map(|r| r.rss_bytes);
    let mut steps = Vec::new();
    let mut offered = opts.rate;
    for k in 0..opts.max_steps {
        let (step, step_idle_rss) =
            measure_step(opts, roles, foreign.as_mut(), k, &load, offered).await?;
        idle_rss = idle_rss.or(step_idle_rss);
        eprintln!(
            "step {}: offered {:.0}/s, accepted {:.0}/s, p50 {} p99 {} ms{}",
            k + 1,
            step.offered_per_s,
            step.accepted_per_s,
            step.latency_ms
                .p50
                .map_or("-".into(), |v| format!("{v:.3}")),
            step.latency_ms
                .p99
                .map_or("-".into(), |v| format!("{v:.3}")),
            match &step.verdict {
                Verdict::Sustained => String::new(),
                Verdict::Stop(why) => format!(": stop, {why}"),
            }
        );
        let stop = step.verdict != Verdict::Sustained;
        steps.push(step);
        if stop {
            break;
        }
        offered *= opts.factor;
    }
    let max_sustained = steps
        .iter()
        .filter(|s| s.verdict == Verdict::Sustained)
        .map(|s| s.accepted_per_s)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    // Per connected miner: the first step, before per-share state (duplicate detection)
    // has grown with the load.
    let loaded_rss = steps.first().and_then(|s| s.pool_rss_bytes);
    Ok(PoolBenchReport {
        target,
        miners: opts.miners,
        steps,
        max_sustained_shares_per_s: max_sustained,
        pool_rss_per_miner_bytes: match (idle_rss, loaded_rss) {
            (Some(idle), Some(loaded)) => {
                Some(loaded.saturating_sub(idle) as f64 / f64::from(opts.miners))
            }
            _ => None,
        },
        cpus: opts.launcher.cpus.clone(),
    })
}

/// What carries the share load to the pool under test.
enum Load {
    /// SV1 miners, to a pool whose share difficulty is known.
    Sv1 {
        pool: SocketAddr,
        hashes_per_share: f64,
    },
    /// SV2 miners, to an SRI pool started for each step on this node.
    Sri(TemplateProvider),
}

/// One step of the ramp; with an SRI pool started for the step, also that pool's memory
/// before the miners came.
async fn measure_step(
    opts: &PoolBenchOptions,
    roles: &mut Vec<RoleProcess>,
    foreign: Option<&mut CpuMeter>,
    k: usize,
    load: &Load,
    offered: f64,
) -> Result<(StepResult, Option<u64>)> {
    let name = format!("fleet-step{}", k + 1);
    let per_miner = offered / f64::from(opts.miners);
    // The pool measured, and whether it is this step's own (stopped with the step).
    let (pool_name, own_pool, spec, idle_rss) = match load {
        Load::Sv1 {
            pool,
            hashes_per_share,
        } => (
            "pool".to_string(),
            false,
            RoleSpec::Sv1Miners {
                config: sv1::fleet::FleetConfig {
                    backup: None,
                    pool: *pool,
                    machines: Machines::alike(opts.miners, per_miner * hashes_per_share, 1),
                    suggest_difficulty: None,
                    worker_prefix: "bench".into(),
                    broadcast: None,
                },
            },
            None,
        ),
        Load::Sri(tp) => {
            let pool_name = format!("pool-step{}", k + 1);
            // Targets for BENCH_HASHES_PER_SHARE hashes: the pool aims at
            // `shares_per_minute` from each channel's nominal hashrate, which is the
            // miners' real one.
            let binary = match &opts.target {
                PoolTarget::Sri(build) => build.as_ref(),
                _ => None,
            };
            let pool = start_sri_pool(
                &opts.launcher,
                &opts.out,
                (&pool_name, binary),
                tp,
                per_miner * 60.0,
                roles,
            )
            .await?;
            let idle = meter_of(roles, &pool_name)
                .and_then(CpuMeter::sample)
                .map(|r| r.rss_bytes);
            let spec = RoleSpec::Sv2Miners {
                config: sv2::fleet::FleetConfig {
                    backup: None,
                    pool: pool.pool,
                    pool_public: pool.keys.public,
                    machines: Machines::alike(opts.miners, per_miner * BENCH_HASHES_PER_SHARE, 1),
                    user_prefix: "bench".into(),
                    channel: sv2::fleet::ChannelKind::Extended,
                    channels_per_connection: 1,
                },
            };
            (pool_name, true, spec, idle)
        }
    };
    let (mut fleet, _) = RoleProcess::spawn(&opts.launcher, &opts.out, &name, &spec).await?;
    tokio::time::sleep(STEP_WARMUP).await;
    let mut pool_meter = meter_of(roles, &pool_name).or(foreign);
    if let Some(m) = pool_meter.as_mut() {
        m.sample();
    }
    let from = mono_ns();
    tokio::time::sleep(opts.step).await;
    let to = mono_ns();
    let pool_sample = pool_meter.as_mut().and_then(|m| m.sample());
    // Let answers to the last shares of the window arrive before stopping.
    tokio::time::sleep(Duration::from_millis(500)).await;
    fleet.stop().await;
    if own_pool {
        if let Some(i) = roles.iter().position(|r| r.name == pool_name) {
            roles.remove(i).stop().await;
        }
    }

    let events =
        probe::recorder::read_events(&opts.out.join("events").join(format!("{name}.jsonl")))?;
    let pool = pool_sample.map(|r| (r.cpu_pct, r.rss_bytes));
    let step = step_result(&events, (from, to), offered, pool, opts.p99_bound_ms);
    Ok((step, idle_rss))
}
