//! `stratum-bench deploy`: the run a scenario describes, written out for users who start
//! the roles themselves (`docker compose up`, `docker stack deploy`) instead of started.
//!
//! The plan is the run's own topology with no role started: each role's spec is written
//! with every port fixed, and what its READY line would say is handed to the roles after
//! it, with an address that stands in for it (198.18.1.x, the benchmarking range, which no
//! host has). In the deployment each role has a name on its site's internal network
//! (`pool-sv1.pool`, `link-sv1.farm`); at start it puts its own address where its spec says
//! 127.0.0.1 and the others' where it says their stand-ins, then waits until every role it
//! is told of listens, as the harness would have started those before it.
//! Events go to the collector, which at its stop fixes the window and writes the summary.

use crate::container::{default_tag, Site};
use crate::plan::{Plan, PlannedRole};
use crate::process::Launcher;
use crate::run::RunOptions;
use analysis::manifest::Manifest;
use analysis::manifest::{Sample, HOST_ROLE};
use anyhow::{Context, Result};
use model::run_dir::PLACEMENT_FILE;
use model::run_dir::{EVENTS_DIR, MANIFEST_FILE, SAMPLES_FILE, SUMMARY_FILE};
use model::scenario::Scenario;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The run directory inside every role's container (the image has it): role specs,
/// journals, the nodes' Mining IPC sockets.
pub const RUN_DIR: &str = "/run/bench";
/// Where the collector writes the run, inside its container (`OUT/run` on the host).
const COLLECTED: &str = "/collected";
/// The collector's name and port on the control network.
const COLLECTOR: &str = "collector.control:7000";
/// The compose file `deploy` writes.
pub const COMPOSE_FILE: &str = "compose.yaml";
/// What `deploy` wrote.
pub struct Deployment {
    pub dir: PathBuf,
    pub roles: usize,
}

/// Writes the deployment of `scenario` to `out`: `compose.yaml` (every role, its spec in
/// its environment), `run/` (the manifest and scenario the collector completes) and a
/// README.
pub async fn deploy(
    scenario: Scenario,
    worth: analysis::worth::WorthAssumptions,
    out: &Path,
) -> Result<Deployment> {
    let out = std::path::absolute(out)
        .with_context(|| format!("cannot make {} absolute", out.display()))?;
    // A deployment's run is its own: events appended to another's would mix two runs.
    let planned = out.join("run").join(MANIFEST_FILE);
    anyhow::ensure!(
        !planned.exists(),
        "{} holds a deployment already ({}): write this one to another --out",
        out.display(),
        planned.display()
    );
    let plan = std::sync::Arc::new(Plan::default());
    let exe = std::env::current_exe().context("cannot find the stratum-bench executable")?;
    let opts = RunOptions {
        scenario,
        out: Some(out.clone()),
        metrics_bind: ([127, 0, 0, 1], 0).into(),
        worth,
        until_known_pct: None,
        launcher: Launcher {
            plan: Some(plan.clone()),
            ..Launcher::local(&exe)
        },
        cut_collector_after: None,
        interim_reports: None,
    };
    let mut none = Vec::new();
    let sides = crate::run::topology::start_roles(&opts, Path::new(RUN_DIR), &mut none).await?;
    anyhow::ensure!(none.is_empty(), "a plan starts no role");
    let roles = plan.roles();
    let manifest = Manifest {
        awaiting_start: true,
        ..crate::run::manifest_of(&opts, 0, sides)
    };
    write(&out, &opts.scenario, &manifest, &roles)?;
    Ok(Deployment {
        dir: out,
        roles: roles.len(),
    })
}

fn write(
    out: &Path,
    scenario: &Scenario,
    manifest: &Manifest,
    roles: &[PlannedRole],
) -> Result<()> {
    let run = out.join("run");
    std::fs::create_dir_all(run.join(EVENTS_DIR))
        .with_context(|| format!("cannot create {}", run.display()))?;
    std::fs::write(
        run.join(MANIFEST_FILE),
        serde_json::to_string_pretty(manifest)?,
    )?;
    crate::run::write_scenario(&run, scenario)?;
    let compose = compose(scenario, roles, &run)?;
    // The specs in it hold the run's RPC password and the pools' authority keys.
    probe::private::write(&out.join(COMPOSE_FILE), yaml(&compose))?;
    std::fs::write(out.join("README.md"), readme(scenario, roles, out))?;
    Ok(())
}

