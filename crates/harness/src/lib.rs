//! Everything about a run that is not a role: the scenario, the role processes, their
//! lifecycle and resources, live metrics, and the run directory.

pub mod builtin;
pub mod collector;
pub mod container;
pub mod core_network;
pub mod deploy;
pub mod external_pool;
pub mod floor_peers;
pub mod fuzzing;
pub mod host;
pub mod idle_memory;
pub mod ipc_tap;
pub mod launch;
pub mod limits;
pub mod metrics;
pub mod netns;
pub mod on_host;
pub mod plan;
pub mod process;
pub mod procs;
pub mod roles;
pub mod rpc_tap;
pub mod run;
pub mod sri_builds;
pub mod sweep;

pub use model::Scenario;
pub use run::{run, RunOptions, RunOutcome};
