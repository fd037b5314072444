//! What an attacker on the link (scenario `link.attack`) took from each side, and how soon
//! the side noticed.
//!
//! Per side, from the moment the side's link recorded the attack's start
//! ([`Event::AttackBegan`]) to the window's end: the work the pool credited (its accepted
//! shares' difficulty, as hashes) to the attacker's worker and to the farm's, in percent of
//! the work the farm's miners did meanwhile (their hashrate, a scenario parameter, times
//! the time); the same before the attack, as the reference. The side's share judge (its
//! `pool_role`) decides; every other role of the side that judges shares (our SV1 pool
//! behind its tap) is counted too, as a check. What the miners were told meanwhile says
//! whether the farm could see anything wrong. Each connection the attacker changed, and the
//! end that closed it within the window, gives the time to detection: from the attacker's
//! first change to the close, both as the link saw them.
//!
//! Worth: a farm that loses a fraction f of its work loses f of its revenue while the
//! attack lasts: f x B x V sats a day (B blocks a day, V a block's value,
//! `analysis::worth`). Denied: the fall of the work credited at all (to anyone) against
//! before the attack, at its point, with the 95% interval of the difference of the two
//! periods' credited work (independent Poisson sums): a fall within the shares' noise is
//! priced at what it shows, with an interval that reaches 0, rather than at 0 until the
//! two periods' own intervals part (about 99.4% confidence, not 95%). Stolen: of
//! what was still credited, the attacker's part (a split of the pool's own records, by
//! difficulty, with its Wilson interval as a binomial proportion of shares). A job
//! hijack credits the attacker nothing at the pool: it takes the blocks of the work done
//! on the jobs it rewrote (the link names each), so its stolen part is the share of the
//! farm's shares sent on those jobs, the blocks it expects from them; of the farm's fall
//! in credit, what is left beyond that is denied. (Shares are tied to a rewritten job by
//! its id, which the pool gives every connection alike: a job sent as the attack began,
//! rewritten on some connections and not yet on others, counts for all.)

use crate::credit::Credited;
use crate::manifest::WorthAssumptions;
use crate::manifest::{SideRoles, Window};
use crate::stats::{wilson, Z95};
use model::attack::AttackKind;
use probe::event::LinkEnd;
use probe::{Dist, Event, Record, ShareVerdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The exact 95% upper bound of a Poisson mean when none was seen (-ln 0.025).
const ZERO_SHARES_UPPER: f64 = 3.688_879_454;

pub use crate::manifest::PlannedAttack;

/// One connection the attacker changed, as the link saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AttackedConnection {
    pub first_change_ns: u64,
    pub closed: Option<(LinkEnd, u64)>,
}

/// The share and connection facts of one side under attack, gathered as events come in
/// time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttackFacts {
    /// When the side's link attacker began.
    pub began_ns: Option<u64>,
    /// Work the side's judge credited in the window before the attack began.
    pub before: Credited,
    /// After it began: work credited, by judging role and worker.
    pub after: BTreeMap<String, BTreeMap<String, Credited>>,
    /// The judge's rejections after it began.
    pub rejected_after: u64,
    /// What the miners were told after it began: accepted, rejected.
    pub told_after: (u64, u64),
    /// Changes the attacker made, by kind.
    pub changes: BTreeMap<String, u64>,
    pub connections: BTreeMap<u64, AttackedConnection>,
    /// The jobs whose coinbase the attacker made pay itself (a job hijack), by id.
    pub rewritten_jobs: std::collections::BTreeSet<String>,
    /// The farm's shares after it began: all, those on a job paying the attacker, and the
    /// blocks among the latter.
    pub submitted_after: u64,
    pub on_attacker_payout: u64,
    pub blocks_for_attacker: u64,
}

