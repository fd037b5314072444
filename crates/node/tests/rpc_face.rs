//! The node as a bitcoind-RPC pool sees it: over HTTP and ZMQ.

mod common;

use bitcoin::{Block, ScriptBuf, Transaction, TxMerkleNode};
use bitcoind_rpc::{RpcCallError, RpcClient};
use node::template::{coinbase_merkle_branch, merkle_root_from_branch, network_coinbase};
use node::{MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions, RpcAuth};
use serde_json::{json, Value};
use std::time::Duration;
use zeromq::{Socket, SocketRecv, SubSocket};

async fn start(cfg: NodeConfig, zmq: bool) -> (NodeHandle, RpcClient) {
    let node = NodeHandle::start(NodeOptions {
        zmq_bind: zmq.then(|| "tcp://127.0.0.1:0".to_string()),
        zmq_hashblock_bind: None,
        ..common::loopback(cfg)
    })
    .await
    .expect("node starts");
    let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "p");
    (node, rpc)
}

fn quiet_network() -> NodeConfig {
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = 800;
    NodeConfig {
        block_interval: Duration::from_secs(100_000),
        mempool,
        ..NodeConfig::default()
    }
}

async fn gbt(rpc: &RpcClient) -> Value {
    rpc.call("getblocktemplate", json!([{"rules": ["segwit"]}]))
        .await
        .unwrap()
}

/// Builds and solves a block from a getblocktemplate reply alone, as an SV1 pool does.
fn block_from_gbt(t: &Value) -> Block {
    let txs: Vec<Transaction> = t["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            bitcoin::consensus::deserialize(&hex::decode(x["data"].as_str().unwrap()).unwrap())
                .unwrap()
        })
        .collect();
    let commitment = ScriptBuf::from_bytes(
        hex::decode(t["default_witness_commitment"].as_str().unwrap()).unwrap(),
    );
    let coinbase = network_coinbase(
        t["height"].as_u64().unwrap() as u32,
        b"/gbt pool/",
        t["coinbasevalue"].as_u64().unwrap(),
        Some(&commitment),
    );
    let txids: Vec<_> = txs.iter().map(Transaction::compute_txid).collect();
    let root: TxMerkleNode = merkle_root_from_branch(
        coinbase.compute_txid().to_raw_hash(),
        &coinbase_merkle_branch(&txids),
    );
    let bits = u32::from_str_radix(t["bits"].as_str().unwrap(), 16).unwrap();
    let mut block = Block {
        header: bitcoin::block::Header {
            version: bitcoin::block::Version::from_consensus(t["version"].as_i64().unwrap() as i32),
            prev_blockhash: t["previousblockhash"].as_str().unwrap().parse().unwrap(),
            merkle_root: root,
            time: t["curtime"].as_u64().unwrap() as u32,
            bits: bitcoin::CompactTarget::from_consensus(bits),
            nonce: 0,
        },
        txdata: std::iter::once(coinbase).chain(txs).collect(),
    };
    let target = bitcoin::Target::from_compact(block.header.bits);
    while block.header.validate_pow(target).is_err() {
        block.header.nonce += 1;
    }
    block
}

