//! What a difference is worth to a farm, in sats a day, at a real network's cadence.
//!
//! The run measures differences on a fast, small simulated network; a farm earns at the
//! real one's pace. For a farm of hashrate H on a network of hashrate N with blocks every
//! T seconds worth V sats (subsidy and fees), the farm finds B = H / N x 86,400 / T blocks a
//! day. Then, a side against the baseline (positive: the side earns more):
//! - stale work: after every block, a miner hashes on the dead tip until its first job on
//!   the new one. Waiting t ms more per block wastes t / (T x 1000) of its hashrate,
//!   whatever the block rate of the run that measured t: -(wait difference / (T x 1000)) x
//!   B x V. (The stale share at the run's pace, wait / its own time between tips, would
//!   price a fast simulated network's many tips as if they came at T.)
//! - fee capture: each block found carries its template's value: (template value
//!   difference) x B.
//! - orphan risk: a block that takes t to reach the network loses to a competitor found
//!   meanwhile with probability 1 - exp(-t / T): -(exp(-t1 / T) - exp(-t2 / T)) x B x V.
//!   For t much shorter than T that is t / T per block found: a ms is worth what a ms of
//!   stale work is. The two still differ as measured, since one is the wait for work after
//!   every block and the other the farm's own blocks' trip to the network.
//!
//! A row whose difference a scenario parameter or a model sets is priced but marked, and in
//! no total. A row with too few units has no price: "too few".

use crate::headline::VerdictRow;
use crate::metric::Headline;
use crate::side::LatencySamples;
use crate::stats::{effective_units, small_sample_widening, Totals};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

const SECONDS_PER_DAY: f64 = 86_400.0;

pub use crate::manifest::WorthAssumptions;

/// Hashes per second with the largest SI prefix that keeps a number of at least 1:
/// "1 PH/s", "2.50 EH/s".
pub fn hashrate_label(h: f64) -> String {
    let prefixes = [
        (1e21, "Z"),
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
    ];
    let (scale, prefix) = (prefixes.into_iter())
        .find(|(scale, _)| h >= *scale)
        .unwrap_or((1.0, ""));
    let x = h / scale;
    let places = if x.fract() == 0.0 { 0 } else { 2 };
    format!("{x:.places$} {prefix}H/s")
}

/// One difference's worth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorthRow {
    /// The verdict row it comes from.
    pub metric: Headline,
    /// Sats a day more for the side (negative: less); `None` with too few units.
    pub sats_per_day: Option<f64>,
    /// From the verdict row's interval.
    pub ci: Option<(f64, f64)>,
    /// A ms less of the row's latency, in sats a day (latencies only; set by the model,
    /// so given even with too few samples for a worth): what lets the stale work and the
    /// orphan risk be set side by side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_ms: Option<f64>,
    /// `sats_per_day` as a percent of the farm's revenue a day, with its interval: the
    /// same for a farm of any size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_revenue: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_revenue_ci: Option<(f64, f64)>,
    /// How, in words.
    pub how: String,
    /// What sets the difference beyond the protocol (a scenario parameter, a model): then
    /// the row is in no total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modelled: Option<String>,
    /// The scenario parameter the difference is priced at (the farm node's lag): in the
    /// total, said to be at that assumption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumed: Option<String>,
}

/// A price: sats a day as a function of a row's difference, and that in words.
type Pricing = (Box<dyn Fn(f64) -> f64>, String);

