//! Child processes that never outlive the command that started them.
//!
//! Every process a command starts comes from [`command`]: if the command dies without
//! stopping it (SIGKILL, a crash), the kernel sends it a signal. On its way out, however
//! it ends, a command stops what it started and waits for it ([`stop_children`]), so no
//! process of ours runs on beside the next benchmark, holding a port or a data directory.
//! SIGTERM and SIGINT reach a command through [`Stops`]: a command that stops gracefully
//! (writes what it measured) says so with [`stops_handled_here`]; any other is cancelled
//! at the first signal.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::Notify;

/// A command for a child process that gets `death_signal` when the thread of ours that
/// started it dies, however it dies. A child started after we died exits at once. It is
/// std's Command; `tokio::process::Command::from` makes it an async one.
pub fn command_with_death_signal(program: impl AsRef<OsStr>, death_signal: i32) -> Command {
    let mut cmd = Command::new(program);
    let parent = std::process::id();
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // We may have died before the signal was armed.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd
}

/// A command for a child process that gets SIGTERM when we die: what every role gets, so
/// it stops as it would when asked.
pub fn command(program: impl AsRef<OsStr>) -> Command {
    command_with_death_signal(program, libc::SIGTERM)
}

/// A process we started, running when we stopped it (or when a signal came).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub pid: u32,
    /// Its program and first words (`stratum-bench role pool`).
    pub name: String,
    /// It did not end within the grace after SIGTERM and was killed.
    pub killed: bool,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.name, self.pid)?;
        if self.killed {
            f.write_str(", killed")?;
        }
        Ok(())
    }
}

/// Our child processes, as the kernel lists them (`/proc/self/task/*/children`): every
/// thread's, since a child belongs to the thread that started it.
fn children() -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return pids;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Still running: neither gone nor a zombie waiting to be reaped.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

/// Reaps `pid` if it has ended; true when it has.
fn reaped(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on a child of ours, without blocking.
    let r = unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
    r == pid as i32 || r == -1
}

/// A process's program, the words that follow it up to its first option and the value of
/// a `--name` option (`stratum-bench role pool`), from `/proc/PID/cmdline`.
fn name_of(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = (cmdline.split(|&b| b == 0))
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .filter(|w| !w.is_empty())
        .collect();
    let Some(program) = words.first() else {
        return "?".into();
    };
    let mut name = vec![program.rsplit('/').next().unwrap_or_default()];
    name.extend(
        (words[1..]
            .iter()
            .take_while(|w| !w.starts_with('-'))
            .take(2))
        .map(String::as_str),
    );
    if let Some(at) = words.iter().position(|w| w == "--name") {
        name.extend(words.get(at + 1).map(String::as_str));
    }
    name.join(" ")
}

/// Our child processes still running, each with its name.
pub fn running_children() -> Vec<Stopped> {
    children()
        .into_iter()
        .filter(|&pid| running(pid))
        .map(|pid| Stopped {
            pid,
            name: name_of(pid),
            killed: false,
        })
        .collect()
}

/// Stops every child process still running: SIGTERM to each, then up to `grace` for all
/// of them to end (a role writes what it has; Bitcoin Core shuts down), then SIGKILL to
/// any left, and every one reaped. Returns those that were running. Call it when the
/// async runtime is gone: it reaps children the runtime no longer watches.
pub fn stop_children(grace: Duration) -> Vec<Stopped> {
    let mut stopped = running_children();
    for child in &stopped {
        // SAFETY: kill(2) on a child of ours, not yet reaped (so its pid is still ours).
        unsafe { libc::kill(child.pid as i32, libc::SIGTERM) };
    }
    let deadline = Instant::now() + grace;
    let mut left: Vec<usize> = (0..stopped.len()).collect();
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|&i| !reaped(stopped[i].pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in left {
        let pid = stopped[i].pid;
        // SAFETY: as above; then a blocking wait for the killed child.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
            libc::waitpid(pid as i32, std::ptr::null_mut(), 0);
        }
        stopped[i].killed = true;
    }
    // Those that had ended but were not yet reaped.
    for pid in children() {
        // SAFETY: waitpid on a child of ours, without blocking.
        unsafe { libc::waitpid(pid as i32, std::ptr::null_mut(), libc::WNOHANG) };
    }
    stopped
}

