//! The Mining IPC face refuses a client of another interface version with a clear error,
//! and serves the right one; as Bitcoin Core v31 it lacks what v32 added, as v32.1 it
//! looks transactions up (v32's submissions are in the harness's IPC tap tests); its waitNext follows Bitcoin Core's rule against scripted
//! arrivals (a new tip at once, the same tip only once fees grew by the threshold); a
//! client whose bytes crash the Cap'n Proto library loses its own connection only.

mod common;

use bitcoin::hashes::Hash;
use bitcoin_capnp_types::init_capnp::init;
use node::ipc::{IpcOptions, MiningClient, MiningInterface};
use node::{MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions};
use std::time::{Duration, Instant};

async fn node_with_ipc(dir: &std::path::Path) -> NodeHandle {
    NodeHandle::start(NodeOptions {
        ipc: Some(IpcOptions {
            data_dir: dir.to_path_buf(),
            interface: MiningInterface::V31,
        }),
        ..common::loopback(NodeConfig {
            scripted_arrivals: Some(Vec::new()),
            ..NodeConfig::default()
        })
    })
    .await
    .unwrap()
}

/// Connects to the face as a capnp client and returns its Init capability.
async fn connect(socket: &std::path::Path) -> init::Client {
    node::ipc::connect(socket).await.unwrap()
}

#[tokio::test]
async fn a_client_of_interface_30_is_told_which_version_is_served() {
    let dir = std::env::temp_dir().join(format!("sb-ipc-{}", std::process::id()));
    let node = node_with_ipc(&dir).await;
    let socket = node.ipc.as_ref().unwrap().socket.clone();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let init = connect(&socket).await;
            let old = init.make_mining_old2_request().send().promise.await;
            let error = old.err().expect("version 30's makeMining is refused");
            assert!(
                error.to_string().contains(node::ipc::UNSUPPORTED_VERSION),
                "{error}"
            );
            // Without a thread of the client's, makeMining is refused, as Core refuses it.
            let threadless = init.make_mining_request().send().promise.await;
            let error = threadless
                .err()
                .expect("a call without a thread is refused");
            assert!(
                error.to_string().contains("invalid thread handle"),
                "{error}"
            );
            // The same connection still serves version 31, asked for as SRI asks.
            let mining = node::ipc::mining_client(&init).await;
            assert!(mining.is_ok(), "version 31's makeMining is served");
        })
        .await;
    node.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bytes the `node_ipc_connection` fuzz target found: a `Return` for a question the node
/// never asked, on which capnp-rpc 0.25 indexes past its question table and panics (fixed
/// upstream in 0.27; bitcoin-capnp-types 0.3.0 pins 0.25). The panic ends that
/// connection's task; the face serves the next client.
#[tokio::test]
async fn a_connection_that_crashes_the_capnp_library_ends_alone() {
    let dir = std::env::temp_dir().join(format!("sb-ipc-crash-{}", std::process::id()));
    let node = node_with_ipc(&dir).await;
    let socket = node.ipc.as_ref().unwrap().socket.clone();
    let crash = include_bytes!("fixtures/ipc_return_to_unknown_question.bin");
    let mut hostile = tokio::net::UnixStream::connect(&socket).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut hostile, crash)
        .await
        .unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_end(&mut hostile, &mut rest),
    )
    .await;
    assert!(closed.is_ok(), "the crashing connection is closed");
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let init = connect(&socket).await;
            let mining = node::ipc::mining_client(&init).await;
            assert!(mining.is_ok(), "the next client is served");
        })
        .await;
    node.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The previous block hash in a template's header, as a pool reads it.
async fn prev_hash(
    mining: &MiningClient,
    template: &bitcoin_capnp_types::mining_capnp::block_template::Client,
) -> Vec<u8> {
    let mut request = template.get_block_header_request();
    request
        .get()
        .get_context()
        .unwrap()
        .set_thread(mining.thread.clone());
    let reply = request.send().promise.await.unwrap();
    reply.get().unwrap().get_result().unwrap()[4..36].to_vec()
}

/// waitNext on `template` with Bitcoin Core's options; `None` when it answered with no
/// template (timeout), with how long it took.
async fn wait_next(
    mining: &MiningClient,
    template: &bitcoin_capnp_types::mining_capnp::block_template::Client,
    timeout_ms: f64,
    fee_threshold: i64,
) -> (
    Option<bitcoin_capnp_types::mining_capnp::block_template::Client>,
    Duration,
) {
    let t = Instant::now();
    let next = mining.wait_next(template, timeout_ms, fee_threshold).await;
    (next.unwrap(), t.elapsed())
}

const MAX_MONEY: i64 = node::ipc::MAX_MONEY;

