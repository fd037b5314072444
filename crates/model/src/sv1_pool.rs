//! An SV1 pool other than the built-in one, as a scenario names it (`[sv1_pools.<label>]`):
//! the harness resolves and starts it.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// An SV1 pool that is not ours, on an SV1 side: an adapter shipped with stratum-bench
/// (`kind`), or any pool as a `command` and a `config_template` whose placeholders
/// (`{rpc_url}`, `{listen_port}`, ...) the harness fills in.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalSv1Pool {
    /// An adapter: `nomp`, or `public-pool` (your build, at `program`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A program and its arguments, split as a shell would (quotes group words; nothing
    /// is expanded); `{config}` is the filled-in config file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The pool's program, for `{program}` in `command`: one field to point at a build
    /// (`--set sv1_pools.<label>.program=/path/to/ckpool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The config file with placeholders, relative to the scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_template: Option<PathBuf>,
    /// The directory the pool runs in (placeholders filled, created if missing), for a
    /// pool that reads its files from where it starts (goPool's `data/`). Default: the
    /// run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// Where the filled-in config is written, relative to `workdir` (goPool reads
    /// `data/config/config.toml`). Default: `roles/<pool role>.conf` in the run directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<PathBuf>,
    /// More config files the pool reads, each a template filled like `config_template`
    /// and written at its `path` in `workdir` (goPool's `data/config/tuning.toml`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PoolFile>,
    /// What the side's miners authorize as, before `.<index>`; placeholders filled
    /// (goPool wants a payout address: `"{payout_address}"`). Default: `<side>-miner`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_prefix: Option<String>,
    /// The pool's name and version in reports (default: the kind, or the program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How it learns of blocks and refreshes jobs, in words, for the report (an adapter
    /// says its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Run the pool in a network namespace of its own, joined to the run by a veth pair
    /// (for a pool that listens on every interface; needs root). Default: the adapter's
    /// (on for public-pool), else off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolate_network: Option<bool>,
    /// The side's miners send `mining.suggest_difficulty` with the side's difficulty, for
    /// a pool that honours it and would otherwise start them at its own. Default: the
    /// adapter's (on for public-pool), else off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggest_difficulty: Option<bool>,
}

/// A config file of an external pool: a template, and where it goes in the pool's workdir.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolFile {
    /// Relative to the scenario file.
    pub template: PathBuf,
    /// Relative to the pool's `workdir`.
    pub path: PathBuf,
}
