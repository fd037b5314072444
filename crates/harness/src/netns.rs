//! A network namespace of its own for a pool that listens on every interface (public-pool
//! binds its API to 0.0.0.0 and its stratum port to every address): a veth pair joins it
//! to the run, so the side's tap reaches the pool and the pool reaches the node's RPC and
//! ZMQ through forwarders on the run's end of the pair, and nothing of it is on the host's
//! own interfaces.

use anyhow::{bail, Context, Result};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::task::JoinHandle;

/// The /30 blocks namespaces take their two addresses from.
const PREFIX: [u8; 2] = [10, 213];

/// A namespace, its veth pair and its forwarders; all removed when dropped.
pub struct Netns {
    pub name: String,
    /// The run's end of the pair: where the pool reaches the node.
    pub host_ip: Ipv4Addr,
    /// The pool's end: where the side's tap reaches the pool.
    pub pool_ip: Ipv4Addr,
    /// Each service forwarded, to where the pool reaches it, and the forwarder.
    forwards: std::collections::HashMap<SocketAddr, (SocketAddr, JoinHandle<()>)>,
}

fn ip(args: &[&str]) -> Result<()> {
    ip_output(args).map(|_| ())
}

/// What `ip ARGS` printed.
fn ip_output(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run `ip` (Debian's iproute2)")?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether an interface is one of ours (`sb<pid>h<n>`): the run's end of a pair.
fn is_ours(interface: &str) -> bool {
    interface
        .strip_prefix("sb")
        .and_then(|rest| rest.split_once('h'))
        .is_some_and(|(pid, n)| {
            !pid.is_empty()
                && !n.is_empty()
                && (pid.chars().chain(n.chars())).all(|c| c.is_ascii_digit())
        })
}

/// `a.b.c.d/len` (or one address, /32) as its address and length.
fn parse_cidr(cidr: &str) -> Option<(Ipv4Addr, u32)> {
    let (addr, len) = cidr.split_once('/').unwrap_or((cidr, "32"));
    let len = len.parse().ok().filter(|l| *l <= 32)?;
    Some((addr.parse().ok()?, len))
}

/// Whether two blocks overlap: they agree on the shorter one's prefix.
fn overlap((a, a_len): (Ipv4Addr, u32), (b, b_len): (Ipv4Addr, u32)) -> bool {
    let mask = u32::MAX.checked_shl(32 - a_len.min(b_len)).unwrap_or(0);
    u32::from(a) & mask == u32::from(b) & mask
}

/// The block namespaces take their /30s from.
fn prefix() -> (Ipv4Addr, u32) {
    (Ipv4Addr::new(PREFIX[0], PREFIX[1], 0, 0), 16)
}

/// The host's addresses in 10.213.0.0/16 (from `ip -4 -o addr show`).
fn addresses_in_prefix(listing: &str) -> Vec<Ipv4Addr> {
    listing
        .lines()
        .filter_map(|line| {
            let cidr = line
                .split_whitespace()
                .skip_while(|w| *w != "inet")
                .nth(1)?;
            let addr: Ipv4Addr = cidr.split('/').next()?.parse().ok()?;
            (addr.octets()[..2] == PREFIX).then_some(addr)
        })
        .collect()
}

/// The host's routes into 10.213.0.0/16 on interfaces not ours (from `ip -4 route show
/// table all`): each block, and its line.
fn foreign_routes(listing: &str) -> Vec<((Ipv4Addr, u32), String)> {
    const TYPES: [&str; 10] = [
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "throw",
        "unreachable",
        "prohibit",
        "blackhole",
        "nat",
        "anycast",
    ];
    listing
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().peekable();
            words.next_if(|w| TYPES.contains(w));
            let block = parse_cidr(words.next()?)?;
            let device = words.skip_while(|w| *w != "dev").nth(1).unwrap_or("");
            (overlap(block, prefix()) && !is_ours(device)).then(|| (block, line.to_string()))
        })
        .collect()
}

