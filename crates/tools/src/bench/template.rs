//! `bench template`: how long a node takes to hand out a template, fresh and cached,
//! full (getblocktemplate) and light (getblocktemplatelight), over Mining IPC
//! (createNewBlock), and as the SV2 Template Provider after a new block (NewTemplate plus
//! SetNewPrevHash); our node's, or a real Bitcoin Core's the bench starts and fills.

use analysis::bench::{TemplateBenchReport, TemplateCase, TemplateMempool};
use anyhow::{ensure, Context, Result};
use bitcoind_rpc::RpcClient;
use node::{
    Difficulty, MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions, RpcAuth,
};
use probe::{Dist, Recorder};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub struct TemplateOptions {
    /// `builtin`, or the URL of a bitcoind-compatible node (checked by the caller to be on
    /// this machine).
    pub node: String,
    pub rpc_user: String,
    pub rpc_password: String,
    /// Mempool sizes of the built-in node, each measured on a fresh node (a node given by
    /// URL has the mempool it has).
    pub sizes: Vec<usize>,
    /// Calls measured for each case.
    pub iterations: usize,
    /// Seed of the generated mempool.
    pub seed: u64,
    /// A Bitcoin Core `bitcoin-node` to start and measure instead of our node, its data
    /// directory (and log) kept in `core_dir`.
    pub bitcoin_node: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// One case's calls, as the report shows them.
fn case(name: String, reply_bytes: Option<usize>, samples_ms: Vec<f64>) -> TemplateCase {
    TemplateCase {
        name,
        reply_bytes,
        latency_ms: Dist::of(&samples_ms),
        samples_ms,
    }
}

/// One template call, timed to the last byte of the reply: parsing it is the client's
/// cost, not the node's, so replies are checked once, outside the timed calls.
struct Caller<'a> {
    rpc: &'a RpcClient,
}

impl Caller<'_> {
    async fn call(&self, method: &str) -> Result<String> {
        let request =
            json!({"id": 1, "method": method, "params": [{"rules": ["segwit"]}]}).to_string();
        let (status, body) = self.rpc.post(request).await?;
        ensure!(
            status == 200,
            "{method} failed (HTTP {status}): {}",
            body.chars().take(200).collect::<String>()
        );
        Ok(body)
    }

    async fn timed(&self, method: &str) -> Result<f64> {
        let t = Instant::now();
        self.call(method).await?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }
}

const VARIANTS: [&str; 2] = ["getblocktemplate", "getblocktemplatelight"];

/// Measures every case, on fresh built-in nodes (one per mempool size) or on the node
/// given by URL.
pub async fn run(opts: &TemplateOptions) -> Result<TemplateBenchReport> {
    ensure!(opts.iterations > 0, "--iterations must be at least 1");
    if opts.node != "builtin" {
        return run_against(opts).await;
    }
    let mut sizes = opts.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let mut mempools = Vec::with_capacity(sizes.len());
    let mut name = "builtin".to_string();
    for size in sizes {
        let measured = match &opts.bitcoin_node {
            Some((program, dir)) => {
                let (version, measured) = measure_core(opts, program, dir, size).await?;
                name = format!("Bitcoin Core {version} ({})", program.display());
                measured
            }
            None => measure_builtin(opts, size).await,
        };
        mempools.push(measured.with_context(|| format!("with a mempool of {size} transactions"))?);
    }
    Ok(TemplateBenchReport {
        node: name,
        mempools,
    })
}

/// What makes the node's next template a fresh one: a new transaction in its mempool.
trait Freshen {
    async fn freshen(&mut self) -> Result<()>;
}

/// Our node: a generated transaction, and no cache (`template_refresh` zero).
impl Freshen for &NodeHandle {
    async fn freshen(&mut self) -> Result<()> {
        self.state().add_generated_tx();
        Ok(())
    }
}

/// Bitcoin Core: a transaction of ours, and its clock moved past the 5 s for which
/// getblocktemplate serves a cached template on the same tip (mock time; regtest).
struct CoreFresh<'a> {
    core: &'a core_node::CoreNode,
    funds: core_node::funds::Funds,
    mock_time: u64,
}

