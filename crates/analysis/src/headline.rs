//! The verdict: every side against the baseline side (`sv1` unless the scenario names
//! another) on the headline metrics (SV2 sides, or a second side of the same kind in an
//! A/A check), each named once (a renamed summary field is a compile error here), each
//! with the difference, its 95% interval by the unit the metric really has (tips,
//! templates, seconds), paired where both sides share the unit (the network's tips), and
//! whether it stays significant when the run's rows are read together (Benjamini-Hochberg
//! at 5%, every side's rows one family: with three SV2 sides, a family per side would
//! flag something somewhere about three times as often as 5%). Fewer than [`MIN_UNITS`] units on a side: "too few",
//! never significant.

use crate::metric::{Headline, Test};
use crate::side::{LatencySamples, SideSummary};
use crate::stats::{
    benjamini_hochberg, clustered_delta, paired_delta, proportion_delta, series_delta, Method,
    MIN_UNITS,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The side every other side is set against, unless the scenario names another.
pub const BASELINE: &str = "sv1";

/// The false discovery rate the verdict controls.
pub const FDR: f64 = 0.05;

/// One headline metric, an SV2 side against `sv1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRow {
    pub metric: Headline,
    pub sv1: Option<f64>,
    pub sv2: Option<f64>,
    /// `sv2 - sv1`.
    pub delta: Option<f64>,
    /// In percent of SV1 (absent when SV1 is zero).
    pub pct: Option<f64>,
    /// 95% interval of `delta`.
    pub ci: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    /// Independent units behind each side, `(sv1, sv2)`.
    pub units: (usize, usize),
    /// The interval excludes zero and the difference survives the false discovery rate
    /// control across the whole verdict.
    pub significant: bool,
    /// Why there is no interval, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_interval: Option<String>,
    /// How the interval and the p-value were found.
    #[serde(default)]
    pub method: Method,
    /// What of the difference a scenario parameter or a model sets rather than the
    /// protocol, when something does: such a row is in no worth total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modelled: Option<String>,
    /// The scenario parameter that sets the row's difference while it stays a finding of
    /// the run (the farm node's lag in A and B): such a row's worth is in the total, said
    /// to be at that assumption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumed: Option<String>,
    /// Miner-tips the side's miners got no work on before the next tip (they count in the
    /// stale wait, until that next tip: a cap the run's block pace sets, not the real
    /// interval's, so the price of such waits is a floor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tips_without_work: Option<u64>,
    /// The same for the baseline's miners: a side is read against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_tips_without_work: Option<u64>,
}

/// How a verdict row reads for the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Significant, and the way that helps the operator.
    Better,
    /// Significant, and the way that costs the operator.
    Worse,
    /// An interval that does not exclude zero (after the false discovery rate): not
    /// "no difference", only none shown; the interval says how large one could be.
    NoDifferenceShown,
    /// No interval: too few units, or no samples (`no_interval` says which).
    NoInterval,
}

impl Reading {
    pub fn label(self) -> &'static str {
        match self {
            Reading::Better => "better",
            Reading::Worse => "worse",
            Reading::NoDifferenceShown => "no difference shown",
            Reading::NoInterval => "no interval",
        }
    }
}

impl VerdictRow {
    /// Better or worse for the operator when significant; otherwise why not.
    pub fn reading(&self) -> Reading {
        match (self.ci, self.delta) {
            (None, _) | (_, None) => Reading::NoInterval,
            _ if !self.significant => Reading::NoDifferenceShown,
            (Some(_), Some(delta)) => {
                if (delta > 0.0) == self.metric.higher_is_better() {
                    Reading::Better
                } else {
                    Reading::Worse
                }
            }
        }
    }
}

/// Every other side against `baseline`, significance controlled per side at [`FDR`].
pub fn verdict(
    sides: &BTreeMap<String, SideSummary>,
    baseline: &str,
) -> BTreeMap<String, Vec<VerdictRow>> {
    let Some(base) = sides.get(baseline) else {
        return BTreeMap::new();
    };
    let base = Compared::of(base);
    let mut verdict: BTreeMap<String, Vec<VerdictRow>> = (sides.iter())
        .filter(|(name, _)| name.as_str() != baseline)
        .map(|(name, side)| (name.clone(), uncontrolled_rows(&base, &Compared::of(side))))
        .collect();
    // One family for the run: with three SV2 sides, BH per side would flag something
    // somewhere about three times as often as 5%.
    control_together(verdict.values_mut().flatten());
    verdict
}

