//! What an outage of a side's pool or JDS (scenario `faults`) cost it.
//!
//! The side's link records when each fault began and ended ([`Event::FaultBegan`],
//! [`Event::FaultEnded`]). From then on, each miner is without valid work until its first
//! job after the fault began (a job from the pool again, once its firmware reconnected):
//! that time per miner, and its part after the fault ended (the recovery: reconnect
//! timers and round trips), are the measures. A miner still without a job when the window
//! ends counts until then, and is said not to be back. The side's share judge says how
//! many shares it accepted while the fault lasted, and when it accepted the first after.
//!
//! Worth: a farm whose miners all lose t seconds of work loses t / 86,400 of a day's
//! revenue, B x V x t / 86,400 sats (B blocks a day, V a block's value), and B x t / 86,400
//! blocks in expectation (`analysis::worth`); miners of unequal hashrates weigh by it.
//!
//! With a backup pool (scenario `backup.pool`), the first job after the fault began is the
//! backup's, so the time without work is the failover: the firmware's failures in a row
//! and the round trips to the backup. The backup's judge says when it accepted its first
//! share, and a miner's turn back to its primary ([`Event::PoolSwitched`]) costs it the
//! time from leaving the backup to its first job on the primary, which counts as lost too.
//!
//! A pool that drops (or the whole link) is priced this way. A stall keeps the miners on
//! their job (their shares wait and mostly count), and a JDS away leaves them the JDC's
//! jobs: their next job says nothing of work lost. What they lose is the work the judge
//! rejects from the fault's start until it accepts a share again (shares held through a
//! block come stale): its difficulty as hashes over the farm's hashrate is the seconds of
//! the farm's work lost, priced the same way. Of those, the judge's usual rejections are
//! not the fault's: its rejection rate outside every fault, times the shares it judged
//! meanwhile, would have come anyway, and only the rest is lost. The shares are a Poisson
//! count of the work (a handful in a short stall), so the loss carries the count's exact
//! (Garwood) 95% interval: 3 shares could stand for 0.21 to 2.92 times the work they carry.

use crate::credit::Credited;
use crate::manifest::WorthAssumptions;
use crate::manifest::{SideRoles, Window};
use probe::event::FaultKind;
use probe::{Dist, Event, Record, ShareVerdict};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};
use std::collections::BTreeMap;

/// One fault of a side's link, as its events came in.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSeen {
    pub target: String,
    pub fault: FaultKind,
    pub began_ns: u64,
    pub ended_ns: Option<u64>,
    /// Each miner's first job after the fault began.
    pub first_job: BTreeMap<u32, u64>,
    /// The judge's accepted shares while it lasted.
    pub accepted_during: u64,
    /// The judge's first accepted share after it ended.
    pub first_accepted_after_end: Option<u64>,
    /// The judge's rejections from its start until that share, and their work; and all
    /// it judged meanwhile (that share too).
    pub rejected_until_back: u64,
    pub rejected_work: Credited,
    pub judged_until_back: u64,
    /// Each miner's turn to its backup pool after the fault began, and those that had a
    /// job from it.
    pub to_backup: BTreeMap<u32, u64>,
    pub worked_on_backup: std::collections::BTreeSet<u32>,
    /// Each miner's turn back to its primary after working on the backup, and its first
    /// job after the turn. (A turn back after failures on a backup that never served, as
    /// when the whole link is down, is a step of the failover, not a return.)
    pub to_primary: BTreeMap<u32, (u64, Option<u64>)>,
    /// The backup judge's accepted shares while the fault lasted, and its first accepted
    /// share after the fault began.
    pub accepted_on_backup: u64,
    pub first_accepted_on_backup: Option<u64>,
}

/// The faults of one side's link, gathered as events come in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutageFacts {
    pub faults: Vec<FaultSeen>,
    /// The judge's shares outside every fault (from its start until it accepted again),
    /// and its rejections among them: its usual rejection rate.
    pub judged_outside: u64,
    pub rejected_outside: u64,
}

