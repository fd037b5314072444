//! A real SV1 miner, not ours, pointed at the built-in pool through the link as the
//! README tells a new user: para 0.6.0's CPU miner (`para miner`, from crates.io, the
//! Parasite pool project's own Stratum V1 implementation with version rolling), which
//! `make test` installs into the build cache and names in STRATUM_BENCH_SV1_MINER.

use crate::common;

use crate::common::{free_port, out_dir, run_scenario, Killed};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_real_sv1_miner_mines_through_the_link_and_is_counted() {
    let miner = std::env::var("STRATUM_BENCH_SV1_MINER").expect(
        "STRATUM_BENCH_SV1_MINER names a real SV1 miner (make test installs para 0.6.0 and sets it)",
    );
    let out = out_dir("real-miner");
    let farm_port = free_port();
    let mut run = Killed(
        run_scenario(
            "sv1-baseline",
            &out,
            &[
                "--duration",
                "40s",
                "--set",
                &format!("link.farm_port={farm_port}"),
                "--set",
                "network.block_interval=10s",
                // The pool's start difficulty: 200,000 hashes a share, well above para's
                // batch of 10,000 hashes, the only place its throttle acts.
                "--set",
                "miners.hashes_per_share=200000",
            ],
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(out.with_extension("run.log")).unwrap())
        .spawn()
        .unwrap(),
    );
    // The link listens once the run's roles are up.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", farm_port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the link never listened on {farm_port}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // para wants a payout address and a worker name, as pools that pay by username do.
    let worker = "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080.para";
    let _miner = Killed(
        Command::new(&miner)
            .args([
                "miner",
                &format!("127.0.0.1:{farm_port}"),
                "--username",
                worker,
                "--password",
                "x",
                "--cpu-cores",
                "1",
                // A share every 4 s or so: para submits one share per round trip (100 ms
                // over this link), so a miner far faster than its difficulty queues
                // shares that go stale.
                "--throttle",
                "50K",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(out.with_extension("miner.log")).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {miner}: {e}")),
    );
    let status = run.0.wait().unwrap();
    assert!(
        status.success(),
        "the run failed: {}",
        std::fs::read_to_string(out.with_extension("run.log")).unwrap_or_default()
    );

    // The pool judged the real miner's shares (by its worker name), and counted them.
    let pool_events = std::fs::read_to_string(out.join("events/pool-sv1.jsonl")).unwrap();
    let judged: Vec<serde_json::Value> = pool_events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "share_judged" && v["worker"] == worker)
        .collect();
    let accepted = judged.iter().filter(|v| v["verdict"] == "accepted").count();
    let log = std::fs::read_to_string(out.with_extension("miner.log")).unwrap_or_default();
    assert!(
        accepted > 0,
        "{} shares of the real miner judged, none accepted; its log ends:\n{}",
        judged.len(),
        log.lines().rev().take(15).collect::<Vec<_>>().join("\n")
    );
    // The summary counts every share the pool accepted in the measured window, the real
    // miner's among them.
    let window = common::measured_window(&out);
    let in_window = judged
        .iter()
        .filter(|v| v["verdict"] == "accepted")
        .filter(|v| window.contains(&v["t_ns"].as_u64().unwrap()))
        .count() as u64;
    assert!(
        in_window > 0,
        "the real miner's shares fell in the measured window"
    );
    let counted = common::summary(&out)["sides"]["sv1"]["shares"]["accepted"]
        .as_u64()
        .unwrap();
    assert!(
        counted >= in_window,
        "the summary counts the real miner's {in_window} accepted shares: {counted}"
    );
}