/// The compose file: the collector and every role, on the pool, farm and control networks
/// (internal, no port published), each role's spec in its environment (where `docker
/// compose`, `docker-compose` 1.29 and a swarm's hosts all have it).
fn compose(scenario: &Scenario, roles: &[PlannedRole], run: &Path) -> Result<Value> {
    let image = default_tag();
    let never_restart = json!({ "condition": "none" });
    let mut services = serde_json::Map::new();
    services.insert(
        "collector".into(),
        json!({
            "image": image,
            "command": [
                "collect", "--listen", "0.0.0.0:7000",
                "--events", format!("{COLLECTED}/{EVENTS_DIR}"),
                "--clocks", format!("{COLLECTED}/{}", model::run_dir::CLOCKS_FILE),
                "--finish", COLLECTED,
            ],
            "networks": { "control": { "aliases": ["collector.control"] } },
            "volumes": [format!("{}:{COLLECTED}", run.display())],
            // It writes the summary when it stops, after every role has handed over.
            "stop_grace_period": "5m",
            "restart": "no",
            "deploy": {
                "restart_policy": never_restart,
                "placement": { "constraints": ["node.role == manager"] },
            },
        }),
    );
    for (i, role) in roles.iter().enumerate() {
        let (args, after) = role_args(role, &roles[..i])?;
        let mut networks = serde_json::Map::new();
        networks.insert(
            role.site.home().into(),
            json!({ "aliases": [role.alias()] }),
        );
        for net in role
            .site
            .networks()
            .iter()
            .filter(|n| **n != role.site.home())
        {
            networks.insert((*net).into(), json!({}));
        }
        networks.insert("control".into(), json!({}));
        let placement = &scenario.placement;
        let constraint = role
            .site
            .nodes(&placement.pool_nodes, &placement.farm_nodes);
        services.insert(
            role.name.clone(),
            json!({
                "image": image,
                "command": args,
                "environment": {
                    "RUST_LOG": crate::container::role_log_filter(),
                    // Compose reads `$` as the start of a variable; `$$` is one `$`.
                    SPEC_VARIABLE: serde_json::to_string(&role.spec)?.replace('$', "$$"),
                },
                "networks": networks,
                "volumes": [format!("run:{RUN_DIR}")],
                "depends_on": std::iter::once("collector".to_string()).chain(after).collect::<Vec<_>>(),
                // Time to hand its last events to the collector.
                "stop_grace_period": "30s",
                "restart": "no",
                "deploy": {
                    "restart_policy": never_restart,
                    "endpoint_mode": "dnsrr",
                    "placement": { "constraints": [constraint] },
                },
            }),
        );
    }
    let network = json!({ "internal": true });
    Ok(json!({
        "version": "3.8",
        "services": services,
        "networks": { "pool": network, "farm": network, "control": network },
        "volumes": { "run": {} },
    }))
}

/// The environment variable a deployed role's spec is in.
const SPEC_VARIABLE: &str = "STRATUM_BENCH_SPEC";

/// `stratum-bench ARGS` of `role`, planned after the roles `before` it; and the roles it
/// waits for: those its spec is told of, as the harness would have started them first.
fn role_args(role: &PlannedRole, before: &[PlannedRole]) -> Result<(Vec<String>, Vec<String>)> {
    let mut args: Vec<String> = [
        "role",
        "--spec-env",
        SPEC_VARIABLE,
        "--name",
        &role.name,
        "--collector",
        COLLECTOR,
        "--journal",
        &format!("{RUN_DIR}/journals/{}.jsonl", role.name),
        "--own-name",
        &role.alias(),
    ]
    .map(String::from)
    .to_vec();
    let spec = serde_json::to_string(&role.spec)?;
    let mut after = Vec::new();
    for other in before {
        let Some(waits) = other.waited_by(&spec) else {
            continue;
        };
        anyhow::ensure!(
            role.reaches(other),
            "role {} is told of {}, which its site's network does not reach",
            role.name,
            other.name
        );
        let stand_in = other.stand_in.to_string();
        if spec.contains(&stand_in) {
            args.extend(["--resolve".into(), format!("{stand_in}={}", other.alias())]);
        }
        for wait in waits {
            args.extend(["--after".into(), wait]);
        }
        after.push(other.name.clone());
    }
    Ok((args, after))
}

