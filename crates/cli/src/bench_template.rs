//! `stratum-bench bench template`: how long getblocktemplate takes, fresh and cached.

use anyhow::{ensure, Result};
use bitcoind_rpc::RpcClient;
use clap::Args;
use node::{
    Difficulty, MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions, RpcAuth,
};
use probe::{Dist, Recorder};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct TemplateArgs {
    /// Transactions in the mempool (shared/seeds/003 used 6,000).
    #[arg(long, default_value_t = 6000)]
    mempool: usize,
    /// Calls measured for each case.
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// Seed of the generated mempool.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub async fn run(args: TemplateArgs) -> Result<()> {
    ensure!(args.iterations > 0, "--iterations must be at least 1");
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = args.mempool;
    mempool.tx_rate = 0.0; // the mempool changes only when the benchmark says so
    mempool.max_txs = args.mempool.max(1) * 2;
    let config = NodeConfig {
        seed: args.seed,
        block_interval: Duration::from_secs(3600 * 24 * 365),
        difficulty: Difficulty::RegtestEasy,
        mempool,
        template_refresh: Duration::ZERO,
        ..NodeConfig::default()
    };
    let node = NodeHandle::start(NodeOptions {
        config,
        rpc_bind: "127.0.0.1:0".parse()?,
        auth: RpcAuth::UserPassword {
            user: "bench".into(),
            password: "bench".into(),
        },
        zmq_bind: None,
        recorder: Recorder::disabled(),
        value_sample_interval: Duration::from_secs(3600),
    })
    .await?;
    let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "bench", "bench");
    // Timed to the last byte of the reply; parsing it is the client's cost, not the
    // node's, so it is checked once, outside the timed calls.
    let request = json!({"id": 1, "method": "getblocktemplate", "params": [{"rules": ["segwit"]}]})
        .to_string();
    let call = || async {
        let (status, body) = rpc.post(request.clone()).await?;
        ensure!(
            status == 200,
            "getblocktemplate failed (HTTP {status}): {body}"
        );
        Ok(body)
    };
    let first_body = call().await?;
    let first: Value = serde_json::from_str(&first_body)?;
    let tx_count = first["result"]["transactions"]
        .as_array()
        .map_or(0, Vec::len);
    let json_bytes = first_body.len();

    let mut fresh = Vec::with_capacity(args.iterations);
    let mut build_only = Vec::with_capacity(args.iterations);
    for _ in 0..args.iterations {
        node.state().add_generated_tx();
        let t = Instant::now();
        call().await?;
        fresh.push(t.elapsed().as_secs_f64() * 1e3);
        // Assembly alone, without HTTP and JSON, for reference.
        let mut state = node.state();
        state.add_generated_tx();
        let t = Instant::now();
        let _ = state.template();
        build_only.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut cached = Vec::with_capacity(args.iterations);
    for _ in 0..args.iterations {
        let t = Instant::now();
        call().await?;
        cached.push(t.elapsed().as_secs_f64() * 1e3);
    }
    node.shutdown().await?;

    println!(
        "getblocktemplate, {} txs in mempool, {} in the template, {:.2} MB of JSON, {} calls each",
        args.mempool,
        tx_count,
        json_bytes as f64 / 1e6,
        args.iterations
    );
    print!(
        "{}",
        probe::stats::table(
            "case (ms)",
            &[
                ("fresh template, over RPC", Dist::of(&fresh)),
                ("cached template, over RPC", Dist::of(&cached)),
                ("fresh assembly only (in process)", Dist::of(&build_only)),
            ]
        )
    );
    println!("reference (shared/seeds/003, BCHN getblocktemplatelight, 6000 txs): 62.0 ms fresh, 0.9 ms cached; full getblocktemplate 164 ms fresh, 117 ms cached");
    Ok(())
}
