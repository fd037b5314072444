//! `stratum-bench latency`: round trips to pools as a miner sees them, per pool, from
//! every probe; a failed probe is counted by why it failed and never enters a time.

use probe::Dist;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One probe of one pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub url: String,
    /// Seconds since the first probe.
    pub t_s: f64,
    #[serde(flatten)]
    pub outcome: ProbeOutcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ProbeOutcome {
    /// The pool answered: TCP connect, the Noise handshake (SV2 only), and the round trip
    /// of the first request (SV1 `mining.subscribe`, SV2 `SetupConnection`), in ms.
    Answered {
        connect_ms: f64,
        handshake_ms: Option<f64>,
        request_ms: f64,
    },
    Failed {
        failure: Failure,
        reason: String,
    },
}

/// Why a probe failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The connection was refused or reset, or the name did not resolve.
    Refused,
    /// No answer within the probe's timeout.
    Timeout,
    /// An answer that is not the protocol's (not JSON, a failed handshake, an error).
    Garbage,
}

impl Failure {
    pub fn name(self) -> &'static str {
        match self {
            Failure::Refused => "refused",
            Failure::Timeout => "timeout",
            Failure::Garbage => "garbage",
        }
    }
}

/// One pool's probes summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetSummary {
    pub url: String,
    pub probes: u64,
    pub answered: u64,
    /// Failed probes by why, as `refused`, `timeout`, `garbage`.
    pub failures: BTreeMap<String, u64>,
    pub connect_ms: Dist,
    pub handshake_ms: Option<Dist>,
    pub request_ms: Dist,
}

/// What `stratum-bench latency` writes: every probe, and each pool's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub interval_s: f64,
    pub targets: Vec<TargetSummary>,
    pub probes: Vec<Probe>,
}

impl LatencyReport {
    /// The report of `probes` of the pools `urls` (in that order).
    pub fn of(urls: &[String], interval_s: f64, probes: Vec<Probe>) -> LatencyReport {
        let targets = urls
            .iter()
            .map(|url| summarize(url, probes.iter().filter(|p| &p.url == url)))
            .collect();
        LatencyReport {
            interval_s,
            targets,
            probes,
        }
    }

    /// The round trips a run's link should emulate: for SV1 and for SV2, the median TCP
    /// connect time (a SYN and its SYN-ACK: the network's round trip, without the pool's
    /// own processing, which the pool under test adds itself) of the first pool of that
    /// protocol that answered a probe.
    pub fn link_rtt_ms(&self) -> LinkRtt {
        let first = |sv2: bool| {
            (self.targets.iter())
                .filter(|t| t.url.starts_with(SV2_SCHEME) == sv2)
                .find_map(|t| t.connect_ms.p50)
        };
        LinkRtt {
            sv1: first(false),
            sv2: first(true),
        }
    }
}

/// The scheme of an SV2 pool's URL (`stratum2+tcp://HOST:PORT[/KEY]`).
pub const SV2_SCHEME: &str = "stratum2+tcp://";
/// The scheme of an SV1 pool's URL (`stratum+tcp://HOST:PORT`).
pub const SV1_SCHEME: &str = "stratum+tcp://";

/// A link round trip per protocol, in ms; `None` where no pool of it answered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRtt {
    pub sv1: Option<f64>,
    pub sv2: Option<f64>,
}

fn summarize<'a>(url: &str, probes: impl Iterator<Item = &'a Probe>) -> TargetSummary {
    let (mut connect, mut handshake, mut request) = (Vec::new(), Vec::new(), Vec::new());
    let mut failures = BTreeMap::new();
    let mut count = 0;
    for p in probes {
        count += 1;
        match &p.outcome {
            ProbeOutcome::Answered {
                connect_ms,
                handshake_ms,
                request_ms,
            } => {
                connect.push(*connect_ms);
                handshake.extend(*handshake_ms);
                request.push(*request_ms);
            }
            ProbeOutcome::Failed { failure, .. } => {
                *failures.entry(failure.name().to_string()).or_default() += 1;
            }
        }
    }
    TargetSummary {
        url: url.to_string(),
        probes: count,
        answered: connect.len() as u64,
        failures,
        connect_ms: Dist::of(&connect),
        handshake_ms: (!handshake.is_empty()).then(|| Dist::of(&handshake)),
        request_ms: Dist::of(&request),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(url: &str, connect_ms: f64, request_ms: f64) -> Probe {
        Probe {
            url: url.into(),
            t_s: 0.0,
            outcome: ProbeOutcome::Answered {
                connect_ms,
                handshake_ms: None,
                request_ms,
            },
        }
    }

    fn failed(url: &str, failure: Failure) -> Probe {
        Probe {
            url: url.into(),
            t_s: 0.0,
            outcome: ProbeOutcome::Failed {
                failure,
                reason: "x".into(),
            },
        }
    }

    #[test]
    fn each_protocol_takes_the_first_of_its_pools_that_answered() {
        let (sv1, sv2, sv2_down) = (
            "stratum+tcp://a:3333",
            "stratum2+tcp://b:3336",
            "stratum2+tcp://c:3336",
        );
        let urls = [sv2_down, sv1, sv2].map(String::from);
        let probes = vec![
            failed(sv2_down, Failure::Refused),
            answered(sv1, 40.0, 1.0),
            answered(sv2, 90.0, 1.0),
        ];
        assert_eq!(
            LatencyReport::of(&urls, 60.0, probes).link_rtt_ms(),
            LinkRtt {
                sv1: Some(40.0),
                sv2: Some(90.0)
            }
        );
    }

    #[test]
    fn failures_are_counted_apart_and_never_averaged_in() {
        let urls = ["a".to_string(), "b".to_string()];
        let report = LatencyReport::of(
            &urls,
            60.0,
            vec![
                answered("a", 10.0, 30.0),
                failed("a", Failure::Timeout),
                answered("a", 20.0, 50.0),
                answered("a", 30.0, 40.0),
                failed("b", Failure::Refused),
                failed("b", Failure::Refused),
            ],
        );
        let a = &report.targets[0];
        assert_eq!((a.probes, a.answered), (4, 3));
        assert_eq!(a.failures.get("timeout"), Some(&1));
        // (10 + 20 + 30) / 3, not / 4 with a zero: the seed's script's flaw.
        assert_eq!(a.connect_ms.mean, Some(20.0));
        assert_eq!(a.connect_ms.p50, Some(20.0));
        assert_eq!(a.request_ms.mean, Some(40.0));
        assert_eq!(a.handshake_ms, None);
        let b = &report.targets[1];
        assert_eq!((b.probes, b.answered), (2, 0));
        assert_eq!(b.failures.get("refused"), Some(&2));
        assert_eq!(b.connect_ms.mean, None);
        // Only the pool that answered gives a link round trip; neither is SV2.
        assert_eq!(
            report.link_rtt_ms(),
            LinkRtt {
                sv1: Some(20.0),
                sv2: None
            }
        );
    }
}
