//! Roles in containers: the one image every role runs from, built without a registry.
//!
//! The image holds the `stratum-bench` executable (debug info stripped) and the shared
//! libraries it links, `FROM scratch`: nothing else runs in it. Every role is
//! `stratum-bench role ...` in it, the collector `stratum-bench collect ...`. Hosts without
//! a registry get it with `docker save TAG | ssh HOST docker load`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest Docker engine the container features rely on (internal overlay networks,
/// `docker stack deploy` of compose v3 files).
const MIN_ENGINE: (u32, u32) = (20, 10);

/// The image tag of this build.
pub fn default_tag() -> String {
    format!("stratum-bench:{}", env!("CARGO_PKG_VERSION"))
}

/// Runs `docker ARGS`, returning its stdout; an error carries its stderr.
pub fn docker(args: &[&str]) -> Result<String> {
    let out = Command::new("docker").args(args).output().context(
        "cannot run `docker`: install Docker (Debian: apt-get install docker.io) and put it on PATH",
    )?;
    if !out.status.success() {
        bail!(
            "`docker {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The engine's version, once it is known to answer and be recent enough; otherwise an
/// error saying what is missing and how to fix it.
pub fn check_engine() -> Result<String> {
    let version = docker(&["version", "--format", "{{.Server.Version}}"]).context(
        "no Docker daemon answers: start one (systemctl start docker, or dockerd as root; `make test` starts one itself)",
    )?;
    let mut parts = version
        .split(['.', '+', '-'])
        .map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten(), parts.next().flatten());
    match major.zip(minor) {
        Some(have) if have >= MIN_ENGINE => Ok(version),
        Some(_) => bail!(
            "the Docker engine is {version}; stratum-bench needs {}.{} or newer",
            MIN_ENGINE.0,
            MIN_ENGINE.1
        ),
        None => bail!("cannot read the Docker engine's version {version:?}"),
    }
}

/// Builds the image `tag` from `exe` and the shared libraries `ldd` says it loads.
pub fn build_image(exe: &Path, tag: &str) -> Result<()> {
    check_engine()?;
    let context = std::env::temp_dir().join(format!("stratum-bench-image-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&context);
    let built = fill_context(exe, &context).and_then(|()| {
        docker(&["build", "--quiet", "--tag", tag, &context.to_string_lossy()])
            .with_context(|| format!("cannot build the image {tag}"))
    });
    let _ = std::fs::remove_dir_all(&context);
    built.map(|_| ())
}

/// The build context: `rootfs/` (the executable, its libraries, an empty /tmp) and a
/// Dockerfile copying it onto nothing.
fn fill_context(exe: &Path, context: &Path) -> Result<()> {
    let rootfs = context.join("rootfs");
    for dir in ["usr/local/bin", "tmp", "run/bench"] {
        std::fs::create_dir_all(rootfs.join(dir))?;
    }
    let target = rootfs.join("usr/local/bin/stratum-bench");
    // The image need not carry debug info (a third of the executable's size).
    let stripped = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(exe)
        .arg(&target)
        .status()
        .is_ok_and(|s| s.success());
    if !stripped {
        std::fs::copy(exe, &target)
            .with_context(|| format!("cannot copy {} into the image", exe.display()))?;
    }
    for library in shared_libraries(exe)? {
        let inside = rootfs.join(library.strip_prefix("/").unwrap_or(&library));
        std::fs::create_dir_all(inside.parent().context("a library has a directory")?)?;
        // Copies the file a symlink names, under the symlink's name.
        std::fs::copy(&library, &inside)
            .with_context(|| format!("cannot copy {} into the image", library.display()))?;
    }
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/usr/local/bin/stratum-bench\"]\n",
    )?;
    Ok(())
}

/// The shared libraries `exe` loads, and its loader, as `ldd` lists them.
fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(exe)
        .output()
        .context("cannot run ldd to list the executable's libraries")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // A static executable needs none.
        if text.contains("not a dynamic executable") {
            return Ok(Vec::new());
        }
        bail!(
            "ldd {} failed: {}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(libraries_in(&text))
}

/// The absolute paths in `ldd` output: `name => /path (addr)` and `/path (addr)`.
fn libraries_in(ldd: &str) -> Vec<PathBuf> {
    ldd.lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = line.split_once("=>").map_or(line, |(_, p)| p.trim());
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_finds_its_own_address_by_network() {
        assert_eq!(
            own_address_in("127.0.0.0/8").unwrap(),
            std::net::Ipv4Addr::LOCALHOST
        );
        // No interface has the unspecified address (any real network may be this host's).
        assert!(own_address_in("0.0.0.0/32").is_err());
        assert!(own_address_in("127.0.0.1").is_err());
    }

    #[test]
    fn the_libraries_are_read_from_ldd() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f68)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f69)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f70)\n";
        assert_eq!(
            libraries_in(ldd),
            [
                "/lib/x86_64-linux-gnu/libstdc++.so.6",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
    }
}

/// Where a role stands: the pool's site, the farm's, or both (a side's links).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Site {
    Pool,
    Farm,
    Link,
}