#[tokio::test]
async fn getblocktemplate_has_what_pools_read_and_a_mined_block_is_accepted() {
    let (node, rpc) = start(quiet_network(), false).await;
    let info: Value = rpc.call("getblockchaininfo", json!([])).await.unwrap();
    assert_eq!(info["initialblockdownload"], json!(false));
    assert_eq!(info["chain"], json!("regtest"));

    let t = gbt(&rpc).await;
    let best: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    assert_eq!(t["previousblockhash"].as_str(), Some(best.as_str()));
    for key in [
        "height",
        "coinbasevalue",
        "bits",
        "target",
        "default_witness_commitment",
        "transactions",
        "curtime",
        "mintime",
        "longpollid",
    ] {
        assert!(!t[key].is_null(), "getblocktemplate lacks {key}");
    }
    let txs = t["transactions"].as_array().unwrap();
    assert!(txs.len() > 100);
    let fees: u64 = txs.iter().map(|x| x["fee"].as_u64().unwrap()).sum();
    assert_eq!(t["coinbasevalue"].as_u64().unwrap(), 312_500_000 + fees);

    let block = block_from_gbt(&t);
    let hex = bitcoin::consensus::encode::serialize_hex(&block);
    let proposal: Value = rpc
        .call(
            "getblocktemplate",
            json!([{"mode": "proposal", "data": hex}]),
        )
        .await
        .unwrap();
    assert_eq!(proposal, Value::Null, "BIP23 proposal of a good block");
    let verdict: Value = rpc.call("submitblock", json!([hex])).await.unwrap();
    assert_eq!(verdict, Value::Null, "submitblock returns null on success");
    let best: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    assert_eq!(best, block.block_hash().to_string());
    let header: Value = rpc.call("getblockheader", json!([best])).await.unwrap();
    assert_eq!(header["height"], t["height"]);
    assert_eq!(header["confirmations"], json!(1));
    let again: Value = rpc.call("submitblock", json!([hex])).await.unwrap();
    assert_eq!(again, json!("duplicate"));
    node.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_input_gets_bitcoinds_errors_and_the_node_keeps_serving() {
    let (node, rpc) = start(quiet_network(), false).await;
    let err = |r: Result<Value, RpcCallError>| match r {
        Err(RpcCallError::Rpc { code, message }) => (code, message),
        other => panic!("expected an RPC error, got {other:?}"),
    };
    let (code, message) = err(rpc.call("submitblock", json!(["00garbage"])).await);
    assert_eq!((code, message.as_str()), (-22, "Block decode failed"));
    let (code, _) = err(rpc.call("submitblock", json!(["deadbeef"])).await);
    assert_eq!(code, -22);
    assert_eq!(err(rpc.call("nosuchmethod", json!([])).await).0, -32601);
    assert_eq!(err(rpc.call("getblockhash", json!(["ten"])).await).0, -3);
    assert_eq!(err(rpc.call("getblockhash", json!([])).await).0, -1);
    assert_eq!(err(rpc.call("getblockhash", json!([1, 2])).await).0, -1);
    // Above the tip (every height below it answers, from genesis up).
    assert_eq!(err(rpc.call("getblockhash", json!([880_001])).await).0, -8);
    assert_eq!(
        err(rpc.call("getblocktemplate", json!([{}])).await).0,
        -8,
        "segwit rule required"
    );
    assert_eq!(err(rpc.call("getblock", json!(["00"])).await).0, -8);
    assert_eq!(
        err(rpc.call("getblockhash", json!({"hieght": 1})).await).0,
        -8
    );

    let (status, body) = rpc.post("{not json".into()).await.unwrap();
    assert_eq!(status, 500);
    assert!(body.ends_with('\n'), "replies end with a newline");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        json!(-32700)
    );
    let (status, body) = rpc.post(r#"{"id":1}"#.into()).await.unwrap();
    assert_eq!(status, 400);
    assert!(body.contains("Missing method"));
    let (status, _) = rpc
        .post(r#"{"id":1,"method":"nosuch"}"#.into())
        .await
        .unwrap();
    assert_eq!(status, 404);
    let (status, _) = rpc
        .post(format!("\"{}\"", "x".repeat(33 * 1024 * 1024)))
        .await
        .unwrap();
    assert_eq!(status, 413, "oversized bodies are refused");
    let (status, body) = rpc
        .post(r#"[{"id":1,"method":"getblockcount"},{"id":2,"method":"nosuch"}]"#.into())
        .await
        .unwrap();
    assert_eq!(status, 200);
    let batch: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(batch[0]["result"], json!(880_000));
    assert_eq!(batch[1]["error"]["code"], json!(-32601));
    let (status, body) = rpc
        .post(r#"{"jsonrpc":"2.0","id":"a","method":"getblockcount"}"#.into())
        .await
        .unwrap();
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "{\"jsonrpc\":\"2.0\",\"result\":880000,\"id\":\"a\"}\n"
        )
    );

    let url = format!("http://{}", node.rpc_addr);
    for (user, password) in [
        ("u", "wrong"),
        ("u.pool", "wrong"),
        ("ux", "p"),
        ("u.", "p"),
    ] {
        let intruder = RpcClient::new(&url, user, password);
        assert!(
            matches!(
                intruder.call::<Value>("getblockcount", json!([])).await,
                Err(RpcCallError::Unauthorized)
            ),
            "{user}:{password}"
        );
    }
    // `<user>.<pool>` with the password is a client of its own (its own template cache).
    let pool = RpcClient::new(&url, "u.pool-a", "p");
    let count: u64 = pool.call("getblockcount", json!([])).await.unwrap();
    assert_eq!(count, 880_000);
    let count: u64 = rpc.call("getblockcount", json!([])).await.unwrap();
    assert_eq!(count, 880_000, "still serving after all of that");
    node.shutdown().await.unwrap();
}

#[tokio::test]
async fn cookie_auth_and_a_port_in_use_named_in_the_error() {
    let dir = std::env::temp_dir().join(format!("node-cookie-{}", std::process::id()));
    let cookie = dir.join("regtest/.cookie");
    let node = NodeHandle::start(NodeOptions {
        auth: RpcAuth::Cookie {
            path: cookie.clone(),
        },
        ..common::loopback(quiet_network())
    })
    .await
    .unwrap();
    let rpc = RpcClient::from_cookie(&format!("http://{}", node.rpc_addr), &cookie).unwrap();
    let count: u64 = rpc.call("getblockcount", json!([])).await.unwrap();
    assert_eq!(count, 880_000);

    let clash = NodeHandle::start(NodeOptions {
        rpc_bind: node.rpc_addr,
        ..common::loopback(quiet_network())
    })
    .await;
    let message = format!("{:#}", clash.err().expect("the port is taken"));
    assert!(
        message.contains(&node.rpc_addr.port().to_string()),
        "{message}"
    );
    node.shutdown().await.unwrap();
    assert!(!cookie.exists(), "the cookie is removed at shutdown");
}

#[tokio::test]
async fn height_advances_and_zmq_hashblock_longpoll_and_waitfornewblock_follow_the_tip() {
    let cfg = NodeConfig {
        scripted_arrivals: Some(vec![
            Duration::from_millis(1500),
            Duration::from_millis(2500),
        ]),
        ..quiet_network()
    };
    let (node, rpc) = start(cfg, true).await;
    let mut sub = SubSocket::new();
    sub.connect(node.zmq_endpoint.as_deref().unwrap())
        .await
        .unwrap();
    sub.subscribe("hashblock").await.unwrap();

    let first = gbt(&rpc).await;
    let longpollid = first["longpollid"].as_str().unwrap().to_string();
    let poller = {
        let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "p");
        tokio::spawn(async move {
            let t: Value = rpc
                .call(
                    "getblocktemplate",
                    json!([{"rules": ["segwit"], "longpollid": longpollid}]),
                )
                .await
                .unwrap();
            t
        })
    };
    // waitfornewblock, as Core's: at its timeout the tip as it is; else the next tip.
    let start_tip: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    let quiet: Value = rpc.call("waitfornewblock", json!([50])).await.unwrap();
    assert_eq!(quiet["hash"], start_tip.as_str(), "{quiet}");
    let waiter = {
        let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "p");
        let from = start_tip.clone();
        tokio::spawn(async move {
            let next: Value = rpc.call("waitfornewblock", json!([0, from])).await.unwrap();
            next
        })
    };

    let msg = tokio::time::timeout(Duration::from_secs(10), sub.recv())
        .await
        .expect("hashblock within 10 s")
        .unwrap();
    let frames: Vec<Vec<u8>> = msg.into_vec().into_iter().map(|b| b.to_vec()).collect();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0], b"hashblock");
    assert_eq!(frames[2], 0u32.to_le_bytes(), "first sequence number");
    let tip_at_height = |h: u64| {
        let rpc = &rpc;
        async move {
            rpc.call::<String>("getblockhash", json!([h]))
                .await
                .unwrap()
        }
    };
    assert_eq!(
        hex::encode(&frames[1]),
        tip_at_height(880_001).await,
        "display order, as bitcoind"
    );

    let released = tokio::time::timeout(Duration::from_secs(10), poller)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        released["previousblockhash"], first["previousblockhash"],
        "longpoll returns on a new tip"
    );
    let next = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next["height"], 880_001, "{next}");
    assert_eq!(next["hash"], tip_at_height(880_001).await.as_str());

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let height: u64 = rpc.call("getblockcount", json!([])).await.unwrap();
    assert_eq!(height, 880_002, "both scripted blocks arrived");
    node.shutdown().await.unwrap();
}

