//! The built-in pool and the miner fleet against the simulated node.

use mining::farm::PerMiner;
use probe::recorder::read_events;
use probe::{Event, Recorder, ShareVerdict, TipCause};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use sv1::fleet::{FleetConfig, FleetHandle};
use sv1::pool::{PoolConfig, PoolHandle, VardiffConfig};
use sv1::wire::read_line;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sv1-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn node(difficulty: node::Difficulty, events: Recorder) -> node::NodeHandle {
    let mut mempool = node::MempoolConfig::preset(node::MempoolPreset::Mainnet);
    mempool.initial_txs = 300;
    node::NodeHandle::start(node::NodeOptions {
        config: node::NodeConfig {
            block_interval: Duration::from_secs(100_000),
            difficulty,
            mempool,
            ..node::NodeConfig::default()
        },
        rpc_bind: "127.0.0.1:0".parse().unwrap(),
        auth: node::RpcAuth::UserPassword {
            user: "u".into(),
            password: "p".into(),
        },
        zmq_bind: Some("tcp://127.0.0.1:0".into()),
        zmq_hashblock_bind: None,
        recorder: events,
        value_sample_interval: Duration::from_secs(1),
        tdp: None,
        ipc: None,
        peer: None,
    })
    .await
    .unwrap()
}

async fn pool(node: &node::NodeHandle, start_difficulty: f64, events: Recorder) -> PoolHandle {
    refreshing_pool(node, start_difficulty, Duration::from_secs(30), events).await
}

async fn refreshing_pool(
    node: &node::NodeHandle,
    start_difficulty: f64,
    job_refresh: Duration,
    events: Recorder,
) -> PoolHandle {
    PoolHandle::start(
        PoolConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            rpc_url: format!("http://{}", node.rpc_addr),
            rpc_user: "u".into(),
            rpc_password: "p".into(),
            zmq: node.zmq_endpoint.clone(),
            payout_script: bitcoin::ScriptBuf::new_op_return([1u8; 4]),
            coinbase_tag: "/test pool/".into(),
            job_refresh,
            refresh_fee_threshold_sats: 0,
            vardiff: VardiffConfig {
                shares_per_min: 600.0,
                start: start_difficulty,
                min: 1e-9,
                max: 1e9,
                retarget: Duration::from_secs(300),
            },
            version_rolling_mask: 0x1fff_e000,
            broadcast: None,
        },
        events,
    )
    .await
    .unwrap()
}

fn fleet(pool: &PoolHandle, miners: u32, hashrate: f64, events: Recorder) -> FleetHandle {
    farm(pool, miners, hashrate, PerMiner::default(), None, events)
}

/// A fleet that asks for a difficulty (as ESP-Miner does) gets it: every share the pool
/// judges counts at the suggested difficulty, not the pool's own start.
#[tokio::test]
async fn the_pool_honours_a_suggested_difficulty() {
    let d = dir("suggest");
    let (node_ev, pool_ev, fleet_ev) = (
        Recorder::to_file(&d.join("node.jsonl"), "node").unwrap(),
        Recorder::to_file(&d.join("pool.jsonl"), "pool").unwrap(),
        Recorder::to_file(&d.join("miners.jsonl"), "miners").unwrap(),
    );
    let node = node(node::Difficulty::Fixed(1.0), node_ev.clone()).await;
    // The pool would start miners at 1e-7; they ask for four times that.
    let pool = pool(&node, 1e-7, pool_ev.clone()).await;
    let suggested = 4e-7;
    let miners = farm(
        &pool,
        2,
        20_000.0,
        PerMiner::default(),
        Some(suggested),
        fleet_ev.clone(),
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    miners.stop().await;
    pool.stop();
    node.shutdown().await.unwrap();
    for r in [&node_ev, &pool_ev, &fleet_ev] {
        r.close().unwrap();
    }
    let difficulties: Vec<Option<f64>> = read_events(&d.join("pool.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::ShareJudged {
                verdict: ShareVerdict::Accepted,
                difficulty,
                ..
            } => Some(difficulty),
            _ => None,
        })
        .collect();
    assert!(difficulties.len() >= 4, "{difficulties:?}");
    assert!(
        difficulties.iter().all(|d| *d == Some(suggested)),
        "every share at the suggested difficulty: {difficulties:?}"
    );
}

