//! `stratum-bench sweep`: a scenario run at every point of a grid of settings, each run a
//! `stratum-bench run` process of its own, then the curves.

use crate::run_cmd::WorthArgs;
use analysis::manifest::SUMMARY_FILE;
use analysis::sweep::{RunRecord, RunStatus, SweepRecord, POINTS_DIR, SWEEP_FILE};
use anyhow::{bail, Context, Result};
use clap::Args;
use harness::sweep::Plan;
use harness::Scenario;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Held while a sweep writes into its directory.
const LOCK_FILE: &str = "sweep.lock";

/// Written into a run's directory when the run ended by itself with its summary: only
/// then is it whole (a run stopped by Ctrl-C writes a summary of the time it had).
const WHOLE_MARK: &str = "sweep-run-whole";

/// CPUs one run needs to keep its roles apart from its miner fleets.
const CPUS_PER_JOB: usize = 2;

#[derive(Args)]
pub struct SweepArgs {
    /// Scenario file (TOML). Its `[[sweep.vary]]` tables say what to vary when no --vary
    /// is given (scenarios/sweep-rtt.toml, scenarios/sweep-miners.toml).
    scenario: PathBuf,
    /// A scenario key and its values: --vary link.rtt_ms=10,50,100. Any key `--set` takes,
    /// `roles.pool.command=builtin,/path/to/pool_sv2` (builtin: the pinned SRI build) or
    /// `release=builtin,DIR` (a directory of pre-built pool_sv2, translator_sv2,
    /// jd_client_sv2). Two or more --vary cross their values (a grid); the first is the x
    /// axis, the others give one panel per combination.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    vary: Vec<String>,
    /// Pair the --vary lists value by value instead of crossing them.
    #[arg(long)]
    zip: bool,
    /// Runs per point, each with its own seed (the scenario's, plus 0, 1, ...). Five or more
    /// let a release comparison judge releases rather than runs.
    #[arg(long)]
    repeat: Option<u32>,
    /// The sweep's directory (default runs/sweep-<scenario name>). Run the same command
    /// again and it goes on where it stopped: a run whose directory is whole is not run
    /// again.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Runs at once, each on CPUs of its own (its roles and its fleets apart, as
    /// placement.isolate does): 2 CPUs a run; refused beyond what this machine has.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Measured duration of every run, overriding the scenario's (60s, 5m).
    #[arg(long)]
    duration: Option<String>,
    /// Override a scenario field in every run: --set network.block_interval=10s
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    #[command(flatten)]
    worth: WorthArgs,
}

/// A run under way.
struct Running {
    index: usize,
    child: tokio::process::Child,
    started: Instant,
    slot: usize,
}

