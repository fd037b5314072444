//! The node's state as every face shares it: the simulation behind a lock, brought up to
//! the present before anyone looks, and the announcements of each new tip (ZMQ,
//! longpolls, a follower's peer).

use crate::chain::ChainBlock;
use crate::state::{Asker, NodeState, PeerBlock, TemplateOrder, TimedBuild};
use crate::template::Template;
use crate::zmq::Notification;
use bitcoin::hashes::Hash;
use bitcoin::BlockHash;
use parking_lot::{Mutex, MutexGuard};
use probe::mono_ns;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, watch};

/// State shared by the driver, the RPC handlers and the publisher.
pub struct Shared {
    pub(crate) state: Mutex<NodeState>,
    /// Monotonic time of virtual zero.
    pub(crate) start_mono_ns: u64,
    pub(crate) started: Instant,
    /// The tip hash; longpolls wait on it.
    pub(crate) tip: watch::Sender<BlockHash>,
    /// Each publisher, with the topics it carries.
    pub(crate) zmq: Vec<(&'static [&'static str], mpsc::UnboundedSender<Notification>)>,
    pub(crate) zmq_endpoint: Option<String>,
    pub(crate) user: String,
    pub(crate) password: String,
    /// Set by the `stop` RPC or by shutdown.
    pub(crate) stop: watch::Sender<bool>,
    /// A follower's way to its peer for submitted blocks, and how far its transaction
    /// stream lags the peer's.
    pub(crate) to_peer: Option<mpsc::UnboundedSender<bitcoin::Block>>,
    pub(crate) tx_delay_ns: u64,
    /// When the tip changed to each of the last few blocks (host monotonic ns): what a
    /// follower counts its lag from ([`crate::peer::TIP_CLOCK_METHOD`]).
    tip_changes: Mutex<std::collections::VecDeque<(BlockHash, u64)>>,
}

impl Shared {
    /// A node on `state` with virtual zero now, no ZMQ publisher and no peer: what
    /// [`crate::NodeHandle::start`] completes, and what the fuzz targets drive without sockets.
    pub(crate) fn new(state: NodeState, user: String, password: String) -> Shared {
        Shared {
            tip: watch::channel(state.tip_hash()).0,
            state: Mutex::new(state),
            start_mono_ns: mono_ns(),
            started: Instant::now(),
            zmq: Vec::new(),
            zmq_endpoint: None,
            user,
            password,
            stop: watch::channel(false).0,
            to_peer: None,
            tx_delay_ns: 0,
            tip_changes: Mutex::default(),
        }
    }

