//! `stratum-bench bench template` end to end, on a small mempool.

mod common;

use common::exe;
use std::process::Command;

#[test]
fn the_template_bench_measures_every_variant_and_the_template_provider() {
    let out = Command::new(exe())
        .args(["bench", "template", "--mempool", "500", "--iterations", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for case in [
        "getblocktemplate fresh",
        "getblocktemplate cached",
        "getblocktemplatelight fresh",
        "getblocktemplatelight cached",
        "TDP NewTemplate + SetNewPrevHash after a block",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(case))
            .unwrap_or_else(|| panic!("no row {case:?} in\n{stdout}"));
        // Each row counts the calls it measured.
        assert!(row.split_whitespace().any(|w| w == "3"), "{case}: {row}");
    }
}
