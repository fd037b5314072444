//! Starting the real binary the way a user does, for the end-to-end tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A short run's arguments for the tests that run whole roles apart (containers, swarms,
/// deployments): tips every 2 s or so (the network's and the sides' own blocks) for 30 s,
/// enough that each side sees some in the window (at 4 s over 20 s, one run in a hundred
/// saw none).
pub const SHORT_RUN_WITH_TIPS: [&str; 6] = [
    "--duration",
    "30s",
    "--set",
    "warmup=10s",
    "--set",
    "network.block_interval=2s",
];

/// `docker ARGS` on this host's daemon, required to succeed; its stdout.
pub fn docker(args: &[&str]) -> String {
    docker_on(None, args)
}

/// `docker ARGS` with `DOCKER_HOST` set when given, required to succeed; its stdout.
pub fn docker_on(docker_host: Option<&str>, args: &[&str]) -> String {
    let mut docker = Command::new("docker");
    if let Some(host) = docker_host {
        docker.env("DOCKER_HOST", host);
    }
    let out = docker
        .args(args)
        .output()
        .expect("docker runs (install docker.io; `make test` starts the daemon when none runs)");
    assert!(
        out.status.success(),
        "docker {args:?} ({}): {}",
        docker_host.unwrap_or("this host's daemon"),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_stratum-bench")
}

/// A loopback port free now, taken as the harness takes its roles' (below the range the
/// kernel hands outgoing connections): tests run beside each other, and one opens 500
/// connections, any of which could take a port picked from that range before it is bound.
pub fn free_port() -> u16 {
    harness::limits::free_local_port().unwrap().port()
}

/// A child process killed when the test ends, however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `stratum-bench node` on ephemeral ports (user `u`, password `p`) and its RPC URL.
pub fn start_node(args: &[&str]) -> (Killed, String) {
    let (node, ready) = start_node_announced(args);
    let url = ready
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the announcement names the RPC address")
        .to_string();
    (node, url)
}

/// `stratum-bench node` on ephemeral ports (user `u`, password `p`) with `args`, its
/// status lines on a pipe.
pub fn node_command(args: &[&str]) -> Command {
    let mut command = Command::new(exe());
    command
        .args(["node", "--rpc-bind", "127.0.0.1:0", "--rpc-user", "u"])
        .args(["--rpc-password", "p", "--zmq-bind", "tcp://127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

/// `stratum-bench node` as [`start_node`] starts it, and its `node ready` line (RPC URL,
/// ZMQ endpoint, ...).
pub fn start_node_announced(args: &[&str]) -> (Killed, String) {
    let mut child = node_command(args).spawn().expect("the binary starts");
    let line = announcement(&mut child, "node ready").expect("the node announces itself");
    (Killed(child), line)
}

/// The first line of `child`'s stdout that starts with `prefix`. The rest is read and
/// dropped by a thread: a pipe closed under the child would fail its later lines.
fn announcement(child: &mut Child, prefix: &str) -> Option<String> {
    let mut lines = BufReader::new(child.stdout.take()?).lines();
    let found = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with(prefix));
    std::thread::spawn(move || lines.for_each(drop));
    found
}

/// `stratum-bench role` of `spec` (a role spec's JSON), recording into `events`, once it
/// announces itself ready: the process and the addresses it announced.
pub fn start_role(
    name: &str,
    spec: &serde_json::Value,
    events: &Path,
) -> (Killed, serde_json::Value) {
    let spec_file = events.with_extension("spec.json");
    std::fs::write(&spec_file, spec.to_string()).unwrap();
    let mut child = Command::new(exe())
        .arg("role")
        .arg("--spec")
        .arg(&spec_file)
        .arg("--events")
        .arg(events)
        .args(["--name", name])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(events.with_extension("log")).unwrap())
        .spawn()
        .expect("the binary starts");
    let line =
        announcement(&mut child, "READY ").unwrap_or_else(|| panic!("role {name} never got ready"));
    let addresses = serde_json::from_str(&line["READY ".len()..]).unwrap();
    (Killed(child), addresses)
}

/// `stratum-bench node` and our SV1 pool on it (role `pool`, events in `dir/pool.jsonl`):
/// the node, the pool, the pool's port and the node's ZMQ endpoint. Network blocks come
/// every 5 s or so; the miners' own are rare (difficulty 0.01 is 43 M hashes); a share
/// is 2,000 hashes to start with.
pub fn start_sv1_pool(dir: &Path) -> (Killed, Killed, u16, String) {
    std::fs::create_dir_all(dir).unwrap();
    let (node, ready) = start_node_announced(&["--block-interval", "5s", "--difficulty", "0.01"]);
    let (rpc, zmq) = (word_after(&ready, "RPC "), word_after(&ready, "ZMQ "));
    let port = free_port();
    let start = 2_000.0 / 4_294_967_296.0;
    let spec = harness::roles::RoleSpec::Sv1Pool {
        config: sv1::pool::PoolConfig {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            rpc_url: rpc,
            rpc_user: "u".into(),
            rpc_password: "p".into(),
            zmq: Some(zmq.clone()),
            payout_script: bitcoin::ScriptBuf::new_op_return([0x51]),
            coinbase_tag: "/stratum-bench test/".into(),
            job_refresh: std::time::Duration::from_secs(5),
            refresh_fee_threshold_sats: 0,
            vardiff: sv1::pool::VardiffConfig {
                shares_per_min: 30.0,
                start,
                min: start / 1000.0,
                max: start * 1e6,
                retarget: std::time::Duration::from_secs(30),
            },
            version_rolling_mask: 0x1fff_e000,
            broadcast: None,
        },
    };
    let (pool, _) = start_role(
        "pool",
        &serde_json::to_value(&spec).unwrap(),
        &dir.join("pool.jsonl"),
    );
    (node, pool, port, zmq)
}

/// The word after `key` in a process's announcement (`RPC 127.0.0.1:18443, ZMQ ...`).
pub fn word_after(announcement: &str, key: &str) -> String {
    let at = announcement.find(key).unwrap() + key.len();
    announcement[at..]
        .split([' ', ','])
        .next()
        .unwrap()
        .to_string()
}

/// SRI's pool on the node, from [`start_sri_pool`].
pub struct SriPool {
    /// The node and the pool, killed when this is dropped.
    pub _node: Killed,
    pub _pool: Killed,
    pub port: u16,
    /// The pool's authority key pair.
    pub keys: node::tdp::AuthorityKeys,
    /// The node's ZMQ endpoint publishing hashblock.
    pub zmq: String,
}

/// `stratum-bench node` as a Template Provider and SRI's pool on it (role `sri-pool`).
pub fn start_sri_pool(dir: &Path) -> SriPool {
    std::fs::create_dir_all(dir).unwrap();
    let tp_secret = bitcoin::base58::encode_check(&[7u8; 32]);
    let tp = node::tdp::AuthorityKeys::from_secret(&tp_secret).unwrap();
    let tdp = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let (node, ready) = start_node_announced(&[
        "--block-interval",
        "5s",
        "--tdp-bind",
        &tdp.to_string(),
        "--tdp-secret-key",
        &tp_secret,
    ]);
    let keys =
        node::tdp::AuthorityKeys::from_secret(&bitcoin::base58::encode_check(&[9u8; 32])).unwrap();
    let port = free_port();
    let spec = harness::roles::RoleSpec::SriPool {
        params: sri::PoolParams {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            authority_public: keys.public,
            authority_secret: keys.secret,
            templates: sri::TemplateSource::Tdp {
                address: tdp,
                public: tp.public,
            },
            payout_script_hex: bitcoin::ScriptBuf::new_p2wsh(&bitcoin::WScriptHash::from_raw_hash(
                bitcoin::hashes::Hash::hash(&[0x51]),
            ))
            .to_hex_string(),
            signature: "stratum-bench test".into(),
            shares_per_minute: 10.0,
            share_batch_size: 1,
            jds_listen: None,
        },
    };
    let (pool, _) = start_role(
        "sri-pool",
        &serde_json::to_value(&spec).unwrap(),
        &dir.join("sri-pool.jsonl"),
    );
    SriPool {
        _node: node,
        _pool: pool,
        port,
        keys,
        zmq: word_after(&ready, "ZMQ "),
    }
}

/// Sends SIGTERM to `child` and waits for it to end by itself.
pub fn terminate(child: &mut Child) -> std::process::ExitStatus {
    // SAFETY: signalling a child process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap()
}

/// This crate's directory in the clone the test runs in, read when the test runs: a test
/// binary can come from another clone's build of the same sources (a clean clone reuses
/// the build cache, `scripts/source-mtimes.sh`), and `env!` would name that clone.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR")
            .expect("CARGO_MANIFEST_DIR, which cargo and nextest set for every test they run"),
    )
}

