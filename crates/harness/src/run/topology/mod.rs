//! What each configuration starts, in order, and how its roles are wired together: the
//! node, then per side its pool site, link and farm. Each configuration has its file;
//! the helpers every side uses are here.

mod baseline;
mod job_declaration;
mod template_provider;

use crate::run::{node_role, RunOptions, NODE, NODE_TAP};

const RPC_USER: &str = "stratum-bench";
use baseline::{start_sv1_side, PoolNode};
use job_declaration::{start_sv2_jd_side, FarmNode};
use template_provider::{start_sv2_pool_side, PoolTemplates};

use crate::builtin::payout_script;
use crate::limits::free_local_port;
use crate::process::RoleProcess;
use crate::roles::{announced, LinkRoute, Ready, RoleSpec};
use analysis::manifest::SideRoles;
use anyhow::{Context, Result};
use model::scenario::{Config, FaultTarget, ReachedNode, RealNode, Scenario, Side, StartedCore};
use probe::mono_ns;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stratum_apps::key_utils::Secp256k1PublicKey;
/// What a side's SV1 miners authorize as, before `.<index>`, unless its pool wants another.
pub(crate) fn default_worker_prefix(side: &str) -> String {
    format!("{side}-miner")
}

/// The RPC user an SV1 side's pool logs in as: the node keeps a getblocktemplate cache per
/// user, so every pool is served as by a bitcoind of its own.
fn pool_rpc_user(side: &str) -> String {
    format!("{RPC_USER}.{side}")
}

/// The simulated network's node as the scenario sets it: its seed, block pace, hashrate
/// share and difficulty, its mempool, and a time base fixed now, so a farm's node builds
/// on the very same base block.
fn node_config(s: &Scenario) -> Result<node::NodeConfig> {
    let mut mempool = mempool_config(s)?;
    mempool.max_txs = mempool.max_txs.max(mempool.initial_txs);
    let now_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs() as u32;
    Ok(node::NodeConfig {
        seed: s.seed,
        block_interval: s.network.block_interval,
        hashrate_share: s.network.hashrate_share,
        scripted_arrivals: None,
        arrivals: s.network.arrivals,
        difficulty: node::Difficulty::MinerHashrate(s.total_hashrate()),
        start_height: s.network.start_height,
        // Fixed, so a farm's node builds on the very same base block.
        time_base: Some(now_unix),
        mempool,
        template_refresh: s.network.template_refresh,
        follower: None,
    })
}

/// The scenario's mempool preset.
fn mempool_config(s: &Scenario) -> Result<node::MempoolConfig> {
    let preset = node::MempoolPreset::parse(&s.network.mempool).map_err(anyhow::Error::msg)?;
    Ok(node::MempoolConfig::preset(preset))
}

