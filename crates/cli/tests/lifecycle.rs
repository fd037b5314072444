//! No command exits before the processes it started. Each command that starts processes
//! is stopped while they run (SIGTERM, Ctrl-C's SIGINT, and once SIGKILL), and every
//! process on the machine is searched for the mark this test put in the command's
//! environment (which every process it starts inherits): none may be running when the
//! command has exited, or, after a SIGKILL the command cannot act on, a few seconds later.

use crate::common::{exe, out_dir, run_baseline};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const MARK: &str = "STRATUM_BENCH_LIFECYCLE_MARK";

/// The processes whose environment carries `MARK=mark`, still running (not zombies):
/// each with its command line.
fn marked(mark: &str) -> Vec<(u32, String)> {
    let needle = format!("{MARK}={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !environ.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
    }
    found
}

/// A command started with a mark of its own, in the repository's root (where the
/// scenarios are), its output kept in `log`.
struct Marked {
    child: Child,
    mark: String,
}

impl Marked {
    fn start(mut cmd: Command, name: &str, log: &Path) -> Marked {
        let mark = format!("{name}-{}", std::process::id());
        let log = std::fs::File::create(log).unwrap();
        let child = cmd
            .current_dir(crate::common::crate_dir().join("../.."))
            .env(MARK, &mark)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Marked { child, mark }
    }

    /// The marked processes but the command itself: what it started.
    fn started(&self) -> Vec<(u32, String)> {
        let own = self.child.id();
        marked(&self.mark)
            .into_iter()
            .filter(|(pid, _)| *pid != own)
            .collect()
    }

