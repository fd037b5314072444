//! A side's shares and blocks, in two views on one basis for every side. The facts, and
//! the rules as [`crate::stream::ShareStream`] applies them to events in time order:
//! - Miners' view: every share a miner submitted in the window; stale when its prev hash
//!   was no longer the network's tip at that moment (the tip timeline, whatever anyone
//!   answered); the answer each miner got (a translator answers before the pool judges).
//! - Pool's view: the verdicts where acceptance is decided (the pool, seen by a tap or by
//!   the built-in pool), in the window. A share with no verdict is unmatched, unless the
//!   tip timeline calls it stale: a proxy (the translator, a JDC) drops those itself. A
//!   JDC is a pool to its miners, so in configurations A and B only shares meeting the
//!   upstream target reach the pool, by design: no share counts as missing a verdict there.
//! - Pool's view of work: the difficulty of every accepted share, summed (what the pool
//!   credits, 2^32 hashes per unit of difficulty), against the work the side's miners did
//!   at their hashrate over the window. On a fair pool it tends to 100%; stale work a
//!   proxy dropped and shares the pool refused are missing from it, on every side alike.
//! - Blocks: a share that met the block target is a block found; accepted when the network
//!   node accepted a block of that hash; its propagation runs from the share to that.

pub use crate::credit::Credited;
use crate::manifest::{SideRoles, Window};
use crate::stats::{Clustered, Counted};
use crate::Unmatched;
use probe::{Record, ShareVerdict};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Shares awaiting their answer, by miner and share id, each paired with the first answer
/// that names it: the one pairing of a share with its answer, for a run's stream and a
/// bench's step alike. Each share carries a `Tag` from its submission (the stream's: the
/// tip it came under).
#[derive(Debug, Clone)]
pub struct AwaitingAnswers<Tag = ()> {
    submitted: HashMap<(u32, u64), (u64, Tag)>,
    /// In submission order, to forget the oldest first.
    order: VecDeque<(u64, (u32, u64))>,
}

