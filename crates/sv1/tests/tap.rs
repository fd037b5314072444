//! The SV1 tap between a miner and a scripted pool: bytes pass unchanged both ways, a
//! share's answer is recorded as the pool's verdict with its words and its job's
//! difficulty, a line that is not JSON
//! is passed on and counted, and an over-long line closes only its own connection.

use probe::recorder::read_events;
use probe::tap::FinalEvents;
use probe::{Event, Recorder, ShareVerdict};
use std::time::Duration;
use sv1::tap::Sv1TapConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads exactly `n` bytes (within 5 s).
async fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut buf))
        .await
        .expect("bytes within 5 s")
        .unwrap();
    buf
}

const NOTIFY: &str = r#"{"id":null,"method":"mining.notify","params":["1f","00000000000000000000000000000000000000000000000000000000000000aa","01","02",["0000000000000000000000000000000000000000000000000000000000000011"],"20000000","1d00ffff","65000000",true]}"#;

#[tokio::test]
async fn the_tap_passes_every_byte_and_records_the_pools_answers() {
    let pool = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pool_addr = pool.local_addr().unwrap();
    let dir = std::env::temp_dir().join(format!("sv1-tap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("tap.jsonl");
    let recorder = Recorder::to_file(&events, "tap").unwrap();
    let tap = sv1::tap::start(
        Sv1TapConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: pool_addr,
            // As the second shard of a tap: its connections are numbered from 1,000,001.
            connection_offset: 1_000_000,
        },
        recorder.clone(),
    )
    .await
    .unwrap();

    // Up: garbage, then a share (with CRLF, as some miners end lines).
    let mut miner = TcpStream::connect(tap.listen_addr).await.unwrap();
    let (mut upstream, _) = pool.accept().await.unwrap();
    let up = b"not json at all\n{\"id\":7,\"method\":\"mining.submit\",\"params\":[\"w1\",\"1f\",\"00000000\",\"65000000\",\"00000001\"]}\r\n".to_vec();
    miner.write_all(&up).await.unwrap();
    assert_eq!(
        read_n(&mut upstream, up.len()).await,
        up,
        "unchanged towards the pool"
    );

    // Down: a difficulty, a job, a new difficulty (for the next job), the answer: the
    // share counts at its job's difficulty.
    let difficulty =
        |d: f64| format!(r#"{{"id":null,"method":"mining.set_difficulty","params":[{d}]}}"#);
    let down = format!(
        "{}\n{NOTIFY}\n{}\n{{\"id\":7,\"result\":null,\"error\":[21,\"Stale job\",null]}}\n",
        difficulty(0.5),
        difficulty(2.0)
    )
    .into_bytes();
    upstream.write_all(&down).await.unwrap();
    assert_eq!(
        read_n(&mut miner, down.len()).await,
        down,
        "unchanged towards the miner"
    );

    // A line over the bound closes this connection only; another is served.
    miner.write_all(&vec![b'x'; 20 * 1024]).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), miner.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "the tap closes a connection whose line has no end"
    );
    let mut second = TcpStream::connect(tap.listen_addr).await.unwrap();
    let (mut upstream2, _) = pool.accept().await.unwrap();
    second.write_all(b"{}\n").await.unwrap();
    assert_eq!(read_n(&mut upstream2, 3).await, b"{}\n");

    for event in tap.stats.final_events() {
        recorder.record(event);
    }
    tap.stop();
    recorder.close().unwrap();
    let events: Vec<Event> = read_events(&events)
        .unwrap()
        .into_iter()
        .map(|r| r.event)
        .collect();
    assert!(
        events.iter().any(|e| matches!(e,
            Event::Sv1JobRelayed { job_id, clean: true, marker_txid: Some(m), .. }
                if job_id == "1f" && m.starts_with("11")
        )),
        "{events:?}"
    );
    assert!(events.contains(&Event::Sv1DifficultySet {
        connection: 1_000_001,
        difficulty: 0.5
    }));
    assert!(
        events.contains(&Event::ShareJudged {
            worker: "w1".into(),
            job_id: "1f".into(),
            verdict: ShareVerdict::Stale,
            block_hash: None,
            reason: Some("Stale job".into()),
            difficulty: Some(0.5),
        }),
        "{events:?}"
    );
    assert!(
        events.contains(&Event::TapMalformedLines { up: 1, down: 0 }),
        "{events:?}"
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::TapLatency { up_ms, .. } if up_ms.count == 3)));
    std::fs::remove_dir_all(&dir).unwrap();
}