/// A scenario file of the repository, by name (`sv1-baseline`, `config-c`, ...).
pub fn scenario(name: &str) -> PathBuf {
    crate_dir().join(format!("../../scenarios/{name}.toml"))
}

/// `stratum-bench run` of the SV1 baseline into `out`, with `args`.
pub fn run_baseline(out: &Path, args: &[&str]) -> Command {
    run_scenario("sv1-baseline", out, args)
}

/// `stratum-bench run scenarios/<name>.toml` into `out`, with `args` (its metrics on a
/// free port, as by default).
pub fn run_scenario(name: &str, out: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(exe());
    cmd.arg("run")
        .arg(scenario(name))
        .args(args)
        .arg("--out")
        .arg(out);
    cmd
}

/// `stratum-bench bench <args> --out <scratch dir named name>`, run to its end.
fn run_bench(name: &str, args: &[&str]) -> (PathBuf, std::process::Output) {
    let out = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(exe())
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    (out, run)
}

/// Runs `stratum-bench bench <args> --out <fresh dir>`, requires success, and returns its
/// stdout and the JSON file `result` it wrote.
pub fn bench(name: &str, args: &[&str], result: &str) -> (String, serde_json::Value) {
    let (out, run) = run_bench(name, args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json = std::fs::read_to_string(out.join(result)).expect("the bench wrote its results");
    (
        String::from_utf8_lossy(&run.stdout).into_owned(),
        serde_json::from_str(&json).unwrap(),
    )
}

/// Runs `stratum-bench bench <args> --out <scratch dir>`, requires it to fail, and
/// returns what it said on stderr.
pub fn bench_fails(args: &[&str]) -> String {
    let (_, run) = run_bench("bench-failing", args);
    assert!(!run.status.success(), "bench {args:?} should fail");
    String::from_utf8_lossy(&run.stderr).into_owned()
}

/// The body of `GET http://<addr><path>` (HTTP/1.0, so the server closes when done), if
/// the server answers 200.
pub fn http_get(addr: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.lines()
        .next()?
        .contains(" 200 ")
        .then(|| body.to_string())
}

/// A fresh run directory for one test.
pub fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A run that several tests of one test binary read, made once per test run: the first
/// test that asks makes it with `make` (others wait on a lock) and every test gets the same
/// directory, or the same failure. nextest runs each test in a process of its own, so
/// "once" is by its run id (`NEXTEST_RUN_ID`); under `cargo test`, once per test process.
/// A whole run of real roles is the suite's expensive unit: each test still says what it
/// checks, and one failed check never hides another's verdict on the same run.
pub fn shared_run(name: &str, make: impl FnOnce(&Path)) -> PathBuf {
    static PROCESS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let run_id = std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        (PROCESS.get_or_init(|| format!("process-{}-{started}", std::process::id()))).clone()
    });
    let root = std::env::temp_dir().join(format!("stratum-bench-shared-{run_id}"));
    if !root.exists() {
        forget_shared_runs_older_than(Duration::from_secs(6 * 3600));
    }
    std::fs::create_dir_all(&root).unwrap();
    let dir = root.join(name);
    let lock = std::fs::File::create(root.join(format!("{name}.lock"))).unwrap();
    lock.lock().unwrap();
    let started = root.join(format!("{name}.started"));
    let outcome = root.join(format!("{name}.outcome"));
    if !outcome.exists() {
        // A test killed while it made the run (its timeout) leaves it started and never
        // finished: the tests after it fail at once instead of making it again.
        let failure = if started.exists() {
            "the test that made it did not finish (killed by its timeout?)".to_string()
        } else {
            std::fs::write(&started, "").unwrap();
            let _ = std::fs::remove_dir_all(&dir);
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(&dir))) {
                Ok(()) => String::new(),
                Err(e) => (e.downcast_ref::<String>().cloned())
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .filter(|message| !message.is_empty())
                    .unwrap_or_else(|| "a panic without a message".into()),
            }
        };
        let record = if failure.is_empty() {
            "ok".to_string()
        } else {
            format!("failed: {failure}")
        };
        std::fs::write(&outcome, record).unwrap();
    }
    let record = std::fs::read_to_string(&outcome).unwrap();
    drop(lock);
    assert!(
        record == "ok",
        "the shared run {name} ({}) {record}, for every test that reads it",
        dir.display()
    );
    dir
}

