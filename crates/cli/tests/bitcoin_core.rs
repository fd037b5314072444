//! A real Bitcoin Core (`bitcoin-node`, built with scripts/build-bitcoin-core.sh) held
//! against our node, when the machine has one: `STRATUM_BENCH_BITCOIN_NODE=/path/to/
//! bitcoin-node`; `make test-core` builds one and runs them, and `make test` leaves them
//! out and says so (run without the variable, they fail naming it). The template bench measures it
//! as it measures our node; over its Mining IPC, through the IPC tap, a block of ours is
//! taken by Core and recorded so; a run on a Core it starts has its SV1, C and D sides
//! mine, the network's blocks come when due, and Core takes our miners' blocks; and a
//! program that is not Core is refused, naming it.

use crate::common;

use std::path::PathBuf;

/// The Core under test. A test that needs it never passes without it: `make test` leaves
/// these tests out by its filter and counts them as skipped.
fn bitcoin_node() -> PathBuf {
    let path = std::env::var("STRATUM_BENCH_BITCOIN_NODE").expect(
        "STRATUM_BENCH_BITCOIN_NODE names a bitcoin-node (make test-core builds one and sets it)",
    );
    PathBuf::from(path)
}

#[test]
fn the_template_bench_measures_core_as_it_measures_our_node() {
    let core = bitcoin_node();
    let (stdout, report) = common::bench(
        "template-core",
        &[
            "template",
            "--bitcoin-node",
            core.to_str().unwrap(),
            "--mempool",
            "300",
            "--iterations",
            "5",
        ],
        "template-bench.json",
    );
    assert!(
        report["node"]
            .as_str()
            .unwrap()
            .starts_with("Bitcoin Core v"),
        "{report}"
    );
    let mempool = &report["mempools"][0];
    assert_eq!(mempool["mempool_txs"], 300);
    // Every transaction of ours pays at least 1 sat/vB and all fit one block: the first
    // template holds the 300 and the one that made it fresh.
    assert_eq!(mempool["template_txs"], 301, "{mempool}");
    for name in [
        "getblocktemplate fresh",
        "getblocktemplate cached",
        "IPC createNewBlock fresh",
        "IPC waitNext after a block",
    ] {
        let cases = mempool["cases"].as_array().unwrap();
        let case = (cases.iter())
            .find(|c| c["name"].as_str().unwrap().starts_with(name))
            .unwrap_or_else(|| panic!("no case {name:?} in {mempool}"));
        assert_eq!(case["latency_ms"]["count"], 5, "{name}");
        assert!(case["latency_ms"]["p50"].as_f64().unwrap() > 0.0, "{name}");
        assert!(stdout.contains(&format!("| {name}")), "{stdout}");
    }
    // getblocktemplatelight is BCHN's and ours, not Core's: not a case, not an error.
    let names: Vec<&str> = (mempool["cases"].as_array().unwrap().iter())
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.contains("light")), "{names:?}");
}

