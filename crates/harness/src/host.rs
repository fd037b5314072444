//! The machine a run ran on, written to `host.json` so a report can say where numbers
//! come from.

use serde::{Deserialize, Serialize};

pub const HOST_FILE: &str = "host.json";

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
}

impl Host {
    pub fn capture() -> Host {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let field = |text: &str, key: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_once(':').or_else(|| l.split_once('=')))
                .map(|(_, v)| v.trim().trim_matches('"').to_string())
                .unwrap_or_else(|| "unknown".into())
        };
        let memory_kib: u64 = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        Host {
            cpu_model: field(&cpuinfo, "model name"),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: memory_kib * 1024,
            os: field(&read("/etc/os-release"), "PRETTY_NAME"),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("STRATUM_BENCH_GIT_COMMIT").to_string(),
            sri_releases: sri::LINKED_RELEASES.iter().map(|r| r.to_string()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn describes_this_machine() {
        let h = super::Host::capture();
        assert!(h.cores >= 1 && h.memory_bytes > 0);
        assert_ne!(h.cpu_model, "unknown");
        assert!(!h.git_commit.is_empty());
    }
}