/// Removes the shared runs of earlier test runs (older than `age`), so runs of real roles
/// do not pile up in the temporary directory.
fn forget_shared_runs_older_than(age: Duration) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let old = (entry.metadata().and_then(|m| m.modified()).ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|elapsed| elapsed > age);
        if old
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with("stratum-bench-shared-")
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Where the run's roles stood (`placement.json`, a container or swarm run's).
pub fn placement(dir: &Path) -> Vec<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(dir.join("placement.json")).unwrap()).unwrap()
}

/// The run's summary.json.
/// Every role of every side in `summary` has CPU and memory samples (`when` names the
/// summary in a failure).
pub fn every_role_has_cpu_and_memory(summary: &serde_json::Value, when: &str) {
    for (side, figures) in summary["sides"].as_object().unwrap() {
        for (role, use_) in figures["roles"].as_object().unwrap() {
            assert!(
                num(&use_["rss_bytes"]["count"]) > 0.0,
                "{when}, {side} {role}: {use_}"
            );
            assert!(
                num(&use_["cpu_pct"]["count"]) > 0.0,
                "{when}, {side} {role}"
            );
        }
    }
}

pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json written"),
    )
    .unwrap()
}

/// The run's measured window, from its manifest: `t_ns` from its start to its end, both
/// in, as the analysis counts it.
pub fn measured_window(dir: &Path) -> std::ops::RangeInclusive<u64> {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    manifest["window_start_ns"].as_u64().unwrap()..=manifest["window_end_ns"].as_u64().unwrap()
}