/// Over Core's Mining IPC through the tap: Core takes a block of ours submitted with the
/// submitSolution it has (v31's @7, which the pinned SRI roles call, or v32.1's @10) and
/// one submitted whole (v32's submitBlock, where it has it), and the tap records each as
/// taken (after v31's bare answer, by asking Core's RPC where the block went).
#[tokio::test]
async fn core_takes_our_blocks_over_mining_ipc_and_the_tap_records_them() {
    let program = bitcoin_node();
    let dir = common::out_dir("core-ipc");
    let password = core_node::fresh_password();
    let core = core_node::CoreNode::start(
        &program,
        &dir.join("core"),
        core_node::Chain::Regtest,
        &password,
    )
    .await
    .unwrap();
    // Out of initial block download, as a pool's node is.
    core_node::funds::Funds::mine_and_split(&core, 1, 1)
        .await
        .unwrap();
    let before = height(&core).await;
    // How Core takes solutions: @10 from v32.1 on, @7 before (the 31.99 built from the
    // Rust registry's tree, with v32's submitBlock and lookups, still takes @7).
    let check = core.ipc_socket.clone();
    let served = tokio::task::spawn_blocking(move || node::ipc::check_served(&check));
    let interface = served.await.unwrap().unwrap();

    let events = dir.join("tap.jsonl");
    let recorder = probe::Recorder::to_file(&events, "node-tap").unwrap();
    let tap = harness::ipc_tap::IpcTap::start(
        harness::ipc_tap::IpcTapConfig {
            node_socket: core.ipc_socket.clone(),
            data_dir: dir.join("tap"),
            subdir: "regtest".into(),
        },
        recorder.clone(),
        Default::default(),
        Some(std::sync::Arc::new(bitcoind_rpc::RpcClient::new(
            &core.rpc_url,
            core_node::RPC_USER,
            &password,
        ))),
    )
    .await
    .unwrap();
    let socket = tap.socket.clone();
    let local = tokio::task::LocalSet::new();
    let ours = local
        .run_until(async move {
            let init = node::ipc::connect(&socket).await.unwrap();
            let mining = node::ipc::mining_client(&init).await.unwrap();
            let (template, first) = mining.mined_as_a_pool().await.unwrap();
            let taken = mining.submit_solution(&template, &first, interface).await;
            assert_eq!(
                taken.unwrap(),
                (true, String::new()),
                "with {interface}'s submitSolution"
            );
            // A whole block, where Core has v32's submitBlock (31.99 and v32.1 do).
            let next = mining.new_template().await.unwrap();
            let second = mining.mine(&next).await.unwrap();
            match mining.submit_block(&second).await {
                Ok(taken) => {
                    assert_eq!(taken, (true, String::new()), "submitBlock");
                    vec![first, second]
                }
                Err(e) if e.kind == bitcoin_capnp_types::capnp::ErrorKind::Unimplemented => {
                    eprintln!("this Core has no submitBlock (v31): one block submitted");
                    vec![first]
                }
                Err(e) => panic!("submitBlock: {e}"),
            }
        })
        .await;
    let tip = ours.last().unwrap().block_hash().to_string();
    assert_eq!(
        height(&core).await,
        before + ours.len() as u64,
        "on Core's chain"
    );
    let best: String = core
        .call("getbestblockhash", serde_json::json!([]))
        .await
        .unwrap();
    assert_eq!(best, tip);
    tap.settle().await;
    recorder.close().unwrap();
    drop(tap);
    // Sorted, not in submission order: the tap settles v31's answers by asking Core's RPC
    // where each block went, and those questions may finish in either order (both runs of
    // the ordered comparison against a Core built from libbitcoinkernel-sys 0.4.1 recorded
    // the two the other way). A block recorded twice, or not at all, still fails.
    let mut submitted =
        harness::ipc_tap::submissions(probe::recorder::read_events(&events).unwrap());
    submitted.sort();
    let mut expected: Vec<_> = (ours.iter())
        .map(|b| (b.block_hash().to_string(), None))
        .collect();
    expected.sort();
    assert_eq!(
        submitted, expected,
        "each block once, as the tap read it, with Core's answer"
    );
    core.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

async fn height(core: &core_node::CoreNode) -> u64 {
    core.call("getblockcount", serde_json::json!([]))
        .await
        .unwrap()
}

/// `scenarios/bitcoin-core.toml` on the Core under test, shortened: 60 s measured of 5 s
/// blocks, half of them ours (6 expected; none at all has odds of e^-6, 0.25%).
#[test]
fn sv1_c_and_d_sides_mine_on_a_core_the_run_starts() {
    let program = bitcoin_node();
    let (dir, s) = common::run_to_summary(
        "bitcoin-core",
        "on-core",
        &[
            "--set",
            &format!("node.program={}", program.display()),
            "--duration",
            "60s",
            "--set",
            "warmup=10s",
            "--set",
            "network.block_interval=5s",
            "--set",
            "network.hashrate_share=0.5",
        ],
    );
    let mut ours = 0;
    for side in ["sv1", "sv2-c", "sv2-d"] {
        let x = &s["sides"][side];
        assert!(x["shares"]["accepted"].as_u64().unwrap() > 0, "{side}: {x}");
        ours += x["blocks"]["accepted"].as_u64().unwrap();
    }
    assert!(
        ours >= 1,
        "Core took no block of our miners: {}",
        s["sides"]
    );
    // The rest of the network's blocks: ground ahead, each taken by Core close to its
    // Poisson time (late only when our miners' block had just moved the tip), and each
    // seen by the tap as the node's new tip.
    let sent: Vec<_> = (common::events(&dir, "node").into_iter())
        .filter(|e| e["kind"] == "network_block_sent")
        .collect();
    assert!(
        (2..=25).contains(&sent.len()),
        "{} network blocks",
        sent.len()
    );
    assert!(sent.iter().all(|e| e["accepted"] == true), "{sent:?}");
    let mut late_ms: Vec<f64> = (sent.iter())
        .map(|e| common::num(&e["late_ns"]) / 1e6)
        .collect();
    late_ms.sort_by(f64::total_cmp);
    assert!(late_ms[late_ms.len() / 2] < 50.0, "lateness {late_ms:?} ms");
    let tips: Vec<String> = (common::events(&dir, "node-tap").into_iter())
        .filter(|e| e["kind"] == "tip_changed" && e["cause"] == "network")
        .map(|e| e["hash"].as_str().unwrap().to_string())
        .collect();
    let unseen = (sent.iter())
        .filter(|e| !tips.iter().any(|t| e["hash"] == t.as_str()))
        .count();
    // Two blocks within one waitfornewblock answer show the tap only the second.
    assert!(
        unseen <= 1,
        "{unseen} of {} network blocks not seen as tips",
        sent.len()
    );
}

#[test]
fn a_program_that_is_not_bitcoin_core_is_refused_naming_it() {
    let said = common::bench_fails(&["template", "--bitcoin-node", "/bin/true"]);
    assert!(
        said.contains("/bin/true is not Bitcoin Core's bitcoin-node"),
        "{said}"
    );
    let said = common::bench_fails(&["template", "--bitcoin-node", "/nowhere/bitcoin-node"]);
    assert!(said.contains("cannot run /nowhere/bitcoin-node"), "{said}");
    // A run names the scenario field, and its node role's log says what happened.
    let out = common::out_dir("not-core");
    let run = common::run_scenario("bitcoin-core", &out, &["--set", "node.program=/bin/true"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        said.contains(
            "scenario field `node.program`: /bin/true is not Bitcoin Core's bitcoin-node"
        ),
        "{said}"
    );
    let said = common::run_scenario("bitcoin-core", &out, &["--set", "node.program=/nowhere"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&said.stderr);
    assert!(
        said.contains("scenario field `node.program`: /nowhere is not a file"),
        "{said}"
    );
}