pub async fn run(args: SweepArgs) -> Result<()> {
    let mut extra = args.overrides.clone();
    if let Some(d) = &args.duration {
        extra.push(format!("duration={d}"));
    }
    let scenario = Scenario::load(&args.scenario, &extra)?;
    let plan = Plan::resolve(&args.vary, args.zip, args.repeat, scenario.sweep.as_ref())?;
    harness::sweep::check(&args.scenario, &plan, &extra)?;
    let worth = args.worth.assumptions()?;
    let slots = job_slots(args.jobs)?;

    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(format!("sweep-{}", scenario.name)));
    std::fs::create_dir_all(dir.join(POINTS_DIR))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = Lock::take(&dir)?;

    let planned: Vec<RunRecord> = (plan.runs(scenario.seed).into_iter())
        .map(|r| RunRecord {
            status: status_on_disk(&dir.join(POINTS_DIR).join(&r.name)),
            name: r.name,
            point: r.point,
            settings: r.settings,
            repeat: r.repeat,
            seed: r.seed,
            wall_s: None,
            error: None,
        })
        .collect();
    let mut record = SweepRecord {
        scenario: args.scenario.display().to_string(),
        name: scenario.name.clone(),
        keys: plan.vary.iter().map(|v| v.key.clone()).collect(),
        values: plan.vary.iter().map(|v| v.values.clone()).collect(),
        zip: plan.zip,
        repeat: plan.repeat,
        run_s: (scenario.duration + scenario.warmup).as_secs_f64(),
        worth,
        runs: planned,
        analysis: None,
    };
    carry_over(&dir, &mut record)?;
    save(&dir, &record)?;
    let done_before = record
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Done)
        .count();
    eprintln!(
        "sweep {} into {}: {} run(s), {} already done; about {:.0} s each",
        record.name,
        dir.display(),
        record.runs.len(),
        done_before,
        record.run_s
    );

    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = interrupted.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });

    let pending: Vec<usize> = (0..record.runs.len())
        .filter(|&i| record.runs[i].status != RunStatus::Done)
        .collect();
    let mut queue = pending.into_iter();
    let mut running: Vec<Running> = Vec::new();
    let mut free: Vec<usize> = (0..slots.len()).rev().collect();
    let mut progress = Progress::new(record.run_s, slots.len());
    let mut signalled = false;
    loop {
        let stopping = interrupted.load(std::sync::atomic::Ordering::SeqCst);
        if stopping && !signalled {
            signalled = true;
            eprintln!("\ninterrupted: letting the runs under way write what they have");
            for r in &running {
                if let Some(pid) = r.child.id() {
                    // SAFETY: kill(2) on our own child's pid.
                    unsafe { libc::kill(pid as i32, libc::SIGINT) };
                }
            }
        }
        while !stopping && !free.is_empty() {
            let Some(index) = queue.next() else { break };
            let slot = free.pop().expect("checked");
            let child = spawn_run(
                &args,
                &dir,
                &record.runs[index],
                &extra,
                slots[slot].as_deref(),
            )?;
            running.push(Running {
                index,
                child,
                started: Instant::now(),
                slot,
            });
        }
        if running.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut i = 0;
        while i < running.len() {
            let Some(exit) = running[i].child.try_wait()? else {
                i += 1;
                continue;
            };
            let r = running.swap_remove(i);
            free.push(r.slot);
            let wall = r.started.elapsed().as_secs_f64();
            let run = &mut record.runs[r.index];
            run.wall_s = Some(wall);
            let run_dir = dir.join(POINTS_DIR).join(&run.name);
            if exit.success() && !stopping && run_dir.join(SUMMARY_FILE).is_file() {
                std::fs::write(run_dir.join(WHOLE_MARK), "")?;
            }
            run.status = status_on_disk(&run_dir);
            if run.status != RunStatus::Done {
                run.status = if stopping {
                    RunStatus::Interrupted
                } else {
                    RunStatus::Failed
                };
                run.error = Some(failure(&dir, &run.name, exit));
                eprintln!(
                    "\n{} {}: {}",
                    run.name,
                    format!("{:?}", run.status).to_lowercase(),
                    run.error.as_deref().unwrap_or_default()
                );
            } else {
                run.error = None;
                progress.finished(wall);
            }
            save(&dir, &record)?;
        }
        progress.draw(&record, &running);
    }
    progress.clear();

    let written = report::sweep::write(&dir)?;
    let record: SweepRecord =
        serde_json::from_str(&std::fs::read_to_string(dir.join(SWEEP_FILE))?)?;
    print!("{}", slopes_text(&record));
    let failed = record
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Failed)
        .count();
    println!(
        "sweep written to {} ({}){}",
        dir.display(),
        written
            .iter()
            .filter_map(|f| f.file_name()?.to_str())
            .collect::<Vec<_>>()
            .join(", "),
        if failed > 0 {
            format!("; {failed} run(s) failed (see the report)")
        } else {
            String::new()
        }
    );
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
        println!(
            "(interrupted: the report covers the runs done; run the same command again to go on)"
        );
    }
    Ok(())
}

