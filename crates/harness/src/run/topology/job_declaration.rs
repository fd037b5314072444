//! Configurations A and B: the farm declares its own jobs.

use super::*;

/// Where a job-declaring side's JDC takes its templates.
pub(super) enum FarmNode<'a> {
    /// A node of the farm's own, following the network's node across the link.
    Follower(&'a NetworkNode),
    /// The one real node's Mining IPC (through the IPC tap), which the pool's JDS uses too.
    Shared(sri::TemplateSource),
}

/// Configurations A and B, where the farm declares its own jobs:
/// A: SV1 miners -> SRI translator -> SRI JDC -> link -> tap -> SRI pool (+ JDS);
/// B: SV2 miners -> SRI JDC -> link -> tap -> SRI pool (+ JDS).
/// The JDC builds jobs from the farm's node (its own, which follows the network's node
/// across the same link; or, on a real node, that node) and declares them to the pool's
/// JDS through a farm-side tap (which sees each DeclareMiningJob round trip as the JDC
/// waits for it).
pub(super) async fn start_sv2_jd_side(
    opts: &RunOptions,
    dir: &Path,
    side: &Side,
    farm: FarmNode<'_>,
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let jds_port = free_local_port()?.port();
    let templates = match &farm {
        FarmNode::Follower(network) => network
            .ipc
            .clone()
            .context("a job-declaring side needs the node's IPC face")?,
        FarmNode::Shared(templates) => templates.clone(),
    };
    let PoolSite {
        keys: pool_keys,
        pool,
        tap,
        tap_addr,
        jds,
        ..
    } = spawn_pool_site(opts, dir, side, templates, Some(jds_port), roles).await?;
    let jds_listen = jds.context("the pool runs its JDS")?;

    // Mining and job declaration cross the side's link, where their bytes are counted.
    let (link, farm_side) = spawn_link_routes(
        opts,
        dir,
        &format!("link-{side}"),
        vec![
            route(tap_addr, wan(s, side)),
            route(jds_listen, wan(s, side)),
        ],
        on_path(s, 2, Some(1)),
        roles,
    )
    .await?;
    let [pool_via_link, jds_via_link] = farm_side[..] else {
        anyhow::bail!("{link} has two routes");
    };
    let (jdc_templates, farm_node) = match farm {
        FarmNode::Follower(network) => {
            let (templates, roles) = spawn_farm_node(opts, dir, side, network, roles).await?;
            (templates, Some(roles))
        }
        FarmNode::Shared(templates) => (templates, None),
    };

    let jd_tap = format!("jdtap-{side}");
    let jd_tap_spec = RoleSpec::tap(jds_via_link, &pool_keys);
    let jd_tap_addr = spawn_listening(opts, dir, &jd_tap, &jd_tap_spec, roles).await?;
    let jdc = format!("jdc-{side}");
    let upstream = JdcUpstream {
        templates: jdc_templates,
        pool: pool_via_link,
        pool_public: pool_keys.public,
        jds: jd_tap_addr,
    };
    let (jdc_addr, jdc_keys) = spawn_jdc(opts, dir, side, farm_port, upstream, roles).await?;

    let mut side_roles = vec![node_role(s).to_string(), pool, tap.clone(), link.clone()];
    side_roles.extend(
        farm_node
            .iter()
            .flat_map(|f| [f.feed_link.clone(), f.node.clone()]),
    );
    side_roles.extend([jd_tap.clone(), jdc]);
    let miners = if side.config == Config::Sv2B {
        tell(
            opts,
            format!(
                "{side}: SV2 miners connect to {jdc_addr} (the SRI JDC, farm site)\n  with key {}",
                jdc_keys.public
            ),
        );
        let jdc = (jdc_addr, jdc_keys.public);
        spawn_sv2_miners(opts, dir, side, jdc, None, roles).await?
    } else {
        let upstream = vec![(jdc_addr, jdc_keys.public)];
        let (translator, miners) =
            spawn_translated_miners(opts, dir, side, farm_port, upstream, roles).await?;
        side_roles.push(translator);
        miners
    };
    side_roles.push(miners.clone());
    Ok(SideRoles {
        config: side.config,
        miners: s.miners.count,
        miner_hashrate: Some(s.miner_hashrate()),
        miners_role: miners,
        pool_role: tap,
        backup_pool_role: None,
        link_role: link,
        link_rtt_ms: side_rtt(s, side),
        farm_node_hop_ms: farm_node.as_ref().map(|_| s.farm_node.lag().median_ms()),
        farm_node_lag: farm_node.as_ref().map(|_| s.farm_node.lag_in_words()),
        farm_node_role: farm_node.as_ref().map(|f| f.node.clone()),
        feed_link_role: farm_node.map(|f| f.feed_link),
        job_declaration_role: Some(jd_tap),
        roles: side_roles,
        pool_software: None,
        pool_policy: None,
        template_role: None,
    })
}

