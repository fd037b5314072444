//! `bench template`: how long a node takes to hand out a template, fresh and cached,
//! full (getblocktemplate) and light (getblocktemplatelight), and as the SV2 Template
//! Provider after a new block (NewTemplate plus SetNewPrevHash).

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
    for size in sizes {
        mempools.push(
            measure_builtin(opts, size)
                .await
                .with_context(|| format!("with a mempool of {size} transactions"))?,
        );
    }
    Ok(TemplateBenchReport {
        node: "builtin".into(),
        mempools,
    })
}

/// Every case on a fresh built-in node whose mempool holds `size` transactions.
async fn measure_builtin(opts: &TemplateOptions, size: usize) -> Result<TemplateMempool> {
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = size;
    mempool.tx_rate = 0.0; // the mempool changes only when the benchmark says so
    mempool.max_txs = size.max(1) * 2;
    let tp_keys = sv2_wire::AuthorityKeys::generate();
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
        ipc: None,
        peer: None,
    })
    .await?;
    let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "bench", "bench");
    let caller = Caller { rpc: &rpc };
    let first: Value = serde_json::from_str(&caller.call("getblocktemplate").await?)?;
    let tx_count = first["result"]["transactions"]
        .as_array()
        .map_or(0, Vec::len);

    let mut cases = Vec::new();
    for method in VARIANTS {
        let bytes = caller.call(method).await?.len();
        let mut fresh = Vec::with_capacity(opts.iterations);
        for _ in 0..opts.iterations {
            // A new transaction makes the next call build a fresh template.
            node.state().add_generated_tx();
            fresh.push(caller.timed(method).await?);
        }
        let mut cached = Vec::with_capacity(opts.iterations);
        for _ in 0..opts.iterations {
            cached.push(caller.timed(method).await?);
        }
        cases.push(case(format!("{method} fresh"), Some(bytes), fresh));
        cases.push(case(format!("{method} cached"), Some(bytes), cached));
    }
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
    node.shutdown().await?;
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