fn farm(
    pool: &PoolHandle,
    miners: u32,
    hashrate: f64,
    per_miner: PerMiner,
    suggest_difficulty: Option<f64>,
    events: Recorder,
) -> FleetHandle {
    sv1::fleet::start(
        FleetConfig {
            backup: None,
            pool: pool.listen_addr,
            machines: mining::farm::Machines {
                per_miner,
                ..mining::farm::Machines::alike(miners, hashrate, 1)
            },
            worker_prefix: "miner".into(),
            broadcast: None,
            suggest_difficulty,
        },
        events,
    )
    .unwrap()
}

/// The physics of a farm's LAN: a 40 ms delay is measured on new work (40 ms later than
/// the neighbour's) and on answers (the share out and the answer back: at least 80 ms).
#[tokio::test]
async fn a_farm_lan_delay_is_measured_both_ways() {
    let d = dir("farm");
    let (node_ev, pool_ev, fleet_ev) = (
        Recorder::to_file(&d.join("node.jsonl"), "node").unwrap(),
        Recorder::to_file(&d.join("pool.jsonl"), "pool").unwrap(),
        Recorder::to_file(&d.join("miners.jsonl"), "miners").unwrap(),
    );
    let node = node(node::Difficulty::Fixed(1.0), node_ev.clone()).await;
    // Fresh jobs on a timer: each reaches both miners, the far one 40 ms later.
    let pool = refreshing_pool(&node, 1e-7, Duration::from_millis(500), pool_ev.clone()).await;
    let per_miner = PerMiner {
        hashrate_factor: vec![0.5, 1.5],
        lan_delay_us: vec![0, 40_000],
    };
    let miners = farm(&pool, 2, 4000.0, per_miner, None, fleet_ev.clone());
    tokio::time::sleep(Duration::from_secs(4)).await;
    miners.stop().await;
    pool.stop();
    node.shutdown().await.unwrap();
    for r in [&node_ev, &pool_ev, &fleet_ev] {
        r.close().unwrap();
    }
    let records = read_events(&d.join("miners.jsonl")).unwrap();
    let (mut submitted, mut answer_ms) = ([0u32; 2], [Vec::new(), Vec::new()]);
    let mut job_at: [std::collections::HashMap<String, u64>; 2] = Default::default();
    let mut sent_at = std::collections::HashMap::new();
    for r in &records {
        match &r.event {
            Event::JobReceived { miner, job_id, .. } => {
                // A miner's first job came at its connection, not with a broadcast.
                let jobs = &mut job_at[*miner as usize];
                let first = jobs.is_empty();
                jobs.insert(if first { String::new() } else { job_id.clone() }, r.t_ns);
            }
            Event::ShareSubmitted {
                miner, share_id, ..
            } => {
                submitted[*miner as usize] += 1;
                sent_at.insert((*miner, *share_id), r.t_ns);
            }
            Event::ShareAnswered {
                miner, share_id, ..
            } => {
                if let Some(t) = sent_at.get(&(*miner, *share_id)) {
                    answer_ms[*miner as usize].push((r.t_ns - t) as f64 / 1e6);
                }
            }
            _ => {}
        }
    }
    // The pool's vardiff moves each miner's difficulty towards its share rate, so share
    // counts do not show the hashrates (the hashing threads' own test does): both mine.
    assert!(submitted.iter().all(|n| *n > 0), "{submitted:?} shares");
    // Jobs both got from one broadcast.
    let mut later_ms: Vec<f64> = job_at[1]
        .iter()
        .filter(|(job, _)| !job.is_empty())
        .filter_map(|(job, far)| Some((*far as f64 - *job_at[0].get(job)? as f64) / 1e6))
        .collect();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    assert!(!later_ms.is_empty(), "no broadcast reached both miners");
    // The pool writes a job to both within a millisecond or so; slack for a loaded machine.
    let later = median(&mut later_ms);
    assert!(
        (38.0..=60.0).contains(&later),
        "the far miner gets each job {later} ms after the near one"
    );
    let (near_ms, far_ms) = (median(&mut answer_ms[0]), median(&mut answer_ms[1]));
    assert!(
        answer_ms[1].iter().all(|ms| *ms >= 80.0),
        "across the LAN and back"
    );
    assert!(
        far_ms < 80.0 + 40.0 && near_ms < 40.0,
        "{near_ms} / {far_ms} ms"
    );
}