impl OutageFacts {
    /// One record of the run, in time order; nothing after the window's end.
    pub fn consume(&mut self, side: &SideRoles, window: Window, r: &Record) {
        if r.t_ns > window.end_ns {
            return;
        }
        match &r.event {
            Event::FaultBegan { target, fault, .. } if r.role == side.link_role => {
                self.faults.push(FaultSeen {
                    target: target.clone(),
                    fault: *fault,
                    began_ns: r.t_ns,
                    ended_ns: None,
                    first_job: BTreeMap::new(),
                    accepted_during: 0,
                    first_accepted_after_end: None,
                    rejected_until_back: 0,
                    rejected_work: Credited::default(),
                    judged_until_back: 0,
                    to_backup: BTreeMap::new(),
                    worked_on_backup: Default::default(),
                    to_primary: BTreeMap::new(),
                    accepted_on_backup: 0,
                    first_accepted_on_backup: None,
                });
            }
            Event::FaultEnded { target } if r.role == side.link_role => {
                if let Some(f) = (self.faults.iter_mut())
                    .rev()
                    .find(|f| &f.target == target && f.ended_ns.is_none())
                {
                    f.ended_ns = Some(r.t_ns);
                }
            }
            Event::JobReceived { miner, .. } if r.role == side.miners_role => {
                for f in &mut self.faults {
                    f.first_job.entry(*miner).or_insert(r.t_ns);
                    if let Some((_, job @ None)) = f.to_primary.get_mut(miner) {
                        *job = Some(r.t_ns);
                    } else if f.to_backup.contains_key(miner) && !f.to_primary.contains_key(miner) {
                        f.worked_on_backup.insert(*miner);
                    }
                }
            }
            // A turn, and the backup's shares, belong to the latest fault.
            Event::PoolSwitched { miner, to } if r.role == side.miners_role => {
                if let Some(f) = self.faults.last_mut() {
                    if to == "backup" {
                        f.to_backup.entry(*miner).or_insert(r.t_ns);
                    } else if f.worked_on_backup.contains(miner) {
                        f.to_primary.entry(*miner).or_insert((r.t_ns, None));
                    }
                }
            }
            Event::ShareJudged { verdict, .. }
                if side.backup_pool_role.as_ref() == Some(&r.role)
                    && *verdict == ShareVerdict::Accepted =>
            {
                if let Some(f) = self.faults.last_mut() {
                    if f.ended_ns.is_none() {
                        f.accepted_on_backup += 1;
                    }
                    f.first_accepted_on_backup.get_or_insert(r.t_ns);
                }
            }
            Event::ShareJudged {
                verdict,
                difficulty,
                ..
            } if side.is_pool(&r.role) => {
                let accepted = *verdict == ShareVerdict::Accepted;
                let mut in_a_fault = false;
                for f in &mut self.faults {
                    if f.first_accepted_after_end.is_none() {
                        f.judged_until_back += 1;
                        in_a_fault = true;
                    }
                    match (accepted, f.ended_ns) {
                        (true, None) => f.accepted_during += 1,
                        (true, Some(_)) => {
                            f.first_accepted_after_end.get_or_insert(r.t_ns);
                        }
                        (false, _) if f.first_accepted_after_end.is_none() => {
                            f.rejected_until_back += 1;
                            f.rejected_work.add(*difficulty);
                        }
                        (false, _) => {}
                    }
                }
                if !in_a_fault {
                    self.judged_outside += 1;
                    self.rejected_outside += u64::from(!accepted);
                }
            }
            _ => {}
        }
    }
}

