//! What a pool does with a template: build a coinbase, assemble the block, grind a nonce.
#![allow(dead_code)] // each test binary uses its own part

use bitcoin::{Block, Target, Transaction};
use node::template::{network_coinbase, Template};

/// A coinbase a solo pool would write for `template`, claiming `value`.
pub fn pool_coinbase(template: &Template, value: u64) -> Transaction {
    network_coinbase(
        template.height,
        b"/test pool/",
        value,
        Some(&template.witness_commitment),
    )
}

/// Grinds the nonce until the header meets its target (fast at regtest difficulty).
pub fn solve(block: &mut Block) {
    let target = Target::from_compact(block.header.bits);
    while block.header.validate_pow(target).is_err() {
        block.header.nonce += 1;
    }
}

/// Grinds until the header does *not* meet the target.
pub fn unsolve(block: &mut Block) {
    let target = Target::from_compact(block.header.bits);
    while block.header.validate_pow(target).is_ok() {
        block.header.nonce += 1;
    }
}

/// A solved block on `template` paying exactly its value.
pub fn mined_block(template: &Template, time: u32) -> Block {
    let mut block = template.block_with(pool_coinbase(template, template.value()), time, 0);
    solve(&mut block);
    block
}

/// A node on a free loopback port, user `u` password `p`, no ZMQ and no SV2 faces: tests
/// change what they need with `..loopback(config)`.
pub fn loopback(config: node::NodeConfig) -> node::NodeOptions {
    let auth = node::RpcAuth::UserPassword {
        user: "u".into(),
        password: "p".into(),
    };
    node::NodeOptions::local(config, auth)
}
