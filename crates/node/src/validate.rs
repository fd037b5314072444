//! Block validation with bitcoind's checks, in bitcoind's order, and its reject reasons.

use crate::chain::Chain;
use crate::mempool::{Mempool, MempoolTx};
use crate::template::{marker_id, marker_tx, subsidy, MAX_BLOCK_SIGOPS_COST, MAX_BLOCK_WEIGHT};
use bitcoin::hashes::Hash;
use bitcoin::{Block, CompactTarget, Transaction, Txid, WitnessMerkleNode};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A rejection, with bitcoind's reason string (`high-hash`, `bad-txnmrklroot`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Reject(pub String);

fn reject<T>(reason: impl Into<String>) -> Result<T, Reject> {
    Err(Reject(reason.into()))
}

/// What the node knows while judging a block.
pub struct Context<'a> {
    pub chain: &'a Chain,
    pub mempool: &'a Mempool,
    /// Marker transactions of templates handed out on the current tip.
    pub markers: &'a HashMap<Txid, Arc<MempoolTx>>,
    /// The network's seed: a marker transaction of another node of this network (a farm's
    /// node) is recognised by recomputing it.
    pub seed: u64,
    pub bits: CompactTarget,
    /// Current UNIX time of the simulation (for `time-too-new`).
    pub now: u32,
    /// What a caller may ask to skip.
    pub checks: Checks,
}

/// Checks a caller may skip, as Bitcoin Core's BlockCheckOptions allow: a BIP23 proposal
/// or an IPC checkBlock of a job whose header is not final (a Job Declarator Server
/// checks a declared job before any miner has hashed it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checks {
    /// The header meets its target.
    pub pow: bool,
    /// The header commits to the block's transactions.
    pub merkle_root: bool,
}

impl Checks {
    /// Everything, as for a block submitted to be accepted.
    pub const ALL: Checks = Checks {
        pow: true,
        merkle_root: true,
    };
}

/// A block that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Fees of its transactions (only known when it extends the tip).
    pub fees: u64,
    pub height: u32,
    /// Template the block was built on, by its marker transaction.
    pub template_id: Option<u64>,
    /// False when it builds on an older block: valid, stored, but not the tip
    /// (bitcoind answers `inconclusive`).
    pub extends_tip: bool,
    /// Txids of all its transactions, coinbase first: hashed once, used by every check
    /// and by connecting the block.
    pub txids: Vec<Txid>,
}

/// Whether Bitcoin Core's ProcessNewBlock (v31's submitSolution answer) calls the block
/// with submitblock's `reason` processed: true for one it stored, "independent of block
/// validity" (Core's interface): taken, a valid block beside the tip (`inconclusive`),
/// one already known, and one found invalid only when connected (Core stores it first,
/// and its ActivateBestChain still answers true). False for one refused before it is
/// stored.
pub fn processed_by_core(reason: Option<&str>) -> bool {
    matches!(
        reason,
        None | Some(
            "inconclusive"
                | "duplicate"
                | CONNECT_INPUTS_MISSING
                | CONNECT_SIGOPS
                | CONNECT_CB_AMOUNT
        )
    )
}

/// ConnectBlock's reasons: found when the block is connected, after Core stored it. (Core's
/// CheckBlock raises `bad-blk-sigops` too, for the legacy count, before storing; the count
/// here is ConnectBlock's.)
const CONNECT_INPUTS_MISSING: &str = "bad-txns-inputs-missingorspent";
const CONNECT_SIGOPS: &str = "bad-blk-sigops";
const CONNECT_CB_AMOUNT: &str = "bad-cb-amount";

