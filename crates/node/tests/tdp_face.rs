//! The node as an SV2 Template Provider, seen from a TDP client over Noise: the message
//! sequence a pool relies on, a solution mined from NewTemplate alone, and bad input.

mod common;

use bitcoin::hashes::Hash;
use bitcoin::{Block, BlockHash, CompactTarget, Target, TxMerkleNode};
use node::tdp::TdpOptions;
use node::tdp_client::TdpClient;
use node::{MempoolConfig, MempoolPreset, NodeConfig, NodeHandle, NodeOptions};
use std::net::SocketAddr;
use std::time::Duration;
use stratum_apps::network_helpers::connect_with_noise;
use stratum_apps::stratum_core::binary_sv2::B064KOwned;
use stratum_apps::stratum_core::channels_sv2::outputs::deserialize_template_outputs;
use stratum_apps::stratum_core::common_messages_sv2::Protocol;
use stratum_apps::stratum_core::parsers_sv2::{AnyMessageOwned, TemplateDistributionOwned};
use stratum_apps::stratum_core::template_distribution_sv2::{
    NewTemplateOwned, RequestTransactionDataOwned, SetNewPrevHashOwned, SubmitSolutionOwned,
};
use sv2_wire::AuthorityKeys;
use tokio::io::AsyncWriteExt;

async fn start() -> (NodeHandle, SocketAddr, AuthorityKeys) {
    start_with(Duration::from_secs(30), None).await
}

/// A node whose Template Provider refreshes every `interval`; network blocks only at
/// `arrivals` (after start), when given.
async fn start_with(
    interval: Duration,
    arrivals: Option<Vec<Duration>>,
) -> (NodeHandle, SocketAddr, AuthorityKeys) {
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = 300;
    let keys = AuthorityKeys::generate();
    let config = NodeConfig {
        block_interval: Duration::from_secs(100_000),
        scripted_arrivals: arrivals,
        mempool,
        ..NodeConfig::default()
    };
    let node = NodeHandle::start(NodeOptions {
        tdp: Some(TdpOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            keys: keys.clone(),
            interval,
            fee_threshold_sats: 0,
        }),
        ..common::loopback(config)
    })
    .await
    .expect("node starts");
    let addr = node.tdp_addr.expect("TDP face");
    (node, addr, keys)
}

/// A coinbase and header for `t`, paying its whole value; the nonce is searched until the
/// header meets `p`'s target, as a miner would.
fn solve(t: &NewTemplateOwned, p: &SetNewPrevHashOwned) -> SubmitSolutionOwned {
    let mut script_sig = t.coinbase_prefix.as_ref().to_vec();
    script_sig.extend_from_slice(&[4, 1, 2, 3, 4]); // an extranonce push
    let mut outputs = vec![bitcoin::TxOut {
        value: bitcoin::Amount::from_sat(t.coinbase_tx_value_remaining),
        script_pubkey: bitcoin::ScriptBuf::new_p2wsh(&bitcoin::WScriptHash::hash(&[0x51])),
    }];
    outputs.extend(
        deserialize_template_outputs(
            t.coinbase_tx_outputs.as_ref().to_vec(),
            t.coinbase_tx_outputs_count,
        )
        .unwrap(),
    );
    let coinbase = bitcoin::Transaction {
        version: bitcoin::transaction::Version::non_standard(t.coinbase_tx_version as i32),
        lock_time: bitcoin::absolute::LockTime::from_consensus(t.coinbase_tx_locktime),
        input: vec![bitcoin::TxIn {
            previous_output: bitcoin::OutPoint::null(),
            script_sig: script_sig.into(),
            sequence: bitcoin::Sequence(t.coinbase_tx_input_sequence),
            witness: bitcoin::Witness::from(vec![vec![0u8; 32]]),
        }],
        output: outputs,
    };
    let path: Vec<TxMerkleNode> = t
        .merkle_path
        .iter()
        .map(|n| TxMerkleNode::from_byte_array(n.as_ref().try_into().unwrap()))
        .collect();
    let root =
        node::template::merkle_root_from_branch(coinbase.compute_txid().to_raw_hash(), &path);
    let target = Target::from_le_bytes(p.target.as_ref().try_into().unwrap());
    let mut header = bitcoin::block::Header {
        version: bitcoin::block::Version::from_consensus(t.version as i32),
        prev_blockhash: BlockHash::from_byte_array(p.prev_hash.as_ref().try_into().unwrap()),
        merkle_root: root,
        time: p.header_timestamp,
        bits: CompactTarget::from_consensus(p.n_bits),
        nonce: 0,
    };
    while !target.is_met_by(header.block_hash()) {
        header.nonce += 1;
    }
    SubmitSolutionOwned {
        template_id: t.template_id,
        version: t.version,
        header_timestamp: header.time,
        header_nonce: header.nonce,
        coinbase_tx: B064KOwned::try_from(bitcoin::consensus::serialize(&coinbase)).unwrap(),
    }
}

