//! A clean clone reuses the build cache (`scripts/source-mtimes.sh`), so a test binary
//! may have been built in another clone, since removed or at another commit. A path fixed
//! at build time would read that clone's files: every test finds the repository when it
//! runs (`common::crate_dir`).

use std::path::Path;

fn rust_files(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

#[test]
fn no_code_reads_the_repository_from_where_it_was_built() {
    let crates = crate::common::crate_dir().join("..");
    let mut files = Vec::new();
    rust_files(&crates, &mut files);
    assert!(files.len() > 50, "the crates' sources: {}", files.len());
    // Split so that this file does not match itself.
    let build_time_dir = concat!("env!(\"CARGO_", "MANIFEST_DIR\")");
    let offenders: Vec<String> = (files.iter())
        .filter(|f| std::fs::read_to_string(f).unwrap().contains(build_time_dir))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "these read {build_time_dir}, fixed when built; read the variable when the test \
         runs (common::crate_dir): {offenders:?}"
    );
}