impl Freshen for CoreFresh<'_> {
    async fn freshen(&mut self) -> Result<()> {
        let tx = (self.funds.spend_one()).context("no coins of ours left to spend")?;
        core_node::funds::send(self.core, &[tx]).await?;
        self.mock_time += 6;
        self.core
            .call::<Value>("setmocktime", json!([self.mock_time]))
            .await?;
        Ok(())
    }
}

/// getblocktemplate and getblocktemplatelight (where served), each fresh (after
/// [`Freshen`]) and cached (called again).
async fn rpc_cases(
    caller: &Caller<'_>,
    node: &mut impl Freshen,
    iterations: usize,
) -> Result<Vec<TemplateCase>> {
    let mut cases = Vec::new();
    for method in VARIANTS {
        let reply = match caller.call(method).await {
            Ok(reply) => reply,
            // getblocktemplatelight is BCHN's and ours, not Core's ("Method not found").
            Err(e) if e.to_string().contains("-32601") => {
                tracing::info!(method, "not served by this node");
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut fresh = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            node.freshen().await?;
            fresh.push(caller.timed(method).await?);
        }
        let mut cached = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            cached.push(caller.timed(method).await?);
        }
        cases.push(case(format!("{method} fresh"), Some(reply.len()), fresh));
        cases.push(case(format!("{method} cached"), Some(reply.len()), cached));
    }
    Ok(cases)
}

/// Mining IPC createNewBlock after a new transaction (Bitcoin Core builds a template on
/// every call; so does our node), to the template's capability in the client's hands.
async fn ipc_fresh_case(
    socket: &std::path::Path,
    node: &mut impl Freshen,
    iterations: usize,
) -> Result<TemplateCase> {
    on_ipc(socket, async |mining| {
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            node.freshen().await?;
            let t = Instant::now();
            mining.new_template().await?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(case("IPC createNewBlock fresh".into(), None, times))
    })
    .await
}

/// `body` with a Mining IPC client of the node at `socket`, on a local set of its own
/// (capnp-rpc is single-threaded).
async fn on_ipc<T>(
    socket: &std::path::Path,
    body: impl AsyncFnOnce(&node::ipc::MiningClient) -> Result<T>,
) -> Result<T> {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let init = node::ipc::connect(socket).await?;
            let mining = node::ipc::mining_client(&init).await?;
            body(&mining).await
        })
        .await
}

/// Mining IPC waitNext after a block: from a block of ours reaching the node
/// (submitblock) to the client waiting on the old tip's template holding the new tip's,
/// what C's and D's pools wait for after a block. Each block takes the mempool's best
/// 4 MB, so this runs last; the median left over is in the case's name.
async fn ipc_after_block_case(
    socket: &std::path::Path,
    rpc: &RpcClient,
    node: &mut impl Freshen,
    iterations: usize,
) -> Result<TemplateCase> {
    on_ipc(socket, async |mining| {
        let mut times = Vec::with_capacity(iterations);
        let mut left = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            node.freshen().await?;
            let template = mining.new_template().await?;
            let block = mining.mine(&template).await?;
            // Sent now: the node holds the wait before it hears of the block.
            let next = mining.wait_next(&template, 10_000.0, node::ipc::MAX_MONEY);
            let t = Instant::now();
            let hex = bitcoin::consensus::encode::serialize_hex(&block);
            let verdict: Value = rpc.call("submitblock", json!([hex])).await?;
            ensure!(verdict.is_null(), "the node refused our block: {verdict}");
            next.await?
                .context("waitNext ended without the new tip's template")?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            let pool: Value = rpc.call("getmempoolinfo", json!([])).await?;
            left.push(pool["size"].as_u64().unwrap_or_default());
        }
        left.sort_unstable();
        let left = left.get(left.len() / 2).copied().unwrap_or_default();
        let name = format!("IPC waitNext after a block ({left} txs left)");
        Ok(case(name, None, times))
    })
    .await
}

