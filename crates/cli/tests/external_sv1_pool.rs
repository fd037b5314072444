//! An existing bitcoind-RPC SV1 pool, unmodified, mines on our node with our miners:
//! stratum-pool-sha256 2.1.3 (a maintained fork of node-stratum-pool, NOMP's pool core),
//! installed from npm at the version the lockfile pins, started by the NOMP adapter's
//! launcher (`pools/nomp`).

use crate::common;

use crate::common::{exe, free_port, start_node, Killed};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The pool's package (stratum-bench's NOMP adapter, `pools/nomp`), installed once under
/// the target directory (never in the repo).
fn installed_pool() -> PathBuf {
    let adapter = crate::common::crate_dir().join("../../pools/nomp");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("external-sv1-pool");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["package.json", "package-lock.json", "pool.js"] {
        std::fs::copy(adapter.join(f), dir.join(f)).unwrap();
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
    let config = work.join("pool.json");
    std::fs::write(
        &config,
        serde_json::json!({
            "listen_port": pool_port, "difficulty": difficulty.parse::<f64>().unwrap(),
            "rpc_host": "127.0.0.1", "rpc_port": rpc_port.parse::<u16>().unwrap(),
            "rpc_user": "u", "rpc_password": "p",
            "payout_address": "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080",
            "block_refresh_ms": 500, "job_rebroadcast_s": 55,
        })
        .to_string(),
    )
    .unwrap();
    let pool = Killed(
        Command::new("node")
            .arg("pool.js")
            .arg(&config)
            .current_dir(&pool_dir)
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
    // Only the bench's blocks: each round mines one on the pool's node. The miners' own
    // shares are far from a block (the pool's block-candidate path throws, see below; at
    // the node's regtest-easy default a share was one, the pool died and the second
    // round reached no miner: a two-at-a-time run here).
    let pool = pool_on_node(
        "external-fanout",
        &[
            "--block-interval",
            "24h",
            "--difficulty",
            "1",
            "--initial-txs",
            "300",
        ],
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
            "worker_prefix": "ext", "ramp": 0, "hash_threads": 1}})
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

/// `run` with `args` of a scenario, the adapters installed in the build cache.
fn run_pools(scenario: &Path, out: &Path, args: &[&str]) -> std::process::Output {
    Command::new(exe())
        .arg("run")
        .arg(scenario)
        .args(args)
        .arg("--out")
        .arg(out)
        .args(["--metrics-bind", "127.0.0.1:0"])
        .env(
            "STRATUM_BENCH_CACHE",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cache"),
        )
        .output()
        .unwrap()
}

/// scenarios/sv1-pools.toml, short: our SV1 pool and NOMP's pool core side by side with
/// configuration C on one network and identical links, each measured at its tap. A fourth
/// side runs the same pool as any pool is given: a quoted `command` run in a `workdir`,
/// its config written at `config_path` there, a cookie file beside the run's roles.
#[test]
fn our_sv1_pool_and_nomp_run_side_by_side_with_sv2_c() {
    let work = std::env::temp_dir().join(format!("sv1-pools-cmd-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let template =
        std::fs::read_to_string(crate::common::crate_dir().join("../../pools/nomp/config.json"))
            .unwrap();
    std::fs::write(work.join("pool.json.in"), template).unwrap();
    let pool_dir = installed_pool();
    let scenario = std::fs::read_to_string(common::scenario("sv1-pools"))
        .unwrap()
        .replace(
            r#"sides = ["sv1", "sv1-nomp", "sv2-c"]"#,
            r#"sides = ["sv1", "sv1-nomp", "sv2-c", "sv1-cmd"]"#,
        )
        + &format!(
            "\n[sv1_pools.cmd]\ncommand = \"node '{}' \\\"{{config}}\\\"\"\nconfig_template = \"pool.json.in\"\nworkdir = \"{{run_dir}}/cmd-pool\"\nconfig_path = \"conf/pool.json\"\nname = \"stratum-pool-sha256 as a command\"\n",
            pool_dir.join("pool.js").display()
        );
    std::fs::write(work.join("scenario.toml"), scenario).unwrap();
    let dir = common::out_dir("sv1-pools");
    let out = run_pools(
        &work.join("scenario.toml"),
        &dir,
        &[
            "--duration",
            "30s",
            "--set",
            "warmup=10s",
            "--set",
            "network.block_interval=5s",
        ],
    );
    common::succeed(out);
    let s = common::summary(&dir);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["sides"]["sv1-nomp"]["pool_software"], "nomp");
    assert!(manifest["sides"]["sv1"]["pool_software"]
        .as_str()
        .unwrap()
        .contains("built-in"));
    // The command's pool: its config where it was told, in its workdir; the cookie holds
    // the credentials its config was given (its shares were accepted, so they work); the
    // policy read from its config says what it was given.
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("cmd-pool/conf/pool.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("roles/pool-sv1-cmd.cookie")).unwrap(),
        format!(
            "{}:{}",
            config["rpc_user"].as_str().unwrap(),
            config["rpc_password"].as_str().unwrap()
        )
    );
    let policy = manifest["sides"]["sv1-cmd"]["pool_policy"]
        .as_str()
        .unwrap();
    assert!(
        policy.contains("no ZMQ in its config")
            && policy.contains("same-tip refresh set to the run's")
            && policy.contains("difficulty set to the side's"),
        "{policy}"
    );
    secrets_stay_in_private_files(&dir, &["roles", "cmd-pool"]);
    for side in ["sv1", "sv1-nomp", "sv2-c", "sv1-cmd"] {
        let summary = &s["sides"][side];
        assert!(
            summary["shares"]["accepted"].as_u64().unwrap() > 0,
            "{side}: {}",
            summary["shares"]
        );
        // The same share rate on every side (20 a miner a minute: NOMP gets the miners'
        // difficulty as its fixed one); about 40 shares a side, so 50-150% is 3 sd.
        let rate = summary["shares"]["per_miner_min"].as_f64().unwrap();
        assert!(
            (10.0..30.0).contains(&rate),
            "{side}: {rate} shares a miner a minute"
        );
        // Work after a block crosses the link one way (100 ms round trip) at least.
        let after_block = &summary["new_prevhash_job_ms"];
        assert!(after_block["count"].as_u64().unwrap() > 0, "{side}");
        assert!(
            after_block["p50"].as_f64().unwrap() >= 50.0,
            "{side}: {after_block}"
        );
    }
    // The pool is a role of the run: its CPU and memory are sampled like ours.
    let nomp = &s["sides"]["sv1-nomp"]["roles"]["pool-sv1-nomp"];
    assert!(nomp["cpu_pct"]["count"].as_u64().unwrap() > 0, "{nomp}");
    assert!(nomp["rss_bytes"]["mean"].as_f64().unwrap() > 1e6, "{nomp}");
    // NOMP polls its node every 500 ms: its miners get new-block work later than ours.
    let p50 = |side: &str| {
        s["sides"][side]["new_prevhash_job_ms"]["p50"]
            .as_f64()
            .unwrap()
    };
    assert!(
        p50("sv1-nomp") > p50("sv1"),
        "{} vs {}",
        p50("sv1-nomp"),
        p50("sv1")
    );
}

/// A scenario with an SV1 side on `[sv1_pools.x]` given by `pool` (TOML lines).
fn scenario_with_pool(name: &str, pool: &str) -> PathBuf {
    let base = std::fs::read_to_string(common::scenario("sv1-baseline")).unwrap();
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scenario.toml");
    let text = base.replace(r#"sides = ["sv1"]"#, r#"sides = ["sv1", "sv1-x"]"#);
    std::fs::write(&path, format!("{text}\n[sv1_pools.x]\n{pool}\n")).unwrap();
    path
}

#[test]
fn an_sv1_pool_that_exits_at_once_fails_the_run_before_the_window_naming_it() {
    let scenario = scenario_with_pool("pool-exits", r#"command = "false""#);
    let dir = common::out_dir("pool-exits");
    let out = run_pools(&scenario, &dir, &["--duration", "20s"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("role pool-sv1-x (`false`) exited")
            && stderr.contains(&dir.join("logs/pool-sv1-x.log").display().to_string()),
        "{stderr}"
    );
    assert!(!dir.join("summary.json").exists(), "no window was measured");
}

#[test]
fn a_config_template_with_an_unknown_placeholder_fails_naming_it() {
    let scenario = scenario_with_pool(
        "pool-placeholder",
        "command = \"mypool --config {config}\"\nconfig_template = \"pool.conf\"",
    );
    std::fs::write(
        scenario.parent().unwrap().join("pool.conf"),
        "port = {listen_port}\nsecret = {nope}\n",
    )
    .unwrap();
    let dir = common::out_dir("pool-placeholder");
    let out = run_pools(&scenario, &dir, &["--duration", "20s"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sv1_pools.x.config_template")
            && stderr.contains("unknown placeholder {nope}"),
        "{stderr}"
    );
    assert!(!dir.exists(), "nothing started");
}

/// The run's secrets (the RPC password, from the cookie given to a pool, and the SRI
/// pool's authority secret key) are in files only their owner reads (the roles directory
/// is 0700, its files 0600) and in no other file of the run: not the report, summary,
/// manifest, events, logs or scenario, which people share. `private` are the run
/// directory's folders that hold them (roles, a pool's workdir).
fn secrets_stay_in_private_files(dir: &Path, private: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let cookie = std::fs::read_to_string(dir.join("roles/pool-sv1-cmd.cookie")).unwrap();
    let password = cookie.split_once(':').unwrap().1.to_string();
    let pool: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("roles/pool-sv2-c.json")).unwrap())
            .unwrap();
    let key = pool["params"]["authority_secret"]
        .as_str()
        .unwrap_or_else(|| panic!("the pool's spec names its key: {pool}"))
        .to_string();
    assert!(password.len() >= 10 && key.len() >= 40);
    assert_eq!(mode(&dir.join("roles")), 0o700);
    let mut files = vec![dir.to_path_buf()];
    let mut shareable = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let relative = path.strip_prefix(dir).unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if private.iter().any(|p| relative.starts_with(p)) {
            if relative.starts_with("roles") {
                assert_eq!(mode(&path), 0o600, "{}", relative.display());
            }
            continue;
        }
        shareable += 1;
        for (what, secret) in [("the RPC password", &password), ("the authority key", &key)] {
            assert!(
                !text.contains(secret.as_str()),
                "{what} is in {}",
                relative.display()
            );
        }
    }
    assert!(shareable > 20, "{shareable} shareable files looked at");
}
