//! Bytes across a side's WAN link, per direction, from the link role's cumulative
//! counters (sampled every second), and the farm node's modelled transaction relay.
//!
//! Rules: the rate in the window is the counters' growth between the last sample at or
//! before each end, over the time between those samples. A link that recorded nothing
//! has no bandwidth (missing, not zero). A farm node's peer traffic is modelled as a real
//! node moves it: transaction relay, and blocks as BIP152 compact blocks; both are added
//! to the farm's bytes and kept apart as well. The emulation's own node-to-node feed
//! (whole blocks over ZMQ, submissions over RPC) crosses a link of its own, shown apart
//! and counted in neither site's bandwidth, so no byte is counted twice.

use crate::manifest::Window;
use probe::{Event, Record};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    pub farm: Direction,
    pub pool: Direction,
    /// Part of `farm.rx` that is the farm node's transaction relay, modelled rather than
    /// carried (configurations A, B; zero elsewhere).
    #[serde(default)]
    pub farm_tx_relay_modelled: f64,
    /// Part of `farm` that is the farm node's blocks as compact blocks, modelled (A, B).
    #[serde(default)]
    pub farm_block_relay_modelled: Direction,
    /// The emulation's own feed between the farm's node and the network's, from the farm
    /// (whole blocks; in no total above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulation_feed: Option<Direction>,
}

/// A farm node's modelled and emulated peer traffic (configurations A, B).
#[derive(Debug, Default)]
pub struct FarmNodeTraffic {
    pub tx_relay: Counters,
    pub block_relay: Counters,
    /// The emulation's node-to-node link.
    pub feed: Counters,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Direction {
    pub tx: f64,
    pub rx: f64,
}

/// Cumulative byte counters: (time, up bytes, down bytes), in time order.
pub type Counters = Vec<(u64, u64, u64)>;

/// A link role's cumulative byte counters. A link run as shards (`model::shard`) counts
/// each shard's connections in that shard, so theirs are summed: at each time any shard
/// counted, every shard's last count at or before it (a shard that stopped keeps its
/// last).
pub fn link_counters<'a>(
    events: impl IntoIterator<Item = &'a Record>,
    link_role: &str,
) -> Counters {
    let mut shards: BTreeMap<&str, Counters> = BTreeMap::new();
    for r in events {
        if let Event::LinkBytes {
            up_bytes,
            down_bytes,
        } = r.event
        {
            if model::shard::is_of(&r.role, link_role) {
                let shard = shards.entry(r.role.as_str()).or_default();
                shard.push((r.t_ns, up_bytes, down_bytes));
            }
        }
    }
    for c in shards.values_mut() {
        c.sort_by_key(|x| x.0);
    }
    let times: std::collections::BTreeSet<u64> = shards.values().flatten().map(|c| c.0).collect();
    (times.into_iter())
        .map(|t| {
            let (up, down) = (shards.values())
                .filter_map(|c| c.get(c.partition_point(|c| c.0 <= t).checked_sub(1)?))
                .fold((0, 0), |(up, down), c| (up + c.1, down + c.2));
            (t, up, down)
        })
        .collect()
}

/// A farm node's modelled transaction relay as link counters (all of it received).
pub fn tx_relay_counters<'a>(
    events: impl IntoIterator<Item = &'a Record>,
    farm_node: &str,
) -> Counters {
    counters(events, farm_node, |e| match e {
        Event::TxRelayModelled { bytes } => Some((0, *bytes)),
        _ => None,
    })
}

/// A farm node's modelled compact blocks as link counters (up: sent, down: received).
pub fn block_relay_counters<'a>(
    events: impl IntoIterator<Item = &'a Record>,
    farm_node: &str,
) -> Counters {
    counters(events, farm_node, |e| match e {
        Event::BlockRelayModelled { received, sent } => Some((*sent, *received)),
        _ => None,
    })
}

fn counters<'a>(
    events: impl IntoIterator<Item = &'a Record>,
    role: &str,
    pick: impl Fn(&Event) -> Option<(u64, u64)>,
) -> Counters {
    let mut c: Counters = events
        .into_iter()
        .filter(|r| r.role == role)
        .filter_map(|r| pick(&r.event).map(|(up, down)| (r.t_ns, up, down)))
        .collect();
    c.sort_by_key(|x| x.0);
    c
}

/// Bytes per second between successive counters: (time, up, down).
pub fn link_rates(counters: &[(u64, u64, u64)]) -> Vec<(u64, f64, f64)> {
    counters
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| {
            let secs = (w[1].0 - w[0].0) as f64 / 1e9;
            (
                w[1].0,
                w[1].1.saturating_sub(w[0].1) as f64 / secs,
                w[1].2.saturating_sub(w[0].2) as f64 / secs,
            )
        })
        .collect()
}

