//! `stratum-bench run`: start the roles, measure, stop, summarise.
//!
//! The lifecycle is here; what each configuration starts and how it is wired is in
//! [`topology`], where roles are launched in [`crate::process::Launcher`], the live metrics
//! and progress in [`live`], and the run directory's naming in [`directory`].

mod directory;
pub(crate) use directory::{write_results, write_scenario};
pub(crate) mod live;
mod measure;
pub(crate) mod topology;

use directory::default_dir;
use live::Live;
use measure::{Measuring, Meters};
use topology::start_roles;

use crate::collector::Collector;
use crate::container::{Containers, SwarmSites};
use crate::process::{stop_all, EventsTo, Launcher, RoleProcess};
use analysis::manifest::{ClockOffset, LinkParams, Manifest, SideRoles};
use analysis::summary::{Summary, HARNESS_ROLE};
use anyhow::{Context, Result};
use model::run_dir::EVENTS_DIR;
use model::scenario::{Engine, EventsSink, Scenario};
use probe::{mono_ns, Recorder};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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
    /// Every so long through the measured window, a snapshot of the run so far under
    /// `interim/`, handed to the function (which writes its report).
    pub interim_reports: Option<(Duration, InterimReport)>,
}

/// Writes the report of a run directory (an interim snapshot's).
pub type InterimReport = fn(&std::path::Path) -> Result<()>;

pub struct RunOutcome {
    pub dir: PathBuf,
    pub summary: Summary,
    pub interrupted: bool,
}

pub(crate) const NODE: &str = "node";
/// With a real node: the RPC tap in front of it, which records its templates and tips.
pub(crate) const NODE_TAP: &str = "node-tap";

/// The role whose events are the network node's: ours, or the tap in front of a real one.
pub(crate) fn node_role(s: &Scenario) -> &'static str {
    match s.node {
        Some(_) => NODE_TAP,
        None => NODE,
    }
}
/// The widest uncertainty of a clock offset a run measures across.
const CLOCK_BOUND: Duration = Duration::from_millis(2);

pub async fn run(mut opts: RunOptions) -> Result<RunOutcome> {
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_dir(&opts.scenario.name));
    // Absolute, so containers can mount it at the same path as the host.
    let dir = std::path::absolute(&dir)
        .with_context(|| format!("cannot make {} absolute", dir.display()))?;
    // Fail before anything is written when the metrics port is taken.
    let metrics_listener = crate::metrics::bind_metrics(opts.metrics_bind).await?;
    let unstarted = directory::Unstarted::new(&dir);
    directory::prepare(&dir, &opts.scenario)?;
    let collector = place_roles(&mut opts, &dir).await?;
    let harness_events = Recorder::to_file(
        &dir.join(EVENTS_DIR).join(format!("{HARNESS_ROLE}.jsonl")),
        HARNESS_ROLE,
    )?;
    let meters = Meters::new(&dir, &opts.launcher);

    let mut roles: Vec<RoleProcess> = Vec::new();
    unstarted.roles_start();
    let sides = match start(&opts, &dir, &mut roles, collector.as_ref()).await {
        Ok(sides) => sides,
        Err(e) => {
            stop_all(&mut roles).await;
            return Err(e);
        }
    };
    let t0 = mono_ns();
    // Every role has started: the window opens a warm-up from now, and each link, which
    // times its attack and outages from that opening, is told so.
    let warmup_ns = opts.scenario.warmup.as_nanos() as u64;
    for role in &mut roles {
        role.tell_window_opens_in(warmup_ns.saturating_sub(mono_ns() - t0))
            .await;
    }
    let mut manifest = manifest_of(&opts, t0, sides);
    let live: Live = Arc::default();
    let server = live::serve_metrics(metrics_listener, live.clone());
    let mut measuring = Measuring::start(&dir, &manifest, &opts, t0, meters, live)?;
    let interrupted = measuring
        .until_the_end(
            &opts,
            &dir,
            &mut manifest,
            &mut roles,
            collector.as_ref(),
            &harness_events,
        )
        .await?;
    if interrupted {
        measuring.interrupted(&mut manifest, opts.until_known_pct);
    } else {
        // What happened just before the window closed is still on its way (a job for a
        // tip found in the last milliseconds crosses the link after it): let it land.
        tokio::time::sleep(drain_time(opts.scenario.link.longest_rtt())).await;
    }
    measuring.end_progress();
    manifest.clocks = stop(&mut opts, &dir, roles, collector).await?;
    server.abort();
    harness_events.close()?;
    let summary = measuring.finish(&mut manifest);
    directory::write_results(&dir, &manifest, &summary)?;
    Ok(RunOutcome {
        dir,
        summary,
        interrupted,
    })
}