#[tokio::test]
async fn light_templates_carry_the_branch_and_submitblocklight_completes_the_block() {
    let (node, rpc) = start(quiet_network(), false).await;
    let light: Value = rpc
        .call("getblocktemplatelight", json!([{"rules": ["segwit"]}]))
        .await
        .unwrap();
    assert!(
        light.get("transactions").is_none(),
        "no transaction data in the light form"
    );
    let branch: Vec<TxMerkleNode> = light["merkle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            bitcoin::consensus::deserialize(&hex::decode(h.as_str().unwrap()).unwrap()).unwrap()
        })
        .collect();
    assert!(
        branch.len() > 5,
        "a branch through hundreds of transactions"
    );
    let job_id = light["job_id"].as_str().unwrap().to_string();

    // Header and coinbase only, as a light pool has them.
    let commitment = ScriptBuf::from_bytes(
        hex::decode(light["default_witness_commitment"].as_str().unwrap()).unwrap(),
    );
    let coinbase = network_coinbase(
        light["height"].as_u64().unwrap() as u32,
        b"/light pool/",
        light["coinbasevalue"].as_u64().unwrap(),
        Some(&commitment),
    );
    let mut header = bitcoin::block::Header {
        version: bitcoin::block::Version::from_consensus(light["version"].as_i64().unwrap() as i32),
        prev_blockhash: light["previousblockhash"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
        merkle_root: merkle_root_from_branch(coinbase.compute_txid().to_raw_hash(), &branch),
        time: light["curtime"].as_u64().unwrap() as u32,
        bits: bitcoin::CompactTarget::from_consensus(
            u32::from_str_radix(light["bits"].as_str().unwrap(), 16).unwrap(),
        ),
        nonce: 0,
    };
    while header.validate_pow(header.target()).is_err() {
        header.nonce += 1;
    }
    let partial = Block {
        header,
        txdata: vec![coinbase],
    };
    let hex = bitcoin::consensus::encode::serialize_hex(&partial);

    let err = rpc
        .call::<Value>("submitblocklight", json!([hex, "ffffffff"]))
        .await
        .unwrap_err();
    assert!(matches!(err, RpcCallError::Rpc { code: -8, .. }), "{err}");
    let verdict: Value = rpc
        .call("submitblocklight", json!([hex, job_id]))
        .await
        .unwrap();
    assert_eq!(
        verdict,
        Value::Null,
        "the node rebuilt and accepted the block"
    );
    let best: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    assert_eq!(best, header.block_hash().to_string());
    let block: Value = rpc.call("getblock", json!([best])).await.unwrap();
    assert!(
        block["nTx"].as_u64().unwrap() > 100,
        "every template transaction is in the block"
    );
    node.shutdown().await.unwrap();
}

