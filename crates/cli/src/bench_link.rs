//! `stratum-bench bench link` (measured by `harness::bench::link`).

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
        harness::bench::link::measure(Duration::from_millis(args.rtt_ms), args.round_trips).await?;
    println!(
        "WAN relay at {} ms RTT, {} round trips of one small line each",
        args.rtt_ms, args.round_trips
    );
    print!(
        "{}",
        probe::stats::table(
            "(ms)",
            &[
                ("loopback round trip, no relay", bench.direct_ms),
                ("relayed round trip minus emulated RTT", bench.added_ms),
                ("lateness past due, farm to pool", bench.up_lateness_ms),
                ("lateness past due, pool to farm", bench.down_lateness_ms),
            ]
        )
    );
    Ok(())
}