impl<Tag> Default for AwaitingAnswers<Tag> {
    fn default() -> Self {
        AwaitingAnswers {
            submitted: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<Tag> AwaitingAnswers<Tag> {
    /// Whether it is a share not already awaiting (a repeated id counts once).
    pub fn submitted(&mut self, miner: u32, share_id: u64, t_ns: u64, tag: Tag) -> bool {
        self.order.push_back((t_ns, (miner, share_id)));
        (self.submitted.insert((miner, share_id), (t_ns, tag))).is_none()
    }

    /// When the share this answers was submitted, and its tag, if it awaited an answer
    /// (it is paired now, so a second answer to it pairs with nothing).
    pub fn answered(&mut self, miner: u32, share_id: u64) -> Option<(u64, Tag)> {
        self.submitted.remove(&(miner, share_id))
    }

    /// Forgets the shares submitted more than `horizon_ns` before `now_ns`: an answer later
    /// than that pairs with nothing.
    pub fn forget_older(&mut self, now_ns: u64, horizon_ns: u64) {
        while let Some(&(t, key)) = self.order.front() {
            if now_ns.saturating_sub(t) <= horizon_ns {
                break;
            }
            self.order.pop_front();
            if self
                .submitted
                .get(&key)
                .is_some_and(|(t_sub, _)| *t_sub == t)
            {
                self.submitted.remove(&key);
            }
        }
    }

    /// Shares still without an answer.
    pub fn waiting(&self) -> usize {
        self.submitted.len()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShareCounts {
    pub submitted: u64,
    /// Accepted where acceptance is decided (the pool).
    pub accepted: u64,
    /// Submitted on a job whose prev hash was no longer the node's tip at that moment,
    /// whatever the pool answered.
    pub stale: u64,
    /// Rejected by the pool for any reason but staleness (low difficulty, duplicate,
    /// unknown job, malformed).
    pub rejected: u64,
    /// What the pool itself called stale (it judges on arrival, after the link; a tap
    /// counts a share on a job the pool dropped at a new tip as stale too).
    pub pool_stale: u64,
    /// Accepted shares among the pool's verdicts.
    pub acceptance_pct: Option<f64>,
    /// Its 95% interval by tip, in percent: shares come in bursts at a tip, so the tip is
    /// the unit ([`Counted::interval`]: Wilson's on the tips' effective number of shares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acceptance_pct_ci: Option<(f64, f64)>,
    /// Stale shares among those submitted.
    #[serde(default)]
    pub stale_pct: Option<f64>,
    /// Its 95% interval by tip, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_pct_ci: Option<(f64, f64)>,
    /// What the pool called stale among its verdicts, with its 95% interval by tip, in
    /// percent: the counted side of `pool_stale_work_pct`.
    #[serde(default)]
    pub pool_stale_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_stale_pct_ci: Option<(f64, f64)>,
    /// Shares submitted per miner per minute of the window: what every side is set to
    /// get alike; a pool that runs its own difficulty shows here how far it moved it.
    #[serde(default)]
    pub per_miner_min: Option<f64>,
    /// The answers the miners got to their shares in the window: accepted, rejected.
    #[serde(default)]
    pub answered_accepted: u64,
    #[serde(default)]
    pub answered_rejected: u64,
}

/// The pool's view of the work, in hashes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolWork {
    /// The accepted shares' difficulty, summed, as hashes.
    pub credited_hashes: f64,
    /// The side's miners' hashrate over the window; `None` when the run did not say it.
    pub done_hashes: Option<f64>,
    /// Credited in percent of done.
    pub credited_pct: Option<f64>,
    /// Its 95% interval: shares are found as a Poisson process, so the credited sum of
    /// difficulties d has variance sum(d^2) (normal approximation; with one difficulty,
    /// a relative half-width of 1.96 / sqrt(accepted shares)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credited_pct_ci: Option<(f64, f64)>,
    /// Accepted shares whose difficulty the judge did not know (credited nothing here).
    pub accepted_without_difficulty: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockCounts {
    pub found: u64,
    pub accepted: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShareFacts {
    pub shares: ShareCounts,
    pub pool_work: PoolWork,
    /// The accepted shares of known difficulty: the credited work and its variance.
    pub credited: Credited,
    pub blocks: BlockCounts,
    /// By block: each is its own unit.
    pub block_propagation_ms: Clustered,
    /// From a share's submission to the answer its miner got, by the tip it was submitted
    /// under.
    pub share_answer_ms: Clustered,
    /// Shares submitted in the window, stale or not, by the network tip they were
    /// submitted under: stale shares come in bursts after a tip, so the tip is the unit.
    pub stale_by_tip: Counted,
    /// The pool's verdicts in the window, accepted or not, by the tip they came under.
    pub accepted_by_tip: Counted,
    /// The pool's verdicts in the window, stale by the pool or not, by that tip.
    pub pool_stale_by_tip: Counted,
    /// Shares submitted in the window and those stale, per miner.
    pub by_miner: BTreeMap<u32, MinerShares>,
    /// What an attacker on the side's link took (`analysis::security`).
    pub attack: crate::security::AttackFacts,
    /// What outages of the link's far end cost (`analysis::outage`).
    pub outages: crate::outage::OutageFacts,
}

/// One miner's shares in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MinerShares {
    pub submitted: u64,
    pub stale: u64,
}

impl ShareFacts {
    /// A share a miner submitted in the window under the network's `tip`; `stale` by the
    /// tip timeline.
    pub(crate) fn submitted(&mut self, miner: u32, tip: Option<&str>, stale: bool) {
        self.shares.submitted += 1;
        self.stale_by_tip.push(tip.unwrap_or_default(), stale);
        let mine = self.by_miner.entry(miner).or_default();
        mine.submitted += 1;
        if stale {
            self.shares.stale += 1;
            mine.stale += 1;
        }
    }

    /// The answer a miner got to a share it submitted in the window.
    pub(crate) fn answered(&mut self, accepted: bool) {
        if accepted {
            self.shares.answered_accepted += 1;
        } else {
            self.shares.answered_rejected += 1;
        }
    }

    /// What befell the side's link (an attacker, outages) and what it cost, from one
    /// record in time order.
    pub(crate) fn on_path(&mut self, side: &SideRoles, window: Window, r: &Record) {
        self.attack.consume(side, window, r);
        self.outages.consume(side, window, r);
    }

    /// A verdict of the pool in the window, under the network's `tip`.
    pub(crate) fn judged(
        &mut self,
        tip: Option<&str>,
        verdict: ShareVerdict,
        difficulty: Option<f64>,
    ) {
        let tip = tip.unwrap_or_default();
        self.accepted_by_tip
            .push(tip, verdict == ShareVerdict::Accepted);
        self.pool_stale_by_tip
            .push(tip, verdict == ShareVerdict::Stale);
        match verdict {
            ShareVerdict::Accepted => {
                self.shares.accepted += 1;
                match difficulty {
                    Some(d) => self.credited.add(Some(d)),
                    None => self.pool_work.accepted_without_difficulty += 1,
                }
            }
            ShareVerdict::Stale => self.shares.pool_stale += 1,
            _ => self.shares.rejected += 1,
        }
    }

    /// What follows from the counts once every event is in: the shares missing a verdict,
    /// the work done, the rates and their intervals.
    pub(crate) fn finish(
        &mut self,
        side: &SideRoles,
        judged: u64,
        window: Window,
        unmatched: &mut Unmatched,
    ) {
        let f = self;
        if side.job_declaration_role.is_none() {
            let missing = f
                .shares
                .submitted
                .saturating_sub(judged)
                .saturating_sub(f.shares.stale);
            unmatched.add("share_without_verdict", missing);
        }
        unmatched.add(
            "accepted_share_without_difficulty",
            f.pool_work.accepted_without_difficulty,
        );
        f.pool_work.done_hashes = side
            .miner_hashrate
            .map(|h| h * f64::from(side.miners) * window.secs());
        f.pool_work.credited_hashes = f.credited.hashes;
        let credited = (f.pool_work.done_hashes).and_then(|done| f.credited.pct_of(done));
        f.pool_work.credited_pct = credited.map(|(pct, _)| pct);
        f.pool_work.credited_pct_ci = credited.and_then(|(_, ci)| ci);
        f.shares.acceptance_pct = pct(f.shares.accepted, judged);
        f.shares.acceptance_pct_ci = interval_pct(&f.accepted_by_tip);
        f.shares.stale_pct = pct(f.shares.stale, f.shares.submitted);
        f.shares.stale_pct_ci = interval_pct(&f.stale_by_tip);
        let miner_min = f64::from(side.miners) * window.secs() / 60.0;
        f.shares.per_miner_min = (miner_min > 0.0).then(|| f.shares.submitted as f64 / miner_min);
        f.shares.pool_stale_pct = pct(f.shares.pool_stale, judged);
        f.shares.pool_stale_pct_ci = interval_pct(&f.pool_stale_by_tip);
    }
}

/// The interval by tip of the share of yeses, in percent.
fn interval_pct(by_tip: &Counted) -> Option<(f64, f64)> {
    by_tip.interval().map(|(lo, hi)| (lo * 100.0, hi * 100.0))
}

/// `part` in percent of `whole`; `None` of nothing.
fn pct(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::TipCause;

    #[test]
    fn a_share_pairs_with_its_first_answer_until_it_is_forgotten() {
        let mut awaiting = AwaitingAnswers::default();
        assert!(awaiting.submitted(1, 7, 1_000, "P"));
        assert!(awaiting.submitted(2, 7, 2_000, "P"));
        assert!(awaiting.submitted(1, 8, 5_000, "Q"));
        assert!(
            !awaiting.submitted(1, 8, 5_000, "Q"),
            "a repeated id counts once"
        );
        assert_eq!(awaiting.answered(1, 7), Some((1_000, "P")));
        assert_eq!(awaiting.answered(1, 7), None, "paired once");
        assert_eq!(awaiting.answered(3, 1), None, "never submitted");
        // At 6,500 with a horizon of 2,000: miner 2's share (at 2,000) is forgotten.
        awaiting.forget_older(6_500, 2_000);
        assert_eq!(awaiting.answered(2, 7), None);
        assert_eq!(awaiting.waiting(), 1);
        assert_eq!(awaiting.answered(1, 8), Some((5_000, "Q")));
        assert_eq!(awaiting.waiting(), 0);
    }

    /// The share rules for side `side` of `m` over `events`, put in time order.
    fn run(m: &crate::Manifest, side: &str, events: &[Record]) -> (ShareFacts, Unmatched) {
        let mut reorder = crate::stream::Reorder::new(0);
        for r in events {
            assert!(reorder.push(r.clone()).is_none());
        }
        let mut s = crate::stream::ShareStream::new(&m.sides[side], &m.node_role, m.window());
        for r in reorder.drain() {
            s.consume(&r);
        }
        let mut u = Unmatched::default();
        let f = s.finish(m.window(), &mut u);
        (f, u)
    }

    #[test]
    fn a_share_is_stale_by_the_tip_timeline_whatever_the_pool_said() {
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            share(2_000 * MS, 0, 1, "P", None),
            tip(3_000 * MS, "Q", TipCause::Network),
            share(3_000 * MS, 0, 2, "P", None), // at the very instant Q arrived: stale
            share(3_050 * MS, 1, 3, "P", None),
            share(3_100 * MS, 1, 4, "Q", None),
            judged(2_050 * MS, ShareVerdict::Accepted),
            judged(3_050 * MS, ShareVerdict::Accepted), // the pool had not seen Q yet
            judged(3_100 * MS, ShareVerdict::Stale),
            judged(3_150 * MS, ShareVerdict::Duplicate),
        ];
        let (f, u) = run(&m, "sv1", &events);
        assert_eq!(f.shares.submitted, 4);
        assert_eq!(f.shares.stale, 2);
        assert_eq!(
            (f.shares.accepted, f.shares.pool_stale, f.shares.rejected),
            (2, 1, 1)
        );
        assert_eq!(f.shares.acceptance_pct, Some(50.0));
        assert_eq!(f.shares.stale_pct, Some(50.0));
        // 4 shares from 2 miners in the 10 s window: 4 / (2 x 1/6 min) = 12 a minute.
        assert!((f.shares.per_miner_min.unwrap() - 12.0).abs() < 1e-9);
        // 2 of 4 by tip: P holds share 1, Q shares 2 to 4 (2 stale). Two tips are too few
        // for a variance: each counts as one outcome, n_eff = 4^2 / (1^2 + 3^2) = 1.6.
        // Wilson at 0.5 of 1.6: centre 0.5 +- 1.959964 x sqrt(0.15625 + 3.841459 / 10.24)
        // / (1 + 3.841459 / 1.6) = 1.959964 x 0.728966 / 3.400912 = 0.420107: 7.989% to
        // 92.011% (shares one by one would say 15% to 85%).
        let (lo, hi) = f.shares.stale_pct_ci.unwrap();
        assert!(
            (lo - 7.989).abs() < 1e-3 && (hi - 92.011).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert!(u.0.is_empty(), "{u:?}");
    }

    #[test]
    fn a_share_without_a_verdict_is_unmatched_unless_a_proxy_dropped_it_as_stale() {
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            share(2_000 * MS, 0, 1, "P", None),
            tip(3_000 * MS, "Q", TipCause::Network),
            share(3_010 * MS, 0, 2, "P", None), // stale: the translator drops it
            answered(3_011 * MS, 0, 2, false),
            share(4_000 * MS, 1, 3, "Q", None), // no verdict and not stale: lost
            answered(4_001 * MS, 1, 3, true),
            judged(2_050 * MS, ShareVerdict::Accepted),
        ];
        let (f, u) = run(&m, "sv1", &events);
        assert_eq!(u.0["share_without_verdict"], 1);
        assert_eq!(
            (f.shares.answered_accepted, f.shares.answered_rejected),
            (1, 1)
        );
        assert_eq!(f.shares.acceptance_pct, Some(100.0));
        // Each answer's wait, under the tip its share came under: share 2 (submitted on
        // Q's watch, though built on P) 1 ms, share 3 1 ms; share 1 got none.
        let answers = &f.share_answer_ms;
        assert_eq!(answers.clusters(), vec![vec![1.0, 1.0]]);
        assert_eq!(answers.totals().len(), 1, "one tip, Q");
    }

    /// The answer's wait is tied to its share by miner and id, whatever came between, and
    /// a second answer to the same share is not a second sample.
    #[test]
    fn a_shares_answer_wait_is_its_own_by_identity_and_by_the_tip_it_came_under() {
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            share(2_000 * MS, 0, 1, "P", None),
            share(2_010 * MS, 1, 1, "P", None),
            // Miner 1's answer first: 2,010 to 2,060 is 50 ms; miner 0's 2,000 to 2,080, 80.
            answered(2_060 * MS, 1, 1, true),
            answered(2_080 * MS, 0, 1, true),
            answered(2_090 * MS, 0, 1, true),
            tip(3_000 * MS, "Q", TipCause::Network),
            // Submitted on Q, answered 120 ms later.
            share(3_500 * MS, 0, 2, "Q", None),
            answered(3_620 * MS, 0, 2, false),
        ];
        let (f, _) = run(&m, "sv1", &events);
        let answers = &f.share_answer_ms;
        assert_eq!(answers.clusters(), vec![vec![50.0, 80.0], vec![120.0]]);
        // The distribution's mean weighs shares alike: (50 + 80 + 120) / 3 = 83.3 ms.
        let mean = answers.dist().mean.unwrap();
        assert!((mean - 250.0 / 3.0).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn behind_a_jdc_only_shares_for_the_pool_get_a_verdict() {
        let m = manifest(vec![farm_side()]);
        let events = [
            share_from("miners-a", 1_000 * MS, 0, 1, "P", None),
            share_from("miners-a", 1_100 * MS, 0, 2, "P", None),
        ];
        let (f, u) = run(&m, "sv2-a", &events);
        assert_eq!(f.shares.submitted, 2);
        assert!(!u.0.contains_key("share_without_verdict"));
    }

    #[test]
    fn a_block_is_tied_to_its_share_by_hash_and_timed_to_the_nodes_acceptance() {
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            share(7_000 * MS, 0, 1, "P", Some("BLK")),
            accepted_block(7_080 * MS, "BLK"),
            share(8_000 * MS, 1, 2, "P", Some("LOST")),
            share(20_000 * MS, 1, 3, "P", Some("LATE")), // after the window
        ];
        let (f, u) = run(&m, "sv1", &events);
        assert_eq!(
            f.blocks,
            BlockCounts {
                found: 2,
                accepted: 1
            }
        );
        assert_eq!(f.block_propagation_ms.values(), vec![80.0]);
        assert_eq!(u.0["block_not_accepted_by_node"], 1);
    }

    #[test]
    fn the_pool_credits_the_difficulty_of_accepted_shares_against_the_work_done() {
        let mut m = manifest(vec![sv1_side()]);
        // Two miners at 0.3 difficulty-1 units a second over the 10 s window: 6 units.
        m.sides.get_mut("sv1").unwrap().miner_hashrate = Some(0.3 * 4_294_967_296.0);
        let events = [
            judged_at(1_000 * MS, ShareVerdict::Accepted, Some(2.0)),
            judged_at(2_000 * MS, ShareVerdict::Accepted, Some(2.0)),
            judged_at(3_000 * MS, ShareVerdict::Accepted, Some(1.0)),
            judged_at(4_000 * MS, ShareVerdict::Stale, Some(2.0)), // credits nothing
            judged_at(5_000 * MS, ShareVerdict::Accepted, None),
            judged_at(11_000 * MS, ShareVerdict::Accepted, Some(4.0)), // after the window
        ];
        let (f, u) = run(&m, "sv1", &events);
        let unit = 4_294_967_296.0;
        assert_eq!(f.pool_work.credited_hashes, 5.0 * unit);
        assert_eq!(f.pool_work.done_hashes, Some(6.0 * unit));
        // 5 / 6 = 83.333%.
        let pct = f.pool_work.credited_pct.unwrap();
        assert!((pct - 83.333_333).abs() < 1e-5, "{pct}");
        // Difficulties 2, 2, 1: sum(d^2) = 9, a half-width of z x 3 = 5.8799 units of the
        // 6 done (z = 1.959964 at 95%): (5 - 5.88) / 6 is below zero, so 0;
        // (5 + 5.8799) / 6 = 181.3315%.
        let (lo, hi) = f.pool_work.credited_pct_ci.unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 181.331_5).abs() < 1e-3, "{hi}");
        assert_eq!(f.pool_work.accepted_without_difficulty, 1);
        assert_eq!(u.0["accepted_share_without_difficulty"], 1);

        // A run that did not say its hashrate: credited work, no percentage.
        let (f, _) = run(&manifest(vec![sv1_side()]), "sv1", &events);
        assert_eq!(
            (f.pool_work.done_hashes, f.pool_work.credited_pct),
            (None, None)
        );
    }

    #[test]
    fn acceptance_and_credited_work_have_their_intervals_worked_by_hand() {
        let mut m = manifest(vec![sv1_side()]);
        // Two miners at 0.2 difficulty-1 units a second over the 10 s window: 4 units done.
        m.sides.get_mut("sv1").unwrap().miner_hashrate = Some(0.2 * 4_294_967_296.0);
        let mut events: Vec<Record> = (1..=4)
            .map(|k| judged_at(k * 1_000 * MS, ShareVerdict::Accepted, Some(1.0)))
            .collect();
        events.push(judged_at(5_000 * MS, ShareVerdict::Duplicate, Some(1.0)));
        let (f, _) = run(&m, "sv1", &events);
        // 4 accepted of 5 judged, all before any tip: one unit, so one outcome, n_eff = 1
        // (five shares of one tip may all hang on it). Wilson at 0.8 of 1, z = 1.959964,
        // z^2 = 3.841459: centre (0.8 + 1.920730) / 4.841459 = 0.561965, half-width
        // 1.959964 x sqrt(0.16 + 0.960365) / 4.841459 = 0.428501: 13.346% to 99.047%.
        assert_eq!(f.shares.acceptance_pct, Some(80.0));
        let (lo, hi) = f.shares.acceptance_pct_ci.unwrap();
        assert!(
            (lo - 13.346).abs() < 1e-3 && (hi - 99.047).abs() < 1e-3,
            "{lo} {hi}"
        );
        // 4 shares of difficulty 1 credit the 4 units done: 100%. As a Poisson count the
        // half-width is z x sqrt(4) = 3.919928 units: (4 - 3.92) / 4 = 2.002%,
        // (4 + 3.92) / 4 = 197.998%; 1.96 / sqrt(4) = 98% either side.
        assert_eq!(f.pool_work.credited_pct, Some(100.0));
        let (lo, hi) = f.pool_work.credited_pct_ci.unwrap();
        assert!(
            (lo - 2.0018).abs() < 1e-3 && (hi - 197.9982).abs() < 1e-3,
            "{lo} {hi}"
        );
        // Nothing credited, or no work known: no interval.
        let (none, _) = run(&m, "sv1", &events[4..]);
        assert_eq!(none.pool_work.credited_pct_ci, None);
    }

    #[test]
    fn window_edges_belong_to_the_window() {
        let mut m = manifest(vec![sv1_side()]);
        m.window_start_ns = 1_000 * MS;
        m.window_end_ns = 2_000 * MS;
        let events = [
            share(999 * MS, 0, 1, "P", None),
            share(1_000 * MS, 0, 2, "P", None),
            share(2_000 * MS, 0, 3, "P", None),
            share(2_001 * MS, 0, 4, "P", None),
            judged(1_000 * MS, ShareVerdict::Accepted),
            judged(2_000 * MS, ShareVerdict::Accepted),
            judged(2_001 * MS, ShareVerdict::Accepted),
        ];
        let (f, u) = run(&m, "sv1", &events);
        assert_eq!((f.shares.submitted, f.shares.accepted), (2, 2));
        assert!(u.0.is_empty(), "{u:?}");
    }
}