#[tokio::test]
async fn a_pool_gets_templates_and_its_solution_becomes_the_tip() {
    let (node, addr, keys) = start().await;
    let mut c = TdpClient::connect(addr, keys.public).await.unwrap();
    c.setup(Protocol::TemplateDistributionProtocol)
        .await
        .unwrap();
    c.constraints(100).await.unwrap();
    let (t, p) = c.new_tip().await.unwrap();
    let template = node
        .state()
        .recent_template(t.template_id)
        .expect("the node keeps the templates it handed out");
    assert_eq!(p.prev_hash.as_ref(), template.prev_hash.as_byte_array());
    assert_eq!(t.coinbase_tx_value_remaining, template.value());
    assert_eq!(
        t.merkle_path.as_slice()[0].as_ref(),
        template.marker_txid().as_byte_array(),
        "the marker is the first merkle path entry, as in getblocktemplate"
    );

    // The transactions behind the template, for a JDC.
    c.send(AnyMessageOwned::TemplateDistribution(
        TemplateDistributionOwned::RequestTransactionData(RequestTransactionDataOwned {
            template_id: t.template_id,
        }),
    ))
    .await
    .unwrap();
    match c.next().await.unwrap() {
        TemplateDistributionOwned::RequestTransactionDataSuccess(d) => {
            assert_eq!(d.transaction_list.len(), template.txs.len())
        }
        other => panic!("{other}"),
    }
    c.send(AnyMessageOwned::TemplateDistribution(
        TemplateDistributionOwned::RequestTransactionData(RequestTransactionDataOwned {
            template_id: 999_999,
        }),
    ))
    .await
    .unwrap();
    assert!(matches!(
        c.next().await.unwrap(),
        TemplateDistributionOwned::RequestTransactionDataError(_)
    ));

    // Other clients make the node build many more templates on this tip (a JDS polls
    // every few seconds): the one this client was sent still takes its solution.
    for _ in 0..40 {
        node.state().build_template();
    }
    assert!(node.state().recent_template(t.template_id).is_none());

    // A block mined from NewTemplate alone is accepted and becomes the tip; the client
    // gets the next future template and prev hash at once.
    let height = node.state().chain().height();
    let solution = solve(&t, &p);
    c.send(AnyMessageOwned::TemplateDistribution(
        TemplateDistributionOwned::SubmitSolution(solution),
    ))
    .await
    .unwrap();
    let (t2, p2) = c.new_tip().await.unwrap();
    assert_eq!(node.state().chain().height(), height + 1);
    let tip = node.state().tip_hash();
    assert_eq!(p2.prev_hash.as_ref(), tip.as_byte_array());
    assert!(t2.template_id > t.template_id);
    let block: &Block = &node.state().chain().tip().block.clone();
    assert_eq!(block.txdata.len(), template.txs.len() + 1);
    node.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_clients_lose_their_connection_and_the_node_serves_on() {
    let (node, addr, keys) = start().await;

    // Another protocol than template distribution.
    let mut c = TdpClient::connect(addr, keys.public).await.unwrap();
    assert_eq!(
        c.setup(Protocol::MiningProtocol).await.unwrap_err(),
        "unsupported-protocol"
    );

    // A client that expects another authority key fails the handshake.
    let wrong = AuthorityKeys::generate();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(connect_with_noise(tcp, Some(wrong.public)).await.is_err());

    // Garbage instead of a Noise handshake, and garbage after one.
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    raw.write_all(&[0xde; 300]).await.unwrap();
    let mut c = TdpClient::connect(addr, keys.public).await.unwrap();
    c.write.shutdown().await.unwrap();
    let mut c2 = TdpClient::connect(addr, keys.public).await.unwrap();
    c2.setup(Protocol::TemplateDistributionProtocol)
        .await
        .unwrap();
    // A message a client may not send (a NewTemplate) closes that connection.
    let (_, p) = {
        let mut c3 = TdpClient::connect(addr, keys.public).await.unwrap();
        c3.setup(Protocol::TemplateDistributionProtocol)
            .await
            .unwrap();
        c3.constraints(100).await.unwrap();
        let got = c3.new_tip().await.unwrap();
        c3.send(AnyMessageOwned::TemplateDistribution(
            TemplateDistributionOwned::NewTemplate(got.0.clone()),
        ))
        .await
        .unwrap();
        assert!(
            tokio::time::timeout(Duration::from_secs(5), c3.read.read_frame())
                .await
                .expect("closed within 5 s")
                .is_err(),
            "the node closes a connection that sends NewTemplate"
        );
        got
    };

    // Through all of it, a well-behaved client is served.
    c2.constraints(100).await.unwrap();
    let (_, p2) = c2.new_tip().await.unwrap();
    assert_eq!(p2.prev_hash, p.prev_hash, "on the same tip");
    node.shutdown().await.unwrap();
}

/// The one refresh rule (`mining::refresh`): a same-tip template comes `interval` after the
/// last new tip or template sent. A timer that ran from the connection alone (as it once
/// did) would send an update 1 s after the block below instead of 2 s.
#[tokio::test]
async fn a_new_tip_restarts_the_refresh_interval() {
    let interval = Duration::from_secs(2);
    let (node, addr, keys) = start_with(interval, Some(vec![Duration::from_secs(3)])).await;
    let mut c = TdpClient::connect(addr, keys.public).await.unwrap();
    c.setup(Protocol::TemplateDistributionProtocol)
        .await
        .unwrap();
    c.constraints(100).await.unwrap();
    let (first, _) = c.new_tip().await.unwrap();
    let t_first = tokio::time::Instant::now();

    // The mempool moves all the time (mainnet arrivals): an update every interval.
    let update = |m: TemplateDistributionOwned| match m {
        TemplateDistributionOwned::NewTemplate(t) if !t.future_template => t,
        other => panic!("expected a same-tip update, got {other}"),
    };
    let refreshed = update(c.next().await.unwrap());
    let after = t_first.elapsed();
    assert!(refreshed.template_id > first.template_id);
    assert!(
        after >= interval - Duration::from_millis(50) && after < interval + Duration::from_secs(1),
        "the first update {after:?} after the first template, not {interval:?}"
    );

    // The block at 3 s: a new tip at once, and the next update a whole interval after it.
    let (tip_template, _) = c.new_tip().await.unwrap();
    let t_tip = tokio::time::Instant::now();
    let next = update(c.next().await.unwrap());
    let after_tip = t_tip.elapsed();
    assert!(next.template_id > tip_template.template_id);
    assert!(
        after_tip >= interval - Duration::from_millis(50),
        "an update {after_tip:?} after the new tip: the tip did not restart the timer"
    );
    assert!(
        after_tip < interval + Duration::from_secs(1),
        "{after_tip:?}"
    );
    node.shutdown().await.unwrap();
}
