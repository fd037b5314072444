//! The SV1 baseline's side.

use super::*;

/// How an SV1 side's pool reaches its node: the simulated one, or a real one through
/// the RPC tap.
pub(super) struct PoolNode<'a> {
    /// The RPC's `HOST:PORT`.
    pub rpc: &'a str,
    /// The RPC user; `None`: one per side, so the simulated node keeps a getblocktemplate
    /// cache per pool, as a bitcoind of its own would.
    pub user: Option<&'a str>,
    pub password: &'a str,
    /// The publisher of `hashblock` (and `rawblock` on the simulated node).
    pub zmq: Option<&'a str>,
    /// The publisher of `hashblock` alone.
    pub zmq_hashblock: Option<&'a str>,
}

impl PoolNode<'_> {
    fn user(&self, side: &str) -> String {
        self.user
            .map_or_else(|| pool_rpc_user(side), str::to_string)
    }
}

/// Our own SV1 pool on the node: where it listens.
async fn builtin_sv1_pool(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    pool: &str,
    node: &PoolNode<'_>,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let s = &opts.scenario;
    let pool_ready = spawn(
        opts,
        dir,
        pool,
        &RoleSpec::Sv1Pool {
            config: sv1::pool::PoolConfig {
                listen: "127.0.0.1:0".parse()?,
                rpc_url: format!("http://{}", node.rpc),
                rpc_user: node.user(side),
                rpc_password: node.password.into(),
                zmq: node.zmq.map(str::to_string),
                payout_script: payout_script(),
                coinbase_tag: format!("/stratum-bench {side}/"),
                job_refresh: s.pool.job_refresh,
                refresh_fee_threshold_sats: s.pool.refresh_fee_threshold_sats,
                vardiff: sv1::pool::VardiffConfig {
                    shares_per_min: s.miners.shares_per_min,
                    start: s.start_difficulty(),
                    min: s.start_difficulty() / 1000.0,
                    max: s.start_difficulty() * 1e6,
                    retarget: s.pool.vardiff_retarget,
                },
                version_rolling_mask: 0x1fff_e000,
                broadcast: None,
            },
        },
        roles,
    )
    .await?;
    let pool_addr = announced(&pool_ready.listen, "listen", pool)?;
    Ok(pool_addr)
}

/// The SV1 baseline: SV1 miners -> link -> built-in SV1 pool -> node RPC and ZMQ.
pub(super) async fn start_sv1_side(
    opts: &RunOptions,
    dir: &Path,
    side: &Side,
    node: &PoolNode<'_>,
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let pool = format!("pool-{side}");
    let (pool_addr, pool_name, pool_policy, worker_prefix, suggest) = match s.external_pool(side) {
        Some(external) => {
            let resolved = crate::external_pool::resolve(external, Path::new(""), side)?;
            let listen = free_local_port()?;
            let rpc_user = node.user(side);
            let site = crate::external_pool::Site {
                rpc: node.rpc.parse().context("the node's RPC address")?,
                rpc_user: &rpc_user,
                rpc_password: node.password,
                zmq: node.zmq,
                zmq_hashblock: node.zmq_hashblock,
                difficulty: s.start_difficulty(),
                job_refresh_s: s.pool.job_refresh.as_secs_f64(),
                payout_address: bitcoin::Address::from_script(
                    &payout_script(),
                    bitcoin::Network::Regtest,
                )?
                .to_string(),
                run_dir: dir,
                launcher: &opts.launcher,
                cache_dir: &crate::external_pool::cache_dir(),
            };
            let started = resolved.start(&site, side, &pool, listen).await?;
            roles.push(started.process);
            let suggest = resolved.suggest_difficulty.then(|| s.start_difficulty());
            (
                started.listen,
                Some(resolved.name),
                resolved.policy,
                (started.worker_prefix).unwrap_or_else(|| default_worker_prefix(side)),
                suggest,
            )
        }
        None => (
            builtin_sv1_pool(opts, dir, side, &pool, node, roles).await?,
            None,
            None,
            default_worker_prefix(side),
            None,
        ),
    };
    // The same hop every SV2 side crosses: a tap on the pool site, where verdicts are read.
    let tap = format!("tap-{side}");
    let tap_spec = sv1_tap(pool_addr);
    let tap_addr = spawn_listening(opts, dir, &tap, &tap_spec, roles).await?;
    // A backup: another of our pools on the same node, with its own tap.
    let backup = match s.backup.pool {
        true => {
            let label = format!("{side}-backup");
            let (pool, tap) = (format!("pool-{label}"), format!("tap-{label}"));
            let pool_addr = builtin_sv1_pool(opts, dir, &label, &pool, node, roles).await?;
            let tap_addr = spawn_listening(opts, dir, &tap, &sv1_tap(pool_addr), roles).await?;
            Some((pool, tap, tap_addr))
        }
        false => None,
    };
    let upstreams = (tap_addr, backup.as_ref().map(|b| b.2));
    let (link, link_addr, backup_addr, shards) =
        spawn_side_link(opts, dir, side, farm_port, (upstreams, &tap_spec), roles).await?;
    tell(
        opts,
        format!("{side}: SV1 miners connect to stratum+tcp://{link_addr} (farm side of the link)"),
    );
    let pools = (link_addr, backup_addr);
    let miners = spawn_sv1_miners(opts, dir, (side, &worker_prefix, suggest), pools, roles).await?;
    let mut started = vec![&pool[..], &tap, &link];
    started.extend(shards.iter().map(String::as_str));
    started.push(&miners);
    if let Some((pool, tap, _)) = &backup {
        started.extend([&pool[..], tap]);
    }
    Ok(SideRoles {
        pool_software: Some(pool_name.unwrap_or_else(|| {
            format!("stratum-bench's built-in SV1 pool {}", env!("CARGO_PKG_VERSION"))
        })),
        pool_policy: pool_policy.or_else(|| {
            Some("ZMQ hashblock, a job on every new tip and after pool.job_refresh, one write per job, vardiff".into())
        }),
        backup_pool_role: backup.as_ref().map(|(_, tap, _)| tap.clone()),
        ..pool_side_roles(s, side, (&miners, &tap, &link), &started)
    })
}

/// The tap in front of an SV1 pool at `pool`, on any loopback port.
fn sv1_tap(pool: SocketAddr) -> RoleSpec {
    RoleSpec::Sv1Tap {
        config: sv1::tap::Sv1TapConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream: pool,
            connection_offset: 0,
        },
    }
}