/// How a row's difference is priced; `None` for a row that carries no value.
fn pricing(r: &VerdictRow, a: &WorthAssumptions, block_value: f64) -> Option<Pricing> {
    let v = a.block_value_sats.unwrap_or(block_value);
    let b = a.farm_blocks_per_day();
    let t_ms = a.block_interval_s * 1e3;
    Some(match r.metric {
        Headline::StaleWaitMs => (
            Box::new(move |d: f64| -d / t_ms * b * v),
            format!(
                "-(wait difference ms / {t_ms:.0} ms a block) x {b:.6} blocks a day x {v:.0} sats"
            ),
        ),
        Headline::TemplateValueSats => (
            Box::new(move |d: f64| d * b),
            format!("template value difference x {b:.6} blocks a day"),
        ),
        Headline::BlockPropagationMs => {
            let t1 = r.sv1?;
            (
                Box::new(move |d: f64| -((-t1 / t_ms).exp() - (-(t1 + d) / t_ms).exp()) * b * v),
                format!("-(orphan risk difference, 1 - exp(-t / {:.0} s)) x {b:.6} blocks a day x {v:.0} sats", a.block_interval_s),
            )
        }
        _ => return None,
    })
}

/// The worth of a side's verdict rows that carry value, with `block_value` sats a block
/// (the assumptions' own when they give one).
pub fn worth(rows: &[VerdictRow], a: &WorthAssumptions, block_value: f64) -> Vec<WorthRow> {
    let ordered = |x: f64, y: f64| (x.min(y), x.max(y));
    let pct = pct_of(a.farm_revenue_per_day(block_value));
    rows.iter()
        .filter_map(|r| {
            let d = r.delta?;
            let (f, how) = pricing(r, a, block_value)?;
            let priced = r.no_interval.is_none() || r.ci.is_some();
            let latency = matches!(
                r.metric,
                Headline::StaleWaitMs | Headline::BlockPropagationMs
            );
            let sats_per_day = priced.then(|| f(d));
            let ci = (r.ci.filter(|_| priced)).map(|(lo, hi)| ordered(f(lo), f(hi)));
            Some(WorthRow {
                metric: r.metric,
                sats_per_day,
                ci,
                pct_of_revenue: sats_per_day.map(&pct),
                pct_of_revenue_ci: ci.map(|(lo, hi)| (pct(lo), pct(hi))),
                // The price of a ms less is physics, known however few the samples.
                per_ms: latency.then(|| f(-1.0)),
                how: match (&r.no_interval, priced) {
                    (Some(why), false) => why.clone(),
                    _ => how,
                },
                modelled: r.modelled.clone(),
                assumed: r.assumed.clone(),
            })
        })
        .collect()
}

/// Sats a day as a percent of `revenue` sats a day (none of a farm without revenue).
pub fn pct_of(revenue: f64) -> impl Fn(f64) -> f64 {
    move |sats: f64| {
        if revenue > 0.0 {
            sats / revenue * 100.0
        } else {
            0.0
        }
    }
}

/// Sats with a sign, to the precision a day's worth needs: whole sats from 100, tenths
/// from 1, two significant digits below (a small farm's worth is a fraction of a sat that
/// a farm a hundred times larger is paid in whole ones); under a thousandth is nothing,
/// without a sign.
pub fn sats_text(x: f64) -> String {
    let size = x.abs();
    if size < 1e-3 {
        return "0".into();
    }
    let places = if size >= 100.0 {
        0
    } else if size >= 1.0 {
        1
    } else {
        // Two significant digits: 0.15, 0.015, 0.0015.
        (1 - size.log10().floor() as i32) as usize
    };
    format!("{x:+.places$}")
}

/// " [lo, hi]" in sats, times `scale`; nothing without an interval.
pub fn sats_interval_text(ci: Option<(f64, f64)>, scale: f64) -> String {
    ci.map_or(String::new(), |(lo, hi)| {
        format!(" [{}, {}]", sats_text(lo * scale), sats_text(hi * scale))
    })
}

/// A percent of revenue with its interval, each number to two significant digits, as
/// small as a small worth is: "0.0050% [0.0049, 0.0051]", "0.000060% [0.0000044, 0.00011]".
pub fn pct_text(pct: f64, ci: Option<(f64, f64)>) -> String {
    let one = |x: f64| {
        if x.abs() < 1e-12 {
            return "0".to_string();
        }
        let places = (1 - x.abs().log10().floor() as i32).max(0) as usize;
        format!("{x:.places$}")
    };
    match ci {
        Some((lo, hi)) => format!("{}% [{}, {}]", one(pct), one(lo), one(hi)),
        None => format!("{}%", one(pct)),
    }
}

