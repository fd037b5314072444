//! `stratum-bench bench link` (measured by `tools::bench::link`).

use anyhow::Result;
use clap::Args;
use std::time::Duration;

#[derive(Args)]
pub struct LinkArgs {
    /// Round-trip time the relay emulates, in milliseconds.
    #[arg(long, default_value_t = 100)]
    rtt_ms: u64,
    /// Request/response exchanges measured.
    #[arg(long, default_value_t = 500)]
    round_trips: usize,
}

pub async fn run(args: LinkArgs) -> Result<()> {
    let bench =
        tools::bench::link::measure(Duration::from_millis(args.rtt_ms), args.round_trips).await?;
    println!(
        "WAN relay at {} ms RTT, {} round trips of one small line each",
        args.rtt_ms, args.round_trips
    );
    print!("{}", bench.table());
    Ok(())
}
