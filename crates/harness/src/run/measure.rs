//! The measured window, second by second: every role's CPU and memory and the host's,
//! the roles that exit, the events read into the streaming analysis, live summaries with
//! the progress line and `--until-known`'s stop, and interim reports.

use super::live::{progress, Live, Tail};
use super::{directory, InterimReport, RunOptions};
use crate::collector::Collector;
use crate::deploy::ReportedSamples;
use crate::host::HostMeter;
use crate::metrics::RoleGauges;
use crate::process::{Launcher, RoleProcess};
use crate::procs::CpuMeter;
use analysis::headline::unresolved;
use analysis::manifest::{Interim, Manifest, Sample, Stopped, HOST_ROLE};
use analysis::stream::RunStream;
use analysis::summary::{Summary, HARNESS_ROLE};
use anyhow::{Context, Result};
use model::run_dir::{EVENTS_DIR, SAMPLES_FILE};
use probe::{mono_ns, Event, Recorder};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long events are held to put the roles' files in one time order: roles write as
/// events happen (a collector's copy lags by its round trips).
const REORDER_HORIZON: Duration = Duration::from_secs(3);
/// A live summary is followed by this many times the time it took before the next.
const LIVE_SUMMARY_SHARE: u32 = 20;
/// A role's own report of its resources older than this leaves the live gauges: the role
/// reports once a second, so it has stopped (or its events no longer come).
const GAUGE_REPORT_AGE: Duration = Duration::from_secs(3);
/// Where a run's per-miner latency samples wait for its end, in the run directory.
const SPILL_DIR: &str = "analysis";

/// The harness's own meters: its process, measured like a role (a long run shows whether
/// its cost stays flat), and the host under them all (a saturated machine inflates every
/// latency). Made before the roles start, so their first readings come before the roles'.
pub(super) struct Meters {
    own: CpuMeter,
    host: HostMeter,
}

impl Meters {
    pub(super) fn new(dir: &Path, launcher: &Launcher) -> Meters {
        // The roles' CPUs: `--isolate`'s half for them, else all this process may use.
        let run_cpus = match &launcher.cpus {
            Some(split) => split.under_test.clone(),
            None => crate::process::available_cpus().unwrap_or_default(),
        };
        Meters {
            own: CpuMeter::new(std::process::id()),
            host: HostMeter::new(dir, &run_cpus).with_idle_probe(),
        }
    }
}

/// What the window keeps from one second to the next.
pub(super) struct Measuring {
    t0: u64,
    /// Warm-up and window: what the progress line counts to.
    total: Duration,
    interactive: bool,
    meters: Meters,
    samples_file: std::fs::File,
    samples: Vec<Sample>,
    tail: Tail,
    /// The roles this host read a sample of (the harness apart).
    sampled_here: BTreeSet<String>,
    /// Samples from the roles' own reports, of roles (and hosts) this host did not read.
    reported: ReportedSamples,
    stream: RunStream,
    spill: PathBuf,
    live: Live,
    second: u64,
    next_summary_ns: u64,
    interim_written: u32,
    stopped: Option<Stopped>,
}

impl Measuring {
    /// From `t0`, the moment every role had started.
    pub(super) fn start(
        dir: &Path,
        manifest: &Manifest,
        opts: &RunOptions,
        t0: u64,
        meters: Meters,
        live: Live,
    ) -> Result<Measuring> {
        let samples_file = std::fs::File::create(dir.join(SAMPLES_FILE))?;
        // Every event is read once, in time order, into the streaming analysis: the
        // harness holds what identity matching needs, not the run.
        let mut stream = RunStream::new(manifest, REORDER_HORIZON.as_nanos() as u64);
        // The per-miner latency samples go to disk as they come, read back at the end.
        let spill = dir.join(SPILL_DIR);
        stream
            .spill_to(&spill)
            .with_context(|| format!("cannot write samples to {}", spill.display()))?;
        // The live metrics count each event as the stream consumes it.
        stream.observe();
        Ok(Measuring {
            t0,
            total: opts.scenario.warmup + opts.scenario.duration,
            interactive: std::io::stderr().is_terminal(),
            meters,
            samples_file,
            samples: Vec::new(),
            tail: Tail::new(dir.join(EVENTS_DIR)),
            sampled_here: BTreeSet::new(),
            reported: ReportedSamples::default(),
            stream,
            spill,
            live,
            second: 0,
            next_summary_ns: 0,
            interim_written: 0,
            stopped: None,
        })
    }

