//! Block assembly and the block template a pool mines on.
//!
//! Every template carries a unique marker transaction right after the coinbase, so its
//! txid is the first merkle branch any miner receives: a job seen at a miner can be tied
//! to the exact template it came from, by identity rather than by timing.

use crate::mempool::{Mempool, MempoolTx};
use bitcoin::hashes::{sha256d, Hash};
use bitcoin::script::{Builder, PushBytesBuf};
use bitcoin::transaction::Version;
use bitcoin::{
    absolute, opcodes, Amount, Block, BlockHash, CompactTarget, OutPoint, ScriptBuf, Sequence,
    Target, Transaction, TxIn, TxMerkleNode, TxOut, Txid, WScriptHash, Witness, WitnessMerkleNode,
};
use std::fmt::Write;
use std::sync::Arc;

/// Blocks between subsidy halvings (mainnet's schedule, so template values look real).
pub const HALVING_INTERVAL: u32 = 210_000;

pub fn subsidy(height: u32) -> u64 {
    let halvings = height / HALVING_INTERVAL;
    if halvings >= 64 {
        0
    } else {
        (50 * 100_000_000u64) >> halvings
    }
}

pub const MAX_BLOCK_WEIGHT: u64 = 4_000_000;
pub const MAX_BLOCK_SIGOPS_COST: u32 = 80_000;
/// Weight and sigops bitcoind keeps free for the coinbase.
const COINBASE_RESERVED_WEIGHT: u64 = 4_000;
const COINBASE_RESERVED_SIGOPS: u32 = 400;
/// Version of the templates (BIP9 top bits, no deployments signalled).
pub const BLOCK_VERSION: i32 = 0x2000_0000;
/// Prefix of the OP_RETURN payload that marks a template's marker transaction.
pub const MARKER_TAG: &[u8; 4] = b"SBMK";

/// What block assembly picked from the mempool.
pub struct Selection {
    pub txs: Vec<Arc<MempoolTx>>,
    pub fees: u64,
    pub weight: u64,
    pub sigops: u32,
}

/// Bitcoind's greedy assembly: by fee rate, skipping what does not fit, until the block
/// is nearly full.
pub fn select(mempool: &Mempool, reserved_weight: u64) -> Selection {
    let max_weight = MAX_BLOCK_WEIGHT - COINBASE_RESERVED_WEIGHT - reserved_weight;
    let max_sigops = MAX_BLOCK_SIGOPS_COST - COINBASE_RESERVED_SIGOPS;
    let mut picked = Selection {
        txs: Vec::new(),
        fees: 0,
        weight: 0,
        sigops: 0,
    };
    let mut misses = 0;
    for entry in mempool.by_feerate() {
        if picked.weight + entry.weight > max_weight || picked.sigops + entry.sigops > max_sigops {
            misses += 1;
            // As bitcoind: give up after many misses once the block is close to full.
            if misses > 1000 && picked.weight > max_weight - 4_000 {
                break;
            }
            continue;
        }
        picked.weight += entry.weight;
        picked.sigops += entry.sigops;
        picked.fees += entry.fee;
        picked.txs.push(entry.clone());
    }
    picked
}

/// A block template: what getblocktemplate (and later the SV2 faces) hand out.
#[derive(Debug)]
pub struct Template {
    pub id: u64,
    pub prev_hash: BlockHash,
    pub height: u32,
    pub version: i32,
    pub bits: CompactTarget,
    /// Earliest header time allowed (median time past + 1).
    pub mintime: u32,
    pub subsidy: u64,
    pub fees: u64,
    /// Weight and sigop cost of the transactions (coinbase excluded).
    pub weight: u64,
    pub sigops: u32,
    /// The marker first, then the mempool's picks.
    pub txs: Vec<Arc<MempoolTx>>,
    /// The coinbase output committing to the witnesses (BIP141).
    pub witness_commitment: ScriptBuf,
    /// Hashes a coinbase txid is combined with to reach the merkle root.
    pub coinbase_merkle_branch: Vec<TxMerkleNode>,
    /// Mempool version and virtual time the template was built at (for refresh policy).
    pub mempool_version: u64,
    pub built_at_ns: u64,
    /// Rendered `transactions` array of getblocktemplate, without brackets.
    txs_json: String,
}