/// Whether a worth row is in its side's total: priced, and set by the protocol (a row a
/// scenario parameter or a model sets is shown, marked, apart).
pub fn in_total(w: &WorthRow) -> bool {
    w.modelled.is_none() && w.sats_per_day.is_some()
}

/// Resamples of the total's bootstrap, as many as a row's.
const RESAMPLES: usize = 2000;

/// The 95% interval of a side's total worth (its rows [`in_total`], summed), by a joint
/// bootstrap: the rows share their units (stale work and fees are both by network tip,
/// and the side's blocks are tips too), so a resample draws the units once for every row,
/// finds each row's difference again from the draw, prices it and sums. The rows are not
/// independent (a tip that comes late to the miners costs both stale work and fees), so
/// adding their intervals' variances would be wrong whichever way they lean. Each draw's
/// distance from the total is widened for few units as a row's is. `None` without a row
/// in the total, or with one that has no interval. Seeded.
pub fn total_interval(
    rows: &[VerdictRow],
    base: &LatencySamples,
    side: &LatencySamples,
    a: &WorthAssumptions,
    block_value: f64,
) -> Option<(f64, f64)> {
    let summed: Vec<(&VerdictRow, Pricing)> = (worth(rows, a, block_value).iter())
        .filter(|w| in_total(w))
        .map(|w| {
            let r = rows.iter().find(|r| r.metric == w.metric)?;
            Some((r, pricing(r, a, block_value)?))
        })
        .collect::<Option<_>>()?;
    if summed.is_empty() || summed.iter().any(|(r, _)| r.ci.is_none()) {
        return None;
    }
    // Every unit any row has on either side; by unit, each row's totals on each side.
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut units: Vec<Vec<(Totals, Totals)>> = Vec::new();
    // The fewest-unit row's widening (the largest): the sum is no surer than its least
    // sure part.
    let mut widen: f64 = 1.0;
    for (row, (r, _)) in summed.iter().enumerate() {
        for (is_side, samples) in [(false, base), (true, side)] {
            let named = units_of(r.metric, samples);
            let totals: Vec<Totals> = named.iter().map(|(_, t)| *t).collect();
            widen = widen.max(small_sample_widening(effective_units(&totals)));
            for (name, t) in named {
                let u = *index.entry(name).or_insert_with(|| {
                    units.push(vec![Default::default(); summed.len()]);
                    units.len() - 1
                });
                let pair = &mut units[u][row];
                *(if is_side { &mut pair.1 } else { &mut pair.0 }) = t;
            }
        }
    }
    let price = |deltas: &[f64]| -> f64 {
        (summed.iter().zip(deltas))
            .map(|((_, (f, _)), d)| f(*d))
            .sum()
    };
    let points: Vec<f64> = summed
        .iter()
        .map(|(r, _)| r.delta.unwrap_or_default())
        .collect();
    let total = price(&points);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5b_5eed);
    let mut totals = Vec::with_capacity(RESAMPLES);
    while totals.len() < RESAMPLES {
        let mut drawn = vec![(Totals::default(), Totals::default()); summed.len()];
        for _ in 0..units.len() {
            let unit = &units[rng.gen_range(0..units.len())];
            for ((ra, rb), (x, y)) in drawn.iter_mut().zip(unit) {
                (ra.sum, ra.weight) = (ra.sum + x.sum, ra.weight + x.weight);
                (rb.sum, rb.weight) = (rb.sum + y.sum, rb.weight + y.weight);
            }
        }
        // A draw without any of a row's units on a side has no difference there: drawn
        // again (a row with an interval has at least 5 units a side, so this ends).
        if drawn.iter().all(|(x, y)| x.weight > 0.0 && y.weight > 0.0) {
            let deltas: Vec<f64> = (drawn.iter())
                .map(|(x, y)| y.sum / y.weight - x.sum / x.weight)
                .collect();
            totals.push(total + widen * (price(&deltas) - total));
        }
    }
    totals.sort_by(f64::total_cmp);
    Some((
        totals[(RESAMPLES as f64 * 0.025) as usize],
        totals[(RESAMPLES as f64 * 0.975) as usize - 1],
    ))
}

