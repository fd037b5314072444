//! Bitcoin mining arithmetic shared by the node, the pools and the miners, so that every
//! role computes merkle roots, targets and difficulties the same way.

pub mod farm;
pub mod hashing;
pub mod refresh;

use bitcoin::hashes::{sha256d, Hash};
use bitcoin::{BlockHash, CompactTarget, Target, TxMerkleNode, Txid};

/// The merkle branch of the coinbase (index 0) in a block whose other txids are `txids`.
pub fn coinbase_merkle_branch(txids: &[Txid]) -> Vec<TxMerkleNode> {
    let mut level: Vec<sha256d::Hash> = std::iter::once(sha256d::Hash::all_zeros())
        .chain(txids.iter().map(|t| t.to_raw_hash()))
        .collect();
    let mut branch = Vec::new();
    while level.len() > 1 {
        branch.push(TxMerkleNode::from_raw_hash(level[1]));
        if level.len() % 2 == 1 {
            level.push(*level.last().expect("not empty"));
        }
        level = level.chunks(2).map(|p| hash_pair(&p[0], &p[1])).collect();
    }
    branch
}

/// A job's identity without the node's help: its prev hash and merkle branches, hashed
/// (sha256d, hex). Two templates on one tip with the same transactions in the same order
/// give the same work whatever their coinbase, so they are one template here.
pub fn work_id(prev_hash: &BlockHash, branch: &[TxMerkleNode]) -> String {
    let mut bytes = Vec::with_capacity(32 * (1 + branch.len()));
    bytes.extend_from_slice(prev_hash.as_byte_array());
    for node in branch {
        bytes.extend_from_slice(node.as_byte_array());
    }
    sha256d::Hash::hash(&bytes).to_string()
}

/// Folds a coinbase txid up its merkle branch, as every miner does.
pub fn merkle_root_from_branch(
    coinbase_txid: sha256d::Hash,
    branch: &[TxMerkleNode],
) -> TxMerkleNode {
    let root = branch.iter().fold(coinbase_txid, |acc, node| {
        hash_pair(&acc, &node.to_raw_hash())
    });
    TxMerkleNode::from_raw_hash(root)
}

fn hash_pair(a: &sha256d::Hash, b: &sha256d::Hash) -> sha256d::Hash {
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(a.as_byte_array());
    both[32..].copy_from_slice(b.as_byte_array());
    sha256d::Hash::hash(&both)
}

/// Bitcoin Core's regtest proof-of-work limit.
pub const REGTEST_BITS: u32 = 0x207f_ffff;

/// The target of `difficulty` (1.0 is the `1d00ffff` target, as pools count share
/// difficulty), to full precision; saturates at the largest 256-bit value.
pub fn target_from_difficulty(difficulty: f64) -> Target {
    // target = 0xffff * 2^208 / difficulty = mantissa * 2^shift, mantissa of 53 bits.
    let value = 65535.0 / difficulty;
    if !(value.is_finite() && value > 0.0) {
        return Target::MAX_ATTAINABLE_REGTEST;
    }
    let exp = value.log2().floor() as i32;
    let mantissa = (value / 2f64.powi(exp - 52)) as u64; // in [2^52, 2^53)
    let shift = exp - 52 + 208;
    let mut be = [0u8; 32];
    if shift + 53 > 256 {
        return Target::from_be_bytes([0xff; 32]);
    }
    for bit in 0..53 {
        if mantissa >> bit & 1 == 1 {
            let pos = bit + shift; // bit position in the 256-bit number
            if (0..256).contains(&pos) {
                be[31 - (pos / 8) as usize] |= 1 << (pos % 8);
            }
        }
    }
    Target::from_be_bytes(be)
}

/// The share difficulty a block hash meets (what pools call the share's difficulty).
pub fn hash_difficulty(hash: &BlockHash) -> f64 {
    let mut be = hash.to_byte_array();
    be.reverse();
    let value = be.iter().fold(0f64, |acc, b| acc * 256.0 + f64::from(*b));
    65535.0 * 2f64.powi(208) / value.max(1.0)
}

