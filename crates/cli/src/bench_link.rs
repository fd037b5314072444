//! `stratum-bench bench link`: what the WAN relay itself adds to a round trip.

use anyhow::Result;
use clap::Args;
use link::{echo_peer, round_trips, LinkConfig, Relay};
use probe::Dist;
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
    let peer = echo_peer("127.0.0.1:0".parse()?).await?;
    let direct = round_trips(peer, args.round_trips).await?;
    let rtt = Duration::from_millis(args.rtt_ms);
    let relay = Relay::start("127.0.0.1:0".parse()?, peer, LinkConfig::from_rtt(rtt)).await?;
    let relayed = round_trips(relay.listen_addr, args.round_trips).await?;
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let added: Vec<f64> = relayed.iter().map(|d| ms(d) - ms(&rtt)).collect();
    let up = relay.stats.up.lateness_ns.dist(1e6);
    let down = relay.stats.down.lateness_ns.dist(1e6);
    relay.stop();

    println!(
        "WAN relay at {} ms RTT, {} round trips of one small line each",
        args.rtt_ms, args.round_trips
    );
    let direct: Vec<f64> = direct.iter().map(ms).collect();
    print!(
        "{}",
        probe::stats::table(
            "(ms)",
            &[
                ("loopback round trip, no relay", Dist::of(&direct)),
                ("relayed round trip minus emulated RTT", Dist::of(&added)),
                ("lateness past due, farm to pool", up),
                ("lateness past due, pool to farm", down),
            ]
        )
    );
    Ok(())
}
