//! `stratum-bench run`: start the roles, measure, stop, summarise.
//!
//! The lifecycle is here; what each configuration starts and how it is wired is in
//! [`topology`], where roles are launched in [`crate::process::Launcher`], the live metrics
//! and progress in [`live`], and the run directory's naming in [`directory`].

mod directory;
pub(crate) mod live;
pub(crate) mod topology;

use directory::default_dir;
use live::{progress, Live, Tail};
use topology::start_roles;
pub(crate) use topology::{default_worker_prefix, free_local_port, payout_script};

use crate::collector::Collector;
use crate::container::{Containers, SwarmSites};
use crate::host::HostMeter;
use crate::metrics::RoleGauges;
use crate::process::{stop_all, EventsTo, Launcher, RoleProcess};
use crate::procs::CpuMeter;
use crate::scenario::{Engine, EventsSink, Scenario};
use analysis::headline::unresolved;
use analysis::manifest::{
    Interim, LinkParams, Manifest, Sample, Stopped, EVENTS_DIR, HOST_ROLE, SAMPLES_FILE,
};
use analysis::stream::RunStream;
use analysis::summary::{Summary, HARNESS_ROLE};
use anyhow::{Context, Result};
use probe::{mono_ns, Event, Recorder};
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
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
/// With containers: where each role stood (`container::Placed`).
pub const PLACEMENT_FILE: &str = "placement.json";
/// How long events are held to put the roles' files in one time order: roles write as
/// events happen (a collector's copy lags by its round trips).
const REORDER_HORIZON: Duration = Duration::from_secs(3);
/// A live summary is followed by this many times the time it took before the next.
const LIVE_SUMMARY_SHARE: u32 = 20;
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
    let metrics_listener = live::bind_metrics(opts.metrics_bind).await?;
    let unstarted = directory::Unstarted::new(&dir);
    directory::prepare(&dir, &opts.scenario)?;
    if opts.scenario.placement.isolate {
        opts.launcher.cpus = Some(crate::process::isolated_cpus()?);
    }
    let mut collector = None;
    match (
        opts.scenario.placement.engine,
        opts.scenario.placement.events,
    ) {
        (engine @ (Engine::Docker | Engine::Swarm), _) => {
            let swarm = (engine == Engine::Swarm).then(|| SwarmSites {
                pool_nodes: opts.scenario.placement.pool_nodes.clone(),
                farm_nodes: opts.scenario.placement.farm_nodes.clone(),
            });
            let containers = Containers::start(&opts.launcher.exe, &dir, swarm)?;
            opts.launcher.events = EventsTo::Collector(containers.collector_addr());
            opts.launcher.containers = Some(Arc::new(containers));
        }
        (Engine::Process, EventsSink::Collector) => {
            let bind = SocketAddr::from(([127, 0, 0, 1], 0));
            let started = Collector::start(bind, dir.join(EVENTS_DIR)).await?;
            opts.launcher.events = EventsTo::Collector(started.addr);
            collector = Some(started);
        }
        (Engine::Process, EventsSink::File) => {}
    }
    let s = &opts.scenario;
    let harness_events = Recorder::to_file(
        &dir.join(EVENTS_DIR).join(format!("{HARNESS_ROLE}.jsonl")),
        HARNESS_ROLE,
    )?;
    // The harness is measured like a role: a long run shows whether its cost stays flat.
    let mut own_meter = CpuMeter::new(std::process::id());
    // And the host under them all: a saturated machine inflates every latency.
    // The roles' CPUs: `--isolate`'s half for them, else all this process may use.
    let run_cpus = match &opts.launcher.cpus {
        Some(split) => split.under_test.clone(),
        None => crate::process::available_cpus().unwrap_or_default(),
    };
    let mut host_meter = HostMeter::new(&dir, &run_cpus);

    let mut roles: Vec<RoleProcess> = Vec::new();
    unstarted.roles_start();
    let mut started = start_roles(&opts, &dir, &mut roles).await;
    // Measuring across a clock known no better than this would measure the clock.
    if let (Ok(_), Some(collector)) = (&started, &collector) {
        if let Err(e) = collector.check_clocks(CLOCK_BOUND).await {
            started = Err(e);
        }
    }
    if let (Ok(_), Some(containers)) = (&started, &opts.launcher.containers) {
        if let Err(e) = containers.check_clocks(CLOCK_BOUND).await {
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
        node_role: node_role(s).into(),
        link: LinkParams {
            rtt_ms: s.link.rtt_ms,
            jitter_ms: s.link.jitter_ms,
            bandwidth_bps: s.link.bandwidth_mbps.map(|m| (m * 1e6) as u64),
        },
        sides,
        baseline: s.baseline.clone(),
        start_order: (s.start_order().into_iter())
            .map(|i| s.sides[i].clone())
            .collect(),
        worth: opts.worth.clone(),
        stopped: None,
        clocks: Vec::new(),
        per_miner: s.per_miner(),
        interim: None,
    };
    let mut cut_pending = opts.cut_collector_after;
    let live: Live = Arc::default();
    let server = live::serve_metrics(metrics_listener, live.clone());

    let mut samples_file = std::fs::File::create(dir.join(SAMPLES_FILE))?;
    let mut tail = Tail::new(dir.join(EVENTS_DIR));
    // Every event is read once, in time order, into the streaming analysis: the harness
    // holds what identity matching needs, not the run.
    let mut stream = RunStream::new(&manifest, REORDER_HORIZON.as_nanos() as u64);
    // The per-miner latency samples go to disk as they come, read back at the end.
    let spill = dir.join(SPILL_DIR);
    stream
        .spill_to(&spill)
        .with_context(|| format!("cannot write samples to {}", spill.display()))?;
    // The live metrics count each event as the stream consumes it.
    stream.observe();
    let mut samples: Vec<Sample> = Vec::new();
    let total = s.warmup + s.duration;
    let interactive = std::io::stderr().is_terminal();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut interrupted = false;
    let mut second = 0u64;
    let mut stopped: Option<Stopped> = None;
    let mut interim_written = 0u32;
    let mut next_summary_ns = 0u64;
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
        let meters = roles
            .iter_mut()
            .map(|r| (r.name.as_str(), &mut r.meter))
            .chain([(HARNESS_ROLE, &mut own_meter)]);
        for (name, meter) in meters {
            if let Some(reading) = meter.sample() {
                let cpu = reading.cpu_pct.unwrap_or(0.0);
                gauges.insert(name.to_string(), (cpu, reading.rss_bytes));
                let sample = Sample {
                    t_ns: now,
                    role: name.to_string(),
                    cpu_pct: cpu,
                    cpu_s: Some(reading.cpu_s),
                    rss_bytes: reading.rss_bytes,
                    host: None,
                };
                writeln!(samples_file, "{}", serde_json::to_string(&sample)?)?;
                samples.push(sample);
            }
        }
        if let Some(second) = host_meter.sample() {
            let r = &second.reading;
            live.lock().metrics.host(&second);
            let sample = Sample {
                t_ns: now,
                role: HOST_ROLE.to_string(),
                cpu_pct: r.busy_pct * r.core_busy_pct.len() as f64,
                cpu_s: None,
                rss_bytes: r.mem_total_bytes.saturating_sub(r.mem_available_bytes),
                host: Some(second.reading),
            };
            writeln!(samples_file, "{}", serde_json::to_string(&sample)?)?;
            samples.push(sample);
        }
        for role in roles.iter_mut() {
            if let Some(status) = role.newly_exited() {
                tracing::error!(role = %role.name, %status, "role exited during the run; see logs/{}.log", role.name);
                harness_events.record(Event::RoleExited {
                    name: role.name.clone(),
                    status: status.to_string(),
                });
            }
        }
        // Events are read every second; a live summary every 2 s, or less often once one
        // takes long (a long run's samples are many): the harness spends at most about a
        // twentieth of a core on them. A stop check and the window's end always get one.
        tail.read_into(&mut stream);
        stream.advance(now);
        let (observed, network_blocks) = stream.take_observed();
        live.lock().metrics.observe(&observed, network_blocks);
        let checkpoint = opts.until_known_pct.is_some() && second.is_multiple_of(10);
        if (second.is_multiple_of(2) && now >= next_summary_ns)
            || checkpoint
            || now >= manifest.window_end_ns
        {
            let so_far = Manifest {
                window_end_ns: now.min(manifest.window_end_ns),
                ..manifest.clone()
            };
            let started = std::time::Instant::now();
            let summary = stream.summary_at(&so_far, &samples);
            let took = started.elapsed().max(Duration::from_millis(100));
            next_summary_ns = now + (took * LIVE_SUMMARY_SHARE).as_nanos() as u64;
            progress(&summary, now.saturating_sub(t0), total, interactive);
            if let Some(pct) = opts.until_known_pct {
                let open = unresolved(&summary.verdict, pct);
                let at_cap = now >= manifest.window_end_ns;
                // Checked every 10 s of the window; only the intervals' width decides
                // (`unresolved`), so stopping says nothing of where they lie.
                let checkpoint = summary.duration_s >= 10.0 && checkpoint;
                if (checkpoint && open.is_empty() && !summary.verdict.is_empty()) || at_cap {
                    stopped = Some(Stopped {
                        reason: if at_cap {
                            "the duration cap"
                        } else {
                            "every headline difference known to the precision asked"
                        }
                        .into(),
                        after_s: summary.duration_s,
                        precision_pct: pct,
                        unresolved: open,
                    });
                    // The window ends here; the check below ends the loop.
                    manifest.window_end_ns = now.min(manifest.window_end_ns);
                    stream.end_window(manifest.window_end_ns);
                }
            }
            live.lock().publish(summary);
        }
        {
            let mut state = live.lock();
            state.metrics.roles(&gauges);
            state.gauges = gauges;
            state.elapsed_s = now.saturating_sub(t0) as f64 / 1e9;
            state.total_s = total.as_secs_f64();
        }
        if let Some((every, write_report)) = opts.interim_reports {
            let measured = Duration::from_nanos(now.saturating_sub(manifest.window_start_ns));
            let due = now > manifest.window_start_ns
                && now < manifest.window_end_ns
                && measured >= every * (interim_written + 1);
            if due {
                interim_written += 1;
                let snapshot = Manifest {
                    window_end_ns: now,
                    interim: Some(Interim {
                        measured_s: measured.as_secs_f64(),
                        planned_s: s.duration.as_secs_f64(),
                    }),
                    ..manifest.clone()
                };
                let summary = stream.summary_at(&snapshot, &samples);
                let (dir, label) = (dir.clone(), format!("{}s", measured.as_secs()));
                // Off the run's loop: a report of a long run reads every event so far.
                tokio::task::spawn_blocking(move || {
                    let results = (&snapshot, &summary);
                    match directory::write_interim(&dir, &label, results, write_report) {
                        Ok(at) => eprintln!("\ninterim report: {}", at.display()),
                        Err(e) => tracing::warn!(error = format!("{e:#}"), "no interim report"),
                    }
                });
            }
        }
        if now >= manifest.window_end_ns {
            break;
        }
    }
    if interrupted {
        manifest.window_end_ns = mono_ns().min(manifest.window_end_ns);
        stream.end_window(manifest.window_end_ns);
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
    // A swarm role holds the containers to ask after its service.
    drop(roles);
    if let Some(containers) = opts.launcher.containers.take() {
        std::fs::write(
            dir.join(PLACEMENT_FILE),
            serde_json::to_string_pretty(&containers.placement())?,
        )?;
        let containers = Arc::into_inner(containers).context("no role holds the containers")?;
        manifest.clocks = containers.finish()?;
    }
    server.abort();
    harness_events.close()?;
    manifest.stopped = stopped;
    // Every role has stopped and handed over its events: the rest of the files.
    tail.read_into(&mut stream);
    let (events, late) = stream.counts();
    tracing::info!(events, late, "events analysed");
    let mut summary = stream.finish(&manifest, &samples);
    // Read back and removed, file by file.
    let _ = std::fs::remove_dir(&spill);
    for place in tail.unreadable() {
        summary
            .unmatched
            .insert(format!("unreadable_line:{place}"), 1);
    }
    directory::write_results(&dir, &manifest, &summary)?;
    Ok(RunOutcome {
        dir,
        summary,
        interrupted,
    })
}

/// Where a run's per-miner latency samples wait for its end, in the run directory.
const SPILL_DIR: &str = "analysis";

/// How long the roles keep running after the measured window: a second, plus two round
/// trips of the link.
fn drain_time(rtt_ms: f64) -> Duration {
    Duration::from_secs(1) + Duration::from_secs_f64(2.0 * rtt_ms.max(0.0) / 1e3)
}