/// A libzmq subscriber on `endpoint` with ZMTP heartbeats (200 ms interval, 300 ms
/// timeout), subscribed to `subscription`, for `listen`: the topics it received, and how
/// often it was disconnected.
fn subscriber(endpoint: &str, subscription: &[u8], listen: Duration) -> (Vec<String>, usize) {
    let context = zmq::Context::new();
    let sub = context.socket(zmq::SUB).unwrap();
    sub.set_heartbeat_ivl(200).unwrap();
    sub.set_heartbeat_timeout(300).unwrap();
    sub.monitor("inproc://monitor", zmq::SocketEvent::DISCONNECTED as i32)
        .unwrap();
    let monitor = context.socket(zmq::PAIR).unwrap();
    monitor.connect("inproc://monitor").unwrap();
    sub.connect(endpoint).unwrap();
    sub.set_subscribe(subscription).unwrap();
    let mut topics = Vec::new();
    let until = std::time::Instant::now() + listen;
    while std::time::Instant::now() < until {
        if sub.poll(zmq::POLLIN, 100).unwrap() > 0 {
            let frames = sub.recv_multipart(0).unwrap();
            topics.push(String::from_utf8(frames[0].clone()).unwrap());
        }
    }
    let mut disconnects = 0;
    while monitor.poll(zmq::POLLIN, 0).unwrap() > 0 {
        monitor.recv_multipart(0).unwrap();
        disconnects += 1;
    }
    (topics, disconnects)
}

