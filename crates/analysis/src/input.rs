//! A run directory's event and sample files, read so that a half-written or damaged file
//! loses only its bad lines: each is named by file and line, never fatal.

use crate::manifest::{Sample, EVENTS_DIR, SAMPLES_FILE};
use probe::Record;
use serde::de::DeserializeOwned;
use std::path::Path;

#[derive(Debug, Default)]
pub struct RunInput {
    pub events: Vec<Record>,
    pub samples: Vec<Sample>,
    /// Lines that could not be read, as `events/pool.jsonl:17`.
    pub unreadable: Vec<String>,
    /// The run has no `events/` directory at all.
    pub no_events_dir: bool,
}

impl RunInput {
    pub fn read(run_dir: &Path) -> RunInput {
        let mut input = RunInput::default();
        match std::fs::read_dir(run_dir.join(EVENTS_DIR)) {
            Ok(entries) => {
                let mut files: Vec<_> = entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                    .collect();
                files.sort();
                for path in files {
                    let name = format!(
                        "{EVENTS_DIR}/{}",
                        path.file_name().unwrap_or_default().to_string_lossy()
                    );
                    read_lines(&path, &name, &mut input.events, &mut input.unreadable);
                }
            }
            Err(_) => input.no_events_dir = true,
        }
        read_lines(
            &run_dir.join(SAMPLES_FILE),
            SAMPLES_FILE,
            &mut input.samples,
            &mut input.unreadable,
        );
        input
    }
}

/// Every readable JSON line of `path` into `out`; the others as `name:line` into `bad`.
/// A missing file reads as empty.
fn read_lines<T: DeserializeOwned>(
    path: &Path,
    name: &str,
    out: &mut Vec<T>,
    bad: &mut Vec<String>,
) {
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes);
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(x) => out.push(x),
            Err(_) => bad.push(format!("{name}:{}", i + 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_file_loses_only_its_bad_lines() {
        let dir = std::env::temp_dir().join(format!("analysis-input-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(EVENTS_DIR)).unwrap();
        let good = r#"{"t_ns":5,"role":"node","kind":"clock_anchor","wall_ns":1}"#;
        std::fs::write(
            dir.join(EVENTS_DIR).join("node.jsonl"),
            format!("{good}\nnot json\n\n{good}\n{{\"t_ns\":7,\"role\":\"no"),
        )
        .unwrap();
        std::fs::write(dir.join(EVENTS_DIR).join("notes.txt"), "ignored").unwrap();
        std::fs::write(
            dir.join(SAMPLES_FILE),
            "{\"t_ns\":1,\"role\":\"pool\",\"cpu_pct\":2.0,\"rss_bytes\":3}\n{\"t_ns\":2,",
        )
        .unwrap();
        let input = RunInput::read(&dir);
        assert_eq!(input.events.len(), 2);
        assert_eq!(input.samples.len(), 1);
        assert_eq!(
            input.unreadable,
            vec![
                "events/node.jsonl:2",
                "events/node.jsonl:5",
                "samples.jsonl:2"
            ]
        );
        assert!(!input.no_events_dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(RunInput::read(&dir).no_events_dir);
    }
}
