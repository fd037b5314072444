//! From a run directory to `summary.json`. Plain data in, plain data out: this crate
//! never talks to a socket, and no role formats a summary.
//!
//! Events are correlated by identity, never by time windows: a job is tied to its node
//! template by the marker txid in its first merkle branch and to a tip by its prev hash,
//! a block to the share that found it by its hash. What cannot be tied is counted under
//! `unmatched`, not dropped.

pub mod bench;
pub mod manifest;
pub mod summary;

pub use manifest::{Manifest, SideRoles};
pub use summary::{summarize, Summary};
