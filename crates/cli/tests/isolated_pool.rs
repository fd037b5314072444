//! A pool that listens on every interface runs in a network namespace of its own
//! (`isolate_network = true`): our SV1 pool, run as any external pool is, bound to
//! 0.0.0.0. Nothing of it is reachable on the host's interfaces while the run goes, and
//! its miners' shares cross the side's link and are accepted, at the difficulty they
//! asked for (`mining.suggest_difficulty`) rather than the pool's own start.

use crate::common;

use crate::common::exe;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The host's own IPv4 addresses (every interface of this network namespace).
fn host_addresses() -> Vec<String> {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .expect("ip (iproute2) is installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let cidr = l.split_whitespace().skip_while(|w| *w != "inet").nth(1)?;
            Some(cidr.split('/').next()?.to_string())
        })
        .collect()
}

#[test]
fn a_pool_bound_to_every_address_is_reachable_only_through_the_sides_link() {
    assert!(
        nix_is_root(),
        "this test creates a network namespace: run make test as root"
    );
    let work = std::env::temp_dir().join(format!("isolated-pool-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let fixture = crate::common::crate_dir().join("tests/fixtures/pool-on-every-address.json");
    std::fs::copy(&fixture, work.join("pool.json")).unwrap();
    let base = std::fs::read_to_string(common::scenario("sv1-baseline")).unwrap();
    let scenario = base.replace(r#"sides = ["sv1"]"#, r#"sides = ["sv1", "sv1-x"]"#)
        + &format!(
            "\n[sv1_pools.x]\ncommand = \"{{program}} role --spec {{config}} --name pool-x --events {{workdir}}/pool-events.jsonl\"\nprogram = \"{}\"\nconfig_template = \"pool.json\"\nworkdir = \"{{run_dir}}/x-pool\"\nisolate_network = true\nsuggest_difficulty = true\nname = \"our SV1 pool on 0.0.0.0\"\n",
            exe()
        );
    std::fs::write(work.join("scenario.toml"), scenario).unwrap();
    let dir = common::out_dir("isolated-pool");
    let run = Command::new(exe())
        .arg("run")
        .arg(work.join("scenario.toml"))
        .args([
            "--duration",
            "25s",
            "--set",
            "warmup=8s",
            "--set",
            "network.block_interval=5s",
        ])
        .args(["--metrics-bind", "127.0.0.1:0", "--out"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = run.id();

    // While it runs: the pool's port, from its filled-in config.
    let config = dir.join("roles/pool-sv1-x.conf");
    let deadline = Instant::now() + Duration::from_secs(60);
    let port: u16 = loop {
        let filled = std::fs::read_to_string(&config).ok();
        let port = filled.and_then(|text| {
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            v["config"]["listen"]
                .as_str()?
                .rsplit(':')
                .next()?
                .parse()
                .ok()
        });
        if let Some(port) = port {
            break port;
        }
        assert!(
            Instant::now() < deadline,
            "no pool config at {}",
            config.display()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let namespace = format!("sb-{pid}-0");
    let deadline = Instant::now() + Duration::from_secs(60);
    let listening = loop {
        let out = Command::new("ip")
            .args(["netns", "exec", &namespace, "ss", "-Hltn"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains(&format!("0.0.0.0:{port}")) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no listener on 0.0.0.0:{port} in {namespace}: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // It binds every address of its namespace, and none of the host's answers for it.
    let addresses = host_addresses();
    assert!(addresses.iter().any(|a| a == "127.0.0.1"), "{addresses:?}");
    for address in &addresses {
        let at: std::net::SocketAddr = format!("{address}:{port}").parse().unwrap();
        assert!(
            std::net::TcpStream::connect_timeout(&at, Duration::from_secs(1)).is_err(),
            "the pool answers on the host's {at} ({listening})"
        );
    }

    let out = run.wait_with_output().unwrap();
    common::succeed(out);
    let s = common::summary(&dir);
    for side in ["sv1", "sv1-x"] {
        let shares = &s["sides"][side]["shares"];
        assert!(shares["accepted"].as_u64().unwrap() > 0, "{side}: {shares}");
    }
    // The side's miners asked for the side's difficulty (hashes_per_share 2000: 2000 /
    // 2^32), and the pool, which would start them at 1e-9, judged every share at it.
    let asked = 2000.0 / 2f64.powi(32);
    let judged: Vec<f64> = std::fs::read_to_string(dir.join("x-pool/pool-events.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == "share_judged")
        .filter_map(|e| e["difficulty"].as_f64())
        .collect();
    assert!(!judged.is_empty(), "the pool judged shares");
    assert!(
        judged.iter().all(|d| (d / asked - 1.0).abs() < 1e-9),
        "every share at {asked}: {judged:?}"
    );
    // The namespace went with the run.
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains(&namespace),
        "{namespace} left behind"
    );
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A pool in its namespace that exits before it listens fails the run before the window,
/// naming the side, the namespace and the pool's log; the namespace does not stay.
#[test]
fn an_isolated_pool_that_never_listens_fails_the_run_naming_it() {
    assert!(
        nix_is_root(),
        "this test creates a network namespace: run make test as root"
    );
    let work = std::env::temp_dir().join(format!("isolated-exits-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let base = std::fs::read_to_string(common::scenario("sv1-baseline")).unwrap();
    let scenario = base.replace(r#"sides = ["sv1"]"#, r#"sides = ["sv1", "sv1-x"]"#)
        + "\n[sv1_pools.x]\ncommand = \"false\"\nisolate_network = true\n";
    std::fs::write(work.join("scenario.toml"), scenario).unwrap();
    let dir = common::out_dir("isolated-exits");
    let out = Command::new(exe())
        .arg("run")
        .arg(work.join("scenario.toml"))
        .args([
            "--duration",
            "20s",
            "--metrics-bind",
            "127.0.0.1:0",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("side sv1-x: its pool in network namespace sb-")
            && stderr.contains(&dir.join("logs/pool-sv1-x.log").display().to_string()),
        "{stderr}"
    );
    assert!(!dir.join("summary.json").exists(), "no window was measured");
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let pid_prefix = "sb-";
    let left: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| l.starts_with(pid_prefix))
        .map(String::from)
        .collect();
    let ours = stderr
        .split("network namespace ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    assert!(
        !left.iter().any(|l| l.starts_with(&ours)),
        "{ours} left behind: {left:?}"
    );
}
