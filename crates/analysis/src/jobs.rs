//! A side's jobs: how fast miners got work (on a new template, on a new tip), and what the
//! work they did was worth, second by second. The facts, and the rules as
//! [`crate::stream::JobStream`] applies them to events in time order:
//! - A job is tied to its template by the marker txid in its first merkle branch, among the
//!   templates of the node its side mines on (the farm's own node in configurations A and
//!   B, the network's node otherwise); to a tip by its prev hash.
//! - New job: each miner's first job on each template built in the window, from the
//!   template's build at the node.
//! - New job after a block: for each tip change in the window and each miner, from the tip
//!   change at the network's node to that miner's first job on the new tip.
//! - Work time: a miner works on its last job until its next one. While that job's prev
//!   hash is the network's tip it is valid work, worth its template's value; once the tip
//!   moved on it is stale work; on a job with no template tied to it, unmatched time. Only
//!   valid work weighs the template value.

use crate::stats::{Clustered, Weighted};
use crate::timeline::TemplateMatch;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Miner-seconds in the window, by what the work was worth.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkTime {
    /// On the network's tip, on a template tied to the job.
    pub valid_s: f64,
    /// On a prev hash the network had moved past: hashing that can only make stale shares.
    pub stale_s: f64,
    /// On the tip, but on a job no template of the side's node is tied to.
    pub unmatched_s: f64,
}

/// What a side's jobs show.
#[derive(Debug, Default, PartialEq)]
pub struct JobFacts {
    /// By the tip the template builds on: one build reaches every miner, and every
    /// client's template is built from the same node at the same tip, so two sides share
    /// the tip as their unit (a template's own identity differs per client).
    pub new_job_ms: Clustered,
    /// By tip.
    pub new_prevhash_job_ms: Clustered,
    /// By tip: each miner's time on outdated work after the tip changed, until its first
    /// job on that tip or a later one, at most until the next tip. Equal to the delay to
    /// new-block work unless a miner got no job on a tip at all (a pool that polls can skip
    /// a tip that lasted less than its poll) or got it only after the next tip.
    pub stale_wait_ms: Clustered,
    /// By tip, for a side on its farm's own node (A, B): how much later that node took
    /// the tip than the network's node (one value a tip; the farm's own blocks, which it
    /// had first, are none).
    pub farm_node_lag_ms: Clustered,
    /// By tip, for such a side: each miner's new-block job less the tip's lag, what the
    /// roles add beyond the farm node.
    pub own_new_block_ms: Clustered,
    /// Tips a miner got no work on (by miner and tip): in the stale wait until the next
    /// tip, missing from the new-block job times.
    pub tips_without_job: u64,
    /// (template value, miner-nanoseconds of valid work on it), by the tip it was on: a
    /// tip's templates follow one mempool, so the tip is the unit of its interval.
    pub value_by_tip: Weighted,
    /// Each template the side's miners worked on validly, once, by the first moment one of
    /// them did: `(ns, value in sats)`, in time order. What the side mined over time.
    pub templates_mined: Vec<(u64, u64)>,
    pub work: WorkTime,
    /// The same, per miner.
    pub work_by_miner: BTreeMap<u32, WorkTime>,
}

/// Nanoseconds of valid, stale and unmatched work: summed as integers, so the sum is the
/// same in any order (stretches that end together are added miner by miner).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Ns {
    valid: u64,
    stale: u64,
    unmatched: u64,
}

impl Ns {
    fn secs(&self) -> WorkTime {
        WorkTime {
            valid_s: self.valid as f64 / 1e9,
            stale_s: self.stale as f64 / 1e9,
            unmatched_s: self.unmatched as f64 / 1e9,
        }
    }
}

/// The work of a side, whole and per miner.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkNs {
    total: Ns,
    by_miner: BTreeMap<u32, Ns>,
    /// By template (the moment it was built, its value): the first valid work on it.
    first_on: BTreeMap<(u64, u64), u64>,
}

/// A stretch of one miner's time on one job under one network tip.
pub(crate) struct Piece<'a> {
    pub miner: u32,
    pub from: u64,
    pub to: u64,
    pub prev_hash: &'a str,
    pub template: TemplateMatch,
}

