//! From a run directory to `summary.json`. Plain data in, plain data out: this crate
//! never talks to a socket, and no role formats a summary.
//!
//! Events are correlated by identity, never by time windows: a job is tied to its node
//! template by the marker txid in its first merkle branch and to a tip by its prev hash,
//! a block to the share that found it by its hash. What cannot be tied is counted under
//! `unmatched`, not dropped. One module per family of rules (`jobs`, `shares`,
//! `bandwidth`, `declaration`), each with golden tests worked out by hand.

pub mod bandwidth;
pub mod bench;
#[cfg(test)]
mod calibration;
pub mod charts;
pub mod clocks;
pub mod compare;
pub mod conclusion;
pub mod credit;
pub mod declaration;
pub mod event_tables;
pub mod farm;
pub mod farm_lag;
pub mod headline;
pub mod host;
pub mod input;
pub mod jobs;
pub mod latency;
pub mod manifest;
pub mod metric;
pub mod outage;
pub mod paths;
pub mod published;
pub mod race;
pub mod resources;
pub mod security;
pub mod shares;
pub mod side;
pub mod stats;
pub mod stream;
pub mod summary;
pub mod sweep;
pub mod tap;
pub mod template_provider;
#[cfg(test)]
mod testing;
pub mod timeline;
pub mod worth;

use std::collections::BTreeMap;

pub use manifest::{Manifest, SideRoles};
pub use stream::summarize;
pub use summary::Summary;

/// Events that could not be tied to their counterpart, by kind.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Unmatched(pub BTreeMap<String, u64>);

impl Unmatched {
    /// Counts `n` more of `kind` (a kind with none is not listed).
    pub fn add(&mut self, kind: &str, n: u64) {
        if n > 0 {
            *self.0.entry(kind.to_string()).or_default() += n;
        }
    }
}
