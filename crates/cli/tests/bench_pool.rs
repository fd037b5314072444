//! `stratum-bench bench pool` end to end, on a small bounded load.

mod common;

use common::exe;
use std::process::Command;

#[test]
fn the_pool_bench_ramps_and_reports_each_step() {
    let (_, report) = common::bench(
        "pool-bench",
        &[
            "pool",
            "--target",
            "builtin",
            "--miners",
            "20",
            "--rate",
            "200",
            "--step",
            "2s",
            "--max-steps",
            "2",
            "--p99-bound-ms",
            "1000",
        ],
        "pool-bench.json",
    );
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "two bounded steps");
    for (step, offered) in steps.iter().zip([200.0, 400.0]) {
        assert_eq!(step["offered_per_s"], offered);
        assert_eq!(step["errors"], 0, "{step}");
        let accepted = step["accepted_per_s"].as_f64().unwrap();
        assert!(accepted > 0.8 * offered, "{accepted} of {offered}");
        assert!(step["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    }
    assert!(report["max_sustained_shares_per_s"].as_f64().unwrap() > 300.0);

    let unreachable = Command::new(exe())
        .args([
            "bench",
            "pool",
            "--target",
            "127.0.0.1:9",
            "--share-difficulty",
            "1",
        ])
        .arg("--out")
        .arg(std::env::temp_dir().join(format!("pool-bench-unreachable-{}", std::process::id())))
        .output()
        .unwrap();
    assert!(!unreachable.status.success());
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("127.0.0.1:9"));
}