impl Site {
    /// The network a role of this site listens on (a link at the farm's end).
    pub fn home(self) -> &'static str {
        match self {
            Site::Pool => "pool",
            Site::Farm | Site::Link => "farm",
        }
    }

    /// Of a swarm's placement constraints for the pool's nodes and the farm's, the one a
    /// role of this site takes: a link stands with the pool.
    pub fn nodes<'a>(self, pool_nodes: &'a str, farm_nodes: &'a str) -> &'a str {
        match self {
            Site::Farm => farm_nodes,
            Site::Pool | Site::Link => pool_nodes,
        }
    }

    /// The site networks a role of this site is on (besides the control network).
    pub fn networks(self) -> &'static [&'static str] {
        match self {
            Site::Pool => &["pool"],
            Site::Farm => &["farm"],
            Site::Link => &["farm", "pool"],
        }
    }

    /// A role's site, from the name the run gives it: the network's node, pools, their
    /// Template Providers and the taps in front of them at the pool; links and the nodes'
    /// feed between the sites; everything else (miners, translators, JDCs, the farm's
    /// node, the JD tap) at the farm.
    pub fn of(role: &str) -> Site {
        let kind = role.split('-').next().unwrap_or(role);
        match kind {
            "node" if role == "node" => Site::Pool,
            "pool" | "tap" | "template" => Site::Pool,
            "link" | "feed" => Site::Link,
            _ => Site::Farm,
        }
    }
}

/// One internal network of a run, and the next address it hands out.
struct Network {
    name: String,
    /// The first three octets of its /24.
    prefix: [u8; 3],
    next: std::sync::atomic::AtomicU8,
}

impl Network {
    fn address(&self) -> Result<std::net::Ipv4Addr> {
        let host = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        anyhow::ensure!(host < 250, "network {} is out of addresses", self.name);
        let [a, b, c] = self.prefix;
        Ok(std::net::Ipv4Addr::new(a, b, c, host))
    }
}

/// Where one role's container stands, as `placement.json` records it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Placed {
    pub role: String,
    pub container: String,
    pub site: Site,
    /// Network name -> the role's address on it (a service finds its own: none here).
    pub networks: std::collections::BTreeMap<String, Option<std::net::Ipv4Addr>>,
    /// The swarm node a service's task runs on (its ID), once it is ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// With the swarm engine: the placement constraints of each site's services.
#[derive(Debug, Clone)]
pub struct SwarmSites {
    pub pool_nodes: String,
    pub farm_nodes: String,
}

/// A run's roles as containers on this host's Docker engine: the image, the pool, farm
/// and control networks (all internal), and the collector on the control network.
pub struct Containers {
    prefix: String,
    image: String,
    run_dir: PathBuf,
    pool: Network,
    farm: Network,
    control: Network,
    collector_ip: std::net::Ipv4Addr,
    placed: parking_lot::Mutex<Vec<Placed>>,
    /// Swarm services instead of containers of this engine.
    swarm: Option<SwarmSites>,
    /// The services seen with no task running at the last look, and when that was.
    ended: parking_lot::Mutex<(
        Option<std::time::Instant>,
        std::collections::HashSet<String>,
    )>,
    finished: bool,
}