impl AttackFacts {
    /// One record of the run, in time order.
    pub fn consume(&mut self, side: &SideRoles, window: Window, r: &Record) {
        if r.role == side.link_role && r.t_ns <= window.end_ns {
            self.link_event(r);
        }
        if !window.contains(r.t_ns) {
            return;
        }
        let after = self
            .began_ns
            .is_some_and(|began| r.t_ns >= began.max(window.start_ns));
        match &r.event {
            Event::ShareJudged {
                worker,
                verdict,
                difficulty,
                ..
            } if side.roles.contains(&r.role) || side.is_pool(&r.role) => {
                let judge = side.is_pool(&r.role);
                // The pool's tap is one judge, however many shards it runs as.
                let role = if judge { &side.pool_role } else { &r.role };
                let accepted = *verdict == ShareVerdict::Accepted;
                match (after, accepted) {
                    (false, true) if judge => self.before.add(*difficulty),
                    (true, true) => (self.after.entry(role.clone()).or_default())
                        .entry(worker.clone())
                        .or_default()
                        .add(*difficulty),
                    (true, false) if judge => self.rejected_after += 1,
                    _ => {}
                }
            }
            Event::ShareSubmitted {
                job_id, block_hash, ..
            } if r.role == side.miners_role && after => {
                self.submitted_after += 1;
                if self.rewritten_jobs.contains(job_id) {
                    self.on_attacker_payout += 1;
                    self.blocks_for_attacker += u64::from(block_hash.is_some());
                }
            }
            Event::ShareAnswered { accepted, .. } if r.role == side.miners_role && after => {
                match accepted {
                    true => self.told_after.0 += 1,
                    false => self.told_after.1 += 1,
                }
            }
            _ => {}
        }
    }

    fn link_event(&mut self, r: &Record) {
        match &r.event {
            Event::AttackBegan { .. } => {
                self.began_ns.get_or_insert(r.t_ns);
            }
            Event::AttackApplied {
                conn,
                action,
                job_id,
                ..
            } => {
                self.rewritten_jobs.extend(job_id.iter().cloned());
                let name = serde_json::to_value(action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                *self.changes.entry(name).or_default() += 1;
                self.connections.entry(*conn).or_insert(AttackedConnection {
                    first_change_ns: r.t_ns,
                    closed: None,
                });
            }
            Event::AttackedConnectionClosed { conn, by } => {
                if let Some(c) = self.connections.get_mut(conn) {
                    c.closed.get_or_insert((*by, r.t_ns));
                }
            }
            _ => {}
        }
    }
}

/// A share of the work done, in %, with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkPct {
    pub pct: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
}

/// One side's figures under attack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSecurity {
    pub attack: AttackKind,
    /// Seconds into the window the attack began (0 if before it opened: the window before
    /// it is the reference), and how long the window ran after it.
    pub began_s: f64,
    pub after_s: f64,
    /// Accepted shares after the attack began, by the side's judge: the attacker's and
    /// the farm's; and its rejections.
    pub attacker_shares: u64,
    pub farm_shares: u64,
    pub rejected: u64,
    /// The attacker's accepted shares by every role of the side that judges shares (the
    /// pool's own records, and the tap in front of it).
    pub attacker_shares_by_role: BTreeMap<String, u64>,
    /// Of the farm's work (its miners' hashrate times the time): credited to the farm
    /// before the attack; after it, credited to the attacker, and to the farm.
    pub farm_credited_before: Option<WorkPct>,
    pub attacker_credited: Option<WorkPct>,
    pub farm_credited_after: Option<WorkPct>,
    /// What the farm's miners were told after it began: accepted and rejected answers.
    pub miners_told_accepted: u64,
    pub miners_told_rejected: u64,
    /// Connections the attacker changed, those closed in the window by the pool's end and
    /// by the farm's, and the time from the attacker's first change to the close.
    pub connections_changed: u64,
    pub closed_by_pool: u64,
    pub closed_by_farm: u64,
    pub detection_ms: Option<Dist>,
    /// The attacker's changes, by kind.
    pub changes: BTreeMap<String, u64>,
    /// Of the work the pool credited after the attack began, the attacker's part, in %,
    /// with its 95% interval (Wilson's, at the shares' effective number: their count with
    /// one difficulty).
    pub attacker_split_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacker_split_pct_ci: Option<(f64, f64)>,
    /// A job hijack: of the shares the farm's miners sent after it began, those on a job
    /// whose coinbase paid the attacker, in %; and the blocks they found on such jobs
    /// (each pays the attacker, and the pool rejects it as a share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hashed_for_attacker_pct: Option<f64>,
    #[serde(default)]
    pub blocks_for_attacker: u64,
    /// The shares the farm's miners sent after it began.
    #[serde(default)]
    pub shares_sent_after: u64,
    /// In % of the farm's revenue: lost to anyone's credit (denied), and of the rest,
    /// credited to the attacker (stolen); and those in sats a day for a farm of the worth
    /// assumptions while the attack lasts. The denied part's 95% interval, from the
    /// difference of the credit before and after, in % and in sats a day.
    pub stolen_pct: Option<f64>,
    pub denied_pct: Option<f64>,
    pub stolen_sats_per_day: Option<f64>,
    pub denied_sats_per_day: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_pct_ci: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_sats_per_day_ci: Option<(f64, f64)>,
}

