//! The simulated network's chain, mempool and validation, driven in virtual time.

mod common;

use bitcoin::hashes::Hash;
use bitcoin::{Target, TxMerkleNode};
use common::{mined_block, pool_coinbase, solve, unsolve};
use node::state::{PeerBlock, Submission};
use node::{Difficulty, MempoolConfig, MempoolPreset, NodeConfig, NodeState};
use probe::{Event, Recorder, TipCause};
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

fn config(seed: u64) -> NodeConfig {
    let mut mempool = MempoolConfig::preset(MempoolPreset::Mainnet);
    mempool.initial_txs = 1500;
    NodeConfig {
        seed,
        block_interval: Duration::from_secs(60),
        time_base: Some(1_700_000_000),
        mempool,
        ..NodeConfig::default()
    }
}

fn node(cfg: NodeConfig) -> NodeState {
    NodeState::new(cfg, Recorder::disabled(), 0).expect("valid config")
}

fn reject_reason(outcome: Submission) -> String {
    match outcome {
        Submission::Rejected(reason) => reason,
        Submission::Accepted(tip) => panic!("block {} was accepted", tip.hash),
    }
}

#[test]
fn block_built_from_a_template_is_accepted_and_becomes_the_tip() {
    let mut n = node(config(1));
    n.advance_to(5 * SECOND);
    let template = n.template("pool");
    assert!(
        template.txs.len() > 100,
        "the template carries mempool transactions"
    );
    let block = mined_block(&template, n.header_time());
    let hash = block.block_hash();

    let Submission::Accepted(tip) = n.submit_block(block.clone(), "test") else {
        panic!("a valid block was rejected");
    };
    assert_eq!(tip.hash, hash);
    assert_eq!(n.tip_hash(), hash);
    assert_eq!(n.chain().height(), template.height);
    assert_eq!(tip.fees, template.fees);
    for tx in &template.txs[1..] {
        assert!(
            n.mempool().get(&tx.txid).is_none(),
            "mined txs leave the mempool"
        );
    }
    let next = n.template("pool");
    assert_eq!(
        next.prev_hash, hash,
        "the next template builds on the new tip"
    );
    assert_ne!(next.marker_txid(), template.marker_txid());
    assert_eq!(reject_reason(n.submit_block(block, "test")), "duplicate");
}

/// Each RPC client has its own getblocktemplate cache, as each pool would have its own
/// bitcoind: a pool asking later is served a template built when it asks, not the one
/// another pool's request built earlier.
#[test]
fn each_client_gets_templates_cached_for_it_alone() {
    let mut n = node(NodeConfig {
        template_refresh: Duration::from_secs(30),
        ..config(3)
    });
    n.advance_to(SECOND);
    let ours = n.template("pool-sv1");
    n.advance_to(10 * SECOND);
    let theirs = n.template("pool-sv1-ckpool");
    assert_ne!(theirs.marker_txid(), ours.marker_txid(), "built when asked");
    assert_eq!(theirs.built_at_ns - ours.built_at_ns, 9 * SECOND);
    // Within the refresh interval each is served its own again.
    n.advance_to(20 * SECOND);
    assert_eq!(n.template("pool-sv1").marker_txid(), ours.marker_txid());
    assert_eq!(
        n.template("pool-sv1-ckpool").marker_txid(),
        theirs.marker_txid()
    );
    // Past it, with the mempool moved, the first asker gets a new one; the other keeps its.
    n.advance_to(32 * SECOND);
    assert_ne!(n.template("pool-sv1").marker_txid(), ours.marker_txid());
    assert_eq!(
        n.template("pool-sv1-ckpool").marker_txid(),
        theirs.marker_txid()
    );
}

#[test]
fn wrong_merkle_root_is_rejected_as_bad_txnmrklroot() {
    let mut n = node(config(2));
    let template = n.template("pool");
    let mut block = template.block_with(
        pool_coinbase(&template, template.value()),
        n.header_time(),
        0,
    );
    block.header.merkle_root = TxMerkleNode::from_byte_array([7; 32]);
    solve(&mut block);
    let tip = n.tip_hash();
    assert_eq!(
        reject_reason(n.submit_block(block, "test")),
        "bad-txnmrklroot"
    );
    assert_eq!(n.tip_hash(), tip, "a rejected block changes nothing");
}

