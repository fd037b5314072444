//! A sweep's runs (`stratum-bench sweep`): each point a `stratum-bench run` process of its
//! own, as many at once as there are CPU slots, recorded in sweep.json as each ends; a
//! sweep directory goes on where it stopped.

use super::Plan;
use analysis::sweep::{RunRecord, RunStatus, SweepRecord, POINTS_DIR, SWEEP_FILE};
use analysis::worth::WorthAssumptions;
use anyhow::{bail, Context, Result};
use model::run_dir::SUMMARY_FILE;
use model::scenario::Setting;
use serde::{Deserialize, Serialize};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Held while a sweep writes into its directory.
const LOCK_FILE: &str = "sweep.lock";

/// Written into a run's directory when the run ended by itself with its summary: only
/// then is it whole (a run stopped by Ctrl-C or SIGTERM writes a summary of the time it had).
const WHOLE_MARK: &str = "sweep-run-whole";

/// CPUs one run needs to keep its roles apart from its miner fleets.
const CPUS_PER_JOB: usize = 2;

/// A sweep as its command line gives it.
pub struct SweepOptions {
    /// The scenario file, and its `[[sweep.vary]]` unless `vary` is given.
    pub scenario: PathBuf,
    /// `KEY=V1,V2,...`, crossed (a grid) or, with `zip`, paired value by value.
    pub vary: Vec<String>,
    pub zip: bool,
    /// Runs per point, each with its own seed.
    pub repeat: Option<u32>,
    /// The sweep's directory (default `runs/sweep-<scenario name>`).
    pub out: Option<PathBuf>,
    /// Runs at once, each on CPUs of its own.
    pub jobs: usize,
    /// Every run's measured duration, overriding the scenario's.
    pub duration: Option<String>,
    /// `--set` settings for every run.
    pub overrides: Vec<Setting>,
    /// What the worth is computed for, in every run.
    pub worth: WorthAssumptions,
}

/// Where a sweep wrote, and whether Ctrl-C cut it short.
pub struct Swept {
    pub dir: PathBuf,
    pub interrupted: bool,
}

/// What one run of a sweep is given, written beside its log (`points/<name>.plan.json`)
/// and read by `stratum-bench run --plan`: the scenario, every setting of its point and
/// of the sweep, and the worth's assumptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    pub scenario: PathBuf,
    pub settings: Vec<Setting>,
    pub worth: WorthAssumptions,
}

impl RunPlan {
    pub fn read(path: &Path) -> Result<RunPlan> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the run plan {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a run plan a sweep wrote", path.display()))
    }
}

/// A run under way.
struct Running {
    index: usize,
    child: tokio::process::Child,
    started: Instant,
    slot: usize,
}

