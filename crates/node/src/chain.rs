//! The best chain as this node knows it, plus the side blocks it has seen.

use bitcoin::block::{Header, Version};
use bitcoin::hashes::Hash;
use bitcoin::{Block, BlockHash, CompactTarget, TxMerkleNode};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A block the node has accepted.
#[derive(Debug)]
pub struct ChainBlock {
    pub block: Block,
    pub hash: BlockHash,
    pub height: u32,
    /// Total fees paid by the block's transactions.
    pub fees: u64,
    /// Median of the previous 11 header times, including this block's (bitcoind's
    /// `mediantime` for this block).
    pub median_time: u32,
    pub chainwork: [u8; 32],
}

pub struct Chain {
    blocks: HashMap<BlockHash, Arc<ChainBlock>>,
    /// Best chain, from the base block up.
    active: Vec<BlockHash>,
    base_height: u32,
    /// Blocks that failed validation, so a resubmission gets `duplicate-invalid`.
    invalid: HashSet<BlockHash>,
    /// The headers below the base block.
    ancestry: Ancestry,
}

impl Chain {
    /// A chain whose first full block is `base` (built on `ancestry`'s top), at the
    /// height above the ancestry.
    pub fn new(base: Block, ancestry: Ancestry) -> Self {
        let base_height = ancestry.height;
        let hash = base.block_hash();
        let time = base.header.time;
        let mut work = base.header.work();
        if let Some(below) = base_height.checked_sub(1) {
            work = work + ancestry.chainwork(below);
        }
        let entry = ChainBlock {
            block: base,
            hash,
            height: base_height,
            fees: 0,
            median_time: time,
            chainwork: work.to_be_bytes(),
        };
        Chain {
            blocks: HashMap::from([(hash, Arc::new(entry))]),
            active: vec![hash],
            base_height,
            invalid: HashSet::new(),
            ancestry,
        }
    }

    /// The headers below the base block.
    pub fn ancestry(&self) -> &Ancestry {
        &self.ancestry
    }

    pub fn tip(&self) -> &Arc<ChainBlock> {
        &self.blocks[self.active.last().expect("chain has a base block")]
    }

    pub fn height(&self) -> u32 {
        self.tip().height
    }

    pub fn get(&self, hash: &BlockHash) -> Option<&Arc<ChainBlock>> {
        self.blocks.get(hash)
    }

    pub fn at_height(&self, height: u32) -> Option<&Arc<ChainBlock>> {
        let index = height.checked_sub(self.base_height)? as usize;
        self.active.get(index).map(|h| &self.blocks[h])
    }

    pub fn is_active(&self, hash: &BlockHash) -> bool {
        self.get(hash)
            .and_then(|b| self.at_height(b.height))
            .is_some_and(|b| b.hash == *hash)
    }

    pub fn base_height(&self) -> u32 {
        self.base_height
    }

    /// Median time past for a block built on the tip.
    pub fn median_time_past(&self) -> u32 {
        self.tip().median_time
    }

    /// Links `block` (already validated) on top of its parent. It becomes the tip when its
    /// parent is the tip; otherwise it is kept as a side block. Returns the entry.
    pub fn connect(&mut self, block: Block, fees: u64) -> Arc<ChainBlock> {
        let parent = self.blocks[&block.header.prev_blockhash].clone();
        let hash = block.block_hash();
        let mut times: Vec<u32> = self.recent_times(&parent, 10);
        times.push(block.header.time);
        times.sort_unstable();
        let work = bitcoin::pow::Work::from_be_bytes(parent.chainwork) + block.header.work();
        let entry = Arc::new(ChainBlock {
            block,
            hash,
            height: parent.height + 1,
            fees,
            median_time: times[times.len() / 2],
            chainwork: work.to_be_bytes(),
        });
        self.blocks.insert(hash, entry.clone());
        if parent.hash == *self.active.last().expect("base") {
            self.active.push(hash);
        }
        entry
    }

    /// Header times of `from` and up to `n - 1` of its ancestors.
    fn recent_times(&self, from: &ChainBlock, n: usize) -> Vec<u32> {
        let mut times = Vec::with_capacity(n);
        let mut cursor = Some(from);
        while let Some(b) = cursor {
            if times.len() == n {
                break;
            }
            times.push(b.block.header.time);
            cursor = self
                .blocks
                .get(&b.block.header.prev_blockhash)
                .map(|a| a.as_ref());
        }
        times
    }

    pub fn mark_invalid(&mut self, hash: BlockHash) {
        self.invalid.insert(hash);
    }

    pub fn is_invalid(&self, hash: &BlockHash) -> bool {
        self.invalid.contains(hash)
    }

    /// How many blocks of the best chain are at or above `hash` (bitcoind's
    /// `confirmations`; -1 for a side block).
    pub fn confirmations(&self, hash: &BlockHash) -> i64 {
        match self.get(hash) {
            Some(b) if self.is_active(hash) => i64::from(self.height() - b.height) + 1,
            _ => -1,
        }
    }
}

