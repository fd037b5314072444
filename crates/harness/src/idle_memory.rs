//! How fast the host hands back memory left idle: every few seconds a thread of the
//! harness touches a buffer it left alone since, then touches it again at once. On a
//! machine of its own the two differ by the caches; on a virtual machine whose host
//! reclaims or moves idle memory, the first touch can be a hundred times slower (1.9 to
//! 11.2 ms per MiB after 5 s idle, against 0.04 to 0.16 ms hot, on the 2-core VM this was
//! built on), and every role's first work after a quiet spell (its reaction to a new
//! block) pays it.

use parking_lot::Mutex;
use probe::event::IdleTouch;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the buffer rests between probes: about the quiet spell between a role's
/// blocks in a run (a few seconds), and well past a host's caches.
pub const REST: Duration = Duration::from_secs(5);
/// The buffer probed: big enough to time to the microsecond, small enough that a probe
/// costs its core at most a few ms even where idle memory is slow.
const BUFFER_BYTES: usize = 1 << 20;
/// One touch per cache line, as a role's own reads and writes would come.
const LINE_BYTES: usize = 64;

/// A probe thread, at nice 19 so a role that wants its core gets it; it ends when this is
/// dropped.
pub struct IdleMemoryProbe {
    last: Arc<Mutex<Option<IdleTouch>>>,
    _stop: mpsc::Sender<()>,
}

impl IdleMemoryProbe {
    /// Starts probing every `rest`; `None` when no thread can be started.
    pub fn start(rest: Duration) -> Option<IdleMemoryProbe> {
        let last = Arc::new(Mutex::new(None));
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = last.clone();
        std::thread::Builder::new()
            .name("idle-memory".into())
            .spawn(move || {
                lowest_priority();
                // Every page different and none zero, as a role's own memory is: a host
                // may keep zero or duplicate pages cheaper than others.
                let mut buffer: Vec<u8> = (0..BUFFER_BYTES)
                    .map(|i| (i % 251) as u8 ^ (i / 4096) as u8 | 1)
                    .collect();
                touch(&mut buffer);
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(rest) {
                    let switches = involuntary_switches();
                    let idle = touch(&mut buffer);
                    let hot = touch(&mut buffer);
                    // A role that took the core mid-probe would count as the host's: such
                    // a probe is dropped, the next one comes after the next rest.
                    if involuntary_switches() != switches {
                        continue;
                    }
                    let mib = BUFFER_BYTES as f64 / (1 << 20) as f64;
                    *shared.lock() = Some(IdleTouch {
                        rest_s: rest.as_secs_f64(),
                        idle_ms_per_mib: idle.as_secs_f64() * 1e3 / mib,
                        hot_ms_per_mib: hot.as_secs_f64() * 1e3 / mib,
                    });
                }
            })
            .map_err(
                |e| tracing::warn!(error = %e, "no idle-memory probe: cannot start its thread"),
            )
            .ok()?;
        Some(IdleMemoryProbe { last, _stop: stop })
    }

    /// The probe's reading since the last call, if one came.
    pub fn take(&self) -> Option<IdleTouch> {
        self.last.lock().take()
    }
}

/// Writes every cache line of `buffer` once; the time it took.
fn touch(buffer: &mut [u8]) -> Duration {
    let began = Instant::now();
    for line in buffer.chunks_mut(LINE_BYTES) {
        line[0] = line[0].wrapping_add(1);
    }
    // The writes are kept: the optimiser must assume the buffer is read.
    std::hint::black_box(&mut *buffer);
    began.elapsed()
}

/// How often this thread was taken off its core so far (`ru_nivcsw`); 0 when unreadable.
fn involuntary_switches() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    match unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } {
        0 => usage.ru_nivcsw as i64,
        _ => 0,
    }
}

/// This thread at nice 19: a role that wakes while a probe runs takes the core.
fn lowest_priority() {
    // SAFETY: gettid and setpriority take plain integers; on Linux PRIO_PROCESS with a
    // thread id sets that thread's nice value alone.
    let set = unsafe {
        let tid = libc::gettid() as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19)
    };
    if set != 0 {
        tracing::debug!("the idle-memory probe runs at the default priority");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_reads_the_first_touch_and_the_next() {
        let probe = IdleMemoryProbe::start(Duration::from_millis(50)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let reading = loop {
            if let Some(r) = probe.take() {
                break r;
            }
            assert!(Instant::now() < deadline, "no probe in 10 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        // 16,384 lines: more than nothing, and under a second even on a slow host.
        for ms in [reading.idle_ms_per_mib, reading.hot_ms_per_mib] {
            assert!(ms > 0.0 && ms < 1000.0, "{reading:?}");
        }
    }
}
