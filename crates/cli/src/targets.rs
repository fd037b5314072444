//! Benchmarks load this machine only: every address one is pointed at is checked before
//! anything starts.

use anyhow::{ensure, Context, Result};
use std::net::{SocketAddr, ToSocketAddrs};

/// Fails unless `addr` is a loopback address; `flag` names the option it came from.
pub fn on_this_machine(addr: SocketAddr, flag: &str) -> Result<()> {
    ensure!(
        addr.ip().is_loopback(),
        "{flag} {addr}: benchmarks load only this machine (127.0.0.1 or ::1)"
    );
    Ok(())
}

/// The same for a URL such as `http://user:pass@localhost:18443/wallet/x`.
pub fn url_on_this_machine(url: &str, flag: &str) -> Result<()> {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let with_port = if host_port.ends_with(']') || !host_port.contains(':') {
        format!("{host_port}:80")
    } else {
        host_port.to_string()
    };
    let addrs: Vec<SocketAddr> = with_port
        .to_socket_addrs()
        .with_context(|| format!("{flag} {url}: cannot resolve {host_port:?}"))?
        .collect();
    ensure!(
        !addrs.is_empty(),
        "{flag} {url}: {host_port:?} has no address"
    );
    addrs.into_iter().try_for_each(|a| on_this_machine(a, flag))
}

/// `--pool-command PATH`, identified as a `pool_sv2` release whose config this build
/// writes, before anything starts; none means the linked release.
pub fn sri_pool_binary(path: Option<&std::path::Path>) -> Result<Option<sri::release::Build>> {
    path.map(|p| sri::release::identify(p, sri::App::Pool).context("--pool-command"))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_passes() {
        assert!(on_this_machine("127.0.0.1:3333".parse().unwrap(), "--via").is_ok());
        assert!(on_this_machine("[::1]:3333".parse().unwrap(), "--via").is_ok());
        let err = on_this_machine("192.0.2.1:3333".parse().unwrap(), "--via").unwrap_err();
        assert!(err.to_string().contains("--via 192.0.2.1:3333"), "{err}");
        for ok in [
            "http://127.0.0.1:18443",
            "http://u:p@localhost:18443/",
            "http://[::1]:18443/wallet/w",
        ] {
            assert!(url_on_this_machine(ok, "--node").is_ok(), "{ok}");
        }
        for far in ["http://192.0.2.7:8332", "http://10.0.0.1"] {
            assert!(url_on_this_machine(far, "--node").is_err(), "{far}");
        }
    }
}