    /// Waits until the command has started at least `n` processes.
    fn wait_for_children(&mut self, n: usize, log: &Path) {
        let exited = |child: &mut Child| child.try_wait().unwrap();
        within(
            Duration::from_secs(120),
            || {
                if let Some(status) = exited(&mut self.child) {
                    panic!(
                        "it ended ({status}) before starting {n} processes:\n{}",
                        read(log)
                    );
                }
                self.started().len() >= n
            },
            || format!("it did not start {n} processes in 120 s:\n{}", read(log)),
        );
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the child this test started and has not reaped.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// Waits for the command to exit (within 60 s) and requires nothing it started to be
    /// running then.
    fn exits_leaving_nothing(&mut self, log: &Path) -> ExitStatus {
        let mut status = None;
        within(
            Duration::from_secs(60),
            || {
                status = self.child.try_wait().unwrap();
                status.is_some()
            },
            || format!("it did not exit within 60 s of the signal:\n{}", read(log)),
        );
        let status = status.expect("it exited");
        let left = marked(&self.mark);
        assert!(
            left.is_empty(),
            "it exited ({status}) with these still running: {left:#?}\n{}",
            read(log)
        );
        status
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for (pid, _) in marked(&self.mark) {
            // SAFETY: kill(2) on a process this test's command started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

/// Polls `done` every 50 ms until it holds; past `limit`, fails with `why()`. The limits
/// here catch a hang: what they wait for took at most a few seconds when measured.
fn within(limit: Duration, mut done: impl FnMut() -> bool, why: impl Fn() -> String) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{}", why());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A one-host run of SV1 and C: our node, pool, link and miners, and the SRI roles.
fn a_run(dir: &Path) -> Command {
    let mut cmd = run_baseline(
        dir,
        &[
            "--duration",
            "60s",
            "--set",
            r#"sides=["sv1","sv2-c"]"#,
            "--metrics-bind",
            "127.0.0.1:0",
        ],
    );
    cmd.env_remove("RUST_LOG");
    cmd
}

#[test]
fn a_run_stopped_by_sigterm_in_its_window_writes_the_run_and_leaves_no_process() {
    let dir = out_dir("lifecycle-term");
    let log = dir.with_extension("log");
    let mut run = Marked::start(a_run(&dir), "run-term", &log);
    // The window is open once its progress lines come ("[   2s / 70s] ...", warm-up and all).
    within(
        Duration::from_secs(120),
        || read(&log).contains("s / 70s]"),
        || read(&log),
    );
    let children = run.started();
    assert!(children.len() >= 4, "the roles are up: {children:#?}");
    run.signal(libc::SIGTERM);
    let status = run.exits_leaving_nothing(&log);
    assert!(status.success(), "{status}:\n{}", read(&log));
    let show = Command::new(exe()).arg("show").arg(&dir).output().unwrap();
    assert!(show.status.success(), "{show:?}");
    assert!(read(&log).contains("interrupted"), "{}", read(&log));
}

#[test]
fn a_run_stopped_by_ctrl_c_while_starting_says_nothing_was_measured_and_leaves_no_process() {
    let dir = out_dir("lifecycle-int");
    let log = dir.with_extension("log");
    let mut run = Marked::start(a_run(&dir), "run-int", &log);
    // Its first role is up; the window has not opened.
    run.wait_for_children(1, &log);
    assert!(!read(&log).contains("s / 70s]"), "{}", read(&log));
    run.signal(libc::SIGINT);
    let status = run.exits_leaving_nothing(&log);
    // Ended as Ctrl-C ends a program, so a shell or make stops there too.
    assert_eq!(
        status.signal(),
        Some(libc::SIGINT),
        "{status}:\n{}",
        read(&log)
    );
    assert!(
        read(&log).contains("nothing was measured yet"),
        "{}",
        read(&log)
    );
}

#[test]
fn the_roles_of_a_run_killed_outright_end_within_seconds() {
    // Killed as its first role starts (before any role listens for a signal), and once
    // four are up.
    for up in [1, 4] {
        let dir = out_dir(&format!("lifecycle-kill-{up}"));
        let log = dir.with_extension("log");
        let mut run = Marked::start(a_run(&dir), &format!("run-kill-{up}"), &log);
        run.wait_for_children(up, &log);
        run.signal(libc::SIGKILL);
        run.child.wait().unwrap();
        // The kernel signals each role as the harness dies; each stops as when asked.
        within(
            Duration::from_secs(10),
            || run.started().is_empty(),
            || {
                format!(
                    "killed with {up} up: still running 10 s later: {:#?}",
                    run.started()
                )
            },
        );
    }
}

#[test]
fn a_pool_bench_stopped_by_sigterm_leaves_no_process() {
    let dir = out_dir("lifecycle-bench");
    let log = dir.with_extension("log");
    let mut cmd = Command::new(exe());
    cmd.args(["bench", "pool", "--target", "builtin", "--miners", "10"])
        .args(["--rate", "100", "--step", "30s", "--max-steps", "2"])
        .arg("--out")
        .arg(&dir);
    let mut bench = Marked::start(cmd, "bench", &log);
    bench.wait_for_children(2, &log);
    std::thread::sleep(Duration::from_secs(2));
    bench.signal(libc::SIGTERM);
    let status = bench.exits_leaving_nothing(&log);
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "{status}:\n{}",
        read(&log)
    );
    assert!(
        read(&log).contains("stopped with it: stratum-bench role"),
        "{}",
        read(&log)
    );
}

#[test]
fn a_sweep_stopped_by_sigterm_records_its_run_as_interrupted_and_leaves_no_process() {
    let dir = out_dir("lifecycle-sweep");
    let log = dir.with_extension("log");
    let mut cmd = Command::new(exe());
    cmd.args([
        "sweep",
        "scenarios/sv1-baseline.toml",
        "--vary",
        "link.rtt_ms=10",
    ])
    .args(["--duration", "60s", "--out"])
    .arg(&dir);
    let mut sweep = Marked::start(cmd, "sweep", &log);
    // The sweep's run and its roles.
    sweep.wait_for_children(4, &log);
    std::thread::sleep(Duration::from_secs(3));
    sweep.signal(libc::SIGTERM);
    let status = sweep.exits_leaving_nothing(&log);
    assert!(status.success(), "{status}:\n{}", read(&log));
    // Its one run is recorded as stopped, to run again from the start.
    let record: serde_json::Value =
        serde_json::from_str(&read(&dir.join("sweep.json"))).expect("sweep.json");
    assert_eq!(record["runs"][0]["status"], "interrupted", "{record}");
}