impl WorkNs {
    /// `piece` under network tip `tip`, clipped to the window already: work on a prev hash
    /// the network moved past is stale; on a template tied to the job, valid (its value
    /// weighed by the time, by the job's tip); else unmatched.
    pub(crate) fn add(&mut self, piece: &Piece, tip: Option<&str>, value_by_tip: &mut Weighted) {
        let ns = piece.to - piece.from;
        let mine = self.by_miner.entry(piece.miner).or_default();
        match (tip, piece.template) {
            (Some(tip), _) if tip != piece.prev_hash => {
                self.total.stale += ns;
                mine.stale += ns;
            }
            (_, TemplateMatch::Found(t)) => {
                self.total.valid += ns;
                mine.valid += ns;
                value_by_tip.push(piece.prev_hash, t.value_sats as f64, ns as f64);
                // The earliest, whichever order the pieces come in (by miner or in time).
                let first = self
                    .first_on
                    .entry((t.t_ns, t.value_sats))
                    .or_insert(piece.from);
                *first = (*first).min(piece.from);
            }
            _ => {
                self.total.unmatched += ns;
                mine.unmatched += ns;
            }
        }
    }

    pub(crate) fn finish(&self, facts: &mut JobFacts) {
        facts.work = self.total.secs();
        facts.work_by_miner = self.by_miner.iter().map(|(m, w)| (*m, w.secs())).collect();
        facts.templates_mined = (self.first_on.iter())
            .map(|(&(_, value), &from)| (from, value))
            .collect();
        facts.templates_mined.sort_unstable();
    }
}

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use crate::Unmatched;
    use probe::{Event, Record, TipCause};

    /// Runs the job rules for side `side` of `m` over `events`, put in time order.
    fn run_side(m: &crate::Manifest, side: &str, events: &[Record]) -> (JobFacts, Unmatched) {
        let mut reorder = crate::stream::Reorder::new(0);
        for r in events {
            assert!(reorder.push(r.clone()).is_none());
        }
        let mut stream = crate::stream::JobStream::new(m, side);
        for r in reorder.drain() {
            stream.consume(&r);
        }
        let mut unmatched = Unmatched::default();
        (stream.finish(&mut unmatched), unmatched)
    }

    /// Runs the job rules for side `sv1` of `m` over `events`.
    fn run(m: &crate::Manifest, events: &[Record]) -> (JobFacts, Unmatched) {
        run_side(m, "sv1", events)
    }

    #[test]
    fn a_job_is_timed_from_its_template_by_marker_once_per_miner() {
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_010 * MS, "node", "A", "P", 100),
            job(1_070 * MS, 0, "P", Some("A")),
            job(1_090 * MS, 1, "P", Some("A")),
            job(1_500 * MS, 0, "P", Some("A")), // the same template again: not a new job
            template(6_000 * MS, "node", "B", "P", 300),
            job(6_050 * MS, 0, "P", Some("B")),
        ];
        let (f, u) = run(&m, &events);
        assert_eq!(f.new_job_ms.values(), vec![60.0, 80.0, 50.0]);
        // A build reaches every miner, and every template on tip P is built at P's turn of
        // the node: templates A and B are one unit, the tip, which another side shares.
        assert_eq!(f.new_job_ms.clusters(), vec![vec![60.0, 80.0, 50.0]]);
        assert_eq!(f.new_prevhash_job_ms.values(), vec![70.0, 90.0]);
        assert!(u.0.is_empty(), "{u:?}");
    }

    /// A real node marks no template: an RPC tap records each one the pool fetched by its
    /// work id, and a job is tied to it by the work id the miner computed.
    #[test]
    fn a_job_on_a_real_nodes_template_is_timed_by_its_work_id() {
        let m = manifest(vec![sv1_side()]);
        let fetched = |t_ns, work_id: &str, value_sats| {
            rec(
                t_ns,
                "node",
                Event::TemplateFetched {
                    prev_hash: "P".into(),
                    height: 2,
                    value_sats,
                    tx_count: 3,
                    work_id: work_id.into(),
                },
            )
        };
        let job = |t_ns, miner, work_id: &str| {
            rec(
                t_ns,
                "miners",
                Event::JobReceived {
                    miner,
                    job_id: "j".into(),
                    prev_hash: "P".into(),
                    // A real transaction's txid: no template is marked by it.
                    marker_txid: Some("t1".into()),
                    clean: false,
                    work_id: Some(work_id.into()),
                },
            )
        };
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            fetched(1_002 * MS, "W1", 100),
            job(1_030 * MS, 0, "W1"),
            job(1_045 * MS, 1, "W1"),
            // The pool polled again and got the same template: its first answer counts.
            fetched(3_000 * MS, "W1", 100),
            fetched(5_000 * MS, "W2", 250),
            job(5_020 * MS, 0, "W2"),
            // A job on no fetched template stays unmatched, under its marker's diagnosis.
            job(6_000 * MS, 1, "W9"),
        ];
        let (f, u) = run(&m, &events);
        // W1: 28 and 43 ms; W2: 20 ms; both on tip P, one unit.
        assert_eq!(f.new_job_ms.clusters(), vec![vec![28.0, 43.0, 20.0]]);
        assert_eq!(f.new_prevhash_job_ms.values(), vec![30.0, 45.0]);
        assert_eq!(u.0.get("job_without_node_template"), Some(&1), "{u:?}");
    }

    #[test]
    fn a_template_built_before_the_window_times_no_job() {
        let mut m = manifest(vec![sv1_side()]);
        m.window_start_ns = 2_000 * MS;
        let events = [
            template(1_000 * MS, "node", "A", "P", 100),
            job(2_010 * MS, 0, "P", Some("A")),
            template(2_000 * MS, "node", "B", "P", 100), // at the window's start: in
            job(2_020 * MS, 1, "P", Some("B")),
        ];
        let (f, _) = run(&m, &events);
        assert_eq!(f.new_job_ms.values(), vec![20.0]);
    }

    #[test]
    fn a_tip_reaches_every_miner_or_is_counted_unmatched() {
        let m = manifest(vec![sv1_side()]); // two miners
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_001 * MS, "node", "A", "P", 100),
            job(1_040 * MS, 1, "P", Some("A")),
            job(1_055 * MS, 0, "P", Some("A")),
            job(1_300 * MS, 0, "P", Some("A")), // not the first on P
            tip(5_000 * MS, "Q", TipCause::Submitted),
            template(5_001 * MS, "node", "B", "Q", 100),
            job(5_100 * MS, 0, "Q", Some("B")),
            // miner 1 never gets work on Q
        ];
        let (f, u) = run(&m, &events);
        assert_eq!(f.new_prevhash_job_ms.values(), vec![55.0, 40.0, 100.0]);
        assert_eq!(u.0["tip_without_job"], 1);
    }

    #[test]
    fn value_accrues_only_on_valid_work_and_stale_time_is_its_own() {
        // Window 0-10 s, two miners. Tip P at 1 s, Q at 6 s.
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_000 * MS, "node", "A", "P", 100),
            job(1_000 * MS, 0, "P", Some("A")),
            job(2_000 * MS, 1, "P", None), // a job without a marker: unmatched time
            tip(6_000 * MS, "Q", TipCause::Network),
            template(6_000 * MS, "node", "B", "Q", 400),
            job(6_100 * MS, 0, "Q", Some("B")), // 100 ms of stale work first
            job(6_500 * MS, 1, "Q", Some("B")), // 500 ms of stale work first
        ];
        let (f, u) = run(&m, &events);
        // Miner 0: A for 5 s valid, 0.1 s stale, B for 3.9 s. Miner 1: 4 s unmatched,
        // 0.5 s stale, B for 3.5 s.
        assert_eq!(u.0["job_without_marker"], 1);
        assert!(
            (f.work.valid_s - (5.0 + 3.9 + 3.5)).abs() < 1e-9,
            "{:?}",
            f.work
        );
        assert!((f.work.stale_s - 0.6).abs() < 1e-9, "{:?}", f.work);
        assert!((f.work.unmatched_s - 4.0).abs() < 1e-9, "{:?}", f.work);
        let value = f.value_by_tip.dist();
        let expected = (100.0 * 5.0 + 400.0 * 7.4) / 12.4;
        let mean = value.mean.unwrap();
        assert!((mean - expected).abs() < 1e-6, "{mean} vs {expected}");
        // Two tips (P, then Q): too few for an interval.
        assert_eq!((value.units, value.mean_ci), (Some(2), None));
    }

    /// A pool that polls can skip a tip that lasts less than its poll: its miners wait
    /// through that tip on the tip before. Tips O at 0, P at 1 s, Q at 2 s, R at 2.1 s;
    /// miner 0 gets no job on Q (it goes from P to R at 2.3 s), miner 1 gets each.
    #[test]
    fn a_skipped_tip_is_waited_through_and_counted_once() {
        let m = manifest(vec![sv1_side()]);
        let mut events = Vec::new();
        for (t, hash) in [(0, "O"), (1_000, "P"), (2_000, "Q"), (2_100, "R")] {
            events.push(tip(t * MS, hash, TipCause::Network));
        }
        for (t, miner, hash) in [
            (0, 0, "O"),
            (0, 1, "O"),
            (1_050, 0, "P"),
            (1_060, 1, "P"),
            (2_050, 1, "Q"),
            (2_150, 1, "R"),
            (2_300, 0, "R"),
        ] {
            events.push(job(t * MS, miner, hash, None));
        }
        let (f, u) = run(&m, &events);
        // Miner 0 waits 50 ms at P, through Q (100 ms, up to R), 200 ms at R; miner 1
        // 60, 50 and 50 ms.
        let waits: Vec<Vec<f64>> = f.stale_wait_ms.clusters();
        assert_eq!(
            waits,
            vec![
                vec![0.0, 0.0],
                vec![50.0, 60.0],
                vec![100.0, 50.0],
                vec![200.0, 50.0]
            ]
        );
        // The delay to new-block work has no sample for miner 0 at Q, and says so.
        assert_eq!(f.new_prevhash_job_ms.clusters()[2], vec![50.0]);
        assert_eq!(u.0["tip_without_job"], 1);
        // The same 510 ms the work on outdated jobs adds up to.
        assert!((f.work.stale_s - 0.51).abs() < 1e-9, "{:?}", f.work);
    }

    #[test]
    fn a_job_is_tied_only_to_its_own_nodes_templates() {
        // A farm side mines on node-farm; a marker only the network's node built is not its.
        let m = manifest(vec![farm_side()]);
        let events = [
            template(1_000 * MS, "node", "N1", "P", 100),
            template(1_000 * MS, "node-farm", "F1", "P", 100),
            job_to("miners-a", 1_020 * MS, 0, "P", Some("F1")),
            job_to("miners-a", 1_030 * MS, 1, "P", Some("N1")),
            job_to("miners-a", 1_040 * MS, 1, "P", Some("nobody")),
        ];
        let (f, u) = run_side(&m, "sv2-a", &events);
        assert_eq!(f.new_job_ms.values(), vec![20.0]);
        assert_eq!(u.0["job_on_another_nodes_template"], 1);
        assert_eq!(u.0["job_without_node_template"], 1);
    }

    #[test]
    fn a_marker_sent_in_display_byte_order_is_named_not_timed() {
        // The pool sent the marker's branch reversed (goPool's fault): the miners read
        // "a2a1" where the node built "a1a2". Not tied, not timed, counted by its cause.
        let m = manifest(vec![sv1_side()]);
        let events = [
            template(1_000 * MS, "node", "a1a2", "P", 100),
            job(1_020 * MS, 0, "P", Some("a2a1")),
            job(1_030 * MS, 1, "P", Some("a1a2")),
        ];
        let (f, u) = run(&m, &events);
        assert_eq!(f.new_job_ms.values(), vec![30.0]);
        assert_eq!(u.0["job_merkle_branch_byte_reversed"], 1);
        assert_eq!(u.0.get("job_without_node_template"), None);
    }

    #[test]
    fn a_time_weighted_distribution_weighs_each_value_by_its_time() {
        let weighted = |tips: &[Vec<(f64, f64)>]| {
            let mut w = Weighted::default();
            for (tip, pieces) in tips.iter().enumerate() {
                for (value, weight) in pieces {
                    w.push(&tip.to_string(), *value, *weight);
                }
            }
            w.dist()
        };
        let d = weighted(&[vec![(300.0, 1.0)], vec![(100.0, 3.0)]]);
        assert_eq!(
            (d.p50, d.p90, d.max),
            (Some(100.0), Some(300.0), Some(300.0))
        );
        assert_eq!(d.mean, Some(150.0));
        assert_eq!(weighted(&[]).mean, None);
        // Six tips, each 100 sats for 1 s then 200 sats for 3 s, and one tip all 300:
        // (6 x 700 + 4 x 300) / 28 = 5400 / 28; its interval, widened for 7 units, about
        // it and within the values.
        let mut tips = vec![vec![(100.0, 1.0), (200.0, 3.0)]; 6];
        tips.push(vec![(300.0, 4.0)]);
        let d = weighted(&tips);
        assert!((d.mean.unwrap() - 5400.0 / 28.0).abs() < 1e-9);
        assert_eq!(d.units, Some(7));
        let (lo, hi) = d.mean_ci.unwrap();
        let mean = 5400.0 / 28.0;
        assert!(
            (100.0..mean).contains(&lo) && hi > mean && hi <= 300.0,
            "{d:?}"
        );
    }
}