/// The last counter at or before `t` (zero before the first).
fn counter_at(counters: &[(u64, u64, u64)], t: u64) -> (u64, u64, u64) {
    counters
        .iter()
        .rev()
        .find(|c| c.0 <= t)
        .copied()
        .unwrap_or((t, 0, 0))
}

/// Up and down bytes per second in the window; `None` without counters or time between.
fn rates_in(counters: &[(u64, u64, u64)], window: Window) -> Option<(f64, f64)> {
    if counters.is_empty() {
        return None;
    }
    let at = |t: u64| counter_at(counters, t);
    let (start, end) = (at(window.start_ns), at(window.end_ns));
    let secs = end.0.saturating_sub(start.0) as f64 / 1e9;
    (secs > 0.0).then(|| {
        (
            end.1.saturating_sub(start.1) as f64 / secs,
            end.2.saturating_sub(start.2) as f64 / secs,
        )
    })
}

/// A side's bandwidth: its link (up is farm to pool), plus a farm node's peer traffic.
pub fn side_bandwidth(
    link: &Counters,
    farm_node: Option<&FarmNodeTraffic>,
    window: Window,
) -> Option<Bandwidth> {
    let (up, down) = rates_in(link, window)?;
    let rates = |c: Option<&Counters>| c.and_then(|c| rates_in(c, window)).unwrap_or_default();
    let (_, relayed) = rates(farm_node.map(|f| &f.tx_relay));
    let (blocks_sent, blocks_received) = rates(farm_node.map(|f| &f.block_relay));
    let emulation_feed = farm_node
        .and_then(|f| rates_in(&f.feed, window))
        .map(|(tx, rx)| Direction { tx, rx });
    Some(Bandwidth {
        farm: Direction {
            tx: up + blocks_sent,
            rx: down + relayed + blocks_received,
        },
        pool: Direction { tx: down, rx: up },
        farm_tx_relay_modelled: relayed,
        farm_block_relay_modelled: Direction {
            tx: blocks_sent,
            rx: blocks_received,
        },
        emulation_feed,
    })
}