#[test]
fn insufficient_work_is_rejected_as_high_hash() {
    // At regtest difficulty, a header that misses the target.
    let mut n = node(config(3));
    let template = n.template("pool");
    let mut block = template.block_with(
        pool_coinbase(&template, template.value()),
        n.header_time(),
        0,
    );
    unsolve(&mut block);
    assert_eq!(reject_reason(n.submit_block(block, "test")), "high-hash");

    // At difficulty 1, an unground header.
    let mut n = node(NodeConfig {
        difficulty: Difficulty::Fixed(1.0),
        ..config(3)
    });
    let template = n.template("pool");
    let block = template.block_with(
        pool_coinbase(&template, template.value()),
        n.header_time(),
        0,
    );
    assert!(block
        .header
        .validate_pow(Target::from_compact(block.header.bits))
        .is_err());
    assert_eq!(reject_reason(n.submit_block(block, "test")), "high-hash");
}

#[test]
fn consensus_violations_get_bitcoinds_reasons() {
    let mut n = node(config(4));
    let template = n.template("pool");
    let time = n.header_time();

    let mut greedy = template.block_with(pool_coinbase(&template, template.value() + 1), time, 0);
    solve(&mut greedy);
    assert_eq!(
        reject_reason(n.submit_block(greedy, "test")),
        "bad-cb-amount"
    );

    let mut wrong_height = template.block_with(
        node::template::network_coinbase(
            template.height + 1,
            b"x",
            1,
            Some(&template.witness_commitment),
        ),
        time,
        0,
    );
    solve(&mut wrong_height);
    assert_eq!(
        reject_reason(n.submit_block(wrong_height, "test")),
        "bad-cb-height"
    );

    let mut orphan = mined_block(&template, time);
    orphan.header.prev_blockhash = bitcoin::BlockHash::from_byte_array([9; 32]);
    solve(&mut orphan);
    assert_eq!(
        reject_reason(n.submit_block(orphan, "test")),
        "prev-blk-not-found"
    );

    let mut old = mined_block(&template, time);
    old.header.time = n.chain().median_time_past();
    solve(&mut old);
    assert_eq!(reject_reason(n.submit_block(old, "test")), "time-too-old");

    // A transaction nobody has seen (spends an unknown outpoint).
    let mut unknown = template.block_with(pool_coinbase(&template, template.subsidy), time, 0);
    unknown.txdata.push(node::template::marker_tx(999, 999));
    unknown.header.merkle_root = unknown.compute_merkle_root().unwrap();
    let cb = pool_coinbase_for(&unknown);
    unknown.txdata[0] = cb;
    unknown.header.merkle_root = unknown.compute_merkle_root().unwrap();
    solve(&mut unknown);
    assert_eq!(
        reject_reason(n.submit_block(unknown, "test")),
        "bad-txns-inputs-missingorspent"
    );

    // A valid block on the tip's parent, after the tip moved: stored, not the tip.
    let stale = mined_block(&template, time);
    n.mine_network_block(None);
    assert_eq!(reject_reason(n.submit_block(stale, "test")), "inconclusive");
}

/// A coinbase committing to `block`'s current witnesses.
fn pool_coinbase_for(block: &bitcoin::Block) -> bitcoin::Transaction {
    let commitment = node::template::witness_commitment_script(
        block.txdata[1..]
            .iter()
            .map(|t| t.compute_wtxid().to_raw_hash()),
    );
    let height = match &block.txdata[0].input[0]
        .script_sig
        .instructions_minimal()
        .next()
    {
        Some(Ok(bitcoin::script::Instruction::PushBytes(b))) => {
            let mut v = [0u8; 4];
            v[..b.len()].copy_from_slice(b.as_bytes());
            u32::from_le_bytes(v)
        }
        _ => panic!("coinbase starts with its height"),
    };
    node::template::network_coinbase(height, b"x", 1, Some(&commitment))
}

