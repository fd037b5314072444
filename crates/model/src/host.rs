//! The machine a run ran on, and the build that ran it (`run_dir::HOST_FILE`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub tool_version: String,
    pub git_commit: String,
    /// The SRI role releases linked into this build.
    #[serde(default)]
    pub sri_releases: Vec<String>,
    /// The build each SRI role of the run ran: "pool_sv2 0.6.0 (/path/pool_sv2)" for a
    /// binary the scenario named, "pool_sv2 0.7.0 (linked in)" for the linked release.
    /// Empty in runs from before it was recorded.
    #[serde(default)]
    pub sri_roles: Vec<String>,
}