/// What real SV1 pools need of a node and bitcoind gives them (ckpool, goPool): a libzmq
/// subscriber with ZMTP heartbeats (goPool sets a 1 s interval) stays connected through
/// quiet time, and gets only the topic it subscribed to, as from bitcoind's libzmq. On the
/// hashblock-only publisher (bitcoind with one address per topic), a subscriber to every
/// topic (ckpool subscribes with a zero-length filter) gets hashblock alone; on the shared
/// one it gets the whole block as well.
#[tokio::test]
async fn a_libzmq_subscriber_with_heartbeats_stays_connected_and_gets_its_topic_only() {
    let cfg = NodeConfig {
        scripted_arrivals: Some(vec![Duration::from_millis(3500)]),
        ..quiet_network()
    };
    let node = NodeHandle::start(NodeOptions {
        zmq_bind: Some("tcp://127.0.0.1:0".into()),
        zmq_hashblock_bind: Some("tcp://127.0.0.1:0".into()),
        ..common::loopback(cfg)
    })
    .await
    .expect("node starts");
    let rpc = RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "p");
    let shared = node.zmq_endpoint.clone().unwrap();
    let hashblock_only = node.zmq_hashblock_endpoint.clone().unwrap();
    // Quiet for 3.5 s (17 heartbeat intervals), then one block; listen 2 s more.
    let listen = Duration::from_millis(5500);
    let listeners = [
        (shared.clone(), &b"hashblock"[..]),
        (shared, &b""[..]),
        (hashblock_only, &b""[..]),
    ]
    .map(|(endpoint, subscription)| {
        tokio::task::spawn_blocking(move || subscriber(&endpoint, subscription, listen))
    });
    let mut seen = Vec::new();
    for l in listeners {
        seen.push(l.await.unwrap());
    }
    let topics = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert!(
        seen.iter().all(|(_, disconnects)| *disconnects == 0),
        "the publishers answer heartbeats: {seen:?}"
    );
    assert_eq!(
        seen[0].0,
        topics(&["hashblock"]),
        "one block, its topic only"
    );
    assert_eq!(seen[1].0, topics(&["hashblock", "rawblock"]), "every topic");
    assert_eq!(seen[2].0, topics(&["hashblock"]), "hashblock alone there");
    let height: u64 = rpc.call("getblockcount", json!([])).await.unwrap();
    assert_eq!(height, 880_001);
    node.shutdown().await.unwrap();
}

