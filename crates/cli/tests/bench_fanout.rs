//! `stratum-bench bench fanout` end to end, on a small bounded count.

use crate::common;

use crate::common::bench_fails;
use serde_json::json;

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
    // Beside the floor whose readers wait, the kernel's write alone.
    assert!(r["bare_floor_us_per_miner"].as_f64().unwrap() > 0.0);
    assert!(stdout.contains("floor, nobody waiting"), "{stdout}");
    // The pool's own fan-out (its last write of each job) is seen in every round.
    assert_eq!(r["sender_writes_ms"]["count"], 2);
    assert!(r["sender_us_per_miner"].as_f64().unwrap() > 0.0);
    // Each round's fan-out beside the floor loop timed after it; two rounds are too few
    // for an interval, and the report says so.
    let paired = r["paired_rounds"].as_array().unwrap();
    assert_eq!(paired.len(), 2, "{r}");
    for round in paired {
        assert!(round["sender_us_per_miner"].as_f64().unwrap() > 0.0);
        assert!(round["floor_us_per_miner"].as_f64().unwrap() > 0.0);
    }
    assert!(
        stdout.contains("too few rounds for an interval: 2"),
        "{stdout}"
    );

    // A count the sender cannot hold fails before anything starts, naming the limit.
    let too_many = bench_fails(&["fanout", "--miners", "100000000"]);
    assert!(
        too_many.contains("file descriptors") && too_many.contains("at most"),
        "{too_many}"
    );
    let unknown = bench_fails(&["fanout", "--mode", "multicast"]);
    assert!(unknown.contains("`sv2-group`"), "{unknown}");
    // A pool given by address: its node must be named, and it must be on this machine.
    let no_node = bench_fails(&["fanout", "--via", "127.0.0.1:3333"]);
    assert!(no_node.contains("needs --node-rpc"), "{no_node}");
    let far = bench_fails(&[
        "fanout",
        "--via",
        "192.0.2.1:3333",
        "--node-rpc",
        "http://127.0.0.1:18443",
    ]);
    assert!(
        far.contains("--via 192.0.2.1:3333: benchmarks load only this machine"),
        "{far}"
    );
    let stray_node = bench_fails(&["fanout", "--node-rpc", "http://127.0.0.1:18443"]);
    assert!(
        stray_node.contains("--node-rpc is for a pool given by --via HOST:PORT"),
        "{stray_node}"
    );
    let no_group = bench_fails(&["fanout", "--via", "sv1-pool", "--mode", "sv2-group"]);
    assert!(no_group.contains("--via sv2-pool"), "{no_group}");
    // Only the built-in pool broadcasts.
    let no_broadcast = bench_fails(&["fanout", "--via", "translator", "--mode", "udp-broadcast"]);
    assert!(
        no_broadcast.contains("only the built-in SV1 pool"),
        "{no_broadcast}"
    );
}

/// The real SRI senders: its translator to SV1 miners, its pool to SV2 miners (each on its
/// own connection, or grouped 7 to a connection, the last group short). Every miner gets
/// every new block's work, counted once, tied to its round by the block's hash.
#[test]
fn the_sri_translator_and_pool_fan_out_to_every_miner() {
    for (via, mode) in [
        ("translator", "tcp"),
        ("sv2-pool", "tcp"),
        ("sv2-pool", "sv2-group"),
    ] {
        let (stdout, results) = common::bench(
            &format!("fanout-{via}-{mode}"),
            &[
                "fanout",
                "--miners",
                "20",
                "--via",
                via,
                "--mode",
                mode,
                "--group-size",
                "7",
                "--rounds",
                "2",
            ],
            "fanout.json",
        );
        assert!(
            stdout.contains(&format!("| {via} | {mode} | 20 (1) | 2 |")),
            "{stdout}"
        );
        let r = &results[0];
        assert_eq!(r["via"], via);
        let group = if mode == "sv2-group" {
            json!(7)
        } else {
            json!(null)
        };
        assert_eq!(r["group_size"], group);
        assert_eq!(
            r["rounds"], 2,
            "{via} {mode}: both new blocks were seen at the sender"
        );
        assert_eq!(
            r["missing"], 0,
            "{via} {mode}: every miner got every block's work"
        );
        assert_eq!(
            r["delivery_ms"]["count"], 40,
            "{via} {mode}: each miner once per block"
        );
        let (first, last) = (
            r["first_miner_ms"]["p50"].as_f64().unwrap(),
            r["last_miner_ms"]["p50"].as_f64().unwrap(),
        );
        assert!(
            0.0 <= first && first <= last,
            "{via} {mode}: first {first} ms, last {last} ms"
        );
    }
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

/// The A/A calibration: a second floor stands in for the sender, so each run's rounds pair
/// two floors' loops, and the count of intervals that leave 1 out is printed.
#[test]
fn a_calibration_pairs_two_floors_round_by_round() {
    let (stdout, calibrations) = common::bench(
        "fanout-calibration",
        &[
            "fanout",
            "--calibrate",
            "2",
            "--miners",
            "20",
            "--rounds",
            "5",
        ],
        "fanout-calibration.json",
    );
    let c = &calibrations[0];
    assert_eq!(c["miners"], 20);
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{c}");
    for run in runs {
        let rounds = run.as_array().unwrap();
        assert_eq!(rounds.len(), 5, "{run}");
        for round in rounds {
            assert!(round["sender_us_per_miner"].as_f64().unwrap() > 0.0);
            assert!(round["floor_us_per_miner"].as_f64().unwrap() > 0.0);
        }
    }
    assert!(
        stdout.contains("20 miners:") && stdout.contains("of 2 runs' 95% intervals exclude 1"),
        "{stdout}"
    );
    // Both floors' writing ends are the bench's: a count beyond them is refused before
    // anything starts, saying why it is half.
    let too_many = bench_fails(&["fanout", "--calibrate", "1", "--miners", "100000000"]);
    assert!(
        too_many.contains("--calibrate") && too_many.contains("file descriptors"),
        "{too_many}"
    );
    let with_a_sender = bench_fails(&["fanout", "--calibrate", "1", "--via", "sv2-pool"]);
    assert!(with_a_sender.contains("--via"), "{with_a_sender}");
}