static HANDLED_HERE: AtomicBool = AtomicBool::new(false);

/// From now on this command stops gracefully on SIGTERM or SIGINT by itself (it listens
/// with [`terminated`]): [`Stops`] cancels it only at a second signal.
pub fn stops_handled_here() {
    HANDLED_HERE.store(true, Ordering::SeqCst);
}

/// The signals that stop a command, listened for from its start.
pub struct Stops {
    term: Signal,
    int: Signal,
    seen: u32,
}

impl Stops {
    pub fn listen() -> anyhow::Result<Stops> {
        Ok(Stops {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            seen: 0,
        })
    }

    /// The signal that should cancel the command (the first, unless the command handles
    /// stops itself, then the second) and the child processes running when it came,
    /// which the cancelled command leaves to stop.
    pub async fn cancelling(&mut self) -> (Signalled, Vec<Stopped>) {
        loop {
            let signalled = tokio::select! {
                _ = self.term.recv() => Signalled::Term,
                _ = self.int.recv() => Signalled::Int,
            };
            self.seen += 1;
            // A command not yet listening when the signal came hears of it when it does.
            SIGNALLED.store(true, Ordering::SeqCst);
            SIGNAL_SEEN.notify_waiters();
            if self.seen >= 2 || !HANDLED_HERE.load(Ordering::SeqCst) {
                return (signalled, running_children());
            }
        }
    }
}

/// A stop signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signalled {
    Term,
    Int,
}

impl Signalled {
    /// Ends this process as this signal would have, had it not been caught: a shell or
    /// make that started the command sees it killed by the signal (and a script stops
    /// on Ctrl-C), not an ordinary exit. Call it last, once everything is stopped.
    pub fn end_the_process(self) -> ! {
        let signal = match self {
            Signalled::Term => libc::SIGTERM,
            Signalled::Int => libc::SIGINT,
        };
        // SAFETY: the default action restored, then the signal sent to ourselves; nothing
        // runs after it but the exit that follows if it is somehow blocked.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        std::process::exit(128 + signal)
    }
}

impl std::fmt::Display for Signalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signalled::Term => "SIGTERM",
            Signalled::Int => "SIGINT (Ctrl-C)",
        })
    }
}

/// Set once [`Stops`] has seen a stop signal, for a command that was not yet listening.
static SIGNALLED: AtomicBool = AtomicBool::new(false);
static SIGNAL_SEEN: Notify = Notify::const_new();

/// Resolves on SIGTERM (the harness stopping a role, a time limit) or SIGINT (Ctrl-C), or
/// at once if [`Stops`] saw one before: a role asked to stop while it was still starting
/// stops as soon as it listens, not never.
pub async fn terminated() {
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    // Registered before the flag is read, so a signal between the two is not lost.
    let seen = SIGNAL_SEEN.notified();
    tokio::pin!(seen);
    seen.as_mut().enable();
    if SIGNALLED.load(Ordering::SeqCst) {
        return;
    }
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = seen => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The children are left to `stop_children`, which reaps them: what it is for.
    #[allow(clippy::zombie_processes)]
    #[test]
    fn a_child_that_ignores_sigterm_is_killed_after_the_grace_and_every_one_is_reaped() {
        let polite = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let stubborn = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; exec sleep 30"])
            .spawn()
            .unwrap();
        // The shell sets its trap, then becomes the sleep (which keeps it): once its
        // command line is the sleep's, SIGTERM is ignored.
        let cmdline = format!("/proc/{}/cmdline", stubborn.id());
        while !std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sleep")) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        let stopped = stop_children(Duration::from_millis(500));
        let by_pid = |pid| stopped.iter().find(|s| s.pid == pid).unwrap();
        assert!(!by_pid(polite.id()).killed);
        assert!(by_pid(stubborn.id()).killed);
        assert!(started.elapsed() >= Duration::from_millis(500));
        assert!(children().is_empty(), "left: {:?}", children());
        assert_eq!(stop_children(Duration::from_secs(1)), vec![]);
    }
}