/// The figures of one side's attack facts over `window` (as it ended); `None` when the
/// side's link never recorded an attack.
pub fn side_security(
    side: &SideRoles,
    facts: &AttackFacts,
    planned: &PlannedAttack,
    window: Window,
    worth: &WorthAssumptions,
    block_value: f64,
) -> Option<SideSecurity> {
    let began = facts.began_ns?.clamp(window.start_ns, window.end_ns);
    let before_s = (began - window.start_ns) as f64 / 1e9;
    let after_s = (window.end_ns - began) as f64 / 1e9;
    let account = planned.account.as_deref().unwrap_or_default();
    let judged = facts.after.get(&side.pool_role);
    let attacker = judged
        .and_then(|by| by.get(account))
        .copied()
        .unwrap_or_default();
    let farm = (judged.into_iter().flatten())
        .filter(|(worker, _)| worker.as_str() != account)
        .fold(Credited::default(), |sum, (_, c)| sum.plus(*c));
    let farm_hashrate = side.miner_hashrate.map(|h| h * f64::from(side.miners));
    let of_work = |c: Credited, secs: f64| {
        let (pct, ci) = c.pct_of(farm_hashrate? * secs)?;
        Some(WorkPct { pct, ci })
    };
    let before = of_work(facts.before, before_s);
    let stolen = of_work(attacker, after_s);
    let kept = of_work(farm, after_s);
    let credited_after = attacker.plus(farm);
    let split = (credited_after.hashes > 0.0).then(|| attacker.hashes / credited_after.hashes);
    let mut after = of_work(credited_after, after_s);
    if let (0, Some(a), Some(h)) = (credited_after.shares, after.as_mut(), farm_hashrate) {
        // Nothing credited: the exact Poisson 95% upper bound is 3.689 shares, of the size
        // the shares before the attack had.
        let share = facts.before.hashes / facts.before.shares.max(1) as f64;
        a.ci = Some((0.0, ZERO_SHARES_UPPER * share / (h * after_s) * 100.0));
    }
    // Priced only with the farm's work known, as the shares of it are.
    let fall = (before.zip(after))
        .and_then(|_| credit_fall(facts.before, before_s, credited_after, after_s));
    // A job hijack takes the blocks of the work done on its jobs: of the farm's loss, that
    // is the stolen part (tied by job id, without the shares' noise), the rest denied.
    // Another attack takes its split of what is still credited. The two add up to the
    // farm's loss.
    let hashed_for_attacker = (planned.kind == AttackKind::HijackJob && facts.submitted_after > 0)
        .then(|| facts.on_attacker_payout as f64 / facts.submitted_after as f64);
    let (stolen_share, fall) = match hashed_for_attacker {
        Some(hashed) => {
            let beyond = |d: f64| (d - hashed).max(0.0);
            let fall = fall.map(|(d, (lo, hi))| (beyond(d), (beyond(lo), beyond(hi))));
            (Some(hashed), fall)
        }
        None => (fall.map(|(d, _)| split.unwrap_or(0.0) * (1.0 - d)), fall),
    };
    let (denied, denied_ci) = (fall.map(|f| f.0), fall.map(|f| f.1));
    let revenue_per_day = worth.farm_blocks_per_day() * block_value;
    let closes: Vec<(LinkEnd, f64)> = (facts.connections.values())
        .filter_map(|c| {
            let (by, t) = c.closed.filter(|(_, t)| *t <= window.end_ns)?;
            Some((by, t.saturating_sub(c.first_change_ns) as f64 / 1e6))
        })
        .collect();
    let detection: Vec<f64> = closes.iter().map(|(_, ms)| *ms).collect();
    let closed_by = |end: LinkEnd| closes.iter().filter(|(by, _)| *by == end).count() as u64;
    Some(SideSecurity {
        attack: planned.kind,
        began_s: before_s,
        after_s,
        attacker_shares: attacker.shares,
        farm_shares: farm.shares,
        rejected: facts.rejected_after,
        attacker_shares_by_role: (facts.after.iter())
            .map(|(role, by)| (role.clone(), by.get(account).map_or(0, |c| c.shares)))
            .collect(),
        farm_credited_before: before,
        attacker_credited: stolen,
        farm_credited_after: kept,
        attacker_split_pct: split.map(|f| f * 100.0),
        attacker_split_pct_ci: split
            .and_then(|f| wilson(f, effective_shares(credited_after)))
            .map(|(lo, hi)| (lo * 100.0, hi * 100.0)),
        hashed_for_attacker_pct: hashed_for_attacker.map(|f| f * 100.0),
        blocks_for_attacker: facts.blocks_for_attacker,
        shares_sent_after: facts.submitted_after,
        miners_told_accepted: facts.told_after.0,
        miners_told_rejected: facts.told_after.1,
        connections_changed: facts.connections.len() as u64,
        closed_by_pool: closed_by(LinkEnd::Pool),
        closed_by_farm: closed_by(LinkEnd::Farm),
        detection_ms: (!detection.is_empty()).then(|| Dist::of(&detection)),
        changes: facts.changes.clone(),
        stolen_pct: stolen_share.map(|f| f * 100.0),
        denied_pct: denied.map(|f| f * 100.0),
        stolen_sats_per_day: stolen_share.map(|f| f * revenue_per_day),
        denied_sats_per_day: denied.map(|f| f * revenue_per_day),
        denied_pct_ci: denied_ci.map(|(lo, hi)| (lo * 100.0, hi * 100.0)),
        denied_sats_per_day_ci: denied_ci
            .map(|(lo, hi)| (lo * revenue_per_day, hi * revenue_per_day)),
    })
}