/// Where the collector listens on the control network.
const COLLECTOR_PORT: u16 = 7000;

impl Containers {
    /// Builds the image, creates the networks and starts the collector, whose copy of the
    /// events goes to `run_dir/events` (`run_dir` absolute: every container mounts it at
    /// the same path, for role specs, journals and the nodes' IPC sockets).
    /// With `swarm`, roles are services placed by its constraints and the networks are
    /// overlays (the run directory's mount is then only the collector's, on this host).
    pub fn start(exe: &Path, run_dir: &Path, swarm: Option<SwarmSites>) -> Result<Containers> {
        check_engine()?;
        if let Some(sites) = &swarm {
            check_swarm(sites)?;
        }
        let id = std::process::id();
        let prefix = format!("stratum-bench-{id}");
        // A swarm's other hosts load the version's tag (`docker save | docker load`); a
        // run on one host has a tag of its own, removed at its end.
        let image = match swarm {
            Some(_) => default_tag(),
            None => format!("{}-run-{id}", default_tag()),
        };
        build_image(exe, &image)?;
        let driver: &[&str] = match swarm {
            Some(_) => &["--driver", "overlay", "--attachable"],
            None => &[],
        };
        let base = free_subnets(&prefix, id, driver)?;
        let network = |site: &str, k: u8| Network {
            name: format!("{prefix}-{site}"),
            prefix: [172, 28, base + k],
            next: std::sync::atomic::AtomicU8::new(10),
        };
        let containers = Containers {
            image,
            run_dir: run_dir.to_path_buf(),
            pool: network("pool", 0),
            farm: network("farm", 1),
            control: network("control", 2),
            collector_ip: std::net::Ipv4Addr::new(172, 28, base + 2, 2),
            placed: parking_lot::Mutex::new(Vec::new()),
            swarm,
            ended: parking_lot::Mutex::new((None, Default::default())),
            finished: false,
            prefix,
        };
        let mount = containers.mount();
        let events = run_dir.join(model::run_dir::EVENTS_DIR);
        let collector = containers.collector_name();
        docker(&[
            "run",
            "-d",
            "--name",
            &collector,
            "--network",
            &containers.control.name,
            "--ip",
            &containers.collector_ip.to_string(),
            "-v",
            &mount,
            &containers.image,
            "collect",
            "--listen",
            &format!("0.0.0.0:{COLLECTOR_PORT}"),
            "--events",
            &events.to_string_lossy(),
            "--clocks",
            &run_dir.join(model::run_dir::CLOCKS_FILE).to_string_lossy(),
        ])
        .context("cannot start the collector container")?;
        Ok(containers)
    }

    /// Where roles send their events.
    pub fn collector_addr(&self) -> std::net::SocketAddr {
        (self.collector_ip, COLLECTOR_PORT).into()
    }

    fn collector_name(&self) -> String {
        format!("{}-collector", self.prefix)
    }

    fn mount(&self) -> String {
        format!("{0}:{0}", self.run_dir.display())
    }

    /// Creates role `name`'s container, on its site's network (a link on both) and the
    /// control network, running `args` (after `stratum-bench`); returns its address on its
    /// own site (the farm side for a link), where it listens.
    /// `interactive`: its stdin kept open, for what the harness tells it as it runs.
    pub fn create(
        &self,
        name: &str,
        args: &[std::ffi::OsString],
        cpus: Option<&[usize]>,
        interactive: bool,
    ) -> Result<(String, std::net::Ipv4Addr)> {
        let site = Site::of(name);
        let (home, other) = self.networks_of(site);
        let container = format!("{}-{name}", self.prefix);
        let ip = home.address()?;
        let rust_log = role_log_filter();
        let mut create: Vec<String> = [
            "create",
            "--name",
            &container,
            "--network",
            &home.name,
            "--ip",
            &ip.to_string(),
            "-v",
            &self.mount(),
            "-e",
            &format!("RUST_LOG={rust_log}"),
        ]
        .map(String::from)
        .to_vec();
        if let Some(cpus) = cpus {
            let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
            create.extend(["--cpuset-cpus".into(), list.join(",")]);
        }
        if interactive {
            create.push("--interactive".into());
        }
        create.push(self.image.clone());
        create.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
        create.extend(["--bind-ip".into(), ip.to_string()]);
        let create: Vec<&str> = create.iter().map(String::as_str).collect();
        docker(&create).with_context(|| format!("cannot create the container of role {name}"))?;
        let mut networks = std::collections::BTreeMap::from([(home.name.clone(), Some(ip))]);
        for net in other.into_iter().chain([&self.control]) {
            let at = net.address()?;
            docker(&[
                "network",
                "connect",
                "--ip",
                &at.to_string(),
                &net.name,
                &container,
            ])?;
            networks.insert(net.name.clone(), Some(at));
        }
        self.placed.lock().push(Placed {
            role: name.into(),
            container: container.clone(),
            site,
            networks,
            node: None,
        });
        Ok((container, ip))
    }

