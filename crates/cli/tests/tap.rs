//! `stratum-bench tap` in front of a real deployment: here our SV1 pool on `stratum-bench
//! node`, with a real SV1 miner (para) and our fleet on 500 connections at once, and a pool
//! that is down.

mod common;

use common::{
    exe, free_port, http_get, load_page, out_dir, start_role, start_sv1_pool, terminate, Killed,
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

fn tap(out: &std::path::Path, listen: u16, upstream: u16, args: &[&str]) -> Command {
    let mut cmd = Command::new(exe());
    cmd.args(["tap", "sv1", "--listen", &format!("127.0.0.1:{listen}")])
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
            pool: SocketAddr::from(([127, 0, 0, 1], tap_port)),
            miners: MINERS,
            hashrate: 1_000.0,
            worker_prefix: "fleet".into(),
            ramp: Duration::from_secs(3),
            hash_threads: 1,
            broadcast: None,
            per_miner: Default::default(),
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

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tapped.join("summary.json")).unwrap())
            .unwrap();
    let pool_accepted = std::fs::read_to_string(out.join("pool.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "share_judged" && v["verdict"] == "accepted")
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
    let report = Command::new(exe())
        .arg("report")
        .arg(&tapped)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let md = std::fs::read_to_string(tapped.join("report.md")).unwrap();
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

#[test]
fn a_tap_whose_pool_is_down_closes_each_connection_and_counts_it() {
    let out = out_dir("tap-down");
    let (tap_port, down_port) = (free_port(), free_port());
    let mut tap_run = Killed(
        tap(&out, tap_port, down_port, &["--duration", "3s"])
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
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The three, and the probe that saw the tap listening.
    assert_eq!(summary["upstream_unreachable"], 4, "{summary}");
    assert_eq!(summary["connections"], 4, "{summary}");
}
