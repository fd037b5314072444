//! What a difference is worth to a farm, in sats a day, at a real network's cadence.
//!
//! The run measures differences on a fast, small simulated network; a farm earns at the
//! real one's pace. For a farm of hashrate H on a network of hashrate N with blocks every
//! T seconds worth V sats (subsidy and fees), the farm finds B = H / N x 86,400 / T blocks a
//! day. Then, SV2 side against SV1 (positive: the SV2 side earns more):
//! - stale work: hashing on a replaced block earns nothing: -(stale % difference) / 100 x
//!   B x V. (New work after a block is what stale work is made of; it is not counted again.)
//! - fee capture: each block found carries its template's value: (template value
//!   difference) x B.
//! - orphan risk: a block that takes t to reach the network loses to a competitor found
//!   meanwhile with probability 1 - exp(-t / T): -(exp(-t1 / T) - exp(-t2 / T)) x B x V.
//!
//! The seed's reading, "minutes saved per year", multiplies a latency by the events of a
//! year; it has no value attached, and a millisecond on a rare event weighs the same as
//! one on a frequent one. Sats a day answer the operator's question.

use crate::headline::{Headline, VerdictRow};
use serde::{Deserialize, Serialize};

const SECONDS_PER_DAY: f64 = 86_400.0;

/// What the worth is computed for; written beside every figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorthAssumptions {
    /// The farm's hashrate, hashes per second.
    pub farm_hashrate: f64,
    /// The whole network's, hashes per second.
    pub network_hashrate: f64,
    /// The real network's block interval, seconds.
    pub block_interval_s: f64,
    /// A block's value in sats; `None`: the run's network template value (its subsidy and
    /// fees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_value_sats: Option<f64>,
}

impl Default for WorthAssumptions {
    /// 1 PH/s on a 1 ZH/s network with 600 s blocks.
    fn default() -> Self {
        WorthAssumptions {
            farm_hashrate: 1e15,
            network_hashrate: 1e21,
            block_interval_s: 600.0,
            block_value_sats: None,
        }
    }
}

impl WorthAssumptions {
    /// Blocks the farm finds a day.
    pub fn farm_blocks_per_day(&self) -> f64 {
        self.farm_hashrate / self.network_hashrate * SECONDS_PER_DAY / self.block_interval_s
    }
}

/// One difference's worth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorthRow {
    /// The verdict row it comes from.
    pub metric: Headline,
    /// Sats a day more for the SV2 side (negative: less).
    pub sats_per_day: f64,
    /// From the verdict row's interval.
    pub ci: Option<(f64, f64)>,
    /// How, in words.
    pub how: String,
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
            let (value, ci, how): (f64, Option<(f64, f64)>, String) = match r.metric {
                Headline::StaleWorkPct => {
                    let f = |d: f64| -d / 100.0 * b * v;
                    (
                        f(d),
                        r.ci.map(|(lo, hi)| ordered(f(lo), f(hi))),
                        format!("-(stale work difference) / 100 x {b:.6} blocks a day x {v:.0} sats"),
                    )
                }
                Headline::TemplateValueSats => (
                    d * b,
                    r.ci.map(|(lo, hi)| (lo * b, hi * b)),
                    format!("template value difference x {b:.6} blocks a day"),
                ),
                Headline::BlockPropagationMs => {
                    let t1 = r.sv1?;
                    let f = |d: f64| -((-t1 / t_ms).exp() - (-(t1 + d) / t_ms).exp()) * b * v;
                    (
                        f(d),
                        r.ci.map(|(lo, hi)| ordered(f(lo), f(hi))),
                        format!("-(orphan risk difference, 1 - exp(-t / {:.0} s)) x {b:.6} blocks a day x {v:.0} sats", a.block_interval_s),
                    )
                }
                _ => return None,
            };
            Some(WorthRow {
                metric: r.metric,
                sats_per_day: value,
                ci,
                how,
            })
        })
        .collect()
}

/// The seed's reading: minutes a year saved by being `delta_ms` faster at an event every
/// `every_s` seconds (the delta, not either side's time, is what is saved).
pub fn minutes_saved_per_year(delta_ms: f64, every_s: f64) -> f64 {
    let events_per_year = 365.0 * SECONDS_PER_DAY / every_s;
    -delta_ms / 1000.0 * events_per_year / 60.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: Headline, sv1: f64, sv2: f64, ci: Option<(f64, f64)>) -> VerdictRow {
        VerdictRow {
            metric,
            sv1: Some(sv1),
            sv2: Some(sv2),
            delta: Some(sv2 - sv1),
            pct: None,
            ci,
            p_value: None,
            units: (10, 10),
            significant: false,
            no_interval: None,
        }
    }

    #[test]
    fn worth_worked_by_hand() {
        // 100 PH/s on 1 ZH/s with 600 s blocks: 1e17 / 1e21 x 144 = 0.0144 blocks a day.
        let a = WorthAssumptions {
            farm_hashrate: 1e17,
            ..WorthAssumptions::default()
        };
        assert!((a.farm_blocks_per_day() - 0.0144).abs() < 1e-12);
        let v = 315_000_000.0;
        let rows = [
            // Stale work 0.22% -> 0.12%: 0.10 points less: 0.001 x 0.0144 x 315e6 = 4,536.
            row(Headline::StaleWorkPct, 0.22, 0.12, Some((-0.13, -0.08))),
            // 17,667 sats more a template: x 0.0144 = 254.4 sats a day.
            row(
                Headline::TemplateValueSats,
                312_557_173.0,
                312_574_840.0,
                None,
            ),
            // Blocks 50 ms -> 22 ms: exp(-50/600000) - exp(-22/600000) = -4.66638e-5, so
            // +4.66638e-5 x 0.0144 x 315e6 = 211.667 sats a day.
            row(Headline::BlockPropagationMs, 50.0, 22.0, None),
            row(Headline::NewJobMs, 52.0, 2.0, None),
        ];
        let w = worth(&rows, &a, v);
        assert_eq!(
            w.len(),
            3,
            "new work is inside stale work, not counted again"
        );
        assert!(
            (w[0].sats_per_day - 4_536.0).abs() < 1e-6,
            "{}",
            w[0].sats_per_day
        );
        // -0.13 -> 5,896.8 and -0.08 -> 3,628.8 sats a day.
        let (lo, hi) = w[0].ci.unwrap();
        assert!((lo - 3_628.8).abs() < 1e-6 && (hi - 5_896.8).abs() < 1e-6);
        assert!(
            (w[1].sats_per_day - 254.4048).abs() < 1e-6,
            "{}",
            w[1].sats_per_day
        );
        assert!(
            (w[2].sats_per_day - 211.667).abs() < 1e-3,
            "{}",
            w[2].sats_per_day
        );
        // A block value given overrides the run's.
        let given = WorthAssumptions {
            block_value_sats: Some(630_000_000.0),
            ..a
        };
        assert!((worth(&rows[..1], &given, v)[0].sats_per_day - 9_072.0).abs() < 1e-6);
    }

    #[test]
    fn the_seeds_minutes_saved_reading() {
        // The seed's configuration C: 122 ms -> 77.9 ms every 60 s: 0.0441 s x 525,600
        // events = 23,178.96 s = 386.316 minutes a year (it printed ~682, from 77.9 ms).
        let minutes = minutes_saved_per_year(77.9 - 122.0, 60.0);
        assert!((minutes - 386.316).abs() < 1e-3, "{minutes}");
    }
}