/// A side's units of a priced row's metric, by name, with their totals (those of no
/// weight are none).
fn units_of(metric: Headline, s: &LatencySamples) -> Vec<(&str, Totals)> {
    let (units, totals) = match metric {
        Headline::StaleWaitMs => (s.stale_wait_ms.units(), s.stale_wait_ms.totals().to_vec()),
        Headline::TemplateValueSats => (s.template_value.units(), s.template_value.totals()),
        Headline::BlockPropagationMs => (
            s.block_propagation_ms.units(),
            s.block_propagation_ms.totals().to_vec(),
        ),
        _ => return Vec::new(),
    };
    // Both list the units of some weight in the order they first appeared.
    let weighed = totals.into_iter().filter(|t| t.weight > 0.0);
    units.means().map(|(name, _)| name).zip(weighed).collect()
}

/// The published tool's reading, "minutes saved per year", two ways: as it computed it
/// (the mean delay to any new job times template refreshes a year at its 60 s), and as
/// the blocks of a year make it (the delay to work after a block times the blocks of a
/// year at the real block interval). A minute has no price: the worth in sats does that.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeedReading {
    /// New-job mean difference x refreshes a year at 60 s (the seed's own arithmetic).
    pub new_job_minutes: Option<f64>,
    /// New-block job difference x blocks a year at the real block interval.
    pub new_block_job_minutes: Option<f64>,
}

/// The seed refreshed templates every 60 s; its minutes multiply by that.
pub const SEED_REFRESH_S: f64 = 60.0;

/// A side's [`SeedReading`] from its verdict rows.
pub fn seed_reading(rows: &[VerdictRow], a: &WorthAssumptions) -> SeedReading {
    let delta = |h: Headline| rows.iter().find(|r| r.metric == h).and_then(|r| r.delta);
    SeedReading {
        new_job_minutes: delta(Headline::NewJobMs)
            .map(|d| minutes_saved_per_year(d, SEED_REFRESH_S)),
        new_block_job_minutes: delta(Headline::NewPrevhashJobMs)
            .map(|d| minutes_saved_per_year(d, a.block_interval_s)),
    }
}

