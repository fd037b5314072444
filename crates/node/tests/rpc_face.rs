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
    assert_eq!(err(rpc.call("getblockhash", json!([5])).await).0, -8);
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

    let intruder = RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "wrong");
    assert!(matches!(
        intruder.call::<Value>("getblockcount", json!([])).await,
        Err(RpcCallError::Unauthorized)
    ));
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
async fn height_advances_and_zmq_hashblock_and_longpoll_follow_the_tip() {
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
