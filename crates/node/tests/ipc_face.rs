//! The Mining IPC face refuses a client of another interface version with a clear error,
//! and serves the right one; its waitNext follows Bitcoin Core's rule against scripted
//! arrivals (a new tip at once, the same tip only once fees grew by the threshold); a
//! client whose bytes crash the Cap'n Proto library loses its own connection only.

mod common;

use bitcoin_capnp_types::init_capnp::init;
use node::{MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions};
use std::time::{Duration, Instant};

async fn node_with_ipc(dir: &std::path::Path) -> NodeHandle {
    NodeHandle::start(NodeOptions {
        ipc_data_dir: Some(dir.to_path_buf()),
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
/// upstream in 0.27; bitcoin-capnp-types 0.2.1 pins 0.25). The panic ends that
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
    template: &bitcoin_capnp_types::mining_capnp::block_template::Client,
) -> Vec<u8> {
    let reply = template
        .get_block_header_request()
        .send()
        .promise
        .await
        .unwrap();
    reply.get().unwrap().get_result().unwrap()[4..36].to_vec()
}

/// waitNext on `template` with Bitcoin Core's options; `None` when it answered with no
/// template (timeout), with how long it took.
async fn wait_next(
    template: &bitcoin_capnp_types::mining_capnp::block_template::Client,
    timeout_ms: f64,
    fee_threshold: i64,
) -> (
    Option<bitcoin_capnp_types::mining_capnp::block_template::Client>,
    Duration,
) {
    let t = Instant::now();
    let mut request = template.wait_next_request();
    let mut options = request.get().init_options();
    options.set_timeout(timeout_ms);
    options.set_fee_threshold(fee_threshold);
    let reply = request.send().promise.await.unwrap();
    let r = reply.get().unwrap();
    (r.has_result().then(|| r.get_result().unwrap()), t.elapsed())
}

/// Bitcoin Core's default fee threshold: only a new tip answers.
const MAX_MONEY: i64 = 21_000_000 * 100_000_000;

#[tokio::test]
async fn wait_next_answers_a_new_tip_at_once_and_the_same_tip_by_its_fee_threshold() {
    let dir = std::env::temp_dir().join(format!("sb-ipc-wait-{}", std::process::id()));
    // Mainnet arrivals keep the mempool moving; the network's block comes at 3 s.
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = 300;
    let started = Instant::now();
    let node = NodeHandle::start(NodeOptions {
        ipc_data_dir: Some(dir.clone()),
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
            let reply = mining
                .create_new_block_request()
                .send()
                .promise
                .await
                .unwrap();
            let first = reply.get().unwrap().get_result().unwrap();
            let first_prev = prev_hash(&first).await;

            // Same tip, a threshold no mempool reaches: nothing until the timeout.
            let (none, took) = wait_next(&first, 500.0, MAX_MONEY).await;
            assert!(none.is_none(), "no new tip and no fees that high");
            assert!(
                took >= Duration::from_millis(450) && took < Duration::from_millis(1_500),
                "answered after {took:?}, not at its 500 ms timeout"
            );

            // Same tip, threshold 0: the mempool moved, so a newer template within a poll.
            let (fresher, took) = wait_next(&first, 10_000.0, 0).await;
            let fresher = fresher.expect("a same-tip template once the mempool moved");
            assert_eq!(prev_hash(&fresher).await, first_prev, "same tip");
            assert!(took < Duration::from_millis(1_500), "{took:?}");

            // Only a new tip answers (the default threshold), and at once: the block at 3 s.
            let (next, _) = wait_next(&fresher, 10_000.0, MAX_MONEY).await;
            let at = started.elapsed();
            let next = next.expect("the new tip's template");
            assert_ne!(prev_hash(&next).await, first_prev, "built on the new tip");
            assert!(
                at >= Duration::from_millis(2_900) && at < Duration::from_millis(4_500),
                "the new tip's template {at:?} after start, the block came at 3 s"
            );
        })
        .await;
    node.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
