//! `bench link`: what the userspace WAN relay itself adds to a round trip.

use anyhow::Result;
use link::{echo_peer, round_trips, LinkConfig, Relay};
use probe::Dist;
use std::time::Duration;

/// Round trips of one small line each, direct and through the relay.
pub struct LinkBench {
    /// Loopback round trips without the relay.
    pub direct_ms: Dist,
    /// Relayed round trips less the RTT the relay emulates.
    pub added_ms: Dist,
    /// The relay's lateness past each chunk's due time, farm to pool and back.
    pub up_lateness_ms: Dist,
    pub down_lateness_ms: Dist,
}

/// `count` round trips to an echo peer on loopback, then as many through a relay
/// emulating `rtt`.
pub async fn measure(rtt: Duration, count: usize) -> Result<LinkBench> {
    let peer = echo_peer("127.0.0.1:0".parse()?).await?;
    let direct = round_trips(peer, count).await?;
    let relay = Relay::start("127.0.0.1:0".parse()?, peer, LinkConfig::from_rtt(rtt)).await?;
    let relayed = round_trips(relay.listen_addr, count).await?;
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let added: Vec<f64> = relayed.iter().map(|d| ms(d) - ms(&rtt)).collect();
    let bench = LinkBench {
        direct_ms: Dist::of(&direct.iter().map(ms).collect::<Vec<_>>()),
        added_ms: Dist::of(&added),
        up_lateness_ms: relay.stats.up.lateness_ns.dist(1e6),
        down_lateness_ms: relay.stats.down.lateness_ns.dist(1e6),
    };
    relay.stop();
    Ok(bench)
}

impl LinkBench {
    /// The four distributions as a terminal table, in ms.
    pub fn table(&self) -> String {
        probe::stats::table(
            "(ms)",
            &[
                ("loopback round trip, no relay", self.direct_ms.clone()),
                (
                    "relayed round trip minus emulated RTT",
                    self.added_ms.clone(),
                ),
                (
                    "lateness past due, farm to pool",
                    self.up_lateness_ms.clone(),
                ),
                (
                    "lateness past due, pool to farm",
                    self.down_lateness_ms.clone(),
                ),
            ],
        )
    }
}
