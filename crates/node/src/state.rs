//! The simulated network as one node sees it, driven by virtual time.
//!
//! Everything random comes from seeded streams (one per process: transaction contents,
//! transaction arrivals, block arrivals), and events are applied in virtual-time order, so
//! a seed reproduces the same chain and mempool whatever the wall clock does. Blocks
//! submitted by miners under test are the only input from outside.

use crate::chain::{base_block, Ancestry, Chain, ChainBlock};
use crate::config::NodeConfig;
use crate::mempool::{Mempool, MempoolTx};
use crate::template::{
    assemble_block, coinbase_merkle_branch, network_coinbase, select, witness_commitment_script,
    Template, BLOCK_VERSION,
};
use crate::txgen::TxGenerator;
use crate::validate::{check_block, Checks, Context, Reject, Verdict};
use bitcoin::hashes::Hash;
use bitcoin::{Block, BlockHash, CompactTarget, ScriptBuf, Target, TxMerkleNode, Txid};
use model::network::Arrivals;
use probe::{Event, Recorder, TipCause};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

const NS: u64 = 1_000_000_000;
/// Templates kept for submitblocklight; an older job gets "job_id data not available".
const RECENT_TEMPLATES: usize = 32;
/// Who asked for a template: a getblocktemplate client (by its RPC user, one cache each),
/// or a face's connection that decides itself when to build (`tdp 127.0.0.1:PORT`,
/// `ipc 2`).
#[derive(Clone, Copy)]
pub enum Asker<'a> {
    Client(&'a str),
    Face(&'a str),
}

/// What a template is built from, taken from the state in a moment
/// ([`NodeState::order_template`]): the build runs without the state's lock, so sides that
/// ask at once build side by side and none waits on another's build.
pub struct TemplateOrder {
    id: u64,
    seed: u64,
    mempool: Arc<Mempool>,
    prev_hash: BlockHash,
    height: u32,
    bits: CompactTarget,
    mintime: u32,
    now_ns: u64,
}

/// A template built from an order, with how long it took and how long its asker waited for
/// the node's state around it (what another face's hold of the state cost it).
pub struct TimedBuild {
    template: Template,
    queued_ns: u64,
    build_ns: u64,
}

impl TimedBuild {
    /// Builds `order` now; `queued_ns` is what the asker already waited for the state.
    pub fn run(order: &TemplateOrder, queued_ns: u64) -> TimedBuild {
        let started = std::time::Instant::now();
        let template = Template::build(
            order.id,
            order.seed,
            &order.mempool,
            order.prev_hash,
            order.height,
            order.bits,
            order.mintime,
            order.now_ns,
        );
        TimedBuild {
            template,
            queued_ns,
            build_ns: started.elapsed().as_nanos() as u64,
        }
    }

    /// Adds what the asker waited for the state to file the build.
    pub fn queued_more(mut self, ns: u64) -> TimedBuild {
        self.queued_ns += ns;
        self
    }
}

/// What became of a block a follower's peer relayed.
#[derive(Debug)]
pub enum PeerBlock {
    /// It extends the tip: the new tip.
    Connected(Arc<ChainBlock>),
    /// This node has it already.
    Known,
    /// Its parent is unknown here (a block this node missed): fetch the parent first.
    Orphan { parent: BlockHash },
    /// Its parent is known but not the tip.
    Fork,
}

/// What relaying one transaction costs a peer besides the transaction: the inv and
/// getdata entries (36 bytes each) and their share of message headers.
const TX_RELAY_OVERHEAD_BYTES: u64 = 80;

/// The answer to a submitted block.
#[derive(Debug)]
pub enum Submission {
    /// Accepted and now the tip.
    Accepted(Arc<ChainBlock>),
    /// Not the tip: bitcoind's reject reason (`inconclusive` for a valid side block).
    Rejected(String),
}

/// A verdict as submitblock words it: `None` for a block that becomes the tip,
/// `inconclusive` for a valid block beside it, else the reason it is refused.
fn submitblock_reason(verdict: &Result<Verdict, Reject>) -> Option<String> {
    match verdict {
        Ok(v) if v.extends_tip => None,
        Ok(_) => Some("inconclusive".to_string()),
        Err(Reject(reason)) => Some(reason.clone()),
    }
}

pub struct NodeState {
    cfg: NodeConfig,
    bits: CompactTarget,
    time_base: u32,
    chain: Chain,
    /// Shared with builds in flight outside the lock; a change while one holds it copies it.
    mempool: Arc<Mempool>,
    txgen: TxGenerator,
    tx_arrivals: ChaCha8Rng,
    block_arrivals: ChaCha8Rng,
    next_tx_ns: Option<u64>,
    next_block_ns: Option<u64>,
    scripted: VecDeque<u64>,
    /// Virtual nanoseconds since start.
    now_ns: u64,
    /// getblocktemplate's cache, one per RPC client (user name): each pool is served as
    /// by a bitcoind of its own, so one pool's requests never age another's templates.
    templates: HashMap<String, Arc<Template>>,
    next_template_id: u64,
    /// Marker transactions of the templates handed out on the current tip.
    markers: HashMap<Txid, Arc<MempoolTx>>,
    /// The last templates handed out on the current tip (for submitblocklight), oldest
    /// first, at most [`RECENT_TEMPLATES`]: each holds megabytes of rendered JSON.
    recent: VecDeque<Arc<Template>>,
    network_blocks: u64,
    /// Bytes a follower's mempool received by transaction relay (a model: the stream is
    /// regenerated locally, so this is what relaying it would have cost).
    relayed_tx_bytes: u64,
    /// Bytes a follower's blocks cost as BIP152 compact blocks, received and sent (a model:
    /// the emulation carries whole blocks, a real peer would not).
    compact_blocks: CompactBlockBytes,
    /// Blocks a follower found and passed to its peer: when the peer's feed brings one
    /// back, a real node already has it and receives nothing.
    sent_blocks: HashSet<BlockHash>,
    recorder: Recorder,
}

/// Cumulative modelled compact-block bytes of a follower, by direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactBlockBytes {
    pub received: u64,
    pub sent: u64,
}

