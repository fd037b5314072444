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
    let samples = (run.samples.iter()).map(|s| {
        vec![
            ((s.t_ns as f64 - origin as f64) / 1e6).to_string(),
            s.role.clone(),
            s.cpu_pct.to_string(),
            s.rss_bytes.to_string(),
        ]
    });
    let samples = table(&["t_ms", "role", "cpu_pct", "rss_bytes"], samples)?;
    written.push(write(out, "samples.csv", &samples)?);
    if run.summary.is_some() {
        let mut rows = Vec::new();
        for (side, s) in &run.charts.sides {
            for (metric, xs) in &s.latencies {
                for x in xs.iter().flatten() {
                    rows.push(vec![side.clone(), metric.key().to_string(), x.to_string()]);
                }
            }
        }
        let text = table(&["side", "metric", "ms"], rows)?;
        written.push(write(out, "latencies.csv", &text)?);
    }
    Ok(written)
}

/// A CSV table: `header`, then a line a row, each cell quoted where it must be.
pub fn table(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> Result<String> {
    let mut csv = csv::Writer::from_writer(Vec::new());
    csv.write_record(header)?;
    for row in rows {
        csv.write_record(&row)?;
    }
    Ok(String::from_utf8(csv.into_inner()?)?)
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