/// A role's events, as JSON values (lines that do not read are left out).
pub fn events(dir: &Path, role: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join(format!("events/{role}.jsonl")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Requires a successful run, showing its output otherwise.
/// `stratum-bench run` of scenario `name` with `args` into a scratch directory named
/// `out_name`, which must succeed: the directory and its summary.
pub fn run_to_summary(
    name: &str,
    out_name: &str,
    args: &[impl AsRef<str>],
) -> (PathBuf, serde_json::Value) {
    let out = out_dir(out_name);
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    succeed(run_scenario(name, &out, &args).output().unwrap());
    let summary = summary(&out);
    (out, summary)
}

/// The median of `xs` (sorting them), the mean of the middle two for an even count.
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// A summary's number; the test fails naming the value that is not one.
pub fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn succeed(out: std::process::Output) {
    assert!(
        out.status.success(),
        "run failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Loads a page (the live dashboard, a report) in headless Chromium, lets its script poll for up to 3 virtual
/// seconds, and returns the rendered DOM, a screenshot and any console message.
pub fn load_page(url: &str, profile: &Path, shot: &Path) -> (String, Vec<u8>, Vec<String>) {
    let chromium = |args: &[&str]| {
        Command::new("chromium")
            .args(report::chromium_flags(profile))
            .args([
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=3000",
            ])
            .args(args)
            .arg(url)
            .output()
            .expect("chromium (make test installs the Debian package)")
    };
    let shown = chromium(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1200,1400",
    ]);
    let dom = chromium(&["--dump-dom"]);
    let console = [&shown.stderr, &dom.stderr]
        .iter()
        .flat_map(|err| {
            String::from_utf8_lossy(err)
                .lines()
                .filter(|l| l.contains("CONSOLE") || l.contains("Failed to load resource"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let png = std::fs::read(shot).expect("a screenshot");
    (
        String::from_utf8_lossy(&dom.stdout).into_owned(),
        png,
        console,
    )
}

/// Every side of the default scenario's run in `run` had shares accepted, and every byte
/// between its sites crossed its link: a new block's job reached the miners no sooner than
/// the link's one-way delay, 50 ms (A's farm node hears of the block
/// farm_node.block_lag after the network's node, and builds the job itself), at 3
/// tips or more a side. The run's CSV export goes to `csv`.
pub fn default_sides_worked_across_their_links(run: &Path, csv: &Path) {
    let summary = summary(run);
    for side in ["sv1", "sv2-a", "sv2-c", "sv2-d"] {
        let shares = &summary["sides"][side]["shares"];
        assert!(shares["accepted"].as_u64().unwrap() > 0, "{side}: {shares}");
    }
    succeed(
        Command::new(exe())
            .arg("export")
            .arg(run)
            .arg("--csv")
            .arg(csv)
            .output()
            .unwrap(),
    );
    let latencies = std::fs::read_to_string(csv.join("latencies.csv")).unwrap();
    for (side, floor_ms) in [
        ("sv1", 50.0),
        ("sv2-a", 20.0),
        ("sv2-c", 50.0),
        ("sv2-d", 50.0),
    ] {
        let times: Vec<f64> = latencies
            .lines()
            .filter_map(|l| {
                let [s, metric, ms] = l.split(',').collect::<Vec<_>>()[..] else {
                    return None;
                };
                (s == side && metric == "new_prevhash_job_ms").then(|| ms.parse().unwrap())
            })
            .collect();
        assert!(times.len() >= 3, "{side}: {times:?}");
        let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            fastest >= floor_ms,
            "{side}: a new-block job in {fastest} ms"
        );
    }
}
