//! A run directory's event and sample files, read so that a half-written or damaged file
//! loses only its bad lines: each is named by file and line, never fatal.

use crate::manifest::Sample;
use model::run_dir::{EVENTS_DIR, SAMPLES_FILE};
use probe::Record;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
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
        let mut events = Vec::new();
        let read = each_event(run_dir, |r| events.push(r));
        let (samples, bad_samples) = read_samples(run_dir);
        RunInput {
            events,
            samples,
            unreadable: [read.unreadable, bad_samples].concat(),
            no_events_dir: read.no_events_dir,
        }
    }
}

/// What reading a run's events one by one ([`each_event`]) met besides them.
#[derive(Debug, Default)]
pub struct EventsRead {
    /// Lines that could not be read, as `events/pool.jsonl:17`.
    pub unreadable: Vec<String>,
    /// The run has no `events/` directory at all.
    pub no_events_dir: bool,
}

/// Every event of a run directory counted by role and kind (`share_submitted`), for a
/// run stopped before it could be summarised; and what reading met besides.
pub fn count_events(run_dir: &Path) -> (BTreeMap<(String, String), u64>, EventsRead) {
    let mut counts = BTreeMap::new();
    let read = each_event(run_dir, |r| {
        let kind = serde_json::to_value(&r.event)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
            .unwrap_or_default();
        *counts.entry((r.role, kind)).or_default() += 1;
    });
    (counts, read)
}

/// Each event of a run directory's files, without holding them: every file is read line
/// by line and the files are merged by time. A role writes its events as they happen, so
/// each file is in time order but for its writer's buffering (a consumer that needs
/// strict order puts them through `stream::Reorder`).
pub fn each_event(run_dir: &Path, mut each: impl FnMut(Record)) -> EventsRead {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut read = EventsRead::default();
    let Ok(entries) = std::fs::read_dir(run_dir.join(EVENTS_DIR)) else {
        read.no_events_dir = true;
        return read;
    };
    let mut paths: Vec<_> = (entries.flatten().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    let mut files: Vec<EventFile> = (paths.iter())
        .filter_map(|path| EventFile::open(path))
        .collect();
    // Each file's next record, and the files in the order of those, earliest first (ties
    // in file order).
    let mut next: Vec<Option<Record>> = (files.iter_mut())
        .map(|file| file.next(&mut read.unreadable))
        .collect();
    let mut order: BinaryHeap<Reverse<(u64, usize)>> = (next.iter().enumerate())
        .filter_map(|(i, r)| r.as_ref().map(|r| Reverse((r.t_ns, i))))
        .collect();
    while let Some(Reverse((_, i))) = order.pop() {
        let record = next[i]
            .take()
            .expect("a file in the order has a next record");
        next[i] = files[i].next(&mut read.unreadable);
        if let Some(r) = &next[i] {
            order.push(Reverse((r.t_ns, i)));
        }
        each(record);
    }
    read
}

/// One event file as it is read.
struct EventFile {
    name: String,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    line: usize,
}

impl EventFile {
    fn open(path: &Path) -> Option<EventFile> {
        use std::io::BufRead;
        let file = std::fs::File::open(path).ok()?;
        Some(EventFile {
            name: format!(
                "{EVENTS_DIR}/{}",
                path.file_name().unwrap_or_default().to_string_lossy()
            ),
            lines: std::io::BufReader::new(file).lines(),
            line: 0,
        })
    }

    /// The next readable record; unreadable lines go to `bad` as `name:line`.
    fn next(&mut self, bad: &mut Vec<String>) -> Option<Record> {
        loop {
            self.line += 1;
            let line = match self.lines.next()? {
                Ok(line) => line,
                // Not UTF-8 (a torn write): that line is lost, the rest is read.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    bad.push(format!("{}:{}", self.name, self.line));
                    continue;
                }
                Err(_) => {
                    bad.push(format!("{}:{}", self.name, self.line));
                    return None;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(&line) {
                Ok(r) => return Some(r),
                Err(_) => bad.push(format!("{}:{}", self.name, self.line)),
            }
        }
    }
}

/// The sample file's readable lines, and the unreadable ones as `samples.jsonl:line`.
pub fn read_samples(run_dir: &Path) -> (Vec<Sample>, Vec<String>) {
    let (mut samples, mut bad) = (Vec::new(), Vec::new());
    read_lines(
        &run_dir.join(SAMPLES_FILE),
        SAMPLES_FILE,
        &mut samples,
        &mut bad,
    );
    (samples, bad)
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

    /// A killed run's events, counted by role and kind: two anchors of the node and one of
    /// the pool, the bad line named and counted nowhere.
    #[test]
    fn events_are_counted_by_role_and_kind() {
        let dir = crate::testing::scratch_dir("count");
        std::fs::create_dir_all(dir.join(EVENTS_DIR)).unwrap();
        let anchor = |t: u64, role: &str| {
            format!(r#"{{"t_ns":{t},"role":"{role}","kind":"clock_anchor","wall_ns":1}}"#)
        };
        let node = [anchor(1, "node"), "cut sh".into(), anchor(3, "node")].join("\n");
        std::fs::write(dir.join(EVENTS_DIR).join("node.jsonl"), node).unwrap();
        std::fs::write(dir.join(EVENTS_DIR).join("pool.jsonl"), anchor(2, "pool")).unwrap();
        let (counts, read) = count_events(&dir);
        let key = |role: &str| (role.to_string(), "clock_anchor".to_string());
        assert_eq!(counts, BTreeMap::from([(key("node"), 2), (key("pool"), 1)]));
        assert_eq!(read.unreadable, vec!["events/node.jsonl:2"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
        // Read one by one, merged by time with another file: the same lines lost.
        let other = r#"{"t_ns":6,"role":"pool","kind":"clock_anchor","wall_ns":2}"#;
        std::fs::write(
            dir.join(EVENTS_DIR).join("pool.jsonl"),
            format!(
                "{other}
"
            ),
        )
        .unwrap();
        let mut seen = Vec::new();
        let read = each_event(&dir, |r| seen.push((r.t_ns, r.role)));
        assert_eq!(
            seen,
            vec![(5, "node".into()), (5, "node".into()), (6, "pool".into())]
        );
        assert_eq!(
            read.unreadable,
            vec!["events/node.jsonl:2", "events/node.jsonl:5"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(each_event(&dir, |_| {}).no_events_dir);
        assert!(RunInput::read(&dir).no_events_dir);
    }
}