impl Template {
    /// Assembles a template on `prev_hash`.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        id: u64,
        seed: u64,
        mempool: &Mempool,
        prev_hash: BlockHash,
        height: u32,
        bits: CompactTarget,
        mintime: u32,
        built_at_ns: u64,
    ) -> Template {
        let marker = Arc::new(MempoolTx::new(marker_tx(seed, id), 0));
        let picked = select(mempool, marker.weight);
        let mut txs = Vec::with_capacity(picked.txs.len() + 1);
        txs.push(marker);
        txs.extend(picked.txs);
        let txids: Vec<Txid> = txs.iter().map(|t| t.txid).collect();
        let witness_commitment =
            witness_commitment_script(txs.iter().map(|t| t.wtxid.to_raw_hash()));
        let mut txs_json = String::with_capacity(txs.iter().map(|t| t.gbt_json.len() + 1).sum());
        for (i, t) in txs.iter().enumerate() {
            if i > 0 {
                txs_json.push(',');
            }
            txs_json.push_str(&t.gbt_json);
        }
        Template {
            id,
            prev_hash,
            height,
            version: BLOCK_VERSION,
            bits,
            mintime,
            subsidy: subsidy(height),
            fees: picked.fees,
            weight: picked.weight + txs[0].weight,
            sigops: picked.sigops,
            coinbase_merkle_branch: coinbase_merkle_branch(&txids),
            txs,
            witness_commitment,
            mempool_version: mempool.version(),
            built_at_ns,
            txs_json,
        }
    }

    /// What a block on this template pays: subsidy plus fees.
    pub fn value(&self) -> u64 {
        self.subsidy + self.fees
    }

    pub fn marker_txid(&self) -> Txid {
        self.txs[0].txid
    }

    pub fn target(&self) -> Target {
        Target::from_compact(self.bits)
    }

    /// bitcoind's `longpollid`: changes whenever a newer template would be served.
    pub fn longpollid(&self) -> String {
        format!("{}{}", self.prev_hash, self.mempool_version)
    }

    /// The getblocktemplate reply, field for field as bitcoind writes it. The light form
    /// (getblocktemplatelight, as Bitcoin Cash Node defines it) carries the coinbase's
    /// merkle branch and a `job_id` instead of every transaction; the node keeps the
    /// transactions and rebuilds the block on `submitblocklight`.
    pub fn gbt_json(&self, curtime: u32, light: bool) -> String {
        let body = if light {
            let merkle: Vec<String> = self
                .coinbase_merkle_branch
                .iter()
                .map(|n| format!("\"{}\"", hex::encode(n.as_byte_array())))
                .collect();
            format!(
                r#""job_id":"{:x}","merkle":[{}]"#,
                self.id,
                merkle.join(",")
            )
        } else {
            format!(r#""transactions":[{}]"#, self.txs_json)
        };
        let mut out = String::with_capacity(body.len() + 1024);
        write!(
            out,
            concat!(
                r#"{{"capabilities":["proposal"],"version":{},"rules":["csv","!segwit","taproot"],"#,
                r#""vbavailable":{{}},"vbrequired":0,"previousblockhash":"{}",{},"#,
                r#""coinbaseaux":{{}},"coinbasevalue":{},"longpollid":"{}","target":"{}","mintime":{},"#,
                r#""mutable":["time","transactions","prevblock"],"noncerange":"00000000ffffffff","#,
                r#""sigoplimit":{},"sizelimit":{},"weightlimit":{},"curtime":{},"bits":"{:08x}","#,
                r#""height":{},"default_witness_commitment":"{}"}}"#
            ),
            self.version,
            self.prev_hash,
            body,
            self.value(),
            self.longpollid(),
            hex::encode(self.target().to_be_bytes()),
            self.mintime,
            MAX_BLOCK_SIGOPS_COST,
            MAX_BLOCK_WEIGHT,
            MAX_BLOCK_WEIGHT,
            curtime.max(self.mintime),
            self.bits.to_consensus(),
            self.height,
            hex::encode(self.witness_commitment.as_bytes()),
        )
        .expect("writing to a String");
        out
    }

    /// A complete block on this template with `coinbase` (what a pool would submit).
    pub fn block_with(&self, coinbase: Transaction, time: u32, nonce: u32) -> Block {
        assemble_block(
            bitcoin::block::Header {
                version: bitcoin::block::Version::from_consensus(self.version),
                prev_blockhash: self.prev_hash,
                merkle_root: TxMerkleNode::all_zeros(),
                time,
                bits: self.bits,
                nonce,
            },
            coinbase,
            &self.coinbase_merkle_branch,
            self.txs.iter().map(|t| t.tx.clone()),
        )
    }
}

/// A block of `coinbase` then `txs`, whose header gets the merkle root the coinbase folds
/// to along `branch` (the branch of `txs`, as every miner computes it).
pub fn assemble_block(
    mut header: bitcoin::block::Header,
    coinbase: Transaction,
    branch: &[TxMerkleNode],
    txs: impl Iterator<Item = Transaction>,
) -> Block {
    header.merkle_root = merkle_root_from_branch(coinbase.compute_txid().to_raw_hash(), branch);
    Block {
        header,
        txdata: std::iter::once(coinbase).chain(txs).collect(),
    }
}