pub fn check_block(block: &Block, cx: &Context) -> Result<Verdict, Reject> {
    let header = &block.header;
    let hash = block.block_hash();
    if cx.chain.is_invalid(&hash) {
        return reject("duplicate-invalid");
    }
    if cx.chain.get(&hash).is_some() {
        return reject("duplicate");
    }
    // CheckBlockHeader: the work the header claims must be done.
    if cx.checks.pow && header.validate_pow(header.target()).is_err() {
        return reject("high-hash");
    }
    // AcceptBlockHeader / ContextualCheckBlockHeader.
    let Some(parent) = cx.chain.get(&header.prev_blockhash) else {
        return reject("prev-blk-not-found");
    };
    if header.bits != cx.bits {
        return reject("bad-diffbits");
    }
    if header.time <= parent.median_time {
        return reject("time-too-old");
    }
    if i64::from(header.time) > i64::from(cx.now) + 2 * 60 * 60 {
        return reject("time-too-new");
    }
    if header.version.to_consensus() < 4 {
        return reject(format!(
            "bad-version(0x{:08x})",
            header.version.to_consensus()
        ));
    }
    let height = parent.height + 1;

    let txids: Vec<Txid> = block.txdata.iter().map(Transaction::compute_txid).collect();
    check_context_free(block, &txids, cx.checks.merkle_root)?;
    check_contextual(block, height)?;

    let template_id = block.txdata.get(1).and_then(marker_id);
    let extends_tip = parent.hash == cx.chain.tip().hash;
    if !extends_tip {
        return Ok(Verdict {
            fees: 0,
            height,
            template_id,
            extends_tip,
            txids,
        });
    }

    // ConnectBlock: every spend must be known, and the coinbase may claim no more than
    // subsidy plus fees.
    let mut fees = 0u64;
    let mut sigops = 0u32;
    for (tx, txid) in block.txdata[1..].iter().zip(&txids[1..]) {
        let known = match cx.mempool.get(txid).or_else(|| cx.markers.get(txid)) {
            Some(known) => known.clone(),
            None if is_network_marker(tx, cx.seed) => Arc::new(MempoolTx::new(tx.clone(), 0)),
            None => return reject(CONNECT_INPUTS_MISSING),
        };
        fees += known.fee;
        sigops += known.sigops;
    }
    if sigops > MAX_BLOCK_SIGOPS_COST {
        return reject(CONNECT_SIGOPS);
    }
    let claimed: u64 = block.txdata[0]
        .output
        .iter()
        .map(|o| o.value.to_sat())
        .sum();
    if claimed > subsidy(height) + fees {
        return reject(CONNECT_CB_AMOUNT);
    }
    Ok(Verdict {
        fees,
        height,
        template_id,
        extends_tip,
        txids,
    })
}

/// bitcoind's CheckBlock: merkle root, sizes, coinbase placement, transaction sanity.
fn check_context_free(block: &Block, txids: &[Txid], merkle_root: bool) -> Result<(), Reject> {
    let root = bitcoin::merkle_tree::calculate_root(txids.iter().map(|t| t.to_raw_hash()));
    if merkle_root && root != Some(block.header.merkle_root.to_raw_hash()) {
        return reject("bad-txnmrklroot");
    }
    let mut unique = HashSet::with_capacity(txids.len());
    if !txids.iter().all(|t| unique.insert(t)) {
        // The merkle tree cannot tell a duplicated last pair from the real block (CVE-2012-2459).
        return reject("bad-txns-duplicate");
    }
    if block.txdata.is_empty() || stripped_size(block) as u64 * 4 > MAX_BLOCK_WEIGHT {
        return reject("bad-blk-length");
    }
    if !block.txdata[0].is_coinbase() {
        return reject("bad-cb-missing");
    }
    if block.txdata[1..].iter().any(Transaction::is_coinbase) {
        return reject("bad-cb-multiple");
    }
    for tx in &block.txdata {
        check_transaction(tx)?;
    }
    Ok(())
}

/// Serialised size without witnesses (bitcoind's `strippedsize`).
pub fn stripped_size(block: &Block) -> usize {
    80 + bitcoin::VarInt(block.txdata.len() as u64).size()
        + block
            .txdata
            .iter()
            .map(Transaction::base_size)
            .sum::<usize>()
}

