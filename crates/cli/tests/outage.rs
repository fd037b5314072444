//! An outage measured (scenarios/outage.toml, shortened): every side's pool drops for D
//! seconds and comes back. Our SV1 and SV2 miners get it back as firmware does: a pause
//! after the lost connection, then a connect every retry interval, refused until the pool
//! is back. With no backup each miner is without work from the drop until its first
//! connect after the outage (the timers set it: 1 s, then every 2 s, so 11 s for a 10 s
//! outage) and the handshakes' round trips after it (one for SV1, three for SV2), with a
//! margin for a loaded machine; no share is accepted while the pool is gone.
//!
//! With a backup pool, the failover takes the configured timers and the round trips: the
//! lost session and each refused connect are failures, and at the third in a row the miner
//! turns to its backup (1 s, then 2 s twice: 5 s after the drop), whose job comes one round
//! trip (SV1) or three (SV2) after it connects. On the backup, the miner checks its primary
//! every 10 s and returns once it serves.

use crate::common;

use crate::common::{num, run_to_summary};

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

/// `args` and what both runs share, from the constants their expectations use: a 10 s
/// warm-up, the pool's drop of `OUTAGE_S` from 10 s into the window, the firmware timers.
fn drop_with(args: &[&str]) -> Vec<String> {
    let shared = [
        "warmup=10s".to_string(),
        format!("faults=[{{target=\"pool\", kind=\"drop\", at=\"10s\", lasts=\"{OUTAGE_S}s\"}}]"),
        format!("miners.reconnect_after={RECONNECT_AFTER_S}s"),
        format!("miners.retry_every={RETRY_EVERY_S}s"),
    ];
    (args.iter().map(|a| a.to_string()))
        .chain(shared.into_iter().flat_map(|s| ["--set".to_string(), s]))
        .collect()
}

/// The shares `side`'s dropped pool accepted that were already past the link when it
/// dropped (one judged 0.36 ms after the drop in a clean run): within one way of the drop.
/// Every other acceptance during the outage is a fault of the accounting or the link.
fn accepted_in_flight(out: &std::path::Path, side: &str) -> usize {
    let began = common::events(out, &format!("link-{side}"))
        .into_iter()
        .find(|e| e["kind"] == "fault_began")
        .and_then(|e| e["t_ns"].as_u64())
        .unwrap_or_else(|| panic!("{side}: the link recorded the drop"));
    (common::events(out, &format!("pool-{side}")).iter())
        .filter(|e| e["kind"] == "share_judged" && e["verdict"] == "accepted")
        .filter_map(|e| e["t_ns"].as_u64())
        .filter(|t| (began..=began + (RTT_S / 2.0 * 1e9) as u64).contains(t))
        .count()
}

#[test]
fn an_outage_of_d_seconds_costs_each_miner_d_seconds_and_its_firmwares_retry() {
    let (out, s) = run_to_summary(
        "outage",
        "outage",
        &drop_with(&["--duration", "35s", "--set", "sides=[\"sv1\", \"sv2-d\"]"]),
    );
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
        assert_eq!(
            num(&o["accepted_during"]),
            accepted_in_flight(&out, side) as f64,
            "{side}: {o}"
        );
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

/// The failover the timers set: after the lost session's pause, `failover_after - 1`
/// refused connects a retry interval apart, then the backup.
const FAILOVER_AFTER: f64 = 3.0;
const PRIMARY_CHECK_EVERY_S: f64 = 10.0;

fn failover_s() -> f64 {
    RECONNECT_AFTER_S + (FAILOVER_AFTER - 1.0) * RETRY_EVERY_S
}

#[test]
fn with_a_backup_the_failover_takes_the_firmwares_timers_and_the_round_trips() {
    let (out, s) = run_to_summary(
        "failover",
        "failover",
        &drop_with(&[
            "--duration",
            "40s",
            "--set",
            "sides=[\"sv1\", \"sv2-c\", \"sv2-d\"]",
            "--set",
            &format!("miners.failover_after={FAILOVER_AFTER}"),
            "--set",
            &format!("miners.primary_check_every={PRIMARY_CHECK_EVERY_S}s"),
        ]),
    );
    // To the backup's job: the connect's handshakes (SV1: subscribe and authorize; SV2:
    // Noise, setup, channel). The checks of the primary are timed from the session's
    // start (SV1: its connect; SV2: after Noise and setup), and each takes the handshakes
    // to a job: SV1 one round trip, SV2 three. Back: the pause and the handshakes again.
    for (side, round_trips, (start_trips, check_trips)) in
        [("sv1", 1.0, (0.0, 1.0)), ("sv2-d", 3.0, (2.0, 3.0))]
    {
        let o = &s["outages"][side][0];
        let expected = failover_s() + round_trips * RTT_S;
        assert_eq!(
            o["back"], o["miners"],
            "{side}: every miner on the backup: {o}"
        );
        assert_eq!(o["failed_over"], o["miners"], "{side}: {o}");
        let shortest = num(&o["shortest_without_work_s"]);
        assert!(
            shortest >= expected - 0.05,
            "{side}: {o} (expected {expected} s)"
        );
        let most = num(&o["without_work_s"]["max"]);
        assert!(
            most <= expected + SLACK_S,
            "{side}: {o} (expected {expected} s)"
        );
        // Nothing accepted by the dropped pool but what was in flight, and the backup's
        // shares while it was gone.
        assert_eq!(
            num(&o["accepted_during"]),
            accepted_in_flight(&out, side) as f64,
            "{side}: {o}"
        );
        let first = num(&o["first_accepted_on_backup_s"]);
        assert!(first >= expected - 0.05, "{side}: {o}");
        // Back on the primary at the first check after its end: the backup session began
        // at `failover_s`, its checks come every 10 s after it.
        assert_eq!(o["returned"], o["miners"], "{side}: every miner back: {o}");
        let checks = ((OUTAGE_S - failover_s()) / PRIMARY_CHECK_EVERY_S).ceil();
        let turned = failover_s() + start_trips * RTT_S + checks * PRIMARY_CHECK_EVERY_S - OUTAGE_S
            + check_trips * RTT_S;
        let turned_back = &o["returned_after_end_s"];
        assert!(
            num(&turned_back["p50"]) >= turned - 0.05
                && num(&turned_back["max"]) <= turned + SLACK_S,
            "{side}: {turned_back} (expected {turned} s)"
        );
        let gap = RECONNECT_AFTER_S + round_trips * RTT_S;
        let way_back = &o["return_gap_s"];
        assert!(
            num(&way_back["p50"]) >= gap - 0.05 && num(&way_back["max"]) <= gap + SLACK_S,
            "{side}: {way_back} (expected {gap} s)"
        );
        // Lost: the failover and the way back, a miner.
        let lost = num(&o["lost_s_per_miner"]);
        assert!(
            lost >= expected + gap - 0.1 && lost <= expected + gap + 2.0 * SLACK_S,
            "{side}: {o}"
        );
    }
    // SRI's translator turns to its second upstream by itself; its miners follow through
    // it, and the backup accepts their shares.
    let c = &s["outages"]["sv2-c"][0];
    assert_eq!(c["back"], c["miners"], "sv2-c: {c}");
    assert!(num(&c["first_accepted_on_backup_s"]) > 0.0, "sv2-c: {c}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("miners turned to the backup"),
        "no backup table in the Outage section"
    );
}