#[tokio::test]
async fn wait_next_answers_a_new_tip_at_once_and_the_same_tip_by_its_fee_threshold() {
    let dir = std::env::temp_dir().join(format!("sb-ipc-wait-{}", std::process::id()));
    // Mainnet arrivals keep the mempool moving; the network's block comes at 3 s.
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = 300;
    let started = Instant::now();
    let node = NodeHandle::start(NodeOptions {
        ipc: Some(IpcOptions {
            data_dir: dir.clone(),
            interface: MiningInterface::V31,
        }),
        ..common::loopback(NodeConfig {
            block_interval: Duration::from_secs(100_000),
            scripted_arrivals: Some(vec![Duration::from_secs(3)]),
            mempool,
            ..NodeConfig::default()
        })
    })
    .await
    .unwrap();
    let socket = node.ipc.as_ref().unwrap().socket.clone();
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let init = connect(&socket).await;
            let mining = node::ipc::mining_client(&init).await.unwrap();
            let first = mining.new_template().await.unwrap();
            let first_prev = prev_hash(&mining, &first).await;

            // Same tip, a threshold no mempool reaches: nothing until the timeout.
            let (none, took) = wait_next(&mining, &first, 500.0, MAX_MONEY).await;
            assert!(none.is_none(), "no new tip and no fees that high");
            assert!(
                took >= Duration::from_millis(450) && took < Duration::from_millis(1_500),
                "answered after {took:?}, not at its 500 ms timeout"
            );

            // Same tip, threshold 0: the mempool moved, so a newer template within a poll.
            let (fresher, took) = wait_next(&mining, &first, 10_000.0, 0).await;
            let fresher = fresher.expect("a same-tip template once the mempool moved");
            assert_eq!(prev_hash(&mining, &fresher).await, first_prev, "same tip");
            assert!(took < Duration::from_millis(1_500), "{took:?}");

            // Only a new tip answers (the default threshold), and at once: the block at 3 s.
            let (next, _) = wait_next(&mining, &fresher, 10_000.0, MAX_MONEY).await;
            let at = started.elapsed();
            let next = next.expect("the new tip's template");
            assert_ne!(
                prev_hash(&mining, &next).await,
                first_prev,
                "built on the new tip"
            );
            assert!(
                at >= Duration::from_millis(2_900) && at < Duration::from_millis(4_500),
                "the new tip's template {at:?} after start, the block came at 3 s"
            );
        })
        .await;
    node.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A node serving `interface`, its mempool filled from the mainnet preset (so there are
/// transactions to look up), no network blocks; the interface a run would find on it is
/// checked first. Its directory, the node, and a Mining client on a local task set run
/// `body`.
async fn on_face<F, Fut>(tag: &str, interface: MiningInterface, body: F)
where
    F: FnOnce(MiningClient) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = std::env::temp_dir().join(format!("sb-ipc-{tag}-{}", std::process::id()));
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = 50;
    let node = NodeHandle::start(NodeOptions {
        ipc: Some(IpcOptions {
            data_dir: dir.clone(),
            interface,
        }),
        ..common::loopback(NodeConfig {
            scripted_arrivals: Some(Vec::new()),
            mempool,
            ..NodeConfig::default()
        })
    })
    .await
    .unwrap();
    let socket = node.ipc.as_ref().unwrap().socket.clone();
    let check = socket.clone();
    let served = tokio::task::spawn_blocking(move || node::ipc::check_served(&check));
    assert_eq!(
        served.await.unwrap().unwrap(),
        interface,
        "as a run finds it"
    );
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async move {
            let init = connect(&socket).await;
            body(node::ipc::mining_client(&init).await.unwrap()).await
        })
        .await;
    node.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bitcoin Core v31 has none of what v32 added: a v32 client's calls are answered as