#[test]
fn the_same_seed_gives_the_same_chain_and_mempool() {
    let run = |seed| {
        let mut n = node(config(seed));
        n.advance_to(1800 * SECOND);
        let txids: Vec<_> = n.mempool().txids().copied().collect();
        (n.chain().height(), n.tip_hash(), txids)
    };
    let (height_a, tip_a, mempool_a) = run(11);
    let (height_b, tip_b, mempool_b) = run(11);
    assert!(
        height_a > 880_010,
        "half an hour of 60 s blocks found blocks: {height_a}"
    );
    assert_eq!((height_a, tip_a), (height_b, tip_b));
    assert_eq!(mempool_a, mempool_b);
    let (_, tip_c, mempool_c) = run(12);
    assert_ne!(tip_a, tip_c, "another seed is another network");
    assert_ne!(mempool_a, mempool_c);
}

#[test]
fn network_blocks_arrive_at_the_rate_left_by_our_hashrate_share() {
    let cfg = NodeConfig {
        block_interval: Duration::from_secs(10),
        hashrate_share: 0.5,
        mempool: MempoolConfig::preset(MempoolPreset::Empty),
        ..config(5)
    };
    let mut n = node(cfg);
    let start = n.chain().height();
    n.advance_to(20_000 * SECOND);
    // The rest of the network holds half the hashrate: one block per 20 s, so ~1000.
    let found = f64::from(n.chain().height() - start);
    assert!((900.0..=1100.0).contains(&found), "{found} network blocks");
}

/// Regular arrivals: the rest of the network's blocks one every mean gap from the start,
/// at the rate its hashrate leaves (10 s over half: every 20 s), and none when our
/// miners hold it all.
#[test]
fn regular_arrivals_come_every_gap_at_the_networks_rate() {
    let cfg = |share: f64| NodeConfig {
        block_interval: Duration::from_secs(10),
        hashrate_share: share,
        arrivals: model::network::Arrivals::Regular,
        mempool: MempoolConfig::preset(MempoolPreset::Empty),
        ..config(5)
    };
    let mut n = node(cfg(0.5));
    let start = n.chain().height();
    assert!(n.advance_to(20 * SECOND - 1).is_empty());
    assert_eq!(n.advance_to(20 * SECOND).len(), 1);
    assert!(n.advance_to(40 * SECOND - 1).is_empty());
    n.advance_to(1_000 * SECOND);
    assert_eq!(n.chain().height(), start + 50, "one every 20 s in 1,000 s");
    let mut all_ours = node(cfg(1.0));
    let start = all_ours.chain().height();
    all_ours.advance_to(1_000 * SECOND);
    assert_eq!(all_ours.chain().height(), start);
}

#[test]
fn scripted_arrivals_replace_the_poisson_process() {
    let mut n = node(NodeConfig {
        scripted_arrivals: Some(vec![Duration::from_secs(2), Duration::from_secs(3)]),
        ..config(6)
    });
    let start = n.chain().height();
    assert!(n.advance_to(SECOND + SECOND / 2).is_empty());
    assert_eq!(n.advance_to(2 * SECOND).len(), 1);
    assert_eq!(n.advance_to(100 * SECOND).len(), 1);
    assert_eq!(n.chain().height(), start + 2);
    assert_eq!(
        n.next_event_ns().map(|t| t > 100 * SECOND),
        Some(true),
        "only transactions remain"
    );
}

#[test]
fn miner_hashrate_sets_the_target_for_the_requested_block_rate() {
    let cfg = NodeConfig {
        difficulty: Difficulty::MinerHashrate(1e6),
        hashrate_share: 0.1,
        block_interval: Duration::from_secs(600),
        ..config(7)
    };
    // 1 MH/s finding one block per 6000 s: 6e9 hashes per block.
    let expected = 6e9 / 2f64.powi(32);
    let got = Target::from_compact(cfg.bits()).difficulty_float();
    assert!(
        (got / expected - 1.0).abs() < 1e-3,
        "difficulty {got}, expected {expected}"
    );
}

