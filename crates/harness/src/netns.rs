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
    forwards: Vec<JoinHandle<()>>,
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
        ip(&["netns", "add", &name])
            .context("isolate_network needs a network namespace: run as root (CAP_NET_ADMIN)")?;
        let ns = Netns {
            name: name.clone(),
            host_ip,
            pool_ip,
            forwards: Vec::new(),
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
        for step in steps {
            ip(step)?;
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
    /// end of the pair, on the same port; returns that address.
    pub async fn forward(&mut self, to: SocketAddr) -> Result<SocketAddr> {
        let at = SocketAddr::from((self.host_ip, to.port()));
        let listener = tokio::net::TcpListener::bind(at)
            .await
            .with_context(|| format!("cannot listen on {at} for namespace {}", self.name))?;
        self.forwards.push(tokio::spawn(async move {
            while let Ok((mut inside, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut service) = tokio::net::TcpStream::connect(to).await {
                        let _ = inside.set_nodelay(true);
                        let _ = service.set_nodelay(true);
                        let _ = tokio::io::copy_bidirectional(&mut inside, &mut service).await;
                    }
                });
            }
        }));
        Ok(at)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for f in &self.forwards {
            f.abort();
        }
        // Deleting the namespace deletes its end of the pair, and so the pair.
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            tracing::warn!(namespace = %self.name, error = format!("{e:#}"), "namespace left behind");
        }
    }
}