/// Where the roles will run: containers (the image, the networks and their collector),
/// or processes whose events reach a collector of ours (returned) or their own files.
async fn place_roles(opts: &mut RunOptions, dir: &Path) -> Result<Option<Collector>> {
    if opts.scenario.placement.isolate {
        opts.launcher.cpus = Some(crate::process::isolated_cpus()?);
    }
    let placement = &opts.scenario.placement;
    match (placement.engine, placement.events) {
        (engine @ (Engine::Docker | Engine::Swarm), _) => {
            let swarm = (engine == Engine::Swarm).then(|| SwarmSites {
                pool_nodes: placement.pool_nodes.clone(),
                farm_nodes: placement.farm_nodes.clone(),
            });
            let containers = Containers::start(&opts.launcher.exe, dir, swarm)?;
            opts.launcher.events = EventsTo::Collector(containers.collector_addr());
            opts.launcher.containers = Some(Arc::new(containers));
            Ok(None)
        }
        (Engine::Process, EventsSink::Collector) => {
            let bind = SocketAddr::from(([127, 0, 0, 1], 0));
            let started = Collector::start(bind, dir.join(EVENTS_DIR)).await?;
            opts.launcher.events = EventsTo::Collector(started.addr);
            Ok(Some(started))
        }
        (Engine::Process, EventsSink::File) => Ok(None),
    }
}

/// Starts every role; then, across hosts' clocks, checks each is known well enough:
/// measuring across a clock known no better than [`CLOCK_BOUND`] would measure the clock.
async fn start(
    opts: &RunOptions,
    dir: &Path,
    roles: &mut Vec<RoleProcess>,
    collector: Option<&Collector>,
) -> Result<BTreeMap<String, SideRoles>> {
    let sides = start_roles(opts, dir, roles).await?;
    if let Some(collector) = collector {
        collector.check_clocks(CLOCK_BOUND).await?;
    }
    if let Some(containers) = &opts.launcher.containers {
        containers.check_clocks(CLOCK_BOUND).await?;
    }
    Ok(sides)
}

/// The run as the analysis reads it: the window from `t0` (every role started), the
/// link, the sides and what worth is priced at.
pub(crate) fn manifest_of(
    opts: &RunOptions,
    t0: u64,
    sides: BTreeMap<String, SideRoles>,
) -> Manifest {
    let s = &opts.scenario;
    Manifest {
        scenario: s.name.clone(),
        window_start_ns: t0 + s.warmup.as_nanos() as u64,
        window_end_ns: t0 + (s.warmup + s.duration).as_nanos() as u64,
        node_role: node_role(s).into(),
        link: LinkParams {
            rtt_ms: s.link.rtt_ms,
            jitter_ms: s.link.jitter_ms,
            bandwidth_bps: s.link.bandwidth_mbps.map(|m| (m * 1e6) as u64),
        },
        sides,
        baseline: s.baseline.clone(),
        start_order: (s.start_order().into_iter())
            .map(|i| s.sides[i].to_string())
            .collect(),
        worth: opts.worth.clone(),
        stopped: None,
        clocks: Vec::new(),
        per_miner: s.per_miner(),
        interim: None,
        awaiting_start: false,
        attack: s.link.attack.as_ref().map(planned_attack),
        network_arrivals: s.network.arrivals,
    }
}

/// The attack the scenario plans, as the analysis reads it.
fn planned_attack(a: &model::scenario::LinkAttack) -> analysis::security::PlannedAttack {
    analysis::security::PlannedAttack {
        kind: a.attack.kind(),
        at_s: a.at.as_secs_f64(),
        account: match &a.attack {
            link::attack::Attack::HijackWorker { account } => Some(account.clone()),
            link::attack::Attack::HijackJob { .. }
            | link::attack::Attack::Tamper { .. }
            | link::attack::Attack::Inject => None,
        },
    }
}

/// Stops every role once the window and its drain are over, and returns the clocks the
/// collector or the containers measured; with containers, writes where each role stood.
async fn stop(
    opts: &mut RunOptions,
    dir: &Path,
    mut roles: Vec<RoleProcess>,
    collector: Option<Collector>,
) -> Result<Vec<ClockOffset>> {
    if let Some(collector) = &collector {
        // The last probes, while every role still answers.
        collector.probe_again().await;
    }
    stop_all(&mut roles).await;
    let mut clocks = Vec::new();
    if let Some(collector) = collector {
        // Every role has handed over its events by now: its close waits for that.
        clocks = collector.clocks();
    }
    // A swarm role holds the containers to ask after its service.
    drop(roles);
    if let Some(containers) = opts.launcher.containers.take() {
        std::fs::write(
            dir.join(model::run_dir::PLACEMENT_FILE),
            serde_json::to_string_pretty(&containers.placement())?,
        )?;
        let containers = Arc::into_inner(containers).context("no role holds the containers")?;
        clocks = containers.finish()?;
    }
    Ok(clocks)
}

/// How long the roles keep running after the measured window: a second, plus two round
/// trips of the link.
fn drain_time(rtt_ms: f64) -> Duration {
    Duration::from_secs(1) + Duration::from_secs_f64(2.0 * rtt_ms.max(0.0) / 1e3)
}
