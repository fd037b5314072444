//! Release against release end to end: an earlier SRI release (installed by `make test`
//! from crates.io, named in STRATUM_BENCH_SRI_RELEASE) run through `sweep` on its own
//! binaries, a binary of a release this build does not know refused before anything runs,
//! and `--fail-on-regression` both ways: the same build passes, a slowed pool fails.

use crate::common;

use crate::common::{exe, out_dir};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Configuration C alone, the rest of the network's blocks regular, so that every run's
/// 20 s window holds 7 of them (one every 2.86 s), and the gate's comparison has the 5
/// tips it needs a side whatever the draw (with Poisson blocks every 4 s over 40 s, as
/// this test had, a run had fewer than 5 in 3% of runs). Our miners add about 3 more.
const SCENARIO: &str = r#"
name = "release-test"
duration = "20s"
warmup = "6s"
seed = 3
sides = ["sv2-c"]
[network]
block_interval = "2s"
hashrate_share = 0.3
mempool = "testnet"
arrivals = "regular"
[link]
rtt_ms = 20
[miners]
count = 2
shares_per_min = 30
hashes_per_share = 2000
[sv2]
share_batch_size = 1
"#;

/// The network's own tips in a run's window: 20 s is 7 gaps exactly, so 7, or 8 with one
/// on both edges, and a tip stamped a ms late at an edge can take one across it: 6 to 8.
const NETWORK_TIPS_IN_WINDOW: std::ops::RangeInclusive<usize> = 6..=8;

/// The earlier release `make test` installs (`cargo install --root DIR`: binaries in bin/).
fn earlier_release() -> PathBuf {
    let dir = std::env::var("STRATUM_BENCH_SRI_RELEASE").expect(
        "STRATUM_BENCH_SRI_RELEASE names an earlier SRI release's directory (make test installs 0.6.0 and sets it)",
    );
    PathBuf::from(dir)
}

