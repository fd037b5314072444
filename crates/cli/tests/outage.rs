//! An outage measured (scenarios/outage.toml, shortened): every side's pool drops for D
//! seconds and comes back. Our SV1 and SV2 miners get it back as firmware does: a pause
//! after the lost connection, then a connect every retry interval, refused until the pool
//! is back. With no backup each miner is without work from the drop until its first
//! connect after the outage (the timers set it: 1 s, then every 2 s, so 11 s for a 10 s
//! outage) and the handshakes' round trips after it (one for SV1, three for SV2), with a
//! margin for a loaded machine; no share is accepted while the pool is gone.

mod common;

use common::{out_dir, run_scenario, summary};
use serde_json::Value;

/// The outage, and the firmware timers the test sets, in seconds.
const OUTAGE_S: f64 = 10.0;
const RECONNECT_AFTER_S: f64 = 1.0;
const RETRY_EVERY_S: f64 = 2.0;
/// The link's round trip, seconds.
const RTT_S: f64 = 0.1;
/// What a loaded 2-core machine may add.
const SLACK_S: f64 = 1.0;

/// When a miner's first connect after the outage succeeds, from the drop: the pause, then
/// whole retry intervals until the pool is back.
fn first_connect_back_s() -> f64 {
    let retries = ((OUTAGE_S - RECONNECT_AFTER_S) / RETRY_EVERY_S).ceil();
    RECONNECT_AFTER_S + retries * RETRY_EVERY_S
}

#[test]
fn an_outage_of_d_seconds_costs_each_miner_d_seconds_and_its_firmwares_retry() {
    let out = out_dir("outage");
    let run = run_scenario(
        "outage",
        &out,
        &[
            "--duration",
            "35s",
            "--set",
            "warmup=10s",
            "--set",
            "sides=[\"sv1\", \"sv2-d\"]",
            "--set",
            "faults=[{target=\"pool\", kind=\"drop\", at=\"10s\", lasts=\"10s\"}]",
            "--set",
            "miners.reconnect_after=1s",
            "--set",
            "miners.retry_every=2s",
        ],
    )
    .output()
    .unwrap();
    common::succeed(run);
    let s = summary(&out);
    let num = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    // Subscribe and authorize (SV1); Noise handshake, setup and channel (SV2).
    for (side, round_trips) in [("sv1", 1.0), ("sv2-d", 3.0)] {
        let expected = first_connect_back_s() + round_trips * RTT_S;
        let outages = s["outages"][side].as_array().unwrap();
        assert_eq!(outages.len(), 1, "{side}: {outages:?}");
        let o = &outages[0];
        assert_eq!(
            (o["target"].as_str(), o["fault"].as_str()),
            (Some("pool"), Some("drop"))
        );
        assert!((num(&o["lasted_s"]) - OUTAGE_S).abs() < 0.1, "{side}: {o}");
        assert_eq!(o["back"], o["miners"], "{side}: every miner back: {o}");
        assert_eq!(num(&o["accepted_during"]), 0.0, "{side}: {o}");
        let without = &o["without_work_s"];
        // No miner has work before its connect and handshakes can have brought it.
        let shortest = num(&o["shortest_without_work_s"]);
        assert!(
            shortest >= expected - 0.05,
            "{side}: {o} (expected {expected} s)"
        );
        let most = expected + SLACK_S;
        assert!(
            num(&without["max"]) <= most,
            "{side}: {without} (expected {expected} s)"
        );
        assert!(
            num(&o["lost_s_per_miner"]) >= OUTAGE_S - 0.05,
            "{side}: {o}"
        );
        assert!(num(&o["lost_sats"]) > 0.0, "{side}: {o}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Outage"), "no Outage section");
}
