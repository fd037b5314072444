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
    Ok(())
}

impl Netns {
    /// A new namespace named after this process and a counter, with `lo` up and a veth
    /// pair to the run. Needs root (CAP_NET_ADMIN).
    pub fn create() -> Result<Netns> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // Two runs at once take different blocks: the pid spreads them, the counter
        // separates one run's namespaces.
        let block = (pid.wrapping_mul(31).wrapping_add(n)) % 16_384;
        let base = block * 4;
        let addr = |last: u32| {
            let v = base + last;
            Ipv4Addr::new(PREFIX[0], PREFIX[1], (v >> 8) as u8, v as u8)
        };
        let (host_ip, pool_ip) = (addr(1), addr(2));
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