fn sweep(dir: &Path, args: &[&str]) -> Output {
    let scenario = dir.join("scenario.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.join("sweep");
    Command::new(exe())
        .arg("sweep")
        .arg(&scenario)
        .args(["--repeat", "1", "--out"])
        .arg(&out)
        .args(args)
        .output()
        .expect("the binary starts")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn executable(path: &Path, script: &str) {
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A release directory holding `release`'s three binaries under other names (the same
/// build), the pool replaced by `pool` when given.
fn release_like(dir: &Path, release: &Path, pool: Option<&str>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for bin in ["pool_sv2", "translator_sv2", "jd_client_sv2"] {
        let path = dir.join(bin);
        match pool.filter(|_| bin == "pool_sv2") {
            Some(script) => executable(&path, script),
            None => symlink(release.join("bin").join(bin), &path).unwrap(),
        }
    }
    dir.to_path_buf()
}

/// One sweep of three releases, each judged against the first by the gate: the earlier
/// release, the same build under another name, and the same build with its pool slowed.
/// Each comparison is the first release's runs against one other's, so the slowed pool's
/// regression and the same build's pass are read from one sweep, one run each fewer than
/// two sweeps (the gate names each release's regressions by its run's directory).
#[test]
fn an_earlier_release_runs_through_sweep_on_its_own_binaries_the_same_build_passes_the_gate_and_a_slowed_pool_fails_it(
) {
    let release = earlier_release();
    let dir = out_dir("release-gate");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = release_like(&dir.join("same-build"), &release, None);
    // The slowed pool is the release's own, its Template Provider reached through a relay
    // that holds every byte 60 ms: it learns of each block 60 ms late.
    let target = dir.join("tp-address");
    let relay = delay_line(target.clone(), Duration::from_millis(60));
    let real = release.join("bin/pool_sv2");
    let wrapper = format!(
        "#!/bin/sh\n[ \"$1\" = --version ] && exec {real} --version\n\
         sed -n 's/^address = \"\\(.*\\)\"$/\\1/p' \"$2\" > {target}\n\
         sed -i 's/^address = \".*\"$/address = \"{relay}\"/' \"$2\"\n\
         exec {real} \"$@\"\n",
        real = real.display(),
        target = target.display(),
    );
    let slow = release_like(&dir.join("slow-pool"), &release, Some(&wrapper));
    let vary = format!(
        "release={},{},{}",
        release.display(),
        copy.display(),
        slow.display()
    );
    let out = sweep(&dir, &["--vary", &vary, "--fail-on-regression", "50"]);
    let said = text(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the slowed pool passed the gate:\n{said}"
    );
    // Every role the release holds and C runs is swapped and said so before anything runs.
    assert!(
        said.contains("pool_sv2 0.6.0 (") && said.contains("translator_sv2 0.5.0 ("),
        "{said}"
    );
    let points = dir.join("sweep/points");
    let mut runs: Vec<PathBuf> = (std::fs::read_dir(&points).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 3, "{runs:?}");
    // The gate's regressions, one line each, named by the run they were found in: the
    // slowed pool's new-block job, and nothing of the same build.
    let regressions: Vec<&str> = said
        .split_once("regressions beyond 50%")
        .unwrap_or_else(|| panic!("no regression said:\n{said}"))
        .1
        .lines()
        .filter(|l| l.starts_with("  "))
        .collect();
    let of = |run: &Path| -> Vec<&str> {
        let name = format!("/{}: ", run.file_name().unwrap().to_string_lossy());
        (regressions.iter().copied())
            .filter(|l| l.contains(&name))
            .collect()
    };
    assert!(
        of(&runs[1]).is_empty(),
        "the same build failed the gate: {:?}\n{said}",
        of(&runs[1])
    );
    assert!(
        of(&runs[2])
            .iter()
            .any(|l| l.contains("sv2-c new job after a block")),
        "the slowed pool's new-block job is not among the regressions:\n{said}"
    );
    assert_eq!(
        of(&runs[2]).len(),
        regressions.len(),
        "a regression names no run of the sweep:\n{said}"
    );
    for run in &runs {
        // The release's own binaries ran, on the config they read.
        let host: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("host.json")).unwrap()).unwrap();
        let roles = host["sri_roles"].to_string();
        assert!(
            roles.contains("pool_sv2 0.6.0 (") && roles.contains("translator_sv2 0.5.0 ("),
            "{roles}"
        );
        let config = std::fs::read_to_string(run.join("roles/pool-sv2-c.toml")).unwrap();
        assert!(
            config.contains("[template_provider_type.Sv2Tp]"),
            "{config}"
        );
        let window = common::measured_window(run);
        let network_tips = (common::events(run, "node").iter())
            .filter(|e| e["kind"] == "tip_changed" && e["cause"] == "network")
            .filter(|e| window.contains(&e["t_ns"].as_u64().unwrap()))
            .count();
        assert!(
            NETWORK_TIPS_IN_WINDOW.contains(&network_tips),
            "{}: {network_tips} of the network's tips in the window",
            run.display()
        );
        let summary = common::summary(run);
        let side = &summary["sides"]["sv2-c"];
        assert!(
            side["shares"]["accepted"].as_u64().unwrap_or(0) > 0,
            "the release's pool accepted no share: {side}"
        );
    }
    let report = std::fs::read_to_string(dir.join("sweep/sweep.md")).unwrap();
    assert!(report.contains("Release against release"), "{report}");
    assert!(report.contains("pool_sv2 0.6.0 ("), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_binary_of_an_unknown_release_is_refused_before_anything_runs() {
    let dir = out_dir("release-unknown");
    let next = dir.join("sri-next");
    std::fs::create_dir_all(&next).unwrap();
    executable(&next.join("pool_sv2"), "#!/bin/sh\necho 'pool_sv2 0.9.9'\n");
    let vary = format!("release=builtin,{}", next.display());
    let out = sweep(&dir, &["--vary", &vary]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("pool_sv2 0.9.9") && said.contains(&next.display().to_string()),
        "the refusal names the release and the binary: {said}"
    );
    assert!(said.contains("roles.pool.command"), "and the role: {said}");
    assert!(!dir.join("sweep").exists(), "nothing ran, nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TCP relay on 127.0.0.1 that connects each accepted connection to the address written
/// in `target` (read at accept) and holds every byte `delay` in both directions.
fn delay_line(target: PathBuf, delay: Duration) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for inbound in listener.incoming().flatten() {
            let Ok(to) = std::fs::read_to_string(&target) else {
                continue;
            };
            let Ok(outbound) = TcpStream::connect(to.trim()) else {
                continue;
            };
            let (a, b) = (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
            std::thread::spawn(move || delayed_copy(inbound, outbound, delay));
            std::thread::spawn(move || delayed_copy(b, a, delay));
        }
    });
    addr
}

/// Copies `from` to `to`, each chunk written `delay` after it was read.
fn delayed_copy(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        for (read_at, bytes) in rx {
            std::thread::sleep((read_at + delay).saturating_duration_since(Instant::now()));
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
    let mut buf = [0u8; 16_384];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
            break;
        }
    }
}
