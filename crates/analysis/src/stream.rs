//! The analysis as events arrive, for runs too long to hold: events are put in time order
//! ([`Reorder`]) and consumed once by per-side accumulators that keep only what identity
//! matching still needs. Each accumulator applies its module's rules (the same code where
//! it can: `ShareFacts`'s counting). These are the only rules: a run directory, a live
//! run and events in memory ([`crate::stream::compute`], which the golden tests drive)
//! all go through them; a recorded run replayed as read live gives what it gives in order.
//!
//! The share and block rules ([`ShareStream`]) and the job rules ([`JobStream`]) stream;
//! the rest of the summary reads events whose number grows with time, not with miners
//! (links' byte counts, templates, tips), which [`RunStream`] keeps. Per-miner latency
//! samples go to disk as they come ([`RunStream::spill_to`]); what stays in memory is per
//! unit (tip, template), per miner, or bounded by a horizon.

use crate::jobs::{JobFacts, Piece, WorkNs};
use crate::manifest::{Manifest, Sample, SideRoles, Window};
use crate::shares::{AwaitingAnswers, ShareFacts};
use crate::stats::{Clustered, Weighted};
use crate::summary::{assemble, kept_beyond_jobs_and_shares, Summary};
use crate::timeline::{template_nodes, TemplateMatch, Templates, Timeline};
use crate::Unmatched;
use probe::{Event, Record};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::path::Path;

/// Puts records from several files into one time order: each is held until the clock
/// reading passed to [`Reorder::release`] is `horizon_ns` past it, by when every role has
/// written what it saw before (roles write as events happen; the horizon covers their
/// buffering). A record that comes after later ones were released is counted as late and
/// passed on at once: the rules tolerate it, but it is not in time order.
#[derive(Clone)]
pub struct Reorder {
    held: BinaryHeap<Reverse<Held>>,
    horizon_ns: u64,
    released_to: u64,
    arrivals: u64,
    late: u64,
}

#[derive(Clone)]
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
/// was submitted had moved on for that share (`tip at t` includes a change at t).
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

/// What a side's streams learn from an event as they consume it, for live metrics that
/// count each event once as it comes ([`RunStream::observe`]). Only what the summary
/// counts is observed (in the window, by the same rules); a summary's intervals and
/// its latencies' matching beyond a horizon come at its finish.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observed {
    /// A share submitted: `stale` when its job's prev hash was no longer the tip.
    Submitted {
        stale: bool,
    },
    /// The pool's verdict on a share.
    Judged(probe::ShareVerdict),
    BlockFound,
    /// A block found by the side that the node accepted, `ms` after its share.
    BlockAccepted {
        ms: f64,
    },
    /// A miner's first job on a template, `ms` after the node built it.
    NewJob {
        ms: f64,
    },
    /// A miner's first job on a new tip, `ms` after the tip changed.
    NewPrevhashJob {
        ms: f64,
    },
}

/// Observations waiting to be taken: none are kept unless asked for.
#[derive(Clone, Default)]
struct Observations(Option<Vec<Observed>>);

impl Observations {
    fn push(&mut self, o: Observed) {
        if let Some(list) = &mut self.0 {
            list.push(o);
        }
    }

