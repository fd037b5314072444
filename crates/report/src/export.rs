//! A run's tables as CSV, for notebooks: the events one file per kind (written by
//! `analysis::event_tables`), the resource samples, and the values behind the summary's
//! distributions (from `charts.json`).

use crate::run_data::RunData;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Writes `<kind>.csv` for every event kind, plus `samples.csv` and, when the run is
/// whole, `latencies.csv` (side, metric, ms: the values behind the summary).
pub fn export_csv(run: &RunData, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let origin = run.manifest.as_ref().map_or(0, |m| m.window_start_ns);
    let mut written = analysis::event_tables::write_event_tables(&run.dir, origin, out)?;
    let mut samples = "t_ms,role,cpu_pct,rss_bytes\n".to_string();
    for s in &run.samples {
        samples.push_str(&format!(
            "{},{},{},{}\n",
            (s.t_ns as f64 - origin as f64) / 1e6,
            s.role,
            s.cpu_pct,
            s.rss_bytes
        ));
    }
    written.push(write(out, "samples.csv", &samples)?);
    if run.summary.is_some() {
        let mut text = "side,metric,ms\n".to_string();
        for (side, s) in &run.charts.sides {
            for (metric, xs) in [
                ("new_job_ms", &s.new_job_ms),
                ("new_prevhash_job_ms", &s.new_prevhash_job_ms),
                ("block_propagation_ms", &s.block_propagation_ms),
            ] {
                for x in xs.iter().flatten() {
                    text.push_str(&format!("{side},{metric},{x}\n"));
                }
            }
        }
        written.push(write(out, "latencies.csv", &text)?);
    }
    Ok(written)
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
