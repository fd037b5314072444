//! `stratum-bench tap` in front of a real deployment: here our SV1 pool on `stratum-bench
//! node`, with a real SV1 miner (para) and our fleet on 500 connections at once; SRI's pool
//! with our SV2 fleet, tapped with the pool's key and without it; and a pool that is down.

use crate::common;

use crate::common::{
    exe, free_port, http_get, load_page, out_dir, start_role, start_sri_pool, start_sv1_pool,
    summary, terminate, Killed,
};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MINERS: u32 = 499;

fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tap(
    protocol: &str,
    out: &std::path::Path,
    listen: u16,
    upstream: u16,
    args: &[&str],
) -> Command {
    let mut cmd = Command::new(exe());
    cmd.args(["tap", protocol, "--listen", &format!("127.0.0.1:{listen}")])
        .args(["--upstream", &format!("127.0.0.1:{upstream}")])
        .arg("--out")
        .arg(out)
        .args(args);
    cmd
}

/// The value of the sample `name` (without labels) in a Prometheus text exposition.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn an_sv1_tap_counts_what_the_pool_counts_on_500_connections() {
    let miner = std::env::var("STRATUM_BENCH_SV1_MINER").expect(
        "STRATUM_BENCH_SV1_MINER names a real SV1 miner (make test installs para 0.6.0 and sets it)",
    );
    let out = out_dir("tap-sv1");
    std::fs::create_dir_all(&out).unwrap();
    let (_node, mut pool, pool_port, zmq) = start_sv1_pool(&out);
    let (tap_port, metrics_port) = (free_port(), free_port());
    let tapped = out.join("tapped");
    let mut tap_run = Killed(
        tap(
            "sv1",
            &tapped,
            tap_port,
            pool_port,
            &[
                "--node-zmq",
                &zmq,
                "--metrics-bind",
                &format!("127.0.0.1:{metrics_port}"),
                "--max-connections",
                "1000",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(out.join("tap.log")).unwrap())
        .spawn()
        .unwrap(),
    );
    wait_listening(tap_port);

    let fleet_spec = harness::roles::RoleSpec::Sv1Miners {
        config: sv1::fleet::FleetConfig {
            backup: None,
            pool: SocketAddr::from(([127, 0, 0, 1], tap_port)),
            machines: mining::farm::Machines {
                ramp: Duration::from_secs(3),
                ..mining::farm::Machines::alike(MINERS, 1_000.0, 1)
            },
            worker_prefix: "fleet".into(),
            broadcast: None,
            suggest_difficulty: None,
        },
    };
    let (mut fleet, _) = start_role(
        "miners",
        &serde_json::to_value(&fleet_spec).unwrap(),
        &out.join("miners.jsonl"),
    );
    let worker = "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080.para";
    let mut para = Killed(
        Command::new(&miner)
            .args(["miner", &format!("127.0.0.1:{tap_port}")])
            .args(["--username", worker, "--password", "x"])
            .args(["--cpu-cores", "1", "--throttle", "50K"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(out.join("para.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {miner}: {e}")),
    );

    // All 500 connections open at once, as the tap's own gauge says.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut open = 0.0;
    while open < f64::from(MINERS + 1) {
        assert!(
            Instant::now() < deadline,
            "only {open} connections open through the tap"
        );
        std::thread::sleep(Duration::from_millis(500));
        let metrics =
            http_get(&format!("127.0.0.1:{metrics_port}"), "/metrics").unwrap_or_default();
        open = sample(&metrics, "stratum_bench_tap_connections_open").unwrap_or(0.0);
    }
    // Mining through it for a while: blocks come every 5 s on average.
    std::thread::sleep(Duration::from_secs(25));

    // Miners first, so every share's answer has passed the tap before it stops.
    assert!(terminate(&mut fleet.0).success());
    let _ = para.0.kill();
    let _ = para.0.wait();
    std::thread::sleep(Duration::from_secs(2));
    assert!(terminate(&mut tap_run.0).success(), "the tap ends cleanly");
    let mut printed = String::new();
    std::io::Read::read_to_string(tap_run.0.stdout.as_mut().unwrap(), &mut printed).unwrap();
    assert!(terminate(&mut pool.0).success());

    let summary = summary(&tapped);
    let pool_accepted = events_of(&out.join("pool.jsonl"), "share_judged")
        .iter()
        .filter(|v| v["verdict"] == "accepted")
        .count() as u64;
    let tap_accepted = summary["verdicts"]["accepted"].as_u64().unwrap_or(0);
    assert!(
        pool_accepted > 100,
        "the pool accepted {pool_accepted} shares"
    );
    assert_eq!(
        tap_accepted, pool_accepted,
        "the tap counts the pool's accepted shares"
    );
    assert!(summary["connections"].as_u64().unwrap() >= u64::from(MINERS + 1));
    let workers = summary["workers"].as_array().unwrap();
    assert!(
        workers.iter().any(|w| w["worker"] == worker),
        "the real miner's shares are under its worker name"
    );
    assert!(
        workers.len() > MINERS as usize / 2,
        "{} workers",
        workers.len()
    );
    // The node's blocks reached every connection as a job.
    assert!(
        summary["blocks_announced"].as_u64().unwrap() >= 1,
        "{summary}"
    );
    let new_block = &summary["new_block_job_ms"];
    assert!(
        new_block["count"].as_u64().unwrap() >= u64::from(MINERS),
        "{new_block}"
    );
    let p50 = new_block["p50"].as_f64().unwrap();
    assert!((0.0..2_000.0).contains(&p50), "new-block job p50 {p50} ms");
    assert!(summary["bytes_down"].as_u64().unwrap() > summary["bytes_up"].as_u64().unwrap() / 10);
    assert!(summary["tap_added_down_ms"]["count"].as_u64().unwrap() > 0);
    assert!(printed.contains("accepted"), "{printed}");

    // `report DIR` renders it, and Chromium shows it without a console message.
    let md = report_of(&tapped);
    assert!(md.contains("## Shares and verdicts"), "{md}");
    assert!(md.contains(worker), "{md}");
    assert!(
        md.contains("new block at the node to job at the miner"),
        "{md}"
    );
    let profile = out.join("chromium");
    let url = format!(
        "file://{}",
        tapped.join("report.html").canonicalize().unwrap().display()
    );
    let (dom, png, console) = load_page(&url, &profile, &out.join("report.png"));
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(dom.contains("Shares and verdicts"));
    assert_eq!(&png[1..4], b"PNG");
}

/// The events of kind `kind` in a role's event file.
fn events_of(path: &std::path::Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == kind)
        .collect()
}

/// `report DIR` of a tap's directory, as Markdown.
fn report_of(dir: &std::path::Path) -> String {
    let report = Command::new(exe()).arg("report").arg(dir).output().unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    std::fs::read_to_string(dir.join("report.md")).unwrap()
}

const SV2_MINERS: u32 = 8;

#[test]
fn an_sv2_tap_with_the_pools_key_reports_verdicts_and_without_it_bytes_only() {
    let out = out_dir("tap-sv2");
    let sri = start_sri_pool(&out);
    // The SRI pool listens once it has its first template.
    wait_listening(sri.port);
    let secret = sri.keys.secret.to_string();
    let (keyed_port, keyless_port) = (free_port(), free_port());
    let (keyed, keyless) = (out.join("keyed"), out.join("keyless"));
    let mut keyed_tap = Killed(
        tap(
            "sv2",
            &keyed,
            keyed_port,
            sri.port,
            &["--node-zmq", &sri.zmq],
        )
        .env("STRATUM_BENCH_AUTHORITY_SECRET_KEY", &secret)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(out.join("keyed.log")).unwrap())
        .spawn()
        .unwrap(),
    );
    let mut keyless_tap = Killed(
        tap(
            "sv2",
            &keyless,
            keyless_port,
            sri.port,
            &["--node-zmq", &sri.zmq],
        )
        .env_remove("STRATUM_BENCH_AUTHORITY_SECRET_KEY")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(out.join("keyless.log")).unwrap())
        .spawn()
        .unwrap(),
    );
    wait_listening(keyed_port);
    wait_listening(keyless_port);
    let fleet = |port: u16, name: &str| {
        let spec = harness::roles::RoleSpec::Sv2Miners {
            config: sv2::fleet::FleetConfig {
                backup: None,
                pool: SocketAddr::from(([127, 0, 0, 1], port)),
                // The tap with the key proves the pool's own authority.
                pool_public: sri.keys.public,
                machines: mining::farm::Machines {
                    ramp: Duration::from_secs(1),
                    ..mining::farm::Machines::alike(SV2_MINERS, 1_000.0, 1)
                },
                user_prefix: name.into(),
                channel: sv2::fleet::ChannelKind::Extended,
                channels_per_connection: 1,
            },
        };
        let events = out.join(format!("{name}.jsonl"));
        let (child, _) = start_role(name, &serde_json::to_value(&spec).unwrap(), &events);
        (child, events)
    };
    let (mut keyed_fleet, keyed_events) = fleet(keyed_port, "keyed-fleet");
    let (mut keyless_fleet, _) = fleet(keyless_port, "keyless-fleet");
    // Blocks come every 5 s on average.
    std::thread::sleep(Duration::from_secs(25));
    assert!(terminate(&mut keyed_fleet.0).success());
    assert!(terminate(&mut keyless_fleet.0).success());
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        terminate(&mut keyed_tap.0).success(),
        "the keyed tap ends cleanly"
    );
    assert!(
        terminate(&mut keyless_tap.0).success(),
        "the keyless tap ends cleanly"
    );

    // With the key: every share's verdict. The fleet saw the answers the tap passed on
    // (all but those that came after it left, which the tap still read).
    let summary = summary(&keyed);
    let tap_accepted = summary["verdicts"]["accepted"].as_u64().unwrap_or(0);
    let answered = events_of(&keyed_events, "share_answered");
    let fleet_accepted = answered.iter().filter(|v| v["accepted"] == true).count() as u64;
    let submitted = events_of(&keyed_events, "share_submitted").len() as u64;
    // 8 miners at 10 shares a minute for about 24 s: some 30 expected, Poisson, fewer
    // while the pool's vardiff settles; one a miner is far below any chance shortfall.
    assert!(
        fleet_accepted >= u64::from(SV2_MINERS),
        "the fleet had {fleet_accepted} shares accepted"
    );
    assert!(
        (fleet_accepted..=submitted).contains(&tap_accepted),
        "the tap counted {tap_accepted} accepted; the fleet {fleet_accepted} accepted of {submitted}"
    );
    // Channels by connection: a few shares a channel in this time, so one may have none.
    let workers = summary["workers"].as_array().unwrap().len();
    assert!(workers > SV2_MINERS as usize / 2, "{workers} channels");
    assert!(summary["jobs_relayed"].as_u64().unwrap() >= u64::from(SV2_MINERS));
    assert!(
        summary["blocks_announced"].as_u64().unwrap() >= 1,
        "{summary}"
    );
    let new_block = &summary["new_block_job_ms"];
    assert!(
        new_block["count"].as_u64().unwrap() >= u64::from(SV2_MINERS),
        "{new_block}"
    );
    let p50 = new_block["p50"].as_f64().unwrap();
    assert!((0.0..2_000.0).contains(&p50), "new-block job p50 {p50} ms");
    assert_eq!(summary["encrypted_reads_up"], 0);
    let md = report_of(&keyed);
    assert!(md.contains("## Shares and verdicts"), "{md}");
    assert!(md.contains("/channel-"), "{md}");

    // Without it: bytes and reads of the encrypted stream, and nothing decoded.
    let summary = common::summary(&keyless);
    assert_eq!(summary["verdicts"], serde_json::json!({}), "{summary}");
    assert_eq!(summary["jobs_relayed"], 0, "{summary}");
    assert_eq!(summary["new_block_job_ms"]["count"], 0, "{summary}");
    for direction in ["up", "down"] {
        let reads = summary[format!("encrypted_reads_{direction}")]
            .as_u64()
            .unwrap();
        let bytes = summary[format!("bytes_{direction}")].as_u64().unwrap();
        assert!(
            reads >= u64::from(SV2_MINERS) * 2,
            "{reads} reads {direction}"
        );
        // Every read holds at least one encrypted frame header, or the handshake.
        assert!(
            bytes >= reads * 22,
            "{bytes} bytes in {reads} reads {direction}"
        );
    }
    let md = report_of(&keyless);
    assert!(md.contains("## Encrypted stream"), "{md}");
    assert!(!md.contains("Shares and verdicts"), "{md}");
    assert!(md.contains("Without the pool's authority key"), "{md}");
}

#[test]
fn a_tap_whose_pool_is_down_closes_each_connection_and_counts_it() {
    let out = out_dir("tap-down");
    let (tap_port, down_port) = (free_port(), free_port());
    let mut tap_run = Killed(
        tap("sv1", &out, tap_port, down_port, &["--duration", "3s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(tap_port);
    for _ in 0..3 {
        let mut client = std::net::TcpStream::connect(("127.0.0.1", tap_port)).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 16];
        // The tap closes the client's connection: end of stream, no bytes.
        assert_eq!(std::io::Read::read(&mut client, &mut buf).unwrap_or(0), 0);
    }
    assert!(
        tap_run.0.wait().unwrap().success(),
        "the tap serves on and ends at --duration"
    );
    let summary = summary(&out);
    // The three, and the probe that saw the tap listening.
    assert_eq!(summary["upstream_unreachable"], 4, "{summary}");
    assert_eq!(summary["connections"], 4, "{summary}");
}
