//! Everything a report needs from a run directory, whole or partial.

use analysis::charts::Charts;
use analysis::input::{count_events, read_samples};
use analysis::manifest::{Manifest, Sample};
use analysis::summary::SCHEMA;
use analysis::Summary;
use anyhow::{bail, Context, Result};
use model::run_dir::{CHARTS_FILE, EVENTS_DIR, MANIFEST_FILE, SUMMARY_FILE};
use std::collections::{BTreeMap, BTreeSet};
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
    /// The run's summary.json (or, when it cannot be used or `--recompute` asks, the
    /// analysis run again over the events); `None` when the run has no manifest (it was
    /// killed before it ended).
    pub summary: Option<Summary>,
    /// What the report draws beyond the summary, from the same source.
    pub charts: Charts,
    pub manifest: Option<Manifest>,
    /// The scenario as it ran (`scenario.toml`).
    pub scenario: Option<model::Scenario>,
    pub host: Option<model::host::Host>,
    /// Without a manifest: every event counted by role and kind.
    pub event_counts: BTreeMap<(String, String), u64>,
    pub samples: Vec<Sample>,
    /// What is missing or unreadable: a non-empty list marks the report partial.
    pub problems: Vec<String>,
}

/// Where a report's numbers come from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Source {
    /// summary.json and charts.json as the run wrote them; the analysis runs again only
    /// where they are missing or of another version (and the report says so).
    #[default]
    Written,
    /// The analysis run again over the events, whatever was written.
    Recompute,
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

    /// A run directory as the run wrote it.
    pub fn load(dir: &Path) -> Result<RunData> {
        RunData::load_from(dir, Source::Written)
    }

    pub fn load_from(dir: &Path, source: Source) -> Result<RunData> {
        if !dir.is_dir() {
            bail!(
                "no run directory at {} (stratum-bench run writes one under runs/)",
                dir.display()
            );
        }
        is_run(dir)?;
        let mut problems = Vec::new();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let manifest = Manifest::read(dir).ok();
        if let Some(at) = manifest.as_ref().and_then(|m| m.interim.as_ref()) {
            problems.push(format!(
                "an interim report: {:.0} s of the {:.0} s window measured when it was taken, and the run went on",
                at.measured_s, at.planned_s
            ));
        }
        let mut unreadable = BTreeSet::new();
        let mut event_counts = BTreeMap::new();
        let (summary, charts, samples) = match &manifest {
            Some(m) => {
                let written = match source {
                    Source::Written => (written(dir)).map_err(|why| problems.extend(why)).ok(),
                    Source::Recompute => None,
                };
                let (summary, charts, samples) = match written {
                    Some((summary, charts)) => {
                        let (samples, bad_samples) = read_samples(dir);
                        unreadable.extend(bad_samples);
                        (summary, charts, samples)
                    }
                    None => {
                        no_events(dir, &mut problems);
                        let (summary, samples) = analysis::stream::summarize_dir(dir, m, |_| {})
                            .with_context(|| format!("cannot summarize {}", dir.display()))?;
                        let charts = Charts::of(&summary);
                        // Asked for after a fix to the analysis: every reader of the run
                        // (show, compare, a sweep) reads the new figures from here on.
                        if matches!(source, Source::Recompute) {
                            analysis::summary::write(dir, &summary)?;
                            Charts::write(dir, &summary)?;
                        }
                        (summary, charts, samples)
                    }
                };
                unreadable.extend(
                    (summary.unmatched.keys())
                        .filter_map(|k| k.strip_prefix("unreadable_line:").map(str::to_string)),
                );
                (Some(summary), charts, samples)
            }
            None => {
                problems.push("no readable manifest.json: the run was stopped before it ended, so only raw counts are shown".into());
                no_events(dir, &mut problems);
                let (counts, read) = count_events(dir);
                event_counts = counts;
                let (samples, bad_samples) = read_samples(dir);
                unreadable.extend(read.unreadable.into_iter().chain(bad_samples));
                (None, Charts::default(), samples)
            }
        };
        let scenario = read(model::run_dir::SCENARIO_FILE).and_then(|text| {
            model::Scenario::from_record(&text)
                .map_err(|e| {
                    problems.push(format!(
                        "{} cannot be read ({e:#}): the run's settings are not shown",
                        model::run_dir::SCENARIO_FILE
                    ))
                })
                .ok()
        });
        if !unreadable.is_empty() {
            let unreadable: Vec<String> = unreadable.into_iter().collect();
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
            charts,
            manifest,
            scenario,
            host: read(model::run_dir::HOST_FILE).and_then(|t| serde_json::from_str(&t).ok()),
            event_counts,
            samples,
            problems,
        })
    }
}

/// summary.json and charts.json as the run wrote them, or why they cannot be used (the
/// analysis then runs again over the events): a problem the report shows, or none where a
/// run simply has no charts.json (a run of an earlier version, an interim snapshot).
fn written(dir: &Path) -> Result<(Summary, Charts), Option<String>> {
    let Ok(text) = std::fs::read_to_string(dir.join(SUMMARY_FILE)) else {
        return Err(Some(format!(
            "no {SUMMARY_FILE}: the run did not finish writing (recomputed from the events)"
        )));
    };
    let schema = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema").and_then(|s| s.as_str()).map(str::to_string));
    if schema.as_deref() != Some(SCHEMA) {
        return Err(Some(format!(
            "{SUMMARY_FILE} is of schema {}, this tool writes {SCHEMA}: recomputed from the events",
            schema.unwrap_or_else(|| "unknown".into())
        )));
    }
    let summary = serde_json::from_str(&text).map_err(|e| {
        Some(format!(
            "{SUMMARY_FILE} cannot be read ({e}): recomputed from the events"
        ))
    })?;
    if !dir.join(CHARTS_FILE).is_file() {
        return Err(None);
    }
    let charts =
        Charts::read(dir).map_err(|e| Some(format!("{e:#}: recomputed from the events")))?;
    Ok((summary, charts))
}

/// Where the analysis must read the events, a run without them says so.
fn no_events(dir: &Path, problems: &mut Vec<String>) {
    if !dir.join(EVENTS_DIR).is_dir() {
        problems.push(format!("no {EVENTS_DIR}/ directory"));
    }
}