/// Each run slot's CPUs: none (every CPU) for one job at a time; otherwise 2 CPUs each,
/// refused when the machine has fewer than that.
fn job_slots(jobs: usize) -> Result<Vec<Option<Vec<usize>>>> {
    if jobs == 0 {
        bail!("--jobs: at least 1");
    }
    if jobs == 1 {
        return Ok(vec![None]);
    }
    let cpus = harness::process::available_cpus()?;
    if jobs * CPUS_PER_JOB > cpus.len() {
        bail!(
            "--jobs {jobs}: each run needs {CPUS_PER_JOB} CPUs of its own (its roles apart from its miners), and this process may use {} ({cpus:?}): at most {}",
            cpus.len(),
            (cpus.len() / CPUS_PER_JOB).max(1)
        );
    }
    Ok(cpus
        .chunks(CPUS_PER_JOB)
        .take(jobs)
        .map(|c| Some(c.to_vec()))
        .collect())
}

/// `stratum-bench run` of one point, its output in `points/<name>.log`.
fn spawn_run(
    args: &SweepArgs,
    dir: &Path,
    run: &RunRecord,
    extra: &[String],
    cpus: Option<&[usize]>,
) -> Result<tokio::process::Child> {
    let out = dir.join(POINTS_DIR).join(&run.name);
    if out.exists() {
        // What an interrupted or failed run left: it starts over.
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    let log_path = dir.join(POINTS_DIR).join(format!("{}.log", run.name));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot write {}", log_path.display()))?;
    let exe = std::env::current_exe().context("cannot find the stratum-bench executable")?;
    let point = harness::sweep::PointRun {
        name: run.name.clone(),
        point: run.point,
        settings: run.settings.clone(),
        repeat: run.repeat,
        seed: run.seed,
    };
    let mut cmd = harness::process::role_command(exe, cpus);
    cmd.arg("run")
        .arg(&args.scenario)
        .arg("--out")
        .arg(&out)
        // Runs side by side must not share a metrics port; a sweep is read afterwards.
        .args(["--metrics-bind", "127.0.0.1:0"])
        .args(args.worth.to_args());
    let mut sets = extra.to_vec();
    sets.extend(point.overrides()?);
    if cpus.is_some() {
        sets.push("placement.isolate=true".into());
    }
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    cmd.spawn().context("cannot start stratum-bench run")
}

/// Done when the run ended by itself and its summary is there.
fn status_on_disk(run_dir: &Path) -> RunStatus {
    if run_dir.join(WHOLE_MARK).is_file() && run_dir.join(SUMMARY_FILE).is_file() {
        RunStatus::Done
    } else {
        RunStatus::Pending
    }
}

/// A sweep directory holds one sweep: a record of another plan is refused; the same plan's
/// wall times carry over.
fn carry_over(dir: &Path, record: &mut SweepRecord) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(dir.join(SWEEP_FILE)) else {
        return Ok(());
    };
    let old: SweepRecord = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a sweep record", dir.join(SWEEP_FILE).display()))?;
    if (old.keys.clone(), old.values.clone(), old.repeat, old.zip)
        != (
            record.keys.clone(),
            record.values.clone(),
            record.repeat,
            record.zip,
        )
        || old.scenario != record.scenario
    {
        bail!(
            "{} holds another sweep ({} over {}; repeat {}): give another --out",
            dir.display(),
            old.scenario,
            old.keys.join(", "),
            old.repeat
        );
    }
    for (run, before) in record.runs.iter_mut().zip(&old.runs) {
        if run.status == RunStatus::Done && run.name == before.name {
            run.wall_s = before.wall_s;
        }
    }
    Ok(())
}

