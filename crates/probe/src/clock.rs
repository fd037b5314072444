//! One clock for every process on a host.
//!
//! `std::time::Instant` cannot be compared across processes, so events carry raw
//! `CLOCK_MONOTONIC` nanoseconds: every role on the host reads the same clock, which makes
//! a job sent by the pool process and received by the miner process directly comparable.

use std::sync::atomic::{AtomicI64, Ordering};

/// A shift added to this process's monotonic stamps, only ever set by tests that need a
/// clock unlike the host's (as another host's would be).
static TEST_SHIFT_NS: AtomicI64 = AtomicI64::new(0);

/// Nanoseconds of `CLOCK_MONOTONIC` (shared by all processes of this host).
pub fn mono_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC).saturating_add_signed(TEST_SHIFT_NS.load(Ordering::Relaxed))
}

/// Makes this process's clock run `shift_ns` apart from the host's, so a test can check
/// that the harness finds and removes a clock offset between hosts. Never used in a run.
pub fn shift_for_test(shift_ns: i64) {
    TEST_SHIFT_NS.store(shift_ns, Ordering::Relaxed);
}

/// What names this process's monotonic clock: the kernel's boot id (`CLOCK_MONOTONIC`
/// is one clock per boot of a host), marked when a test shifted it. Two processes whose
/// ids are equal read the same clock; any other pair needs an offset estimated.
pub fn clock_id() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        // Unknown, it matches nothing, so the offset is estimated rather than assumed.
        .unwrap_or_else(|_| format!("unknown-boot-pid-{}", std::process::id()));
    match TEST_SHIFT_NS.load(Ordering::Relaxed) {
        0 => boot,
        shift => format!("{boot}+test-shift-{shift}ns-pid-{}", std::process::id()),
    }
}

/// Nanoseconds since the UNIX epoch, only to anchor monotonic stamps to calendar time.
pub fn wall_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and both clock ids exist on every Linux.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_never_goes_back() {
        let a = mono_ns();
        let b = mono_ns();
        assert!(b >= a);
        assert!(wall_ns() > 1_600_000_000_000_000_000);
    }
}