/// The farm's bytes per second (tx, rx), second by second through the window: its link
/// plus a farm node's modelled peer traffic, each counter read at whole seconds from the
/// window's start. Empty when the link recorded nothing.
pub fn farm_rate_series(
    link: &Counters,
    farm_node: Option<&FarmNodeTraffic>,
    window: Window,
) -> Vec<(f64, f64)> {
    if link.is_empty() {
        return Vec::new();
    }
    let none = Counters::new();
    let (relay, blocks) = farm_node.map_or((&none, &none), |f| (&f.tx_relay, &f.block_relay));
    let grew = |c: &Counters, from: u64, to: u64| {
        let (a, b) = (counter_at(c, from), counter_at(c, to));
        (
            b.1.saturating_sub(a.1) as f64,
            b.2.saturating_sub(a.2) as f64,
        )
    };
    let seconds = window.secs().floor() as u64;
    (0..seconds)
        .map(|k| {
            let from = window.start_ns + k * 1_000_000_000;
            let to = from + 1_000_000_000;
            let (up, down) = grew(link, from, to);
            let (_, relayed) = grew(relay, from, to);
            let (sent, received) = grew(blocks, from, to);
            (up + sent, down + relayed + received)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    const S: u64 = 1_000 * MS;

    /// A link run as two shards: each counts its own connections, a second apart and half
    /// a second out of step; the link's bytes are their sum whenever either counts.
    #[test]
    fn a_sharded_links_counters_are_its_shards_summed() {
        let events = [
            link_bytes(S, "link-sv1", 100, 1_000),
            link_bytes(S + S / 2, "link-sv1-shard2", 40, 400),
            link_bytes(2 * S, "link-sv1", 300, 3_000),
            link_bytes(2 * S + S / 2, "link-sv1-shard2", 90, 900),
            link_bytes(3 * S, "link-sv1", 500, 5_000),
            // Another side's link, named alike, is not a shard.
            link_bytes(2 * S, "link-sv1-backup", 7, 7),
        ];
        // At 1 s shard 2 has counted nothing; at 1.5 s its (40, 400) joins shard 1's 1 s
        // (100, 1,000); at 2 s shard 1's (300, 3,000) joins it; and so on.
        assert_eq!(
            link_counters(&events, "link-sv1"),
            vec![
                (S, 100, 1_000),
                (S + S / 2, 140, 1_400),
                (2 * S, 340, 3_400),
                (2 * S + S / 2, 390, 3_900),
                (3 * S, 590, 5_900)
            ]
        );
        // The first shard stopped at 2 s: the second's later bytes still count.
        let stopped: Vec<Record> = (events.iter())
            .filter(|r| !(r.role == "link-sv1" && r.t_ns > 2 * S))
            .cloned()
            .collect();
        assert_eq!(
            link_counters(&stopped, "link-sv1").last(),
            Some(&(2 * S + S / 2, 390, 3_900))
        );
        // The window 1-3 s: (590 - 100) / 2 s up, (5,900 - 1,000) / 2 s down.
        let window = Window {
            start_ns: S,
            end_ns: 3 * S,
        };
        let counters = link_counters(&events, "link-sv1");
        assert_eq!(rates_in(&counters, window), Some((245.0, 2_450.0)));
        // One shard alone: its counters as they are.
        assert_eq!(
            link_counters(&events[..1], "link-sv1"),
            vec![(S, 100, 1_000)]
        );
    }

    #[test]
    fn the_farm_second_by_second_is_its_link_and_its_nodes_modelled_traffic() {
        let window = Window {
            start_ns: 2 * S,
            end_ns: 5 * S + S / 2,
        };
        let link = link_counters(
            &[
                link_bytes(2 * S, "link", 200, 2_000),
                link_bytes(3 * S, "link", 500, 2_500),
                // No sample at 4 s: the 3 s counter still holds then.
                link_bytes(5 * S, "link", 1_100, 5_000),
            ],
            "link",
        );
        let farm = FarmNodeTraffic {
            tx_relay: vec![(2 * S, 0, 0), (3 * S, 0, 40), (4 * S, 0, 100)],
            block_relay: vec![(4 * S, 0, 0), (5 * S, 7, 300)],
            feed: vec![(3 * S, 1_000_000, 1_000_000)], // in no total
        };
        // Three whole seconds in the window: 2-3, 3-4, 4-5 s.
        // tx: link 300, 0, 600; blocks sent 0, 0, 7.
        // rx: link 500, 0, 2,500; relay 40, 60, 0; blocks received 0, 0, 300.
        assert_eq!(
            farm_rate_series(&link, Some(&farm), window),
            vec![(300.0, 540.0), (0.0, 60.0), (607.0, 2_800.0)]
        );
        assert!(farm_rate_series(&Counters::new(), Some(&farm), window).is_empty());
    }

    #[test]
    fn the_rate_is_the_counters_growth_between_the_samples_at_the_window_ends() {
        let window = Window {
            start_ns: 2 * S,
            end_ns: 5 * S + S / 2,
        };
        // Samples each second; the window's ends fall at 2 s and between 5 and 6 s.
        let events = [
            link_bytes(S, "link", 100, 1_000),
            link_bytes(2 * S, "link", 200, 2_000),
            link_bytes(3 * S, "link", 500, 2_500),
            link_bytes(5 * S, "link", 1_100, 5_000),
            link_bytes(6 * S, "link", 9_999, 9_999),
            link_bytes(4 * S, "other", 1, 1),
        ];
        let link = link_counters(&events, "link");
        assert_eq!(link.len(), 5);
        // 900 up and 3,000 down over the 3 s from 2 s to 5 s.
        let b = side_bandwidth(&link, None, window).unwrap();
        assert_eq!(
            b.farm,
            Direction {
                tx: 300.0,
                rx: 1_000.0
            }
        );
        assert_eq!(
            b.pool,
            Direction {
                tx: 1_000.0,
                rx: 300.0
            }
        );
        assert_eq!(
            link_rates(&link[..3]),
            vec![(2 * S, 100.0, 1_000.0), (3 * S, 300.0, 500.0)]
        );
    }

    #[test]
    fn a_link_that_recorded_nothing_has_no_bandwidth() {
        let window = Window {
            start_ns: 0,
            end_ns: 10 * S,
        };
        assert_eq!(side_bandwidth(&Vec::new(), None, window), None);
    }

    #[test]
    fn a_farm_nodes_peer_traffic_is_modelled_and_the_emulations_feed_kept_apart() {
        let window = Window {
            start_ns: 0,
            end_ns: 2 * S,
        };
        let link = vec![(0, 0, 0), (2 * S, 200, 400)];
        let farm = FarmNodeTraffic {
            tx_relay: vec![(0, 0, 0), (2 * S, 0, 1_000)],
            block_relay: vec![(0, 0, 0), (2 * S, 60, 600)],
            feed: vec![(0, 0, 0), (2 * S, 4_000, 2_000_000)],
        };
        let b = side_bandwidth(&link, Some(&farm), window).unwrap();
        // Link 100 up / 200 down per second; relay 500, blocks 30 sent and 300 received.
        assert_eq!(
            b.farm,
            Direction {
                tx: 130.0,
                rx: 1_000.0
            }
        );
        assert_eq!(
            b.pool,
            Direction {
                tx: 200.0,
                rx: 100.0
            }
        );
        assert_eq!(b.farm_tx_relay_modelled, 500.0);
        assert_eq!(
            b.farm_block_relay_modelled,
            Direction {
                tx: 30.0,
                rx: 300.0
            }
        );
        // The whole-block feed is shown apart and counted nowhere else.
        assert_eq!(
            b.emulation_feed,
            Some(Direction {
                tx: 2_000.0,
                rx: 1_000_000.0
            })
        );
    }
}
