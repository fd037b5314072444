//! The stand-alone tools, each a command of its own beside `run`: they start roles the
//! way a run does (through `harness`), but measure one thing and write their own results.
//!
//! | tool | command |
//! | --- | --- |
//! | [`bench`] | `stratum-bench bench`: pool capacity, job fan-out, template latency, the relay |
//! | [`tap`] | `stratum-bench tap`: the run's tap in front of a real pool |
//! | [`latency`] | `stratum-bench latency`: pools probed as a miner reaches them |
//! | [`node`] | `stratum-bench node`: the simulated network behind bitcoind's RPC and ZMQ |
//! | [`race`] | `stratum-bench race`: who tells a farm of a block first, its node or its pool |

pub mod bench;
pub mod latency;
pub mod node;
pub mod race;
pub mod tap;