/// One fault's cost to one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideOutage {
    /// `pool` or `jds`, and `drop` or `stall`.
    pub target: String,
    pub fault: FaultKind,
    /// Seconds into the window it began, and how long it lasted (to the window's end if
    /// it had not ended).
    pub began_s: f64,
    pub lasted_s: f64,
    /// The side's miners, and those with work again before the window ended.
    pub miners: u32,
    pub back: u32,
    /// Per miner back: seconds from the fault's start to its first job (and the shortest
    /// of them: none may be back before the pool is, without a backup), and, for those
    /// back after the fault ended, from its end.
    pub without_work_s: Option<Dist>,
    pub shortest_without_work_s: Option<f64>,
    pub recovery_s: Option<Dist>,
    /// The judge's accepted shares while it lasted, seconds from its end to the first
    /// accepted after, and the shares it rejected until then (a stall's held shares, a
    /// session's last ones).
    pub accepted_during: u64,
    pub first_accepted_after_s: Option<f64>,
    pub rejected_until_back: u64,
    /// Of those, the rejections the judge's usual rate would have made of the shares it
    /// judged meanwhile: not the fault's, and not counted lost.
    #[serde(default)]
    pub rejected_anyway: f64,
    /// With a backup pool: the miners that turned to it, seconds from the fault's start to
    /// its first accepted share, and the shares it accepted while the fault lasted.
    #[serde(default)]
    pub failed_over: u32,
    #[serde(default)]
    pub first_accepted_on_backup_s: Option<f64>,
    #[serde(default)]
    pub accepted_on_backup: u64,
    /// The miners back on their primary from the backup, seconds from the fault's end to
    /// each one's turn back (when a check of the primary found it serving), and each one's
    /// time without work on the way (counted in the time lost).
    #[serde(default)]
    pub returned: u32,
    #[serde(default)]
    pub returned_after_end_s: Option<Dist>,
    #[serde(default)]
    pub return_gap_s: Option<Dist>,
    /// Seconds of work each miner lost on average, weighed by hashrate (those not back:
    /// until the window's end; for a stall or a JDS away, the work the judge rejected
    /// until it accepted again, over the farm's hashrate), the blocks a farm of the worth
    /// assumptions misses with them in expectation, and their worth in sats; `None` for a
    /// stall without the miners' hashrate.
    pub lost_s_per_miner: Option<f64>,
    /// Whether that loss is the rejected work (a stall, a JDS away) rather than time
    /// without work.
    #[serde(default)]
    pub lost_is_rejected_work: bool,
    pub blocks_missed: Option<f64>,
    pub lost_sats: Option<f64>,
    /// For rejected work, the 95% intervals of the seconds lost and their sats: the
    /// rejected shares' exact Poisson interval ([`poisson_interval`]) times the work a
    /// share carries on average; none without a share rejected (no work to scale by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_s_per_miner_ci: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_sats_ci: Option<(f64, f64)>,
}

impl SideOutage {
    /// Whether a backup pool took part: miners turned to it, or it accepted shares.
    pub fn used_backup(&self) -> bool {
        self.failed_over > 0 || self.first_accepted_on_backup_s.is_some() || self.returned > 0
    }
}

