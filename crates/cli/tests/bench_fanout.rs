//! `stratum-bench bench fanout` end to end, on a small bounded count.

mod common;

use common::exe;
use std::process::Command;

#[test]
fn fanout_reaches_every_miner_and_reports_microseconds_per_miner() {
    let (stdout, results) = common::bench(
        "fanout",
        &[
            "fanout", "--miners", "30", "--via", "sv1-pool", "--mode", "tcp", "--rounds", "2",
        ],
        "fanout.json",
    );
    assert!(stdout.contains("us per miner"), "{stdout}");
    let r = &results[0];
    assert_eq!(r["miners"], 30);
    assert_eq!(r["rounds"], 2, "both new blocks were fanned out");
    assert_eq!(r["missing"], 0, "every miner got every job");
    assert_eq!(r["delivery_ms"]["count"], 60);
    assert!(r["us_per_miner"].as_f64().unwrap() > 0.0);
    assert!(r["floor_us_per_miner"].as_f64().unwrap() > 0.0);
    assert_eq!(r["floor_miners"], 30);
    assert_eq!(r["fleets"], 1);

    // A count the sender cannot hold fails before anything starts, naming the limit.
    let too_many = Command::new(exe())
        .args(["bench", "fanout", "--miners", "100000000"])
        .output()
        .unwrap();
    assert!(!too_many.status.success());
    let err = String::from_utf8_lossy(&too_many.stderr);
    assert!(
        err.contains("file descriptors") && err.contains("at most"),
        "{err}"
    );

    let unsupported = Command::new(exe())
        .args(["bench", "fanout", "--mode", "sv2-group"])
        .output()
        .unwrap();
    assert!(!unsupported.status.success());
    assert!(String::from_utf8_lossy(&unsupported.stderr).contains("sv2-group"));
}

/// One datagram reaches every miner; the TCP copy follows 50 ms later as the fallback, so
/// most deliveries well under 50 ms came by broadcast.
#[test]
fn udp_broadcast_reaches_every_miner_once_per_job() {
    let (stdout, results) = common::bench(
        "fanout-udp",
        &[
            "fanout",
            "--miners",
            "30",
            "--via",
            "sv1-pool",
            "--mode",
            "udp-broadcast",
            "--rounds",
            "2",
        ],
        "fanout.json",
    );
    assert!(stdout.contains("udp-broadcast"), "{stdout}");
    let r = &results[0];
    assert_eq!(r["mode"], "udp-broadcast");
    assert_eq!(r["rounds"], 2, "both new blocks were fanned out");
    assert_eq!(r["missing"], 0, "every miner got every job");
    assert_eq!(
        r["delivery_ms"]["count"], 60,
        "each miner counted once per job"
    );
    let p50 = r["delivery_ms"]["p50"].as_f64().unwrap();
    assert!(
        p50 < 50.0,
        "the TCP fallback delivered the jobs: p50 {p50} ms"
    );
}