/// bitcoind's CheckTransaction.
fn check_transaction(tx: &Transaction) -> Result<(), Reject> {
    if tx.input.is_empty() {
        return reject("bad-txns-vin-empty");
    }
    if tx.output.is_empty() {
        return reject("bad-txns-vout-empty");
    }
    let mut total = 0u64;
    for out in &tx.output {
        total = total.saturating_add(out.value.to_sat());
        if out.value.to_sat() > 21_000_000 * 100_000_000 || total > 21_000_000 * 100_000_000 {
            return reject("bad-txns-vout-toolarge");
        }
    }
    let mut spent = HashSet::with_capacity(tx.input.len());
    if !tx.input.iter().all(|i| spent.insert(i.previous_output)) {
        return reject("bad-txns-inputs-duplicate");
    }
    if tx.is_coinbase() {
        let len = tx.input[0].script_sig.len();
        if !(2..=100).contains(&len) {
            return reject("bad-cb-length");
        }
    } else if tx.input.iter().any(|i| i.previous_output.is_null()) {
        return reject("bad-txns-prevout-null");
    }
    Ok(())
}

/// bitcoind's ContextualCheckBlock: BIP34 height, witness commitment, weight.
fn check_contextual(block: &Block, height: u32) -> Result<(), Reject> {
    let expected = bitcoin::script::Builder::new()
        .push_int(i64::from(height))
        .into_script();
    let coinbase = &block.txdata[0];
    if !coinbase.input[0]
        .script_sig
        .as_bytes()
        .starts_with(expected.as_bytes())
    {
        return reject("bad-cb-height");
    }
    match commitment_output(coinbase) {
        Some(commitment) => {
            let nonce = &coinbase.input[0].witness;
            if nonce.len() != 1 || nonce.nth(0).map(<[u8]>::len) != Some(32) {
                return reject("bad-witness-nonce-size");
            }
            let root = block.witness_root().expect("block has a coinbase");
            let computed = Block::compute_witness_commitment(
                &WitnessMerkleNode::from_raw_hash(root.to_raw_hash()),
                nonce.nth(0).expect("checked"),
            );
            if computed.as_byte_array() != commitment {
                return reject("bad-witness-merkle-match");
            }
        }
        None => {
            if block
                .txdata
                .iter()
                .any(|t| t.input.iter().any(|i| !i.witness.is_empty()))
            {
                return reject("unexpected-witness");
            }
        }
    }
    if block.weight().to_wu() > MAX_BLOCK_WEIGHT {
        return reject("bad-blk-weight");
    }
    Ok(())
}

/// The 32 committed bytes of the last BIP141 commitment output, if there is one.
/// What bitcoind's submitblock does before judging (UpdateUncommittedBlockStructures): a
/// block whose coinbase commits to its witnesses but carries no witness gets the default
/// witness reserved value, 32 zero bytes, the one getblocktemplate's
/// `default_witness_commitment` is computed with. Pools that submit the coinbase without
/// its witness (ckpool, goPool) rely on it.
pub fn fill_witness_reserved_value(block: &mut Block) {
    let Some(coinbase) = block.txdata.first_mut() else {
        return;
    };
    if commitment_output(coinbase).is_some() && coinbase.input[0].witness.is_empty() {
        coinbase.input[0].witness = bitcoin::Witness::from_slice(&[[0u8; 32]]);
    }
}

fn commitment_output(coinbase: &Transaction) -> Option<&[u8]> {
    coinbase.output.iter().rev().find_map(|o| {
        let b = o.script_pubkey.as_bytes();
        (b.len() >= 38 && b[..6] == [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed]).then(|| &b[6..38])
    })
}

/// A marker transaction some node of the network (same seed) put in a template: it spends
/// nothing real and pays nothing.
fn is_network_marker(tx: &Transaction, seed: u64) -> bool {
    marker_id(tx).is_some_and(|id| marker_tx(seed, id) == *tx)
}