/// The deterministic base block the simulated chain starts from, on `prev`.
pub fn base_block(bits: CompactTarget, time: u32, seed: u64, prev: BlockHash) -> Block {
    let coinbase = crate::template::network_coinbase(0, &seed.to_le_bytes(), 0, None);
    let merkle_root = TxMerkleNode::from_raw_hash(coinbase.compute_txid().to_raw_hash());
    Block {
        header: Header {
            version: Version::from_consensus(0x2000_0000),
            prev_blockhash: prev,
            merkle_root,
            time,
            bits,
            nonce: 0,
        },
        txdata: vec![coinbase],
    }
}

/// Heights between two kept headers of the ancestry.
const CHECKPOINT_EVERY: u32 = 1024;

/// The headers below the base block, so that every height of the chain answers as on a
/// real one: regtest's genesis block at height 0, then one header a height, each on the
/// one before, at the base block's difficulty, their times spread evenly from the
/// genesis's to the base's. They carry no transactions (the node answers for their blocks
/// as a pruned node does). One header in every [`CHECKPOINT_EVERY`] is kept; the others
/// are rebuilt from the kept one below them.
pub struct Ancestry {
    genesis: Header,
    bits: CompactTarget,
    base_time: u32,
    /// The base block's height: the ancestry is the heights below it.
    height: u32,
    seed: u64,
    /// The header at every multiple of `CHECKPOINT_EVERY` below `height`.
    checkpoints: Vec<Header>,
    /// The hash of the header just below the base block.
    top: Option<BlockHash>,
    /// Hash to height, built the first time a header is looked up by hash.
    index: std::sync::OnceLock<HashMap<BlockHash, u32>>,
}

impl Ancestry {
    /// The ancestry of a base block at `height` with `bits` and `base_time`.
    pub fn new(bits: CompactTarget, base_time: u32, height: u32, seed: u64) -> Ancestry {
        let genesis = bitcoin::constants::genesis_block(bitcoin::Network::Regtest).header;
        let mut a = Ancestry {
            genesis,
            bits,
            base_time,
            height,
            seed,
            checkpoints: Vec::new(),
            top: None,
            index: std::sync::OnceLock::new(),
        };
        let mut top = None;
        let mut checkpoints = Vec::new();
        for (h, header, hash) in a.walk() {
            if h % CHECKPOINT_EVERY == 0 {
                checkpoints.push(header);
            }
            top = Some(hash);
        }
        (a.checkpoints, a.top) = (checkpoints, top);
        a
    }

    /// Every header of the ancestry from genesis up, with its height and hash.
    fn walk(&self) -> impl Iterator<Item = (u32, Header, BlockHash)> + '_ {
        (0..self.height).scan(BlockHash::all_zeros(), |prev, h| {
            let header = self.header_on(h, *prev);
            *prev = header.block_hash();
            Some((h, header, *prev))
        })
    }

    /// What the base block builds on: the top header's hash (zeros under a base at 0).
    pub fn top(&self) -> BlockHash {
        self.top.unwrap_or_else(BlockHash::all_zeros)
    }

    /// The header at `height`, on `prev` (the genesis's at 0).
    fn header_on(&self, height: u32, prev: BlockHash) -> Header {
        if height == 0 {
            return self.genesis;
        }
        let span = u64::from(self.base_time.saturating_sub(self.genesis.time));
        let time = u64::from(self.genesis.time) + span * u64::from(height) / u64::from(self.height);
        // Distinct and deterministic per height and seed; no transactions stand behind it.
        let mut root = [0u8; 32];
        root[..4].copy_from_slice(&height.to_le_bytes());
        root[4..12].copy_from_slice(&self.seed.to_le_bytes());
        Header {
            version: Version::from_consensus(0x2000_0000),
            prev_blockhash: prev,
            merkle_root: TxMerkleNode::from_byte_array(root),
            time: time as u32,
            bits: self.bits,
            nonce: height,
        }
    }

    /// The header at `height`, below the base block.
    pub fn header(&self, height: u32) -> Option<Header> {
        if height >= self.height {
            return None;
        }
        let mut header = self.checkpoints[(height / CHECKPOINT_EVERY) as usize];
        for h in height - height % CHECKPOINT_EVERY + 1..=height {
            header = self.header_on(h, header.block_hash());
        }
        Some(header)
    }

    /// The height of an ancestor by its hash. The first call walks the ancestry once.
    pub fn height_of(&self, hash: &BlockHash) -> Option<u32> {
        let index = self
            .index
            .get_or_init(|| self.walk().map(|(h, _, hash)| (hash, h)).collect());
        index.get(hash).copied()
    }

    /// Chain work up to and including `height`: every header counts the base's difficulty.
    pub fn chainwork(&self, height: u32) -> bitcoin::pow::Work {
        let one = Header {
            bits: self.bits,
            ..self.genesis
        }
        .work();
        (0..=height).fold(bitcoin::pow::Work::from_be_bytes([0; 32]), |w, _| w + one)
    }
}