/// Starts the node, then per side the pool, link and miners; returns the sides' roles.
pub(crate) async fn start_roles(
    opts: &RunOptions,
    dir: &Path,
    roles: &mut Vec<RoleProcess>,
) -> Result<BTreeMap<String, SideRoles>> {
    let s = &opts.scenario;
    match &s.node {
        Some(RealNode::Reached(real)) => return start_on_real_node(opts, dir, real, roles).await,
        Some(RealNode::Started(core)) => return start_on_core(opts, dir, core, roles).await,
        None => {}
    }
    let password = format!("{:x}", mono_ns() ^ u64::from(std::process::id()));
    let node_cfg = node_config(s)?;
    // The SV2 sides' template provider: the node's TDP face, or its Mining IPC face (the
    // only one the pool runs its JDS with).
    let configs: Vec<Config> = s.sides.iter().map(|x| x.config).collect();
    let sv2 = configs.iter().any(|c| c.pool_templates());
    let ipc_sides = configs.iter().any(|c| c.declares_jobs());
    let ipc = s.sv2.template_provider == model::scenario::NodeTemplates::Ipc;
    // A Template Provider of the scenario's takes the node's templates over its IPC.
    let own_tp = s.roles.template_provider.as_ref().filter(|_| sv2);
    let tdp = (sv2 && !ipc && own_tp.is_none()).then(|| node::tdp::TdpOptions {
        bind: "127.0.0.1:0".parse().expect("an address"),
        keys: sv2_wire::AuthorityKeys::generate(),
        interval: s.pool.job_refresh,
        fee_threshold_sats: s.pool.refresh_fee_threshold_sats,
    });
    let tp_public = tdp.as_ref().map(|t| t.keys.public);
    let ipc_data_dir = if (sv2 && ipc) || ipc_sides || own_tp.is_some() {
        Some(ipc_dir(dir, NODE)?)
    } else {
        None
    };
    let ready = spawn(
        opts,
        dir,
        NODE,
        &RoleSpec::Node {
            config: node_cfg.clone(),
            rpc_user: RPC_USER.into(),
            rpc_password: password.clone(),
            tdp,
            ipc: (ipc_data_dir.clone()).map(|data_dir| node::ipc::IpcOptions {
                data_dir,
                interface: s.network.mining_ipc,
            }),
            peer: None,
            ports: Default::default(),
        },
        roles,
    )
    .await?;
    let rpc = announced(&ready.rpc, "rpc", NODE)?;
    let rpc_text = rpc.to_string();
    let zmq = ready.zmq.clone();
    let zmq_hashblock = ready.zmq_hashblock.as_deref();
    let ipc_templates =
        (ipc_data_dir.as_ref()).map(|data_dir| ipc_source(s, data_dir.clone(), "regtest"));
    let templates = match (tp_public, own_tp, &ipc_data_dir) {
        (Some(public), _, _) => Some(PoolTemplates::Node(sri::TemplateSource::Tdp {
            address: announced(&ready.tdp, "tdp", NODE)?,
            public,
        })),
        (None, Some(command), Some(data_dir)) => Some(PoolTemplates::Own {
            command: command.clone(),
            socket: node::ipc::socket_path(data_dir),
            chain: "regtest".into(),
            subdir: "regtest".into(),
        }),
        _ => ipc_templates.clone().map(PoolTemplates::Node),
    };
    let network = NetworkNode {
        rpc,
        password: password.clone(),
        zmq: zmq
            .as_deref()
            .and_then(|z| z.strip_prefix("tcp://"))
            .context("the node publishes no ZMQ endpoint")?
            .parse()?,
        // A deployment's plan cannot know it: the farm's node then asks.
        start_mono_ns: match ready.start_mono_ns {
            None if opts.launcher.plan.is_none() => {
                anyhow::bail!("the node did not say when it started")
            }
            start => start,
        },
        config: node_cfg,
        ipc: ipc_templates,
    };
    let mut sides = BTreeMap::new();
    for i in s.start_order() {
        let side = &s.sides[i];
        let farm_port = s.farm_port(i);
        let side_roles = match side.config {
            Config::Sv1 => {
                let node = PoolNode {
                    rpc: &rpc_text,
                    user: None,
                    password: &password,
                    zmq: zmq.as_deref(),
                    zmq_hashblock,
                };
                start_sv1_side(opts, dir, side, &node, farm_port, roles).await?
            }
            Config::Sv2C | Config::Sv2D => {
                let templates =
                    (templates.as_ref()).context("an SV2 side has the node's template provider")?;
                start_sv2_pool_side(opts, dir, side, templates, farm_port, roles).await?
            }
            Config::Sv2A | Config::Sv2B => {
                let farm = FarmNode::Follower(&network);
                start_sv2_jd_side(opts, dir, side, farm, farm_port, roles).await?
            }
        };
        sides.insert(side.to_string(), side_roles);
    }
    Ok(sides)
}

/// The sides on a Bitcoin Core the run starts as its network (`crate::core_network`),
/// then reaches as it reaches any real node.
async fn start_on_core(
    opts: &RunOptions,
    dir: &Path,
    core: &StartedCore,
    roles: &mut Vec<RoleProcess>,
) -> Result<BTreeMap<String, SideRoles>> {
    let s = &opts.scenario;
    let mempool = mempool_config(s)?;
    let password = core_node::fresh_password();
    let config = crate::core_network::CoreNetworkConfig {
        program: core.program.clone(),
        datadir: std::path::absolute(dir.join(format!("{NODE}-core")))?,
        rpc_password: password.clone(),
        seed: s.seed,
        network_block_interval: s.network_block_interval(),
        arrivals: s.network.arrivals,
        initial_txs: mempool.initial_txs,
        tx_rate: mempool.tx_rate,
        lasts: s.warmup + s.duration,
    };
    let ready = spawn(opts, dir, NODE, &RoleSpec::CoreNetwork { config }, roles).await?;
    let reached = ReachedNode {
        url: format!("http://{}", announced(&ready.rpc, "rpc", NODE)?),
        rpc_user: core_node::RPC_USER.into(),
        rpc_password: password,
        zmq: None,
        chain: Some(core_node::Chain::Signet.name().into()),
        ipc: Some(announced(&ready.ipc, "ipc", NODE)?),
    };
    start_on_real_node(opts, dir, &reached, roles).await
}