fn save(dir: &Path, record: &SweepRecord) -> Result<()> {
    let tmp = dir.join(format!("{SWEEP_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(record)? + "\n")?;
    std::fs::rename(&tmp, dir.join(SWEEP_FILE))?;
    Ok(())
}

/// Why a run failed: its exit and the last lines it wrote.
fn failure(dir: &Path, name: &str, exit: std::process::ExitStatus) -> String {
    let log = std::fs::read_to_string(dir.join(POINTS_DIR).join(format!("{name}.log")))
        .unwrap_or_default();
    let last: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = last[last.len().saturating_sub(3)..].join(" / ");
    format!("{exit}: {tail}")
}

/// The sweep directory's lock: another sweep into it is refused, naming the holder.
struct Lock(PathBuf);

impl Lock {
    fn take(dir: &Path) -> Result<Lock> {
        let path = dir.join(LOCK_FILE);
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    writeln!(f, "{}", std::process::id())?;
                    return Ok(Lock(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder: Option<i32> = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| t.trim().parse().ok());
                    // SAFETY: kill with signal 0 only asks whether the process exists.
                    let alive = holder.is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0);
                    if alive {
                        bail!(
                            "another sweep (pid {}) is writing into {}: its lock is {}",
                            holder.unwrap_or_default(),
                            dir.display(),
                            path.display()
                        );
                    }
                    // A sweep that died without unlocking: its lock is stale.
                    std::fs::remove_file(&path)?;
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()))
                }
            }
        }
        bail!("cannot take {}", path.display())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Points done, time left, the runs under way.
struct Progress {
    run_s: f64,
    jobs: usize,
    walls: Vec<f64>,
    tty: bool,
    last: Option<Instant>,
}

impl Progress {
    fn new(run_s: f64, jobs: usize) -> Progress {
        Progress {
            run_s,
            jobs,
            walls: Vec::new(),
            tty: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn finished(&mut self, wall: f64) {
        self.walls.push(wall);
    }

    /// A run's expected wall time: the mean of those done here, or the scenario's time
    /// and a start-up allowance before any is.
    fn expected(&self) -> f64 {
        if self.walls.is_empty() {
            self.run_s + 20.0
        } else {
            self.walls.iter().sum::<f64>() / self.walls.len() as f64
        }
    }

    fn draw(&mut self, record: &SweepRecord, running: &[Running]) {
        let every = if self.tty { 1.0 } else { 30.0 };
        if self.last.is_some_and(|t| t.elapsed().as_secs_f64() < every) {
            return;
        }
        self.last = Some(Instant::now());
        let total = record.runs.len();
        let done = record
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Done)
            .count();
        let failed = record
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::Failed)
            .count();
        let expected = self.expected();
        let waiting = total - done - failed - running.len();
        let left_now: f64 = (running.iter())
            .map(|r| (expected - r.started.elapsed().as_secs_f64()).max(0.0))
            .sum();
        let left = (left_now + waiting as f64 * expected) / self.jobs as f64;
        let width = 24;
        let filled = (done + failed) * width / total.max(1);
        let current: Vec<String> = (running.iter())
            .map(|r| {
                let pct = (r.started.elapsed().as_secs_f64() / expected * 100.0).min(99.0);
                format!("{} {pct:.0}%", record.runs[r.index].name)
            })
            .collect();
        let line = format!(
            "[{}{}] {done}/{total} runs done{}; now {}; about {} left",
            "#".repeat(filled),
            "-".repeat(width - filled),
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            },
            if current.is_empty() {
                "-".into()
            } else {
                current.join(", ")
            },
            minutes(left)
        );
        if self.tty {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    }

    fn clear(&self) {
        if self.tty {
            eprintln!();
        }
    }
}

fn minutes(s: f64) -> String {
    if s >= 90.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

/// Each side's slope of the headline latencies and of the scale readings, for the
/// terminal.
fn slopes_text(record: &SweepRecord) -> String {
    use analysis::sweep::CurveKind;
    let Some(a) = &record.analysis else {
        return String::new();
    };
    let mut out = String::new();
    for c in a
        .curves
        .iter()
        .filter(|c| matches!(c.kind, CurveKind::Side | CurveKind::Scale))
    {
        for f in &c.fits {
            out.push_str(&format!(
                "{} per {}: {} slope {:.4}{} ({} points{})\n",
                c.label,
                a.key,
                f.side,
                f.slope,
                f.slope_ci
                    .map_or(String::new(), |(lo, hi)| format!(" [{lo:.4}, {hi:.4}]")),
                f.points,
                if f.panel.is_empty() {
                    String::new()
                } else {
                    format!(", {}", f.panel)
                }
            ));
        }
    }
    out
}