/// The fall of the work credited per second from `before` (over `before_s`) to `after`
/// (over `after_s`), as a fraction of before's, with its 95% interval: the two periods'
/// shares are independent Poisson sums, each of variance its squared difficulties summed,
/// so the difference of their rates has the two variances added (normal, as each
/// period's own interval is). Within 0 and 1: a rise is no fall. `None` with nothing
/// credited before.
fn credit_fall(
    before: Credited,
    before_s: f64,
    after: Credited,
    after_s: f64,
) -> Option<(f64, (f64, f64))> {
    if before.hashes <= 0.0 || before_s <= 0.0 || after_s <= 0.0 {
        return None;
    }
    let (rate_before, rate_after) = (before.hashes / before_s, after.hashes / after_s);
    let variance = before.hashes_sq / (before_s * before_s) + after.hashes_sq / (after_s * after_s);
    let half = Z95 * variance.sqrt();
    let of_before = |rise: f64| (-rise / rate_before).clamp(0.0, 1.0);
    let rise = rate_after - rate_before;
    Some((
        of_before(rise),
        (of_before(rise + half), of_before(rise - half)),
    ))
}

/// Kish's effective number of shares, (sum of difficulties)^2 / sum of their squares: the
/// count with one difficulty, fewer when a few large shares hold most of the work.
fn effective_shares(c: Credited) -> f64 {
    if c.hashes_sq > 0.0 {
        c.hashes * c.hashes / c.hashes_sq
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::event::AttackAction;

    use crate::testing::rec_s as at;

    fn judged(t_s: f64, worker: &str, verdict: ShareVerdict) -> Record {
        at(
            t_s,
            "pool",
            Event::ShareJudged {
                worker: worker.into(),
                job_id: "1".into(),
                verdict,
                block_hash: None,
                reason: None,
                difficulty: Some(1.0),
            },
        )
    }

    fn accepted(t_s: f64, worker: &str) -> Record {
        judged(t_s, worker, ShareVerdict::Accepted)
    }

    fn began(t_s: f64) -> Record {
        at(
            t_s,
            "link",
            Event::AttackBegan {
                attack: "hijack-worker".into(),
            },
        )
    }

    fn changed(t_s: f64, conn: u64, action: AttackAction) -> Record {
        at(
            t_s,
            "link",
            Event::AttackApplied {
                conn,
                up: true,
                action,
                job_id: None,
            },
        )
    }

    /// Two miners of 2^31 hashes a second each: one share of difficulty 1 (2^32 hashes) a
    /// second between them.
    fn side() -> SideRoles {
        SideRoles {
            miner_hashrate: Some(2f64.powi(31)),
            ..crate::testing::sv1_side().1
        }
    }

    fn planned() -> PlannedAttack {
        PlannedAttack {
            kind: AttackKind::HijackWorker,
            at_s: 40.0,
            account: Some("thief".into()),
        }
    }

    fn figures(events: &mut [Record], window: Window, block_value: f64) -> Option<SideSecurity> {
        events.sort_by_key(|r| r.t_ns);
        let mut facts = AttackFacts::default();
        for r in events.iter() {
            facts.consume(&side(), window, r);
        }
        let worth = WorthAssumptions::default();
        side_security(&side(), &facts, &planned(), window, &worth, block_value)
    }

    /// A window of 100 s from t = 10 s; the attack begins at 50 s (40 s in). Before it, 40
    /// shares in 40 s: 100% of the farm's work. After it, 45 shares to the thief and 15 to
    /// the farm in 60 s: 75% (interval (45 -+ 1.96 sqrt 45) / 60 = 53.09% to 96.91%) and
    /// 25%, nothing denied: a share a second before and after, the difference's interval
    /// 0 -+ 1.96 sqrt(40 / 40^2 + 60 / 60^2) = -+0.4001 a second, a fall of 0 to 40.01%.
    /// The split, 45 of 60 shares of one difficulty, has Wilson's interval 62.77% to 84.22%.
    /// With 1 PH/s of 1 ZH/s at 600 s blocks (1e-6 x 144 = 0.000144 blocks a day) worth
    /// 312,500,000 sats: revenue 45,000 sats a day, 0.75 of it 33,750.
    #[test]
    fn a_hijack_is_priced_as_the_share_of_the_farms_work_credited_to_the_attacker() {
        let window = Window {
            start_ns: 10_000_000_000,
            end_ns: 110_000_000_000,
        };
        let mut events = vec![began(50.0), changed(50.2, 3, AttackAction::SubmitRewritten)];
        events.extend((0..40).map(|i| accepted(10.5 + f64::from(i), "farm.1")));
        // Outside the window: not counted.
        events.push(accepted(5.0, "farm.1"));
        events.extend((0..60).map(|i| {
            let who = if i % 4 == 0 { "farm.1" } else { "thief" };
            accepted(50.5 + f64::from(i), who)
        }));
        events.push(judged(70.0, "thief", ShareVerdict::Stale));
        // A judge that is not a role of the side: not counted.
        events.push(at(
            60.0,
            "pool-behind",
            Event::ShareJudged {
                worker: "thief".into(),
                job_id: "1".into(),
                verdict: ShareVerdict::Accepted,
                block_hash: None,
                reason: None,
                difficulty: None,
            },
        ));
        let s = figures(&mut events, window, 312_500_000.0).unwrap();
        assert_eq!((s.began_s, s.after_s), (40.0, 60.0));
        assert_eq!((s.attacker_shares, s.farm_shares, s.rejected), (45, 15, 1));
        assert_eq!(
            s.attacker_shares_by_role,
            BTreeMap::from([("pool".into(), 45)])
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(s.farm_credited_before.unwrap().pct, 100.0));
        let stolen = s.attacker_credited.unwrap();
        assert!(close(stolen.pct, 75.0));
        let (lo, hi) = stolen.ci.unwrap();
        assert!(close(
            lo,
            (45.0 - 1.959_963_984_540_054 * 45f64.sqrt()) / 60.0 * 100.0
        ));
        assert!(
            (lo - 53.09).abs() < 0.01 && (hi - 96.91).abs() < 0.01,
            "{lo} {hi}"
        );
        assert!(close(s.farm_credited_after.unwrap().pct, 25.0));
        assert!(close(s.attacker_split_pct.unwrap(), 75.0));
        let (lo, hi) = s.attacker_split_pct_ci.unwrap();
        assert!(
            (lo - 62.768).abs() < 1e-3 && (hi - 84.223).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert!(close(s.denied_pct.unwrap(), 0.0));
        let (lo, hi) = s.denied_pct_ci.unwrap();
        assert!(close(lo, 0.0) && (hi - 40.008).abs() < 1e-3, "{lo} {hi}");
        let (_, hi) = s.denied_sats_per_day_ci.unwrap();
        assert!((hi - 0.400_076 * 45_000.0).abs() < 0.1, "{hi}");
        assert!(close(s.stolen_pct.unwrap(), 75.0));
        assert!(close(s.stolen_sats_per_day.unwrap(), 33_750.0));
        // Never closed: not detected.
        assert_eq!(s.connections_changed, 1);
        assert_eq!(s.detection_ms, None);
        assert_eq!(s.changes["submit_rewritten"], 1);
    }

    /// A job hijack from 50 s in a window of 0 to 100 s: before it, 50 shares accepted in
    /// 50 s (100% of the farm's work). The attacker rewrites jobs j2 and j3; after it, the
    /// miners send 10 shares on j1 (a job from before) and 30 on j2 and j3, one of them a
    /// block; the pool rejects all 40. The farm loses all of its credit; of that, the 30 of
    /// 40 shares on the attacker's coinbase are stolen, 75% of the farm's revenue, 33,750
    /// sats a day of 45,000 (1 PH/s of 1 ZH/s at 600 s blocks worth 312,500,000); the rest,
    /// 25%, denied. The fall, all of 50 shares in 50 s, is 1 -+ 1.96 sqrt(50) / 50 = 72.28%
    /// to 100%: beyond the 75% stolen, 0 to 25% denied.
    #[test]
    fn a_job_hijack_takes_the_blocks_of_the_work_on_its_jobs_and_the_pool_credits_nothing() {
        let window = Window {
            start_ns: 0,
            end_ns: 100_000_000_000,
        };
        let rewritten = |t_s: f64, job: &str| {
            let action = AttackAction::JobRewritten;
            let job_id = Some(job.to_string());
            at(
                t_s,
                "link",
                Event::AttackApplied {
                    conn: 0,
                    up: false,
                    action,
                    job_id,
                },
            )
        };
        let submitted = |t_s: f64, job: &str, block: bool| {
            at(
                t_s,
                "miners",
                Event::ShareSubmitted {
                    miner: 0,
                    share_id: (t_s * 10.0) as u64,
                    job_id: job.into(),
                    prev_hash: "p".into(),
                    block_hash: block.then(|| "b".into()),
                },
            )
        };
        let mut events = vec![began(50.0), rewritten(50.1, "j2"), rewritten(60.0, "j3")];
        events.extend((0..50).map(|i| accepted(0.5 + f64::from(i), "farm.1")));
        events.extend((0..10).map(|i| submitted(50.05 + f64::from(i) / 1000.0, "j1", false)));
        events.extend((0..30).map(|i| {
            let job = if i < 15 { "j2" } else { "j3" };
            submitted(51.0 + f64::from(i), job, i == 20)
        }));
        events.extend(
            (0..40).map(|i| judged(51.5 + f64::from(i), "farm.1", ShareVerdict::LowDifficulty)),
        );
        events.sort_by_key(|r| r.t_ns);
        let mut facts = AttackFacts::default();
        for r in &events {
            facts.consume(&side(), window, r);
        }
        let planned = PlannedAttack {
            kind: AttackKind::HijackJob,
            at_s: 50.0,
            account: None,
        };
        let worth = WorthAssumptions::default();
        let s = side_security(&side(), &facts, &planned, window, &worth, 312_500_000.0).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(s.hashed_for_attacker_pct.unwrap(), 75.0));
        assert_eq!(
            (s.blocks_for_attacker, s.rejected, s.farm_shares),
            (1, 40, 0)
        );
        assert!(close(s.stolen_pct.unwrap(), 75.0));
        assert!(close(s.stolen_sats_per_day.unwrap(), 33_750.0));
        assert!(close(s.denied_pct.unwrap(), 25.0));
        assert_eq!(
            s.denied_pct_ci
                .map(|(lo, hi)| (lo, (hi * 1e6).round() / 1e6)),
            Some((0.0, 25.0))
        );
        assert_eq!(s.changes["job_rewritten"], 2);
    }

    /// An SV2 session whose ciphertext changed at 50.2 s is closed by the pool's end at
    /// 50.26 s: detected in 60 ms. Another closes after the window (the run's end): not a
    /// detection. The farm's shares stop: after the attack the farm is credited nothing and
    /// the attacker nothing, so all of the 100% it had is denied: 1 -+ 1.96 sqrt(50) / 50,
    /// 72.28% to 100%.
    #[test]
    fn a_changed_ciphertext_is_detected_at_the_close_and_what_stops_is_denied_not_stolen() {
        let window = Window {
            start_ns: 0,
            end_ns: 100_000_000_000,
        };
        let mut events = vec![
            began(50.0),
            changed(50.2, 0, AttackAction::CiphertextChanged),
            changed(50.3, 1, AttackAction::CiphertextChanged),
        ];
        events.extend((0..50).map(|i| accepted(0.5 + f64::from(i), "farm.1")));
        for (t, conn) in [(50.26, 0), (101.0, 1)] {
            events.push(at(
                t,
                "link",
                Event::AttackedConnectionClosed {
                    conn,
                    by: LinkEnd::Pool,
                },
            ));
        }
        let s = figures(&mut events, window, 1.0).unwrap();
        assert_eq!(s.attacker_credited, Some(WorkPct { pct: 0.0, ci: None }));
        assert_eq!(s.stolen_pct, Some(0.0));
        assert!((s.denied_pct.unwrap() - 100.0).abs() < 1e-9);
        let (lo, hi) = s.denied_pct_ci.unwrap();
        assert!((lo - 72.282).abs() < 1e-3 && hi == 100.0, "{lo} {hi}");
        assert_eq!((s.connections_changed, s.closed_by_pool), (2, 1));
        let detection = s.detection_ms.unwrap();
        assert!(
            (detection.p50.unwrap() - 60.0).abs() < 1e-6,
            "{detection:?}"
        );
    }

    /// More credited after the attack than before (Poisson noise: 121% against 79%) is no
    /// fall, its interval none either (0.42 -+ 1.96 sqrt(0.0079 + 0.0121) = 0.42 -+ 0.277
    /// a second more); all of it credited to the attacker is 100% stolen, never more. A
    /// fall within the noise (90 shares in 100 s against 100) is priced at its point, 10%
    /// denied, with the difference's interval: 0.1 -+ 1.96 sqrt(0.01 + 0.009) = 0.1 -+
    /// 0.2702 a second, 0 to 37.02%. (The two periods' own intervals, 100 -+ 19.6 and 90
    /// -+ 18.6, overlap: priced at 0 that way, whatever the fall up to about a third.)
    #[test]
    fn a_fall_within_the_noise_is_priced_with_its_interval_and_theft_never_exceeds_revenue() {
        let window = Window {
            start_ns: 0,
            end_ns: 200_000_000_000,
        };
        let mut events = vec![began(100.0)];
        events.extend((0..79).map(|i| accepted(f64::from(i) * 1.25, "farm.1")));
        events.extend((0..121).map(|i| accepted(100.1 + f64::from(i) * 0.8, "thief")));
        let s = figures(&mut events, window, 1.0).unwrap();
        assert!((s.attacker_credited.unwrap().pct - 121.0).abs() < 1e-9);
        assert_eq!((s.denied_pct, s.stolen_pct), (Some(0.0), Some(100.0)));
        assert_eq!(s.denied_pct_ci, Some((0.0, 0.0)));
        let mut events = vec![began(100.0)];
        events.extend((0..100).map(|i| accepted(f64::from(i), "farm.1")));
        events.extend((0..90).map(|i| accepted(100.5 + f64::from(i), "farm.1")));
        let s = figures(&mut events, window, 1.0).unwrap();
        assert!((s.denied_pct.unwrap() - 10.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.stolen_pct, Some(0.0));
        let (lo, hi) = s.denied_pct_ci.unwrap();
        assert!(lo == 0.0 && (hi - 37.016).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn without_the_miners_hashrate_there_are_counts_but_no_shares_of_work() {
        let window = Window {
            start_ns: 0,
            end_ns: 100_000_000_000,
        };
        let mut facts = AttackFacts::default();
        for r in [began(50.0), accepted(60.0, "thief")] {
            facts.consume(&side(), window, &r);
        }
        let unknown = SideRoles {
            miner_hashrate: None,
            ..side()
        };
        let worth = WorthAssumptions::default();
        let s = side_security(&unknown, &facts, &planned(), window, &worth, 1.0).unwrap();
        assert_eq!(s.attacker_shares, 1);
        assert_eq!(
            (s.attacker_credited, s.stolen_pct, s.denied_pct),
            (None, None, None)
        );
        // No attack recorded: no figures.
        let none = AttackFacts::default();
        assert_eq!(
            side_security(&side(), &none, &planned(), window, &worth, 1.0),
            None
        );
    }
}
