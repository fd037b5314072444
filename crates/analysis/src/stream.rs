//! The analysis as events arrive, for runs too long to hold: events are put in time order
//! ([`Reorder`]) and consumed once by per-side accumulators that keep only what identity
//! matching still needs. Each accumulator applies its module's rules (the same code where
//! it can: `ShareFacts`'s counting) and is tested to give what the batch computation
//! gives on the same events: the golden streams of the module's tests and a recorded run.
//!
//! So far: the share and block rules ([`ShareStream`]). The jobs, bandwidth and job
//! declaration rules follow; then the harness reads a run through these instead of
//! holding every event.

use crate::manifest::{SideRoles, Window};
use crate::shares::ShareFacts;
use crate::Unmatched;
use probe::{Event, Record};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Puts records from several files into one time order: each is held until the clock
/// reading passed to [`Reorder::release`] is `horizon_ns` past it, by when every role has
/// written what it saw before (roles write as events happen; the horizon covers their
/// buffering). A record that comes after later ones were released is counted as late and
/// passed on at once: the rules tolerate it, but it is not in time order.
pub struct Reorder {
    held: BinaryHeap<Reverse<Held>>,
    horizon_ns: u64,
    released_to: u64,
    arrivals: u64,
    late: u64,
}

struct Held {
    key: (u64, u8, u64),
    record: Record,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// At one instant the node's facts come first: a tip that changed at the moment a share
/// was submitted had moved on for that share (the batch rules read `tip at t` as including
/// a change at t).
fn rank(event: &Event) -> u8 {
    match event {
        Event::TipChanged { .. } | Event::TemplateBuilt { .. } | Event::BlockSubmitted { .. } => 0,
        _ => 1,
    }
}

impl Reorder {
    pub fn new(horizon_ns: u64) -> Reorder {
        Reorder {
            held: BinaryHeap::new(),
            horizon_ns,
            released_to: 0,
            arrivals: 0,
            late: 0,
        }
    }

    /// Takes a record; a late one comes back at once.
    pub fn push(&mut self, record: Record) -> Option<Record> {
        if record.t_ns < self.released_to {
            self.late += 1;
            return Some(record);
        }
        self.arrivals += 1;
        let key = (record.t_ns, rank(&record.event), self.arrivals);
        self.held.push(Reverse(Held { key, record }));
        None
    }

    /// The records at least the horizon older than `now_ns`, in time order.
    pub fn release(&mut self, now_ns: u64) -> Vec<Record> {
        self.release_to(now_ns.saturating_sub(self.horizon_ns))
    }

    /// Every record held, in time order: the run has ended.
    pub fn drain(&mut self) -> Vec<Record> {
        self.release_to(u64::MAX)
    }

    fn release_to(&mut self, to: u64) -> Vec<Record> {
        let mut out = Vec::new();
        while self.held.peek().is_some_and(|h| h.0.key.0 <= to) {
            let Reverse(held) = self.held.pop().expect("peeked");
            self.released_to = self.released_to.max(held.key.0);
            out.push(held.record);
        }
        out
    }

    /// Records that came after later ones had been released.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Records held now.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

/// How long after a share its answer is still matched to it (the batch rules match any
/// time; an answer later than this counts nowhere here). The farm's proxies answer in
/// milliseconds, a pool across the link in a round trip.
const ANSWER_HORIZON_NS: u64 = 120_000_000_000;

/// The share and block rules of one side (`shares`), as events arrive in time order. It
/// holds the network's current tip, the blocks the node accepted (few), the blocks found
/// and not yet accepted, and the in-window shares still awaiting an answer.
pub struct ShareStream {
    side: SideRoles,
    node_role: String,
    window: Window,
    facts: ShareFacts,
    judged: u64,
    tip: Option<String>,
    accepted_blocks: HashMap<String, u64>,
    /// Blocks found in the window, in share order: (share time, hash).
    found: Vec<(u64, String)>,
    awaiting_answer: HashMap<(u32, u64), u64>,
    /// Answer entries expire in time order.
    answer_queue: std::collections::VecDeque<(u64, (u32, u64))>,
}

impl ShareStream {
    /// `window` as planned: events after its end are not counted, whenever they come.
    pub fn new(side: &SideRoles, node_role: &str, window: Window) -> ShareStream {
        ShareStream {
            side: side.clone(),
            node_role: node_role.to_string(),
            window,
            facts: ShareFacts::default(),
            judged: 0,
            tip: None,
            accepted_blocks: HashMap::new(),
            found: Vec::new(),
            awaiting_answer: HashMap::new(),
            answer_queue: Default::default(),
        }
    }