/// YAML of a JSON value, keys in their order.
fn yaml(value: &Value) -> String {
    use yaml_rust2::Yaml;
    fn convert(value: &Value) -> Yaml {
        match value {
            Value::Null => Yaml::Null,
            Value::Bool(b) => Yaml::Boolean(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Yaml::Integer(i),
                None => Yaml::Real(n.to_string()),
            },
            Value::String(s) => Yaml::String(s.clone()),
            Value::Array(items) => Yaml::Array(items.iter().map(convert).collect()),
            Value::Object(map) => Yaml::Hash(
                map.iter()
                    .map(|(k, v)| (Yaml::String(k.clone()), convert(v)))
                    .collect(),
            ),
        }
    }
    let mut text = String::new();
    yaml_rust2::YamlEmitter::new(&mut text)
        .dump(&convert(value))
        .expect("a string takes any YAML");
    text + "\n"
}

/// The deployment's README: what it is, how to start it, stop it and read the run.
fn readme(scenario: &Scenario, roles: &[PlannedRole], out: &Path) -> String {
    let image = default_tag();
    let window = scenario.warmup + scenario.duration;
    let list: Vec<String> = roles
        .iter()
        .map(|r| match r.site {
            Site::Link => format!("- `{}` (between the sites)", r.name),
            site => format!("- `{}` ({} site)", r.name, site.home()),
        })
        .collect();
    format!(
        include_str!("deploy_readme.md"),
        name = scenario.name,
        sides = scenario.sides.join(", "),
        roles = list.join("\n"),
        image = image,
        out = out.display(),
        warmup = scenario.warmup.as_secs(),
        duration = scenario.duration.as_secs(),
        window = window.as_secs() + 5,
        compose = COMPOSE_FILE,
        placement = PLACEMENT_FILE,
        summary = SUMMARY_FILE,
    )
}

/// The plan's manifest in a deployment's run directory, once it is known to await its
/// run: a run collected and finished already is not collected into again (its events
/// would mix with the next run's).
pub fn awaiting_collection(dir: &Path) -> Result<Manifest> {
    let manifest = Manifest::read(dir)?;
    anyhow::ensure!(
        manifest.awaiting_start,
        "{} is a finished run: deploy again (stratum-bench deploy) to measure again",
        dir.display()
    );
    Ok(manifest)
}

/// At the collector's stop (`collect --finish DIR`), a deployment's run directory: its
/// plan's manifest (`awaiting_collection`) given the window from when its last role
/// started and the collector's `clocks`, then the summary, as `run` writes them.
pub fn finish_collected(
    dir: &Path,
    mut manifest: Manifest,
    clocks: Vec<analysis::manifest::ClockOffset>,
) -> Result<()> {
    let mut first = std::collections::BTreeMap::new();
    let mut last_ns = 0;
    let mut reports = Vec::new();
    analysis::input::each_event(dir, |r| {
        // A role reports its resources from before it serves: they do not mark its start.
        if matches!(r.event, probe::Event::Resources { .. }) {
            reports.push(r);
            return;
        }
        let at = first.entry(r.role.clone()).or_insert(r.t_ns);
        *at = (*at).min(r.t_ns);
        last_ns = last_ns.max(r.t_ns);
    });
    let started =
        analysis::manifest::deployment_start(&manifest, &first).map_err(anyhow::Error::msg)?;
    manifest.start_at(started.at_ns, last_ns);
    manifest.clocks = clocks;
    let samples = samples_of_reports(reports);
    let mut lines = String::new();
    for sample in &samples {
        lines.push_str(&serde_json::to_string(sample)?);
        lines.push('\n');
    }
    // The run is summarised without them rather than not at all.
    let file = dir.join(SAMPLES_FILE);
    match std::fs::write(&file, lines) {
        Ok(()) => tracing::info!(
            samples = samples.len(),
            "the roles' reports of their resources"
        ),
        Err(e) => {
            tracing::warn!(file = %file.display(), error = %e, "cannot write the roles' reports")
        }
    }
    let (mut summary, _) = analysis::stream::summarize_dir(dir, &manifest, |_| {})
        .with_context(|| format!("cannot summarize {}", dir.display()))?;
    for role in started.silent {
        tracing::error!(
            role,
            "role sent no event: it did not start, or its events never came"
        );
        summary
            .unmatched
            .insert(format!("role_without_events:{role}"), 1);
    }
    crate::run::write_results(dir, &manifest, &summary)?;
    tracing::info!(dir = %dir.display(), "deployment's run summarised");
    Ok(())
}