/// The sides on a real node: the node checked, the RPC tap in front of it (and the IPC
/// tap in front of its Mining IPC, for SV2 sides C and D), then per side the pool, link
/// and miners.
async fn start_on_real_node(
    opts: &RunOptions,
    dir: &Path,
    real: &ReachedNode,
    roles: &mut Vec<RoleProcess>,
) -> Result<BTreeMap<String, SideRoles>> {
    let chain = check_real_node(real).await?;
    // The SRI pool's name for the chain, and the directory Core keeps its socket in.
    let (network, subdir) = match chain.as_str() {
        "main" => ("mainnet", ""),
        other => (other, other),
    };
    let ipc = match &real.ipc {
        Some(socket) => {
            anyhow::ensure!(
                chain != "test",
                "scenario field `node.ipc`: the node is on testnet3, which has no network in the SRI roles' Mining IPC config (mainnet, testnet4, signet, regtest)"
            );
            let check = socket.clone();
            let interface = tokio::task::spawn_blocking(move || node::ipc::check_served(&check))
                .await?
                .map_err(|e| {
                    anyhow::anyhow!("scenario field `node.ipc`: {}: {e:#}", socket.display())
                })?;
            // v32.1 refuses the v31 submitSolution the pinned SRI roles call: they could
            // mine on it and never submit a block.
            anyhow::ensure!(
                interface == node::ipc::MiningInterface::V31,
                "scenario field `node.ipc`: {} takes solutions as Bitcoin Core v32.1 (submitSolution @10), and refuses the v31 submitSolution (@7) the SRI roles pinned here (Mining IPC 30 and 31) call: SV2 sides could never submit a block on it. Run SV1 sides alone on it, or a Core of v31",
                socket.display()
            );
            Some(crate::ipc_tap::IpcTapConfig {
                node_socket: socket.clone(),
                data_dir: ipc_dir(dir, NODE_TAP)?,
                subdir: subdir.to_string(),
            })
        }
        None => None,
    };
    let tap_data_dir = ipc.as_ref().map(|i| i.data_dir.clone());
    let ready = spawn(
        opts,
        dir,
        NODE_TAP,
        &RoleSpec::RpcTap {
            config: crate::rpc_tap::RpcTapConfig {
                listen: "127.0.0.1:0".parse()?,
                node_url: real.url.clone(),
                rpc_user: real.rpc_user.clone(),
                rpc_password: real.rpc_password.clone(),
                zmq: real.zmq.clone(),
                ipc,
            },
        },
        roles,
    )
    .await?;
    let rpc = announced(&ready.listen, "listen", NODE_TAP)?.to_string();
    // The pools ask the node through the tap, and hear of blocks from it directly.
    let node = PoolNode {
        rpc: &rpc,
        user: Some(&real.rpc_user),
        password: &real.rpc_password,
        zmq: real.zmq.as_deref(),
        zmq_hashblock: real.zmq.as_deref(),
    };
    // A Template Provider of the scenario's asks the node through the IPC tap, as a pool
    // would.
    let templates = match (&tap_data_dir, &opts.scenario.roles.template_provider) {
        (Some(data_dir), Some(command)) => Some(PoolTemplates::Own {
            command: command.clone(),
            socket: crate::ipc_tap::socket_path(data_dir, subdir),
            chain: chain.clone(),
            subdir: subdir.into(),
        }),
        (Some(data_dir), None) => Some(PoolTemplates::Node(ipc_source(
            &opts.scenario,
            data_dir.clone(),
            network,
        ))),
        (None, _) => None,
    };
    let mut sides = BTreeMap::new();
    for i in opts.scenario.start_order() {
        let side = &opts.scenario.sides[i];
        let farm_port = opts.scenario.farm_port(i);
        let roles = match (side.config, &tap_data_dir, &templates) {
            (Config::Sv2C | Config::Sv2D, _, Some(templates)) => {
                start_sv2_pool_side(opts, dir, side, templates, farm_port, roles).await?
            }
            // The JDC on the same node as the pool's JDS, through the same tap.
            (Config::Sv2A | Config::Sv2B, Some(data_dir), _) => {
                let templates = ipc_source(&opts.scenario, data_dir.clone(), network);
                let farm = FarmNode::Shared(templates);
                start_sv2_jd_side(opts, dir, side, farm, farm_port, roles).await?
            }
            _ => start_sv1_side(opts, dir, side, &node, farm_port, roles).await?,
        };
        sides.insert(side.to_string(), roles);
    }
    Ok(sides)
}

/// What getblockchaininfo says of a node, as far as a run needs it.
#[derive(serde::Deserialize)]
struct ChainInfo {
    chain: String,
    blocks: u64,
    #[serde(default)]
    headers: u64,
    #[serde(default)]
    initialblockdownload: bool,
}

