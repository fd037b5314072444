//! A follower node (a farm's own node) that missed its peer's blocks, as a ZMQ subscriber
//! does before its subscription reaches the publisher, fetches them and follows the tip.

mod common;

use node::peer::PeerOptions;
use node::{Follower, NodeConfig, NodeHandle, NodeOptions};
use std::time::{Duration, Instant};

/// Both nodes share their base block, as the harness makes them (its time is in it).
const TIME_BASE: u32 = 1_700_000_000;

async fn best(node: &NodeHandle) -> String {
    bitcoind_rpc::RpcClient::new(&format!("http://{}", node.rpc_addr), "u", "p")
        .call("getbestblockhash", serde_json::json!([]))
        .await
        .unwrap()
}

/// Polls until both nodes have the same tip (within `limit`).
async fn same_tip(a: &NodeHandle, b: &NodeHandle, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if best(a).await == best(b).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_follower_fetches_the_blocks_it_missed_and_follows_the_tip() {
    // Two blocks before the follower exists, one after.
    let network = NodeHandle::start(NodeOptions {
        zmq_bind: Some("tcp://127.0.0.1:0".into()),
        zmq_hashblock_bind: None,
        ..common::loopback(NodeConfig {
            block_interval: Duration::from_secs(100_000),
            time_base: Some(TIME_BASE),
            scripted_arrivals: Some(vec![
                Duration::from_millis(200),
                Duration::from_millis(400),
                Duration::from_millis(2_500),
            ]),
            ..NodeConfig::default()
        })
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let before = best(&network).await;

    let follower = NodeHandle::start(NodeOptions {
        peer: Some(PeerOptions {
            rpc_url: format!("http://{}", network.rpc_addr),
            rpc_user: "u".into(),
            rpc_password: "p".into(),
            zmq: network.zmq_endpoint.clone().unwrap(),
            // Asked of the peer, as a deployment's farm node does.
            start_mono_ns: None,
        }),
        ..common::loopback(NodeConfig {
            block_interval: Duration::from_secs(100_000),
            time_base: Some(TIME_BASE),
            scripted_arrivals: Some(Vec::new()),
            follower: Some(Follower {
                overlap: 1.0,
                tx_delay: Duration::ZERO,
                template_ids_from: node::config::FOLLOWER_TEMPLATE_IDS,
                block_lag: model::lag::BlockLag::Fixed(0.0),
            }),
            ..NodeConfig::default()
        })
    })
    .await
    .unwrap();
    assert_eq!(
        follower.start_mono_ns(),
        network.start_mono_ns(),
        "one virtual clock"
    );
    // The two blocks published before it subscribed: fetched at subscription.
    assert!(
        same_tip(&network, &follower, Duration::from_secs(2)).await,
        "the follower never caught up with {before}"
    );
    assert_eq!(best(&follower).await, before);
    // The block at 2.5 s arrives by ZMQ and extends the tip.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    assert_ne!(best(&network).await, before, "the scripted block came");
    assert!(same_tip(&network, &follower, Duration::from_secs(2)).await);
    follower.shutdown().await.unwrap();
    network.shutdown().await.unwrap();
}
