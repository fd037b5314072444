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

/// How a side's miners fit this machine's descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinersFit {
    /// Processes each relay on the miners' path (the WAN link and the tap in front of the
    /// pool) runs as, where every miner has a connection of its own across them (SV1, D).
    pub relay_shards: u32,
    /// The descriptors one process may hold here.
    pub per_process: u64,
}

impl MinersFit {
    /// Connections one relay process holds here (two descriptors each).
    pub fn relay_capacity(&self) -> u64 {
        relay_capacity(self.per_process)
    }
}

/// Connections a relay (a link, a tap: two descriptors each) holds in a process that may
/// open `per_process` descriptors.
fn relay_capacity(per_process: u64) -> u64 {
    per_process.saturating_sub(SLACK) / 2
}

/// How full a relay shard is planned on average: the kernel spreads the miners'
/// connections over the shards by a hash of their addresses, not evenly, so each gets
/// room to spare (at 20,000 miners over three shards the spread is about 80 connections
/// either way; the room is thousands).
const SHARD_FILL: f64 = 0.8;

/// How `miners` a side fit here, or why they cannot, saying what the machine allows and
/// the count that fits. A process that holds one connection per miner (the fleet, the
/// pool, a translator: each the role under test or the miners themselves, one process
/// each) bounds the count; the relays, two descriptors a miner, run as shards when one
/// process cannot hold them. The harness raises its own limit first (its roles inherit
/// it), so the check is against what was really obtained, not what the limits claim
/// could be.
pub fn miners_fit(miners: u32) -> Result<MinersFit> {
    let have = raise_fd_limit();
    fit(miners, have, local_ports())
}

fn fit(miners: u32, have: u64, ports: u64) -> Result<MinersFit> {
    let miners_u64 = u64::from(miners);
    let fits = have.saturating_sub(SLACK);
    if miners_u64 > fits {
        bail!(
            "scenario field `miners.count`: {miners} miners need {} file descriptors in each process that holds one connection a miner \
             (the fleet, the pool, a translator; one process each), and this machine allows {have} per process: at most {fits} miners fit here \
             (raise `ulimit -Hn`, or fs.nr_open as root)",
            miners_u64 + SLACK
        );
    }
    // Ephemeral ports: every miner's connection to the same next hop takes one of its own.
    if miners_u64 > ports {
        bail!("scenario field `miners.count`: {miners} miners need {miners} local ports to reach their next hop; this machine has {ports}, so at most {ports} miners fit");
    }
    let fit = MinersFit {
        relay_shards: 1,
        per_process: have,
    };
    let capacity = fit.relay_capacity();
    if miners_u64 <= capacity {
        return Ok(fit);
    }
    let planned = (capacity as f64 * SHARD_FILL).floor().max(1.0);
    Ok(MinersFit {
        relay_shards: (miners_u64 as f64 / planned).ceil() as u32,
        ..fit
    })
}

/// The client connections a tap can hold here (two descriptors each: the client's and
/// the upstream's), after raising the limit; fails, naming the limit, when `wanted`
/// connections do not fit.
pub fn tap_capacity(wanted: Option<u64>) -> Result<u64> {
    let have = raise_fd_limit();
    let capacity = relay_capacity(have);
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
pub fn free_local_port() -> Result<SocketAddr> {
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
        assert_eq!(miners_fit(10).unwrap().relay_shards, 1);
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
        let err = miners_fit(u32::MAX).unwrap_err().to_string();
        assert!(
            err.contains("miners.count") && err.contains("file descriptors"),
            "{err}"
        );
    }

    /// Worked by hand for a process limit of 20,000 and 28,232 local ports (this
    /// machine's): a relay holds (20,000 - 256) / 2 = 9,872 miners; past that each shard
    /// is planned at 80% of it, 7,897 (7,897.6 rounded down).
    #[test]
    fn the_relays_shard_past_what_one_process_holds_and_the_pool_bounds_the_count() {
        let shards = |miners| fit(miners, 20_000, 28_232).unwrap().relay_shards;
        assert_eq!(shards(9_872), 1);
        // 9,873 / 7,897 = 1.25: two shards.
        assert_eq!(shards(9_873), 2);
        // 19,744 / 7,897 = 2.5: three.
        assert_eq!(shards(19_744), 3);
        // The pool holds one descriptor a miner in one process: 20,000 - 256 fit.
        let err = fit(20_000, 20_000, 28_232).unwrap_err().to_string();
        assert!(
            err.contains("20000 miners need 20256 file descriptors")
                && err.contains("allows 20000 per process: at most 19744 miners fit here"),
            "{err}"
        );
        // With descriptors to spare, the ports bound it: one a miner to the next hop.
        let err = fit(30_000, 100_000, 28_232).unwrap_err().to_string();
        assert!(err.contains("at most 28232 miners fit"), "{err}");
    }
}
