//! Roles in containers: the image built with no registry runs a role on an internal
//! Docker network, and its events reach a collector container there, every one, on the
//! host's clock; whole runs with every role in a container, or a swarm service. Needs a
//! Docker daemon managing a swarm: `make test` makes both when there are none.

use crate::common;

use probe::recorder::read_events;
use std::path::Path;
use std::process::Command;

use crate::common::docker;

/// Removes what a test made in Docker, however it ends.
struct Cleanup {
    containers: Vec<String>,
    network: String,
    image: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = Command::new("docker").args(["rm", "-f", c]).output();
        }
        let _ = Command::new("docker")
            .args(["network", "rm", &self.network])
            .output();
        let _ = Command::new("docker")
            .args(["rmi", "-f", &self.image])
            .output();
    }
}

/// A network node's role spec, as the harness writes it.
fn node_spec(path: &Path) {
    let spec = harness::roles::RoleSpec::Node {
        config: node::NodeConfig {
            block_interval: std::time::Duration::from_secs(1),
            ..node::NodeConfig::default()
        },
        rpc_user: "u".into(),
        rpc_password: "p".into(),
        tdp: None,
        ipc: None,
        peer: None,
        ports: Default::default(),
    };
    std::fs::write(path, serde_json::to_string(&spec).unwrap()).unwrap();
}

#[test]
fn a_role_in_a_container_streams_every_event_to_a_collector_on_an_internal_network() {
    let id = std::process::id();
    let cleanup = Cleanup {
        containers: vec![
            format!("sb-test-collector-{id}"),
            format!("sb-test-node-{id}"),
        ],
        network: format!("sb-test-{id}"),
        image: format!("stratum-bench:test-{id}"),
    };
    let (collector, node) = (&cleanup.containers[0], &cleanup.containers[1]);
    let built = Command::new(common::exe())
        .args(["image", "--tag", &cleanup.image])
        .output()
        .unwrap();
    common::succeed(built);
    // Internal: nothing on it routes off the host.
    docker(&["network", "create", "--internal", &cleanup.network]);
    assert_eq!(
        docker(&[
            "network",
            "inspect",
            "--format",
            "{{.Internal}}",
            &cleanup.network
        ]),
        "true"
    );

    let dir = common::out_dir("containers");
    std::fs::create_dir_all(dir.join("journals")).unwrap();
    node_spec(&dir.join("node.json"));
    let mount = format!("{}:/run/bench", dir.display());
    let net = cleanup.network.as_str();
    docker(&[
        "run",
        "-d",
        "--name",
        collector,
        "--network",
        net,
        "-v",
        &mount,
        &cleanup.image,
        "collect",
        "--listen",
        "0.0.0.0:7000",
        "--events",
        "/run/bench/events",
        "--clocks",
        "/run/bench/clocks.json",
    ]);
    // The role finds the collector by its container name, as swarm services do.
    let at = format!("{collector}:7000");
    docker(&[
        "run",
        "-d",
        "--name",
        node,
        "--network",
        net,
        "-v",
        &mount,
        &cleanup.image,
        "role",
        "--spec",
        "/run/bench/node.json",
        "--collector",
        &at,
        "--journal",
        "/run/bench/journals/node.jsonl",
        "--name",
        "node",
    ]);
    // A few blocks and template values, then the role stops (SIGTERM) and hands over.
    std::thread::sleep(std::time::Duration::from_secs(4));
    docker(&["stop", node]);
    docker(&["stop", collector]);
    let logs = Command::new("docker")
        .args(["logs", node])
        .output()
        .unwrap();
    let ready = String::from_utf8_lossy(&logs.stdout);
    assert!(
        ready.contains("READY"),
        "the node served: {ready}{}",
        String::from_utf8_lossy(&logs.stderr)
    );

    let journal = read_events(&dir.join("journals/node.jsonl")).unwrap();
    let copy = read_events(&dir.join("events/node.jsonl")).unwrap();
    assert!(journal.len() >= 4, "the node recorded events: {journal:?}");
    // The collector runs on this host's clock, as the node does: nothing is moved.
    assert_eq!(copy, journal, "every event, once, in order");
    let clocks: Vec<analysis::manifest::ClockOffset> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("clocks.json")).unwrap()).unwrap();
    assert_eq!(clocks.len(), 1, "{clocks:?}");
    assert_eq!(clocks[0].roles, ["node"]);
    assert!(!clocks[0].applied && clocks[0].exchanges >= 8, "{clocks:?}");
    drop(cleanup);
}