/// What a side brings to the verdict.
pub struct Compared<'a> {
    pub samples: &'a LatencySamples,
    /// The side mines on its farm's own node's templates (configurations A, B).
    pub farm_node: bool,
    pub tips_without_work: u64,
}

impl<'a> Compared<'a> {
    fn of(side: &'a SideSummary) -> Compared<'a> {
        Compared {
            samples: &side.samples,
            farm_node: side.farm_node,
            tips_without_work: side.tips_without_work,
        }
    }
}

/// One side's rows against the baseline's, their significance controlled together (a
/// run's verdict controls every side's rows as one family: [`verdict`]).
pub fn rows(base: &Compared, side: &Compared) -> Vec<VerdictRow> {
    let mut rows = uncontrolled_rows(base, side);
    control_together(rows.iter_mut());
    rows
}

fn uncontrolled_rows(base: &Compared, side: &Compared) -> Vec<VerdictRow> {
    Headline::ALL.iter().map(|h| row(*h, base, side)).collect()
}

/// Benjamini-Hochberg over `rows`: only rows with a test take part, and a row stays
/// significant only if it survives with the others.
fn control_together<'a>(rows: impl Iterator<Item = &'a mut VerdictRow>) {
    let mut tested: Vec<&mut VerdictRow> = rows.filter(|r| r.p_value.is_some()).collect();
    let p: Vec<f64> = tested.iter().filter_map(|r| r.p_value).collect();
    for (row, kept) in tested.iter_mut().zip(benjamini_hochberg(&p, FDR)) {
        row.significant = row.significant && kept;
    }
}

/// The rows of the metrics a run that stops when it knows waits for, not yet known, as `side metric`: known means
/// an interval whose half-width is under `precision_pct` percent of the baseline value.
/// Only the width counts, never where the interval lies: a run that stopped the first time
/// an interval happened to exclude zero would call differences significant far more often
/// than 5% (a look every 10 s is hundreds of looks), while a width does not depend on the
/// difference, so the verdict at the stop keeps its 5%. A row with no interval yet is not
/// known.
pub fn unresolved(verdict: &BTreeMap<String, Vec<VerdictRow>>, precision_pct: f64) -> Vec<String> {
    verdict
        .iter()
        .flat_map(|(side, rows)| {
            rows.iter()
                .filter(|r| r.metric.def().resolved_before_stopping)
                .filter(|r| match (r.ci, r.sv1) {
                    (Some((lo, hi)), Some(base)) => {
                        (hi - lo) / 2.0 > precision_pct / 100.0 * base.abs()
                    }
                    _ => true,
                })
                .map(move |r| format!("{side} {}", r.metric.label()))
        })
        .collect()
}

fn row(h: Headline, a: &Compared, b: &Compared) -> VerdictRow {
    let (x, y) = (a.samples, b.samples);
    let delta = match h.def().test {
        Test::PairedByTip(units) => paired_delta(units(x), units(y)),
        Test::Clustered(clusters) => clustered_delta(clusters(x), clusters(y)),
        Test::Proportion(counts) => proportion_delta(counts(x), counts(y)),
        Test::Series(series) => series_delta(series(x), series(y)),
    };
    let mut r = from_delta(h, delta);
    r.modelled = modelled(h, a.farm_node || b.farm_node);
    r.assumed = set_by_lag(h, a.farm_node || b.farm_node);
    if matches!(h, Headline::StaleWaitMs) {
        r.tips_without_work = Some(b.tips_without_work);
        r.baseline_tips_without_work = Some(a.tips_without_work);
    }
    r
}

/// What the farm node's lag sets when a side mines on its farm's own node: SRI's JDC
/// moves its miners to a new block only when that node hears of it, and the farm's own
/// blocks reach the network through it.
pub const SET_BY_LAG: &str = "set by the farm node's lag (farm_node.block_lag)";