/// A real node is reachable with the scenario's credentials, synced, and on the chain
/// the scenario names: else a clear error before anything starts. Its chain.
async fn check_real_node(real: &ReachedNode) -> Result<String> {
    let node = bitcoind_rpc::RpcClient::new(&real.url, &real.rpc_user, &real.rpc_password);
    let info: ChainInfo = node
        .call("getblockchaininfo", serde_json::json!([]))
        .await
        .map_err(|e| match e {
            bitcoind_rpc::RpcCallError::Unauthorized => anyhow::anyhow!(
                "scenario fields `node.rpc_user` / `node.rpc_password`: the node at {} refused them (HTTP 401)",
                real.url
            ),
            e => anyhow::anyhow!("scenario field `node.url`: the node at {}: {e}", real.url),
        })?;
    if let Some(problem) = node_problem(&info, real) {
        anyhow::bail!(problem);
    }
    eprintln!(
        "real node at {}: chain {}, height {}; its templates and tips are recorded by role {NODE_TAP}",
        real.url, info.chain, info.blocks
    );
    Ok(info.chain)
}

/// Why a run cannot use the node `info` describes, if it cannot.
fn node_problem(info: &ChainInfo, real: &ReachedNode) -> Option<String> {
    if info.initialblockdownload {
        return Some(format!(
            "the node at {} is in initial block download ({} of {} blocks): run once it has synced",
            real.url, info.blocks, info.headers
        ));
    }
    let chain = real.chain.as_deref().filter(|c| *c != info.chain)?;
    Some(format!(
        "scenario field `node.chain`: the node at {} is on {:?}, not {chain:?}",
        real.url, info.chain
    ))
}

/// SRI's translator on the farm site (on `farm_port`, 0 for any) for the SV1 miners, with
/// its `upstreams` (SV2 pools, or a JDC) and their keys, tried in order.
async fn spawn_translator(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    farm_port: u16,
    upstreams: Vec<(SocketAddr, Secp256k1PublicKey)>,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let s = &opts.scenario;
    let params = sri::TranslatorParams {
        listen: if farm_port == 0 {
            free_local_port()?
        } else {
            SocketAddr::from(([127, 0, 0, 1], farm_port))
        },
        upstreams: (upstreams.into_iter())
            .map(|(address, public)| sri::Upstream { address, public })
            .collect(),
        user_identity: format!("stratum-bench-{name}"),
        miner_hashrate: s.miner_hashrate(),
        shares_per_minute: s.miners.shares_per_min,
        aggregate_channels: s.sv2.aggregate_channels,
    };
    spawn_sri(
        opts,
        dir,
        name,
        s.roles.translator.as_ref(),
        (params.listen, sri::translator_config(&params)),
        RoleSpec::SriTranslator { params },
        roles,
    )
    .await
}

/// Our SV2 miners, connecting to `upstream` (a pool, a JDC, or the link) with its key, and
/// turning to `backup` as firmware does when there is one.
async fn spawn_sv2_miners(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    (upstream, upstream_public): (SocketAddr, Secp256k1PublicKey),
    backup: Option<sv2::fleet::BackupPool>,
    roles: &mut Vec<RoleProcess>,
) -> Result<String> {
    let s = &opts.scenario;
    let config = sv2::fleet::FleetConfig {
        pool: upstream,
        pool_public: upstream_public,
        machines: s.machines(),
        user_prefix: format!("{side}-miner"),
        channel: s.sv2.channel,
        channels_per_connection: 1,
        backup,
    };
    spawn_miners(opts, dir, side, RoleSpec::Sv2Miners { config }, roles).await
}