#[tokio::test]
async fn miners_get_jobs_tied_to_node_templates_and_shares_are_accepted() {
    let d = dir("shares");
    let (node_ev, pool_ev, fleet_ev) = (
        Recorder::to_file(&d.join("node.jsonl"), "node").unwrap(),
        Recorder::to_file(&d.join("pool.jsonl"), "pool").unwrap(),
        Recorder::to_file(&d.join("miners.jsonl"), "miners").unwrap(),
    );
    // Difficulty 1 blocks are out of reach; shares at 1e-7 take ~430 hashes.
    let node = node(node::Difficulty::Fixed(1.0), node_ev.clone()).await;
    let pool = pool(&node, 1e-7, pool_ev.clone()).await;
    let miners = fleet(&pool, 3, 4000.0, fleet_ev.clone());
    tokio::time::sleep(Duration::from_secs(3)).await;
    miners.stop().await;
    pool.stop();
    node.shutdown().await.unwrap();
    for r in [&node_ev, &pool_ev, &fleet_ev] {
        r.close().unwrap();
    }

    let events = |f: &str| -> Vec<Event> {
        read_events(&d.join(f))
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect()
    };
    let markers: Vec<String> = events("node.jsonl")
        .into_iter()
        .filter_map(|e| match e {
            Event::TemplateBuilt { marker_txid, .. } => Some(marker_txid),
            _ => None,
        })
        .collect();
    let miner_events = events("miners.jsonl");
    for m in 0..3 {
        let job_marker = miner_events.iter().find_map(|e| match e {
            Event::JobReceived {
                miner, marker_txid, ..
            } if *miner == m => marker_txid.clone(),
            _ => None,
        });
        let job_marker = job_marker.unwrap_or_else(|| panic!("miner {m} got no job"));
        assert!(
            markers.contains(&job_marker),
            "miner {m}'s job is tied to a node template"
        );
    }
    let submitted = miner_events
        .iter()
        .filter(|e| matches!(e, Event::ShareSubmitted { .. }))
        .count();
    let answered_ok = miner_events
        .iter()
        .filter(|e| matches!(e, Event::ShareAnswered { accepted: true, .. }))
        .count();
    let judged_ok = events("pool.jsonl")
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::ShareJudged {
                    verdict: ShareVerdict::Accepted,
                    ..
                }
            )
        })
        .count();
    // 3 miners x 4000 H/s x 3 s / 430 hashes per share: ~80 shares.
    assert!(submitted >= 20, "{submitted} shares submitted");
    assert!(
        judged_ok + 3 >= submitted,
        "{judged_ok} of {submitted} accepted by the pool"
    );
    assert!(
        answered_ok + 3 >= submitted,
        "{answered_ok} of {submitted} answered true"
    );
}

#[tokio::test]
async fn a_block_found_by_the_miners_becomes_the_tip() {
    let d = dir("block");
    let (node_ev, fleet_ev) = (
        Recorder::to_file(&d.join("node.jsonl"), "node").unwrap(),
        Recorder::to_file(&d.join("miners.jsonl"), "miners").unwrap(),
    );
    // Regtest difficulty: about one share in two is also a block.
    let node = node(node::Difficulty::RegtestEasy, node_ev.clone()).await;
    let pool = pool(&node, 1e-9, Recorder::disabled()).await;
    let start = node.state().chain().height();
    let miners = fleet(&pool, 1, 50.0, fleet_ev.clone());
    let mut height = start;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        height = node.state().chain().height();
        if height > start {
            break;
        }
    }
    miners.stop().await;
    pool.stop();
    node.shutdown().await.unwrap();
    node_ev.close().unwrap();
    fleet_ev.close().unwrap();
    assert!(height > start, "no block from the miners in 10 s");

    let node_events: Vec<Event> = read_events(&d.join("node.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.event)
        .collect();
    let accepted: Vec<String> = node_events
        .iter()
        .filter_map(|e| match e {
            Event::BlockSubmitted {
                hash,
                reject_reason: None,
                ..
            } => Some(hash.clone()),
            _ => None,
        })
        .collect();
    assert!(node_events.iter().any(|e| matches!(
        e,
        Event::TipChanged {
            cause: TipCause::Submitted,
            ..
        }
    )));
    let found: Vec<String> = read_events(&d.join("miners.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::ShareSubmitted {
                block_hash: Some(h),
                ..
            } => Some(h),
            _ => None,
        })
        .collect();
    assert!(
        accepted.iter().any(|h| found.contains(h)),
        "the node accepted a block the miner found"
    );
}