/// Encodes `difficulty` (relative to the `1d00ffff` target) as compact bits, clamped to
/// the regtest limit at the easy end.
pub fn compact_from_difficulty(difficulty: f64) -> CompactTarget {
    // target = 0xffff * 2^208 / difficulty, as mantissa * 256^(exponent - 3).
    let target = 65535.0 / difficulty * 2f64.powi(208);
    let limit = f64::from(0x7f_ffffu32) * 2f64.powi(8 * (0x20 - 3));
    if target.is_nan() || target >= limit {
        return CompactTarget::from_consensus(REGTEST_BITS);
    }
    let mut exponent = 3i32;
    let mut mantissa = target;
    while mantissa >= f64::from(0x80_0000u32) {
        mantissa /= 256.0;
        exponent += 1;
    }
    while mantissa < f64::from(0x8000u32) && exponent > 3 {
        mantissa *= 256.0;
        exponent -= 1;
    }
    let mantissa = (mantissa as u32).clamp(1, 0x7f_ffff);
    CompactTarget::from_consensus(((exponent as u32) << 24) | mantissa)
}

/// Hashes a miner needs on average for one share (or block) at `difficulty`.
pub fn hashes_per_difficulty(difficulty: f64) -> f64 {
    difficulty * 2f64.powi(32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difficulty_one_is_the_classic_target() {
        assert_eq!(compact_from_difficulty(1.0).to_consensus(), 0x1d00_ffff);
        assert_eq!(
            target_from_difficulty(1.0),
            Target::from_compact(CompactTarget::from_consensus(0x1d00_ffff))
        );
    }

    #[test]
    fn difficulty_round_trips_within_encoding_precision() {
        for d in [1e-6, 0.001, 0.5, 3.0, 1234.5, 1e12] {
            let got = Target::from_compact(compact_from_difficulty(d)).difficulty_float();
            assert!(
                (got / d - 1.0).abs() < 1e-3,
                "difficulty {d} came back as {got}"
            );
            let exact = target_from_difficulty(d).difficulty_float();
            assert!(
                (exact / d - 1.0).abs() < 1e-9,
                "difficulty {d} came back as {exact}"
            );
        }
    }

    #[test]
    fn easy_extremes_saturate() {
        assert_eq!(compact_from_difficulty(1e-30).to_consensus(), REGTEST_BITS);
        assert_eq!(
            target_from_difficulty(1e-30),
            Target::from_be_bytes([0xff; 32])
        );
    }

    #[test]
    fn a_hash_meets_exactly_the_difficulties_up_to_its_own() {
        let mut be = [0u8; 32];
        be[4] = 0x01; // 2^216: difficulty 0xffff / 256
        be.reverse();
        let hash = BlockHash::from_byte_array(be);
        let d = hash_difficulty(&hash);
        assert!((d - 65535.0 / 256.0).abs() < 1e-9);
        assert!(target_from_difficulty(d * 0.999).is_met_by(hash));
        assert!(!target_from_difficulty(d * 1.001).is_met_by(hash));
    }

    #[test]
    fn branch_folds_to_the_full_merkle_root() {
        for n in 1..9u8 {
            let txids: Vec<Txid> = (0..=n).map(|i| Txid::from_byte_array([i; 32])).collect();
            let expected =
                bitcoin::merkle_tree::calculate_root(txids.iter().map(|t| t.to_raw_hash()))
                    .unwrap();
            let branch = coinbase_merkle_branch(&txids[1..]);
            assert_eq!(branch[0].to_raw_hash(), txids[1].to_raw_hash());
            let got = merkle_root_from_branch(txids[0].to_raw_hash(), &branch);
            assert_eq!(
                got.to_raw_hash(),
                expected,
                "{n} transactions after the coinbase"
            );
        }
    }
}

/// Scans the nonces of one block header with real SHA256d, the way mining hardware does:
/// the SHA256 state after the header's first 64 bytes is computed once, and each nonce
/// only hashes the last 16 bytes (and the second SHA256).
#[derive(Clone)]
pub struct HeaderScanner {
    midstate: bitcoin::hashes::sha256::HashEngine,
    tail: [u8; 16],
    next_nonce: u64,
}

impl HeaderScanner {
    pub fn new(header: &bitcoin::block::Header) -> HeaderScanner {
        use bitcoin::hashes::HashEngine;
        let bytes = bitcoin::consensus::serialize(header);
        let mut midstate = bitcoin::hashes::sha256::HashEngine::default();
        midstate.input(&bytes[..64]);
        let mut tail = [0; 16];
        tail.copy_from_slice(&bytes[64..80]);
        HeaderScanner {
            midstate,
            tail,
            next_nonce: 0,
        }
    }

    /// Every nonce has been tried: the header needs a new extranonce (or time).
    pub fn exhausted(&self) -> bool {
        self.next_nonce > u64::from(u32::MAX)
    }
}

/// Each item is a nonce and the header's hash with it; the scan ends once every nonce
/// was tried.
impl Iterator for HeaderScanner {
    type Item = (u32, BlockHash);

    fn next(&mut self) -> Option<(u32, BlockHash)> {
        use bitcoin::hashes::{sha256, HashEngine};
        if self.exhausted() {
            return None;
        }
        let nonce = self.next_nonce as u32;
        self.next_nonce += 1;
        self.tail[12..16].copy_from_slice(&nonce.to_le_bytes());
        let mut engine = self.midstate.clone();
        engine.input(&self.tail);
        let first = sha256::Hash::from_engine(engine);
        let hash =
            BlockHash::from_byte_array(sha256::Hash::hash(first.as_byte_array()).to_byte_array());
        Some((nonce, hash))
    }
}

/// A nonce that makes `header` meet its own target, scanned on `threads` threads (each
/// its share of the nonces), or `None` when none of the 2^32 does (a new time or coinbase
/// is then needed). What mines a block where the chain's proof of work is real: a custom
/// signet's is about 4.8 million hashes.
pub fn grind(header: &bitcoin::block::Header, threads: usize) -> Option<bitcoin::block::Header> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let target = header.target();
    let threads = threads.max(1) as u64;
    let span = (1u64 << 32).div_ceil(threads);
    let found = AtomicBool::new(false);
    let nonce = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let found = &found;
                scope.spawn(move || {
                    let mut scanner = HeaderScanner::new(header);
                    scanner.next_nonce = k * span;
                    let end = ((k + 1) * span).min(1 << 32);
                    while scanner.next_nonce < end {
                        // Every 64 Ki nonces, see whether another thread has it.
                        if scanner.next_nonce.is_multiple_of(65_536)
                            && found.load(Ordering::Relaxed)
                        {
                            return None;
                        }
                        let (nonce, hash) = scanner.next()?;
                        if target.is_met_by(hash) {
                            found.store(true, Ordering::Relaxed);
                            return Some(nonce);
                        }
                    }
                    None
                })
            })
            .collect();
        (workers.into_iter())
            .filter_map(|w| w.join().expect("a grinding thread panicked"))
            .next()
    })?;
    Some(bitcoin::block::Header { nonce, ..*header })
}

#[cfg(test)]
mod grind_tests {
    use super::*;
    use bitcoin::block::{Header, Version};
    use bitcoin::hashes::Hash;

    /// At a target of one hash in 2^12, a few thousand nonces find a block, and the
    /// header found meets the target by the consensus check itself.
    #[test]
    fn grinding_finds_a_nonce_that_meets_the_headers_own_target() {
        let header = Header {
            version: Version::TWO,
            prev_blockhash: BlockHash::all_zeros(),
            merkle_root: TxMerkleNode::all_zeros(),
            time: 1_700_000_000,
            bits: bitcoin::CompactTarget::from_consensus(0x1f0f_ffff),
            nonce: 0,
        };
        for threads in [1, 3] {
            let solved = grind(&header, threads).expect("a nonce in 2^32");
            assert!(solved.target().is_met_by(solved.block_hash()));
            assert_eq!(Header { nonce: 0, ..solved }, header);
        }
    }
}
