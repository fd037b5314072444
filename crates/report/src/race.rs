//! A race directory's summary as a person reads it (`stratum-bench race`): every number
//! from `analysis::race`, words around them.

use analysis::race::RaceSummary;
use analysis::stats::MIN_UNITS;

/// The summary as a person reads it.
pub fn render(s: &RaceSummary) -> String {
    let ms = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
    let b = &s.blocks;
    let l = &s.lead_ms;
    let c = &s.config_ab;
    let mut out = format!(
        "race: node {} vs pool {} (worker {}), {:.0} s recorded in {} session(s)\n",
        s.node, s.pool, s.worker, s.recorded_s, s.sessions
    );
    out += &format!(
        "blocks: {} seen: {} both, {} only node, {} only pool, {} node-only while the \
         pool session was down, {} pending, {} on another clock\n",
        b.seen, b.both, b.only_node, b.only_pool, b.node_during_gap, b.pending, b.other_clock
    );
    out += &format!(
        "pool session gaps: {} ({:.1} s in all, longest {:.1} s)\n",
        s.gaps.count, s.gaps.total_s, s.gaps.longest_s
    );
    out += &format!(
        "lead (node arrival - pool arrival; positive: the pool told first), ms over {} \
         block(s): mean {}  p10 {}  p50 {}  p90 {}  min {}  max {}; pool first {}, node \
         first {}\n",
        l.n,
        ms(l.mean),
        ms(l.p10),
        ms(l.p50),
        ms(l.p90),
        ms(l.min),
        ms(l.max),
        l.pool_first,
        l.node_first
    );
    let interval = |ci: Option<(f64, f64)>, places: usize| match (ci, l.too_few) {
        (_, true) => format!("no interval: too few blocks (under {MIN_UNITS})"),
        (Some((lo, hi)), _) => format!("95% interval {lo:.places$} to {hi:.places$}"),
        (None, _) => "no interval".into(),
    };
    out += &format!("  mean lead: {}\n", interval(l.mean_ci, 1));
    match (c.later_than_sv1_ms, c.sats_per_day) {
        (Some(later), Some(sats)) => {
            let (word, by) = if later >= 0.0 {
                ("later", later)
            } else {
                ("sooner", -later)
            };
            out += &format!(
                "configurations A and B: new-block work {by:.1} ms {word} than SV1 ({}), \
                 worth {sats:+.2} sats a day ({}), {} of the farm's revenue\n",
                interval(c.later_ci, 1),
                interval(c.sats_per_day_ci, 2),
                c.pct_of_revenue.map_or("-".into(), |p| {
                    analysis::worth::pct_text(p, c.pct_of_revenue_ci)
                })
            );
        }
        _ => out += "configurations A and B: no block seen by both yet\n",
    }
    out += &format!(
        "  a ms after every block is worth {:.3} sats a day of {:.0}\n  assuming:\n",
        c.sats_per_day_per_ms, c.farm_sats_per_day
    );
    for a in &c.assumptions {
        out += &format!("  - {a}\n");
    }
    if let Some(why) = &s.stopped {
        out += &format!("stopped: {why}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::race::{summarize, RaceParams};

    #[test]
    fn a_race_reads_its_blocks_lead_and_what_a_and_b_would_do() {
        let mut s = summarize(&[], 0, &RaceParams::default());
        let text = render(&s);
        assert!(text.contains("too few blocks"), "{text}");
        assert!(text.contains("no block seen by both yet"), "{text}");
        // A lead of 98.4 ms and 1.6 of the roles: 100 ms later, -7.5 sats a day.
        s.config_ab.later_than_sv1_ms = Some(100.0);
        s.config_ab.sats_per_day = Some(-7.5);
        let text = render(&s);
        assert!(text.contains("100.0 ms later than SV1"), "{text}");
        assert!(text.contains("worth -7.50 sats a day"), "{text}");
    }
}
