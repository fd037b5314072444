//! The run as typed values, parsed once where they come in (a scenario file, a flag) and
//! used as such by every crate after.
//!
//! [`scenario`]: the scenario a run is made of, parsed and checked.
//! [`attack`]: what a link's attacker does.
//! [`chain`]: the private chains a started Bitcoin Core runs on.
//! [`network`]: the simulated network's Mining IPC interface and mempool.
//! [`sv1_pool`]: an SV1 pool other than ours, as a scenario names it.
//! [`duration`]: durations as scenario files and flags write them (`"5s"`, `"1m30s"`).
//! [`host`]: the machine a run ran on (`host.json`).
//! [`lag`]: how much later than the pool's node a farm's own node hears of each block.
//! [`run_dir`]: a run directory's files, by name.
//! [`shard`]: a relay run as several processes, and how their names say so.

pub mod attack;
pub mod chain;
pub mod duration;
pub mod host;
pub mod lag;
pub mod network;
pub mod run_dir;
pub mod scenario;
pub mod shard;
pub mod sv1_pool;

pub use scenario::Scenario;
