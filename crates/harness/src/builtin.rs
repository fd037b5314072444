//! The built-in node and SV1 pool, started for a benchmark.

use crate::process::{ready_field, RoleProcess};
use crate::roles::RoleSpec;
use anyhow::Result;
use probe::mono_ns;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The running built-in pool, and a client of its node.
pub struct Builtin {
    pub pool: SocketAddr,
    pub rpc: bitcoind_rpc::RpcClient,
}

/// Our node and SV1 pool as processes, the pool's share difficulty fixed at `difficulty`
/// (vardiff off), blocks out of reach; the pool also broadcasts its jobs to `broadcast`.
pub async fn start_builtin(
    exe: &Path,
    out: &Path,
    difficulty: f64,
    broadcast: Option<std::net::SocketAddr>,
    roles: &mut Vec<RoleProcess>,
) -> Result<Builtin> {
    let password = format!("{:x}", mono_ns());
    let mut mempool = node::MempoolConfig::preset(node::MempoolPreset::Testnet);
    mempool.tx_rate = 0.0;
    let node_spec = RoleSpec::Node {
        config: node::NodeConfig {
            block_interval: Duration::from_secs(3600),
            difficulty: node::Difficulty::Fixed(1.0), // blocks out of reach
            mempool,
            ..node::NodeConfig::default()
        },
        rpc_user: "bench".into(),
        rpc_password: password.clone(),
        tdp: None,
        ipc_data_dir: None,
        peer: None,
    };
    let (node, ready) = RoleProcess::spawn(exe, out, "node", &node_spec).await?;
    roles.push(node);
    let rpc_url = format!("http://{}", ready_field(&ready, "rpc", "node")?);
    let pool_spec = RoleSpec::Sv1Pool {
        config: sv1::pool::PoolConfig {
            listen: "127.0.0.1:0".parse()?,
            rpc_url: rpc_url.clone(),
            rpc_user: "bench".into(),
            rpc_password: password.clone(),
            zmq: ready
                .get("zmq")
                .and_then(|z| z.as_str())
                .map(str::to_string),
            payout_script: bitcoin::ScriptBuf::new_op_return([0u8; 4]),
            coinbase_tag: "/stratum-bench pool bench/".into(),
            job_refresh: Duration::from_secs(3600),
            vardiff: sv1::pool::VardiffConfig {
                shares_per_min: 1.0,
                start: difficulty,
                min: difficulty,
                max: difficulty,
                retarget: Duration::from_secs(3600),
            },
            version_rolling_mask: 0x1fff_e000,
            broadcast,
        },
    };
    let (pool, ready) = RoleProcess::spawn(exe, out, "pool", &pool_spec).await?;
    roles.push(pool);
    Ok(Builtin {
        pool: ready_field(&ready, "listen", "pool")?.parse()?,
        rpc: bitcoind_rpc::RpcClient::new(&rpc_url, "bench", &password),
    })
}
