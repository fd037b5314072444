//! What a tap measures of itself and counts as it goes, whichever protocol it relays.

use crate::{Event, Histogram, ShareVerdict};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

/// How long a tap still reads the pool's answers after a miner closed its connection: the
/// pool credited the last shares, so their verdicts count.
pub const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// A tap's own cost and its counts. The counters are `prometheus-client` ones, so a
/// standalone tap serves them as they are.
#[derive(Default)]
pub struct TapStats {
    /// What the tap adds, per direction, in nanoseconds: from a message read whole on one
    /// side to it written on the other (up: towards the pool).
    pub up_ns: Histogram,
    pub down_ns: Histogram,
    /// Bytes relayed towards the pool and from it, as they cross the wire.
    pub bytes_up: Counter,
    pub bytes_down: Counter,
    /// Client connections accepted, those open now, and those closed because the pool
    /// could not be reached.
    pub connections: Counter,
    pub connections_open: Gauge,
    pub upstream_unreachable: Counter,
    /// Jobs relayed to miners.
    pub jobs_relayed: Counter,
    /// Shares by the pool's answer.
    pub shares: Family<VerdictLabel, Counter>,
}

/// A share's verdict as a metric label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabel {
    pub verdict: &'static str,
}

impl TapStats {
    /// The event a tap writes at its end.
    pub fn latency_event(&self) -> Event {
        Event::TapLatency {
            up_ms: self.up_ns.dist(1e6),
            down_ms: self.down_ns.dist(1e6),
        }
    }

    /// The bytes relayed so far, as an event.
    pub fn bytes_event(&self) -> Event {
        Event::TapBytes {
            up_bytes: self.bytes_up.get(),
            down_bytes: self.bytes_down.get(),
        }
    }

    /// Counts a share the pool judged.
    pub fn count_share(&self, verdict: ShareVerdict) {
        let label = VerdictLabel {
            verdict: verdict.name(),
        };
        self.shares.get_or_create(&label).inc();
    }
}
