//! `stratum-bench deploy`: the default scenario as a compose file that `docker-compose`
//! accepts (and `docker stack config`, where the client has it), every role on its site's
//! internal network with nothing published; started with `docker-compose` it runs, and
//! its collector writes the run, whose work crossed the links. Needs a Docker daemon and
//! docker-compose: `make test` installs and starts them.

use crate::common;

use harness::container::Site;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use yaml_rust2::{Yaml, YamlLoader};

/// `stratum-bench deploy scenarios/sv1-vs-sv2.toml --out out ARGS`.
fn deploy(out: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::exe())
        .arg("deploy")
        .arg(common::scenario("sv1-vs-sv2"))
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

/// `docker-compose -f FILE -p PROJECT ARGS`, required to succeed; its stdout.
fn compose(file: &Path, project: &str, args: &[&str]) -> String {
    let out = Command::new("docker-compose")
        .arg("-f")
        .arg(file)
        .args(["-p", project])
        .args(args)
        .output()
        .expect("docker-compose runs (apt-get install docker-compose; make deps does it)");
    assert!(
        out.status.success(),
        "docker-compose {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn strings(yaml: &Yaml) -> Vec<String> {
    yaml.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The values following each `flag` in a command.
fn after_flag(command: &[String], flag: &str) -> Vec<String> {
    command
        .windows(2)
        .filter(|w| w[0] == flag)
        .map(|w| w[1].clone())
        .collect()
}

#[test]
fn deploy_writes_a_compose_file_of_internal_networks_that_docker_compose_accepts() {
    let out = common::out_dir("deploy-file");
    common::succeed(deploy(&out, &["--duration", "60s"]));
    let file = out.join("compose.yaml");
    // The specs in it hold the node's password: the owner's only.
    let mode = std::os::unix::fs::PermissionsExt::mode(&file.metadata().unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "compose.yaml is {mode:o}");
    compose(&file, "check", &["config", "--quiet"]);
    let services = compose(&file, "check", &["config", "--services"]);
    // A client without the command prints its parent's help instead.
    let stack = Command::new("docker")
        .args(["stack", "config", "--help"])
        .output();
    if stack.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("docker stack config")) {
        let out = Command::new("docker")
            .args(["stack", "config", "-c"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "docker stack config: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        eprintln!("this docker client has no `stack config`: checked with docker-compose only");
    }

    let manifest: analysis::Manifest =
        serde_json::from_str(&std::fs::read_to_string(out.join("run/manifest.json")).unwrap())
            .unwrap();
    assert!(manifest.awaiting_start);
    assert_eq!(
        (manifest.window_start_ns, manifest.window_end_ns),
        (20_000_000_000, 80_000_000_000),
        "the window planned from the start: 20 s of warm-up, 60 s measured"
    );
    let mut expected: BTreeSet<String> = manifest.roles().into_iter().collect();
    expected.insert("collector".into());
    let listed: BTreeSet<String> = services.lines().map(String::from).collect();
    assert_eq!(listed, expected);

    let doc = &YamlLoader::load_from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()[0];
    let networks = doc["networks"].as_hash().unwrap();
    assert_eq!(networks.len(), 3);
    for (name, network) in networks {
        assert_eq!(network["internal"].as_bool(), Some(true), "{name:?}");
    }
    // Each role's name on its home network, and the networks each one is on.
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    let mut on: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, service) in doc["services"].as_hash().unwrap() {
        let name = name.as_str().unwrap().to_string();
        assert!(service["ports"].is_badvalue(), "{name} publishes a port");
        for (net, settings) in service["networks"].as_hash().unwrap() {
            let net = net.as_str().unwrap().to_string();
            for alias in strings(&settings["aliases"]) {
                aliases.insert(alias, net.clone());
            }
            on.entry(name.clone()).or_default().insert(net);
        }
    }
    for role in manifest.roles() {
        let service = &doc["services"][role.as_str()];
        let nets: BTreeSet<&str> = on[&role].iter().map(String::as_str).collect();
        let site = Site::of(&role);
        let mut expected: BTreeSet<&str> = site.networks().iter().copied().collect();
        expected.insert("control");
        assert_eq!(nets, expected, "{role}'s networks");
        let command = strings(&service["command"]);
        let spec_text = service["environment"]["STRATUM_BENCH_SPEC"]
            .as_str()
            .unwrap();
        let spec: harness::roles::RoleSpec =
            serde_json::from_str(&spec_text.replace("$$", "$")).unwrap();
        let spec_json = serde_json::to_string(&spec).unwrap();
        // Every stand-in its spec names is resolved by a name it reaches.
        let resolved: BTreeMap<String, String> = after_flag(&command, "--resolve")
            .into_iter()
            .map(|pair| {
                let (stand_in, name) = pair.split_once('=').unwrap();
                (stand_in.to_string(), name.to_string())
            })
            .collect();
        for host in 100..250 {
            let stand_in = format!("198.18.1.{host}");
            if spec_json.contains(&format!("{stand_in}:")) {
                assert!(
                    resolved.contains_key(&stand_in),
                    "{role}: {stand_in} unresolved"
                );
            }
        }
        let mut names: Vec<String> = resolved.values().cloned().collect();
        for waited in after_flag(&command, "--after") {
            match waited.strip_prefix("unix:") {
                // A node's Mining IPC socket, on the run's volume.
                Some(socket) => assert!(
                    socket.starts_with("/run/bench/") && socket.ends_with("/regtest/node.sock"),
                    "{role} waits for {socket}"
                ),
                None => names.push(waited.rsplit_once(':').unwrap().0.to_string()),
            }
        }
        for name in &names {
            let net = aliases
                .get(name)
                .unwrap_or_else(|| panic!("{role}: {name} is nobody"));
            assert!(nets.contains(net.as_str()), "{role} cannot reach {name}");
        }
        // Its own name is its alias on the network it listens on.
        let own = format!("{role}.{}", site.home());
        assert_eq!(
            after_flag(&command, "--own-name"),
            std::slice::from_ref(&own),
            "{role}"
        );
        assert_eq!(
            aliases.get(&own).map(String::as_str),
            Some(site.home()),
            "{role}"
        );
    }

    // What runs only as a process is refused by its field, and nothing is written.
    let refused_out = common::out_dir("deploy-refused");
    let refused = deploy(&refused_out, &["--set", "roles.pool.command=/opt/pool_sv2"]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("roles.pool") && said.contains("process"),
        "{said}"
    );
    assert!(!refused_out.join("compose.yaml").exists());
}

/// Waits until the events collected in `run` reach past the window `plan` sets from the
/// moment its last role started, or fails after `limit`.
fn wait_for_the_window(run: &Path, plan: &analysis::Manifest, limit: Duration) {
    let began = Instant::now();
    loop {
        let (mut first, mut last) = (BTreeMap::new(), 0);
        analysis::input::each_event(run, |r| {
            let at = first.entry(r.role.clone()).or_insert(r.t_ns);
            *at = (*at).min(r.t_ns);
            last = last.max(r.t_ns);
        });
        if let Ok(started) = analysis::manifest::deployment_start(plan, &first) {
            let over = started.at_ns + plan.window_end_ns + 1_000_000_000;
            if started.silent.is_empty() && last > over {
                return;
            }
        }
        assert!(
            began.elapsed() < limit,
            "the deployment's window did not pass within {limit:?}; roles heard: {:?}",
            first.keys().collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Removes a deployment's containers, networks and volume, however the test ends. The
/// daemon may release a removed container's endpoint a moment late and refuse to remove
/// its network ("has active endpoints"): `down` is tried again then.
struct Down<'a>(&'a Path, &'a str);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        for _ in 0..5 {
            let down = Command::new("docker-compose")
                .arg("-f")
                .arg(self.0)
                .args(["-p", self.1, "down", "--volumes"])
                .output();
            if down.is_ok_and(|o| o.status.success()) {
                return;
            }
            std::thread::sleep(Duration::from_secs(3));
        }
    }
}

#[test]
fn a_deployment_started_with_docker_compose_runs_and_its_collector_writes_the_run() {
    let out = common::out_dir("deploy-run");
    common::succeed(deploy(&out, &common::SHORT_RUN_WITH_TIPS));
    let image = Command::new(common::exe()).arg("image").output().unwrap();
    common::succeed(image);
    let file = out.join("compose.yaml");
    let project = format!("sbdeploy{}", std::process::id());
    let _down = Down(&file, &project);
    let run = out.join("run");
    let read_manifest = || -> analysis::Manifest {
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
    };
    compose(&file, &project, &["up", "--detach"]);
    wait_for_the_window(&run, &read_manifest(), Duration::from_secs(240));
    // The roles stop first and hand their last events to the collector, which stops last.
    compose(&file, &project, &["stop"]);

    let manifest = read_manifest();
    assert!(!manifest.awaiting_start, "the collector set the window");
    assert_eq!(manifest.window().secs(), 30.0);
    for role in manifest.roles() {
        assert!(
            !common::events(&run, &role).is_empty(),
            "{role}'s events reached the run"
        );
    }
    let summary = common::summary(&run);
    assert!(
        !summary["unmatched"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("role_without_events")),
        "{}",
        summary["unmatched"]
    );
    // Each role reported its own CPU and memory, and its host's, as a local run samples
    // them: the deployed run's report has the same sections.
    common::every_role_has_cpu_and_memory(&summary, "the deployment's summary");
    assert!(
        summary["host"]["seconds"].as_u64().unwrap() > 0,
        "{}",
        summary["host"]
    );
    assert!(summary["other_hosts"]["farm"]["seconds"].as_u64().unwrap() > 0);
    common::succeed(
        Command::new(common::exe())
            .arg("report")
            .arg(&run)
            .output()
            .unwrap(),
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    for section in [
        "## Roles: CPU and memory",
        "## Host\n",
        "## Host of the farm site",
    ] {
        assert!(report.contains(section), "the report lacks {section:?}");
    }
    common::default_sides_worked_across_their_links(&run, &out.join("csv"));
}