    /// The volume every service of the run mounts at the run directory's path: on each
    /// host, what the roles there share (the nodes' Mining IPC sockets, journals).
    fn volume(&self) -> String {
        format!("{}-run", self.prefix)
    }

    /// Whether roles are swarm services.
    pub fn is_swarm(&self) -> bool {
        self.swarm.is_some()
    }

    /// Creates role `name` as a swarm service on its site's nodes and networks (a link
    /// on both), its spec (`spec`, written with loopback addresses) as a config; the role
    /// finds its own address on its site's network and puts it where the spec says
    /// 127.0.0.1. Returns the service's name.
    pub fn create_service(
        &self,
        name: &str,
        spec: &Path,
        args: &[std::ffi::OsString],
    ) -> Result<String> {
        let sites = self.swarm.as_ref().context("a swarm run")?;
        let site = Site::of(name);
        let (home, other) = self.networks_of(site);
        let constraint = site.nodes(&sites.pool_nodes, &sites.farm_nodes);
        let service = format!("{}-{name}", self.prefix);
        let config = format!("{service}-spec");
        docker(&["config", "create", &config, &spec.to_string_lossy()])
            .with_context(|| format!("cannot hand role {name} its spec"))?;
        let rust_log = role_log_filter();
        let [a, b, c] = home.prefix;
        let mut create: Vec<String> = [
            "service",
            "create",
            "--detach",
            "--quiet",
            "--name",
            &service,
            "--constraint",
            constraint,
            "--restart-condition",
            "none",
            "--network",
            &home.name,
            "--config",
            &format!("source={config},target={SERVICE_SPEC}"),
            "--mount",
            &format!(
                "type=volume,source={},target={}",
                self.volume(),
                self.run_dir.display()
            ),
            "--env",
            &format!("RUST_LOG={rust_log}"),
        ]
        .map(String::from)
        .to_vec();
        for net in other.into_iter().chain([&self.control]) {
            create.extend(["--network".into(), net.name.clone()]);
        }
        create.push(self.image.clone());
        // The spec arrives as a config; everything else as the process launcher says.
        let mut args = args.to_vec();
        if let Some(i) = args.iter().position(|a| a == "--spec") {
            args[i + 1] = SERVICE_SPEC.into();
        }
        create.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
        create.extend(["--own-address-in".into(), format!("{a}.{b}.{c}.0/24")]);
        let create: Vec<&str> = create.iter().map(String::as_str).collect();
        docker(&create).with_context(|| format!("cannot create the service of role {name}"))?;
        let networks = [Some(home), other, Some(&self.control)]
            .into_iter()
            .flatten()
            .map(|net| (net.name.clone(), None))
            .collect();
        self.placed.lock().push(Placed {
            role: name.into(),
            container: service.clone(),
            site,
            networks,
            node: None,
        });
        Ok(service)
    }

    /// Records which swarm node runs service `name`'s task (`placement.json`'s `node`),
    /// and returns it.
    pub fn note_node(&self, name: &str) -> Result<String> {
        let task = docker(&["service", "ps", "--quiet", "--no-trunc", name])?;
        let task = task.lines().next().context("the service has no task")?;
        let node = docker(&["inspect", "--format", "{{.NodeID}}", task])?;
        if let Some(p) = self.placed.lock().iter_mut().find(|p| p.container == name) {
            p.node = Some(node.clone());
        }
        Ok(node)
    }

