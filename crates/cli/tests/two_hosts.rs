//! A run across two Docker hosts on this machine: `scripts/two-hosts.sh` starts two dockerd
//! daemons, each in a network namespace of its own, joined by a veth pair into one swarm
//! (the pool's host the manager, the farm's a worker); config C's scenario (SV1 and C)
//! runs as swarm services with the pool site on one host and the farm site on the other,
//! and everything is removed after. Needs root and Docker's packages (`make test` has them).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    crate::common::crate_dir().join("../../scripts/two-hosts.sh")
}

/// The two hosts, up for the test's time and removed however it ends.
struct TwoHosts;

impl TwoHosts {
    fn up() -> TwoHosts {
        common::succeed(Command::new(script()).arg("up").output().unwrap());
        TwoHosts
    }

    /// `DOCKER_HOST` for `host` (pool or farm).
    fn docker_host(host: &str) -> String {
        format!("unix:///run/stratum-bench/two-hosts/{host}/docker.sock")
    }

    /// `docker ARGS` on `host`, required to succeed; its stdout.
    fn docker(host: &str, args: &[&str]) -> String {
        common::docker_on(Some(&Self::docker_host(host)), args)
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        let down = Command::new(script()).arg("down").output().unwrap();
        assert!(
            down.status.success() || std::thread::panicking(),
            "two-hosts.sh down: {}",
            String::from_utf8_lossy(&down.stderr)
        );
    }
}

#[test]
fn a_run_crosses_two_docker_hosts_with_the_pool_site_on_one_and_the_farm_site_on_the_other() {
    let _hosts = TwoHosts::up();
    let ids: Vec<(String, String)> = ["pool", "farm"]
        .map(|site| {
            let id = TwoHosts::docker(
                "pool",
                &[
                    "node",
                    "ls",
                    "--filter",
                    &format!("node.label=site={site}"),
                    "--format",
                    "{{.ID}}",
                ],
            );
            (site.to_string(), id)
        })
        .into();
    assert_ne!(ids[0].1, ids[1].1, "one node a site: {ids:?}");
    // No registry: the farm's host gets the image the run builds on the pool's.
    let tag = format!("stratum-bench:{}", env!("CARGO_PKG_VERSION"));
    common::succeed(
        Command::new(common::exe())
            .args(["image", "--tag", &tag])
            .env("DOCKER_HOST", TwoHosts::docker_host("farm"))
            .output()
            .unwrap(),
    );
    let out = common::out_dir("two-hosts");
    // A snapshot 20 s into the window: what the run showed while it went.
    let args = [
        &common::SHORT_RUN_WITH_TIPS[..],
        &["--set", "placement.engine=swarm", "--report-every", "20s"],
    ]
    .concat();
    let run = common::run_scenario("config-c", &out, &args)
        .env("DOCKER_HOST", TwoHosts::docker_host("pool"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stderr).to_string();
    common::succeed(run);
    let placement = common::placement(&out);
    let node_of = |site: &str| ids.iter().find(|(s, _)| s == site).unwrap().1.as_str();
    for p in &placement {
        // A link (the path between the sites) runs on the pool's nodes.
        let site = match p["site"].as_str().unwrap() {
            "farm" => "farm",
            _ => "pool",
        };
        assert_eq!(p["node"].as_str(), Some(node_of(site)), "{p}");
    }
    let summary = common::summary(&out);
    for side in ["sv1", "sv2-c"] {
        let accepted = common::num(&summary["sides"][side]["shares"]["accepted"]);
        assert!(
            accepted > 0.0,
            "{side}: {}",
            summary["sides"][side]["shares"]
        );
    }
    // Every role's CPU and memory, those on the farm's host (which this host's Docker
    // does not list) from their own reports: at the end, and in the snapshot mid-run.
    let interim = common::summary(&out.join("interim/20s"));
    for (when, summary) in [("the end", &summary), ("20 s in", &interim)] {
        common::every_role_has_cpu_and_memory(summary, when);
        // One reading a second, from one role's reports: never more than the window's.
        let seconds = summary["other_hosts"]["farm"]["seconds"].as_u64().unwrap();
        let window = common::num(&summary["duration_s"]);
        assert!(
            seconds > 0 && seconds as f64 <= window + 2.0,
            "{when}, the farm's host, {window} s window: {}",
            summary["other_hosts"]
        );
        let listed = |role: &serde_json::Value| {
            let role = role.as_str().unwrap();
            ["sv1", "sv2-c"].iter().any(|side| {
                summary["sides"][side]["roles"]
                    .as_object()
                    .is_some_and(|roles| roles.contains_key(role))
            })
        };
        for p in placement.iter().filter(|p| p["site"] == "farm") {
            assert!(listed(&p["role"]), "{when}: {} has no row", p["role"]);
        }
    }
    // Both hosts share this machine's kernel, so one clock: the collector checked every
    // role's stamps against it, the farm's too, and found them within its bound.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let farm_roles = placement.iter().filter(|p| p["site"] == "farm");
    for p in farm_roles {
        let role = &p["role"];
        let clock = (manifest["clocks"].as_array().unwrap().iter())
            .find(|c| c["roles"].as_array().unwrap().contains(role))
            .unwrap_or_else(|| panic!("{role} has no clock: {}", manifest["clocks"]));
        assert!(common::num(&clock["uncertainty_ns"]) < 2e6, "{clock}");
    }
    // Nothing of the run is left on either host (a worker removes a removed service's
    // task in its own time).
    for host in ["pool", "farm"] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let left = TwoHosts::docker(host, &["ps", "-a", "--format", "{{.Names}}"]);
            if !left.contains("stratum-bench-") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "left on the {host} host: {left}"
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }
    // The run's volume: removed on the manager's host; on the farm's, named in the run's
    // output with the command that removes it, which does.
    let volumes = |host: &str| TwoHosts::docker(host, &["volume", "ls", "--format", "{{.Name}}"]);
    let command = (said.split('`'))
        .find(|s| s.starts_with("docker volume rm stratum-bench-"))
        .unwrap_or_else(|| panic!("no volume left is named:\n{said}"));
    let volume = command.trim_start_matches("docker volume rm ");
    let pool = volumes("pool");
    assert!(
        !pool.lines().any(|v| v == volume),
        "the pool's host: {pool}"
    );
    let farm = volumes("farm");
    assert!(farm.lines().any(|v| v == volume), "the farm's host: {farm}");
    TwoHosts::docker("farm", &["volume", "rm", volume]);
}