/// Every case on a Bitcoin Core started for it on regtest, its mempool filled with
/// `size` transactions of ours: getblocktemplate fresh and cached, IPC createNewBlock.
async fn measure_core(
    opts: &TemplateOptions,
    program: &std::path::Path,
    dir: &std::path::Path,
    size: usize,
) -> Result<(String, Result<TemplateMempool>)> {
    let datadir = dir.join(format!("mempool-{size}"));
    let _ = std::fs::remove_dir_all(&datadir);
    let core = core_node::CoreNode::start(
        program,
        &datadir,
        core_node::Chain::Regtest,
        &core_node::fresh_password(),
    )
    .await?;
    let version = core.version.clone();
    let measured = async {
        // Coins for the mempool and for every fresh call of every case (three of them, and
        // the first template's).
        let mut funds =
            core_node::funds::Funds::mine_and_split(&core, size + 4 * opts.iterations, opts.seed)
                .await?;
        let fill: Vec<_> = (0..size).filter_map(|_| funds.spend_one()).collect();
        core_node::funds::send(&core, &fill).await?;
        let info: Value = core.call("getblockchaininfo", json!([])).await?;
        let mock_time = info["time"].as_u64().unwrap_or_default().max(now_unix());
        let mut node = CoreFresh {
            core: &core,
            funds,
            mock_time,
        };
        node.freshen().await?;
        let caller = Caller { rpc: &core.rpc };
        let first: Value = serde_json::from_str(&caller.call("getblocktemplate").await?)?;
        let template_txs = first["result"]["transactions"].as_array().map(Vec::len);
        let mut cases = rpc_cases(&caller, &mut node, opts.iterations).await?;
        let socket = &core.ipc_socket;
        cases.push(ipc_fresh_case(socket, &mut node, opts.iterations).await?);
        let after_block = ipc_after_block_case(socket, &core.rpc, &mut node, opts.iterations);
        cases.push(after_block.await?);
        Ok(TemplateMempool {
            mempool_txs: Some(size),
            template_txs,
            cases,
        })
    }
    .await;
    // What was measured stands even if Core's shutdown does not go as asked.
    if let Err(e) = core.stop().await {
        tracing::warn!(error = %e, "stopping Bitcoin Core");
    }
    Ok((version, measured))
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Every case on a fresh built-in node whose mempool holds `size` transactions.
async fn measure_builtin(opts: &TemplateOptions, size: usize) -> Result<TemplateMempool> {
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = size;
    mempool.tx_rate = 0.0; // the mempool changes only when the benchmark says so
    mempool.max_txs = size.max(1) * 2;
    let tp_keys = sv2_wire::AuthorityKeys::generate();
    let ipc_dir = std::env::temp_dir().join(format!("sb-bench-ipc-{}-{size}", std::process::id()));
    let node = NodeHandle::start(NodeOptions {
        config: NodeConfig {
            seed: opts.seed,
            block_interval: Duration::from_secs(3600 * 24 * 365),
            difficulty: Difficulty::RegtestEasy,
            mempool,
            template_refresh: Duration::ZERO,
            ..NodeConfig::default()
        },
        rpc_bind: "127.0.0.1:0".parse()?,
        auth: RpcAuth::UserPassword {
            user: "bench".into(),
            password: "bench".into(),
        },
        zmq_bind: None,
        zmq_hashblock_bind: None,
        recorder: Recorder::disabled(),
        value_sample_interval: Duration::from_secs(3600),
        tdp: Some(node::tdp::TdpOptions {
            bind: "127.0.0.1:0".parse()?,
            keys: tp_keys.clone(),
            // Only new blocks make templates here, so each one is measured alone.
            interval: Duration::from_secs(3600 * 24 * 365),
            fee_threshold_sats: 0,
        }),
        ipc: Some(node::ipc::IpcOptions {
            data_dir: ipc_dir.clone(),
            interface: node::ipc::MiningInterface::V31,
        }),
        peer: None,
    })
    .await?;
    let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "bench", "bench");
    let caller = Caller { rpc: &rpc };
    let first: Value = serde_json::from_str(&caller.call("getblocktemplate").await?)?;
    let tx_count = first["result"]["transactions"]
        .as_array()
        .map_or(0, Vec::len);

    let mut cases = rpc_cases(&caller, &mut &node, opts.iterations).await?;
    let socket = (node.ipc.as_ref())
        .map(|i| i.socket.clone())
        .context("the IPC face")?;
    cases.push(ipc_fresh_case(&socket, &mut &node, opts.iterations).await?);
    // Assembly alone, without HTTP and JSON, for reference.
    let mut build_only = Vec::with_capacity(opts.iterations);
    for _ in 0..opts.iterations {
        let mut state = node.state();
        state.add_generated_tx();
        let t = Instant::now();
        let _ = state.build_template();
        build_only.push(t.elapsed().as_secs_f64() * 1e3);
    }
    cases.push(case(
        "fresh assembly only (in process)".into(),
        None,
        build_only,
    ));
    let (tdp, left) = tdp_after_new_block(&node, &tp_keys, size, opts.iterations).await?;
    cases.push(case(
        format!("TDP NewTemplate + SetNewPrevHash after a block ({left} txs left)"),
        None,
        tdp,
    ));
    let mut fresh = &node;
    let after_block = ipc_after_block_case(&socket, &rpc, &mut fresh, opts.iterations);
    cases.push(after_block.await?);
    node.shutdown().await?;
    let _ = std::fs::remove_dir_all(&ipc_dir);
    Ok(TemplateMempool {
        mempool_txs: Some(size),
        template_txs: Some(tx_count),
        cases,
    })
}