    /// Measures every second until the window ends (`--until-known` may end it sooner);
    /// `true` when Ctrl-C or SIGTERM ended it instead.
    pub(super) async fn until_the_end(
        &mut self,
        opts: &RunOptions,
        dir: &Path,
        manifest: &mut Manifest,
        roles: &mut [RoleProcess],
        collector: Option<&Collector>,
        harness_events: &Recorder,
    ) -> Result<bool> {
        let mut cut_pending = opts.cut_collector_after;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        // Ctrl-C or SIGTERM from here on stops the roles and writes what was measured.
        lifecycle::stops_handled_here();
        let stop = lifecycle::terminated();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = &mut stop => {
                    eprintln!("\ninterrupted: stopping the roles and writing the run");
                    return Ok(true);
                }
            }
            self.second += 1;
            let now = mono_ns();
            if let (Some(after), Some(collector)) = (cut_pending, collector) {
                if Duration::from_nanos(now.saturating_sub(self.t0)) >= after {
                    tracing::warn!("test: dropping every collector connection");
                    collector.cut_connections();
                    cut_pending = None;
                }
            }
            let mut gauges = self.sample(now, roles)?;
            note_exits(roles, harness_events);
            // Events are read every second; a live summary every 2 s, or less often once
            // one takes long (a long run's samples are many): the harness spends at most
            // about a twentieth of a core on them.
            self.read_events();
            // A role this host could not read: its latest report, while it reports.
            for (role, at, cpu_pct, rss_bytes) in self.reported.latest() {
                let fresh = now.saturating_sub(at) <= GAUGE_REPORT_AGE.as_nanos() as u64;
                if fresh && !self.sampled_here.contains(role) {
                    gauges.insert(role.clone(), (cpu_pct, rss_bytes));
                }
            }
            self.stream.advance(now);
            let (observed, network_blocks) = self.stream.take_observed();
            self.live.lock().metrics.observe(&observed, network_blocks);
            self.summarise(now, opts.until_known_pct, manifest);
            {
                let mut state = self.live.lock();
                state.metrics.roles(&gauges);
                state.gauges = gauges;
                state.elapsed_s = now.saturating_sub(self.t0) as f64 / 1e9;
                state.total_s = self.total.as_secs_f64();
            }
            if let Some((every, write_report)) = opts.interim_reports {
                self.interim(now, (every, write_report), manifest, opts, dir);
            }
            if now >= manifest.window_end_ns {
                return Ok(false);
            }
        }
    }

    /// Every role's CPU and memory now, and the host's, into `samples.jsonl`.
    fn sample(&mut self, now: u64, roles: &mut [RoleProcess]) -> Result<RoleGauges> {
        let mut gauges = RoleGauges::new();
        let meters = (roles.iter_mut())
            .map(|r| (r.name.as_str(), &mut r.meter))
            .chain([(HARNESS_ROLE, &mut self.meters.own)]);
        for (name, meter) in meters {
            if let Some(reading) = meter.sample() {
                let cpu = reading.cpu_pct.unwrap_or(0.0);
                gauges.insert(name.to_string(), (cpu, reading.rss_bytes));
                // The harness is no role of a site: its host is this one whatever its name.
                if name != HARNESS_ROLE && !self.sampled_here.contains(name) {
                    self.sampled_here.insert(name.to_string());
                }
                let sample = Sample {
                    t_ns: now,
                    role: name.to_string(),
                    cpu_pct: cpu,
                    cpu_s: Some(reading.cpu_s),
                    rss_bytes: reading.rss_bytes,
                    host: None,
                };
                writeln!(self.samples_file, "{}", serde_json::to_string(&sample)?)?;
                self.samples.push(sample);
            }
        }
        if let Some(second) = self.meters.host.sample() {
            self.live.lock().metrics.host(&second);
            let sample = Sample::of_host(now, HOST_ROLE, second.reading);
            writeln!(self.samples_file, "{}", serde_json::to_string(&sample)?)?;
            self.samples.push(sample);
        }
        Ok(gauges)
    }

    /// A live summary when one is due (a stop check and the window's end always get
    /// one): the progress line, the live page, and `--until-known`'s stop.
    fn summarise(&mut self, now: u64, until_known_pct: Option<f64>, manifest: &mut Manifest) {
        let checkpoint = until_known_pct.is_some() && self.second.is_multiple_of(10);
        let due = (self.second.is_multiple_of(2) && now >= self.next_summary_ns)
            || checkpoint
            || now >= manifest.window_end_ns;
        if !due {
            return;
        }
        let so_far = Manifest {
            window_end_ns: now.min(manifest.window_end_ns),
            ..manifest.clone()
        };
        let started = std::time::Instant::now();
        let summary = self.stream.summary_at(&so_far, &self.samples_so_far());
        let took = started.elapsed().max(Duration::from_millis(100));
        self.next_summary_ns = now + (took * LIVE_SUMMARY_SHARE).as_nanos() as u64;
        progress(
            &summary,
            now.saturating_sub(self.t0),
            self.total,
            self.interactive,
        );
        if let Some(pct) = until_known_pct {
            let open = unresolved(&summary.verdict, pct);
            let at_cap = now >= manifest.window_end_ns;
            // Checked every 10 s of the window; only the intervals' width decides
            // (`unresolved`), so stopping says nothing of where they lie.
            let checkpoint = summary.duration_s >= 10.0 && checkpoint;
            if (checkpoint && open.is_empty() && !summary.verdict.is_empty()) || at_cap {
                self.stopped = Some(Stopped {
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
                // The window ends here; the loop ends at its check.
                manifest.window_end_ns = now.min(manifest.window_end_ns);
                self.stream.end_window(manifest.window_end_ns);
            }
        }
        self.live.lock().publish(summary);
    }

    /// A snapshot of the run so far under `interim/`, when the next is due.
    fn interim(
        &mut self,
        now: u64,
        (every, write_report): (Duration, InterimReport),
        manifest: &Manifest,
        opts: &RunOptions,
        dir: &Path,
    ) {
        let measured = Duration::from_nanos(now.saturating_sub(manifest.window_start_ns));
        let due = now > manifest.window_start_ns
            && now < manifest.window_end_ns
            && measured >= every * (self.interim_written + 1);
        if !due {
            return;
        }
        self.interim_written += 1;
        let snapshot = Manifest {
            window_end_ns: now,
            interim: Some(Interim {
                measured_s: measured.as_secs_f64(),
                planned_s: opts.scenario.duration.as_secs_f64(),
            }),
            ..manifest.clone()
        };
        let summary = self.stream.summary_at(&snapshot, &self.samples_so_far());
        let (dir, label) = (dir.to_path_buf(), format!("{}s", measured.as_secs()));
        // Off the run's loop: a snapshot's report reads every event so far (its per-miner
        // values wait on disk for the run's end).
        tokio::task::spawn_blocking(move || {
            let results = (&snapshot, &summary);
            match directory::write_interim(&dir, &label, results, write_report) {
                Ok(at) => eprintln!("\ninterim report: {}", at.display()),
                Err(e) => tracing::warn!(error = format!("{e:#}"), "no interim report"),
            }
        });
    }

    /// The window closed by Ctrl-C: it ends now, and `--until-known` says so.
    pub(super) fn interrupted(&mut self, manifest: &mut Manifest, until_known_pct: Option<f64>) {
        manifest.window_end_ns = mono_ns().min(manifest.window_end_ns);
        self.stream.end_window(manifest.window_end_ns);
        if let Some(pct) = until_known_pct {
            self.stopped = Some(Stopped {
                reason: "interrupted".into(),
                after_s: manifest.window().secs(),
                precision_pct: pct,
                unresolved: Vec::new(),
            });
        }
    }

    /// Ends the progress line on a terminal.
    pub(super) fn end_progress(&self) {
        if self.interactive {
            eprintln!();
        }
    }

    /// Once every role has stopped and handed over its events: the rest of the files, and
    /// the run's summary (`manifest` gains why the window stopped, if it stopped early).
    pub(super) fn finish(mut self, manifest: &mut Manifest) -> Summary {
        manifest.stopped = self.stopped.take();
        self.read_events();
        self.add_reported_samples();
        let (events, late) = self.stream.counts();
        tracing::info!(events, late, "events analysed");
        let mut summary = self.stream.finish(manifest, &self.samples);
        // Read back and removed, file by file.
        let _ = std::fs::remove_dir(&self.spill);
        for place in self.tail.unreadable() {
            summary
                .unmatched
                .insert(format!("unreadable_line:{place}"), 1);
        }
        summary
    }

    /// What the roles appended, into the stream; a role this host did not read (a swarm
    /// service on another host) reports its own resources, which become its samples as
    /// they come, and its site's host's when this host read none of that site's roles.
    fn read_events(&mut self) {
        let hosts_read: BTreeSet<String> = (self.sampled_here.iter())
            .map(|r| crate::deploy::host_of(r))
            .chain([HOST_ROLE.to_string()])
            .collect();
        let (stream, reported, roles_read) =
            (&mut self.stream, &mut self.reported, &self.sampled_here);
        self.tail.read_into(|r| {
            reported.add(&r, roles_read, &hosts_read);
            stream.push(r);
        });
    }

    /// The samples a summary reads while the run goes: this host's, and the roles' own
    /// reports where this host could not read them, so a live summary of a deployed run
    /// has every role's CPU and memory as its final one does.
    fn samples_so_far(&self) -> Cow<'_, [Sample]> {
        let reported = self.reported.samples();
        if reported.is_empty() {
            return Cow::Borrowed(&self.samples);
        }
        let mut all = self.samples.clone();
        all.extend(reported.iter().cloned());
        all.sort_by_key(|s| s.t_ns);
        Cow::Owned(all)
    }

    /// At the end, the roles' own reports join this host's samples, in `samples.jsonl` too.
    fn add_reported_samples(&mut self) {
        for sample in self.reported.take_samples() {
            let line = serde_json::to_string(&sample).map(|l| writeln!(self.samples_file, "{l}"));
            if let Err(e) = line {
                tracing::warn!(error = %e, "cannot write a reported sample to samples.jsonl");
            }
            self.samples.push(sample);
        }
        self.samples.sort_by_key(|s| s.t_ns);
    }
}

/// A role that exited since the last look is logged and recorded, once.
fn note_exits(roles: &mut [RoleProcess], harness_events: &Recorder) {
    for role in roles.iter_mut() {
        if let Some(status) = role.newly_exited() {
            tracing::error!(role = %role.name, %status, "role exited during the run; see logs/{}.log", role.name);
            harness_events.record(Event::RoleExited {
                name: role.name.clone(),
                status: status.to_string(),
            });
        }
    }
}