impl NodeState {
    /// Builds the network at virtual time zero. `now_unix` is used when the config has no
    /// `time_base`.
    pub fn new(cfg: NodeConfig, recorder: Recorder, now_unix: u32) -> Result<Self, String> {
        cfg.validate()?;
        let bits = cfg.bits();
        let time_base = cfg.time_base.unwrap_or(now_unix);
        let stream = |n: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
            rng.set_stream(n);
            rng
        };
        let base_time = time_base.saturating_sub(600);
        let ancestry = Ancestry::new(bits, base_time, cfg.start_height, cfg.seed);
        let chain = Chain::new(
            base_block(bits, base_time, cfg.seed, ancestry.top()),
            ancestry,
        );
        let mut state = NodeState {
            txgen: TxGenerator::new(stream(1), &cfg.mempool),
            tx_arrivals: stream(2),
            block_arrivals: stream(3),
            scripted: cfg
                .scripted_arrivals
                .iter()
                .flatten()
                .map(|d| d.as_nanos() as u64)
                .collect(),
            bits,
            time_base,
            chain,
            mempool: Arc::default(),
            next_tx_ns: None,
            next_block_ns: None,
            now_ns: 0,
            templates: HashMap::new(),
            next_template_id: 1,
            markers: HashMap::new(),
            recent: VecDeque::new(),
            network_blocks: 0,
            relayed_tx_bytes: 0,
            compact_blocks: CompactBlockBytes::default(),
            sent_blocks: HashSet::new(),
            recorder,
            cfg,
        };
        if let Some(f) = &state.cfg.follower {
            state.next_template_id = f.template_ids_from;
        }
        for _ in 0..state.cfg.mempool.initial_txs {
            state.add_generated_tx();
        }
        state.next_tx_ns = state.draw_next_tx(0);
        // A follower's blocks come from its peer.
        if state.cfg.follower.is_none() {
            state.next_block_ns = state.draw_next_block(0);
        }
        Ok(state)
    }

    /// Applies every arrival up to virtual time `t_ns`, in order. Returns the blocks that
    /// became the tip.
    pub fn advance_to(&mut self, t_ns: u64) -> Vec<Arc<ChainBlock>> {
        let mut tips = Vec::new();
        loop {
            let tx_due = self.next_tx_ns.filter(|&t| t <= t_ns);
            let block_due = self.next_block_ns.filter(|&t| t <= t_ns);
            match (tx_due, block_due) {
                (Some(tx), block) if block.is_none_or(|b| tx < b) => {
                    self.now_ns = tx;
                    self.add_generated_tx();
                    self.next_tx_ns = self.draw_next_tx(tx);
                }
                (_, Some(block)) => {
                    self.now_ns = block;
                    tips.push(self.mine_network_block(None));
                    self.next_block_ns = self.draw_next_block(block);
                }
                (None, None) => break,
                (Some(_), None) => unreachable!("handled by the first arm"),
            }
        }
        self.now_ns = self.now_ns.max(t_ns);
        tips
    }

    /// Virtual time of the next scheduled arrival.
    pub fn next_event_ns(&self) -> Option<u64> {
        match (self.next_tx_ns, self.next_block_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Adds one generated transaction now (what an arrival does; benchmarks use it to
    /// force a fresh template).
    pub fn add_generated_tx(&mut self) {
        let generated = self.txgen.next_tx();
        let tx = MempoolTx::new(generated.tx, generated.fee);
        if let Some(follower) = &self.cfg.follower {
            if !reaches(&tx.txid, follower.overlap) {
                return;
            }
            self.relayed_tx_bytes += tx.tx.total_size() as u64 + TX_RELAY_OVERHEAD_BYTES;
        }
        Arc::make_mut(&mut self.mempool).insert(tx, self.cfg.mempool.max_txs);
    }

    /// Bytes transaction relay brought a follower so far (zero for the network itself).
    pub fn relayed_tx_bytes(&self) -> u64 {
        self.relayed_tx_bytes
    }

    /// Bytes a follower's blocks cost as compact blocks so far (zero for the network).
    pub fn compact_block_bytes(&self) -> CompactBlockBytes {
        self.compact_blocks
    }

    /// A follower passes a block found here to its peer, as a compact block: the peer's
    /// mempool is the whole network's, so it lacks none of a block built here.
    pub fn note_block_sent(&mut self, block: &Block) {
        self.compact_blocks.sent += compact_block_size(block, &[]);
        self.sent_blocks.insert(block.block_hash());
    }

    /// Whether this node has the block (on its chain or beside it).
    pub fn has_block(&self, hash: &BlockHash) -> bool {
        self.chain.get(hash).is_some()
    }

    /// A follower takes a block its peer relayed: valid by the peer's word, as after
    /// header sync.
    pub fn accept_peer_block(&mut self, block: Block) -> PeerBlock {
        let hash = block.block_hash();
        if self.chain.get(&hash).is_some() {
            return PeerBlock::Known;
        }
        let parent = block.header.prev_blockhash;
        if parent != self.chain.tip().hash {
            if self.chain.get(&parent).is_none() {
                return PeerBlock::Orphan { parent };
            }
            tracing::warn!(%hash, prev = %parent, "a relayed block forks below this node's tip: ignored (the emulated network does not reorganise)");
            return PeerBlock::Fork;
        }
        let height = self.chain.height() + 1;
        let txids: Vec<Txid> = block.txdata[1..].iter().map(|t| t.compute_txid()).collect();
        let lacked: Vec<usize> = (txids.iter().enumerate())
            .filter(|(_, txid)| self.mempool.get(txid).is_none())
            .map(|(i, _)| i + 1)
            .collect();
        if !self.sent_blocks.remove(&hash) {
            self.compact_blocks.received += compact_block_size(&block, &lacked);
        }
        let claimed: u64 = block.txdata[0]
            .output
            .iter()
            .map(|o| o.value.to_sat())
            .sum();
        let fees = claimed.saturating_sub(crate::template::subsidy(height));
        PeerBlock::Connected(self.connect(block, &txids, fees, TipCause::Network))
    }

    fn draw_next_tx(&mut self, after: u64) -> Option<u64> {
        exponential_after(&mut self.tx_arrivals, after, self.cfg.mempool.tx_rate)
    }

    fn draw_next_block(&mut self, after: u64) -> Option<u64> {
        if self.cfg.scripted_arrivals.is_some() {
            return self.scripted.pop_front();
        }
        let rate = (1.0 - self.cfg.hashrate_share) / self.cfg.block_interval.as_secs_f64();
        match self.cfg.arrivals {
            Arrivals::Poisson => exponential_after(&mut self.block_arrivals, after, rate),
            // One every mean gap from the start (our blocks in between do not move it);
            // none where our miners hold all the hashrate.
            Arrivals::Regular => (rate > 0.0).then(|| after + (NS as f64 / rate).round() as u64),
        }
    }

    /// The rest of the network finds a block on the tip with the best transactions it can
    /// pick. `payout` defaults to an anyone-can-spend output.
    pub fn mine_network_block(&mut self, payout: Option<ScriptBuf>) -> Arc<ChainBlock> {
        self.network_blocks += 1;
        let height = self.chain.height() + 1;
        let picked = select(&self.mempool, 0);
        let commitment =
            witness_commitment_script(picked.txs.iter().map(|t| t.wtxid.to_raw_hash()));
        let tag = format!("/stratum-bench network {}/", self.network_blocks);
        let mut coinbase = network_coinbase(
            height,
            tag.as_bytes(),
            crate::template::subsidy(height) + picked.fees,
            Some(&commitment),
        );
        if let Some(script) = payout {
            coinbase.output[0].script_pubkey = script;
        }
        let txids: Vec<Txid> = picked.txs.iter().map(|t| t.txid).collect();
        let mut block = assemble_block(
            bitcoin::block::Header {
                version: bitcoin::block::Version::from_consensus(BLOCK_VERSION),
                prev_blockhash: self.chain.tip().hash,
                merkle_root: TxMerkleNode::all_zeros(),
                time: self.header_time(),
                bits: self.bits,
                nonce: 0,
            },
            coinbase,
            &coinbase_merkle_branch(&txids),
            picked.txs.iter().map(|t| t.tx.clone()),
        );
        // Real proof of work where it is cheap (easy targets); at real difficulties the
        // rest of the network's blocks are taken on trust, as a peer's would be after
        // header sync.
        let target = Target::from_compact(self.bits);
        for nonce in 0..4096 {
            block.header.nonce = nonce;
            if block.header.validate_pow(target).is_ok() {
                break;
            }
        }
        self.connect(block, &txids, picked.fees, TipCause::Network)
    }

    /// Makes `block` the tip; `txids` are its non-coinbase txids, already computed.
    fn connect(
        &mut self,
        block: Block,
        txids: &[Txid],
        fees: u64,
        cause: TipCause,
    ) -> Arc<ChainBlock> {
        for txid in txids {
            Arc::make_mut(&mut self.mempool).remove(txid);
        }
        let entry = self.chain.connect(block, fees);
        self.markers.clear();
        self.recent.clear();
        self.templates.clear();
        self.recorder.record(Event::TipChanged {
            height: entry.height,
            hash: entry.hash.to_string(),
            prev_hash: entry.block.header.prev_blockhash.to_string(),
            cause,
            tx_count: entry.block.txdata.len() - 1,
            fees_sats: fees,
        });
        entry
    }

    /// The template to hand `client` now: its cached one until the tip changes, or until
    /// the mempool changed and the refresh interval has passed. Built under the caller's
    /// hold of the state; the node's faces build outside it ([`crate::Shared::template`]).
    pub fn template(&mut self, client: &str) -> Arc<Template> {
        if let Some(t) = self.cached_template(client) {
            return t;
        }
        let order = self.order_template();
        let built = TimedBuild::run(&order, 0);
        self.file_template(built, Asker::Client(client))
    }

    /// `client`'s cached template, while it is still the one to hand out.
    pub fn cached_template(&self, client: &str) -> Option<Arc<Template>> {
        let t = self.templates.get(client)?;
        let refresh_ns = self.cfg.template_refresh.as_nanos() as u64;
        let mempool_moved = t.mempool_version != self.mempool.version();
        let young = self.now_ns.saturating_sub(t.built_at_ns) < refresh_ns;
        (t.prev_hash == self.chain.tip().hash && (!mempool_moved || young)).then(|| t.clone())
    }

    /// A template built now, outside the cache getblocktemplate serves: a face that
    /// decides itself when to build (the Template Provider, as Bitcoin Core's does) gets
    /// its own, so one face's refresh timing never shows in another's measurements.
    pub fn build_template(&mut self) -> Arc<Template> {
        let order = self.order_template();
        let built = TimedBuild::run(&order, 0);
        self.file_template(built, Asker::Face("node"))
    }

    /// What the next template is built from, with its id: cheap, so the build itself can
    /// run after the caller lets go of the state.
    pub fn order_template(&mut self) -> TemplateOrder {
        let order = TemplateOrder {
            id: self.next_template_id,
            seed: self.cfg.seed,
            mempool: self.mempool.clone(),
            prev_hash: self.chain.tip().hash,
            height: self.chain.height() + 1,
            bits: self.bits,
            mintime: self.chain.median_time_past() + 1,
            now_ns: self.now_ns,
        };
        self.next_template_id += 1;
        order
    }

    /// Takes a built template into the node: its marker, submitblocklight's list and a
    /// client's cache while it is on the tip (a cache keeps the newer of two builds a
    /// client's concurrent requests made), and the record of its build.
    pub fn file_template(&mut self, built: TimedBuild, asker: Asker) -> Arc<Template> {
        let t = Arc::new(built.template);
        let on_tip = t.prev_hash == self.chain.tip().hash;
        if on_tip {
            self.markers.insert(t.marker_txid(), t.txs[0].clone());
            if self.recent.len() == RECENT_TEMPLATES {
                self.recent.pop_front();
            }
            self.recent.push_back(t.clone());
        }
        let asker = match asker {
            Asker::Client(client) => {
                let newer_cached = (self.templates.get(client))
                    .is_some_and(|c| c.prev_hash == t.prev_hash && c.id > t.id);
                if on_tip && !newer_cached {
                    self.templates.insert(client.to_string(), t.clone());
                }
                client
            }
            Asker::Face(face) => face,
        };
        self.recorder.record(Event::TemplateBuilt {
            template_id: t.id,
            prev_hash: t.prev_hash.to_string(),
            height: t.height,
            value_sats: t.value(),
            fees_sats: t.fees,
            tx_count: t.txs.len(),
            weight: t.weight,
            marker_txid: t.marker_txid().to_string(),
            asker: asker.to_string(),
            queued_ns: built.queued_ns,
            build_ns: built.build_ns,
        });
        t
    }

    /// Judges a block a pool submitted; an accepted one becomes the tip at once.
    pub fn submit_block(&mut self, block: Block, via: &str) -> Submission {
        let hash = block.block_hash();
        let prev_hash = block.header.prev_blockhash;
        let verdict = self.check(&block, Checks::ALL);
        let (height, template_id) = match &verdict {
            Ok(v) => (Some(v.height), v.template_id),
            Err(_) => (
                None,
                block.txdata.get(1).and_then(crate::template::marker_id),
            ),
        };
        let reject_reason = submitblock_reason(&verdict);
        self.recorder.record(Event::BlockSubmitted {
            hash: hash.to_string(),
            prev_hash: prev_hash.to_string(),
            height,
            template_id,
            via: via.to_string(),
            reject_reason: reject_reason.clone(),
        });
        match verdict {
            Ok(v) if v.extends_tip => Submission::Accepted(self.connect(
                block,
                &v.txids[1..],
                v.fees,
                TipCause::Submitted,
            )),
            Ok(v) => {
                // Kept as a side block, as bitcoind stores a valid stale block.
                self.chain.connect(block, v.fees);
                Submission::Rejected("inconclusive".into())
            }
            Err(Reject(reason)) => {
                if !matches!(
                    reason.as_str(),
                    "duplicate" | "duplicate-invalid" | "prev-blk-not-found"
                ) {
                    self.chain.mark_invalid(hash);
                }
                Submission::Rejected(reason)
            }
        }
    }

    /// A template handed out on the current tip.
    pub fn recent_template(&self, id: u64) -> Option<Arc<Template>> {
        self.recent.iter().find(|t| t.id == id).cloned()
    }

    /// A follower's answer to a submitted block: judged on its own view and recorded, but
    /// not connected (its peer, the network, decides; the block comes back relayed).
    pub fn judge_for_peer(&mut self, block: &Block, via: &str) -> Option<String> {
        let verdict = self.check(block, Checks::ALL);
        let reason = submitblock_reason(&verdict);
        self.recorder.record(Event::BlockSubmitted {
            hash: block.block_hash().to_string(),
            prev_hash: block.header.prev_blockhash.to_string(),
            height: verdict.ok().map(|v| v.height),
            template_id: block.txdata.get(1).and_then(crate::template::marker_id),
            via: via.to_string(),
            reject_reason: reason.clone(),
        });
        reason
    }

    /// BIP23 block proposal: the verdict without accepting the block.
    pub fn check_proposal(&self, block: &Block, checks: Checks) -> Option<String> {
        if block.header.prev_blockhash != self.chain.tip().hash {
            return Some("inconclusive-not-best-prevblk".into());
        }
        self.check(block, checks).err().map(|Reject(r)| r)
    }

    fn check(&self, block: &Block, checks: Checks) -> Result<Verdict, Reject> {
        check_block(
            block,
            &Context {
                chain: &self.chain,
                mempool: &self.mempool,
                markers: &self.markers,
                seed: self.cfg.seed,
                bits: self.bits,
                now: self.now_unix(),
                checks,
            },
        )
    }

    /// Value of the best template the network could build now: subsidy plus fees.
    pub fn network_template_value(&self) -> (u64, u64) {
        let fees = select(&self.mempool, 0).fees;
        (
            crate::template::subsidy(self.chain.height() + 1) + fees,
            fees,
        )
    }

    /// Records the network's best template value (one point of its time series).
    pub fn record_network_template_value(&self) {
        let (value_sats, fees_sats) = self.network_template_value();
        self.recorder.record(Event::NetworkTemplateValue {
            value_sats,
            fees_sats,
            mempool_txs: self.mempool.len(),
        });
    }

    /// Simulated UNIX time.
    pub fn now_unix(&self) -> u32 {
        self.time_base + (self.now_ns / NS) as u32
    }

    /// The time a new header gets: now, but past the median time past.
    pub fn header_time(&self) -> u32 {
        self.now_unix().max(self.chain.median_time_past() + 1)
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    pub fn mempool(&self) -> &Mempool {
        &self.mempool
    }

    pub fn bits(&self) -> CompactTarget {
        self.bits
    }

    pub fn tip_hash(&self) -> BlockHash {
        self.chain.tip().hash
    }

    pub fn config(&self) -> &NodeConfig {
        &self.cfg
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

/// Whether a transaction reaches a follower that sees an `overlap` share of them: decided
/// by its txid, so the same transactions are missing whatever the timing.
/// Bytes of relaying `block` as a BIP152 compact block (high-bandwidth mode) to a peer
/// that lacks the transactions at `lacked` (indexes in the block, ascending): the
/// `cmpctblock` message (header, nonce, a 6-byte short id per transaction, the coinbase
/// prefilled), and when it lacks any, a `getblocktxn` / `blocktxn` round with those
/// transactions. Each message has its 24-byte header.
pub fn compact_block_size(block: &Block, lacked: &[usize]) -> u64 {
    const MESSAGE_HEADER: u64 = 24;
    let compact_size = |n: u64| bitcoin::VarInt(n).size() as u64;
    let others = block.txdata.len().saturating_sub(1) as u64;
    let coinbase = block.txdata.first().map_or(0, |t| t.total_size() as u64);
    let mut bytes = MESSAGE_HEADER
        + 80
        + 8
        + compact_size(others)
        + 6 * others
        + compact_size(1)
        + compact_size(0)
        + coinbase;
    if !lacked.is_empty() {
        let k = lacked.len() as u64;
        // Indexes go differentially encoded, each a compact size.
        let indexes: u64 = (lacked.iter().enumerate())
            .map(|(n, &i)| {
                let diff = if n == 0 { i } else { i - lacked[n - 1] - 1 };
                compact_size(diff as u64)
            })
            .sum();
        let lacked_bytes: u64 = lacked
            .iter()
            .map(|&i| block.txdata[i].total_size() as u64)
            .sum();
        bytes += MESSAGE_HEADER + 32 + compact_size(k) + indexes;
        bytes += MESSAGE_HEADER + 32 + compact_size(k) + lacked_bytes;
    }
    bytes
}

fn reaches(txid: &Txid, overlap: f64) -> bool {
    let bytes = txid.to_byte_array();
    let draw = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    (draw as f64) < overlap * u64::MAX as f64
}

/// Next arrival of a Poisson process of `rate` per second after `after` ns.
fn exponential_after(rng: &mut ChaCha8Rng, after: u64, rate: f64) -> Option<u64> {
    if rate <= 0.0 {
        return None;
    }
    let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
    let wait_s = -u.ln() / rate;
    Some(after + (wait_s * NS as f64) as u64)
}
