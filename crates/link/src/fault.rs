//! Outages on the link (scenario `[[faults]]`): what a farm sees when its pool (or the
//! pool's Job Declarator) goes away for a while. A `drop` is a pool that stopped: every
//! connection closes and the port refuses new ones until it is back. A `stall` is a pool
//! that hangs: connections stay open and nothing crosses, either way, until it ends. The
//! link records when each began and ended ([`Event::FaultBegan`], [`Event::FaultEnded`]).

use crate::WindowClock;
use probe::{Event, Recorder};
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub use probe::event::FaultKind;

/// A fault of some of a link's routes, timed from the run's window opening.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    pub kind: FaultKind,
    /// What the routes stand for, for the record (`pool`, `jds`).
    pub target: String,
    /// The routes it cuts, by their place in the link's list.
    pub routes: Vec<usize>,
    pub begins_after: Duration,
    pub lasts: Duration,
}

/// A fault of one route, on the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    pub kind: FaultKind,
    pub from_ns: u64,
    pub until_ns: u64,
}

impl Outage {
    fn covers(&self, t_ns: u64) -> bool {
        (self.from_ns..self.until_ns).contains(&t_ns)
    }
}

/// The outages of route `route` among `faults`, the window opening at `opens_ns`.
pub fn outages_of(faults: &[ScheduledFault], route: usize, opens_ns: u64) -> Vec<Outage> {
    (faults.iter())
        .filter(|f| f.routes.contains(&route))
        .map(|f| {
            let from_ns = opens_ns + f.begins_after.as_nanos() as u64;
            Outage {
                kind: f.kind,
                from_ns,
                until_ns: from_ns + f.lasts.as_nanos() as u64,
            }
        })
        .collect()
}

/// The first drop not yet over at `now_ns`: when the port must stop listening.
pub(crate) fn next_drop(outages: &[Outage], now_ns: u64) -> Option<Outage> {
    (outages.iter())
        .filter(|o| o.kind == FaultKind::Drop && o.until_ns > now_ns)
        .min_by_key(|o| o.from_ns)
        .copied()
}

/// When a chunk read at `arrived_ns`, sent at `sent_ns` and crossing in `delay_ns`, may be
/// written: one read in a stall waits for its end and then crosses.
pub(crate) fn held_by_stalls(
    outages: &[Outage],
    arrived_ns: u64,
    sent_ns: u64,
    delay_ns: u64,
) -> u64 {
    (outages.iter())
        .filter(|o| o.kind == FaultKind::Stall && o.covers(arrived_ns))
        .fold(sent_ns, |sent, o| sent.max(o.until_ns))
        + delay_ns
}

/// One route's outages, as the window's opening (which their `at` counts from) stands.
#[derive(Clone, Default)]
pub struct Outages {
    faults: std::sync::Arc<[ScheduledFault]>,
    route: usize,
    window: WindowClock,
}

impl Outages {
    /// Route `route`'s share of `faults`.
    pub fn of_route(faults: &[ScheduledFault], route: usize, window: WindowClock) -> Outages {
        Outages {
            faults: (faults.iter())
                .filter(|f| f.routes.contains(&route))
                .cloned()
                .collect(),
            route,
            window,
        }
    }

    /// The outages now: their times move with the window's opening.
    pub fn now(&self) -> Vec<Outage> {
        if self.faults.is_empty() {
            return Vec::new();
        }
        outages_of(&self.faults, self.route, self.window.opens_ns())
    }

    /// The clock they follow, to wait on its moves.
    pub(crate) fn window(&self) -> WindowClock {
        self.window.clone()
    }
}

/// Records each fault's start and end as they happen.
pub fn announce(faults: &[ScheduledFault], window: &WindowClock, recorder: &Recorder) {
    for fault in faults {
        let (fault, recorder, mut window) = (fault.clone(), recorder.clone(), window.clone());
        tokio::spawn(async move {
            let from_ns = fault.begins_after.as_nanos() as u64;
            window.until(from_ns).await;
            recorder.record(Event::FaultBegan {
                target: fault.target.clone(),
                fault: fault.kind,
                lasts_ms: fault.lasts.as_secs_f64() * 1e3,
            });
            window.until(from_ns + fault.lasts.as_nanos() as u64).await;
            recorder.record(Event::FaultEnded {
                target: fault.target,
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: FaultKind, routes: Vec<usize>, at_s: u64, lasts_s: u64) -> ScheduledFault {
        ScheduledFault {
            kind,
            target: "pool".into(),
            routes,
            begins_after: Duration::from_secs(at_s),
            lasts: Duration::from_secs(lasts_s),
        }
    }

    #[test]
    fn a_route_gets_the_faults_that_name_it_on_the_links_clock() {
        let faults = [
            fault(FaultKind::Drop, vec![0], 10, 5),
            fault(FaultKind::Stall, vec![1], 20, 3),
        ];
        let pool = outages_of(&faults, 0, 1_000);
        assert_eq!(
            pool,
            vec![Outage {
                kind: FaultKind::Drop,
                from_ns: 10_000_001_000,
                until_ns: 15_000_001_000
            }]
        );
        assert_eq!(outages_of(&faults, 1, 0)[0].kind, FaultKind::Stall);
        assert!(outages_of(&faults, 2, 0).is_empty());
        // A drop not over yet is next, even once begun; one over is not.
        assert_eq!(next_drop(&pool, 12_000_000_000), pool.first().copied());
        assert_eq!(next_drop(&pool, 16_000_000_000), None);
    }

    #[test]
    fn a_chunk_read_in_a_stall_waits_for_its_end_and_others_keep_their_time() {
        let stall = [Outage {
            kind: FaultKind::Stall,
            from_ns: 100,
            until_ns: 200,
        }];
        // Read at 150, in the stall: it crosses (10) once the stall is over.
        assert_eq!(held_by_stalls(&stall, 150, 150, 10), 210);
        assert_eq!(held_by_stalls(&stall, 150, 250, 10), 260);
        assert_eq!(held_by_stalls(&stall, 90, 90, 10), 100);
        assert_eq!(held_by_stalls(&stall, 200, 200, 10), 210);
    }
}