/// From the node announcing a new block to a TDP client holding the future template and
/// the SetNewPrevHash that activates it. The mempool is refilled to `size` before
/// each block, which then takes its best transactions: the template is built from what
/// is left, the median of which is returned beside the times.
async fn tdp_after_new_block(
    node: &NodeHandle,
    keys: &sv2_wire::AuthorityKeys,
    size: usize,
    iterations: usize,
) -> Result<(Vec<f64>, usize)> {
    use node::tdp_client::Protocol;
    let addr = node.tdp_addr.context("the node serves TDP")?;
    let mut client = node::tdp_client::TdpClient::connect(addr, keys.public).await?;
    client
        .setup(Protocol::TemplateDistributionProtocol)
        .await
        .map_err(|e| anyhow::anyhow!("the TP refused the connection: {e}"))?;
    client.constraints(100).await?;
    client.new_tip().await?;
    let mut times = Vec::with_capacity(iterations);
    let mut left = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        {
            let mut state = node.state();
            while state.mempool().len() < size {
                state.add_generated_tx();
            }
        }
        let told = node.mine_block();
        client.new_tip().await?;
        times.push(probe::mono_ns().saturating_sub(told) as f64 / 1e6);
        left.push(node.state().mempool().len());
    }
    left.sort_unstable();
    Ok((times, left[left.len() / 2]))
}

/// Repeated calls to a node given by URL, each variant it serves.
async fn run_against(opts: &TemplateOptions) -> Result<TemplateBenchReport> {
    let rpc = RpcClient::new(&opts.node, &opts.rpc_user, &opts.rpc_password);
    let _: Value =
        tokio::time::timeout(Duration::from_secs(5), rpc.call("getblockcount", json!([])))
            .await
            .map_err(|_| anyhow::anyhow!("{} did not answer within 5 s", opts.node))?
            .with_context(|| format!("{} does not answer RPC", opts.node))?;
    let caller = Caller { rpc: &rpc };
    let mut cases = Vec::new();
    for method in VARIANTS {
        let Ok(body) = caller.call(method).await else {
            eprintln!("{method}: not served by {}", opts.node);
            continue;
        };
        let mut times = Vec::with_capacity(opts.iterations);
        for _ in 0..opts.iterations {
            times.push(caller.timed(method).await?);
        }
        cases.push(case(
            format!("{method} as served (fresh or cached as the node decides)"),
            Some(body.len()),
            times,
        ));
    }
    Ok(TemplateBenchReport {
        node: opts.node.clone(),
        mempools: vec![TemplateMempool {
            mempool_txs: None,
            template_txs: None,
            cases,
        }],
    })
}
