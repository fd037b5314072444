//! A run directory's files, by name: what `run` and `collect` write, and `report`, `show`,
//! `compare`, `export` and `sweep` read.

/// What the harness tells the analysis about the run: the sides, their roles, the window.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The scenario as the run took it, overrides applied.
pub const SCENARIO_FILE: &str = "scenario.toml";
/// Each role's events, one JSON-lines file a role.
pub const EVENTS_DIR: &str = "events";
/// The roles' and the host's resource samples, one a second.
pub const SAMPLES_FILE: &str = "samples.jsonl";
/// The machine and the build (`host::Host`).
pub const HOST_FILE: &str = "host.json";
/// With containers: the collector's clock offsets, and where each role stood.
pub const CLOCKS_FILE: &str = "clocks.json";
pub const PLACEMENT_FILE: &str = "placement.json";
/// The analysis's answer.
pub const SUMMARY_FILE: &str = "summary.json";
/// What a report draws beyond the summary (`analysis::charts::Charts`), computed with it.
pub const CHARTS_FILE: &str = "charts.json";
