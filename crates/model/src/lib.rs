//! The run as typed values, parsed once where they come in (a scenario file, a flag) and
//! used as such by every crate after.
//!
//! [`duration`]: durations as scenario files and flags write them (`"5s"`, `"1m30s"`).
//! [`host`]: the machine a run ran on (`host.json`).
//! [`lag`]: how much later than the pool's node a farm's own node hears of each block.
//! [`run_dir`]: a run directory's files, by name.

pub mod duration;
pub mod host;
pub mod lag;
pub mod run_dir;