/// `side`'s miners, `miners-<side>`, as `spec` has them.
async fn spawn_miners(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    spec: RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<String> {
    let miners = format!("miners-{side}");
    spawn(opts, dir, &miners, &spec, roles).await?;
    Ok(miners)
}

/// The node that is the network, as the farm's nodes and the pools reach it.
struct NetworkNode {
    rpc: SocketAddr,
    password: String,
    zmq: SocketAddr,
    start_mono_ns: Option<u64>,
    config: node::NodeConfig,
    /// Its Mining IPC face, as a pool's template source.
    ipc: Option<sri::TemplateSource>,
}

/// Where a node role serves Bitcoin Core's Mining IPC, checked to fit a UNIX socket path.
fn ipc_dir(run_dir: &Path, node_role: &str) -> Result<PathBuf> {
    let dir = std::path::absolute(run_dir.join(format!("{node_role}-ipc")))?;
    let socket = node::ipc::socket_path(&dir);
    // sun_path holds 108 bytes.
    anyhow::ensure!(
        socket.as_os_str().len() < 108,
        "the IPC socket path {} is too long for a UNIX socket: choose a shorter --out",
        socket.display()
    );
    Ok(dir)
}

/// A node's IPC face as a template source, on the scenario's refresh policy; `network`
/// as the SRI pool names it.
fn ipc_source(s: &Scenario, data_dir: PathBuf, network: &str) -> sri::TemplateSource {
    sri::TemplateSource::Ipc {
        data_dir,
        network: network.to_string(),
        fee_threshold: s.pool.refresh_fee_threshold_sats,
        min_interval_s: s.pool.job_refresh.as_secs().clamp(1, 255) as u8,
    }
}

/// Starts role `name` of `spec` and returns where it listens, as its READY says.
async fn spawn_listening(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    spec: &RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    let ready = spawn(opts, dir, name, spec, roles).await?;
    announced(&ready.listen, "listen", name)
}

/// Starts an SRI role: the pinned build linked into stratum-bench (`spec`), or the
/// scenario's other build of it (`command`, given the same generated config).
#[allow(clippy::too_many_arguments)]
async fn spawn_sri(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    command: Option<&model::scenario::RoleCommand>,
    (listen, config): (SocketAddr, String),
    spec: RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<SocketAddr> {
    match command {
        None => spawn_listening(opts, dir, name, &spec, roles).await,
        Some(other) => {
            let role = crate::sri_builds::spawn_binary(
                &opts.launcher,
                dir,
                name,
                &other.command,
                (listen, config),
            )
            .await?;
            roles.push(role);
            Ok(listen)
        }
    }
}

/// The WAN link of a side from the farm (`farm_port`, 0 for any; shared with the link's
/// other shards when it has them) to `upstream`, and to its `backup` pool on a second
/// route when it has one; the farm-side address of each.
async fn spawn_link(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    (farm_port, shared): (u16, bool),
    (upstream, backup): (SocketAddr, Option<SocketAddr>),
    roles: &mut Vec<RoleProcess>,
) -> Result<(String, SocketAddr, Option<SocketAddr>)> {
    let route = |listen: SocketAddr, shared, upstream| LinkRoute {
        listen,
        shared,
        upstream,
        config: wan(&opts.scenario, side),
    };
    let farm = SocketAddr::from(([127, 0, 0, 1], farm_port));
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    let routes: Vec<LinkRoute> = std::iter::once(route(farm, shared, upstream))
        .chain(backup.map(|b| route(any, false, b)))
        .collect();
    let hazards = on_path(&opts.scenario, routes.len(), None);
    let (link, listening) =
        spawn_link_routes(opts, dir, &format!("link-{side}"), routes, hazards, roles).await?;
    Ok((link, listening[0], listening.get(1).copied()))
}

/// The WAN link of an SV2-pool or SV1 side (`spawn_link`) to its pool's tap (`tap`,
/// started as `tap_spec`) and its backup's; where every miner's connection crosses it and
/// one process cannot hold them (`sharding`), with its shards and the tap's. The link's
/// role, the farm-side address of each route, and the shards' roles.
async fn spawn_side_link(
    opts: &RunOptions,
    dir: &Path,
    side: &Side,
    farm_port: u16,
    ((tap, backup), tap_spec): ((SocketAddr, Option<SocketAddr>), &RoleSpec),
    roles: &mut Vec<RoleProcess>,
) -> Result<(String, SocketAddr, Option<SocketAddr>, Vec<String>)> {
    let Some(fit) = sharding(opts, side)? else {
        let (link, link_addr, backup_addr) =
            spawn_link(opts, dir, side, (farm_port, false), (tap, backup), roles).await?;
        return Ok((link, link_addr, backup_addr, Vec::new()));
    };
    // Shards share their port: a fixed one must be free of anything else first, or the
    // kernel would spread the miners over another run's link too.
    if farm_port != 0 {
        std::net::TcpListener::bind(("127.0.0.1", farm_port)).with_context(|| {
            format!("scenario field `link.farm_port`: port {farm_port} is in use")
        })?;
    }
    let (link, link_addr, backup_addr) =
        spawn_link(opts, dir, side, (farm_port, true), (tap, backup), roles).await?;
    let shards = spawn_relay_shards(opts, dir, (side.name(), fit), link_addr, tap_spec, roles);
    Ok((link, link_addr, backup_addr, shards.await?))
}

/// How side `side`'s relays fit here (`limits::miners_fit`) when they must run as shards:
/// only where every miner's own connection crosses the link, and only as processes on
/// this host (a plan's containers hold one each; loading the scenario refused what shards
/// cannot do). `None`: one process each.
fn sharding(opts: &RunOptions, side: &Side) -> Result<Option<crate::limits::MinersFit>> {
    if !side.config.miners_cross_the_link() {
        return Ok(None);
    }
    let fit = crate::limits::miners_fit(opts.scenario.miners.count)?;
    if fit.relay_shards == 1 {
        return Ok(None);
    }
    anyhow::ensure!(
        opts.launcher.plan.is_none(),
        "scenario field `miners.count`: side {side}'s link and tap would run as {} processes each to hold {} miners, and a deployment runs each as one container",
        fit.relay_shards,
        opts.scenario.miners.count
    );
    Ok(Some(fit))
}

/// Shards 2 on of side `side`'s relays as `fit` has them: tap shard k in front of the
/// pool (as `tap`, numbering its connections apart) and link shard k to it, listening on
/// the first link shard's `farm` address with it, the kernel spreading the miners'
/// connections over them. Returns the roles started, tap and link of each shard.
async fn spawn_relay_shards(
    opts: &RunOptions,
    dir: &Path,
    (side, fit): (&str, crate::limits::MinersFit),
    farm: SocketAddr,
    tap: &RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<Vec<String>> {
    let mut started = Vec::new();
    for k in 2..=fit.relay_shards {
        let tap_role = model::shard::name(&format!("tap-{side}"), k);
        let tap_addr = spawn_listening(opts, dir, &tap_role, &tap.tap_shard(k), roles).await?;
        let route = LinkRoute {
            listen: farm,
            shared: true,
            upstream: tap_addr,
            config: wan(&opts.scenario, side),
        };
        let link_role = model::shard::name(&format!("link-{side}"), k);
        spawn_link_routes(opts, dir, &link_role, vec![route], OnPath::default(), roles).await?;
        started.extend([tap_role, link_role]);
    }
    tell(
        opts,
        format!(
            "{side}: {} miners: its link and tap run as {} processes each (two descriptors a miner, {} a process here); the kernel spreads the miners' connections over them",
            opts.scenario.miners.count, fit.relay_shards, fit.per_process
        ),
    );
    Ok(started)
}

/// The WAN link of a side carrying several services; returns the link's role and the
/// farm-side address of each route, in order.
async fn spawn_link_routes(
    opts: &RunOptions,
    dir: &Path,
    link: &str,
    routes: Vec<LinkRoute>,
    hazards: OnPath,
    roles: &mut Vec<RoleProcess>,
) -> Result<(String, Vec<SocketAddr>)> {
    let link = link.to_string();
    let count = routes.len();
    let spec = RoleSpec::Link {
        routes,
        attack: hazards.attack,
        faults: hazards.faults,
        warmup: opts.scenario.warmup,
    };
    let listening = spawn(opts, dir, &link, &spec, roles).await?.routes;
    anyhow::ensure!(
        listening.len() == count,
        "{link} announced {} of its {count} routes",
        listening.len()
    );
    Ok((link, listening))
}

/// What befalls a link besides delay: the scenario's attacker and outages.
#[derive(Default)]
struct OnPath {
    attack: Option<link::attack::ScheduledAttack>,
    faults: Vec<link::fault::ScheduledFault>,
}

/// The scenario's attacker and outages on a side's mining link of `route_count` routes
/// (route 0 its pool, and `jds_route` its JDS where it has one; a backup pool's route
/// fails only with the whole link): `at` into the window, which opens `warmup` after every
/// role started; the harness tells each link when that is. The analysis reads when each
/// began from the link's own record.
fn on_path(s: &Scenario, route_count: usize, jds_route: Option<usize>) -> OnPath {
    let attack = (s.link.attack.as_ref()).map(|a| link::attack::ScheduledAttack {
        attack: a.attack.clone(),
        begins_after: a.at,
    });
    let faults = (s.faults.iter())
        .filter_map(|f| {
            let routes = match f.target {
                FaultTarget::Pool => vec![0],
                FaultTarget::Jds => vec![jds_route?],
                FaultTarget::Link => (0..route_count).collect(),
            };
            Some(link::fault::ScheduledFault {
                kind: f.kind,
                target: f.target.name().to_string(),
                routes,
                begins_after: f.at,
                lasts: f.lasts,
            })
        })
        .collect();
    OnPath { attack, faults }
}

/// What befalls the link carrying a farm node's feed (its `route_count` routes): the
/// farm's WAN going away (a `link` fault) and nothing else; no attacker.
fn on_feed(s: &Scenario, route_count: usize) -> OnPath {
    let OnPath { faults, .. } = on_path(s, route_count, None);
    let link = FaultTarget::Link.name();
    OnPath {
        attack: None,
        faults: faults.into_iter().filter(|f| f.target == link).collect(),
    }
}

/// `side`'s own link round trip, when the scenario gives it one.
fn side_rtt(s: &Scenario, side: &str) -> Option<f64> {
    s.link.side_rtt_ms.get(side).copied()
}

/// The WAN link of `side`, each way.
fn wan(s: &Scenario, side: &str) -> link::LinkConfig {
    link::LinkConfig {
        jitter: Duration::from_secs_f64(s.link.jitter_ms / 1e3),
        bandwidth_bps: s.link.bandwidth_mbps.map(|m| (m * 1e6) as u64),
        ..link::LinkConfig::from_rtt(Duration::from_secs_f64(s.link.rtt_of(side) / 1e3))
    }
}

/// SV1 miners through the side's SRI translator (`translator-<side>`, on the farm's port
/// when the scenario gives one), in front of its `upstreams` (a JDC, or the link to the
/// pool and to its backup) with their keys; returns the translator's and the miners' role
/// names.
async fn spawn_translated_miners(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    farm_port: u16,
    upstreams: Vec<(SocketAddr, Secp256k1PublicKey)>,
    roles: &mut Vec<RoleProcess>,
) -> Result<(String, String)> {
    let translator = format!("translator-{side}");
    let translator_addr =
        spawn_translator(opts, dir, &translator, farm_port, upstreams, roles).await?;
    tell(
        opts,
        format!("{side}: SV1 miners connect to stratum+tcp://{translator_addr} (the SRI translator, farm site)"),
    );
    let miners = spawn_sv1_miners(
        opts,
        dir,
        (side, &default_worker_prefix(side), None),
        (translator_addr, None),
        roles,
    )
    .await?;
    Ok((translator, miners))
}

/// The SV1 miners of `side`, authorizing as `<worker_prefix>.<index>`, asking for a
/// difficulty when given one, on `pool` (and its backup, when there is one).
async fn spawn_sv1_miners(
    opts: &RunOptions,
    dir: &Path,
    (side, worker_prefix, suggest_difficulty): (&str, &str, Option<f64>),
    (pool, backup): (SocketAddr, Option<SocketAddr>),
    roles: &mut Vec<RoleProcess>,
) -> Result<String> {
    let config = sv1::fleet::FleetConfig {
        pool,
        machines: opts.scenario.machines(),
        worker_prefix: worker_prefix.to_string(),
        broadcast: None,
        suggest_difficulty,
        backup,
    };
    spawn_miners(opts, dir, side, RoleSpec::Sv1Miners { config }, roles).await
}

/// Says where a started role listens; a plan's stand-in addresses are nobody's to use.
fn tell(opts: &RunOptions, line: String) {
    if opts.launcher.plan.is_none() {
        eprintln!("{line}");
    }
}

/// Starts a role and keeps it in `roles` (so it is stopped with the others); a plan's
/// role is only planned.
async fn spawn(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    spec: &RoleSpec,
    roles: &mut Vec<RoleProcess>,
) -> Result<Ready> {
    if let Some(plan) = &opts.launcher.plan {
        return plan.add(name, spec);
    }
    let (role, ready) = RoleProcess::spawn(&opts.launcher, dir, name, spec).await?;
    roles.push(role);
    Ok(ready)
}

/// The pool site of an SV2 side: the SRI pool and the tap in front of it.
struct PoolSite {
    /// The pool's authority keys, made for the run (the taps answer with them).
    keys: sv2_wire::AuthorityKeys,
    pool: String,
    tap: String,
    tap_addr: SocketAddr,
    /// The tap as started, for its shards.
    tap_spec: RoleSpec,
    /// Where its JDS answers, when it runs one.
    jds: Option<SocketAddr>,
}

/// Starts the SRI pool on `templates` (with its JDS on port `jds_port`, if any) and its
/// tap.
async fn spawn_pool_site(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    templates: sri::TemplateSource,
    jds_port: Option<u16>,
    roles: &mut Vec<RoleProcess>,
) -> Result<PoolSite> {
    let s = &opts.scenario;
    let keys = sv2_wire::AuthorityKeys::generate();
    let pool = format!("pool-{side}");
    let params = sri::PoolParams {
        listen: free_local_port()?,
        authority_public: keys.public,
        authority_secret: keys.secret,
        templates,
        payout_script_hex: payout_script().to_hex_string(),
        signature: format!("stratum-bench {side}"),
        shares_per_minute: s.miners.shares_per_min,
        share_batch_size: s.sv2.share_batch_size,
        jds_listen: jds_port.map(|port| SocketAddr::from(([127, 0, 0, 1], port))),
    };
    let pool_addr = spawn_sri(
        opts,
        dir,
        &pool,
        s.roles.pool.as_ref(),
        (params.listen, sri::pool_config(&params)?),
        RoleSpec::SriPool { params },
        roles,
    )
    .await?;
    let tap = format!("tap-{side}");
    let tap_spec = RoleSpec::tap(pool_addr, &keys);
    let tap_addr = spawn_listening(opts, dir, &tap, &tap_spec, roles).await?;
    Ok(PoolSite {
        keys,
        pool,
        tap,
        tap_addr,
        tap_spec,
        // The JDS runs in the pool's process, on the pool's address (its own in a
        // container, not loopback).
        jds: jds_port.map(|port| SocketAddr::new(pool_addr.ip(), port)),
    })
}

/// A side whose farm reaches the pool site with no node or job declaration of its own:
/// its miners, the tap in front of the pool (whose verdicts count), its link, and every
/// role it started (`roles`, after the network's node).
fn pool_side_roles(
    s: &Scenario,
    side: &Side,
    (miners, tap, link): (&str, &str, &str),
    roles: &[&str],
) -> SideRoles {
    SideRoles {
        config: side.config,
        miners: s.miners.count,
        miner_hashrate: Some(s.miner_hashrate()),
        miners_role: miners.into(),
        pool_role: tap.into(),
        backup_pool_role: None,
        link_role: link.into(),
        link_rtt_ms: side_rtt(s, side),
        farm_node_role: None,
        farm_node_hop_ms: None,
        farm_node_lag: None,
        feed_link_role: None,
        job_declaration_role: None,
        roles: std::iter::once(node_role(s))
            .chain(roles.iter().copied())
            .map(String::from)
            .collect(),
        pool_software: None,
        pool_policy: None,
        template_role: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which routes of a link each fault cuts: the pool its first, the JDS its own where
    /// the link has one, the whole link all of them (a backup pool's too).
    #[test]
    fn a_fault_cuts_its_targets_routes_and_a_link_fault_cuts_them_all() {
        let path =
            Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo and nextest"))
                .join("../../scenarios/outage.toml");
        let faults = r#"faults=[{target="pool", kind="drop", at="5s", lasts="5s"}, {target="jds", kind="stall", at="5s", lasts="5s"}, {target="link", kind="drop", at="20s", lasts="5s"}]"#;
        let s = Scenario::load(&path, &[faults.parse().unwrap()]).unwrap();
        let routes = |hazards: OnPath| -> Vec<(String, Vec<usize>)> {
            (hazards.faults.into_iter())
                .map(|f| (f.target, f.routes))
                .collect()
        };
        // A pool side with a backup: no JDS, so its fault is not this link's.
        assert_eq!(
            routes(on_path(&s, 2, None)),
            vec![("pool".into(), vec![0]), ("link".into(), vec![0, 1])]
        );
        // A side declaring jobs: pool, JDS.
        assert_eq!(
            routes(on_path(&s, 2, Some(1))),
            vec![
                ("pool".into(), vec![0]),
                ("jds".into(), vec![1]),
                ("link".into(), vec![0, 1])
            ]
        );
        // A farm node's feed goes with the WAN only.
        assert_eq!(routes(on_feed(&s, 2)), vec![("link".into(), vec![0, 1])]);
    }

    #[test]
    fn a_node_in_initial_block_download_or_on_another_chain_is_refused() {
        let real = ReachedNode {
            url: "http://127.0.0.1:8332".into(),
            rpc_user: "u".into(),
            rpc_password: "p".into(),
            zmq: Some("tcp://127.0.0.1:28332".into()),
            chain: Some("main".into()),
            ipc: None,
        };
        let info = |chain: &str, ibd| ChainInfo {
            chain: chain.into(),
            blocks: 800_000,
            headers: 870_000,
            initialblockdownload: ibd,
        };
        let syncing = node_problem(&info("main", true), &real).unwrap();
        assert!(syncing.contains("initial block download (800000 of 870000 blocks)"));
        let signet = node_problem(&info("signet", false), &real).unwrap();
        assert!(signet.contains("node.chain") && signet.contains("\"signet\""));
        assert_eq!(node_problem(&info("main", false), &real), None);
        let any_chain = ReachedNode {
            chain: None,
            ..real
        };
        assert_eq!(node_problem(&info("signet", false), &any_chain), None);
    }
}