fn set_by_lag(h: Headline, farm_node: bool) -> Option<String> {
    let set = matches!(
        h,
        Headline::NewPrevhashJobMs | Headline::StaleWaitMs | Headline::BlockPropagationMs
    );
    (farm_node && set).then(|| SET_BY_LAG.into())
}

/// What sets a row's difference beyond the protocol, when a side mines on its farm's own
/// node: that node's mempool is the scenario's `farm_node.mempool_overlap` of the
/// network's, one peer hop away, and its peer traffic is modelled.
fn modelled(h: Headline, farm_node: bool) -> Option<String> {
    if !farm_node {
        return None;
    }
    match h {
        Headline::TemplateValueSats => Some(
            "set by the scenario: the farm node's mempool (farm_node.mempool_overlap) and its peer hop"
                .into(),
        ),
        Headline::FarmRxBytesPerS | Headline::FarmTxBytesPerS => Some(
            "partly modelled: the farm node's transaction and block relay".into(),
        ),
        _ => None,
    }
}

/// A row with the two values and their difference, nothing tested.
fn empty(h: Headline, sv1: Option<f64>, sv2: Option<f64>) -> VerdictRow {
    let delta = sv1.zip(sv2).map(|(a, b)| b - a);
    VerdictRow {
        metric: h,
        sv1,
        sv2,
        delta,
        pct: sv1
            .zip(delta)
            .and_then(|(a, d)| (a != 0.0).then(|| d / a.abs() * 100.0)),
        ci: None,
        p_value: None,
        units: (0, 0),
        significant: false,
        no_interval: None,
        method: Method::default(),
        modelled: None,
        assumed: None,
        tips_without_work: None,
        baseline_tips_without_work: None,
    }
}

