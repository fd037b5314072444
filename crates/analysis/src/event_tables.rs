//! A run's events as CSV tables, one file per event kind, for notebooks: read one by
//! one, twice (once for each kind's columns, once for the rows), so a long run's events
//! need not fit in memory.

use crate::input::each_event;
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Writes `<kind>.csv` into `out` for every event kind of the run at `run_dir`, each
/// row's time in ms from `origin_ns` (the window's start). Returns the files written.
pub fn write_event_tables(run_dir: &Path, origin_ns: u64, out: &Path) -> Result<Vec<PathBuf>> {
    let row = |r: probe::Record| -> Option<(String, serde_json::Map<String, Value>)> {
        let Ok(Value::Object(mut fields)) = serde_json::to_value(&r.event) else {
            return None;
        };
        let kind = fields
            .remove("kind")
            .and_then(|k| k.as_str().map(str::to_string))
            .unwrap_or_default();
        fields.insert(
            "t_ms".into(),
            Value::from((r.t_ns as f64 - origin_ns as f64) / 1e6),
        );
        fields.insert("role".into(), Value::from(r.role));
        Some((kind, fields))
    };
    let mut headers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    each_event(run_dir, |r| {
        if let Some((kind, fields)) = row(r) {
            headers
                .entry(kind)
                .or_default()
                .extend(fields.into_iter().map(|(k, _)| k));
        }
    });
    let mut tables: BTreeMap<String, (Vec<String>, PathBuf, csv::Writer<std::fs::File>)> =
        BTreeMap::new();
    for (kind, mut columns) in headers {
        columns.remove("t_ms");
        columns.remove("role");
        let header: Vec<String> = ["t_ms".to_string(), "role".to_string()]
            .into_iter()
            .chain(columns)
            .collect();
        let path = out.join(format!("{kind}.csv"));
        let mut file = csv::Writer::from_path(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        file.write_record(&header)
            .with_context(|| format!("cannot write {}", path.display()))?;
        tables.insert(kind, (header, path, file));
    }
    let mut failed = None;
    each_event(run_dir, |r| {
        let Some((kind, fields)) = row(r) else { return };
        let Some((header, path, file)) = tables.get_mut(&kind) else {
            return;
        };
        let cells: Vec<String> = header.iter().map(|c| cell(fields.get(c))).collect();
        if let Err(e) = file.write_record(&cells) {
            failed.get_or_insert_with(|| format!("cannot write {}: {e}", path.display()));
        }
    });
    if let Some(failed) = failed {
        anyhow::bail!(failed);
    }
    let mut written = Vec::new();
    for (_, (_, path, mut file)) in tables {
        file.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// One cell's text (the writer quotes it where it must): a string as it is, numbers,
/// booleans and the rest as JSON writes them, nothing for a missing value.
fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_their_values_text() {
        assert_eq!(cell(Some(&Value::from("a,b"))), "a,b");
        assert_eq!(cell(Some(&Value::from(1.5))), "1.5");
        assert_eq!(cell(Some(&Value::from(true))), "true");
        assert_eq!(cell(None), "");
    }
}
