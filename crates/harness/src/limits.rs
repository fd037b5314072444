//! What the machine allows a run: file descriptors (every miner costs one in the fleet and
//! the pool and two in the link) and loopback ports.

use anyhow::{bail, Context, Result};
use std::net::SocketAddr;

/// Descriptors a role needs beyond its connections (files, listeners, runtime).
const SLACK: u64 = 256;

/// The most descriptors a process of ours may open: the hard limit, or for root the
/// kernel's ceiling (`fs.nr_open`), which root may raise the hard limit to.
pub fn max_fds() -> u64 {
    let hard = current().1;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(hard)
            .max(hard)
    } else {
        hard
    }
}

fn current() -> (u64, u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write into.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    (lim.rlim_cur, lim.rlim_max)
}

/// Raises this process's descriptor limit as far as allowed (roles call it at start).
pub fn raise_fd_limit() -> u64 {
    let target = max_fds();
    let lim = libc::rlimit {
        rlim_cur: target,
        rlim_max: target,
    };
    // SAFETY: setting a limit of this process; failure leaves the old limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        let (_, hard) = current();
        let lim = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: as above, within the hard limit.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
    current().0
}

/// Fails, saying what the machine allows, when `miners` connections per side cannot fit.
/// The harness raises its own limit first (its roles inherit it), so the check is against
/// what was really obtained, not what the limits claim could be.
pub fn check_miners(miners: u32) -> Result<()> {
    let need = 2 * u64::from(miners) + SLACK;
    let have = raise_fd_limit();
    if need > have {
        bail!(
            "scenario field `miners.count`: {miners} miners need {need} file descriptors in the link relay, \
             and this machine allows {have} per process (raise `ulimit -Hn`, or fs.nr_open as root)"
        );
    }
    // Ephemeral ports: each miner's connection to the link and the link's to the pool.
    let ports = local_ports();
    if 2 * u64::from(miners) > ports {
        bail!("scenario field `miners.count`: {miners} miners need {} local ports; this machine has {ports}", 2 * miners);
    }
    Ok(())
}

/// The client connections a tap can hold here (two descriptors each: the client's and
/// the upstream's), after raising the limit; fails, naming the limit, when `wanted`
/// connections do not fit.
pub fn tap_capacity(wanted: Option<u64>) -> Result<u64> {
    let have = raise_fd_limit();
    let capacity = have.saturating_sub(SLACK) / 2;
    if let Some(wanted) = wanted.filter(|w| *w > capacity) {
        bail!(
            "--max-connections {wanted}: a tap needs two file descriptors per connection and this machine allows {have} per process \
             (at most {capacity} connections; raise `ulimit -Hn`, or fs.nr_open as root)"
        );
    }
    Ok(capacity)
}

/// How a fan-out to `miners` fits this machine, `per_connection` miners sharing each
/// connection (1 but for SV2 group channels): the sender holds one descriptor per
/// connection, so they must fit one process; the connections are spread over fleet
/// processes of at most the returned size (two descriptors each: a connection and a
/// broadcast socket). Fails, naming the limit, when the sender cannot hold them.
pub fn fanout_fleet_size(miners: u32, per_connection: u32) -> Result<FleetSize> {
    let per_connection = per_connection.max(1);
    let connections = miners.div_ceil(per_connection);
    let have = raise_fd_limit();
    let need = u64::from(connections) + SLACK;
    if need > have {
        bail!(
            "--miners {miners}: the sender needs {need} file descriptors for {connections} connections and this machine allows {have} per process \
             (at most {} connections here; raise `ulimit -Hn`, or fs.nr_open as root)",
            have.saturating_sub(SLACK)
        );
    }
    let ports = local_ports();
    if u64::from(connections) > ports {
        bail!("--miners {miners}: one local port per connection ({connections}), and this machine has {ports}");
    }
    let sockets = ((have - SLACK) / 2).min(u64::from(u32::MAX)) as u32;
    Ok(FleetSize {
        sockets,
        miners: sockets.saturating_mul(per_connection),
    })
}

/// What one fleet process can hold.
#[derive(Debug, Clone, Copy)]
pub struct FleetSize {
    /// Connections (and as many broadcast sockets).
    pub sockets: u32,
    /// Miners on those connections.
    pub miners: u32,
}

/// Ephemeral ports this machine hands out.
fn local_ports() -> u64 {
    let (low, high) = ephemeral_range();
    u64::from(high - low) + 1
}

/// The range the kernel picks outgoing connections' ports from.
pub fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().filter_map(|x| x.parse::<u16>().ok());
            Some((it.next()?, it.next_back()?))
        })
        .unwrap_or((32_768, 60_999))
}

/// A loopback port free now, for a role that must be told its port up front.
///
/// Taken below the ephemeral range when there is room: a port the kernel hands out for
/// outgoing connections could be given to another connection (a miner's, say) between
/// this check and the role binding it.
pub(crate) fn free_local_port() -> Result<SocketAddr> {
    use rand::Rng;
    let (ephemeral_low, _) = ephemeral_range();
    if ephemeral_low > 20_000 {
        let mut rng = rand::thread_rng();
        for _ in 0..64 {
            let port = rng.gen_range(10_000..ephemeral_low);
            if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
                return Ok(listener.local_addr()?);
            }
        }
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("no free local port")?;
    Ok(listener.local_addr()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_read_and_checked() {
        assert!(max_fds() >= current().1);
        assert!(check_miners(10).is_ok());
        assert!(
            current().0 >= 2 * 10 + SLACK,
            "the check raised the limit it relies on"
        );
        assert!(fanout_fleet_size(10, 1).unwrap().miners >= 10);
        let grouped = fanout_fleet_size(10, 100).unwrap();
        assert_eq!(grouped.miners, grouped.sockets * 100);
        let err = fanout_fleet_size(u32::MAX, 1).unwrap_err().to_string();
        assert!(
            err.contains("file descriptors") && err.contains("at most"),
            "{err}"
        );
        let err = check_miners(u32::MAX).unwrap_err().to_string();
        assert!(
            err.contains("miners.count") && err.contains("file descriptors"),
            "{err}"
        );
    }
}
