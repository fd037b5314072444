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

use crate::headline::{Headline, VerdictRow};
use serde::{Deserialize, Serialize};

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

/// The worth of a side's verdict rows that carry value, with `block_value` sats a block
/// (the assumptions' own when they give one).
pub fn worth(rows: &[VerdictRow], a: &WorthAssumptions, block_value: f64) -> Vec<WorthRow> {
    let v = a.block_value_sats.unwrap_or(block_value);
    let b = a.farm_blocks_per_day();
    let t_ms = a.block_interval_s * 1e3;
    let ordered = |x: f64, y: f64| (x.min(y), x.max(y));
    rows.iter()
        .filter_map(|r| {
            let d = r.delta?;
            let (f, how): (Box<dyn Fn(f64) -> f64>, String) = match r.metric {
                Headline::StaleWaitMs => (
                    Box::new(move |d: f64| -d / t_ms * b * v),
                    format!("-(wait difference ms / {t_ms:.0} ms a block) x {b:.6} blocks a day x {v:.0} sats"),
                ),
                Headline::TemplateValueSats => (
                    Box::new(move |d: f64| d * b),
                    format!("template value difference x {b:.6} blocks a day"),
                ),
                Headline::BlockPropagationMs => {
                    let t1 = r.sv1?;
                    (
                        Box::new(move |d: f64| {
                            -((-t1 / t_ms).exp() - (-(t1 + d) / t_ms).exp()) * b * v
                        }),
                        format!("-(orphan risk difference, 1 - exp(-t / {:.0} s)) x {b:.6} blocks a day x {v:.0} sats", a.block_interval_s),
                    )
                }
                _ => return None,
            };
            let priced = r.no_interval.is_none() || r.ci.is_some();
            let latency = matches!(r.metric, Headline::StaleWaitMs | Headline::BlockPropagationMs);
            Some(WorthRow {
                metric: r.metric,
                sats_per_day: priced.then(|| f(d)),
                ci: r.ci.filter(|_| priced).map(|(lo, hi)| ordered(f(lo), f(hi))),
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
        // A block value given overrides the run's: twice the value, twice the worth.
        let given = WorthAssumptions {
            block_value_sats: Some(630_000_000.0),
            ..a
        };
        let doubled = worth(&rows[..1], &given, v)[0].sats_per_day.unwrap();
        assert!((doubled - 4.460_4).abs() < 1e-4, "{doubled}");
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
