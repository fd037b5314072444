//! `stratum-bench run` end to end, as a user runs it: real processes, real sockets.

use crate::common;

use crate::common::{
    events, free_port, http_get, measured_window, median, num, out_dir, run_baseline, succeed,
    summary,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The metrics a run serves once it has every series below: the shares and latencies
/// from the first summary on, the bandwidth once the link has counted bytes twice.
const LIVE_SERIES: [&str; 4] = [
    "stratum_bench_shares_total",
    "stratum_bench_new_prevhash_job_seconds_bucket",
    "stratum_bench_role_cpu_percent",
    "stratum_bench_bandwidth_bytes_per_second",
];

fn get(url: &str) -> Option<String> {
    let addr = url.trim_start_matches("http://").split('/').next()?;
    http_get(addr, "/metrics").filter(|body| LIVE_SERIES.iter().all(|name| body.contains(name)))
}

/// The SV1 tap in front of the built-in pool reads every verdict the pool gave, and the
/// same ones: per verdict, the pool's own `share_judged` in the window equal the tap's
/// (the tap sees each answer microseconds later, well inside the window's edges).
fn sv1_tap_verdicts_are_the_pools_own(dir: &Path) {
    let window = measured_window(dir);
    let verdicts = |role: &str| {
        let mut counts = BTreeMap::<String, u64>::new();
        for e in events(dir, role) {
            if e["kind"] == "share_judged" && window.contains(&e["t_ns"].as_u64().unwrap()) {
                *counts
                    .entry(e["verdict"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
        }
        counts
    };
    let (pool, tap) = (verdicts("pool-sv1"), verdicts("tap-sv1"));
    assert!(pool.get("accepted").is_some_and(|n| *n > 0), "{pool:?}");
    assert_eq!(tap, pool, "the tap's verdicts against the pool's own");
}

/// A new block's path from the run's events, per miner's receipt of a job on a tip of the
/// measured window: the whole (the node's tip to the receipt), the roles' reaction (the
/// tip to the pool's broadcast of a job on it) and the crossing (that broadcast to the
/// receipt: the tap, the link and the miner before its stamp), in ms.
#[derive(Default)]
struct NewBlockPath {
    whole_ms: Vec<f64>,
    reaction_ms: Vec<f64>,
    crossing_ms: Vec<f64>,
}

fn new_block_paths(dir: &Path, side: &str) -> NewBlockPath {
    let window = measured_window(dir);
    let stamp = |e: &serde_json::Value| e["t_ns"].as_u64().unwrap() as i64;
    let ms = |ns: i64| ns as f64 / 1e6;
    // The first broadcast on each tip, and each miner's first receipt of a job on it.
    let mut broadcasts = BTreeMap::new();
    for e in events(dir, &format!("pool-{side}")) {
        if e["kind"] == "job_broadcast" {
            let at = broadcasts
                .entry(e["prev_hash"].to_string())
                .or_insert(i64::MAX);
            *at = (*at).min(stamp(&e));
        }
    }
    let mut receipts = BTreeMap::<String, BTreeMap<u64, i64>>::new();
    for e in events(dir, &format!("miners-{side}")) {
        if e["kind"] == "job_received" {
            let miners = receipts.entry(e["prev_hash"].to_string()).or_default();
            let at = miners
                .entry(e["miner"].as_u64().unwrap())
                .or_insert(i64::MAX);
            *at = (*at).min(stamp(&e));
        }
    }
    let mut path = NewBlockPath::default();
    for tip in events(dir, "node") {
        let hash = tip["hash"].to_string();
        if tip["kind"] != "tip_changed" || !window.contains(&(stamp(&tip) as u64)) {
            continue;
        }
        let (Some(broadcast), Some(miners)) = (broadcasts.get(&hash), receipts.get(&hash)) else {
            continue;
        };
        for at in miners.values() {
            path.whole_ms.push(ms(at - stamp(&tip)));
            path.reaction_ms.push(ms(broadcast - stamp(&tip)));
            path.crossing_ms.push(ms(at - broadcast));
        }
    }
    path
}

/// A pool that misses the node's notice of a tip and finds it by polling or at its next
/// refresh reacts in a second or more; the slowest reaction of a pool told seen here was
/// 57 ms (this host's idle memory, see below).
const TOLD_POOL_REACTION_MS: f64 = 250.0;

/// Holds `side`'s new-block work to physics: every job's crossing takes at least the
/// `delay_ms` configured on its path and at the median at most 10 ms more, the pool
/// reacted to the node's notice (not by polling), and the summary's `p50` is among its
/// receipts' times.
fn new_block_work_crossed_in(dir: &Path, side: &str, delay_ms: f64, p50: f64) {
    let path = new_block_paths(dir, side);
    assert!(
        path.crossing_ms.len() >= 4,
        "{side}: a tip's jobs to every miner, at least"
    );
    let least = path
        .crossing_ms
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    assert!(
        least >= delay_ms,
        "{side}: a job crossed {delay_ms} ms in {least} ms"
    );
    let crossing = median(&mut path.crossing_ms.clone());
    assert!(
        crossing <= delay_ms + 10.0,
        "{side}: the tap, the link and the miner added more than 10 ms to {delay_ms}: {crossing} ms"
    );
    let reaction = median(&mut path.reaction_ms.clone());
    assert!(
        reaction < TOLD_POOL_REACTION_MS,
        "{side}: the pool reacted to new tips in a median {reaction} ms"
    );
    let (fastest, slowest) = (path.whole_ms.iter()).fold((f64::INFINITY, 0.0f64), |(lo, hi), w| {
        (lo.min(*w), hi.max(*w))
    });
    assert!(
        (fastest..=slowest).contains(&p50),
        "{side}: the figure's p50 {p50} ms lies outside its receipts' {fastest}..{slowest} ms \
         (the roles reacted in a median {reaction} ms)"
    );
}

/// `sv1` and a second SV1 side `second` on one network, with `args`: our miners hold all
/// the hashrate, about 16 blocks in the 40 s window, all theirs (the A/A verdict needs 5
/// tips for an interval: fewer in 0.04% of runs; with 5 s blocks, 8 expected, it was fewer
/// in 10% and failed so on a clean clone), over a 40 ms round trip. The farm mixes machines
/// of unequal hashrate behind a 15 ms LAN, the same machines on both sides.
fn sv1_beside(dir: &Path, second: &str, args: &[&str]) -> Command {
    let sides = format!(r#"sides=["sv1", "{second}"]"#);
    let mut all = vec![
        "--duration",
        "45s",
        "--set",
        &sides,
        "--set",
        "warmup=5s",
        "--set",
        "network.hashrate_share=1.0",
        "--set",
        "network.block_interval=2500ms",
        "--set",
        "miners.shares_per_min=30",
        "--set",
        "link.rtt_ms=40",
        "--set",
        r#"miners.hashrate={distribution="lognormal", sigma=0.7}"#,
        "--set",
        r#"miners.lan_delay_ms={distribution="fixed", value=15}"#,
    ];
    all.extend(args);
    run_baseline(dir, &all)
}

/// One run carries the physics and the injected delay, the delay's control in the same run
/// (equal conditions, the same tips): `sv1`, and `sv1-slow`, whose link is 20 ms slower
/// each way (80 ms round trip against 40). While it runs, its live metrics are read once
/// (`live-metrics.txt` in the run directory). The A/A has a run of its own: the verdict
/// corrects for every side's rows together, so a side with a real difference beside it
/// would make the identical side's rows easier to call significant.
fn sv1_and_slow() -> PathBuf {
    common::shared_run("sv1-and-sv1-slow", |dir| {
        let port = free_port();
        let metrics_bind = format!("127.0.0.1:{port}");
        let child = sv1_beside(
            dir,
            "sv1-slow",
            &[
                "--set",
                "link.side_rtt_ms.sv1-slow=80",
                "--metrics-bind",
                &metrics_bind,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let url = format!("http://{metrics_bind}/metrics");
        let deadline = Instant::now() + Duration::from_secs(40);
        let mut metrics = None;
        while Instant::now() < deadline && metrics.is_none() {
            std::thread::sleep(Duration::from_secs(2));
            metrics = get(&url);
        }
        succeed(child.wait_with_output().unwrap());
        let metrics =
            metrics.unwrap_or_else(|| panic!("live metrics with {LIVE_SERIES:?} during the run"));
        std::fs::write(dir.join("live-metrics.txt"), metrics).unwrap();
    })
}

/// A new block's job crosses each side's link one way (20 ms; `sv1-slow`'s 40), then the
/// farm's LAN (15 ms).
const PATH_MS: [(&str, f64); 2] = [("sv1", 35.0), ("sv1-slow", 55.0)];

/// While a run runs, real Prometheus tooling accepts its live metrics, and the page
/// anyone who reaches it reads carries no secret of the run.
#[test]
fn live_metrics_pass_promtool_and_carry_no_secret() {
    let dir = sv1_and_slow();
    let metrics = std::fs::read_to_string(dir.join("live-metrics.txt")).unwrap();
    let node_spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("roles/node.json")).unwrap())
            .unwrap();
    let password = node_spec["rpc_password"]
        .as_str()
        .unwrap_or_else(|| panic!("the node's spec names its password: {node_spec}"));
    assert!(password.len() >= 10 && !metrics.contains(password));
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (make test installs the Debian package prometheus)");
    {
        use std::io::Write;
        promtool
            .stdin
            .take()
            .unwrap()
            .write_all(metrics.as_bytes())
            .unwrap();
    }
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool rejects the metrics: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// The physics check: a tip change reaches the farm no sooner than the path's one-way
/// delay, and the measurement recovers that delay, on every side of the shared run. What
/// the roles take to react to a tip (the node's notice, the pool's template and job) is
/// this host's and counted in the figure, not bounded here: a tip finds the node and the
/// pool idle since the last one, and on this machine memory idle for seconds is slow to
/// touch (8 MiB in 0.5 ms hot, 2.5 to 55 ms after 2 s idle, by the hour; the run's
/// `host.idle_touch`), so the same build reacted in 0.5 to 2 ms one morning and 17 to 37
/// ms that afternoon (a CI run's 77.7 ms for 50). The crossing is the link's, and bounded.
#[test]
fn new_block_jobs_cross_the_link_in_its_one_way_delay() {
    let dir = sv1_and_slow();
    let s = summary(&dir);
    assert_eq!(s["schema"], "stratum-bench.summary.v1");
    let sv1 = &s["sides"]["sv1"];
    assert!(sv1["shares"]["accepted"].as_u64().unwrap() > 0, "{sv1}");
    for (side, path_ms) in PATH_MS {
        let p50 = s["sides"][side]["new_prevhash_job_ms"]["p50"]
            .as_f64()
            .expect("tips in a 40 s window of 2.5 s blocks");
        assert!(
            p50 >= path_ms,
            "{side}: a new block reached the farm faster than light: {p50} ms"
        );
        new_block_work_crossed_in(&dir, side, path_ms, p50);
    }
    // What the roles' reaction includes of the host's is read: its idle memory, probed
    // every 5 s of the 40 s window (a probe that lost its core to a role is dropped: 4 of
    // 10 came through with the other tests of this file beside it).
    let idle = &s["host"]["idle_touch"];
    assert!(
        idle["probes"].as_u64().is_some_and(|n| n >= 1) && num(&idle["hot_ms_per_mib_p50"]) > 0.0,
        "{idle}"
    );
    let bw = &sv1["bandwidth_bytes_per_s"];
    for (site, dir) in [
        ("farm", "tx"),
        ("farm", "rx"),
        ("pool", "tx"),
        ("pool", "rx"),
    ] {
        assert!(
            bw[site][dir].as_f64().unwrap() > 0.0,
            "{site} {dir} bandwidth"
        );
    }
    // The shared node is the network's: in no side's roles.
    assert!(sv1["roles"]["node"].is_null());
    for (role, r) in [
        ("node", &s["network"]["node"]),
        ("pool-sv1", &sv1["roles"]["pool-sv1"]),
        ("link-sv1", &sv1["roles"]["link-sv1"]),
        ("miners-sv1", &sv1["roles"]["miners-sv1"]),
    ] {
        assert!(
            r["cpu_pct"]["count"].as_u64().unwrap() > 30,
            "{role} CPU samples"
        );
        assert!(
            r["rss_bytes"]["p50"].as_f64().unwrap() > 1e6,
            "{role} memory"
        );
    }
    for key in ["template_value_sats", "new_job_ms", "block_propagation_ms"] {
        assert!(sv1[key].is_object(), "summary lacks {key}");
    }
    sv1_tap_verdicts_are_the_pools_own(&dir);
    let tap = &s["link"]["tap_latency_ms"]["tap-sv1"];
    let added = tap["up"]["p50"]
        .as_f64()
        .expect("the SV1 tap's added latency");
    assert!(added < 5.0, "the SV1 tap added {added} ms per line: {tap}");
    assert!(
        s["network"]["template_value_sats"]["count"]
            .as_u64()
            .unwrap()
            > 30
    );
    for file in [
        "report.html",
        "report.md",
        "host.json",
        "scenario.toml",
        "manifest.json",
        "samples.jsonl",
        "events/node.jsonl",
        "events/miners-sv1.jsonl",
    ] {
        assert!(dir.join(file).exists(), "run directory lacks {file}");
    }
}

/// Also the A/A check: a second SV1 side (`sv1-b`) beside the first differs in nothing
/// the verdict calls significant but the node's serving order (under 2 ms).
#[test]
fn a_block_found_by_our_miners_reaches_the_node_with_a_propagation_time() {
    let dir = out_dir("block");
    succeed(sv1_beside(&dir, "sv1-b", &[]).output().unwrap());
    let s = summary(&dir);
    for side in ["sv1", "sv1-b"] {
        let summary = &s["sides"][side];
        // A new block's job crosses the link one way (20 ms), then the farm's LAN (15 ms).
        let after_block = summary["new_prevhash_job_ms"]["p50"].as_f64().unwrap();
        new_block_work_crossed_in(&dir, side, 35.0, after_block);
        let tenths = summary["by_hashrate"]
            .as_array()
            .expect("miners by hashrate");
        assert_eq!(tenths.len(), 4, "four miners, four groups: {tenths:?}");
        let factors: Vec<f64> = tenths
            .iter()
            .map(|g| g["hashrate_factor"].as_f64().unwrap())
            .collect();
        assert!(
            factors.windows(2).all(|w| w[0] <= w[1]) && factors[3] > 1.5 * factors[0],
            "{side}: unequal machines, smallest first: {factors:?}"
        );
    }
    // Each side expects 8 blocks in the window (Poisson): the two together must have one,
    // and each that has one crossed the link.
    let mut accepted = 0;
    for side in ["sv1", "sv1-b"] {
        let summary = &s["sides"][side];
        let blocks = summary["blocks"]["accepted"].as_u64().unwrap();
        accepted += blocks;
        if blocks > 0 {
            let p50 = summary["block_propagation_ms"]["p50"].as_f64().unwrap();
            assert!(
                p50 >= 35.0,
                "{side}: a block crossed a 15 ms LAN and a 20 ms link in {p50} ms"
            );
            assert!(p50 < 100.0, "{side}: {p50} ms");
        }
    }
    assert!(
        accepted > 0,
        "no block of ours reached the node: {}",
        s["sides"]
    );

    let rows = s["verdict"]["sv1-b"]
        .as_array()
        .expect("sv1-b set against sv1");
    let after_block = rows
        .iter()
        .find(|r| r["metric"] == "new_prevhash_job_ms")
        .unwrap();
    assert!(
        after_block["ci"].is_array(),
        "enough tips for an interval: {after_block}"
    );
    // The node serves its clients one after another, so within one run identical sides
    // can differ by a fraction of a ms in when their jobs come (A/A runs here: up to about
    // 1 ms), and compared paired by tip such a difference is real and can be significant;
    // across seeds the start order, and with it the sign, is drawn at random. Whatever the
    // order, identical sides stay within 2 ms of each other, a tenth of the link's one
    // way. A block crosses the same processes the other way, each side's own few blocks
    // (unpaired): clean checks here found identical sides 0.45 ms apart over 8 and 7
    // blocks (significant at that spread) and 3.2 ms apart over 5 and 4 (too few to say).
    //
    // But every latency here ends in a role's first work after a rest (a pool's reaction
    // to a tip, its judging of a share, its submission of a block), and a host that is
    // saturated, or slow to hand back idle memory (see the physics check above), makes
    // that slow by turns, each side's pool apart and the busier one less: a clean check
    // read new-job times -2.12 ms apart (interval -7.33 to 0.73, not significant), and a
    // run with both flags the side with 15 blocks 6.7 ms sooner than the side with 9
    // (interval -10.1 to -3.6: its pool took 2 to 12 ms from a block's share to the node,
    // the other's 7 to 12). The run says so (the host's warning, its idle-memory note),
    // and only then may a latency differ by 2 ms or more and be significant; never by half
    // the link's one way (10 ms), nor paired by tip by that much at all. The miners' own share traffic follows each fleet's
    // hashing thread, which a saturated host starves unevenly (a clean check with every
    // test of this file at once: one fleet's miner sent 9 shares, the other's 36): it may
    // differ on a saturated host only. Nothing else differs.
    let saturated = s["host"]["warning"].is_string();
    let host_flagged = saturated || s["host"]["idle_touch"]["note"].is_string();
    for row in rows {
        let metric = row["metric"].as_str().unwrap();
        let latencies = [
            "new_job_ms",
            "new_prevhash_job_ms",
            "stale_wait_ms",
            "share_answer_ms",
            "block_propagation_ms",
        ];
        if latencies.contains(&metric) {
            let d = row["delta"].as_f64().unwrap_or(0.0);
            let shown = row["significant"] == true;
            let allowed_ms = if host_flagged { 10.0 } else { 2.0 };
            assert!(
                !shown || d.abs() < allowed_ms,
                "A/A differs by {d} ms: {row}"
            );
            // Paired by tip, a difference of 10 ms would show however the tips spread;
            // each side's own few blocks may lie further apart and show nothing.
            let paired = metric != "block_propagation_ms";
            assert!(!paired || d.abs() < 10.0, "A/A differs by {d} ms: {row}");
        } else if !(saturated && metric == "farm_tx_bytes_per_s") {
            // The verdict flags a row at 5% after Benjamini-Hochberg, so identical sides
            // get a flag somewhere in 5.5% of runs (the calibration test measures it): a
            // check that nothing is flagged would fail one clean run in 18 (a clean check
            // did: acceptance 98.9% against 89.7%, 1 rejected share against 11, p =
            // 0.002). This check is set to fail one in a hundred: no row of the ten under
            // p = 0.001. Calibration at 5% is the calibration tests' to measure.
            let p = row["p_value"].as_f64().unwrap_or(1.0);
            assert!(p >= FAMILY_P, "A/A differs: {row}");
        }
    }
}

/// The least p a row of an A/A run may have: with the verdict's ten rows, identical
/// sides go under it somewhere in at most 1% of runs (Bonferroni).
const FAMILY_P: f64 = 0.001;

/// An injected difference comes out as physics says: `sv1-slow` is `sv1` but for a link
/// 20 ms slower each way (80 ms round trip against 40). After every block its miners get
/// work 20 ms later, they wait 20 ms longer on the dead tip, and that is priced as 20 ms
/// of every 600 s block.
#[test]
fn an_injected_delay_comes_out_as_physics_says() {
    let dir = sv1_and_slow();
    let s = summary(&dir);
    let row = |metric: &str| {
        (s["verdict"]["sv1-slow"].as_array().unwrap().iter())
            .find(|r| r["metric"] == metric)
            .unwrap_or_else(|| panic!("{metric}"))
            .clone()
    };
    // 20 ms more each way: new-block work 20 ms later (within 1.5 ms).
    let job = row("new_prevhash_job_ms");
    let d = job["delta"].as_f64().unwrap();
    assert!(
        (d - 20.0).abs() < 1.5,
        "new-block job: {d} ms for 20: {job}"
    );
    assert_eq!(job["method"], "paired", "{job}");
    // The wait on the dead tip, 20 ms longer, but where the next tip follows within the
    // slow side's wait: there both sides' waits end at that tip (a miner without work on
    // a tip counts until the next), and the difference is less. With k of the window's n
    // tips followed within 100 ms, the mean difference lies between 20 (n - k) / n and 20
    // (within 1.5 ms).
    let (n, k) = tips_followed_within(&dir, 100_000_000);
    let stale = row("stale_wait_ms");
    let d_stale = stale["delta"].as_f64().unwrap();
    let least = 20.0 * (n - k) as f64 / n as f64;
    assert!(
        d_stale > least - 1.5 && d_stale < 21.5,
        "stale wait: {d_stale} ms for 20 ({k} of {n} tips cut short): {stale}"
    );
    assert_eq!(stale["method"], "paired", "{stale}");
    // Worth, by hand: d ms after every block is d / 600,000 of the farm's revenue: at the
    // default 1 PH/s on 1 ZH/s, 0.000144 blocks a day of the run's block value V,
    // -0.000144 x V x d / 600,000 sats a day for the measured d.
    let v = s["worth_assumptions"]["block_value_sats"].as_f64().unwrap();
    let expected = -0.000_144 * v * d_stale / 600_000.0;
    let stale_sats = (s["worth"]["sv1-slow"].as_array().unwrap().iter())
        .find(|w| w["metric"] == "stale_wait_ms")
        .unwrap()["sats_per_day"]
        .as_f64()
        .unwrap();
    assert!(
        ((stale_sats - expected) / expected).abs() < 0.001,
        "{stale_sats} sats a day against {expected} by hand"
    );
    let conclusion = s["conclusions"]["sv1-slow"]["text"].as_str().unwrap();
    assert!(conclusion.contains("ms later"), "{conclusion}");
}

/// The network's tips in the run's window, and how many of them the next tip followed
/// within `gap_ns`.
fn tips_followed_within(dir: &Path, gap_ns: u64) -> (usize, usize) {
    let window = measured_window(dir);
    let tips: Vec<u64> = (events(dir, "node").iter())
        .filter(|e| e["kind"] == "tip_changed")
        .map(|e| e["t_ns"].as_u64().unwrap())
        .collect();
    let in_window: Vec<usize> = (0..tips.len())
        .filter(|&i| window.contains(&tips[i]))
        .collect();
    let followed = (in_window.iter())
        .filter(|&&i| tips.get(i + 1).is_some_and(|next| next - tips[i] < gap_ns))
        .count();
    (in_window.len(), followed)
}

#[test]
fn a_role_that_dies_is_recorded_and_the_run_finishes() {
    let dir = out_dir("death");
    let child = run_baseline(&dir, &["--duration", "12s", "--set", "warmup=2s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Find the pool's process by its spec file once it runs, and kill it.
    let spec = dir.join("roles/pool-sv1.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        assert!(Instant::now() < deadline, "the pool role never started");
        if let Some(pid) = find_process(&spec) {
            if dir.join("events/miners-sv1.jsonl").exists() {
                break pid;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: killing a process this test's child started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    succeed(child.wait_with_output().unwrap());
    let s = summary(&dir);
    assert_eq!(
        s["unmatched"]["role_exited:pool-sv1"], 1,
        "{}",
        s["unmatched"]
    );
}

/// The host's CPU loaded on purpose (a busy thread on every core, at low priority so the
/// roles still run) through the whole run: the host's samples show it, and the verdict
/// says the host was saturated and marks its latencies.
#[test]
fn a_saturated_host_is_flagged_on_the_verdict() {
    let dir = out_dir("saturated");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cores = std::thread::available_parallelism().unwrap().get();
    let load: Vec<_> = (0..cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // SAFETY: lowers this thread's own priority.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                x
            })
        })
        .collect();
    let args = [
        "--duration",
        "12s",
        "--set",
        "warmup=3s",
        "--set",
        r#"sides=["sv1", "sv1-b"]"#,
        "--set",
        "network.block_interval=2s",
    ];
    let out = run_baseline(&dir, &args).output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    succeed(out);
    let s = summary(&dir);
    let host = &s["host"];
    assert!(host["busy_mean_pct"].as_f64().unwrap() > 90.0, "{host}");
    assert!(host["saturated_share"].as_f64().unwrap() > 0.5, "{host}");
    let warning = host["warning"].as_str().expect("a warning");
    assert!(
        warning.starts_with("the host's CPU was over 90% busy"),
        "{warning}"
    );
    assert!(stdout.contains("WARNING host saturated"), "{stdout}");
    assert!(
        stdout.contains("[host-saturated]"),
        "latency rows are marked: {stdout}"
    );
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let host_samples = samples
        .lines()
        .filter(|l| l.contains(r#""role":"host""#))
        .count();
    assert!(host_samples >= 12, "a host sample a second: {host_samples}");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("## Host") && report.contains("Saturated:"),
        "the report says so"
    );
}

/// The harness killed with SIGKILL (nothing of its own can run) at three moments: while
/// its roles start, in the warm-up, and in the measured window. Each time its roles stop
/// with it (none is left running), and `report` renders what the run directory holds,
/// marked partial.
#[test]
fn a_harness_killed_at_any_moment_leaves_a_run_report_renders_as_partial() {
    for (moment, wait_for) in [
        ("starting", "roles/node.json"),
        ("warm-up", "events/miners-sv1.jsonl"),
        ("window", "events/miners-sv1.jsonl"),
    ] {
        let dir = out_dir(&format!("sigkill-{moment}"));
        let mut child = run_baseline(&dir, &["--duration", "30s", "--set", "warmup=3s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !dir.join(wait_for).exists() {
            assert!(Instant::now() < deadline, "{moment}: no {wait_for}");
            std::thread::sleep(Duration::from_millis(20));
        }
        if moment == "window" {
            // Past the 3 s warm-up: the window has measured a little.
            std::thread::sleep(Duration::from_secs(5));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(pid) = find_process(&dir.join("roles")) {
            assert!(
                Instant::now() < deadline,
                "{moment}: role process {pid} outlived the harness"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let out = Command::new(common::exe())
            .arg("report")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{moment}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("Partial run"), "{moment}: {md}");
    }
}

fn find_process(spec: &Path) -> Option<i32> {
    let needle = spec.to_str()?;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline)
            .contains(needle)
            .then_some(pid)
    })
}

#[test]
fn bad_scenarios_fail_before_anything_starts() {
    let dir = out_dir("bad");
    let out = run_baseline(&dir, &["--set", "link.rtt_ms=fast"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("link.rtt_ms"));
    assert!(!dir.exists(), "nothing was started");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = run_baseline(&dir, &["--metrics-bind", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&port.to_string()) && err.contains("--metrics-bind"),
        "{err}"
    );
    assert!(
        !dir.exists(),
        "a run that could not start leaves no directory"
    );
}