/// The marker transaction of template `id`: spends a fictional outpoint derived from the
/// seed and id, pays nothing, and says `SBMK` + id in an OP_RETURN.
pub fn marker_tx(seed: u64, id: u64) -> Transaction {
    let mut preimage = b"stratum-bench marker".to_vec();
    preimage.extend_from_slice(&seed.to_le_bytes());
    preimage.extend_from_slice(&id.to_le_bytes());
    let prev = Txid::from_raw_hash(sha256d::Hash::hash(&preimage));
    let mut payload = MARKER_TAG.to_vec();
    payload.extend_from_slice(&id.to_le_bytes());
    Transaction {
        version: Version::TWO,
        lock_time: absolute::LockTime::ZERO,
        input: vec![TxIn {
            previous_output: OutPoint::new(prev, 0),
            script_sig: ScriptBuf::new(),
            sequence: Sequence::MAX,
            witness: Witness::new(),
        }],
        output: vec![TxOut {
            value: Amount::ZERO,
            script_pubkey: ScriptBuf::new_op_return(
                PushBytesBuf::try_from(payload).expect("12 bytes"),
            ),
        }],
    }
}

/// The template id a marker transaction carries, if `tx` is one.
pub fn marker_id(tx: &Transaction) -> Option<u64> {
    let out = tx.output.first()?;
    let bytes = out.script_pubkey.as_bytes();
    // OP_RETURN, push of 12 bytes, "SBMK", 8-byte id.
    if bytes.len() == 14 && bytes[0] == 0x6a && bytes[1] == 12 && &bytes[2..6] == MARKER_TAG {
        Some(u64::from_le_bytes(bytes[6..14].try_into().ok()?))
    } else {
        None
    }
}

/// The OP_RETURN output committing to the block's witnesses, the coinbase's wtxid
/// counting as zero and the witness reserved value being 32 zero bytes.
pub fn witness_commitment_script(
    non_coinbase_wtxids: impl Iterator<Item = sha256d::Hash>,
) -> ScriptBuf {
    let leaves = std::iter::once(sha256d::Hash::all_zeros()).chain(non_coinbase_wtxids);
    let root = bitcoin::merkle_tree::calculate_root(leaves).expect("at least the coinbase");
    let commitment =
        Block::compute_witness_commitment(&WitnessMerkleNode::from_raw_hash(root), &[0u8; 32]);
    let mut data = vec![0xaa, 0x21, 0xa9, 0xed];
    data.extend_from_slice(commitment.as_byte_array());
    Builder::new()
        .push_opcode(opcodes::all::OP_RETURN)
        .push_slice(PushBytesBuf::try_from(data).expect("36 bytes"))
        .into_script()
}

pub use mining::{coinbase_merkle_branch, merkle_root_from_branch};

/// A coinbase for `height` paying `value`: BIP34 height first in the scriptSig, then
/// `tag`; with a witness commitment it also carries the 32-byte reserved value.
pub fn network_coinbase(
    height: u32,
    tag: &[u8],
    value: u64,
    witness_commitment: Option<&ScriptBuf>,
) -> Transaction {
    let script_sig = Builder::new()
        .push_int(i64::from(height))
        .push_slice(PushBytesBuf::try_from(tag.to_vec()).expect("short tag"))
        .into_script();
    let mut output = vec![TxOut {
        value: Amount::from_sat(value),
        // Anyone-can-spend P2WSH(OP_TRUE): the simulated network's miners need no keys.
        script_pubkey: ScriptBuf::new_p2wsh(&WScriptHash::hash(&[0x51])),
    }];
    let mut witness = Witness::new();
    if let Some(commitment) = witness_commitment {
        output.push(TxOut {
            value: Amount::ZERO,
            script_pubkey: commitment.clone(),
        });
        witness.push([0u8; 32]);
    }
    Transaction {
        version: Version::TWO,
        lock_time: absolute::LockTime::ZERO,
        input: vec![TxIn {
            previous_output: OutPoint::null(),
            script_sig,
            sequence: Sequence::MAX,
            witness,
        }],
        output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsidy_halves() {
        assert_eq!(subsidy(0), 5_000_000_000);
        assert_eq!(subsidy(209_999), 5_000_000_000);
        assert_eq!(subsidy(210_000), 2_500_000_000);
        assert_eq!(subsidy(840_000), 312_500_000);
        assert_eq!(subsidy(64 * 210_000), 0);
    }

    #[test]
    fn marker_carries_its_template_id() {
        let tx = marker_tx(1, 4242);
        assert_eq!(marker_id(&tx), Some(4242));
        assert_eq!(marker_id(&network_coinbase(5, b"x", 1, None)), None);
    }
}
