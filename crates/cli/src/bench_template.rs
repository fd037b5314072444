//! `stratum-bench bench template` (measured by `tools::bench::template`).

use analysis::bench::TEMPLATE_FILE;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use tools::bench::template::TemplateOptions;

#[derive(Args)]
pub struct TemplateArgs {
    /// `builtin` (our node, with a mempool of --mempool transactions) or the URL of any
    /// bitcoind-compatible node on this machine, for example http://127.0.0.1:18443 (its
    /// mempool as it is; a fresh template cannot be forced there, so only repeated calls
    /// are measured).
    #[arg(long, default_value = "builtin")]
    node: String,
    /// A Bitcoin Core `bitcoin-node` (v31 or later, built with IPC) to start on a private
    /// regtest chain and measure as our node is measured: its mempool filled with --mempool
    /// transactions the bench signs (Core needs no wallet), getblocktemplate fresh (after a
    /// new transaction, its clock mocked past the 5 s it caches a template) and cached,
    /// and Mining IPC createNewBlock. Its data directory and log go in --out.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["node", "rpc_user", "rpc_password"])]
    bitcoin_node: Option<PathBuf>,
    /// RPC user and password of a node given by URL.
    #[arg(long, default_value = "")]
    rpc_user: String,
    #[arg(long, default_value = "")]
    rpc_password: String,
    /// Transactions in the built-in node's mempool (BCHN's getblocktemplatelight notes used 6,000).
    #[arg(long, default_value_t = 6000)]
    mempool: usize,
    /// Several mempool sizes, each measured on a fresh built-in node, to see how latency
    /// grows with the mempool (for example 1000,6000,20000); replaces --mempool.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Calls measured for each case.
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// Seed of the generated mempool.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where template-bench.json, report.md and report.html (with charts) go.
    #[arg(long, default_value = "runs/template-bench")]
    out: PathBuf,
}

/// Measures, writes template-bench.json and its report into `--out`, and prints the report.
pub async fn run(args: TemplateArgs) -> Result<()> {
    if args.node != "builtin" {
        anyhow::ensure!(
            args.sizes.is_empty(),
            "--sizes needs the built-in node: the mempool of {} is as it is",
            args.node
        );
        crate::targets::url_on_this_machine(&args.node, "--node")?;
    }
    let report = tools::bench::template::run(&TemplateOptions {
        node: args.node,
        rpc_user: args.rpc_user,
        rpc_password: args.rpc_password,
        sizes: if args.sizes.is_empty() {
            vec![args.mempool]
        } else {
            args.sizes
        },
        iterations: args.iterations,
        seed: args.seed,
        bitcoin_node: (args.bitcoin_node).map(|program| (program, args.out.join("bitcoin-node"))),
    })
    .await?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    std::fs::write(
        args.out.join(TEMPLATE_FILE),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    crate::report_cmd::bench_report(&args.out)
}