fn from_delta(h: Headline, d: Option<crate::stats::Delta>) -> VerdictRow {
    let Some(d) = d else {
        let mut r = empty(h, None, None);
        r.no_interval = Some("no samples on a side".into());
        return r;
    };
    let mut r = empty(h, Some(d.mean_a), Some(d.mean_b));
    r.units = (d.units_a, d.units_b);
    r.method = d.method;
    r.ci = d.ci;
    r.p_value = d.p_value;
    r.significant = d.significant;
    if d.too_few() {
        r.no_interval = Some(format!(
            "too few (n = {} and {} {}; {MIN_UNITS} needed)",
            d.units_a,
            d.units_b,
            h.unit()
        ));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::{ShareVerdict, TipCause};

    #[test]
    fn each_sv2_side_against_sv1_with_intervals_by_the_metrics_own_unit() {
        let mut farm = farm_side();
        farm.1.miners_role = "miners".into(); // the same miners' events on both sides
        let m = manifest(vec![sv1_side(), farm]);
        // Six tips, a second apart; sv1's two miners get each tip's work at 60 and 62 ms,
        // sv2-a's (on its farm node's templates) at 40 and 41 ms... but both sides read
        // the same miners here, so they tie the same jobs: only the template ties differ.
        let mut events = Vec::new();
        for k in 0..6u64 {
            let t = 1_000 * MS + k * 1_000 * MS;
            let hash = format!("P{k}");
            let (a, f) = (format!("A{k}"), format!("F{k}"));
            events.push(tip(t, &hash, TipCause::Network));
            events.push(template(t, "node", &a, &hash, 100));
            events.push(template(t + 20 * MS, "node-farm", &f, &hash, 200));
            events.push(job(t + (60 + k) * MS, 0, &hash, Some(&a)));
            events.push(job(t + (61 + k) * MS, 1, &hash, Some(&f)));
        }
        let s = computed(&m, &events, &[]);
        let rows = &s.verdict["sv2-a"];
        let get = |h| rows.iter().find(|r| r.metric == h).unwrap().clone();
        // New job: sv1 ties miner 0 to the node's templates at 60..65 ms (mean 62.5);
        // sv2-a ties miner 1 to the farm node's, 41..46 ms after them (mean 43.5).
        let new_job = get(Headline::NewJobMs);
        assert_eq!((new_job.sv1, new_job.sv2), (Some(62.5), Some(43.5)));
        assert_eq!(new_job.delta, Some(-19.0));
        assert_eq!(new_job.units, (6, 6));
        // Every template's delay differs by exactly 19 ms, and both sides' templates build
        // on the same tips: paired by tip, every resample differs by 19 ms.
        assert_eq!(new_job.ci, Some((-19.0, -19.0)), "{new_job:?}");
        assert_eq!(new_job.method, Method::Paired);
        assert!(new_job.significant);
        // 19 ms sooner helps the operator; the same 19 more bytes a second at the farm
        // would cost them.
        assert_eq!(new_job.reading(), Reading::Better);
        let bytes = VerdictRow {
            metric: Headline::FarmRxBytesPerS,
            delta: Some(19.0),
            ci: Some((19.0, 19.0)),
            ..new_job.clone()
        };
        assert_eq!(bytes.reading(), Reading::Worse);
        // The same miners, the same tips: no difference after a block, not significant.
        let after_block = get(Headline::NewPrevhashJobMs);
        assert_eq!(after_block.delta, Some(0.0));
        assert!(!after_block.significant);
        assert_eq!(after_block.reading(), Reading::NoDifferenceShown);
        // Stale work: each tip's two miners wait 60+k and 61+k ms, a mean of 60.5 + k over
        // k = 0..5: 63 ms a miner and tip, the same miners on both sides, paired by tip.
        let stale = get(Headline::StaleWaitMs);
        assert!((stale.sv1.unwrap() - 63.0).abs() < 1e-9, "{stale:?}");
        assert_eq!(stale.delta, Some(0.0));
        assert_eq!(
            (stale.method, stale.tips_without_work),
            (Method::Paired, Some(0))
        );
        // At the real network's 600 s blocks that is 63 / 600,000: 0.0105% of the work;
        // at the run's own pace, a tip a second, 756 ms of 20 miner-s: 3.78%.
        let real = &s.sides["sv1"].stale_work_real_pct;
        assert!((real.point.unwrap() - 0.0105).abs() < 1e-12, "{real:?}");
        assert_eq!(s.sides["sv1"].stale_wait_ms.count, 12);
        // The side's own estimate: each tip k counts (121 + 2k) ms x 6 tips / 20 miner-s
        // = 3.63 + 0.06k %, their mean 3.78%; the interval resamples tips, inside their range.
        let own = &s.sides["sv1"].stale_work_pct;
        assert!((own.point.unwrap() - 3.78).abs() < 1e-9, "{own:?}");
        let (lo, hi) = own.ci.unwrap();
        assert!(lo > 3.63 && hi < 3.93 && lo < 3.78 && hi > 3.78, "{own:?}");
        assert_eq!(own.units, 6);
        // The pool's view adds each share's 50 ms one way across sv1's 100 ms link, for
        // each of 2 miners at each of 6 tips: 0.6 s more of 20 miner-s, 3 points.
        let pool_view = s.sides["sv1"].pool_stale_work_pct.point.unwrap();
        assert!((pool_view - 6.78).abs() < 1e-9, "{pool_view}");
        // Template value, time-weighted by tip: sv1's miner mines the node's 100-sat
        // templates, sv2-a's the farm's 200-sat ones; the same every tip, so the interval
        // is the difference itself.
        let value = get(Headline::TemplateValueSats);
        assert_eq!(
            (value.sv1, value.sv2, value.delta),
            (Some(100.0), Some(200.0), Some(100.0))
        );
        assert_eq!((value.units, value.ci), ((6, 6), Some((100.0, 100.0))));
        assert!(value.significant);
        assert_eq!(value.reading(), Reading::Better, "more sats a template");
        // No shares: nothing to test, said so.
        assert!(get(Headline::StaleSharesPct).no_interval.is_some());
        assert_eq!(get(Headline::StaleSharesPct).reading(), Reading::NoInterval);
        // No blocks: no samples.
        assert_eq!(get(Headline::BlockPropagationMs).sv1, None);
        // The worth's total is the stale work alone (the template value is the scenario's):
        // no difference on any tip, so none on any resample of them either.
        let c = &s.conclusions["sv2-a"];
        assert_eq!(c.worth_sats_per_day, Some(0.0));
        assert_eq!(c.worth_sats_per_day_ci, Some((0.0, 0.0)));
    }

    #[test]
    fn a_row_is_known_when_its_interval_is_narrow_enough_wherever_it_lies() {
        let row = |metric, significant, ci| VerdictRow {
            metric,
            sv1: Some(50.0),
            sv2: Some(50.5),
            delta: Some(0.5),
            pct: Some(1.0),
            ci,
            p_value: Some(0.5),
            units: (10, 10),
            significant,
            no_interval: None,
            method: Method::Paired,
            modelled: None,
            assumed: None,
            tips_without_work: None,
            baseline_tips_without_work: None,
        };
        let verdict = BTreeMap::from([(
            "sv2-c".to_string(),
            vec![
                // Half-width 0.4 ms: 0.8% of 50 ms.
                row(Headline::NewJobMs, false, Some((0.1, 0.9))),
                // Half-width 1.5 ms: 3% of 50 ms.
                row(Headline::NewPrevhashJobMs, false, Some((-1.0, 2.0))),
                row(Headline::StaleWaitMs, false, None),
                // Significant, but 10 ms wide: 10%; a lucky early crossing is no stop.
                row(Headline::FarmTxBytesPerS, true, Some((1.0, 11.0))),
                // Not waited for.
                row(Headline::TemplateValueSats, false, None),
            ],
        )]);
        assert_eq!(
            unresolved(&verdict, 5.0),
            vec![
                "sv2-c stale work after a block, mean ms".to_string(),
                "sv2-c farm tx bytes/s".to_string()
            ]
        );
        assert_eq!(
            unresolved(&verdict, 2.0),
            vec![
                "sv2-c new job after a block, mean ms".to_string(),
                "sv2-c stale work after a block, mean ms".to_string(),
                "sv2-c farm tx bytes/s".to_string()
            ]
        );
    }

    /// A long synthetic run: a 2,000 s window with 200 tips 10 s apart, each reaching
    /// every miner 100 ms late, and shares found at random (5 a second a miner). Stale work
    /// is 200 x 0.1 s of each miner's 2,000 s: 1%; the shares counted stale estimate the
    /// same, within their Wilson interval. The pool, beside the node, judges each share
    /// 50 ms after it is sent (the link's 100 ms round trip, one way): its view adds those
    /// 50 ms of shares in flight to every tip, 200 x 0.15 s of 2,000 s: 1.5%, and what it
    /// counts stale agrees within its interval.
    #[test]
    fn stale_work_and_counted_stale_shares_agree_on_a_long_stream() {
        use rand::{Rng, SeedableRng};
        let mut m = manifest(vec![sv1_side()]);
        (m.window_start_ns, m.window_end_ns) = (5_000 * MS, 2_005_000 * MS);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut events = Vec::new();
        let tip_at = |k: u64| k * 10_000 * MS;
        for k in 0..=200u64 {
            let hash = format!("P{k}");
            events.push(tip(tip_at(k), &hash, TipCause::Network));
            events.push(template(tip_at(k), "node", &format!("A{k}"), &hash, 100));
            for miner in 0..2 {
                let marker = format!("A{k}");
                events.push(job(tip_at(k) + 100 * MS, miner, &hash, Some(&marker)));
            }
        }
        let mut id = 0;
        for miner in 0..2u32 {
            let mut t = 0.0f64;
            loop {
                t += -(1.0 - rng.gen::<f64>()).ln() / 5.0;
                let t_ns = (t * 1e9) as u64;
                if t_ns >= 2_005_000 * MS {
                    break;
                }
                // Until its job on tip k arrives, a miner still works on tip k - 1.
                let k = t_ns / tip_at(1);
                let on = if t_ns < tip_at(k) + 100 * MS && k > 0 {
                    k - 1
                } else {
                    k
                };
                id += 1;
                events.push(share(t_ns, miner, id, &format!("P{on}"), None));
                let arrives = t_ns + 50 * MS;
                let verdict = if arrives / tip_at(1) == on {
                    ShareVerdict::Accepted
                } else {
                    ShareVerdict::Stale
                };
                events.push(judged(arrives, verdict));
            }
        }
        let s = computed(&m, &events, &[]);
        let side = &s.sides["sv1"];
        let expected = 200.0 * 2.0 * 0.1 / (2.0 * 2_000.0) * 100.0;
        let work_pct = side.work_s.stale_s / (2.0 * 2_000.0) * 100.0;
        assert!((work_pct - expected).abs() < 1e-9, "{work_pct}");
        let (lo, hi) = side.shares.stale_pct_ci.unwrap();
        assert!(
            lo <= expected && expected <= hi,
            "stale shares {:?} ({lo}..{hi}) against stale work {expected}%",
            side.shares.stale_pct
        );
        assert!(side.shares.submitted > 19_000, "{}", side.shares.submitted);
        let pool_expected = 200.0 * 2.0 * 0.15 / (2.0 * 2_000.0) * 100.0;
        let pool_view = &side.pool_stale_work_pct;
        assert!(
            (pool_view.point.unwrap() - pool_expected).abs() < 1e-9,
            "{pool_view:?}"
        );
        assert_eq!(pool_view.units, 200);
        let own = side.stale_work_pct.point.unwrap();
        assert!((own - expected).abs() < 1e-9, "{own}");
        let (lo, hi) = side.shares.pool_stale_pct_ci.unwrap();
        assert!(
            lo <= pool_expected && pool_expected <= hi,
            "the pool's stale {:?} ({lo}..{hi}) against its view {pool_expected}%",
            side.shares.pool_stale_pct
        );
    }

    #[test]
    fn a_significant_rise_reads_better_only_where_more_helps_the_operator() {
        let rise = |metric| VerdictRow {
            metric,
            sv1: Some(10.0),
            sv2: Some(11.0),
            delta: Some(1.0),
            pct: Some(10.0),
            ci: Some((0.5, 1.5)),
            p_value: Some(0.001),
            units: (20, 20),
            significant: true,
            no_interval: None,
            method: Method::Paired,
            modelled: None,
            assumed: None,
            tips_without_work: None,
            baseline_tips_without_work: None,
        };
        for metric in Headline::ALL {
            let more_is_better = matches!(
                metric,
                Headline::TemplateValueSats | Headline::AcceptancePct
            );
            let up = rise(metric);
            let down = VerdictRow {
                delta: Some(-1.0),
                ci: Some((-1.5, -0.5)),
                ..up.clone()
            };
            let (better, worse) = if more_is_better {
                (&up, &down)
            } else {
                (&down, &up)
            };
            assert_eq!(better.reading(), Reading::Better, "{metric:?}");
            assert_eq!(worse.reading(), Reading::Worse, "{metric:?}");
            // Not significant: none shown; no interval: said so, whichever way it went.
            let unsure = VerdictRow {
                significant: false,
                ci: Some((-0.5, 2.5)),
                ..up.clone()
            };
            assert_eq!(unsure.reading(), Reading::NoDifferenceShown);
            let unknown = VerdictRow {
                significant: false,
                ci: None,
                no_interval: Some("too few".into()),
                ..up.clone()
            };
            assert_eq!(unknown.reading(), Reading::NoInterval);
        }
    }

    #[test]
    fn too_few_units_is_said_and_never_significant() {
        let m = manifest(vec![sv1_side(), farm_side()]);
        let events = [
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_000 * MS, "node", "A", "P", 100),
            template(1_000 * MS, "node-farm", "F", "P", 100),
            job(1_050 * MS, 0, "P", Some("A")),
            job_to("miners-a", 1_002 * MS, 0, "P", Some("F")),
        ];
        let s = computed(&m, &events, &[]);
        let row = s.verdict["sv2-a"]
            .iter()
            .find(|r| r.metric == Headline::NewJobMs)
            .unwrap()
            .clone();
        assert_eq!(row.delta, Some(-48.0));
        assert!(!row.significant && row.ci.is_none());
        assert_eq!(
            row.no_interval.as_deref(),
            Some("too few (n = 1 and 1 tips; 5 needed)")
        );
    }
}
