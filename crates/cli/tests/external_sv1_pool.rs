//! An existing bitcoind-RPC SV1 pool, unmodified, mines on our node with our miners:
//! stratum-pool-sha256 2.1.3 (a maintained fork of node-stratum-pool, NOMP's pool core),
//! installed from npm at the version the lockfile pins.

mod common;

use common::{exe, free_port, start_node, Killed};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The pool's package, installed once under the target directory (never in the repo).
fn installed_pool() -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/external-sv1-pool");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("external-sv1-pool");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["package.json", "package-lock.json", "pool.js"] {
        std::fs::copy(fixture.join(f), dir.join(f)).unwrap();
    }
    if !dir.join("node_modules/stratum-pool-sha256").exists() {
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("npm is installed (make test installs Debian's nodejs and npm)");
        assert!(
            out.status.success(),
            "npm ci failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dir
}

/// The pool running on its own node, and where each is reached.
struct PoolOnNode {
    _node: Killed,
    _pool: Killed,
    /// The node's RPC URL (user `u`, password `p`).
    url: String,
    /// Where miners connect.
    addr: String,
    /// The test's scratch directory, with the pool's log.
    work: PathBuf,
}

/// A node started with `node_args`, and the pool on it setting `difficulty` for every
/// miner; `name` names the scratch directory.
fn pool_on_node(name: &str, node_args: &[&str], difficulty: &str) -> PoolOnNode {
    let pool_dir = installed_pool();
    let work = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let (node, url) = start_node(node_args);
    let rpc_port = url.rsplit(':').next().unwrap().to_string();
    let pool_port = free_port();
    let pool = Killed(
        Command::new("node")
            .arg("pool.js")
            .current_dir(&pool_dir)
            .env("POOL_PORT", pool_port.to_string())
            .env("POOL_DIFF", difficulty)
            .env("NODE_RPC_PORT", &rpc_port)
            .env("RPC_USER", "u")
            .env("RPC_PASSWORD", "p")
            .stdout(std::fs::File::create(work.join("pool.log")).unwrap())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node (Node.js) is installed"),
    );
    std::thread::sleep(Duration::from_secs(3));
    PoolOnNode {
        _node: node,
        _pool: pool,
        url,
        addr: format!("127.0.0.1:{pool_port}"),
        work,
    }
}

#[test]
fn the_fanout_bench_measures_an_unmodified_sv1_pool_by_address() {
    // Only the bench's blocks: each round mines one on the pool's node.
    let pool = pool_on_node(
        "external-fanout",
        &["--block-interval", "24h", "--initial-txs", "300"],
        "0.000001",
    );
    let via = &pool.addr;
    let (stdout, results) = common::bench(
        "fanout-external",
        &[
            "fanout",
            "--miners",
            "20",
            "--via",
            via,
            "--node-rpc",
            &pool.url,
            "--rpc-user",
            "u",
            "--rpc-password",
            "p",
            "--rounds",
            "2",
        ],
        "fanout.json",
    );
    let r = &results[0];
    assert_eq!(r["via"]["sv1-at"], via.as_str(), "{r}");
    assert_eq!(r["rounds"], 2, "both blocks reached the miners: {r}");
    assert_eq!(r["missing"], 0, "{r}");
    assert_eq!(r["delivery_ms"]["count"], 40);
    // From the bench asking for the block: the pool learns of it (it polls every 500 ms)
    // before any miner can have work on it.
    assert!(r["first_miner_ms"]["p50"].as_f64().unwrap() > 0.0, "{r}");
    // The pool is not a process of ours: its CPU is not claimed.
    assert!(r["sender_cpu_ms_per_round"].is_null(), "{r}");
    assert!(
        stdout.contains(&format!("| {via} | tcp | 20 (1) | 2 |")),
        "{stdout}"
    );
}

#[test]
fn the_pool_bench_loads_an_unmodified_sv1_pool_and_reads_its_cpu() {
    // Blocks far out of reach (the pool's block-candidate path throws), shares cheap.
    let pool = pool_on_node(
        "external-pool-bench",
        &["--block-interval", "24h", "--difficulty", "1"],
        "0.00000001",
    );
    let (_, report) = common::bench(
        "pool-bench-external",
        &[
            "pool",
            "--target",
            &pool.addr,
            "--share-difficulty",
            "0.00000001",
            "--miners",
            "20",
            "--rate",
            "100",
            "--step",
            "3s",
            "--max-steps",
            "1",
            "--p99-bound-ms",
            "60000",
        ],
        "pool-bench.json",
    );
    let step = &report["steps"][0];
    assert!(step["accepted"].as_u64().unwrap() > 0, "{step}");
    // Found by the socket it listens on: the pool's own CPU and memory, though it is not
    // a process of ours.
    assert!(step["pool_cpu_pct"].as_f64().is_some(), "{step}");
    assert!(step["pool_rss_bytes"].as_u64().unwrap() > 0, "{step}");
}

#[test]
fn an_unmodified_sv1_pool_mines_on_the_node() {
    // Blocks out of our miners' reach: the pool's own block-candidate path throws
    // (ReferenceError in its jobManager.js), which is not what this test is about.
    let pool = pool_on_node(
        "external-pool",
        &[
            "--block-interval",
            "4s",
            "--difficulty",
            "0.01",
            "--initial-txs",
            "300",
        ],
        "0.000001",
    );

    let spec = pool.work.join("fleet.json");
    std::fs::write(
        &spec,
        serde_json::json!({"kind": "sv1-miners", "config": {
            "pool": pool.addr, "miners": 2, "hashrate": 1000.0,
            "worker_prefix": "ext", "ramp": {"secs": 0, "nanos": 0}, "hash_threads": 1}})
        .to_string(),
    )
    .unwrap();
    let events = pool.work.join("fleet.jsonl");
    let _fleet = Killed(
        Command::new(exe())
            .args([
                "role",
                "--spec",
                spec.to_str().unwrap(),
                "--events",
                events.to_str().unwrap(),
                "--name",
                "miners",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    // Shares accepted by that pool, and jobs on more than one tip (it followed blocks).
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let text = std::fs::read_to_string(&events).unwrap_or_default();
        let accepted = text
            .lines()
            .filter(|l| l.contains("share_answered") && l.contains("\"accepted\":true"))
            .count();
        let tips: std::collections::HashSet<String> = text
            .lines()
            .filter(|l| l.contains("job_received"))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["prev_hash"].as_str().map(str::to_string))
            .collect();
        if accepted >= 2 && tips.len() >= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after 45 s: {accepted} shares accepted, jobs on {} tips; pool log: {}",
            tips.len(),
            std::fs::read_to_string(pool.work.join("pool.log"))
                .unwrap_or_default()
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}