#[test]
fn assembly_fills_the_block_by_fee_rate_and_counts_fees() {
    let mut cfg = config(8);
    cfg.mempool.initial_txs = 25_000;
    let mut n = node(cfg);
    let t = n.template("pool");
    assert!(t.weight <= 4_000_000 - 4_000);
    assert!(
        t.weight > 3_900_000,
        "a full mempool fills the block: {}",
        t.weight
    );
    assert_eq!(t.fees, t.txs.iter().map(|e| e.fee).sum::<u64>());
    assert_eq!(t.value(), 312_500_000 + t.fees);
    let rate = |e: &node::mempool::MempoolTx| e.fee as f64 / e.weight as f64;
    let lowest_in = t.txs[1..].iter().map(|e| rate(e)).fold(f64::MAX, f64::min);
    let in_template: std::collections::HashSet<_> = t.txs.iter().map(|e| e.txid).collect();
    let skipped_better = n
        .mempool()
        .by_feerate()
        .filter(|e| !in_template.contains(&e.txid) && rate(e) > lowest_in)
        .count();
    assert!(
        skipped_better < 50,
        "{skipped_better} better-paying txs left out"
    );
    let (network_value, _) = n.network_template_value();
    assert!(
        network_value >= t.value() - 1_000,
        "the network's best is this template"
    );
}

#[test]
fn events_tie_templates_submissions_and_tips_together() {
    let dir = std::env::temp_dir().join(format!("node-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("events.jsonl");
    let _ = std::fs::remove_file(&path);
    let recorder = Recorder::to_file(&path, "node").unwrap();
    let mut n = NodeState::new(config(9), recorder.clone(), 0).unwrap();
    let template = n.template("pool");
    let block = mined_block(&template, n.header_time());
    let hash = block.block_hash().to_string();
    assert!(matches!(
        n.submit_block(block, "test"),
        Submission::Accepted(_)
    ));
    n.mine_network_block(None);
    n.record_network_template_value();
    recorder.close().unwrap();

    let events: Vec<Event> = probe::recorder::read_events(&path)
        .unwrap()
        .into_iter()
        .map(|r| r.event)
        .collect();
    let built = events.iter().find_map(|e| match e {
        Event::TemplateBuilt {
            template_id,
            marker_txid,
            ..
        } => Some((*template_id, marker_txid.clone())),
        _ => None,
    });
    assert_eq!(
        built,
        Some((template.id, template.marker_txid().to_string()))
    );
    assert!(events.iter().any(|e| matches!(e,
        Event::BlockSubmitted { hash: h, template_id: Some(id), reject_reason: None, .. }
            if *h == hash && *id == template.id)));
    let causes: Vec<TipCause> = events
        .iter()
        .filter_map(|e| match e {
            Event::TipChanged { cause, .. } => Some(*cause),
            _ => None,
        })
        .collect();
    assert_eq!(causes, vec![TipCause::Submitted, TipCause::Network]);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::NetworkTemplateValue { .. })));
}