/// The host samples of a site's roles are named after it: `host` for the pool's (links
/// run there too), where the collector runs; `host-farm` for the farm's.
pub(crate) fn host_of(role: &str) -> String {
    match Site::of(role) {
        Site::Farm => format!("{HOST_ROLE}-farm"),
        Site::Pool | Site::Link => HOST_ROLE.to_string(),
    }
}

/// The roles' own reports of their CPU, memory and host (`Event::Resources`) made the
/// samples a local run writes (`samples.jsonl`), as they come, so a deployed run's report
/// has the same sections: a role's CPU over each span from its successive CPU times, and
/// each site's host from one role's reports, the site's first by name (one earlier by name
/// whose reports come later replaces the one before, its host samples too).
#[derive(Default)]
pub(crate) struct ReportedSamples {
    /// Each reporting role's last two reports.
    latest: BTreeMap<String, LatestReport>,
    /// The role whose reports give each site's host.
    host_reporters: BTreeMap<String, String>,
    samples: Vec<Sample>,
}

impl ReportedSamples {
    /// Takes `r` when it is a report, leaving out the roles in `roles_read` and the hosts
    /// in `hosts_read` (read otherwise: by the harness on this host).
    pub(crate) fn add(
        &mut self,
        r: &probe::Record,
        roles_read: &BTreeSet<String>,
        hosts_read: &BTreeSet<String>,
    ) {
        let probe::Event::Resources {
            cpu_s,
            rss_bytes,
            host,
        } = &r.event
        else {
            return;
        };
        let now = (r.t_ns, *cpu_s);
        let report = (self.latest.entry(r.role.clone()))
            .and_modify(|l| *l = l.then(now, *rss_bytes))
            .or_insert(LatestReport {
                before: None,
                now,
                rss_bytes: *rss_bytes,
            });
        if roles_read.contains(&r.role) {
            return;
        }
        self.samples.push(Sample {
            t_ns: r.t_ns,
            role: r.role.clone(),
            cpu_pct: report.cpu_pct(),
            cpu_s: Some(*cpu_s),
            rss_bytes: *rss_bytes,
            host: None,
        });
        let site_host = host_of(&r.role);
        if hosts_read.contains(&site_host) {
            return;
        }
        let reporter = self.host_reporters.entry(site_host.clone()).or_default();
        if reporter.is_empty() || r.role < *reporter {
            self.samples.retain(|s| s.role != site_host);
            *reporter = r.role.clone();
        }
        if *reporter == r.role {
            self.samples
                .push(Sample::of_host(r.t_ns, &site_host, host.clone()));
        }
    }

    /// Each reporting role's latest report: (time, CPU % over its last span, memory).
    pub(crate) fn latest(&self) -> impl Iterator<Item = (&String, u64, f64, u64)> {
        (self.latest.iter()).map(|(role, l)| (role, l.now.0, l.cpu_pct(), l.rss_bytes))
    }

    /// The samples so far, in the order their reports came.
    pub(crate) fn samples(&self) -> &[Sample] {
        &self.samples
    }

    pub(crate) fn take_samples(&mut self) -> Vec<Sample> {
        std::mem::take(&mut self.samples)
    }
}

/// A role's last two reports of its resources: (time, CPU seconds) each, and its memory.
#[derive(Clone, Copy)]
struct LatestReport {
    before: Option<(u64, f64)>,
    now: (u64, f64),
    rss_bytes: u64,
}

