//! One clock for every process on a host.
//!
//! `std::time::Instant` cannot be compared across processes, so events carry raw
//! `CLOCK_MONOTONIC` nanoseconds: every role on the host reads the same clock, which makes
//! a job sent by the pool process and received by the miner process directly comparable.

/// Nanoseconds of `CLOCK_MONOTONIC` (shared by all processes of this host).
pub fn mono_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
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
