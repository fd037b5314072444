//! Entry point for the fuzz target (`fuzz/` at the repository root) and for the replay of
//! its seeds in `make test` (crates/cli/tests/fuzz_corpus.rs): a run directory as a killed run, a full disk or
//! another version may leave it, read by `report`, `export` and `compare`.

use model::run_dir::{
    CHARTS_FILE, EVENTS_DIR, MANIFEST_FILE, SAMPLES_FILE, SCENARIO_FILE, SUMMARY_FILE,
};
use std::path::{Path, PathBuf};

/// The files a run directory's pieces become, in order; pieces past these are events files.
const FILES: [&str; 5] = [
    MANIFEST_FILE,
    SUMMARY_FILE,
    SCENARIO_FILE,
    SAMPLES_FILE,
    CHARTS_FILE,
];

/// A scratch directory of this process's own, emptied for each input.
fn scratch() -> PathBuf {
    std::env::temp_dir().join(format!("stratum-bench-fuzz-run-{}", std::process::id()))
}

fn write_run(dir: &Path, data: &[u8]) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir.join(EVENTS_DIR))?;
    for (i, piece) in data.split(|b| *b == 0).enumerate() {
        let path = match FILES.get(i) {
            Some(name) => dir.join(name),
            None => dir.join(EVENTS_DIR).join(format!("role{i}.jsonl")),
        };
        std::fs::write(path, piece)?;
    }
    Ok(())
}

/// A run directory whose files are `data`'s NUL-separated pieces (manifest, summary,
/// scenario, samples, charts, then event files), reported, exported and compared with itself.
/// Errors are what a user is told; only a panic is a finding.
pub fn run_directory(data: &[u8]) {
    let dir = scratch();
    write_run(&dir, data).expect("the scratch directory is writable");
    // Read once, as `report` reads it; the report, the export and the comparison all
    // work from it.
    let Ok(run) = crate::run_data::RunData::load(&dir) else {
        return;
    };
    let report = crate::content::build(&run);
    let _ = (report.to_markdown(), report.to_html());
    let _ = crate::export::export_csv(&run, &dir.join("csv"));
    let same = std::slice::from_ref(&run);
    if let Ok(comparison) = crate::compare::compare(same, same) {
        let doc = comparison.document();
        let _ = (doc.to_markdown(), doc.to_html());
    }
}
