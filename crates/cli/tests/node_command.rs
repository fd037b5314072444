//! `stratum-bench node` as a user runs it: a separate process, spoken to over RPC.

use crate::common;

use crate::common::{exe, start_node};
use bitcoind_rpc::{RpcCallError, RpcClient};
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};

#[tokio::test]
async fn the_node_serves_templates_advances_and_survives_garbage() {
    let (_node, url) = start_node(&["--block-interval", "1s", "--initial-txs", "500"]);
    let rpc = RpcClient::new(&url, "u", "p");

    let info: Value = rpc.call("getblockchaininfo", json!([])).await.unwrap();
    assert_eq!(info["initialblockdownload"], json!(false));
    let t: Value = rpc
        .call("getblocktemplate", json!([{"rules": ["segwit"]}]))
        .await
        .unwrap();
    let best: String = rpc.call("getbestblockhash", json!([])).await.unwrap();
    // A block may land between the two calls; then the template is the older one.
    if t["previousblockhash"] != json!(best) {
        let parent: Value = rpc.call("getblockheader", json!([best])).await.unwrap();
        assert_eq!(t["previousblockhash"], parent["previousblockhash"]);
    }
    for key in [
        "height",
        "coinbasevalue",
        "bits",
        "target",
        "default_witness_commitment",
        "transactions",
    ] {
        assert!(!t[key].is_null(), "getblocktemplate lacks {key}");
    }

    let start_height: u64 = rpc.call("getblockcount", json!([])).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let height: u64 = rpc.call("getblockcount", json!([])).await.unwrap();
        if height > start_height {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no block in 30 s at a 1 s interval"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    match rpc
        .call::<Value>("submitblock", json!(["not a block"]))
        .await
    {
        Err(RpcCallError::Rpc { code: -22, .. }) => {}
        other => panic!("garbage must get RPC error -22, got {other:?}"),
    }
    let _: u64 = rpc
        .call("getblockcount", json!([]))
        .await
        .expect("still answering");
}

#[test]
fn bad_options_name_the_problem() {
    let out = Command::new(exe())
        .args([
            "node",
            "--hashrate-share",
            "2",
            "--rpc-bind",
            "127.0.0.1:0",
            "--no-zmq",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hashrate_share"), "{err}");

    let out = Command::new(exe())
        .args(["node", "--block-interval", "soon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a duration"));
}

/// The SV2 faces from the command line: the Template Provider with a given key (the
/// printed public key is the one a pool must configure) and the Mining IPC socket.
#[test]
fn the_node_serves_a_template_provider_and_mining_ipc() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("node-faces-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let keys = node::tdp::AuthorityKeys::generate();
    let secret = keys.secret.to_string();
    let child = common::node_command(&["--initial-txs", "100", "--tdp-bind", "127.0.0.1:0"])
        .args(["--tdp-secret-key", &secret])
        .arg("--ipc-datadir")
        .arg(&dir)
        .spawn()
        .unwrap();
    let mut node = common::Killed(child);
    let lines: Vec<String> = BufReader::new(node.0.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .take(3)
        .collect();
    let ipc = lines
        .iter()
        .find_map(|l| l.strip_prefix("mining IPC ready: "))
        .expect("the IPC face is announced");
    assert_eq!(std::path::Path::new(ipc), dir.join("regtest/node.sock"));
    assert!(std::os::unix::net::UnixStream::connect(ipc).is_ok());
    let tp = lines
        .iter()
        .find(|l| l.starts_with("template provider ready"))
        .expect("the Template Provider is announced");
    assert!(
        tp.ends_with(&keys.public.to_string()),
        "the printed key is the given key's: {tp}"
    );
    let addr = tp
        .split_whitespace()
        .nth(6)
        .expect("the address")
        .trim_end_matches(',');
    assert!(std::net::TcpStream::connect(addr).is_ok(), "{tp}");
}

#[tokio::test]
async fn a_node_whose_output_is_no_longer_read_serves_on_and_stops_cleanly_on_sigterm() {
    use std::io::{BufRead, BufReader};
    let dir = common::out_dir("node-output-closed");
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("node.jsonl");
    let child = common::node_command(&["--tdp-bind", "127.0.0.1:0", "--block-interval", "1s"])
        .arg("--events")
        .arg(&events)
        .spawn()
        .unwrap();
    let mut node = common::Killed(child);
    // As `stratum-bench node | head -1` does: one line read, then the pipe closed while
    // the node still has lines to write (the Template Provider's, the one on stopping).
    let ready = BufReader::new(node.0.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let url = common::word_after(&ready, "RPC ");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rpc = RpcClient::new(&url, "u", "p");
    let _: u64 = rpc
        .call("getblockcount", json!([]))
        .await
        .expect("still serving");
    let status = common::terminate(&mut node.0);
    assert!(status.success(), "{status:?}");
    let written = std::fs::read_to_string(&events).unwrap();
    let last = written.lines().last().unwrap();
    serde_json::from_str::<Value>(last).expect("the events file ends on a whole record");
}