impl LatestReport {
    fn then(self, now: (u64, f64), rss_bytes: u64) -> LatestReport {
        LatestReport {
            before: Some(self.now),
            now,
            rss_bytes,
        }
    }

    fn cpu_pct(&self) -> f64 {
        self.before
            .map_or(0.0, |before| cpu_pct_between(before, self.now))
    }
}

/// Every report among `records` as samples, in time order (a deployment's at its end).
fn samples_of_reports(mut records: Vec<probe::Record>) -> Vec<Sample> {
    records.sort_by_key(|r| r.t_ns);
    let mut reported = ReportedSamples::default();
    let none = BTreeSet::new();
    for r in &records {
        reported.add(r, &none, &none);
    }
    let mut samples = reported.take_samples();
    samples.sort_by_key(|s| s.t_ns);
    samples
}

/// A process's CPU, % of a core, between two readings of (time ns, CPU seconds); 0 when
/// they are not in time order.
fn cpu_pct_between((t0, cpu0): (u64, f64), (t1, cpu1): (u64, f64)) -> f64 {
    if t1 <= t0 {
        return 0.0;
    }
    (cpu1 - cpu0).max(0.0) / ((t1 - t0) as f64 / 1e9) * 100.0
}

/// A deployment's run whose collector died before it finished the run (killed, its host
/// lost), finished from what the collector left: the events it wrote (each moved onto this
/// host's clock as it came) and its clocks' estimates, which it writes after every round of
/// probes. Events a role had not shipped yet stay in that role's journal.
pub fn finish_after_collector(dir: &Path) -> Result<()> {
    let plan = awaiting_collection(dir)?;
    let file = dir.join(model::run_dir::CLOCKS_FILE);
    let clocks = match std::fs::read(&file) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not the collector's clocks", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(
                file = %file.display(),
                "no clock estimates: the collector died before its first round of probes; the run records no clock's offset"
            );
            Vec::new()
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    finish_collected(dir, plan, clocks)
}

/// How long a deployed role waits for a name to resolve or a role before it to listen.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(180);

/// The address `name` resolves to, asked again while the name is not yet known (a
/// deployment's roles start in any order), for up to [`PATIENCE`].
pub async fn lookup(name: &str) -> Result<IpAddr> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let found = async || {
        let mut addrs = tokio::net::lookup_host((name, 0)).await.ok()?;
        addrs.find(|a| a.is_ipv4()).map(|a| a.ip())
    };
    retry_until(deadline, found)
        .await
        .with_context(|| format!("{name} did not resolve within {} s", PATIENCE.as_secs()))
}