/// Minutes a year saved by being `delta_ms` faster at an event every `every_s` seconds
/// (the delta, not either side's time, is what is saved).
pub fn minutes_saved_per_year(delta_ms: f64, every_s: f64) -> f64 {
    let events_per_year = 365.0 * SECONDS_PER_DAY / every_s;
    -delta_ms / 1000.0 * events_per_year / 60.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::verdict_row as row;

    /// A finished run priced again: ten times the farm, ten times every figure (29.5 ms
    /// sooner is 22.302 sats a day at 10 PH/s); a block worth twice as much doubles what
    /// a wait costs and leaves a template's extra fees as they were.
    #[test]
    fn a_run_priced_again_scales_as_the_physics_says() {
        let (a, v) = (WorthAssumptions::default(), 315_000_000.0);
        let rows = [
            row(Headline::StaleWaitMs, 60.0, 30.5, Some((-31.0, -28.0))),
            row(Headline::TemplateValueSats, 100.0, 1_100.0, None),
        ];
        let at = |change: &crate::manifest::WorthChange| worth(&rows, &change.applied(&a), v);
        let (base, ten) = (
            at(&Default::default()),
            at(&crate::manifest::WorthChange {
                farm_hashrate: Some(1e16),
                ..Default::default()
            }),
        );
        for (b, t) in base.iter().zip(&ten) {
            let (b, t) = (b.sats_per_day.unwrap(), t.sats_per_day.unwrap());
            assert!((t - 10.0 * b).abs() < 1e-9 * b.abs().max(1.0), "{b} {t}");
        }
        assert!((ten[0].sats_per_day.unwrap() - 22.302).abs() < 1e-3);
        let (lo, hi) = (base[0].ci.unwrap(), ten[0].ci.unwrap());
        assert!((hi.0 - 10.0 * lo.0).abs() < 1e-9 && (hi.1 - 10.0 * lo.1).abs() < 1e-9);
        let doubled = at(&crate::manifest::WorthChange {
            block_value_sats: Some(630_000_000.0),
            ..Default::default()
        });
        let wait = |w: &[WorthRow]| w[0].sats_per_day.unwrap();
        assert!((wait(&doubled) - 2.0 * wait(&base)).abs() < 1e-9);
        // 1,000 sats more a template x 0.000144 blocks a day = 0.144, whatever a block is worth.
        let fees = |w: &[WorthRow]| w[1].sats_per_day.unwrap();
        assert!((fees(&doubled) - 0.144).abs() < 1e-12 && (fees(&base) - 0.144).abs() < 1e-12);
    }

    /// The case worked from first principles: miners that reach new-block work 29.5 ms
    /// sooner hash 29.5 ms less on a dead tip after each block, whatever the run's block
    /// rate: 29.5 / 600,000 = 0.0049% of their revenue at 600 s blocks. A 1 PH/s farm on
    /// 1 ZH/s finds 1e15 / 1e21 x 144 = 0.000144 blocks a day; at 315,000,000 sats a block
    /// that is 45,360 sats a day, and 0.0049% of it 2.2302 sats a day.
    #[test]
    fn stale_work_is_priced_by_the_wait_at_the_real_block_interval() {
        let a = WorthAssumptions::default();
        assert!((a.farm_blocks_per_day() - 0.000_144).abs() < 1e-15);
        let v = 315_000_000.0;
        let rows = [
            row(Headline::StaleWaitMs, 60.0, 30.5, Some((-31.0, -28.0))),
            // The farm's own blocks 29.5 ms sooner: exp(-30.5 / 6e5) - exp(-60 / 6e5) =
            // 4.91631e-5 of 45,360: 2.23004 sats a day.
            row(Headline::BlockPropagationMs, 60.0, 30.5, None),
            // 17,667 sats more a template: x 0.000144 = 2.5440 sats a day.
            row(
                Headline::TemplateValueSats,
                312_557_173.0,
                312_574_840.0,
                None,
            ),
            row(Headline::NewJobMs, 52.0, 2.0, None),
        ];
        let w = worth(&rows, &a, v);
        assert_eq!(
            w.len(),
            3,
            "new work is inside stale work, not counted again"
        );
        let stale = w[0].sats_per_day.unwrap();
        assert!((stale - 2.230_2).abs() < 1e-4, "{stale}");
        // 28 and 31 ms: 2.1168 and 2.3436 sats a day.
        let (lo, hi) = w[0].ci.unwrap();
        assert!((lo - 2.116_8).abs() < 1e-4 && (hi - 2.343_6).abs() < 1e-4);
        let orphan = w[1].sats_per_day.unwrap();
        assert!((orphan - 2.230_04).abs() < 1e-4, "{orphan}");
        // A ms is worth the same either way: 45,360 / 600,000 = 0.0756 sats a day.
        let (per_ms_stale, per_ms_orphan) = (w[0].per_ms.unwrap(), w[1].per_ms.unwrap());
        assert!((per_ms_stale - 0.0756).abs() < 1e-9, "{per_ms_stale}");
        assert!((per_ms_orphan / per_ms_stale - 1.0).abs() < 1e-3);
        assert!((w[2].sats_per_day.unwrap() - 2.544_048).abs() < 1e-6);
        assert_eq!(w[2].per_ms, None);
        // A hundred times the farm, a hundred times the worth: 223.02 sats a day.
        let big = WorthAssumptions {
            farm_hashrate: 1e17,
            ..a.clone()
        };
        let stale = worth(&rows[..1], &big, v)[0].sats_per_day.unwrap();
        assert!((stale - 223.02).abs() < 1e-2, "{stale}");
        // As a share of revenue, the size drops out: 29.5 ms of 600,000 is 0.0049167%
        // of 45,360 or of 4,536,000 sats a day; its interval 28 and 31 ms of them.
        let share = w[0].pct_of_revenue.unwrap();
        assert!((share - 0.004_916_67).abs() < 1e-8, "{share}");
        let big_share = worth(&rows[..1], &big, v)[0].pct_of_revenue.unwrap();
        assert!((big_share - share).abs() < 1e-12);
        let (lo, hi) = w[0].pct_of_revenue_ci.unwrap();
        assert!((lo - 28.0 / 6_000.0).abs() < 1e-9 && (hi - 31.0 / 6_000.0).abs() < 1e-9);
        // A block value given overrides the run's: twice the value, twice the worth.
        let given = WorthAssumptions {
            block_value_sats: Some(630_000_000.0),
            ..a
        };
        let doubled = worth(&rows[..1], &given, v)[0].sats_per_day.unwrap();
        assert!((doubled - 4.460_4).abs() < 1e-4, "{doubled}");
    }

    #[test]
    fn worth_is_written_to_the_precision_it_needs() {
        assert_eq!(sats_text(2.2302), "+2.2");
        assert_eq!(sats_text(-0.0354), "-0.035");
        assert_eq!(sats_text(0.000_4), "0");
        assert_eq!(sats_text(223.02), "+223");
        assert_eq!(
            pct_text(0.004_916_7, Some((0.004_5, 0.005_3))),
            "0.0049% [0.0045, 0.0053]"
        );
        // Each number to its own two digits: C's [-0.035, +0.045] sats is not "0.0".
        assert_eq!(
            pct_text(0.000_02, Some((-0.000_07, 0.000_1))),
            "0.000020% [-0.000070, 0.00010]"
        );
        assert_eq!(
            pct_text(0.000_06, Some((0.000_004_4, 0.000_11))),
            "0.000060% [0.0000044, 0.00011]"
        );
        assert_eq!(pct_text(-0.0675, None), "-0.068%");
        assert_eq!(pct_text(1.5, None), "1.5%");
        assert_eq!(pct_text(0.0, None), "0%");
    }

    #[test]
    fn too_few_is_said_and_a_modelled_row_is_marked() {
        let mut few = row(Headline::StaleWaitMs, 60.0, 30.0, None);
        few.no_interval = Some("too few (n = 3 and 3 tips; 5 needed)".into());
        // Still, a ms is worth 0.000144 x 1e8 / 600,000 = 0.024 sats a day.
        let mut set = row(
            Headline::TemplateValueSats,
            100.0,
            200.0,
            Some((90.0, 110.0)),
        );
        set.modelled = Some("set by the scenario".into());
        let w = worth(&[few, set], &WorthAssumptions::default(), 1e8);
        assert_eq!((w[0].sats_per_day, w[0].ci), (None, None));
        assert!(w[0].how.starts_with("too few"), "{}", w[0].how);
        assert!((w[0].per_ms.unwrap() - 0.024).abs() < 1e-12);
        assert_eq!(w[1].modelled.as_deref(), Some("set by the scenario"));
        assert!((w[1].sats_per_day.unwrap() - 100.0 * 0.000_144).abs() < 1e-12);
    }

    /// Six tips; on each, the side's miners wait x ms less than the baseline's (x = 10,
    /// 20, ..., 60: 35 ms less on average) and mine templates worth `fees(x)` sats more. At
    /// 600,000 sats a block a ms of stale work is worth what a sat of fees is: 0.000144 x
    /// 600,000 / 600,000 = 0.000144 sats a day. Both rows follow the same tips, so the
    /// total's interval is the joint resample's, not the rows' intervals combined.
    fn total_of(fees: fn(f64) -> f64) -> (Vec<WorthRow>, f64, Option<(f64, f64)>) {
        use crate::headline::{rows, Compared};
        let (mut base, mut side) = (LatencySamples::default(), LatencySamples::default());
        for k in 1..=6 {
            let (tip, x) = (format!("T{k}"), 10.0 * k as f64);
            base.stale_wait_ms.push(&tip, 50.0);
            side.stale_wait_ms.push(&tip, 50.0 - x);
            base.template_value.push(&tip, 100.0, 1.0);
            side.template_value.push(&tip, 100.0 + fees(x), 1.0);
        }
        let compared = |samples| Compared {
            samples,
            farm_node: false,
            tips_without_work: 0,
        };
        let verdict = rows(&compared(&base), &compared(&side));
        let a = WorthAssumptions::default();
        let w = worth(&verdict, &a, 600_000.0);
        let total = w
            .iter()
            .filter(|w| in_total(w))
            .filter_map(|w| w.sats_per_day)
            .sum();
        let ci = total_interval(&verdict, &base, &side, &a, 600_000.0);
        (w, total, ci)
    }

    /// Fees up by as much as the wait is down: both rows are 35 x 0.000144 = 0.00504 sats a
    /// day, and on every resample of the tips they move as one, so the total's interval
    /// is the sum of theirs (0.01008 sats a day at its point).
    #[test]
    fn rows_that_move_together_sum_their_intervals() {
        let (w, total, ci) = total_of(|x| x);
        let [stale, fees] = [0, 1].map(|i| w[i].ci.unwrap());
        assert!(
            (w[0].sats_per_day.unwrap() - 0.005_04).abs() < 1e-12,
            "{w:?}"
        );
        assert!((total - 0.010_08).abs() < 1e-12, "{total}");
        let (lo, hi) = ci.unwrap();
        assert!(lo < total && total < hi, "{ci:?}");
        assert!(
            (lo - (stale.0 + fees.0)).abs() < 1e-12,
            "{ci:?} {stale:?} {fees:?}"
        );
        assert!(
            (hi - (stale.1 + fees.1)).abs() < 1e-12,
            "{ci:?} {stale:?} {fees:?}"
        );
    }

    /// Fees down by as much as the wait is down: +0.00504 and -0.00504 sats a day, and on
    /// every resample the one cancels the other: the total is 0, its interval 0 wide.
    /// Adding the rows' variances, as if independent, would claim sqrt(2) x a row's
    /// half-width of doubt where there is none.
    #[test]
    fn rows_that_cancel_tip_by_tip_leave_no_doubt_about_the_total() {
        let (w, total, ci) = total_of(|x| -x);
        let (lo, hi) = w[0].ci.unwrap();
        assert!(hi - lo > 1e-3, "each row alone is uncertain: {w:?}");
        assert!(total.abs() < 1e-12, "{total}");
        let (lo, hi) = ci.unwrap();
        assert!(lo.abs() < 1e-12 && hi.abs() < 1e-12, "{ci:?}");
    }

    #[test]
    fn the_seeds_minutes_saved_reading() {
        // The seed's configuration C: new jobs 122 ms -> 77.9 ms, every 60 s: 0.0441 s x
        // 525,600 refreshes = 23,178.96 s = 386.316 minutes a year (it printed ~682,
        // from 77.9 ms alone). New-block work 29.5 ms sooner at 52,560 blocks a year:
        // 1,550.52 s = 25.842 minutes.
        let mut rows = vec![
            row(Headline::NewJobMs, 122.0, 77.9, None),
            row(Headline::NewPrevhashJobMs, 60.0, 30.5, None),
        ];
        let r = seed_reading(&rows, &WorthAssumptions::default());
        assert!((r.new_job_minutes.unwrap() - 386.316).abs() < 1e-3, "{r:?}");
        assert!(
            (r.new_block_job_minutes.unwrap() - 25.842).abs() < 1e-3,
            "{r:?}"
        );
        rows.truncate(1);
        assert_eq!(
            seed_reading(&rows, &WorthAssumptions::default()).new_block_job_minutes,
            None
        );
    }
}