/// Cap'n Proto answers a method the server lacks; the v31 submitSolution takes a block,
/// and answers as Core's ProcessNewBlock does: true for a block processed, Core's
/// interface says, "independent of block validity" (one already known, one whose parent
/// is no longer the tip, one found invalid only on connecting), false for a block Core
/// refuses before storing it.
#[tokio::test]
async fn a_v31_face_lacks_what_v32_added_and_takes_the_v31_submit_solution() {
    on_face("v31", MiningInterface::V31, |mining| async move {
        // As Core refuses it, a call that names no thread of the client's.
        let threadless = mining.mining.get_tip_request().send().promise.await;
        let Err(error) = threadless else {
            panic!("a call without a thread is refused")
        };
        assert!(error.to_string().contains(node::ipc::NO_THREAD), "{error}");
        let mut lookup = mining.mining.get_transactions_by_tx_i_d_request();
        lookup
            .get()
            .get_context()
            .unwrap()
            .set_thread(mining.thread.clone());
        let lookup = lookup.send().promise.await;
        let error = lookup.err().expect("v31 has no getTransactionsByTxID");
        assert!(
            error.to_string().contains("Method not implemented."),
            "{error}"
        );
        let template = mining.new_template().await.unwrap();
        let block = mining.mine(&template).await.unwrap();
        let v32 = mining
            .submit_solution(&template, &block, MiningInterface::V32)
            .await;
        let error = v32.expect_err("v31 has no submitSolution @10");
        assert!(
            error.to_string().contains("Method not implemented."),
            "{error}"
        );
        let v31 = mining
            .submit_solution(&template, &block, MiningInterface::V31)
            .await;
        assert_eq!(
            v31.unwrap(),
            (true, String::new()),
            "the v31 submitSolution takes it"
        );
        let submit = |block: bitcoin::Block| {
            let (mining, template) = (&mining, &template);
            async move {
                let answer = mining.submit_solution(template, &block, MiningInterface::V31);
                answer.await.unwrap().0
            }
        };
        assert!(submit(block.clone()).await, "a block already known: true");
        let mut rival = block.clone();
        rival.header.nonce = rival.header.nonce.wrapping_add(1);
        node::ipc::grind(&mut rival.header);
        assert!(
            submit(rival.clone()).await,
            "a valid block on the tip's parent, stored beside it: true"
        );
        let target = bitcoin::Target::from_compact(block.header.bits);
        let mut short = rival;
        while short.header.validate_pow(target).is_ok() {
            short.header.nonce = short.header.nonce.wrapping_add(1);
        }
        assert!(!submit(short).await, "a block short of its target: false");
        // On the new tip, a coinbase claiming a sat too many: ConnectBlock refuses it,
        // after Core stored it, and ProcessNewBlock answers true.
        let next = mining.new_template().await.unwrap();
        let mut greedy = mining.mine(&next).await.unwrap();
        greedy.txdata[0].output[0].value += bitcoin::Amount::from_sat(1);
        greedy.header.merkle_root = greedy.compute_merkle_root().unwrap();
        node::ipc::grind(&mut greedy.header);
        let answer = mining.submit_solution(&next, &greedy, MiningInterface::V31);
        assert!(
            answer.await.unwrap().0,
            "a coinbase claiming too much: true"
        );
        assert_eq!(
            prev_hash(&mining, &mining.new_template().await.unwrap()).await,
            block.block_hash().as_byte_array().to_vec(),
            "the tip is still the block taken"
        );
    })
    .await;
}

/// Bitcoin Core v32.1's lookups: the mempool's transactions by txid and by wtxid, in the
/// order asked, an empty entry for one it does not hold.
#[tokio::test]
async fn a_v32_face_looks_transactions_up_by_txid_and_wtxid() {
    on_face("v32", MiningInterface::V32, |mining| async move {
        let block = mining
            .mine(&mining.new_template().await.unwrap())
            .await
            .unwrap();
        // The last: the first after the coinbase is the node's marker for this client, in
        // no mempool.
        assert!(
            block.txdata.len() > 2,
            "a template with mempool transactions"
        );
        let tx = block.txdata.last().unwrap();
        let absent = [7u8; 32];

        let mut by_txid = mining.mining.get_transactions_by_tx_i_d_request();
        by_txid
            .get()
            .get_context()
            .unwrap()
            .set_thread(mining.thread.clone());
        let mut ids = by_txid.get().init_txids(2);
        ids.set(0, &absent);
        ids.set(1, tx.compute_txid().as_byte_array());
        let reply = by_txid.send().promise.await.unwrap();
        let found = reply.get().unwrap().get_result().unwrap();
        assert_eq!(found.len(), 2);
        assert!(
            found.get(0).unwrap().is_empty(),
            "not in the mempool: empty"
        );
        assert_eq!(found.get(1).unwrap(), bitcoin::consensus::serialize(tx));

        let mut by_wtxid = mining.mining.get_transactions_by_witness_i_d_request();
        by_wtxid
            .get()
            .get_context()
            .unwrap()
            .set_thread(mining.thread.clone());
        let mut ids = by_wtxid.get().init_wtxids(2);
        ids.set(0, tx.compute_wtxid().as_byte_array());
        ids.set(1, &absent);
        let reply = by_wtxid.send().promise.await.unwrap();
        let found = reply.get().unwrap().get_result().unwrap();
        assert_eq!(found.get(0).unwrap(), bitcoin::consensus::serialize(tx));
        assert!(found.get(1).unwrap().is_empty());

        let mut short = mining.mining.get_transactions_by_tx_i_d_request();
        short
            .get()
            .get_context()
            .unwrap()
            .set_thread(mining.thread.clone());
        short.get().init_txids(1).set(0, &[1, 2, 3]);
        let error = short.send().promise.await.err().expect("a txid of 3 bytes");
        assert!(error.to_string().contains("32 bytes"), "{error}");
    })
    .await;
}