/// The cost of each fault the side's link recorded, over `window` (as it ended).
pub fn side_outages(
    side: &SideRoles,
    facts: &OutageFacts,
    hashrate_factor: &[f64],
    window: Window,
    worth: &WorthAssumptions,
    block_value: f64,
) -> Vec<SideOutage> {
    let weight = |miner: u32| hashrate_factor.get(miner as usize).copied().unwrap_or(1.0);
    let total_weight: f64 = (0..side.miners).map(weight).sum();
    // The judge's usual rejection rate, outside every fault.
    let usual_rejections = match facts.judged_outside {
        0 => 0.0,
        n => facts.rejected_outside as f64 / n as f64,
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    (facts.faults.iter())
        .map(|f| {
            let ended = f.ended_ns.unwrap_or(window.end_ns).min(window.end_ns);
            let without: Vec<f64> = (f.first_job.values())
                .map(|t| secs(t.saturating_sub(f.began_ns)))
                .collect();
            // Of the miners whose work came back after the fault ended (not from a
            // backup or their own JDC while it lasted).
            let recovery: Vec<f64> = (f.first_job.values())
                .filter(|t| **t >= ended)
                .map(|t| secs(t - ended))
                .collect();
            let back = f.first_job.len() as u32;
            let until_end = secs(window.end_ns.saturating_sub(f.began_ns));
            // On the way back to the primary: from the turn to the first job (or the end).
            let gap = |(turn, job): &(u64, Option<u64>)| {
                secs(job.unwrap_or(window.end_ns).saturating_sub(*turn))
            };
            let returned_after: Vec<f64> = (f.to_primary.values())
                .map(|(turn, _)| secs(turn.saturating_sub(ended)))
                .collect();
            let gaps: Vec<f64> = f.to_primary.values().map(gap).collect();
            // Each miner's lost time, weighed by its hashrate; one not back, until the end.
            let lost: f64 = (0..side.miners)
                .map(|m| {
                    let t = f
                        .first_job
                        .get(&m)
                        .map_or(until_end, |t| secs(t.saturating_sub(f.began_ns)));
                    weight(m) * (t + f.to_primary.get(&m).map_or(0.0, gap))
                })
                .sum();
            // The pool gone, or the whole link with it: its time without work. Otherwise
            // the miners kept their job: the work the judge rejected until it accepted
            // again, as seconds of the farm's work (its hashrate a scenario parameter).
            let pool_gone = f.target == "pool" || f.target == "link";
            let farm_hashrate = side.miner_hashrate.map(|h| h * total_weight);
            let without_work = f.fault == FaultKind::Drop && pool_gone;
            // Rejected work: beyond the usual rejections, each share the rejected shares'
            // mean work, as seconds of the farm's; the count's interval the same way.
            let k = f.rejected_until_back;
            let anyway = usual_rejections * f.judged_until_back as f64;
            let rejected_s = |shares: f64| {
                let per_share = f.rejected_work.hashes / k.max(1) as f64;
                let h = farm_hashrate.filter(|h| *h > 0.0)?;
                Some((shares - anyway).max(0.0) * per_share / h)
            };
            let lost_s_per_miner = match without_work {
                true => (total_weight > 0.0).then(|| lost / total_weight),
                false => rejected_s(k as f64),
            };
            let blocks_missed = lost_s_per_miner.map(|t| worth.farm_blocks_in(t));
            let lost_s_per_miner_ci = (!without_work && k > 0)
                .then(|| poisson_interval(k))
                .and_then(|(lo, hi)| rejected_s(lo).zip(rejected_s(hi)));
            let sats = |t: f64| worth.farm_blocks_in(t) * block_value;
            SideOutage {
                target: f.target.clone(),
                fault: f.fault,
                began_s: secs(f.began_ns.saturating_sub(window.start_ns)),
                lasted_s: secs(ended.saturating_sub(f.began_ns)),
                miners: side.miners,
                back,
                without_work_s: (!without.is_empty()).then(|| Dist::of(&without)),
                shortest_without_work_s: without.iter().copied().reduce(f64::min),
                recovery_s: (!recovery.is_empty()).then(|| Dist::of(&recovery)),
                accepted_during: f.accepted_during,
                rejected_until_back: f.rejected_until_back,
                rejected_anyway: anyway,
                first_accepted_after_s: f
                    .first_accepted_after_end
                    .map(|t| secs(t.saturating_sub(ended))),
                failed_over: f.to_backup.len() as u32,
                first_accepted_on_backup_s: f
                    .first_accepted_on_backup
                    .map(|t| secs(t.saturating_sub(f.began_ns))),
                accepted_on_backup: f.accepted_on_backup,
                returned: f.to_primary.len() as u32,
                returned_after_end_s: (!returned_after.is_empty())
                    .then(|| Dist::of(&returned_after)),
                return_gap_s: (!gaps.is_empty()).then(|| Dist::of(&gaps)),
                lost_s_per_miner,
                lost_is_rejected_work: !without_work,
                blocks_missed,
                lost_sats: blocks_missed.map(|b| b * block_value),
                lost_s_per_miner_ci,
                lost_sats_ci: lost_s_per_miner_ci.map(|(lo, hi)| (sats(lo), sats(hi))),
            }
        })
        .collect()
}

/// The exact (Garwood) 95% interval of a Poisson mean from a count of `k`: the means at
/// which a count of k or more, and of k or fewer, is 2.5% likely, chi2(0.025, 2k) / 2 and
/// chi2(0.975, 2k + 2) / 2. From 0 at k = 0.
pub fn poisson_interval(k: u64) -> (f64, f64) {
    let chi2 =
        |p: f64, df: u64| ChiSquared::new(df as f64).map_or(0.0, |dist| dist.inverse_cdf(p) / 2.0);
    let lo = if k == 0 { 0.0 } else { chi2(0.025, 2 * k) };
    (lo, chi2(0.975, 2 * k + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::rec_s as at;

    fn job(t_s: f64, miner: u32) -> Record {
        at(
            t_s,
            "miners",
            Event::JobReceived {
                miner,
                job_id: "1".into(),
                prev_hash: "p".into(),
                marker_txid: None,
                clean: true,
                work_id: None,
            },
        )
    }

    fn judged(t_s: f64, verdict: ShareVerdict) -> Record {
        at(
            t_s,
            "pool",
            Event::ShareJudged {
                worker: "farm.1".into(),
                job_id: "1".into(),
                verdict,
                block_hash: None,
                reason: None,
                difficulty: Some(1.0),
            },
        )
    }

    /// The pool dropping at `t_s` for `lasts_s`, as the link records it.
    fn began(t_s: f64, lasts_s: f64) -> Record {
        let fault = Event::FaultBegan {
            target: "pool".into(),
            fault: FaultKind::Drop,
            lasts_ms: lasts_s * 1e3,
        };
        at(t_s, "link", fault)
    }

    fn ended(t_s: f64) -> Record {
        at(
            t_s,
            "link",
            Event::FaultEnded {
                target: "pool".into(),
            },
        )
    }

    fn accepted(t_s: f64) -> Record {
        judged(t_s, ShareVerdict::Accepted)
    }

    fn rejected(t_s: f64) -> Record {
        judged(t_s, ShareVerdict::Stale)
    }

    /// A window from 0 to 100 s; the pool drops at 40 s for 20 s. Miner 0 has a job again
    /// at 61.5 s (without work 21.5 s, recovery 1.5 s), miner 1 at 66 s (26 s, 6 s): 23.75
    /// s lost each on average. A share accepted at 45 s is impossible for a dropped pool,
    /// but counted (at 45 s the fault lasts); the first after its end, at 63 s: 3 s. With
    /// 1 PH/s of 1 ZH/s at 600 s blocks (0.000144 blocks a day) worth 312,500,000 sats:
    /// 0.000144 x 23.75 / 86,400 = 3.958e-8 blocks, 12.37 sats.
    #[test]
    fn an_outage_costs_each_miner_its_time_without_work_priced_at_the_farms_pace() {
        let side = crate::testing::sv1_side().1;
        let window = Window {
            start_ns: 0,
            end_ns: 100_000_000_000,
        };
        let events = [
            job(10.0, 0),
            began(40.0, 20.0),
            accepted(45.0),
            rejected(50.0),
            ended(60.0),
            job(61.5, 0),
            rejected(62.0),
            accepted(63.0),
            // Once one was accepted after the end, rejections are no longer the fault's.
            rejected(64.0),
            job(66.0, 1),
            job(70.0, 0),
            accepted(71.0),
        ];
        let mut facts = OutageFacts::default();
        for r in &events {
            facts.consume(&side, window, r);
        }
        let worth = WorthAssumptions::default();
        let [o] = &side_outages(&side, &facts, &[], window, &worth, 312_500_000.0)[..] else {
            panic!("one fault");
        };
        assert_eq!((o.target.as_str(), o.fault), ("pool", FaultKind::Drop));
        assert_eq!((o.began_s, o.lasted_s), (40.0, 20.0));
        assert_eq!((o.miners, o.back), (2, 2));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        let without = o.without_work_s.clone().unwrap();
        assert!(close(without.mean.unwrap(), 23.75) && close(without.max.unwrap(), 26.0));
        assert!(close(o.shortest_without_work_s.unwrap(), 21.5));
        let recovery = o.recovery_s.clone().unwrap();
        assert!(close(recovery.p50.unwrap(), 1.5) && close(recovery.max.unwrap(), 6.0));
        assert_eq!((o.accepted_during, o.rejected_until_back), (1, 2));
        assert!(close(o.first_accepted_after_s.unwrap(), 3.0));
        assert!(close(o.lost_s_per_miner.unwrap(), 23.75));
        assert!((o.blocks_missed.unwrap() / 3.958_333e-8 - 1.0).abs() < 1e-5);
        assert!((o.lost_sats.unwrap() - 12.369_79).abs() < 1e-3);
        // Miner 1 hashing three times as fast as miner 0 weighs three times as much:
        // (21.5 + 3 x 26) / 4 = 24.875 s.
        let weighed = side_outages(&side, &facts, &[0.5, 1.5], window, &worth, 1.0);
        assert!(close(weighed[0].lost_s_per_miner.unwrap(), 24.875));
    }

    fn switched(t_s: f64, miner: u32, to: &str) -> Record {
        let to = to.into();
        at(t_s, "miners", Event::PoolSwitched { miner, to })
    }

    fn on_backup(t_s: f64) -> Record {
        let mut r = accepted(t_s);
        r.role = "tap-backup".into();
        r
    }

    /// A backup pool: the pool drops at 40 s for 60 s in a 0 to 200 s window. Both miners
    /// turn to the backup at 51 s (1 s pause, two 5 s retries: their third failure) and
    /// have its job at 51.3 s: 11.3 s without work each. The backup accepts at 52 s (12 s
    /// after the start) and 60 s, while the fault lasts, and at 110 s, after it. The fault
    /// ends at 100 s; miner 0 turns back at 111 s (11 s after the end) and has the
    /// primary's job at 112.2 s (1.2 s without work on the way); miner 1 turns back at 171
    /// s and is without work to the window's end (29 s). Lost: (11.3 + 1.2 + 11.3 + 29) / 2
    /// = 26.4 s a miner.
    #[test]
    fn a_failover_costs_the_time_to_the_backups_job_and_the_way_back() {
        let (mut side, window) = (
            crate::testing::sv1_side().1,
            Window {
                start_ns: 0,
                end_ns: 200_000_000_000,
            },
        );
        side.backup_pool_role = Some("tap-backup".into());
        let events = [
            job(10.0, 0),
            began(40.0, 60.0),
            switched(51.0, 0, "backup"),
            switched(51.0, 1, "backup"),
            job(51.3, 0),
            job(51.3, 1),
            on_backup(52.0),
            on_backup(60.0),
            ended(100.0),
            on_backup(110.0),
            switched(111.0, 0, "primary"),
            job(112.2, 0),
            accepted(113.0),
            switched(171.0, 1, "primary"),
        ];
        let mut facts = OutageFacts::default();
        for r in &events {
            facts.consume(&side, window, r);
        }
        let worth = WorthAssumptions::default();
        let o = &side_outages(&side, &facts, &[], window, &worth, 1.0)[0];
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert_eq!((o.back, o.failed_over, o.returned), (2, 2, 2));
        // Both had work again before the primary was back: no recovery after its end.
        assert_eq!(o.recovery_s, None);
        assert!(close(o.without_work_s.clone().unwrap().max.unwrap(), 11.3));
        assert!(close(o.first_accepted_on_backup_s.unwrap(), 12.0));
        assert_eq!((o.accepted_on_backup, o.accepted_during), (2, 0));
        let turned = o.returned_after_end_s.clone().unwrap();
        assert!(close(turned.mean.unwrap(), 41.0) && close(turned.max.unwrap(), 71.0));
        let gaps = o.return_gap_s.clone().unwrap();
        assert!(close(gaps.mean.unwrap(), 15.1) && close(gaps.max.unwrap(), 29.0));
        assert!(close(o.first_accepted_after_s.unwrap(), 13.0));
        assert!(close(o.lost_s_per_miner.unwrap(), 26.4));
    }

    /// The whole link drops at 40 s for 30 s: the backup is down too. The miner turns to
    /// it at 51 s, gets nothing, turns back at 66 s after three more failures, and has the
    /// primary's job at 71.1 s. That turn back is a step of the failover, not a return:
    /// 31.1 s lost, once.
    #[test]
    fn a_turn_back_from_a_backup_that_never_served_is_no_return() {
        let (mut side, window) = (
            crate::testing::sv1_side().1,
            Window {
                start_ns: 0,
                end_ns: 100_000_000_000,
            },
        );
        side.miners = 1;
        side.backup_pool_role = Some("tap-backup".into());
        let events = [
            began(40.0, 30.0),
            switched(51.0, 0, "backup"),
            switched(66.0, 0, "primary"),
            ended(70.0),
            job(71.1, 0),
        ];
        let mut facts = OutageFacts::default();
        for r in &events {
            facts.consume(&side, window, r);
        }
        let worth = WorthAssumptions::default();
        let o = &side_outages(&side, &facts, &[], window, &worth, 1.0)[0];
        assert_eq!((o.failed_over, o.returned), (1, 0));
        assert!((o.lost_s_per_miner.unwrap() - 31.1).abs() < 1e-6);
        assert_eq!(o.return_gap_s, None);
    }

    /// A miner never back counts until the window's end: the pool drops at 40 s, the
    /// window ends at 100 s, one miner is back at 62 s (22 s) and one not (60 s): 41 s
    /// each. The same as a stall, without the miners' hashrate, is counted and not priced.
    #[test]
    fn a_miner_never_back_counts_until_the_windows_end_and_a_stall_is_not_priced() {
        let side = crate::testing::sv1_side().1;
        let window = Window {
            start_ns: 0,
            end_ns: 100_000_000_000,
        };
        let events = [
            began(40.0, 10.0),
            ended(50.0),
            job(62.0, 0),
            // After the window: not seen.
            job(101.0, 1),
        ];
        let mut facts = OutageFacts::default();
        for r in &events {
            facts.consume(&side, window, r);
        }
        let worth = WorthAssumptions::default();
        let o = &side_outages(&side, &facts, &[], window, &worth, 1.0)[0];
        assert_eq!((o.miners, o.back), (2, 1));
        assert!((o.lost_s_per_miner.unwrap() - 41.0).abs() < 1e-9);
        assert_eq!(o.first_accepted_after_s, None);
        facts.faults[0].fault = FaultKind::Stall;
        let o = &side_outages(&side, &facts, &[], window, &worth, 1.0)[0];
        assert_eq!((o.back, o.lost_s_per_miner, o.lost_sats), (1, None, None));
    }

    /// A stall from 40 s to 50 s; a block came meanwhile, so the three shares held through
    /// it (difficulty 1 each, 2^32 hashes) are rejected when it ends, and a fourth after an
    /// accepted one is not the stall's. The judge rejects 1 in 25 shares outside the stall
    /// (24 accepted before it, that fourth after): of the 4 it judged from the stall's start
    /// to its first accepted share, 0.16 would have been rejected anyway, so 2.84 are lost.
    /// Two miners of 2^31 hashes a second: 2.84 x 2^32 / 2^32 = 2.84 s of the farm's work
    /// lost, 0.000144 x 2.84 / 86,400 = 4.7333e-9 blocks, 1.479167 sats at 312,500,000
    /// (0.520833 sats a second of the farm's work).
    #[test]
    fn a_stall_costs_the_work_its_judge_rejected_beyond_its_usual_until_it_accepted_again() {
        let side = SideRoles {
            miner_hashrate: Some(2f64.powi(31)),
            ..crate::testing::sv1_side().1
        };
        let window = Window {
            start_ns: 0,
            end_ns: 100_000_000_000,
        };
        let stall = Event::FaultBegan {
            target: "pool".into(),
            fault: FaultKind::Stall,
            lasts_ms: 10_000.0,
        };
        let mut events: Vec<Record> = (0..24).map(|i| accepted(10.0 + f64::from(i))).collect();
        events.extend([
            at(40.0, "link", stall),
            ended(50.0),
            rejected(50.1),
            rejected(50.1),
            rejected(50.2),
            accepted(52.0),
            rejected(53.0),
        ]);
        let mut facts = OutageFacts::default();
        for r in &events {
            facts.consume(&side, window, r);
        }
        assert_eq!((facts.judged_outside, facts.rejected_outside), (25, 1));
        let worth = WorthAssumptions::default();
        let o = &side_outages(&side, &facts, &[], window, &worth, 312_500_000.0)[0];
        assert_eq!(o.rejected_until_back, 3);
        assert!((o.rejected_anyway - 0.16).abs() < 1e-12);
        assert!((o.lost_s_per_miner.unwrap() - 2.84).abs() < 1e-9);
        assert!((o.blocks_missed.unwrap() / 4.733_333e-9 - 1.0).abs() < 1e-6);
        assert!((o.lost_sats.unwrap() - 1.479_167).abs() < 1e-6);
        // Three shares are a Poisson count of mean 0.6187 to 8.7673 (below); less the 0.16
        // usual, 0.4587 to 8.6073 s, and at 0.520833 sats a second 0.2389 to 4.4830 sats.
        let (lo, hi) = o.lost_s_per_miner_ci.unwrap();
        assert!((lo - 0.458_67).abs() < 1e-4 && (hi - 8.607_27).abs() < 1e-4);
        let (lo, hi) = o.lost_sats_ci.unwrap();
        assert!(
            (lo - 0.238_89).abs() < 1e-4 && (hi - 4.482_95).abs() < 1e-4,
            "{lo} {hi}"
        );
        // A judge that rejects nothing outside: all three lost, 3 s, 1.5625 sats, and the
        // interval 0.2062 to 2.9224 times that.
        facts.rejected_outside = 0;
        let o = &side_outages(&side, &facts, &[], window, &worth, 312_500_000.0)[0];
        assert!((o.lost_sats.unwrap() - 1.5625).abs() < 1e-6);
        let (lo, hi) = o.lost_sats_ci.unwrap();
        assert!((lo / 1.5625 - 0.206_224).abs() < 1e-5 && (hi / 1.5625 - 2.922_424).abs() < 1e-5);
        // None rejected: nothing lost, and no work a share to scale an interval by.
        facts.faults[0].rejected_until_back = 0;
        facts.faults[0].rejected_work = Credited::default();
        let o = &side_outages(&side, &facts, &[], window, &worth, 312_500_000.0)[0];
        assert_eq!((o.lost_sats, o.lost_sats_ci), (Some(0.0), None));
    }

    /// Garwood's interval from the chi-square tables: for 3, chi2(0.025, 6) / 2 = 1.2373 /
    /// 2 = 0.6187 and chi2(0.975, 8) / 2 = 17.5345 / 2 = 8.7673; for 0, from 0 to
    /// chi2(0.975, 2) / 2 = -ln(0.025) = 3.6889; for 1, -ln(0.975) = 0.02532 (the mean at
    /// which none comes 97.5% of the time) to 5.5716; for 100, 81.36 to 121.63.
    #[test]
    fn a_poisson_count_has_its_exact_interval() {
        let close = |(lo, hi): (f64, f64), (a, b): (f64, f64), tol: f64| {
            (lo - a).abs() < tol && (hi - b).abs() < tol
        };
        assert!(close(poisson_interval(3), (0.6187, 8.7673), 1e-4));
        assert!(close(poisson_interval(0), (0.0, 0.025f64.ln().abs()), 1e-9));
        let one = poisson_interval(1);
        assert!(close(one, (0.975f64.ln().abs(), 5.5716), 1e-4), "{one:?}");
        assert!(close(poisson_interval(100), (81.36, 121.63), 1e-2));
    }
}
