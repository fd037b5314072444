//! The senders a benchmark starts: our node, with the built-in SV1 pool or the real SRI
//! pool (and, in front of it, SRI's translator), each as its own process.

use crate::process::{Launcher, RoleProcess};
use crate::roles::{announced, Ready, RoleSpec};
use anyhow::{Context, Result};
use probe::mono_ns;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The running built-in pool, and a client of its node.
pub struct Builtin {
    pub pool: SocketAddr,
    pub rpc: bitcoind_rpc::RpcClient,
}

/// Our node, blocks out of reach of any miner and the mempool still (only the benchmark
/// makes blocks, with `generatetoaddress`); with `tdp`, its Template Provider face too.
/// Returns the node's ready line, its RPC URL and password (the user is `bench`).
async fn start_node(
    launcher: &Launcher,
    out: &Path,
    tdp: Option<node::tdp::TdpOptions>,
    roles: &mut Vec<RoleProcess>,
) -> Result<(Ready, String, String)> {
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
        tdp,
        ipc: None,
        peer: None,
        ports: Default::default(),
    };
    let (node, ready) = RoleProcess::spawn(launcher, out, "node", &node_spec).await?;
    roles.push(node);
    let rpc_url = format!("http://{}", announced(&ready.rpc, "rpc", "node")?);
    Ok((ready, rpc_url, password))
}

/// Our node and SV1 pool as processes, the pool's share difficulty fixed at `difficulty`
/// (vardiff off), blocks out of reach; the pool also broadcasts its jobs to `broadcast`.
pub async fn start_builtin(
    launcher: &Launcher,
    out: &Path,
    difficulty: f64,
    broadcast: Option<std::net::SocketAddr>,
    roles: &mut Vec<RoleProcess>,
) -> Result<Builtin> {
    let (ready, rpc_url, password) = start_node(launcher, out, None, roles).await?;
    let pool_spec = RoleSpec::Sv1Pool {
        config: sv1::pool::PoolConfig {
            listen: "127.0.0.1:0".parse()?,
            rpc_url: rpc_url.clone(),
            rpc_user: "bench".into(),
            rpc_password: password.clone(),
            zmq: ready.zmq.clone(),
            payout_script: bitcoin::ScriptBuf::new_op_return([0u8; 4]),
            coinbase_tag: "/stratum-bench pool bench/".into(),
            job_refresh: Duration::from_secs(3600),
            refresh_fee_threshold_sats: 0,
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
    let (pool, ready) = RoleProcess::spawn(launcher, out, "pool", &pool_spec).await?;
    roles.push(pool);
    Ok(Builtin {
        pool: announced(&ready.listen, "listen", "pool")?,
        rpc: bitcoind_rpc::RpcClient::new(&rpc_url, "bench", &password),
    })
}

/// The SRI pool, as SV2 miners (or a translator) reach it.
pub struct SriPool {
    pub pool: SocketAddr,
    pub keys: sv2_wire::AuthorityKeys,
    pub rpc: bitcoind_rpc::RpcClient,
}

/// Our node with its Template Provider face, for SRI pools to take templates from.
pub struct TemplateProvider {
    tdp: SocketAddr,
    tp_public: stratum_apps::key_utils::Secp256k1PublicKey,
    rpc_url: String,
    password: String,
}

/// Our node as a process, serving its Template Provider face. It offers nothing new on
/// its own: new work comes only with the benchmark's blocks.
pub async fn start_template_provider(
    launcher: &Launcher,
    out: &Path,
    roles: &mut Vec<RoleProcess>,
) -> Result<TemplateProvider> {
    let tp_keys = sv2_wire::AuthorityKeys::generate();
    let tdp = node::tdp::TdpOptions {
        bind: "127.0.0.1:0".parse()?,
        keys: tp_keys.clone(),
        interval: Duration::from_secs(3600),
        fee_threshold_sats: u64::MAX,
    };
    let (ready, rpc_url, password) = start_node(launcher, out, Some(tdp), roles).await?;
    Ok(TemplateProvider {
        tdp: announced(&ready.tdp, "tdp", "node")?,
        tp_public: tp_keys.public,
        rpc_url,
        password,
    })
}

/// The SRI pool as the process `name`, on `tp`'s templates, aiming its channels' targets
/// at `shares_per_minute` per channel, each share answered at once (batches of one): the
/// linked release, or `binary` (another build, identified) with the same config.
pub async fn start_sri_pool(
    launcher: &Launcher,
    out: &Path,
    (name, binary): (&str, Option<&sri::release::Build>),
    tp: &TemplateProvider,
    shares_per_minute: f64,
    roles: &mut Vec<RoleProcess>,
) -> Result<SriPool> {
    let keys = sv2_wire::AuthorityKeys::generate();
    let params = sri::PoolParams {
        listen: crate::limits::free_local_port()?,
        authority_public: keys.public,
        authority_secret: keys.secret,
        templates: sri::TemplateSource::Tdp {
            address: tp.tdp,
            public: tp.tp_public,
        },
        payout_script_hex: payout_script().to_hex_string(),
        signature: "stratum-bench bench".into(),
        shares_per_minute,
        share_batch_size: 1,
        jds_listen: None,
    };
    let listen = match binary {
        None => {
            let (pool, ready) =
                RoleProcess::spawn(launcher, out, name, &RoleSpec::SriPool { params }).await?;
            roles.push(pool);
            announced(&ready.listen, "listen", name)?
        }
        Some(build) => {
            let command = build.program.display().to_string();
            let config = (params.listen, sri::pool_config(&params)?);
            let pool =
                crate::sri_builds::spawn_binary(launcher, out, name, &command, config).await?;
            roles.push(pool);
            params.listen
        }
    };
    Ok(SriPool {
        pool: listen,
        keys,
        rpc: bitcoind_rpc::RpcClient::new(&tp.rpc_url, "bench", &tp.password),
    })
}

/// SRI's translator for SV1 miners, with one aggregated channel up to the SRI pool
/// through a tap (which records when each new block's SetNewPrevHash reaches the
/// translator). Returns where SV1 miners connect.
pub async fn start_translator(
    launcher: &Launcher,
    out: &Path,
    pool: &SriPool,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let tap_spec = RoleSpec::tap(pool.pool, &pool.keys);
    let (tap, ready) = RoleProcess::spawn(launcher, out, "tap", &tap_spec).await?;
    roles.push(tap);
    let tap_addr = announced(&ready.listen, "listen", "tap")?;
    let params = sri::TranslatorParams {
        listen: crate::limits::free_local_port()?,
        upstreams: vec![sri::Upstream {
            address: tap_addr,
            public: pool.keys.public,
        }],
        user_identity: "stratum-bench-fanout".into(),
        // Nominal: the miners only listen.
        miner_hashrate: 1e6,
        shares_per_minute: 1.0,
        aggregate_channels: true,
    };
    let (translator, ready) = RoleProcess::spawn(
        launcher,
        out,
        "translator",
        &RoleSpec::SriTranslator { params },
    )
    .await
    .context("cannot start SRI's translator")?;
    roles.push(translator);
    announced(&ready.listen, "listen", "translator")
}

/// Where the pools under test pay: anyone-can-spend P2WSH(OP_TRUE), as the simulated
/// network's own miners do.
pub(crate) fn payout_script() -> bitcoin::ScriptBuf {
    bitcoin::ScriptBuf::new_p2wsh(&bitcoin::WScriptHash::from_raw_hash(
        bitcoin::hashes::Hash::hash(&[0x51]),
    ))
}