    fn take(&mut self) -> Vec<Observed> {
        self.0.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// How long after a share its answer is still matched to it (an answer later than this counts
/// nowhere). The farm's proxies answer in
/// milliseconds, a pool across the link in a round trip.
const ANSWER_HORIZON_NS: u64 = 120_000_000_000;

/// The share and block rules of one side (`shares`), as events arrive in time order. It
/// holds the network's current tip, the blocks the node accepted (few), the blocks found
/// and not yet accepted, and the in-window shares still awaiting an answer.
#[derive(Clone)]
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
    /// Each with the tip it was submitted under.
    awaiting_answer: AwaitingAnswers<Option<String>>,
    observed: Observations,
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
            awaiting_answer: AwaitingAnswers::default(),
            observed: Observations::default(),
        }
    }

    /// The window ends at `t_ns` (before its planned end): nothing later is counted.
    pub fn end_window(&mut self, t_ns: u64) {
        self.window.end_ns = self.window.end_ns.min(t_ns);
    }

    /// One record, in time order.
    pub fn consume(&mut self, r: &Record) {
        let in_window = self.window.contains(r.t_ns);
        self.facts.on_path(&self.side, self.window, r);
        if r.role == self.node_role {
            match &r.event {
                Event::TipChanged { hash, .. } => self.tip = Some(hash.clone()),
                Event::BlockSubmitted {
                    hash,
                    reject_reason: None,
                    ..
                } if !self.accepted_blocks.contains_key(hash) => {
                    self.accepted_blocks.insert(hash.clone(), r.t_ns);
                    for (t_share, _) in self.found.iter().filter(|(_, h)| h == hash) {
                        let ms = crate::jobs::ms(r.t_ns.saturating_sub(*t_share));
                        self.observed.push(Observed::BlockAccepted { ms });
                    }
                }
                _ => {}
            }
        }
        if r.role == self.side.miners_role {
            (self.awaiting_answer).forget_older(r.t_ns, ANSWER_HORIZON_NS);
            match &r.event {
                Event::ShareSubmitted {
                    miner,
                    share_id,
                    prev_hash,
                    block_hash,
                    ..
                } if in_window => {
                    let stale = self.tip.as_ref().is_some_and(|tip| tip != prev_hash);
                    self.facts.submitted(*miner, self.tip.as_deref(), stale);
                    self.observed.push(Observed::Submitted { stale });
                    let tip = self.tip.clone();
                    (self.awaiting_answer).submitted(*miner, *share_id, r.t_ns, tip);
                    if let Some(hash) = block_hash {
                        self.facts.blocks.found += 1;
                        self.found.push((r.t_ns, hash.clone()));
                        self.observed.push(Observed::BlockFound);
                    }
                }
                Event::ShareAnswered {
                    miner,
                    share_id,
                    accepted,
                    ..
                } => {
                    if let Some((t_sub, tip)) = self.awaiting_answer.answered(*miner, *share_id) {
                        self.facts.answered(*accepted);
                        if let Some(tip) = tip {
                            let ms = crate::jobs::ms(r.t_ns.saturating_sub(t_sub));
                            self.facts.share_answer_ms.push(&tip, ms);
                        }
                    }
                }
                _ => {}
            }
        }
        if self.side.judges(&r.role) && in_window {
            if let Event::ShareJudged {
                verdict,
                difficulty,
                ..
            } = r.event
            {
                self.judged += 1;
                self.facts.judged(self.tip.as_deref(), verdict, difficulty);
                self.observed.push(Observed::Judged(verdict));
            }
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

/// How long after the next tip a tip's first jobs are still matched to it (events in memory have no
/// horizon but this one): then its samples are taken and its per-miner state freed. A pool
/// sends the new tip's jobs in milliseconds to seconds; a miner still without one after
/// this long counts under `tip_without_job`, as it would at the run's end.
const TIP_HORIZON_NS: u64 = 120_000_000_000;

/// One tip change in the window, as its miners catch up with it.
#[derive(Clone)]
struct TipWait {
    t_ns: u64,
    hash: String,
    /// Each miner's first job on this tip's hash.
    first_job: Vec<Option<u64>>,
    /// Each miner's wait for a job on this tip, once known (at its first such job, or at
    /// the next tip).
    stale_wait: Vec<Option<u64>>,
}

/// What a miner works on now, since when.
#[derive(Clone)]
struct Current {
    since: u64,
    prev_hash: String,
    template: TemplateMatch,
}

/// The job rules of one side (`jobs`), as events arrive in time order. It holds the
/// templates built (by marker), the tips of the window with each miner's first job on
/// them, and each miner's current job.
#[derive(Clone)]
pub struct JobStream {
    side: SideRoles,
    node_role: String,
    template_nodes: Vec<String>,
    /// The node the side's jobs are tied to.
    template_node: String,
    window: Window,
    templates: Templates,
    /// Per template marker, the miners that got a job on it (a bit each).
    first_on_template: HashMap<String, Vec<u64>>,
    new_job_ms: Clustered,
    new_prevhash_job_ms: Clustered,
    stale_wait_ms: Clustered,
    /// When the side's farm node took each block (configurations A, B), by hash, until
    /// the network's tip of that hash is taken into the samples.
    farm_node_took: HashMap<String, u64>,
    /// Per tip, how much later the farm node took it than the network's node.
    farm_node_lag_ms: Clustered,
    /// Per tip, each miner's new-block job less the tip's farm node lag: the roles' own.
    own_new_block_ms: Clustered,
    /// Prev hashes miners got jobs on before the network's node had them as its tip (a
    /// block found at the farm, which its own node has first), with the miners that did:
    /// when the tip comes, they are already on it. The last few only.
    ahead: VecDeque<(String, Vec<bool>)>,
    tip: Option<String>,
    /// The window's tips not yet taken into the samples, oldest first.
    tips: VecDeque<TipWait>,
    /// Tips taken into the samples: the first in `tips` is the window's tip of this number.
    tips_taken: usize,
    /// The window's tips by hash, by number (a hash is a tip once, but for a reorg back
    /// to it).
    tips_by_hash: HashMap<String, Vec<usize>>,
    current: Vec<Option<Current>>,
    /// Stretches cut off by the window's end, added miner by miner at the finish (the
    /// order stretches that end together are added in).
    at_end: Vec<(u32, u64, String, TemplateMatch, Option<String>)>,
    work: WorkNs,
    value_by_tip: Weighted,
    unmatched: Unmatched,
    observed: Observations,
}

impl JobStream {
    pub fn new(m: &crate::Manifest, side: &str) -> JobStream {
        let roles = &m.sides[side];
        JobStream {
            side: roles.clone(),
            node_role: m.node_role.clone(),
            template_nodes: template_nodes(m).into_iter().map(String::from).collect(),
            template_node: roles.farm_node_role.clone().unwrap_or(m.node_role.clone()),
            window: m.window(),
            templates: Templates::default(),
            first_on_template: HashMap::new(),
            new_job_ms: Clustered::default(),
            new_prevhash_job_ms: Clustered::default(),
            stale_wait_ms: Clustered::default(),
            farm_node_took: HashMap::new(),
            farm_node_lag_ms: Clustered::default(),
            own_new_block_ms: Clustered::default(),
            ahead: VecDeque::new(),
            tip: None,
            tips: VecDeque::new(),
            tips_taken: 0,
            tips_by_hash: HashMap::new(),
            current: (0..roles.miners).map(|_| None).collect(),
            at_end: Vec::new(),
            work: WorkNs::default(),
            value_by_tip: Weighted::default(),
            unmatched: Unmatched::default(),
            observed: Observations::default(),
        }
    }

    /// The per-miner latency samples go to files in `dir` as they come (named by the side
    /// and the metric) and are read back at the finish: a long run's memory stays flat.
    pub fn spill_to(&mut self, dir: &Path, side: &str) -> std::io::Result<()> {
        let file = |metric: &str| dir.join(format!("{side}.{metric}.values"));
        self.new_job_ms = Clustered::spilled_to(&file("new_job_ms"))?;
        self.new_prevhash_job_ms = Clustered::spilled_to(&file("new_prevhash_job_ms"))?;
        self.stale_wait_ms = Clustered::spilled_to(&file("stale_wait_ms"))?;
        self.own_new_block_ms = Clustered::spilled_to(&file("own_new_block_ms"))?;
        Ok(())
    }

    /// The window ends at `t_ns` (before its planned end): nothing later is counted.
    pub fn end_window(&mut self, t_ns: u64) {
        self.window.end_ns = self.window.end_ns.min(t_ns);
    }

    /// One record, in time order.
    pub fn consume(&mut self, r: &Record) {
        self.take_tips_before(r.t_ns.saturating_sub(TIP_HORIZON_NS));
        if self.template_nodes.contains(&r.role) {
            self.templates.take(r);
        }
        if r.role == self.node_role {
            if let Event::TipChanged { hash, .. } = &r.event {
                self.tip_changed(r.t_ns, hash);
            }
        } else if r.role == self.template_node {
            if let Event::TipChanged { hash, .. } = &r.event {
                self.farm_node_took.insert(hash.clone(), r.t_ns);
            }
        }
        if r.role == self.side.miners_role {
            if let Event::JobReceived {
                miner,
                prev_hash,
                marker_txid,
                work_id,
                ..
            } = &r.event
            {
                let identity = (marker_txid.as_deref(), work_id.as_deref());
                self.job(r.t_ns, *miner, prev_hash, identity);
            }
        }
    }

    fn tip_changed(&mut self, t: u64, hash: &str) {
        // Every miner's stretch under the old tip ends here.
        for miner in 0..self.current.len() {
            self.close(miner as u32, t);
        }
        self.settle_last_tip(t);
        self.tip = Some(hash.to_string());
        if self.window.contains(t) {
            let miners = self.side.miners as usize;
            let number = self.tips_taken + self.tips.len();
            (self.tips_by_hash.entry(hash.to_string()).or_default()).push(number);
            self.tips.push_back(TipWait {
                t_ns: t,
                hash: hash.to_string(),
                first_job: vec![None; miners],
                stale_wait: vec![None; miners],
            });
            // Miners already on this block (their farm found it): work on it at once.
            if let Some(i) = self.ahead.iter().position(|(h, _)| h == hash) {
                let (_, on) = self.ahead.remove(i).expect("found");
                let tip = self.tips.back_mut().expect("pushed");
                for (miner, _) in on.iter().enumerate().filter(|(_, on)| **on) {
                    tip.first_job[miner] = Some(t);
                    tip.stale_wait[miner] = Some(0);
                }
            }
        }
    }

    /// Farm-found blocks tracked at once before their tip comes (or never does).
    const AHEAD_KEPT: usize = 16;

    /// `miner` got a job on `prev_hash` before it was the network's tip.
    fn job_ahead(&mut self, miner: u32, prev_hash: &str) {
        let miners = self.side.miners as usize;
        let i = match self.ahead.iter().position(|(h, _)| h == prev_hash) {
            Some(i) => i,
            None => {
                if self.ahead.len() == Self::AHEAD_KEPT {
                    self.ahead.pop_front();
                }
                self.ahead
                    .push_back((prev_hash.to_string(), vec![false; miners]));
                self.ahead.len() - 1
            }
        };
        if let Some(on) = self.ahead[i].1.get_mut(miner as usize) {
            *on = true;
        }
    }

    /// The last tip's miners still waiting waited until `next` (or the window's end).
    fn settle_last_tip(&mut self, next: u64) {
        let end = next.min(self.window.end_ns);
        if let Some(last) = self.tips.back_mut() {
            for wait in last.stale_wait.iter_mut().filter(|w| w.is_none()) {
                *wait = Some(end.saturating_sub(last.t_ns));
            }
        }
    }

    /// A miner's job, with its template identity (marker, work id).
    fn job(
        &mut self,
        t: u64,
        miner: u32,
        prev_hash: &str,
        (marker, work_id): (Option<&str>, Option<&str>),
    ) {
        let (template, identity) = (self.templates).find_job(marker, work_id, &self.template_node);
        match template {
            TemplateMatch::Found(fact) => {
                let identity = identity.expect("found by an identity");
                if self.window.contains(fact.t_ns) && self.first_job_on(identity, miner) {
                    let ms = crate::jobs::ms(t.saturating_sub(fact.t_ns));
                    self.new_job_ms.push(prev_hash, ms);
                    self.observed.push(Observed::NewJob { ms });
                }
            }
            TemplateMatch::NoMarker => self.unmatched.add("job_without_marker", 1),
            TemplateMatch::Unknown => self.unmatched.add("job_without_node_template", 1),
            TemplateMatch::ByteReversed => self.unmatched.add("job_merkle_branch_byte_reversed", 1),
            TemplateMatch::OtherNode => self.unmatched.add("job_on_another_nodes_template", 1),
        }
        let index = miner as usize;
        let known =
            self.tips_by_hash.contains_key(prev_hash) || self.tip.as_deref() == Some(prev_hash);
        if !known {
            self.job_ahead(miner, prev_hash);
        }
        for number in self.tips_by_hash.get(prev_hash).into_iter().flatten() {
            let Some(tip) = self.tips.get_mut(number - self.tips_taken) else {
                continue;
            };
            if let Some(first @ None) = tip.first_job.get_mut(index) {
                *first = Some(t);
                let ms = crate::jobs::ms(t.saturating_sub(tip.t_ns));
                self.observed.push(Observed::NewPrevhashJob { ms });
            }
        }
        // Caught up with the newest tip: a job on it.
        if let Some(last) = self.tips.back_mut().filter(|l| l.hash == prev_hash) {
            if let Some(wait) = last.stale_wait.get_mut(index).filter(|w| w.is_none()) {
                *wait = Some(t.saturating_sub(last.t_ns));
            }
        }
        self.close(miner, t);
        if let Some(current) = self.current.get_mut(index) {
            *current = Some(Current {
                since: t,
                prev_hash: prev_hash.to_string(),
                template,
            });
        }
    }

    /// Takes the tips followed by another before `t` into the samples (all of them at
    /// `u64::MAX`: the finish), oldest first.
    fn take_tips_before(&mut self, t: u64) {
        while self.tips.front().is_some() {
            let next = self.tips.get(1).map(|next| next.t_ns);
            if t != u64::MAX && next.is_none_or(|next| next >= t) {
                break;
            }
            let tip = self.tips.pop_front().expect("a front");
            // A block the farm node took after the network did (not one found at the farm,
            // which the farm node had first): its lag, and what the roles added beyond it.
            let lag_ns = (self.farm_node_took.remove(&tip.hash))
                .filter(|took| *took >= tip.t_ns)
                .map(|took| took - tip.t_ns);
            if let Some(lag) = lag_ns {
                self.farm_node_lag_ms.push(&tip.hash, crate::jobs::ms(lag));
            }
            for first in &tip.first_job {
                match first {
                    Some(at) => {
                        let job_ns = at.saturating_sub(tip.t_ns);
                        self.new_prevhash_job_ms
                            .push(&tip.hash, crate::jobs::ms(job_ns));
                        if let Some(lag) = lag_ns {
                            let own = job_ns as f64 - lag as f64;
                            self.own_new_block_ms.push(&tip.hash, own / 1e6);
                        }
                    }
                    None => self.unmatched.add("tip_without_job", 1),
                }
            }
            for wait in tip.stale_wait.iter().flatten() {
                self.stale_wait_ms.push(&tip.hash, crate::jobs::ms(*wait));
            }
            if let Some(numbers) = self.tips_by_hash.get_mut(&tip.hash) {
                numbers.retain(|n| *n != self.tips_taken);
                if numbers.is_empty() {
                    self.tips_by_hash.remove(&tip.hash);
                }
            }
            self.tips_taken += 1;
        }
    }

    /// Whether this is `miner`'s first job on the template `marker` (marking it so).
    fn first_job_on(&mut self, marker: &str, miner: u32) -> bool {
        if !self.first_on_template.contains_key(marker) {
            let words = (self.side.miners as usize).div_ceil(64).max(1);
            self.first_on_template
                .insert(marker.to_string(), vec![0; words]);
        }
        let bits = self.first_on_template.get_mut(marker).expect("inserted");
        let (word, bit) = (miner as usize / 64, 1u64 << (miner % 64));
        if word >= bits.len() {
            // A miner beyond the side's count (a harness bug the counts will show).
            bits.resize(word + 1, 0);
        }
        let first = bits[word] & bit == 0;
        bits[word] |= bit;
        first
    }

    /// Ends `miner`'s stretch of work at `t`; the next starts there.
    fn close(&mut self, miner: u32, t: u64) {
        let Some(Some(current)) = self.current.get_mut(miner as usize) else {
            return;
        };
        if let Some((from, to)) = self.window.clip(current.since, t) {
            if to == self.window.end_ns {
                let (hash, template) = (current.prev_hash.clone(), current.template);
                self.at_end
                    .push((miner, from, hash, template, self.tip.clone()));
            } else {
                let piece = Piece {
                    miner,
                    from,
                    to,
                    prev_hash: &current.prev_hash,
                    template: current.template,
                };
                self.work
                    .add(&piece, self.tip.as_deref(), &mut self.value_by_tip);
            }
        }
        current.since = t;
    }

    /// The side's job facts once every event is in, the window as it ended; what could not
    /// be tied goes to `unmatched`.
    pub fn finish(mut self, unmatched: &mut Unmatched) -> JobFacts {
        let end = self.window.end_ns;
        for miner in 0..self.current.len() {
            self.close(miner as u32, end);
        }
        self.at_end.sort_by_key(|(miner, ..)| *miner);
        for (miner, from, prev_hash, template, tip) in &self.at_end {
            let piece = Piece {
                miner: *miner,
                from: *from,
                to: end,
                prev_hash,
                template: *template,
            };
            self.work
                .add(&piece, tip.as_deref(), &mut self.value_by_tip);
        }
        self.settle_last_tip(end);
        self.take_tips_before(u64::MAX);
        let mut lost = 0;
        let mut load = |samples: Clustered| {
            let (samples, not_kept) = samples.load();
            lost += not_kept;
            samples
        };
        let mut facts = JobFacts {
            tips_without_job: self
                .unmatched
                .0
                .get("tip_without_job")
                .copied()
                .unwrap_or(0),
            new_job_ms: load(self.new_job_ms),
            new_prevhash_job_ms: load(self.new_prevhash_job_ms),
            stale_wait_ms: load(self.stale_wait_ms),
            farm_node_lag_ms: self.farm_node_lag_ms,
            own_new_block_ms: load(self.own_new_block_ms),
            value_by_tip: self.value_by_tip,
            ..JobFacts::default()
        };
        self.unmatched.add("sample_lost_on_disk", lost);
        self.work.finish(&mut facts);
        for (kind, n) in self.unmatched.0 {
            unmatched.add(&kind, n);
        }
        facts
    }
}

/// A whole run's analysis as its events arrive: the job and share rules per side as
/// streams, the events the rest of the summary reads (their number grows with time, not
/// with miners or shares) kept, in time order.
#[derive(Clone)]
pub struct RunStream {
    manifest: Manifest,
    reorder: Reorder,
    jobs: BTreeMap<String, JobStream>,
    shares: BTreeMap<String, ShareStream>,
    kept: Vec<Record>,
    consumed: u64,
    /// The network's tip changes in the window, and those already taken as observed.
    network_blocks: u64,
    network_blocks_taken: u64,
}

impl RunStream {
    /// For the run of `m` (its window as planned), holding events `horizon_ns` to put
    /// them in time order.
    pub fn new(m: &Manifest, horizon_ns: u64) -> RunStream {
        RunStream {
            manifest: m.clone(),
            reorder: Reorder::new(horizon_ns),
            jobs: (m.sides.keys())
                .map(|name| (name.clone(), JobStream::new(m, name)))
                .collect(),
            shares: (m.sides.iter())
                .map(|(name, side)| {
                    let stream = ShareStream::new(side, &m.node_role, m.window());
                    (name.clone(), stream)
                })
                .collect(),
            kept: Vec::new(),
            consumed: 0,
            network_blocks: 0,
            network_blocks_taken: 0,
        }
    }

    /// The per-miner latency samples go to files in `dir` as they come, read back (and
    /// removed) at the finish: live summaries read them from histograms meanwhile.
    pub fn spill_to(&mut self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for (side, jobs) in &mut self.jobs {
            jobs.spill_to(dir, side)?;
        }
        Ok(())
    }

    /// From now on, what each event teaches is kept for [`RunStream::take_observed`]
    /// (whoever asks must take it, or it grows).
    pub fn observe(&mut self) {
        for jobs in self.jobs.values_mut() {
            jobs.observed.0.get_or_insert_with(Vec::new);
        }
        for shares in self.shares.values_mut() {
            shares.observed.0.get_or_insert_with(Vec::new);
        }
    }

    /// What the events consumed since the last call taught, by side; and the network's
    /// tip changes in the window among them.
    pub fn take_observed(&mut self) -> (Vec<(String, Observed)>, u64) {
        let mut out = Vec::new();
        for (side, jobs) in &mut self.jobs {
            out.extend(jobs.observed.take().into_iter().map(|o| (side.clone(), o)));
        }
        for (side, shares) in &mut self.shares {
            out.extend(
                shares
                    .observed
                    .take()
                    .into_iter()
                    .map(|o| (side.clone(), o)),
            );
        }
        let blocks = self.network_blocks - self.network_blocks_taken;
        self.network_blocks_taken = self.network_blocks;
        (out, blocks)
    }

    /// A record as it is read.
    pub fn push(&mut self, record: Record) {
        if let Some(late) = self.reorder.push(record) {
            self.consume(late);
        }
    }

    /// Consumes what is the horizon older than `now_ns`.
    pub fn advance(&mut self, now_ns: u64) {
        for r in self.reorder.release(now_ns) {
            self.consume(r);
        }
    }

    fn consume(&mut self, r: Record) {
        self.consumed += 1;
        let in_window = self.manifest.window().contains(r.t_ns);
        if r.role == self.manifest.node_role
            && in_window
            && matches!(r.event, Event::TipChanged { .. })
        {
            self.network_blocks += 1;
        }
        for jobs in self.jobs.values_mut() {
            jobs.consume(&r);
        }
        for shares in self.shares.values_mut() {
            shares.consume(&r);
        }
        if kept_beyond_jobs_and_shares(&r.event) {
            self.kept.push(r);
        }
    }

    /// Records consumed so far, and those that came late (out of time order).
    pub fn counts(&self) -> (u64, u64) {
        (self.consumed, self.reorder.late())
    }

    /// The window ends at `t_ns`, before its planned end (an interrupted run, or one that
    /// knows its answer).
    pub fn end_window(&mut self, t_ns: u64) {
        self.manifest.window_end_ns = self.manifest.window_end_ns.min(t_ns);
        self.jobs.values_mut().for_each(|j| j.end_window(t_ns));
        self.shares.values_mut().for_each(|s| s.end_window(t_ns));
    }

    /// The summary of everything pushed so far, for `m` (the run's manifest with its
    /// window ending now), without ending the stream: a live summary.
    pub fn summary_at(&self, m: &Manifest, samples: &[Sample]) -> Summary {
        self.clone().finish(m, samples)
    }

    /// The summary once every event is in, for `m`: the run's manifest as it ended (its
    /// window, clocks and what stopped it).
    pub fn finish(mut self, m: &Manifest, samples: &[Sample]) -> Summary {
        self.end_window(m.window_end_ns);
        self.manifest = m.clone();
        for r in self.reorder.drain() {
            self.consume(r);
        }
        let mut unmatched = Unmatched::default();
        let mut facts = BTreeMap::new();
        for (name, jobs) in std::mem::take(&mut self.jobs) {
            let jobs = jobs.finish(&mut unmatched);
            let shares = self.shares.remove(&name).expect("a stream per side");
            let shares = shares.finish(self.manifest.window(), &mut unmatched);
            facts.insert(name, (jobs, shares));
        }
        unmatched.add("event_out_of_order", self.reorder.late());
        let kept: Vec<&Record> = self.kept.iter().collect();
        let timeline = Timeline::of(&self.manifest, &kept);
        assemble(&self.manifest, &timeline, &kept, samples, facts, unmatched)
    }
}

/// Reads a run directory and computes its summary. Unreadable lines of the event and
/// sample files are counted under `unmatched`, by file and line, never fatal.
pub fn summarize(run_dir: &Path) -> anyhow::Result<Summary> {
    let manifest = Manifest::read(run_dir)?;
    let input = crate::input::RunInput::read(run_dir);
    let mut summary = compute(&manifest, &input.events, &input.samples);
    for place in input.unreadable {
        summary
            .unmatched
            .insert(format!("unreadable_line:{place}"), 1);
    }
    Ok(summary)
}

/// The summary of events and samples already in memory (in any order), by the same
/// streaming rules a live run and a run directory go through: the events are put in time
/// order first, so none comes late (the rules' own horizons, a tip's jobs and a share's
/// answer two minutes on, still apply).
pub fn compute(m: &Manifest, records: &[Record], samples: &[Sample]) -> Summary {
    let mut stream = RunStream::new(m, u64::MAX);
    for r in records {
        stream.push(r.clone());
    }
    stream.finish(m, samples)
}

/// How far out of time order a run's files may be when read back (a role's writer
/// buffers); an event later than this counts under `unmatched.event_out_of_order`.
const FILE_HORIZON_NS: u64 = 10_000_000_000;

/// A run directory's summary for its manifest `m`, its events read from disk one by one
/// through the streams: memory as in a live run, however long the run. The per-miner
/// samples wait in a folder of `run_dir` (or of the system's temporary one, where the run
/// is read-only) and are removed. `each` sees every event as it is read. Unreadable lines
/// are counted under `unmatched`, as [`crate::stream::summarize`] counts them. The run's
/// CPU and memory samples come back with the summary, read once.
pub fn summarize_dir(
    run_dir: &Path,
    m: &Manifest,
    mut each: impl FnMut(&Record),
) -> std::io::Result<(Summary, Vec<Sample>)> {
    let mut stream = RunStream::new(m, FILE_HORIZON_NS);
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!(".analysis-{}-{n}", std::process::id());
    let scratch = [run_dir.join(&name), std::env::temp_dir().join(&name)]
        .into_iter()
        .find(|dir| stream.spill_to(dir).is_ok())
        .ok_or_else(|| std::io::Error::other("no folder to hold a run's samples in"))?;
    let read = crate::input::each_event(run_dir, |r| {
        each(&r);
        let t = r.t_ns;
        stream.push(r);
        stream.advance(t);
    });
    let (samples, bad_samples) = crate::input::read_samples(run_dir);
    let mut summary = stream.finish(m, &samples);
    let _ = std::fs::remove_dir(&scratch);
    for place in read.unreadable.into_iter().chain(bad_samples) {
        summary
            .unmatched
            .insert(format!("unreadable_line:{place}"), 1);
    }
    Ok((summary, samples))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::TipCause;

    /// A block the farm found: its own node has it at 1.000 s and its two miners get jobs
    /// on it at 1.002 and 1.003 s; the network's node takes it at 1.020 s. They were on it
    /// before the network's tip moved: a new-block job of 0 and no stale wait, not the
    /// wait until some later job. The network's next tip, Q at 3 s, reaches the farm node
    /// 20 ms late and the miners 2 and 3 ms after that: lag 20, own time 2 and 3 ms.
    #[test]
    fn miners_on_their_farms_own_block_before_the_network_wait_nothing() {
        let m = manifest(vec![farm_side()]);
        let at = |ms: u64| ms * MS;
        let events = vec![
            tip_at("node-farm", at(1_000), "F", TipCause::Submitted),
            template(at(1_000), "node-farm", "A", "F", 100),
            job_to("miners-a", at(1_002), 0, "F", Some("A")),
            job_to("miners-a", at(1_003), 1, "F", Some("A")),
            tip(at(1_020), "F", TipCause::Submitted),
            tip(at(3_000), "Q", TipCause::Network),
            tip_at("node-farm", at(3_020), "Q", TipCause::Network),
            template(at(3_020), "node-farm", "B", "Q", 100),
            job_to("miners-a", at(3_022), 0, "Q", Some("B")),
            job_to("miners-a", at(3_023), 1, "Q", Some("B")),
        ];
        let s = computed(&m, &events, &[]);
        let a = &s.sides["sv2-a"];
        let mut jobs = a.samples.new_prevhash_job_ms.values();
        jobs.sort_by(f64::total_cmp);
        assert_eq!(jobs, vec![0.0, 0.0, 22.0, 23.0]);
        assert_eq!(a.samples.stale_wait_ms.values().iter().sum::<f64>(), 45.0);
        // The farm's own block has no lag; Q's is 20 ms and the roles' own 2 and 3.
        assert_eq!(a.samples.farm_node_lag_ms.values(), vec![20.0]);
        assert_eq!(a.samples.own_new_block_ms.values(), vec![2.0, 3.0]);
    }

    /// An hour of tips a minute apart, each miner on each within 50 ms: the stream holds
    /// the last two minutes' tips, not the hour's, and finishes with every sample. A first
    /// job later than the horizon after the next tip is no sample but `tip_without_job`.
    #[test]
    fn tips_past_the_horizon_are_taken_and_freed() {
        let mut m = manifest(vec![sv1_side()]);
        m.window_end_ns = 3_600_000 * MS;
        let mut events = Vec::new();
        for k in 0..60u64 {
            let (t, hash) = (k * 60_000 * MS, format!("tip{k}"));
            events.push(tip(t, &hash, TipCause::Network));
            events.push(job(t + 50 * MS, 0, &hash, None));
            if k != 10 {
                events.push(job(t + 40 * MS, 1, &hash, None));
            }
        }
        // Miner 1's job on tip 10 comes 150 s after tip 11.
        events.push(job(11 * 60_000 * MS + 150_000 * MS, 1, "tip10", None));
        events.sort_by_key(|r| r.t_ns);

        let mut stream = JobStream::new(&m, "sv1");
        let mut most_held = 0;
        for r in &events {
            stream.consume(r);
            most_held = most_held.max(stream.tips.len());
        }
        assert_eq!(
            most_held, 4,
            "tips within 2 minutes of the next, and the last"
        );
        let mut unmatched = Unmatched::default();
        let streamed = stream.finish(&mut unmatched);
        assert_eq!(streamed.new_prevhash_job_ms.count(), 119);
        assert_eq!(unmatched.0["tip_without_job"], 1);

        // Every tip's first jobs, miner by miner (50 and 40 ms), but miner 1's on tip 10.
        let mut expected = Vec::new();
        let mut waits = Vec::new();
        for k in 0..60 {
            expected.push(50.0);
            if k != 10 {
                expected.push(40.0);
            }
            // Miner 1 waits through tip 10, up to tip 11.
            waits.push(vec![50.0, if k == 10 { 60_000.0 } else { 40.0 }]);
        }
        assert_eq!(streamed.new_prevhash_job_ms.values(), expected);
        assert_eq!(streamed.stale_wait_ms.clusters(), waits);
    }
}
