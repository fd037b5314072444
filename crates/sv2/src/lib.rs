//! Stratum V2 mining as our roles see it: the SV2 miner [`fleet`], and the
//! Noise-terminating [`tap`] that records what an SV2 pool decides about every share.

pub mod fleet;
pub mod fuzzing;
pub mod tap;