    /// The simulation, brought up to the present: every arrival due by now is applied
    /// (and announced) before the caller looks.
    pub fn sync(&self) -> MutexGuard<'_, NodeState> {
        let mut state = self.state.lock();
        let tips = state.advance_to(self.virtual_now_ns());
        self.announce(&tips);
        state
    }

    /// The template getblocktemplate hands `client` now: its cached one while that holds,
    /// else one built outside the state's lock, so pools asking at once (after a new tip)
    /// build side by side and none waits on another's build.
    /// One built on a tip that moved on meanwhile is built again on the new one: an answer
    /// after the new tip's notice must not take a pool back to the old tip.
    pub fn template(&self, client: &str) -> Arc<Template> {
        loop {
            let asked = Instant::now();
            let order = {
                let mut state = self.sync();
                if let Some(t) = state.cached_template(client) {
                    return t;
                }
                state.order_template()
            };
            let (t, on_tip) = self.build_and_file(order, asked, Asker::Client(client));
            if on_tip {
                return t;
            }
        }
    }

    /// A template built now for a face's connection that decides itself when to build
    /// (`tdp PEER`, `ipc N`), outside the state's lock as [`Shared::template`]'s.
    /// A face that finds the tip moved on by then hears of the new one as any client does.
    pub fn build_template(&self, face: &str) -> Arc<Template> {
        let asked = Instant::now();
        let order = self.sync().order_template();
        self.build_and_file(order, asked, Asker::Face(face)).0
    }

    /// Builds `order` without the lock and files it under it: the template, and whether it
    /// is still on the tip.
    fn build_and_file(
        &self,
        order: TemplateOrder,
        asked: Instant,
        asker: Asker,
    ) -> (Arc<Template>, bool) {
        let built = TimedBuild::run(&order, elapsed_ns(asked));
        let filing = Instant::now();
        let mut state = self.state.lock();
        let built = built.queued_more(elapsed_ns(filing));
        let t = state.file_template(built, asker);
        let on_tip = t.prev_hash == state.tip_hash();
        (t, on_tip)
    }

    /// This node's virtual time: since virtual zero, less a follower's lag behind its peer.
    pub(crate) fn virtual_now_ns(&self) -> u64 {
        (mono_ns().saturating_sub(self.start_mono_ns)).saturating_sub(self.tx_delay_ns)
    }

    /// A follower takes a block its peer relayed, and announces it.
    pub fn accept_peer_block(&self, block: bitcoin::Block) -> PeerBlock {
        let taken = self.sync().accept_peer_block(block);
        if let PeerBlock::Connected(tip) = &taken {
            self.announce(std::slice::from_ref(tip));
        }
        taken
    }

    /// Tips kept for [`Shared::tip_changed_at`]: more than a follower has in flight.
    const TIP_CHANGES_KEPT: usize = 64;

    fn remember_tip_change(&self, hash: BlockHash, at_ns: u64) {
        let mut changes = self.tip_changes.lock();
        if changes.len() == Self::TIP_CHANGES_KEPT {
            changes.pop_front();
        }
        changes.push_back((hash, at_ns));
    }

    /// When this node's tip changed to `hash` (host monotonic ns), among its last tips.
    pub(crate) fn tip_changed_at(&self, hash: &BlockHash) -> Option<u64> {
        let changes = self.tip_changes.lock();
        changes
            .iter()
            .rev()
            .find(|(h, _)| h == hash)
            .map(|(_, at)| *at)
    }

    /// Tells every face about new tips: ZMQ, then longpolls.
    pub fn announce(&self, tips: &[Arc<ChainBlock>]) {
        for tip in tips {
            self.remember_tip_change(tip.hash, mono_ns());
            tracing::info!(height = tip.height, hash = %tip.hash, txs = tip.block.txdata.len(), "new tip");
            // bitcoind publishes the hash in display (big-endian) order.
            let mut hash = tip.hash.to_byte_array();
            hash.reverse();
            for (topics, zmq) in &self.zmq {
                if topics.contains(&"hashblock") {
                    let _ = zmq.send(Notification {
                        topic: "hashblock",
                        body: hash.to_vec(),
                    });
                }
                if topics.contains(&"rawblock") {
                    let _ = zmq.send(Notification {
                        topic: "rawblock",
                        body: bitcoin::consensus::serialize(&tip.block),
                    });
                }
            }
            self.tip.send_replace(tip.hash);
        }
    }

    pub fn zmq_endpoint(&self) -> Option<&str> {
        self.zmq_endpoint.as_deref()
    }

    pub fn subscribe_tip(&self) -> watch::Receiver<BlockHash> {
        self.tip.subscribe()
    }

    /// Judges a submitted block (any face); an accepted one is the tip and announced at
    /// once. Returns bitcoind's reject reason, or `None` when accepted.
    /// A follower judges it on its own view and passes it to its peer, the network.
    pub fn judge_block(&self, block: bitcoin::Block, via: &str) -> Option<String> {
        let mut state = self.sync();
        if let Some(to_peer) = &self.to_peer {
            let reason = state.judge_for_peer(&block, via);
            if reason.is_none() {
                state.note_block_sent(&block);
                let _ = to_peer.send(block);
            }
            return reason;
        }
        match state.submit_block(block, via) {
            crate::state::Submission::Accepted(tip) => {
                self.announce(&[tip]);
                None
            }
            crate::state::Submission::Rejected(reason) => {
                tracing::info!(%reason, via, "submitted block rejected");
                Some(reason)
            }
        }
    }

    /// Resolves-to-true when the node stops (the `stop` RPC or shutdown).
    pub fn subscribe_stop(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Virtual time zero on this host's monotonic clock (a follower's peer needs it).
    pub fn start_mono_ns(&self) -> u64 {
        self.start_mono_ns
    }

    pub fn request_stop(&self) {
        self.stop.send_replace(true);
    }
}

fn elapsed_ns(since: Instant) -> u64 {
    since.elapsed().as_nanos() as u64
}