/// Runs every point of the sweep `opts` describes not yet done in its directory, as
/// many at once as `jobs`, recording each in sweep.json as it ends; on Ctrl-C, lets the
/// runs under way write what they have. Returns where it wrote and whether it was cut.
pub async fn sweep(args: SweepOptions) -> Result<Swept> {
    let mut common_sets = args.overrides.clone();
    if let Some(d) = &args.duration {
        common_sets.push(Setting::new("duration", d.as_str()));
    }
    let scenario = crate::on_host::load(&args.scenario, &common_sets)?;
    let plan = Plan::resolve(&args.vary, args.zip, args.repeat, scenario.sweep.as_ref())?;
    for line in super::validate_points(&args.scenario, &plan, &common_sets)? {
        eprintln!("SRI roles at {line}");
    }
    let slots = job_slots(args.jobs)?;
    let scenario_text = std::fs::read_to_string(&args.scenario)?;
    if slots.len() > 1 {
        common_sets.push(Setting::new("placement.isolate", true));
    }

    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(format!("sweep-{}", scenario.name)));
    std::fs::create_dir_all(dir.join(POINTS_DIR))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let _lock = Lock::take(&dir)?;

    let planned: Vec<RunRecord> = (plan.runs(scenario.seed).into_iter())
        .map(|run| RunRecord {
            status: status_on_disk(&dir.join(POINTS_DIR).join(&run.name)),
            run,
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
        scenario_digest: digest(&scenario_text),
        common: common_sets,
        common_args: Vec::new(),
        jobs: slots.len(),
        run_s: (scenario.duration + scenario.warmup).as_secs_f64(),
        worth: args.worth.clone(),
        runs: planned,
        analysis: None,
    };
    resume_from(&dir, &mut record)?;
    record.save(&dir)?;
    eprintln!(
        "sweep {} into {}: {} run(s), {} already done; about {:.0} s each",
        record.name,
        dir.display(),
        record.runs.len(),
        record.count(RunStatus::Done),
        record.run_s
    );

    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = interrupted.clone();
    lifecycle::stops_handled_here();
    tokio::spawn(async move {
        lifecycle::terminated().await;
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    Runs::new(&record, &slots)
        .all(&args.scenario, &dir, &mut record, &interrupted)
        .await?;
    Ok(Swept {
        interrupted: interrupted.load(std::sync::atomic::Ordering::SeqCst),
        dir,
    })
}

/// The sweep's runs under way, the CPU slots free for the next, and the progress line.
struct Runs<'a> {
    slots: &'a [Option<Vec<usize>>],
    running: Vec<Running>,
    free: Vec<usize>,
    progress: Progress,
}

impl<'a> Runs<'a> {
    fn new(record: &SweepRecord, slots: &'a [Option<Vec<usize>>]) -> Runs<'a> {
        Runs {
            slots,
            running: Vec::new(),
            free: (0..slots.len()).rev().collect(),
            progress: Progress::new(record.run_s, slots.len()),
        }
    }

    /// Runs every run not done yet, as many at once as there are slots, until all have
    /// ended; on Ctrl-C, lets the runs under way write what they have and starts none.
    async fn all(
        mut self,
        scenario: &Path,
        dir: &Path,
        record: &mut SweepRecord,
        interrupted: &std::sync::atomic::AtomicBool,
    ) -> Result<()> {
        let pending: Vec<usize> = (0..record.runs.len())
            .filter(|&i| record.runs[i].status != RunStatus::Done)
            .collect();
        let mut queue = pending.into_iter();
        let mut signalled = false;
        loop {
            let stopping = interrupted.load(std::sync::atomic::Ordering::SeqCst);
            if stopping && !signalled {
                signalled = true;
                eprintln!("\ninterrupted: letting the runs under way write what they have");
                for r in &self.running {
                    if let Some(pid) = r.child.id() {
                        // SAFETY: kill(2) on our own child's pid.
                        unsafe { libc::kill(pid as i32, libc::SIGINT) };
                    }
                }
            }
            while !stopping && !self.free.is_empty() {
                let Some(index) = queue.next() else { break };
                self.start(scenario, dir, record, index)?;
            }
            if self.running.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            self.reap(dir, record, stopping)?;
            self.progress.draw(record, &self.running);
        }
        self.progress.clear();
        Ok(())
    }

    /// Starts run `index` in a free slot; a run that cannot start (its release gone, the
    /// disk full) is recorded as failed, and the sweep goes on.
    fn start(
        &mut self,
        scenario: &Path,
        dir: &Path,
        record: &mut SweepRecord,
        index: usize,
    ) -> Result<()> {
        let slot = self.free.pop().expect("checked");
        match spawn_run(scenario, dir, record, index, self.slots[slot].as_deref()) {
            Ok(child) => self.running.push(Running {
                index,
                child,
                started: Instant::now(),
                slot,
            }),
            Err(e) => {
                self.free.push(slot);
                let run = &mut record.runs[index];
                run.status = RunStatus::Failed;
                run.error = Some(format!("{e:#}"));
                eprintln!("\n{} failed to start: {e:#}", run.run.name);
                record.save(dir)?;
            }
        }
        Ok(())
    }

    /// Records every run that has ended: whole (its summary, written by a run that ended
    /// by itself), interrupted, or failed with the reason its log gives.
    fn reap(&mut self, dir: &Path, record: &mut SweepRecord, stopping: bool) -> Result<()> {
        let mut i = 0;
        while i < self.running.len() {
            let Some(exit) = self.running[i].child.try_wait()? else {
                i += 1;
                continue;
            };
            let r = self.running.swap_remove(i);
            self.free.push(r.slot);
            let wall = r.started.elapsed().as_secs_f64();
            let run = &mut record.runs[r.index];
            run.wall_s = Some(wall);
            let run_dir = dir.join(POINTS_DIR).join(&run.run.name);
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
                run.error = Some(if stopping {
                    "stopped by Ctrl-C or SIGTERM: the same command again runs it from the start"
                        .into()
                } else {
                    failure(dir, &run.run.name, exit)
                });
                eprintln!(
                    "\n{} {}: {}",
                    run.run.name,
                    format!("{:?}", run.status).to_lowercase(),
                    run.error.as_deref().unwrap_or_default()
                );
            } else {
                run.error = None;
                self.progress.finished(wall);
            }
            record.save(dir)?;
        }
        Ok(())
    }
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
    let cpus = crate::process::available_cpus()?;
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

/// `stratum-bench run` of one point, its output in `points/<name>.log`, in a process group
/// of its own: a Ctrl-C at the terminal reaches the sweep alone, which stops its runs
/// itself and so knows which it cut short.
fn spawn_run(
    scenario: &Path,
    dir: &Path,
    record: &SweepRecord,
    index: usize,
    cpus: Option<&[usize]>,
) -> Result<tokio::process::Child> {
    let run = &record.runs[index].run;
    let out = dir.join(POINTS_DIR).join(&run.name);
    if out.exists() {
        // What an interrupted or failed run left: it starts over.
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    let log_path = dir.join(POINTS_DIR).join(format!("{}.log", run.name));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot write {}", log_path.display()))?;
    let mut settings = record.common.clone();
    settings.extend(super::overrides(run)?);
    let plan = RunPlan {
        // Whole, so the plan runs again from anywhere.
        scenario: std::path::absolute(scenario)?,
        settings,
        worth: record.worth.clone(),
    };
    let plan_path = dir.join(POINTS_DIR).join(format!("{}.plan.json", run.name));
    std::fs::write(&plan_path, serde_json::to_string_pretty(&plan)?)
        .with_context(|| format!("cannot write {}", plan_path.display()))?;
    let exe = std::env::current_exe().context("cannot find the stratum-bench executable")?;
    let mut cmd = crate::process::role_command(exe, cpus);
    cmd.arg("run")
        .arg("--plan")
        .arg(&plan_path)
        .arg("--out")
        .arg(&out)
        // Runs side by side must not share a metrics port; a sweep is read afterwards.
        .args(["--metrics-bind", "127.0.0.1:0"])
        // The point's log keeps its roles' start-up lines.
        .arg("--verbose");
    cmd.process_group(0)
        .stdin(std::process::Stdio::null())
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

/// A sweep directory holds one sweep: going on needs the same plan, the same scenario
/// file and the same arguments for every run, or the curves would mix runs of different
/// settings; the finished runs' wall times carry over.
fn resume_from(dir: &Path, record: &mut SweepRecord) -> Result<()> {
    if !dir.join(SWEEP_FILE).is_file() {
        return Ok(());
    }
    let old = SweepRecord::load(dir)?;
    if !old.common_args.is_empty() {
        bail!(
            "{} holds a sweep written by an earlier stratum-bench, whose runs' settings this one cannot compare: give another --out",
            dir.display()
        );
    }
    let differs = [
        (old.scenario != record.scenario, "the scenario file"),
        (
            old.scenario_digest != record.scenario_digest,
            "the scenario file's content",
        ),
        (
            (&old.keys, &old.values, old.zip) != (&record.keys, &record.values, record.zip),
            "what is varied",
        ),
        (old.repeat != record.repeat, "--repeat"),
        (
            old.common != record.common,
            "the settings of every run (--set, --duration, --jobs)",
        ),
        (old.worth != record.worth, "the worth flags"),
    ];
    if let Some((_, what)) = differs.iter().find(|(d, _)| *d) {
        bail!(
            "{} holds a sweep of {} over {} that differs in {what}: run it as it was to go on, or give another --out",
            dir.display(),
            old.scenario,
            old.keys.join(", "),
        );
    }
    for (now, before) in record.runs.iter_mut().zip(&old.runs) {
        if now.status == RunStatus::Done && now.run == before.run {
            now.wall_s = before.wall_s;
        }
    }
    Ok(())
}

/// FNV-1a of `text`, in hex: enough to tell one scenario file's content from another's.
fn digest(text: &str) -> String {
    let hash = (text.bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Why a run failed: its exit and the last lines it wrote.
fn failure(dir: &Path, name: &str, exit: std::process::ExitStatus) -> String {
    let log = std::fs::read_to_string(dir.join(POINTS_DIR).join(format!("{name}.log")))
        .unwrap_or_default();
    let last: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = last[last.len().saturating_sub(3)..].join(" / ");
    format!("{exit}: {tail}")
}

/// The sweep directory's lock, an exclusive `flock` on `sweep.lock` held while the sweep
/// (or a report of it) writes there: another is refused, naming the holder. The kernel
/// lets go of it however the holder ends.
pub struct Lock {
    _held: std::fs::File,
}

impl Lock {
    pub fn take(dir: &Path) -> Result<Lock> {
        use std::os::fd::AsRawFd;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "another sweep (pid {}) is writing into {}: it holds {}",
                holder.trim(),
                dir.display(),
                path.display()
            );
        }
        file.set_len(0)?;
        writeln!(file, "{}", std::process::id())?;
        Ok(Lock { _held: file })
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
        let done = record.count(RunStatus::Done);
        let failed = record.count(RunStatus::Failed);
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
                format!("{} {pct:.0}%", record.runs[r.index].run.name)
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
