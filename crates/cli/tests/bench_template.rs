//! `stratum-bench bench template` end to end, on a small mempool.

mod common;

#[test]
fn the_template_bench_measures_every_variant_and_the_template_provider() {
    let (stdout, report) = common::bench(
        "template",
        &["template", "--mempool", "500", "--iterations", "3"],
        "template-bench.json",
    );
    assert_eq!(report["mempool_txs"], 500);
    let cases = report["cases"].as_array().unwrap();
    for name in [
        "getblocktemplate fresh",
        "getblocktemplate cached",
        "getblocktemplatelight fresh",
        "getblocktemplatelight cached",
        "TDP NewTemplate + SetNewPrevHash after a block",
    ] {
        let case = cases
            .iter()
            .find(|c| c["name"].as_str().unwrap().starts_with(name))
            .unwrap_or_else(|| panic!("no case {name:?} in {report}"));
        // Each case counts the calls it measured, and keeps them for the chart.
        assert_eq!(case["latency_ms"]["count"], 3, "{name}");
        assert_eq!(case["samples_ms"].as_array().unwrap().len(), 3, "{name}");
        assert!(
            stdout.contains(&format!("| {name}")),
            "{name} printed:\n{stdout}"
        );
    }
    // The seed's figures are printed beside ours.
    assert!(stdout.contains("62.025"), "{stdout}");
}
