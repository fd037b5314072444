//! An injected delay is a delay measured; bytes are counted; the cap limits throughput.

use link::{echo_peer, round_trips, LinkConfig, Relay};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The tight bounds hold for the median: on a loaded 2-core machine a single round trip can
/// wait for a thread, which is scheduling, not the relay.
fn median(rtts: &[Duration]) -> Duration {
    let mut sorted = rtts.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

/// No round trip may take this much more than its injected delays, however busy the machine.
const SCHEDULING_SLACK: Duration = Duration::from_millis(250);

async fn relay(cfg: LinkConfig) -> Relay {
    let peer = echo_peer("127.0.0.1:0".parse().unwrap()).await.unwrap();
    Relay::start("127.0.0.1:0".parse().unwrap(), peer, cfg)
        .await
        .unwrap()
}

#[tokio::test]
async fn round_trip_recovers_the_injected_delay() {
    let cfg = LinkConfig {
        up_delay: Duration::from_millis(30),
        down_delay: Duration::from_millis(20),
        jitter: Duration::ZERO,
        bandwidth_bps: None,
    };
    let relay = relay(cfg).await;
    let rtts = round_trips(relay.listen_addr, 20).await.unwrap();
    for rtt in &rtts {
        assert!(
            *rtt >= Duration::from_millis(50),
            "faster than light: {rtt:?}"
        );
        assert!(
            *rtt < Duration::from_millis(50) + SCHEDULING_SLACK,
            "{rtt:?}"
        );
    }
    let median = median(&rtts);
    assert!(
        median < Duration::from_millis(60),
        "the relay added more than 10 ms to the median round trip: {median:?}"
    );
    let up = relay.stats.up.bytes();
    assert_eq!(up, relay.stats.down.bytes(), "an echo returns every byte");
    assert!(up > 20 * 30);
    let lateness = &relay.stats.up.lateness_ns;
    assert_eq!(
        lateness.count(),
        relay
            .stats
            .up
            .chunks
            .load(std::sync::atomic::Ordering::Relaxed)
    );
}

#[tokio::test]
async fn jitter_spreads_delays_but_keeps_order() {
    let cfg = LinkConfig {
        jitter: Duration::from_millis(20),
        ..LinkConfig::from_rtt(Duration::from_millis(20))
    };
    let relay = relay(cfg).await;
    let rtts = round_trips(relay.listen_addr, 30).await.unwrap();
    let min = rtts.iter().min().unwrap();
    let max = rtts.iter().max().unwrap();
    assert!(*min >= Duration::from_millis(20));
    assert!(
        *max > *min + Duration::from_millis(5),
        "jitter shows: {min:?}..{max:?}"
    );
    assert!(*max < Duration::from_millis(20 + 40) + SCHEDULING_SLACK);
    let median = median(&rtts);
    assert!(
        median < Duration::from_millis(20 + 40 + 10),
        "a median round trip above base plus full jitter: {median:?}"
    );
}

#[tokio::test]
async fn bandwidth_cap_sets_the_transfer_time() {
    // 1 Mbit/s each way: 50 kB takes 0.4 s up, the echo 0.4 s more down (pipelined).
    let cfg = LinkConfig {
        bandwidth_bps: Some(1_000_000),
        ..LinkConfig::from_rtt(Duration::from_millis(2))
    };
    let relay = relay(cfg).await;
    let mut s = TcpStream::connect(relay.listen_addr).await.unwrap();
    let payload = vec![7u8; 50_000];
    let t = Instant::now();
    let (mut r, mut w) = s.split();
    let send = async { w.write_all(&payload).await.unwrap() };
    let recv = async {
        let mut got = 0;
        let mut buf = vec![0u8; 65536];
        while got < payload.len() {
            got += r.read(&mut buf).await.unwrap();
        }
    };
    tokio::join!(send, recv);
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(400),
        "50 kB at 1 Mbit/s took only {took:?}"
    );
    assert!(took < Duration::from_millis(1500), "{took:?}");
}

/// The shards of one link listen on one address: the kernel hands each connection to one
/// of them, every connection is relayed whole, and both shards take a part.
#[tokio::test]
async fn shards_sharing_the_farm_port_each_relay_a_part_of_the_connections() {
    use link::{Hazards, LinkStats, Listen};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    let peer = echo_peer("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let cfg = LinkConfig::from_rtt(Duration::ZERO);
    let start = |addr, stats| {
        let listen = Listen { addr, shared: true };
        Relay::start_counted(listen, peer, cfg, stats, Hazards::default())
    };
    let (first_stats, second_stats) = (Arc::new(LinkStats::default()), Arc::default());
    let first = start("127.0.0.1:0".parse().unwrap(), first_stats.clone())
        .await
        .unwrap();
    let second = start(first.listen_addr, Arc::clone(&second_stats))
        .await
        .unwrap();
    assert_eq!(second.listen_addr, first.listen_addr);
    // A shard alone on its address refuses a second relay there.
    let alone = Relay::start(first.listen_addr, peer, cfg).await;
    assert!(alone.is_err(), "a relay not sharing the port took it");
    const CONNECTIONS: u64 = 200;
    for i in 0..CONNECTIONS {
        let mut farm = TcpStream::connect(first.listen_addr).await.unwrap();
        let line = format!("connection {i}\n");
        farm.write_all(line.as_bytes()).await.unwrap();
        let mut back = vec![0; line.len()];
        farm.read_exact(&mut back).await.unwrap();
        assert_eq!(back, line.as_bytes());
    }
    let count = |s: &LinkStats| s.connections.load(Ordering::Relaxed);
    let (a, b) = (count(&first_stats), count(&second_stats));
    assert_eq!(a + b, CONNECTIONS);
    // Spread by a hash of each connection's addresses: 200 land 100 a shard give or take
    // a few tens, so a shard with none is a port not shared.
    assert!(
        a > 0 && b > 0,
        "one shard took every connection: {a} and {b}"
    );
}