/// A hand-driven SV1 client.
struct Client {
    read: BufReader<tokio::net::tcp::OwnedReadHalf>,
    write: tokio::net::tcp::OwnedWriteHalf,
}

impl Client {
    async fn connect(pool: &PoolHandle) -> Client {
        let (r, w) = TcpStream::connect(pool.listen_addr)
            .await
            .unwrap()
            .into_split();
        Client {
            read: BufReader::new(r),
            write: w,
        }
    }

    async fn send(&mut self, v: Value) {
        let line = format!("{v}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// The next message, or `None` once the pool closed the connection.
    async fn next(&mut self) -> Option<Value> {
        let mut line = Vec::new();
        match tokio::time::timeout(Duration::from_secs(5), read_line(&mut self.read, &mut line))
            .await
        {
            Ok(Ok(())) => Some(serde_json::from_slice(&line).unwrap()),
            Ok(Err(_)) => None,
            Err(_) => panic!("no message from the pool in 5 s"),
        }
    }

    /// Reads until the reply with `id`.
    async fn reply(&mut self, id: u64) -> Value {
        loop {
            let m = self.next().await.expect("connection open");
            if m["id"] == json!(id) {
                return m;
            }
        }
    }

    async fn handshake(&mut self) -> Value {
        self.send(json!({"id": 1, "method": "mining.subscribe", "params": []}))
            .await;
        self.reply(1).await;
        self.send(json!({"id": 2, "method": "mining.authorize", "params": ["w", "x"]}))
            .await;
        self.reply(2).await;
        loop {
            let m = self.next().await.unwrap();
            if m["method"] == json!("mining.notify") {
                return m["params"].clone();
            }
        }
    }
}

#[tokio::test]
async fn stale_unknown_and_malformed_shares_get_their_codes() {
    let node = node(node::Difficulty::Fixed(1.0), Recorder::disabled()).await;
    let pool = pool(&node, 1e-7, Recorder::disabled()).await;
    let mut c = Client::connect(&pool).await;
    let notify = c.handshake().await;
    let old_job = notify[0].as_str().unwrap().to_string();
    let submit = |id: u64, job: &str, en2: &str| json!({"id": id, "method": "mining.submit", "params": ["w", job, en2, notify[7], "00000000"]});

    c.send(submit(10, "nope", "0000000000000000")).await;
    assert_eq!(c.reply(10).await["error"][0], json!(21), "unknown job");
    c.send(submit(11, &old_job, "00")).await;
    assert_eq!(
        c.reply(11).await["error"][0],
        json!(20),
        "bad extranonce2 size"
    );

    // The network finds a block: the pool learns it over ZMQ and the old job is stale. A
    // ZMQ subscription takes effect when the publisher's I/O thread reads it, which a
    // loaded machine can delay past the first block: another block follows until the
    // pool announces one.
    let rpc = bitcoind_rpc_client(&node);
    let mut announced = false;
    for _ in 0..5 {
        let _: Value = rpc
            .call(
                "generatetoaddress",
                json!([1, "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"]),
            )
            .await
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while let Ok(m) = tokio::time::timeout_at(deadline, c.next()).await {
            let m = m.unwrap();
            if m["method"] == json!("mining.notify") && m["params"][8] == json!(true) {
                announced = true;
                break;
            }
        }
        if announced {
            break;
        }
    }
    assert!(announced, "the pool announced a new tip with a clean job");
    c.send(submit(12, &old_job, "0000000000000001")).await;
    let r = c.reply(12).await;
    assert_eq!(
        (r["error"][0].clone(), r["error"][1].clone()),
        (json!(21), json!("Stale job"))
    );
    node.shutdown().await.unwrap();
    pool.stop();
}

#[tokio::test]
async fn a_retarget_reaches_the_miner_at_once_with_its_current_job() {
    let node = node(node::Difficulty::Fixed(1.0), Recorder::disabled()).await;
    // So easy that every hash is a share: a miner far too fast for its difficulty.
    let pool = pool(&node, 1e-12, Recorder::disabled()).await;
    let mut c = Client::connect(&pool).await;
    let notify = c.handshake().await;
    let job = notify[0].clone();
    for i in 0..16u64 {
        c.send(json!({"id": 100 + i, "method": "mining.submit",
            "params": ["w", job, format!("{i:016x}"), notify[7], "00000000"]}))
            .await;
        assert_eq!(c.reply(100 + i).await["result"], json!(true));
    }
    // No new block and no refresh due: the new difficulty comes now, followed by the
    // same job, which the miner may keep working on.
    let set = loop {
        let m = c.next().await.unwrap();
        if m["method"] == json!("mining.set_difficulty") {
            break m;
        }
    };
    assert!(set["params"][0].as_f64().unwrap() > 1e-12, "{set}");
    let again = c.next().await.unwrap();
    assert_eq!(again["method"], json!("mining.notify"));
    assert_eq!(again["params"][0], job, "the current job again");
    assert_eq!(again["params"][8], json!(false), "its work stays valid");
    // Shares already hashed at the old difficulty are still accepted.
    c.send(json!({"id": 200, "method": "mining.submit",
        "params": ["w", job, "00000000000000ff", notify[7], "00000000"]}))
        .await;
    assert_eq!(c.reply(200).await["result"], json!(true));
    node.shutdown().await.unwrap();
    pool.stop();
}

fn bitcoind_rpc_client(node: &node::NodeHandle) -> bitcoind_rpc::RpcClient {
    bitcoind_rpc::RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "p")
}

#[tokio::test]
async fn garbage_long_lines_and_floods_close_one_connection_only() {
    let node = node(node::Difficulty::Fixed(1.0), Recorder::disabled()).await;
    let pool = pool(&node, 1e-7, Recorder::disabled()).await;

    let mut garbage = Client::connect(&pool).await;
    garbage.write.write_all(b"not json\n").await.unwrap();
    assert_eq!(
        garbage.next().await.unwrap()["error"][1],
        json!("Parse error")
    );

    let mut long = Client::connect(&pool).await;
    let _ = long.write.write_all(&vec![b'x'; 1024 * 1024]).await;
    assert!(
        long.next().await.is_none(),
        "a 1 MB line closes the connection"
    );

    let mut flood = Client::connect(&pool).await;
    let burst: Vec<u8> = (0..2000)
        .flat_map(|i| {
            format!("{{\"id\":{i},\"method\":\"mining.extranonce.subscribe\",\"params\":[]}}\n")
                .into_bytes()
        })
        .collect();
    let _ = flood.write.write_all(&burst).await;
    let mut closed = false;
    for _ in 0..2100 {
        if flood.next().await.is_none() {
            closed = true;
            break;
        }
    }
    assert!(closed, "a flood closes the connection");

    let mut named = Client::connect(&pool).await;
    let long_name = format!(
        "{{\"id\":1,\"method\":\"mining.authorize\",\"params\":[\"{}\",\"x\"]}}\n",
        "w".repeat(300)
    );
    named.write.write_all(long_name.as_bytes()).await.unwrap();
    assert_eq!(
        named.next().await.unwrap()["error"][1],
        json!("Worker name too long"),
        "what a connection's authorizations hold is bounded"
    );

    let mut good = Client::connect(&pool).await;
    let notify = good.handshake().await;
    assert!(notify[0].is_string(), "other miners keep mining");
    node.shutdown().await.unwrap();
    pool.stop();
}