#[test]
fn only_the_latest_templates_are_kept_for_light_submission() {
    // No network blocks: a new tip would rightly drop every template.
    let mut n = node(NodeConfig {
        scripted_arrivals: Some(vec![]),
        ..config(10)
    });
    let mut ids = Vec::new();
    for i in 1..=40u64 {
        n.add_generated_tx();
        n.advance_to(i * 6 * SECOND); // past the 5 s refresh, with the mempool changed
        ids.push(n.template("pool").id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 40, "a fresh template each time");
    assert!(
        n.recent_template(ids[0]).is_none(),
        "the oldest is let go (memory stays bounded)"
    );
    assert!(n.recent_template(ids[39]).is_some());
    assert!(
        n.recent_template(ids[39 - 31]).is_some(),
        "the last 32 are kept"
    );
    n.mine_network_block(None);
    assert!(
        n.recent_template(ids[39]).is_none(),
        "a new tip makes them all stale"
    );
}

/// A network whose only blocks are the ones a test makes.
fn quiet(seed: u64) -> NodeConfig {
    NodeConfig {
        scripted_arrivals: Some(Vec::new()),
        ..config(seed)
    }
}

fn follower(seed: u64, overlap: f64) -> NodeState {
    node(NodeConfig {
        follower: Some(node::Follower {
            overlap,
            tx_delay: Duration::ZERO,
            template_ids_from: node::config::FOLLOWER_TEMPLATE_IDS,
            block_lag: model::lag::BlockLag::Fixed(0.0),
        }),
        ..quiet(seed)
    })
}

#[test]
fn a_follower_sees_its_share_of_the_network_mempool_and_finds_no_blocks() {
    let mut network = node(quiet(11));
    let mut farm = follower(11, 0.5);
    network.advance_to(120 * SECOND);
    let tips = farm.advance_to(120 * SECOND);
    assert!(tips.is_empty(), "a follower's blocks come from its peer");
    let (all, seen) = (network.mempool().len(), farm.mempool().len());
    assert!(
        seen as f64 > 0.35 * all as f64 && (seen as f64) < 0.65 * all as f64,
        "half the transactions: {seen} of {all}"
    );
    let template = farm.template("pool");
    for tx in &template.txs[1..] {
        assert!(
            network.mempool().get(&tx.txid).is_some(),
            "the farm knows a transaction the network does not"
        );
    }
    assert!(farm.relayed_tx_bytes() > 0);
    assert_eq!(network.relayed_tx_bytes(), 0);
}

/// The network accepts a block built on a farm's template (its marker transaction is
/// recognised), and the farm takes the network's blocks as its peer relays them.
#[test]
fn a_farm_block_and_a_network_block_cross_between_the_nodes() {
    let mut network = node(quiet(12));
    let mut farm = follower(12, 0.9);
    network.advance_to(10 * SECOND);
    farm.advance_to(10 * SECOND);
    assert_eq!(farm.tip_hash(), network.tip_hash(), "the same base block");

    let template = farm.template("pool");
    assert_ne!(
        template.marker_txid(),
        network.template("pool").marker_txid(),
        "the two nodes number their templates apart"
    );
    let block = mined_block(&template, farm.header_time());
    assert_eq!(farm.judge_for_peer(&block, "test"), None);
    farm.note_block_sent(&block);
    let sent = node::state::compact_block_size(&block, &[]);
    assert_eq!(farm.compact_block_bytes().sent, sent);
    assert_eq!(
        farm.tip_hash(),
        network.tip_hash(),
        "a follower waits for the network"
    );
    let Submission::Accepted(tip) = network.submit_block(block.clone(), "test") else {
        panic!("the network rejected a valid farm block");
    };
    assert_eq!(tip.fees, template.fees);
    let PeerBlock::Connected(taken) = farm.accept_peer_block(block.clone()) else {
        panic!("a new tip");
    };
    assert_eq!(taken.hash, network.tip_hash());
    assert_eq!(taken.fees, template.fees, "fees read from the coinbase");
    assert_eq!(
        farm.compact_block_bytes().received,
        0,
        "its own block coming back is no relay: the farm found it"
    );
    assert!(
        matches!(farm.accept_peer_block(block), PeerBlock::Known),
        "known already"
    );

    // A block the farm missed: the next one is an orphan until its parent comes.
    let missed = network.mine_network_block(None);
    let found = network.mine_network_block(None);
    assert!(matches!(
        farm.accept_peer_block(found.block.clone()),
        PeerBlock::Orphan { parent } if parent == missed.hash
    ));
    assert!(!farm.has_block(&found.hash));
    assert!(matches!(
        farm.accept_peer_block(missed.block.clone()),
        PeerBlock::Connected(_)
    ));
    assert!(matches!(
        farm.accept_peer_block(found.block.clone()),
        PeerBlock::Connected(_)
    ));
    assert_eq!(farm.tip_hash(), network.tip_hash());
    assert!(
        farm.compact_block_bytes().received
            >= node::state::compact_block_size(&missed.block, &[])
                + node::state::compact_block_size(&found.block, &[]),
        "the network's blocks arrive as compact blocks"
    );
    for tx in &found.block.txdata[1..] {
        assert!(farm.mempool().get(&tx.compute_txid()).is_none());
    }
}

/// A block as a BIP152 compact block, worked by hand: the cmpctblock (24-byte header,
/// 80-byte block header, 8-byte nonce, a compact size and 6 bytes per short id, one
/// prefilled coinbase at index 0), then for the one transaction the peer lacks a
/// getblocktxn (24 + 32 + count + index 2) and a blocktxn (24 + 32 + count + the tx).
#[test]
fn a_compact_block_costs_its_short_ids_and_what_the_peer_lacks() {
    let mut network = node(quiet(13));
    network.advance_to(60 * SECOND);
    let template = network.template("pool");
    let block = mined_block(&template, network.header_time());
    let txs = &block.txdata;
    assert!(txs.len() > 3);
    let (n, coinbase) = (txs.len() as u64 - 1, txs[0].total_size() as u64);
    let size = |n: u64| bitcoin::VarInt(n).size() as u64;
    let cmpct = 24 + 80 + 8 + size(n) + 6 * n + 1 + 1 + coinbase;
    assert_eq!(node::state::compact_block_size(&block, &[]), cmpct);
    assert_eq!(
        node::state::compact_block_size(&block, &[2]),
        cmpct + (24 + 32 + 1 + 1) + (24 + 32 + 1 + txs[2].total_size() as u64)
    );
    // Far less than the whole block, which the emulation's ZMQ feed carries.
    assert!(cmpct < bitcoin::consensus::serialize(&block).len() as u64 / 10);
}

/// A template is built from the state it was ordered on, outside the node's lock (so
/// pools asking at once build side by side): a transaction that arrives meanwhile is not
/// in it, the asker's cache takes it, its build is recorded with who asked and what it
/// waited, and one filed after the tip moved on is no longer handed out for
/// submitblocklight.
#[test]
fn a_template_is_built_from_the_state_it_was_ordered_on() {
    use node::state::{Asker, TimedBuild};
    let dir = std::env::temp_dir().join(format!("node-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("events.jsonl");
    let _ = std::fs::remove_file(&path);
    let recorder = Recorder::to_file(&path, "node").unwrap();
    let mut n = NodeState::new(config(11), recorder.clone(), 0).unwrap();

    let order = n.order_template();
    let ordered_on = n.mempool().version();
    n.add_generated_tx();
    assert_ne!(n.mempool().version(), ordered_on);
    let t = n.file_template(TimedBuild::run(&order, 1_500), Asker::Client("pool-sv1"));
    assert_eq!(
        t.mempool_version, ordered_on,
        "built from the ordered mempool"
    );
    assert_eq!(n.cached_template("pool-sv1").map(|c| c.id), Some(t.id));
    assert!(n.recent_template(t.id).is_some());

    let stale_order = n.order_template();
    n.mine_network_block(None);
    let stale = n.file_template(TimedBuild::run(&stale_order, 0), Asker::Face("tdp"));
    assert!(n.recent_template(stale.id).is_none(), "its tip is gone");
    // A client's build filed after the tip moved is no cache of its: the next ask builds.
    let late_order = n.order_template();
    let fresh = n.template("pool-sv1");
    n.mine_network_block(None);
    let newest = n.template("pool-sv1");
    let late = n.file_template(TimedBuild::run(&late_order, 0), Asker::Client("pool-sv1"));
    assert_ne!(late.prev_hash, newest.prev_hash);
    assert_ne!(fresh.prev_hash, newest.prev_hash);
    assert_eq!(n.cached_template("pool-sv1").map(|c| c.id), Some(newest.id));
    recorder.close().unwrap();

    let builds: Vec<(u64, String, u64, u64)> = probe::recorder::read_events(&path)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r.event {
            Event::TemplateBuilt {
                template_id,
                asker,
                queued_ns,
                build_ns,
                ..
            } => Some((template_id, asker, queued_ns, build_ns)),
            _ => None,
        })
        .collect();
    assert_eq!(builds.len(), 5, "{builds:?}");
    assert_eq!(
        (builds[0].0, builds[0].1.as_str(), builds[0].2),
        (t.id, "pool-sv1", 1_500)
    );
    assert!(builds[0].3 > 0, "the build's own time is measured");
    assert_eq!((builds[1].0, builds[1].1.as_str()), (stale.id, "tdp"));
}
