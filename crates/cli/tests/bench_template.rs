//! `stratum-bench bench template` end to end, on small mempools.

use crate::common;

#[test]
fn the_template_bench_measures_every_variant_and_the_template_provider() {
    let (stdout, report) = common::bench(
        "template",
        &["template", "--sizes", "500,200", "--iterations", "3"],
        "template-bench.json",
    );
    // Each size on its own fresh node, smallest first.
    let mempools = report["mempools"].as_array().unwrap();
    let sizes: Vec<_> = mempools.iter().map(|m| m["mempool_txs"].clone()).collect();
    assert_eq!(sizes, [200, 500]);
    for mempool in mempools {
        let cases = mempool["cases"].as_array().unwrap();
        for name in [
            "getblocktemplate fresh",
            "getblocktemplate cached",
            "getblocktemplatelight fresh",
            "getblocktemplatelight cached",
            "IPC createNewBlock fresh",
            "IPC waitNext after a block",
            "TDP NewTemplate + SetNewPrevHash after a block",
        ] {
            let case = cases
                .iter()
                .find(|c| c["name"].as_str().unwrap().starts_with(name))
                .unwrap_or_else(|| panic!("no case {name:?} in {mempool}"));
            // Each case counts the calls it measured, and keeps them for the chart.
            assert_eq!(case["latency_ms"]["count"], 3, "{name}");
            assert_eq!(case["samples_ms"].as_array().unwrap().len(), 3, "{name}");
            assert!(
                stdout.contains(&format!("| {name}")),
                "{name} printed:\n{stdout}"
            );
        }
    }
    // A bigger mempool gives a bigger template.
    assert!(
        mempools[1]["template_txs"].as_u64() > mempools[0]["template_txs"].as_u64(),
        "{report}"
    );
    assert!(stdout.contains("Template latency against mempool size"));
    // The seed's figures are printed beside ours.
    assert!(stdout.contains("62.025"), "{stdout}");
}
