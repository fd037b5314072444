//! Everything a report needs from a run directory, whole or partial.

use analysis::input::{each_event, read_samples};
use analysis::manifest::{Manifest, Sample};
use analysis::summary::kept_beyond_jobs_and_shares;
use analysis::summary::SCHEMA;
use analysis::Summary;
use anyhow::{bail, Context, Result};
use model::run_dir::{EVENTS_DIR, MANIFEST_FILE};
use probe::Record;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Refuses a directory `stratum-bench run` did not write, naming what is missing.
pub fn is_run(dir: &Path) -> Result<()> {
    if !dir.join(MANIFEST_FILE).is_file() && !dir.join(EVENTS_DIR).is_dir() {
        bail!(
            "{} is not a run directory: it has no {MANIFEST_FILE} and no {EVENTS_DIR}/ (stratum-bench run writes both; a run stopped early leaves {EVENTS_DIR}/)",
            dir.display()
        );
    }
    Ok(())
}

pub struct RunData {
    pub dir: PathBuf,
    /// Computed from the events (so per-event samples are at hand); `None` when the run
    /// has no manifest (it was killed before it ended).
    pub summary: Option<Summary>,
    pub manifest: Option<Manifest>,
    pub scenario: Option<toml::Table>,
    pub host: Option<model::host::Host>,
    /// The events whose number grows with time, not with miners or shares (templates,
    /// tips, link byte counts): what the report draws beyond the summary.
    pub events: Vec<Record>,
    /// Without a manifest: every event counted by role and kind.
    pub event_counts: BTreeMap<(String, String), u64>,
    pub samples: Vec<Sample>,
    /// What is missing or unreadable: a non-empty list marks the report partial.
    pub problems: Vec<String>,
}

impl RunData {
    /// The runs at `path`: the run directory itself, or, for a directory that holds run
    /// directories (seeds of one setting, as `scripts/aa-check.sh` writes them), each of
    /// those, in name order.
    pub fn load_runs(path: &Path) -> Result<Vec<RunData>> {
        if !path.is_dir() || is_run(path).is_ok() {
            return Ok(vec![RunData::load(path)?]);
        }
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(path)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && is_run(p).is_ok())
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            bail!(
                "{} is not a run directory (it has no {MANIFEST_FILE} and no {EVENTS_DIR}/) nor a directory of runs (stratum-bench run writes one under runs/)",
                path.display()
            );
        }
        dirs.iter().map(|d| RunData::load(d)).collect()
    }

    pub fn load(dir: &Path) -> Result<RunData> {
        if !dir.is_dir() {
            bail!(
                "no run directory at {} (stratum-bench run writes one under runs/)",
                dir.display()
            );
        }
        is_run(dir)?;
        let mut problems = Vec::new();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();

        if let Some(text) = read(model::run_dir::SUMMARY_FILE) {
            let schema = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(str::to_string));
            if schema.as_deref() != Some(SCHEMA) {
                problems.push(format!(
                    "summary.json is of schema {}, this tool writes {SCHEMA}: recomputed from the events",
                    schema.unwrap_or_else(|| "unknown".into())
                ));
            }
        } else {
            problems.push("no summary.json: the run did not finish writing".into());
        }
        let manifest = Manifest::read(dir).ok();
        if let Some(at) = manifest.as_ref().and_then(|m| m.interim.as_ref()) {
            problems.push(format!(
                "an interim report: {:.0} s of the {:.0} s window measured when it was taken, and the run went on",
                at.measured_s, at.planned_s
            ));
        }
        if manifest.is_none() {
            problems.push("no readable manifest.json: the run was stopped before it ended, so only raw counts are shown".into());
        }
        // The events are read one by one: the summary streams them (a long run's do not
        // fit in memory), and the report keeps those whose number grows with time only.
        let mut events = Vec::new();
        let mut event_counts = BTreeMap::new();
        let mut unreadable = Vec::new();
        let (summary, samples) = match &manifest {
            Some(m) => {
                let (summary, samples) = analysis::stream::summarize_dir(dir, m, |r| {
                    if kept_beyond_jobs_and_shares(&r.event) {
                        events.push(r.clone());
                    }
                })
                .with_context(|| format!("cannot summarize {}", dir.display()))?;
                unreadable.extend(
                    (summary.unmatched.keys())
                        .filter_map(|k| k.strip_prefix("unreadable_line:").map(str::to_string)),
                );
                (Some(summary), samples)
            }
            None => {
                let read = each_event(dir, |r| {
                    let key = (r.role.clone(), kind_of(&r.event));
                    *event_counts.entry(key).or_default() += 1;
                });
                let (samples, bad_samples) = read_samples(dir);
                unreadable.extend(read.unreadable.into_iter().chain(bad_samples));
                (None, samples)
            }
        };
        if !dir.join(EVENTS_DIR).is_dir() {
            problems.push("no events/ directory".into());
        }
        if !unreadable.is_empty() {
            problems.push(format!(
                "{} event or sample lines could not be read (cut short, or another version): {}{}",
                unreadable.len(),
                unreadable[..unreadable.len().min(10)].join(", "),
                if unreadable.len() > 10 { ", ..." } else { "" }
            ));
        }
        Ok(RunData {
            dir: dir.to_path_buf(),
            summary,
            manifest,
            scenario: read(model::run_dir::SCENARIO_FILE).and_then(|t| t.parse().ok()),
            host: read(model::run_dir::HOST_FILE).and_then(|t| serde_json::from_str(&t).ok()),
            events,
            event_counts,
            samples,
            problems,
        })
    }

    /// A scenario value by dotted path, as text.
    pub fn scenario_value(&self, path: &str) -> Option<String> {
        let mut v: &toml::Value = self.scenario.as_ref()?.get(path.split('.').next()?)?;
        for part in path.split('.').skip(1) {
            v = v.get(part)?;
        }
        Some(match v {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

/// An event's kind as its JSON names it (`share_submitted`).
fn kind_of(event: &probe::Event) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
        .unwrap_or_default()
}
