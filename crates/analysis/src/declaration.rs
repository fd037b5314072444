//! What the farm's job declarations met at the pool's JDS, as the tap in front of it saw.
//!
//! Rules: answers, their round trips and missing-transaction requests count in the window;
//! connections that ended count in the window (a JDC falling back, a JDS going away), not
//! at the run's shutdown; declarations still unanswered count whenever a connection
//! reported them from the window's start on, at shutdown included (they are outstanding
//! at the end, and nothing else would count them).

use crate::manifest::Window;
use probe::{Dist, Event, Record};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDeclarationSummary {
    /// DeclareMiningJob messages the JDS answered in the window.
    pub declared: u64,
    pub accepted: u64,
    /// Refused, by the JDS's error code.
    pub rejected: BTreeMap<String, u64>,
    /// From a declaration leaving the farm to the JDS's answer arriving there.
    pub round_trip_ms: Dist,
    /// Transactions per declared job, besides the coinbase.
    pub tx_count: Dist,
    /// ProvideMissingTransactions requests, and the transactions they asked for.
    pub missing_tx_requests: u64,
    pub missing_txs: u64,
    /// Declarations a connection still waited on when it ended.
    pub unanswered: u64,
    /// JDC-JDS connections that ended in the window: a JDC falling back (after a refused
    /// job) or a JDS going away.
    pub connections_ended: u64,
}

/// What a JDS tap `role` saw.
pub fn job_declaration(events: &[&Record], role: &str, window: Window) -> JobDeclarationSummary {
    let mut j = JobDeclarationSummary {
        declared: 0,
        accepted: 0,
        rejected: BTreeMap::new(),
        round_trip_ms: Dist::of(&[]),
        tx_count: Dist::of(&[]),
        missing_tx_requests: 0,
        missing_txs: 0,
        unanswered: 0,
        connections_ended: 0,
    };
    let (mut rtts, mut txs) = (Vec::new(), Vec::new());
    for r in events
        .iter()
        .filter(|r| r.role == role && r.t_ns >= window.start_ns)
    {
        let in_window = window.contains(r.t_ns);
        match &r.event {
            Event::JobDeclared {
                round_trip_ms,
                tx_count,
                error,
                ..
            } if in_window => {
                j.declared += 1;
                rtts.push(*round_trip_ms);
                txs.push(*tx_count as f64);
                match error {
                    None => j.accepted += 1,
                    Some(code) => *j.rejected.entry(code.clone()).or_default() += 1,
                }
            }
            Event::MissingTransactionsRequested { count, .. } if in_window => {
                j.missing_tx_requests += 1;
                j.missing_txs += *count as u64;
            }
            Event::DeclarationsUnanswered { count } => j.unanswered += *count as u64,
            Event::TapConnectionEnded { .. } if in_window => j.connections_ended += 1,
            _ => {}
        }
    }
    j.round_trip_ms = Dist::of(&rtts);
    j.tx_count = Dist::of(&txs);
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn answers_count_in_the_window_and_the_unanswered_at_shutdown_too() {
        let window = Window {
            start_ns: 1_000 * MS,
            end_ns: 5_000 * MS,
        };
        let declared = |t, rtt, error: Option<&str>| {
            rec(
                t,
                "jdtap",
                Event::JobDeclared {
                    connection: 1,
                    request_id: 1,
                    tx_count: 10,
                    round_trip_ms: rtt,
                    error: error.map(str::to_string),
                },
            )
        };
        let events = [
            declared(500 * MS, 9.0, None), // warm-up
            declared(2_000 * MS, 40.0, None),
            declared(3_000 * MS, 60.0, Some("invalid-mining-job-token")),
            rec(
                3_500 * MS,
                "jdtap",
                Event::MissingTransactionsRequested {
                    connection: 1,
                    request_id: 2,
                    count: 3,
                },
            ),
            rec(
                4_000 * MS,
                "jdtap",
                Event::TapConnectionEnded {
                    connection: 1,
                    reason: "fallback".into(),
                },
            ),
            // At shutdown, after the window: the connection's end is not a fallback, but
            // what it still waited on is unanswered.
            rec(
                6_000 * MS,
                "jdtap",
                Event::TapConnectionEnded {
                    connection: 2,
                    reason: "shutdown".into(),
                },
            ),
            rec(
                6_000 * MS,
                "jdtap",
                Event::DeclarationsUnanswered { count: 2 },
            ),
        ];
        let refs: Vec<&Record> = events.iter().collect();
        let j = job_declaration(&refs, "jdtap", window);
        assert_eq!((j.declared, j.accepted), (2, 1));
        assert_eq!(j.rejected["invalid-mining-job-token"], 1);
        assert_eq!(j.round_trip_ms.mean, Some(50.0));
        assert_eq!((j.missing_tx_requests, j.missing_txs), (1, 3));
        assert_eq!((j.unanswered, j.connections_ended), (2, 1));
    }
}
