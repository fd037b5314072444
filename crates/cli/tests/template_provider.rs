//! A Template Provider of the user's (`roles.template_provider`, sv2-tp) for side C: one
//! that exits before it serves fails the run before the window, naming it and its log;
//! sv2-tp itself, when the machine has a build of it (`STRATUM_BENCH_SV2_TP=/path/to/sv2-tp`;
//! it is C++ and not in a package registry), gives the pool every tip of the node's, as
//! the tap in front of it records, and when it dies mid-run the run finishes with what it
//! has.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

#[test]
fn a_template_provider_that_exits_fails_the_run_naming_it_and_its_log() {
    let dir = common::out_dir("tp-exits");
    let out = common::run_scenario(
        "config-c",
        &dir,
        &[
            "--duration",
            "20s",
            "--set",
            r#"roles.template_provider.command="false""#,
        ],
    )
    .stdout(Stdio::null())
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("template-provider-sv2-c"), "{said}");
    assert!(said.contains("template-provider-sv2-c.log"), "{said}");
    // Its log is kept, where the error points.
    let log = std::fs::read_to_string(dir.join("logs/template-provider-sv2-c.log"));
    assert!(log.is_ok(), "its log is kept");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each event of kind `kind` in `file`, as JSON.
fn events_of(file: &Path, kind: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// `config-c` with the sv2-tp build named by `STRATUM_BENCH_SV2_TP` as side C's Template
/// Provider, into `dir` with `args`, its output in `dir.log`. Without the variable the test
/// fails naming it: `make test` leaves these tests out and counts them as skipped.
fn with_sv2_tp(dir: &Path, args: &[&str]) -> (std::process::Command, PathBuf) {
    let sv2_tp = std::env::var("STRATUM_BENCH_SV2_TP")
        .expect("STRATUM_BENCH_SV2_TP names a build of sv2-tp (docs/testing.md)");
    let command = format!(r#"roles.template_provider.command="{sv2_tp}""#);
    let mut args = args.to_vec();
    args.extend(["--set", &command]);
    let log = dir.with_extension("log");
    let mut run = common::run_scenario("config-c", dir, &args);
    run.stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    (run, log)
}

#[test]
fn sv2_tp_gives_the_pool_every_tip_the_node_makes() {
    let dir = common::out_dir("sv2-tp");
    let args = [
        "--duration",
        "40s",
        "--set",
        "warmup=5s",
        "--set",
        "network.block_interval=5s",
    ];
    let (mut run, log) = with_sv2_tp(&dir, &args);
    let ran = run.status().unwrap();
    assert!(ran.success(), "see {}", log.display());
    let tips: BTreeMap<String, u64> = events_of(&dir.join("events/node.jsonl"), "tip_changed")
        .iter()
        .map(|e| {
            (
                e["hash"].as_str().unwrap().to_string(),
                e["t_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    let at_pool: BTreeMap<String, u64> = events_of(
        &dir.join("events/tap-templates-sv2-c.jsonl"),
        "pool_template",
    )
    .iter()
    .filter(|e| e["reason"] == "new_tip")
    .map(|e| {
        (
            e["prev_hash"].as_str().unwrap().to_string(),
            e["t_ns"].as_u64().unwrap(),
        )
    })
    .collect();
    assert!(
        tips.len() >= 3,
        "a 40 s run at 5 s blocks has tips: {tips:?}"
    );
    // Every tip reaches the pool as the next block's template, in well under a second
    // (the tap's monotonic clock is the node's: one host).
    for (hash, t_tip) in &tips {
        let t_pool = at_pool
            .get(hash)
            .unwrap_or_else(|| panic!("tip {hash} never reached the pool: {at_pool:?}"));
        let ms = t_pool.saturating_sub(*t_tip) as f64 / 1e6;
        assert!(t_pool > t_tip && ms < 1_000.0, "tip {hash}: {ms} ms");
    }
    let summary = common::summary(&dir);
    let jobs = &summary["sides"]["sv2-c"]["new_prevhash_job_ms"]["count"];
    assert!(jobs.as_u64().unwrap_or(0) > 0, "{jobs}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_sv2_tp_that_dies_mid_run_is_recorded_and_the_run_finishes() {
    let dir = common::out_dir("sv2-tp-dies");
    let args = ["--duration", "30s", "--set", "warmup=5s"];
    let (mut command, log) = with_sv2_tp(&dir, &args);
    let mut run = command.spawn().unwrap();
    // Its data directory, in its arguments, names this run's one.
    let data_dir = format!("datadir={}", dir.join("template-provider-sv2-c").display());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let killed = loop {
        let started =
            std::fs::read_to_string(&log).is_ok_and(|l| l.contains("sv2-c: SV1 miners connect"));
        if started {
            // Into the window (5 s of warm-up), with time left in it.
            std::thread::sleep(std::time::Duration::from_secs(15));
            let kill = std::process::Command::new("pkill")
                .args(["-KILL", "-f", &data_dir])
                .status()
                .unwrap();
            break kill.success();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "see {}",
            log.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(killed, "sv2-tp was running");
    assert!(run.wait().unwrap().success(), "see {}", log.display());
    let summary = common::summary(&dir);
    assert_eq!(
        summary["unmatched"]["role_exited:template-provider-sv2-c"], 1,
        "{}",
        summary["unmatched"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