/// What a side's JDC connects to: its templates, the pool and the JDS (both across the
/// side's link).
struct JdcUpstream {
    templates: sri::TemplateSource,
    pool: SocketAddr,
    pool_public: Secp256k1PublicKey,
    jds: SocketAddr,
}

/// The side's JDC (`jdc-<side>`): where its miners or translator connect, and the key it
/// signs with.
async fn spawn_jdc(
    opts: &RunOptions,
    dir: &Path,
    side: &Side,
    farm_port: u16,
    upstream: JdcUpstream,
    roles: &mut Vec<RoleProcess>,
) -> Result<(SocketAddr, sv2_wire::AuthorityKeys)> {
    let s = &opts.scenario;
    let jdc_keys = sv2_wire::AuthorityKeys::generate();
    let jdc_params = sri::JdcParams {
        listen: if farm_port == 0 || side.config == Config::Sv2A {
            free_local_port()?
        } else {
            SocketAddr::from(([127, 0, 0, 1], farm_port))
        },
        authority_public: jdc_keys.public,
        authority_secret: jdc_keys.secret,
        templates: upstream.templates,
        pool: upstream.pool,
        jds: upstream.jds,
        pool_public: upstream.pool_public,
        user_identity: format!("stratum-bench-{side}"),
        solo_payout_script_hex: payout_script().to_hex_string(),
        signature: format!("stratum-bench {side} farm"),
        shares_per_minute: s.miners.shares_per_min,
        share_batch_size: s.sv2.share_batch_size,
    };
    let jdc_addr = spawn_sri(
        opts,
        dir,
        &format!("jdc-{side}"),
        s.roles.jdc.as_ref(),
        (jdc_params.listen, sri::jdc_config(&jdc_params)),
        RoleSpec::SriJdc { params: jdc_params },
        roles,
    )
    .await?;
    Ok((jdc_addr, jdc_keys))
}

/// The roles of a farm's own node: the node, and the link its feed from the network's
/// node crosses.
struct FarmNodeRoles {
    node: String,
    feed_link: String,
}

/// The farm's own node, following the network's node across a feed link of its own; its
/// Mining IPC is the JDC's template source.
async fn spawn_farm_node(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    network: &NetworkNode,
    roles: &mut Vec<RoleProcess>,
) -> Result<(sri::TemplateSource, FarmNodeRoles)> {
    let s = &opts.scenario;
    // The farm node's blocks (ZMQ) and submissions (RPC) cross the feed link without
    // delay, jitter or cap (the pool link's are not the nodes'): the farm node holds each
    // block for its own drawn lag (`farm_node.block_lag`), the link only counts the bytes.
    let p2p = link::LinkConfig::from_rtt(Duration::ZERO);
    // The emulation's own feed between the nodes (whole blocks, RPC submissions) crosses
    // a link of its own, so its bytes stay apart from what the farm's node would really
    // move (modelled by the node: transaction relay and compact blocks).
    let (feed_link, feed_side) = spawn_link_routes(
        opts,
        dir,
        &format!("feed-{side}"),
        vec![route(network.zmq, p2p), route(network.rpc, p2p)],
        on_feed(&opts.scenario, 2),
        roles,
    )
    .await?;
    let [zmq_via_link, rpc_via_link] = feed_side[..] else {
        anyhow::bail!("{feed_link} has two routes");
    };

    let farm_node = format!("node-{side}");
    let farm_ipc = ipc_dir(dir, &farm_node)?;
    spawn(
        opts,
        dir,
        &farm_node,
        &RoleSpec::Node {
            config: node::NodeConfig {
                follower: Some(node::Follower {
                    overlap: s.farm_node.mempool_overlap,
                    tx_delay: Duration::from_secs_f64(s.farm_node.tx_relay_ms / 1e3),
                    block_lag: s.farm_node.lag(),
                    // Each farm node its own range, by the side's place in the run.
                    template_ids_from: node::config::FOLLOWER_TEMPLATE_IDS
                        * (1 + s.sides.iter().position(|x| x == side).unwrap_or(0) as u64),
                }),
                ..network.config.clone()
            },
            rpc_user: RPC_USER.into(),
            rpc_password: network.password.clone(),
            tdp: None,
            ipc: Some(node::ipc::IpcOptions {
                data_dir: farm_ipc.clone(),
                interface: s.network.mining_ipc,
            }),
            peer: Some(node::peer::PeerOptions {
                rpc_url: format!("http://{rpc_via_link}"),
                rpc_user: RPC_USER.into(),
                rpc_password: network.password.clone(),
                zmq: format!("tcp://{zmq_via_link}"),
                start_mono_ns: network.start_mono_ns,
            }),
            ports: Default::default(),
        },
        roles,
    )
    .await?;

    Ok((
        ipc_source(s, farm_ipc, "regtest"),
        FarmNodeRoles {
            node: farm_node,
            feed_link,
        },
    ))
}

/// A route of a link to `upstream`, on any loopback port at the farm's end.
fn route(upstream: SocketAddr, config: link::LinkConfig) -> LinkRoute {
    LinkRoute {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        shared: false,
        upstream,
        config,
    }
}
