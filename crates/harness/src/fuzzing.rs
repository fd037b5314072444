//! Entry point for the fuzz target (`fuzz/` at the repository root) and for the replay of
//! its seeds in `make test` (crates/cli/tests/fuzz_corpus.rs): a scenario file and `--set` overrides as a user
//! may write them.

use model::scenario::Scenario;
use std::path::Path;

/// The line that separates the scenario's TOML from its overrides, one per line after it.
const OVERRIDES: &str = "\n%%\n";

/// Reads `data` as a scenario (TOML, then optionally `%%` and `--set` overrides). An error
/// is what the user is told; only a panic is a finding.
pub fn scenario(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (toml, overrides) = text.split_once(OVERRIDES).unwrap_or((&text, ""));
    let Ok(overrides) = overrides
        .lines()
        .map(str::parse)
        .collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let _ = Scenario::parse(toml, Path::new("fuzz.toml"), &overrides);
}