/// Deletes the namespaces a killed run left: `sb-<pid>-<n>` of a process that is gone,
/// with no process inside. (Runs are told apart by pid: one in another pid namespace
/// sharing this host's `/run/netns` still has its pool inside, and is left alone.) Once
/// a process.
fn remove_stale() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        let Ok(listing) = ip_output(&["netns", "list"]) else {
            return;
        };
        for name in listing.lines().filter_map(|l| l.split_whitespace().next()) {
            let pid = name
                .strip_prefix("sb-")
                .and_then(|rest| rest.split_once('-'))
                .and_then(|(pid, _)| pid.parse::<u32>().ok());
            let gone =
                pid.is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists());
            let empty = || ip_output(&["netns", "pids", name]).is_ok_and(|p| p.trim().is_empty());
            if gone && empty() {
                match ip(&["netns", "del", name]) {
                    Ok(()) => {
                        tracing::info!(namespace = name, "removed a namespace a killed run left")
                    }
                    Err(e) => tracing::warn!(
                        namespace = name,
                        error = format!("{e:#}"),
                        "a killed run's namespace stays"
                    ),
                }
            }
        }
    });
}

impl Netns {
    /// A new namespace named after this process and a counter, with `lo` up and a veth
    /// pair to the run. Needs root (CAP_NET_ADMIN).
    pub fn create() -> Result<Netns> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        remove_stale();
        let routes = foreign_routes(&ip_output(&["-4", "route", "show", "table", "all"])?);
        if let Some((_, route)) = routes.iter().find(|((_, len), _)| *len <= prefix().1) {
            bail!(
                "this host routes all of {}.{}.0.0/16, where isolate_network puts its namespaces, elsewhere (`{route}`): a namespace's addresses would hide that network's from this host",
                PREFIX[0],
                PREFIX[1]
            );
        }
        let in_use = addresses_in_prefix(&ip_output(&["-4", "-o", "addr", "show"])?);
        // Two runs at once seldom try the same block first (the pid spreads them, the
        // counter separates one run's namespaces); a block with an address in use, or in a
        // network the host routes elsewhere, is passed over.
        let first = pid.wrapping_mul(31).wrapping_add(n);
        let block_ips = |block: u32| {
            let base = (block % 16_384) * 4;
            let addr = |last: u32| {
                let v = base + last;
                Ipv4Addr::new(PREFIX[0], PREFIX[1], (v >> 8) as u8, v as u8)
            };
            (addr(0), addr(1), addr(2))
        };
        let free = |(block, host, pool): &(Ipv4Addr, Ipv4Addr, Ipv4Addr)| {
            !in_use.iter().any(|a| a == host || a == pool)
                && !routes.iter().any(|(net, _)| overlap(*net, (*block, 30)))
        };
        let (_, host_ip, pool_ip) = (0..16_384)
            .map(|k| block_ips(first.wrapping_add(k)))
            .find(free)
            .context("no /30 of 10.213.0.0/16 is free on this host")?;
        let name = format!("sb-{pid}-{n}");
        let (host_if, pool_if) = (format!("sb{pid}h{n}"), format!("sb{pid}p{n}"));
        ip(&["netns", "add", &name]).with_context(|| {
            format!("cannot create network namespace {name} (isolate_network needs root, CAP_NET_ADMIN)")
        })?;
        // From here the namespace goes when `ns` does, and the pair with it once its end
        // is inside; until then a failure deletes the pair itself.
        let ns = Netns {
            name: name.clone(),
            host_ip,
            pool_ip,
            forwards: Default::default(),
        };
        let host_cidr = format!("{host_ip}/30");
        let pool_cidr = format!("{pool_ip}/30");
        let steps: [&[&str]; 6] = [
            &[
                "link", "add", &host_if, "type", "veth", "peer", "name", &pool_if,
            ],
            &["link", "set", &pool_if, "netns", &name],
            &["addr", "add", &host_cidr, "dev", &host_if],
            &["link", "set", &host_if, "up"],
            &["-n", &name, "addr", "add", &pool_cidr, "dev", &pool_if],
            &["-n", &name, "link", "set", &pool_if, "up"],
        ];
        for (i, step) in steps.into_iter().enumerate() {
            if let Err(e) = ip(step) {
                if i >= 1 {
                    let _ = ip(&["link", "del", &host_if]);
                }
                return Err(e);
            }
        }
        ip(&["-n", &name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The words that run a command inside the namespace.
    pub fn exec_prefix(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name]
            .map(String::from)
            .to_vec()
    }

    /// Makes `to` (a service of the run on loopback) reachable from inside at the run's
    /// end of the pair, on the same port, for the pool alone; returns that address (the
    /// same for a service asked for twice).
    pub async fn forward(&mut self, to: SocketAddr) -> Result<SocketAddr> {
        if let Some((at, _)) = self.forwards.get(&to) {
            return Ok(*at);
        }
        let at = SocketAddr::from((self.host_ip, to.port()));
        let listener = tokio::net::TcpListener::bind(at)
            .await
            .with_context(|| format!("cannot listen on {at} for namespace {}", self.name))?;
        let pool_ip = self.pool_ip;
        let task = tokio::spawn(async move {
            while let Ok((mut inside, peer)) = listener.accept().await {
                // The address is the host's, so anything routed to it could knock: only
                // the pool in the namespace is let through to the node.
                if peer.ip() != pool_ip {
                    tracing::warn!(%peer, "a connection to a namespace's forwarder from outside it, refused");
                    continue;
                }
                tokio::spawn(async move {
                    if let Ok(mut service) = tokio::net::TcpStream::connect(to).await {
                        let _ = inside.set_nodelay(true);
                        let _ = service.set_nodelay(true);
                        let _ = tokio::io::copy_bidirectional(&mut inside, &mut service).await;
                    }
                });
            }
        });
        self.forwards.insert(to, (at, task));
        Ok(at)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for (_, task) in self.forwards.values() {
            task.abort();
        }
        // Deleting the namespace deletes its end of the pair, and so the pair.
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            tracing::warn!(namespace = %self.name, error = format!("{e:#}"), "namespace left behind");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_addresses_and_routes_in_the_prefix_are_read() {
        let addrs = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n5: sb812h0    inet 10.213.7.1/30 scope global sb812h0\\       valid_lft forever\n6: tun0    inet 10.213.200.9/24 scope global tun0\n7: eth0    inet 10.21.3.4/16 scope global eth0\n";
        assert_eq!(
            addresses_in_prefix(addrs),
            [Ipv4Addr::new(10, 213, 7, 1), Ipv4Addr::new(10, 213, 200, 9)]
        );
        // Our own pairs' routes are none of another's; a VPN's into the prefix is, and so
        // is one holding it all, or a route of a type (blackhole) in another table.
        let ours = "default via 172.17.0.1 dev eth0\n10.213.7.0/30 dev sb812h0 proto kernel scope link src 10.213.7.1\nlocal 10.213.7.1 dev sb812h0 table local proto kernel scope host src 10.213.7.1\n";
        assert!(foreign_routes(ours).is_empty());
        let vpn = format!("{ours}10.213.200.0/24 dev tun0 proto kernel scope link\n");
        let found = foreign_routes(&vpn);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, (Ipv4Addr::new(10, 213, 200, 0), 24));
        let wide = foreign_routes("10.0.0.0/8 via 10.1.1.1 dev wg0 table 51820\n");
        assert_eq!(wide[0].0, (Ipv4Addr::new(10, 0, 0, 0), 8));
        let hole = foreign_routes("blackhole 10.213.9.0/24 proto static\n");
        assert_eq!(hole[0].0, (Ipv4Addr::new(10, 213, 9, 0), 24));
        assert!(foreign_routes("10.212.0.0/16 dev wg0\n").is_empty());
        assert!(is_ours("sb812h0") && !is_ours("sbx") && !is_ours("tun0"));
        // A /30 inside a foreign /24 overlaps it; one beside it does not.
        let net = (Ipv4Addr::new(10, 213, 200, 0), 24);
        assert!(overlap(net, (Ipv4Addr::new(10, 213, 200, 8), 30)));
        assert!(!overlap(net, (Ipv4Addr::new(10, 213, 201, 8), 30)));
    }
}