/// Runs `scenarios/sv1-vs-sv2.toml` (short) with `placement` settings, and checks that
/// every role ran apart on its site, and that the sides' work crossed their links.
fn the_default_scenario_apart(name: &str, placement: &[&str]) {
    let out = common::out_dir(name);
    let mut args = common::SHORT_RUN_WITH_TIPS.to_vec();
    for setting in placement {
        args.extend(["--set", setting]);
    }
    common::succeed(
        common::run_scenario("sv1-vs-sv2", &out, &args)
            .output()
            .unwrap(),
    );
    let placement = common::placement(&out);
    let manifest: analysis::Manifest =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let mut roles: Vec<&str> = manifest
        .sides
        .values()
        .flat_map(|side| side.roles.iter().map(String::as_str))
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let placed: Vec<&str> = placement
        .iter()
        .map(|p| p["role"].as_str().unwrap())
        .collect();
    for role in &roles {
        assert!(placed.contains(role), "{role} has a container: {placed:?}");
        assert!(
            !common::events(&out, role).is_empty(),
            "{role}'s events reached the run"
        );
    }
    // Pool roles on the pool's network, farm roles on the farm's, only links on both
    // (each also on the control network, which carries events and clock probes).
    for p in &placement {
        let on = |site: &str| {
            p["networks"]
                .as_object()
                .unwrap()
                .keys()
                .any(|n| n.ends_with(&format!("-{site}")))
        };
        let expected = match p["site"].as_str().unwrap() {
            "pool" => (true, false),
            "farm" => (false, true),
            "link" => (true, true),
            other => panic!("site {other}"),
        };
        assert_eq!((on("pool"), on("farm")), expected, "{p}");
        assert!(on("control"), "{p}");
    }
    // Every byte between the sites crossed the link: a new block's job reaches the
    // miners no sooner than the link's one-way delay (A's farm node hears of the block
    // farm_node.block_lag after the network's node, and builds the job itself).
    // Each side's shares crossed to its pool and were accepted there (A's through its
    // JDC, whose job declaration crosses the link to the JDS in the pool's container).
    let summary = common::summary(&out);
    // The summary is the one a run of processes writes: its fields, and each side's
    // (those that only data fills aside) are there.
    let skeleton = serde_json::to_value(analysis::stream::compute(&manifest, &[], &[])).unwrap();
    let keys = |v: &serde_json::Value| -> std::collections::BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    let missing: Vec<_> = keys(&skeleton)
        .difference(&keys(&summary))
        .cloned()
        .collect();
    assert!(missing.is_empty(), "the summary lacks {missing:?}");
    for side in manifest.sides.keys() {
        let missing: Vec<_> = keys(&skeleton["sides"][side])
            .difference(&keys(&summary["sides"][side]))
            .cloned()
            .collect();
        assert!(missing.is_empty(), "{side} lacks {missing:?}");
    }
    common::default_sides_worked_across_their_links(&out, &out.join("csv"));
    // Nothing is left behind: the containers and services are gone.
    let left = docker(&["ps", "-a", "--format", "{{.Names}}"]);
    let services = docker(&["service", "ls", "--format", "{{.Name}}"]);
    for p in &placement {
        let name = p["container"].as_str().unwrap();
        assert!(
            !left.lines().any(|l| l.starts_with(name)),
            "{name} was left running"
        );
        assert!(
            !services.lines().any(|l| l == name),
            "{name} was left in the swarm"
        );
    }
}

#[test]
fn every_role_of_the_default_scenario_runs_in_its_own_container_on_its_site() {
    the_default_scenario_apart("docker-engine", &["placement.engine=docker"]);
}

#[test]
fn every_role_of_the_default_scenario_runs_as_a_swarm_service_on_its_sites_nodes() {
    // `make test` labels the swarm's one node stratum-bench=test; on real hosts each site
    // has its own (the default constraints are node.labels.site==pool and ==farm).
    the_default_scenario_apart(
        "swarm-engine",
        &[
            "placement.engine=swarm",
            "placement.pool_nodes=node.labels.stratum-bench==test",
            "placement.farm_nodes=node.labels.stratum-bench==test",
        ],
    );
}

#[test]
fn a_container_that_dies_is_recorded_and_the_run_finishes() {
    let out = common::out_dir("docker-death");
    let run = common::run_baseline(
        &out,
        &[
            "--duration",
            "12s",
            "--set",
            "warmup=2s",
            "--set",
            "placement.engine=docker",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // The run's containers are named after the harness's process.
    let pool = format!("stratum-bench-{}-pool-sv1", run.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // The miners start last.
    while !out.join("events/miners-sv1.jsonl").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the miners never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    docker(&["kill", &pool]);
    common::succeed(run.wait_with_output().unwrap());
    let summary = common::summary(&out);
    assert_eq!(
        summary["unmatched"]["role_exited:pool-sv1"], 1,
        "{}",
        summary["unmatched"]
    );
}

#[test]
fn without_a_docker_daemon_the_run_says_so_before_any_role_starts() {
    let out = common::out_dir("no-docker");
    let run = common::run_baseline(&out, &["--set", "placement.engine=docker"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert!(!run.status.success());
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(said.contains("no Docker daemon answers"), "{said}");
    // No role started: the run leaves no directory (nor logs) behind.
    assert!(
        !out.exists(),
        "a run that could not start leaves no directory"
    );
}