    /// One record, in time order.
    pub fn consume(&mut self, r: &Record) {
        let in_window = self.window.contains(r.t_ns);
        if r.role == self.node_role {
            match &r.event {
                Event::TipChanged { hash, .. } => self.tip = Some(hash.clone()),
                Event::BlockSubmitted {
                    hash,
                    reject_reason: None,
                    ..
                } => {
                    self.accepted_blocks.entry(hash.clone()).or_insert(r.t_ns);
                }
                _ => {}
            }
        }
        if r.role == self.side.miners_role {
            self.expire_answers(r.t_ns);
            match &r.event {
                Event::ShareSubmitted {
                    miner,
                    share_id,
                    prev_hash,
                    block_hash,
                    ..
                } if in_window => {
                    let stale = self.tip.as_ref().is_some_and(|tip| tip != prev_hash);
                    self.facts.submitted(*miner, stale);
                    self.awaiting_answer.insert((*miner, *share_id), r.t_ns);
                    self.answer_queue.push_back((r.t_ns, (*miner, *share_id)));
                    if let Some(hash) = block_hash {
                        self.facts.blocks.found += 1;
                        self.found.push((r.t_ns, hash.clone()));
                    }
                }
                Event::ShareAnswered {
                    miner,
                    share_id,
                    accepted,
                    ..
                } if self.awaiting_answer.contains_key(&(*miner, *share_id)) => {
                    self.facts.answered(*accepted)
                }
                _ => {}
            }
        }
        if r.role == self.side.pool_role && in_window {
            if let Event::ShareJudged {
                verdict,
                difficulty,
                ..
            } = r.event
            {
                self.judged += 1;
                self.facts.judged(verdict, difficulty);
            }
        }
    }

    fn expire_answers(&mut self, now: u64) {
        while let Some(&(t, key)) = self.answer_queue.front() {
            if now.saturating_sub(t) <= ANSWER_HORIZON_NS {
                break;
            }
            self.answer_queue.pop_front();
            self.awaiting_answer.remove(&key);
        }
    }

    /// The counts so far (the live metrics): submitted, stale, the pool's verdicts, and
    /// the blocks found and accepted.
    pub fn counts(&self) -> (&crate::shares::ShareCounts, crate::shares::BlockCounts) {
        let accepted = (self.found.iter())
            .filter(|(_, hash)| self.accepted_blocks.contains_key(hash))
            .count() as u64;
        let blocks = crate::shares::BlockCounts {
            found: self.facts.blocks.found,
            accepted,
        };
        (&self.facts.shares, blocks)
    }

    /// The side's share facts once every event is in, over the window as it ended.
    pub fn finish(mut self, window: Window, unmatched: &mut Unmatched) -> ShareFacts {
        let mut facts = std::mem::take(&mut self.facts);
        for (t_share, hash) in &self.found {
            match self.accepted_blocks.get(hash) {
                Some(t_accept) => {
                    facts.blocks.accepted += 1;
                    facts
                        .block_propagation_ms
                        .push(hash, crate::jobs::ms(t_accept.saturating_sub(*t_share)));
                }
                None => unmatched.add("block_not_accepted_by_node", 1),
            }
        }
        facts.finish(&self.side, self.judged, window, unmatched);
        facts
    }
}
