//! `stratum-bench node` as a user runs it: a separate process, spoken to over RPC.

use bitcoind_rpc::{RpcCallError, RpcClient};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary on an ephemeral port and reads the RPC address it announces.
fn start(args: &[&str]) -> (Node, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_stratum-bench"))
        .args([
            "node",
            "--rpc-bind",
            "127.0.0.1:0",
            "--rpc-user",
            "u",
            "--rpc-password",
            "p",
        ])
        .args(["--zmq-bind", "tcp://127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let line = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("node ready"))
        .expect("the node announces itself");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the announcement names the RPC address")
        .to_string();
    (Node(child), url)
}

#[tokio::test]
async fn the_node_serves_templates_advances_and_survives_garbage() {
    let (_node, url) = start(&["--block-interval", "1s", "--initial-txs", "500"]);
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
    let out = Command::new(env!("CARGO_BIN_EXE_stratum-bench"))
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

    let out = Command::new(env!("CARGO_BIN_EXE_stratum-bench"))
        .args(["node", "--block-interval", "soon"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a duration"));
}
