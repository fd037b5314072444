//! `stratum-bench bench fanout`.

use analysis::bench::FanoutMode;
use anyhow::{bail, Context, Result};
use clap::Args;
use harness::bench_fanout::FanoutOptions;
use std::path::PathBuf;

#[derive(Args)]
pub struct FanoutArgs {
    /// Miner counts to measure, comma separated (shared/seeds/001 used 225).
    #[arg(long, value_delimiter = ',', default_value = "225,1000")]
    miners: Vec<u32>,
    /// The sender: `sv1-pool` (the built-in SV1 pool). `translator` and `sv2-pool` come
    /// with the SV2 roles.
    #[arg(long, default_value = "sv1-pool")]
    via: String,
    /// How jobs travel: `tcp` (one write per miner's connection) or `udp-broadcast` (one
    /// datagram to the loopback broadcast address every miner listens on, TCP as the
    /// fallback). `sv2-group` is not built yet.
    #[arg(long, default_value = "tcp")]
    mode: FanoutMode,
    /// New blocks (fan-outs) measured per miner count.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Where fanout.json, report.md and report.html (with charts), and the roles' logs and
    /// events go.
    #[arg(long, default_value = "runs/fanout")]
    out: PathBuf,
}

pub async fn run(args: FanoutArgs) -> Result<()> {
    if args.via != "sv1-pool" {
        bail!("--via {}: this build sends through `sv1-pool` only (the SV2 senders come with the SRI roles)", args.via);
    }
    anyhow::ensure!(
        args.rounds > 0 && !args.miners.is_empty(),
        "--rounds and --miners must not be empty"
    );
    harness::bench_fanout::run(FanoutOptions {
        miners: args.miners,
        mode: args.mode,
        rounds: args.rounds,
        out: args.out.clone(),
        exe: std::env::current_exe().context("cannot find the stratum-bench executable")?,
    })
    .await?;
    crate::report_cmd::bench_report(&args.out)
}