    /// Whether service `name` has ended (the swarm lists it with no task running); the
    /// swarm is asked at most once a second for all of them. A service the last listing
    /// did not show has not ended: it was made since.
    pub fn service_ended(&self, name: &str) -> bool {
        let mut ended = self.ended.lock();
        let stale = ended
            .0
            .is_none_or(|at| at.elapsed() >= std::time::Duration::from_secs(1));
        if stale {
            let prefix = format!("name={}-", self.prefix);
            let listing = [
                "service",
                "ls",
                "--filter",
                &prefix,
                "--format",
                "{{.Name}} {{.Replicas}}",
            ];
            match docker(&listing) {
                Ok(list) => {
                    ended.1 = list
                        .lines()
                        .filter_map(|l| l.split_once(' '))
                        .filter(|(_, replicas)| replicas.starts_with("0/"))
                        .map(|(service, _)| service.to_string())
                        .collect();
                    ended.0 = Some(std::time::Instant::now());
                }
                // Not knowing is not an exit.
                Err(e) => tracing::warn!("asking the swarm for its services: {e:#}"),
            }
        }
        ended.1.contains(name)
    }

    /// Stops services `names` together: each task gets SIGTERM (its role hands over its
    /// events), and this returns once none of their tasks runs (the swarm kills a task 10 s
    /// after its SIGTERM), or after 30 s. Not `scale --detach=false`: the swarm confirms
    /// each service's convergence over about 5 s, one service after another, and the
    /// default scenario's 24 services took 2 minutes to stop so.
    pub fn stop_services(&self, names: &[String]) {
        if names.is_empty() {
            return;
        }
        let scale: Vec<String> = names.iter().map(|name| format!("{name}=0")).collect();
        if let Err(e) = docker_on(&["service", "scale", "--detach"], &scale) {
            tracing::warn!(services = ?names, "stopping: {e:#}");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        // The swarm's own count, on every host: `0/0` once a service's task has ended.
        let listing = [
            "service",
            "ls",
            "--filter",
            &format!("name={}-", self.prefix),
            "--format",
            "{{.Name}} {{.Replicas}}",
        ];
        // A listing that fails is no sign of an end: asked again until the deadline.
        let any_running = || {
            docker(&listing).map_or(true, |list| {
                (list.lines().filter_map(|l| l.split_once(' '))).any(|(service, replicas)| {
                    names.iter().any(|n| n == service) && !replicas.starts_with("0/")
                })
            })
        };
        while any_running() {
            if std::time::Instant::now() >= deadline {
                tracing::warn!(services = ?names, "tasks still running 30 s after their stop");
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// The process id, on this host, of the task of service `name`, when it runs here.
    pub fn local_pid_of_service(name: &str) -> Option<u32> {
        let label = format!("label=com.docker.swarm.service.name={name}");
        let id = docker(&["ps", "--quiet", "--filter", &label]).ok()?;
        Self::pid_of(id.lines().next()?).ok()
    }

    /// The host's process id of a running container's role (for its CPU and memory).
    pub fn pid_of(container: &str) -> Result<u32> {
        docker(&["inspect", "--format", "{{.State.Pid}}", container])?
            .parse()
            .with_context(|| format!("container {container} has no process"))
    }

    /// Fails when a role's clock is not known within `bound` (the collector container
    /// writes its estimates every round of probes), with the figures.
    pub async fn check_clocks(&self, bound: std::time::Duration) -> Result<()> {
        let expected: Vec<String> = self.placed.lock().iter().map(|p| p.role.clone()).collect();
        let file = self.run_dir.join(model::run_dir::CLOCKS_FILE);
        let read = || -> Vec<analysis::manifest::ClockOffset> {
            std::fs::read_to_string(&file)
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or_default()
        };
        crate::collector::check_offsets(read, &expected, bound, "the collector container").await
    }

    /// Where every role stood.
    pub fn placement(&self) -> Vec<Placed> {
        self.placed.lock().clone()
    }

    /// Stops the collector (it writes every clock's estimate), reads the clocks, and
    /// removes the containers, the networks and the image.
    pub fn finish(mut self) -> Result<Vec<analysis::manifest::ClockOffset>> {
        let stopped = docker(&["stop", &self.collector_name()]);
        let clocks_file = self.run_dir.join(model::run_dir::CLOCKS_FILE);
        let clocks = stopped.and_then(|_| {
            let text = std::fs::read_to_string(&clocks_file)
                .with_context(|| format!("the collector wrote no {}", clocks_file.display()))?;
            serde_json::from_str(&text).context("the collector's clocks do not read")
        });
        self.remove();
        self.finished = true;
        clocks
    }

    fn remove(&self) {
        let (placed, nodes): (Vec<String>, std::collections::BTreeSet<String>) = {
            let placed = self.placed.lock();
            let containers = placed.iter().map(|p| p.container.clone()).collect();
            (
                containers,
                placed.iter().filter_map(|p| p.node.clone()).collect(),
            )
        };
        let mut containers = vec![self.collector_name()];
        if self.swarm.is_some() {
            let configs: Vec<String> = placed.iter().map(|n| format!("{n}-spec")).collect();
            for (verb, names) in [(["service", "rm"], &placed), (["config", "rm"], &configs)] {
                if let Err(e) = docker_on(&verb, names) {
                    tracing::warn!("removing the run's services: {e:#}");
                }
            }
            // Their tasks leave the networks and the volume as they stop.
            let ours = format!("name={}-", self.prefix);
            let swarm_tasks = "label=com.docker.swarm.service.name";
            let tasks = [
                "ps",
                "--all",
                "--quiet",
                "--filter",
                swarm_tasks,
                "--filter",
                &ours,
            ];
            for _ in 0..100 {
                if docker(&tasks).map_or(true, |left| left.is_empty()) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        } else {
            containers.extend(placed);
        }
        if let Err(e) = docker_on(&["rm", "-f"], &containers) {
            tracing::warn!("removing the run's containers: {e:#}");
        }
        for net in [&self.pool, &self.farm, &self.control] {
            let _ = docker(&["network", "rm", &net.name]);
        }
        if self.swarm.is_some() {
            let volume = self.volume();
            if let Err(e) = docker(&["volume", "rm", &volume]) {
                tracing::warn!(
                    "the run's volume stays on this host: `docker volume rm {volume}`: {e:#}"
                );
            }
            // A daemon removes only its own volumes, and no other host's daemon is ours to
            // reach: each other node keeps the (small) volume its tasks made.
            let here = docker(&["info", "--format", "{{.Swarm.NodeID}}"]).unwrap_or_default();
            let elsewhere: Vec<String> = nodes.into_iter().filter(|n| *n != here).collect();
            if !elsewhere.is_empty() {
                let format = ["node", "inspect", "--format", "{{.Description.Hostname}}"];
                let hosts = docker_on(&format, &elsewhere)
                    .map(|names| names.lines().collect::<Vec<_>>().join(", "))
                    .unwrap_or_else(|_| elsewhere.join(", "));
                tracing::warn!(
                    "the run's volume {volume} stays on the swarm's other nodes ({hosts}): `docker volume rm {volume}` on each"
                );
            }
        } else {
            let _ = docker(&["rmi", &self.image]);
        }
    }

    /// A role's own network (the farm's for a link, where it listens) and, for a link,
    /// the other site's.
    fn networks_of(&self, site: Site) -> (&Network, Option<&Network>) {
        match site {
            Site::Pool => (&self.pool, None),
            Site::Farm => (&self.farm, None),
            Site::Link => (&self.farm, Some(&self.pool)),
        }
    }
}

/// `docker VERB NAME...` and its output, nothing when there are no names.
fn docker_on(verb: &[&str], names: &[String]) -> Result<String> {
    if names.is_empty() {
        return Ok(String::new());
    }
    let mut args = verb.to_vec();
    args.extend(names.iter().map(String::as_str));
    docker(&args)
}

/// The log filter a role runs with: the harness's own `RUST_LOG`, or `info`.
pub(crate) fn role_log_filter() -> String {
    std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into())
}

impl Drop for Containers {
    /// A run that failed still leaves nothing behind.
    fn drop(&mut self) {
        if !self.finished {
            self.remove();
        }
    }
}

/// Creates the run's three internal networks `<prefix>-{pool,farm,control}` on three
/// consecutive /24s of 172.28.0.0/16 (a private range, on bridges of this host only), the
/// first free ones from a place set by `id` (so concurrent runs seldom try the same);
/// returns the third octet of the first.
fn free_subnets(prefix: &str, id: u32, driver: &[&str]) -> Result<u8> {
    let mut last = None;
    for attempt in 0..80u32 {
        let base = ((id + attempt) % 80) as u8 * 3;
        let mut made = Vec::new();
        for (k, site) in ["pool", "farm", "control"].into_iter().enumerate() {
            let name = format!("{prefix}-{site}");
            let subnet = format!("172.28.{}.0/24", base + k as u8);
            let mut create = vec!["network", "create", "--internal", "--subnet", &subnet];
            create.extend(driver);
            create.push(&name);
            match docker(&create) {
                Ok(_) => made.push(name),
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        if made.len() == 3 {
            return Ok(base);
        }
        for name in made {
            let _ = docker(&["network", "rm", &name]);
        }
    }
    Err(last
        .unwrap_or_else(|| anyhow::anyhow!("no attempt made"))
        .context("cannot create the run's internal networks on any free /24s of 172.28.0.0/16"))
}

/// Where a service finds its spec (a swarm config).
const SERVICE_SPEC: &str = "/run/bench/spec.json";

/// Fails unless this engine manages an active swarm and, for the default constraints, a
/// node carries each site's label; says how to fix it.
fn check_swarm(sites: &SwarmSites) -> Result<()> {
    let state = docker(&[
        "info",
        "--format",
        "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}",
    ])?;
    if state != "active true" {
        bail!(
            "placement.engine = \"swarm\" needs this Docker engine to manage a swarm (it is {state:?}): docker swarm init --advertise-addr ADDRESS here, docker swarm join on the other hosts"
        );
    }
    for constraint in [&sites.pool_nodes, &sites.farm_nodes] {
        if let Some(label) = constraint.strip_prefix("node.labels.") {
            let (key, value) = label.split_once("==").unwrap_or((label, ""));
            let nodes = docker(&[
                "node",
                "ls",
                "--quiet",
                "--filter",
                &format!("node.label={key}={value}"),
            ])?;
            if nodes.is_empty() {
                bail!(
                    "no swarm node is labelled {key}={value} (placement constraint {constraint:?}): docker node update --label-add {key}={value} NODE"
                );
            }
        }
    }
    Ok(())
}

/// This process's IPv4 address inside `cidr` (`a.b.c.d/len`): a service on an overlay
/// network learns its own address this way, the swarm giving none up front.
pub fn own_address_in(cidr: &str) -> Result<std::net::Ipv4Addr> {
    let (net, len) = cidr
        .split_once('/')
        .with_context(|| format!("{cidr:?} is not a.b.c.d/len"))?;
    let net: std::net::Ipv4Addr = net
        .parse()
        .with_context(|| format!("{cidr:?}: not an address"))?;
    let len: u32 = len
        .parse()
        .with_context(|| format!("{cidr:?}: not a prefix length"))?;
    anyhow::ensure!(len <= 32, "{cidr:?}: a prefix is at most 32 bits");
    let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
    let inside = |ip: std::net::Ipv4Addr| u32::from(ip) & mask == u32::from(net) & mask;
    let mut found = None;
    // SAFETY: getifaddrs fills a list this function walks and frees; each ifa_addr is
    // read as a sockaddr_in only when its family says AF_INET.
    unsafe {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut list) != 0 {
            return Err(std::io::Error::last_os_error())
                .context("cannot list this host's addresses");
        }
        let mut entry = list;
        while !entry.is_null() {
            let addr = (*entry).ifa_addr;
            if !addr.is_null() && i32::from((*addr).sa_family) == libc::AF_INET {
                let v4 = &*(addr as *const libc::sockaddr_in);
                let ip = std::net::Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
                if inside(ip) {
                    found = Some(ip);
                    break;
                }
            }
            entry = (*entry).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    found.with_context(|| format!("this container has no address in {cidr}"))
}
