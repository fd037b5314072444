//! `stratum-bench bench pool`.

use anyhow::{Context, Result};
use clap::Args;
use model::duration::parse_duration;
use std::path::PathBuf;
use std::time::Duration;
use tools::bench::pool::{PoolBenchOptions, PoolTarget};

#[derive(Args)]
pub struct PoolArgs {
    /// `builtin` (our node and SV1 pool, each its own process), `sri` (the SRI pool on our
    /// node's Template Provider, loaded by SV2 miners, one extended channel each; a fresh
    /// pool per step, configured for the step's share rate) or the address of any SV1
    /// pool on this machine, for example 127.0.0.1:3333.
    #[arg(long, default_value = "builtin")]
    target: String,
    /// With `--target sri`: a `pool_sv2` binary to benchmark in place of the linked
    /// release (an SRI release's, `make releases`), given the same config. It is asked
    /// its version first; one whose config this build does not know is refused.
    #[arg(long, value_name = "PATH")]
    pool_command: Option<PathBuf>,
    /// Miner connections carrying the load.
    #[arg(long, default_value_t = 200)]
    miners: u32,
    /// Shares per second offered at the first step, all miners together.
    #[arg(long, default_value_t = 2000.0)]
    rate: f64,
    /// Each step offers this many times the previous one.
    #[arg(long, default_value_t = 2.0)]
    factor: f64,
    /// How long each step is measured.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    step: Duration,
    /// At most this many steps (every load is bounded in count and time).
    #[arg(long, default_value_t = 6)]
    max_steps: usize,
    /// The ramp stops once share response p99 passes this many milliseconds.
    #[arg(long, default_value_t = 5.0)]
    p99_bound_ms: f64,
    /// With an address target: the share difficulty that pool sets for new miners.
    #[arg(long)]
    share_difficulty: Option<f64>,
    /// Where pool-bench.json, report.md and report.html (with charts), and the roles' logs
    /// and events go.
    #[arg(long, default_value = "runs/pool-bench")]
    out: PathBuf,
    /// Keep the miner fleets that make the load off the CPUs of the roles under test:
    /// they run on the second half of this process's CPUs, everything else on the first
    /// (needs at least 2). Without it every process may use every CPU, so the load's own
    /// work shows in the numbers.
    #[arg(long)]
    isolate: bool,
}

pub async fn run(args: PoolArgs) -> Result<()> {
    anyhow::ensure!(
        args.factor > 1.0,
        "--factor must be above 1 for the load to grow"
    );
    anyhow::ensure!(
        args.rate > 0.0 && args.miners > 0,
        "--rate and --miners must be positive"
    );
    if args.pool_command.is_some() && args.target != "sri" {
        anyhow::bail!("--pool-command benchmarks an SRI pool: give --target sri");
    }
    let target = match args.target.as_str() {
        "builtin" => PoolTarget::Builtin,
        "sri" => PoolTarget::Sri(crate::targets::sri_pool_binary(
            args.pool_command.as_deref(),
        )?),
        addr => {
            let addr = addr.parse().with_context(|| {
                format!("--target: {addr:?} is not `builtin`, `sri` or host:port")
            })?;
            crate::targets::on_this_machine(addr, "--target")?;
            PoolTarget::Address(addr)
        }
    };
    tools::bench::pool::run(PoolBenchOptions {
        target,
        miners: args.miners,
        rate: args.rate,
        factor: args.factor,
        step: args.step,
        max_steps: args.max_steps,
        p99_bound_ms: args.p99_bound_ms,
        share_difficulty: args.share_difficulty,
        out: args.out.clone(),
        launcher: harness::process::Launcher::this_executable(args.isolate)?,
    })
    .await?;
    crate::report_cmd::bench_report(&args.out)
}
