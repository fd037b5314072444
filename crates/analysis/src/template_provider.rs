//! What a Template Provider the run started (sv2-tp) gave a side's pool, as the tap
//! between them saw: how long after each block the pool had a template on it.
//!
//! Rules: each tip change of the network node in the window is one sample (the unit is
//! the tip: one pool, one template per tip), from the tip change at the node to the first
//! template on it at the tap (a future NewTemplate made work by its SetNewPrevHash, or one
//! for now on that tip). A template counts from the previous tip on: on a real node the
//! tip's time is its ZMQ announcement, which the Mining IPC can beat, and such a template
//! shows a negative wait, kept as measured. A tip the pool got no template on before the
//! next tip is missed: counted, and not a sample (its wait is unknown). Templates on a tip
//! already worked on (fee refreshes) are counted.

use crate::manifest::Window;
use crate::timeline::Timeline;
use probe::{Dist, Event, Record};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateProviderSummary {
    /// From a tip change at the node to the pool having a template on it, in ms.
    pub new_tip_ms: Dist,
    /// Tips in the window the pool got no template on before the next tip.
    pub tips_missed: u64,
    /// Templates on the tip already worked on, in the window.
    pub refreshes: u64,
}

/// What the tap `role` in front of a side's Template Provider saw.
pub fn template_provider(
    timeline: &Timeline,
    events: &[&Record],
    role: &str,
    window: Window,
) -> TemplateProviderSummary {
    let mut first_on: HashMap<&str, u64> = HashMap::new();
    let mut refreshes = 0;
    for r in events.iter().filter(|r| r.role == role) {
        if let Event::PoolTemplate {
            prev_hash, reason, ..
        } = &r.event
        {
            first_on.entry(prev_hash).or_insert(r.t_ns);
            if reason == "refresh" && window.contains(r.t_ns) {
                refreshes += 1;
            }
        }
    }
    let mut waits = Vec::new();
    let mut tips_missed = 0;
    let tips = &timeline.tips;
    for (i, (t_tip, hash)) in tips.iter().enumerate() {
        if !window.contains(*t_tip) {
            continue;
        }
        let next = tips.get(i + 1).map_or(u64::MAX, |(t, _)| *t);
        let previous = i.checked_sub(1).map_or(0, |j| tips[j].0);
        match first_on.get(hash) {
            Some(&t) if t > previous && t < next => {
                waits.push((t as f64 - *t_tip as f64) / 1e6);
            }
            _ => tips_missed += 1,
        }
    }
    TemplateProviderSummary {
        new_tip_ms: Dist::of(&waits),
        tips_missed,
        refreshes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{manifest, rec, MS};
    use probe::TipCause;

    fn tip(t_ns: u64, hash: &str) -> Record {
        crate::testing::tip(t_ns, hash, TipCause::Network)
    }

    fn at_pool(t_ns: u64, prev_hash: &str, reason: &str) -> Record {
        rec(
            t_ns,
            "tap-templates-sv2-c",
            Event::PoolTemplate {
                height: 2,
                prev_hash: prev_hash.into(),
                value_sats: 312_500_000,
                marker_txid: None,
                reason: reason.into(),
            },
        )
    }

    #[test]
    fn each_tip_is_timed_to_the_pools_first_template_on_it() {
        let m = manifest(Vec::new());
        let events = [
            tip(1_000 * MS, "A"),
            at_pool(1_003 * MS, "A", "new_tip"),
            // A refresh on A: counted, not timed again.
            at_pool(2_000 * MS, "A", "refresh"),
            tip(4_000 * MS, "B"),
            // B's first template came for now, after a SetNewPrevHash that named no
            // future one.
            at_pool(4_010 * MS, "B", "new_tip"),
            tip(6_000 * MS, "C"),
            // Nothing on C before D: missed.
            tip(8_000 * MS, "D"),
            at_pool(8_002 * MS, "D", "new_tip"),
            // F's template passed the tap 1 ms before the node's tip record did (a real
            // node's ZMQ, beaten by its Mining IPC): -1 ms, as measured.
            at_pool(8_999 * MS, "F", "new_tip"),
            tip(9_000 * MS, "F"),
            // After the window: not a tip of the run's.
            tip(11_000 * MS, "E"),
            at_pool(11_001 * MS, "E", "new_tip"),
        ];
        let refs: Vec<&Record> = events.iter().collect();
        let timeline = Timeline::of(&m, &refs);
        let s = template_provider(&timeline, &refs, "tap-templates-sv2-c", m.window());
        // A 3 ms, B 10 ms, D 2 ms, F -1 ms; C missed. Sorted -1, 2, 3, 10: mean 3.5, the
        // median the 2nd of 4 (nearest rank).
        let d = &s.new_tip_ms;
        assert_eq!(
            (d.count, d.mean, d.p50, d.max),
            (4, Some(3.5), Some(2.0), Some(10.0))
        );
        assert_eq!(s.tips_missed, 1);
        assert_eq!(s.refreshes, 1);
    }
}
