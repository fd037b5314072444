//! The one line per side an operator acts on: how much sooner its miners reach new-block
//! work, what that is worth to a farm in sats a day (and to one a hundred times larger),
//! and what it costs in farm bandwidth. Every number comes from the verdict and the worth;
//! this only words them.

use crate::farm_lag::FarmNodeLag;
use crate::headline::VerdictRow;
use crate::metric::Headline;
use crate::worth::{
    in_total, pct_of, pct_text, sats_interval_text as interval, sats_text as sats,
    WorthAssumptions, WorthRow,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A side's bottom line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conclusion {
    /// The line, in words.
    pub text: String,
    /// The same, a sentence a part: what changes, the lag it holds at, the worth, the
    /// bandwidth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentences: Vec<String>,
    /// The worth rows the protocol sets (none a scenario parameter or a model sets),
    /// summed; `None` when none has a price.
    pub worth_sats_per_day: Option<f64>,
    /// Its 95% interval, the rows' shared tips resampled together
    /// (`worth::total_interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worth_sats_per_day_ci: Option<(f64, f64)>,
    /// The worth as a percent of the farm's revenue a day, and its interval: the same for
    /// a farm of any size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worth_pct_of_revenue: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worth_pct_of_revenue_ci: Option<(f64, f64)>,
    /// The side's pool against the baseline's (`resources::pool_reading`), for the pool's
    /// operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

impl Conclusion {
    /// Puts `part` before the rest of `side`'s line: what makes the rest read with care.
    pub fn lead_with(&mut self, side: &str, part: &str) {
        let rest = (self.text.strip_prefix(side))
            .and_then(|t| t.strip_prefix(": "))
            .unwrap_or(&self.text);
        self.text = format!("{side}: {part}; {rest}");
        self.sentences.insert(0, sentence(part));
    }
}

/// Per side of the verdict, its conclusion, with its total worth's interval (in
/// `intervals`, by side, where it has one) and its share of the farm's `revenue` (sats a
/// day); a side on its farm's own node (in `lags`) says the lag its answer was found at
/// and the break-even.
pub fn conclusions(
    verdict: &BTreeMap<String, Vec<VerdictRow>>,
    worth: &BTreeMap<String, Vec<WorthRow>>,
    intervals: &BTreeMap<String, (f64, f64)>,
    a: &WorthAssumptions,
    revenue: f64,
    lags: &BTreeMap<String, FarmNodeLag>,
) -> BTreeMap<String, Conclusion> {
    (verdict.iter())
        .map(|(side, rows)| {
            let worth = worth.get(side).map_or(&[][..], Vec::as_slice);
            let ci = intervals.get(side).copied();
            let lag = lags.get(side);
            (
                side.clone(),
                conclusion(side, rows, worth, ci, a, revenue, lag),
            )
        })
        .collect()
}

fn conclusion(
    side: &str,
    rows: &[VerdictRow],
    worth: &[WorthRow],
    ci: Option<(f64, f64)>,
    a: &WorthAssumptions,
    revenue: f64,
    lag: Option<&FarmNodeLag>,
) -> Conclusion {
    let pct = pct_of(revenue);
    let find = |h: Headline| rows.iter().find(|r| r.metric == h);
    let mut parts = Vec::new();
    if let Some(r) = find(Headline::NewPrevhashJobMs) {
        parts.push(new_block_work(r));
    }
    if let Some(lag) = lag {
        parts.push(lag.in_words());
    }
    let priced: Vec<&WorthRow> = worth.iter().filter(|w| in_total(w)).collect();
    let total = (!priced.is_empty()).then(|| priced.iter().filter_map(|w| w.sats_per_day).sum());
    let ci = ci.filter(|_| total.is_some());
    if let Some(total) = total {
        let scale = 1e17 / a.farm_hashrate;
        let each: Vec<String> = (priced.iter())
            .map(|w| {
                format!(
                    "{} {}{}",
                    short(w.metric),
                    sats(w.sats_per_day.unwrap_or_default()),
                    interval(w.ci, 1.0)
                )
            })
            .collect();
        // The farm node's lag sets some of it: priced at the assumed lag, and said so.
        let at_lag = if priced.iter().any(|w| w.assumed.is_some()) {
            " at the assumed lag"
        } else {
            ""
        };
        parts.push(format!(
            "worth {}{} sats a day for a {} farm, {} of its revenue ({}{} at 100 PH/s){at_lag}: {}",
            sats(total),
            interval(ci, 1.0),
            crate::worth::hashrate_label(a.farm_hashrate),
            pct_text(pct(total), ci.map(|(lo, hi)| (pct(lo), pct(hi)))),
            sats(total * scale),
            interval(ci, scale),
            each.join(", ")
        ));
    } else if let Some(w) = worth.iter().find(|w| w.sats_per_day.is_none()) {
        parts.push(format!("worth not priced, {}", w.how));
    }
    for (h, what) in [
        (Headline::FarmRxBytesPerS, "farm download"),
        (Headline::FarmTxBytesPerS, "farm upload"),
    ] {
        if let Some(r) = find(h).filter(|r| r.significant) {
            let d = r.delta.unwrap_or_default();
            parts.push(format!(
                "{} {} of {what}{}",
                if d >= 0.0 { "costs" } else { "saves" },
                kilobytes(d.abs()),
                r.modelled
                    .as_ref()
                    .map_or(String::new(), |m| format!(" ({m})"))
            ));
        }
    }
    Conclusion {
        text: format!("{side}: {}", parts.join("; ")),
        sentences: parts.iter().map(|p| sentence(p)).collect(),
        worth_sats_per_day: total,
        worth_sats_per_day_ci: ci,
        worth_pct_of_revenue: total.map(&pct),
        worth_pct_of_revenue_ci: ci.map(|(lo, hi)| (pct(lo), pct(hi))),
        pool: None,
    }
}

/// A part of the line as a sentence of its own: capitalised, with its full stop.
pub fn sentence(part: &str) -> String {
    let mut chars = part.chars();
    let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

/// "miners reach new-block work 29.5 ms sooner (-55%) [27.1, 31.8]".
fn new_block_work(r: &VerdictRow) -> String {
    let Some(d) = r.delta else {
        return "no new-block work measured".into();
    };
    // Said as time saved when sooner, as time lost when later.
    let interval = match (r.ci, &r.no_interval) {
        (Some((lo, hi)), _) if d <= 0.0 => format!(" [{:.1}, {:.1}]", -hi, -lo),
        (Some((lo, hi)), _) => format!(" [{lo:.1}, {hi:.1}]"),
        (None, Some(why)) => format!(", {why}"),
        (None, None) => String::new(),
    };
    // Whole percents, tenths below one; none where even a tenth rounds to nothing.
    let pct = match r.pct {
        Some(p) if p.abs() >= 1.0 => format!(" ({p:+.0}%)"),
        Some(p) if p.abs() >= 0.05 => format!(" ({p:+.1}%)"),
        _ => String::new(),
    };
    let verdict = if r.ci.is_some() && !r.significant {
        ", no difference shown"
    } else {
        ""
    };
    format!(
        "miners reach new-block work {:.1} ms {}{pct}{interval}{verdict}",
        d.abs(),
        if d <= 0.0 { "sooner" } else { "later" },
    )
}

fn short(h: Headline) -> &'static str {
    match h {
        Headline::StaleWaitMs => "stale work",
        Headline::BlockPropagationMs => "block propagation",
        Headline::TemplateValueSats => "fees",
        _ => h.label(),
    }
}

fn kilobytes(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e3 {
        format!("{:.1} kB/s", bytes_per_s / 1e3)
    } else {
        format!("{bytes_per_s:.0} B/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::verdict_row as row;
    use crate::worth::worth;

    #[test]
    fn one_line_from_the_verdict_and_the_worth() {
        // New-block work 53.6 -> 24.1 ms: 29.5 ms sooner, -55%; the wait likewise, worth
        // 29.5 / 600,000 x 0.000144 x 315e6 = 2.2302 sats a day (223.02 at 100 PH/s).
        let mut rx = row(
            Headline::FarmRxBytesPerS,
            1_000.0,
            3_100.0,
            Some((1_900.0, 2_300.0)),
        );
        rx.modelled = Some("partly modelled: the farm node's relay".into());
        let rows = vec![
            row(Headline::NewPrevhashJobMs, 53.6, 24.1, Some((-31.8, -27.1))),
            row(Headline::StaleWaitMs, 53.6, 24.1, Some((-31.8, -27.1))),
            rx,
        ];
        let a = WorthAssumptions::default();
        let w = worth(&rows, &a, 315_000_000.0);
        // The stale work alone is in the total: its interval, 27.1 and 31.8 ms x 0.0756 =
        // 2.0488 and 2.4041 sats a day (205 and 240 at 100 PH/s), is the total's.
        let revenue = a.farm_revenue_per_day(315_000_000.0);
        let c = conclusion("sv2-c", &rows, &w, w[0].ci, &a, revenue, None);
        assert!((c.worth_sats_per_day.unwrap() - 2.2302).abs() < 1e-4);
        // As a share of the farm's revenue, whatever its size: 29.5 ms of every 600,000,
        // 0.0049167%; its interval 27.1 and 31.8 ms of them.
        let share = c.worth_pct_of_revenue.unwrap();
        assert!((share - 29.5 / 600_000.0 * 100.0).abs() < 1e-9, "{share}");
        let (lo, hi) = c.worth_pct_of_revenue_ci.unwrap();
        assert!((lo - 27.1 / 6_000.0).abs() < 1e-6 && (hi - 31.8 / 6_000.0).abs() < 1e-6);
        let (lo, hi) = c.worth_sats_per_day_ci.unwrap();
        assert!((lo - 2.048_76).abs() < 1e-4 && (hi - 2.404_08).abs() < 1e-4);
        assert_eq!(
            c.text,
            "sv2-c: miners reach new-block work 29.5 ms sooner (-55%) [27.1, 31.8]; \
             worth +2.2 [+2.0, +2.4] sats a day for a 1 PH/s farm, 0.0049% [0.0045, 0.0053] \
             of its revenue (+223 [+205, +240] at 100 PH/s): stale work +2.2 [+2.0, +2.4]; costs 2.1 kB/s of farm download \
             (partly modelled: the farm node's relay)"
        );
        // The report's short sentences: the same parts, one each.
        assert_eq!(c.sentences.len(), 3);
        assert_eq!(
            c.sentences[0],
            "Miners reach new-block work 29.5 ms sooner (-55%) [27.1, 31.8]."
        );
        assert!(
            c.sentences[2].starts_with("Costs 2.1 kB/s") && c.sentences[2].ends_with("relay).")
        );
    }

    /// A side on its farm's own node: the lag's rows are in the total, priced "at the
    /// assumed lag", and the break-even is said with the lag assumed. 454 ms of lag
    /// against SV1's 52.2 ms: 405.2 ms later, worth -405.2 / 600,000 x 0.000144 x 3e8 =
    /// -29.17 sats a day.
    #[test]
    fn a_farm_node_side_says_its_break_even_and_prices_at_the_assumed_lag() {
        let mut rows = vec![
            row(
                Headline::NewPrevhashJobMs,
                52.2,
                457.4,
                Some((404.8, 405.6)),
            ),
            row(Headline::StaleWaitMs, 52.2, 457.4, Some((404.8, 405.6))),
        ];
        for r in &mut rows {
            r.assumed = Some(crate::headline::SET_BY_LAG.into());
        }
        let a = WorthAssumptions::default();
        let lag = FarmNodeLag {
            assumed: "lognormal, median 454 ms, p90 6925 ms (Fechner et al.)".into(),
            break_even_lag_ms: crate::stats::Estimate {
                point: Some(49.0),
                ci: Some((48.6, 49.4)),
                units: 12,
            },
            tips_compared: 12,
            tips_later: 12,
            ..FarmNodeLag::default()
        };
        let c = conclusion(
            "sv2-a",
            &rows,
            &worth(&rows, &a, 3e8),
            None,
            &a,
            43_200.0,
            Some(&lag),
        );
        assert!(
            (c.worth_sats_per_day.unwrap() + 29.1744).abs() < 1e-3,
            "{c:?}"
        );
        assert_eq!(
            c.text,
            "sv2-a: miners reach new-block work 405.2 ms later (+776%) [404.8, 405.6]; \
             sooner only while your farm's node hears of blocks within 49.0 ms [48.6, 49.4] \
             of your pool's on average; here lognormal, median 454 ms, p90 6925 ms \
             (Fechner et al.) was assumed, later on 12 of 12 tips (`stratum-bench race` \
             measures yours); worth -29.2 sats a day for \
             a 1 PH/s farm, -0.068% of its revenue (-2917 at 100 PH/s) at the assumed lag: stale work -29.2 \
             [-29.2, -29.1]"
        );
    }

    #[test]
    fn no_difference_and_too_few_are_said() {
        let mut few = row(Headline::StaleWaitMs, 50.0, 49.0, None);
        few.no_interval = Some("too few (n = 3 and 3 tips; 5 needed)".into());
        let rows = vec![
            row(Headline::NewPrevhashJobMs, 50.0, 49.8, Some((-1.0, 0.6))),
            few,
        ];
        let a = WorthAssumptions::default();
        let c = conclusion(
            "sv1-b",
            &rows,
            &worth(&rows, &a, 3e8),
            None,
            &a,
            43_200.0,
            None,
        );
        assert_eq!(
            (c.worth_sats_per_day, c.worth_sats_per_day_ci),
            (None, None)
        );
        assert!(c.text.contains("0.2 ms sooner"), "{}", c.text);
        assert!(c.text.contains("no difference shown"), "{}", c.text);
        assert!(
            c.text
                .contains("worth not priced, too few (n = 3 and 3 tips; 5 needed)"),
            "{}",
            c.text
        );
        // A fifth of a percent is said in tenths, not rounded to "-0%".
        assert!(c.text.contains("sooner (-0.4%) [-0.6, 1.0]"), "{}", c.text);
    }

    #[test]
    fn too_few_is_said_once_and_a_percent_that_rounds_to_nothing_not_at_all() {
        let mut few = row(Headline::NewPrevhashJobMs, 50.0, 49.99, None);
        few.no_interval = Some("too few (n = 3 and 3 tips; 5 needed)".into());
        let a = WorthAssumptions::default();
        let c = conclusion(
            "sv2-c",
            &[few.clone()],
            &worth(&[few], &a, 3e8),
            None,
            &a,
            43_200.0,
            None,
        );
        // -0.02% rounds to nothing at a tenth: no percent at all.
        assert_eq!(
            c.text,
            "sv2-c: miners reach new-block work 0.0 ms sooner, too few (n = 3 and 3 tips; 5 needed)"
        );
    }

    #[test]
    fn a_small_farms_worth_keeps_two_significant_digits() {
        // 0.0152 sats a day at 1 PH/s is 1.52 at 100 PH/s: both said, neither as "0.0".
        assert_eq!(sats(0.0152), "+0.015");
        assert_eq!(sats(-0.152), "-0.15");
        assert_eq!(sats(1.52), "+1.5");
        assert_eq!(sats(152.4), "+152");
        assert_eq!(sats(0.0004), "0");
        assert_eq!(sats(-0.0), "0");
    }
}