/// `attempt` again every 250 ms until it gives a value, or None once `deadline` passes.
async fn retry_until<T>(
    deadline: tokio::time::Instant,
    mut attempt: impl AsyncFnMut() -> Option<T>,
) -> Option<T> {
    loop {
        if let Some(value) = attempt().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// A deployed role's spec (`text`) made its own: `own` where it says 127.0.0.1, and where
/// it says another role's stand-in, that role's address (`resolve`: `STAND_IN=NAME`
/// pairs); then waits until every `HOST:PORT` (or `unix:PATH`) of `after` accepts a
/// connection. Returns the spec.
pub async fn settle(
    text: String,
    own: IpAddr,
    resolve: &[String],
    after: &[String],
) -> Result<String> {
    let mut text = text.replace("127.0.0.1", &own.to_string());
    for pair in resolve {
        let (stand_in, name) = pair
            .split_once('=')
            .with_context(|| format!("--resolve {pair}: expected STAND_IN=NAME"))?;
        let ip = lookup(name).await?;
        text = text.replace(stand_in, &ip.to_string());
    }
    let deadline = tokio::time::Instant::now() + PATIENCE;
    for addr in after {
        let accepts = async || match addr.strip_prefix("unix:") {
            Some(path) => tokio::net::UnixStream::connect(path).await.ok().map(drop),
            None => tokio::net::TcpStream::connect(addr).await.ok().map(drop),
        };
        retry_until(deadline, accepts).await.with_context(|| {
            format!(
                "{addr} did not listen within {} s: the role before this one did not start",
                PATIENCE.as_secs()
            )
        })?;
        tracing::debug!(addr, "listening");
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::RoleSpec;
    use analysis::manifest::HostReading;
    use std::net::Ipv4Addr;

    fn node(ipc: Option<&str>) -> RoleSpec {
        RoleSpec::Node {
            config: node::NodeConfig::default(),
            rpc_user: "u".into(),
            rpc_password: "p".into(),
            tdp: None,
            ipc: ipc.map(|dir| node::ipc::IpcOptions {
                data_dir: PathBuf::from(dir),
                interface: Default::default(),
            }),
            peer: None,
            ports: Default::default(),
        }
    }

    fn tap(upstream: &str) -> RoleSpec {
        RoleSpec::tap(
            upstream.parse().unwrap(),
            &sv2_wire::AuthorityKeys::generate(),
        )
    }

    fn link(upstream: &str) -> RoleSpec {
        RoleSpec::Link {
            routes: vec![crate::roles::LinkRoute {
                listen: "127.0.0.1:0".parse().unwrap(),
                shared: false,
                upstream: upstream.parse().unwrap(),
                config: link::LinkConfig::from_rtt(std::time::Duration::from_millis(100)),
            }],
            attack: None,
            faults: Vec::new(),
            warmup: std::time::Duration::ZERO,
        }
    }

    /// A node, the tap in front of a pool-site role, a link, a farm role behind it: each
    /// told of the one before it resolves that one's name on its own network and waits for
    /// its ports, and no other; the node's ports are fixed from 4000 and announced at its
    /// stand-in; a role told of the node's Mining IPC directory waits for the node.
    #[test]
    fn each_role_resolves_and_waits_for_the_roles_its_spec_is_told_of() {
        let plan = Plan::default();
        let ready = plan
            .add("node", &node(Some("/run/bench/node-ipc")))
            .unwrap();
        let rpc = ready.rpc.unwrap().to_string();
        assert_eq!(rpc, "198.18.1.100:4000");
        assert_eq!(ready.zmq.as_deref(), Some("tcp://198.18.1.100:4001"));
        assert_eq!(
            ready.zmq_hashblock.as_deref(),
            Some("tcp://198.18.1.100:4002")
        );
        assert_eq!(ready.start_mono_ns, None, "a plan cannot know it");
        let tap_at = plan
            .add("tap-x", &tap(&rpc))
            .unwrap()
            .listen
            .unwrap()
            .to_string();
        assert_eq!(tap_at, "198.18.1.101:4000");
        let link_ready = plan.add("link-x", &link(&tap_at)).unwrap();
        let farm_end = link_ready.routes[0].to_string();
        assert_eq!(farm_end, "198.18.1.102:4000");
        plan.add("translator-x", &tap(&farm_end)).unwrap();
        let roles = plan.roles();
        assert_eq!(roles[0].ports, [4000, 4001, 4002]);

        let args = |i: usize| role_args(&roles[i], &roles[..i]).unwrap();
        let (tap_args, tap_after) = args(1);
        assert!(tap_args
            .windows(2)
            .any(|w| w == ["--own-name", "tap-x.pool"]));
        assert!(tap_args
            .windows(2)
            .any(|w| w == ["--resolve", "198.18.1.100=node.pool"]));
        let waits: Vec<&String> = (tap_args.windows(2))
            .filter(|w| w[0] == "--after")
            .map(|w| &w[1])
            .collect();
        assert_eq!(
            waits,
            ["node.pool:4000", "node.pool:4001", "node.pool:4002"]
        );
        assert_eq!(tap_after, ["node"]);

        let (link_args, link_after) = args(2);
        assert!(link_args
            .windows(2)
            .any(|w| w == ["--own-name", "link-x.farm"]));
        assert!(link_args
            .windows(2)
            .any(|w| w == ["--resolve", "198.18.1.101=tap-x.pool"]));
        assert_eq!(link_after, ["tap-x"]);

        let (farm_args, farm_after) = args(3);
        assert!(farm_args
            .windows(2)
            .any(|w| w == ["--resolve", "198.18.1.102=link-x.farm"]));
        assert!(farm_args
            .windows(2)
            .any(|w| w == ["--after", "link-x.farm:4000"]));
        assert_eq!(farm_after, ["link-x"]);

        // Told of the node's IPC directory only: it waits for the node, resolving nothing.
        let by_ipc = PlannedRole {
            name: "pool-y".into(),
            site: Site::Pool,
            stand_in: Ipv4Addr::new(198, 18, 1, 200),
            spec: node(Some("/run/bench/node-ipc")),
            ports: Vec::new(),
        };
        let (ipc_args, ipc_after) = role_args(&by_ipc, &roles[..1]).unwrap();
        assert_eq!(ipc_after, ["node"]);
        assert!(!ipc_args.contains(&"--resolve".to_string()));
        // Its socket too: the node serves it after its ports open.
        let socket = "unix:/run/bench/node-ipc/regtest/node.sock".to_string();
        assert!(ipc_args
            .windows(2)
            .any(|w| w == ["--after".to_string(), socket.clone()]));
        // A farm role told of a pool-site role directly would cross no link: refused.
        let crossing = PlannedRole {
            name: "miners-z".into(),
            site: Site::Farm,
            ..roles[1].clone()
        };
        let refused = role_args(&crossing, &roles[..1]).unwrap_err().to_string();
        assert!(refused.contains("miners-z is told of node"), "{refused}");
    }

    /// The compose file's YAML keeps the keys' order and quotes what YAML would read as
    /// another type.
    #[test]
    fn yaml_keeps_order_and_quotes_what_would_change_type() {
        let text = yaml(&json!({ "version": "3.8", "b": ["no", "x y"], "a": { "n": 3 } }));
        assert_eq!(
            text,
            "---\nversion: \"3.8\"\nb:\n  - \"no\"\n  - x y\na:\n  n: 3\n"
        );
    }

    #[test]
    fn roles_reports_become_the_samples_a_local_run_writes() {
        let dir = std::env::temp_dir().join(format!("reports-{}", std::process::id()));
        let events = dir.join(EVENTS_DIR);
        std::fs::create_dir_all(&events).unwrap();
        let host = |busy: f64| HostReading {
            core_busy_pct: vec![busy, busy],
            busy_pct: busy,
            mem_total_bytes: 8_000,
            mem_available_bytes: 6_000,
            ..HostReading::default()
        };
        // Each role reports at 1 s, 2 s and 3 s: CPU times 1.0, 1.5 and 2.5 s are 50%
        // then 100% of a core; the first second has no rate yet.
        for (role, busy) in [("pool-sv1", 10.0), ("tap-sv1", 20.0), ("miners-sv1", 30.0)] {
            let lines: String = [(1, 1.0), (2, 1.5), (3, 2.5)]
                .map(|(s, cpu_s)| {
                    let record = probe::Record {
                        t_ns: s * 1_000_000_000,
                        role: role.into(),
                        event: probe::Event::Resources {
                            cpu_s,
                            rss_bytes: 4096,
                            host: host(busy),
                        },
                    };
                    serde_json::to_string(&record).unwrap() + "\n"
                })
                .concat();
            std::fs::write(events.join(format!("{role}.jsonl")), lines).unwrap();
        }
        let mut reports = Vec::new();
        analysis::input::each_event(&dir, |r| reports.push(r));
        let samples = samples_of_reports(reports);
        assert_eq!(samples.len(), 9 + 6);
        let of =
            |role: &str| -> Vec<&Sample> { samples.iter().filter(|s| s.role == role).collect() };
        let pool: Vec<f64> = of("pool-sv1").iter().map(|s| s.cpu_pct).collect();
        assert_eq!(pool, [0.0, 50.0, 100.0]);
        assert_eq!(of("pool-sv1")[2].cpu_s, Some(2.5));
        // One role a host reports it: the pool's site by its first role's name (pool-sv1,
        // not the tap), the farm's by its miners; 2 cores at 10% are 20% of one core.
        let pool_host = of(HOST_ROLE);
        assert_eq!(pool_host.len(), 3);
        assert_eq!(pool_host[0].cpu_pct, 20.0);
        assert_eq!(pool_host[0].rss_bytes, 2_000);
        assert_eq!(of("host-farm")[0].host.as_ref().unwrap().busy_pct, 30.0);
        assert!(samples.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