/// ckpool and goPool submit the coinbase without its witness: bitcoind's submitblock fills
/// in the default witness reserved value (32 zero bytes) and accepts the block; the
/// commitment is still checked.
#[tokio::test]
async fn submitblock_fills_in_the_witness_reserved_value_and_checks_the_commitment() {
    let (node, rpc) = start(quiet_network(), false).await;
    let t = gbt(&rpc).await;
    let mut block = block_from_gbt(&t);
    assert!(
        block.txdata.len() > 100,
        "transactions with witnesses to commit to"
    );
    block.txdata[0].input[0].witness = bitcoin::Witness::new();

    // A commitment to other witnesses is refused, reserved value or not.
    let mut wrong = block.clone();
    let out = wrong.txdata[0]
        .output
        .iter_mut()
        .find(|o| {
            o.script_pubkey
                .as_bytes()
                .starts_with(&[0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed])
        })
        .expect("a witness commitment");
    let mut script = out.script_pubkey.to_bytes();
    script[10] ^= 1;
    out.script_pubkey = ScriptBuf::from_bytes(script);
    wrong.header.merkle_root = wrong.compute_merkle_root().unwrap();
    let target = bitcoin::Target::from_compact(wrong.header.bits);
    while wrong.header.validate_pow(target).is_err() {
        wrong.header.nonce += 1;
    }
    let verdict: Value = rpc
        .call(
            "submitblock",
            json!([bitcoin::consensus::encode::serialize_hex(&wrong)]),
        )
        .await
        .unwrap();
    assert_eq!(verdict, json!("bad-witness-merkle-match"));

    let verdict: Value = rpc
        .call(
            "submitblock",
            json!([bitcoin::consensus::encode::serialize_hex(&block)]),
        )
        .await
        .unwrap();
    assert_eq!(
        verdict,
        Value::Null,
        "accepted with the reserved value filled in"
    );
    let best: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    assert_eq!(best, block.block_hash().to_string());
    let stored: String = rpc.call("getblock", json!([best, 0])).await.unwrap();
    let stored: Block = bitcoin::consensus::deserialize(&hex::decode(stored).unwrap()).unwrap();
    assert_eq!(
        stored.txdata[0].input[0].witness.to_vec(),
        vec![vec![0u8; 32]],
        "the block kept carries the reserved value"
    );
    node.shutdown().await.unwrap();
}

/// The calls real pools make that a node without history must still answer: the
/// regtest genesis at height 0 (goPool's check), a header chain linked from it to the
/// tip, blocks below the start as a pruned node answers, and `preciousblock` (ckpool,
/// after each block it finds).
#[tokio::test]
async fn every_height_answers_from_genesis_and_preciousblock_is_served() {
    let (node, rpc) = start(quiet_network(), false).await;
    let hash_at = |h: u64| {
        let rpc = &rpc;
        async move {
            rpc.call::<String>("getblockhash", json!([h]))
                .await
                .unwrap()
        }
    };
    let genesis = bitcoin::constants::genesis_block(bitcoin::Network::Regtest).block_hash();
    assert_eq!(hash_at(0).await, genesis.to_string());
    // Each header names the one below it, across the first full block and deep below.
    for h in [880_000u64, 879_999, 500_000, 1_024, 1] {
        let header: Value = rpc
            .call("getblockheader", json!([hash_at(h).await]))
            .await
            .unwrap();
        assert_eq!(header["height"], json!(h));
        assert_eq!(
            header["previousblockhash"],
            json!(hash_at(h - 1).await),
            "at {h}"
        );
        assert_eq!(header["confirmations"], json!(880_000 - h + 1));
    }
    let below: Value = rpc
        .call("getblockheader", json!([hash_at(879_999).await]))
        .await
        .unwrap();
    assert_eq!(below["nextblockhash"], json!(hash_at(880_000).await));
    let raw: String = rpc
        .call("getblockheader", json!([hash_at(1).await, false]))
        .await
        .unwrap();
    let header: bitcoin::block::Header =
        bitcoin::consensus::deserialize(&hex::decode(raw).unwrap()).unwrap();
    assert_eq!(header.prev_blockhash, genesis);
    let info: Value = rpc.call("getblockchaininfo", json!([])).await.unwrap();
    assert_eq!(info["pruned"], json!(true));
    let err = rpc
        .call::<Value>("getblock", json!([hash_at(500_000).await]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RpcCallError::Rpc { code: -1, message } if message == "Block not available (pruned data)"),
        "{err:?}"
    );

    let tip: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    let verdict: Value = rpc.call("preciousblock", json!([tip])).await.unwrap();
    assert_eq!(verdict, Value::Null);
    let err = rpc
        .call::<Value>("preciousblock", json!([format!("{:064x}", 7)]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RpcCallError::Rpc { code: -5, message } if message == "Block not found"),
        "{err:?}"
    );
    node.shutdown().await.unwrap();
}
