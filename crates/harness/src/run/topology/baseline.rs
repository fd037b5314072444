//! The SV1 baseline's side.

use super::*;

/// Our own SV1 pool on the node: where it listens.
async fn builtin_sv1_pool(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    pool: &str,
    (rpc, password, zmq): (&str, &str, Option<String>),
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
                rpc_url: format!("http://{rpc}"),
                rpc_user: pool_rpc_user(side),
                rpc_password: password.into(),
                zmq,
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
    let pool_addr: SocketAddr = ready_field(&pool_ready, "listen", pool)?.parse()?;
    Ok(pool_addr)
}

/// The SV1 baseline: SV1 miners -> link -> built-in SV1 pool -> node RPC and ZMQ.
pub(super) async fn start_sv1_side(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    ((rpc, password, zmq), zmq_hashblock): ((&str, &str, Option<String>), Option<&str>),
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let pool = format!("pool-{side}");
    let (pool_addr, pool_name, pool_policy, worker_prefix) = match s.external_pool(side) {
        Some(external) => {
            let resolved = crate::external_pool::resolve(external, Path::new(""), side)?;
            let listen = free_local_port()?;
            let rpc_user = pool_rpc_user(side);
            let site = crate::external_pool::Site {
                rpc: rpc.parse().context("the node's RPC address")?,
                rpc_user: &rpc_user,
                rpc_password: password,
                zmq: zmq.as_deref(),
                zmq_hashblock,
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
            let prefix = started.worker_prefix;
            (listen, Some(resolved.name), resolved.policy, prefix)
        }
        None => (
            builtin_sv1_pool(opts, dir, side, &pool, (rpc, password, zmq), roles).await?,
            None,
            None,
            default_worker_prefix(side),
        ),
    };
    // The same hop every SV2 side crosses: a tap on the pool site, where verdicts are read.
    let tap = format!("tap-{side}");
    let tap_ready = spawn(
        opts,
        dir,
        &tap,
        &RoleSpec::Sv1Tap {
            config: sv1::tap::Sv1TapConfig {
                listen: "127.0.0.1:0".parse()?,
                upstream: pool_addr,
            },
        },
        roles,
    )
    .await?;
    let tap_addr: SocketAddr = ready_field(&tap_ready, "listen", &tap)?.parse()?;
    let (link, link_addr) = spawn_link(opts, dir, side, farm_port, tap_addr, roles).await?;
    eprintln!("{side}: SV1 miners connect to stratum+tcp://{link_addr} (farm side of the link)");
    let miners = spawn_sv1_miners(opts, dir, (side, &worker_prefix), link_addr, roles).await?;
    Ok(SideRoles {
        pool_software: Some(pool_name.unwrap_or_else(|| {
            format!("stratum-bench's built-in SV1 pool {}", env!("CARGO_PKG_VERSION"))
        })),
        pool_policy: pool_policy.or_else(|| {
            Some("ZMQ hashblock, a job on every new tip and after pool.job_refresh, one write per job, vardiff".into())
        }),
        ..pool_side_roles(s, side, (&miners, &tap, &link), &[&pool, &tap, &link, &miners])
    })
}
