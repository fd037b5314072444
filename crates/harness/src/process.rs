//! A role running as its own OS process: started, waited for, watched and stopped.

use crate::container::Containers;
use crate::procs::CpuMeter;
use crate::roles::{Ready, RoleSpec, READY_PREFIX};
pub use analysis::bench::CpuSplit;
use anyhow::{bail, Context, Result};
use model::run_dir::EVENTS_DIR;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, Command};

/// A command for a role: it gets SIGTERM when the harness dies, however it dies (a harness
/// killed with SIGKILL cannot stop its roles itself, and they would run on, holding their
/// ports, with nobody to measure them); with `cpus`, it runs on those CPUs only (and so do
/// the processes and threads it starts).
pub fn role_command(program: impl AsRef<std::ffi::OsStr>, cpus: Option<&[usize]>) -> Command {
    let mut cmd = lifecycle::command(program);
    if let Some(set) = cpus.map(cpu_set) {
        // SAFETY: between fork and exec only sched_setaffinity, which is async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.into()
}

/// How roles are started: the executable, and where their events go.
#[derive(Clone)]
pub struct Launcher {
    /// The `stratum-bench` executable that runs each role.
    pub exe: PathBuf,
    pub events: EventsTo,
    /// Test-only: roles whose clock runs this many nanoseconds apart from the host's, as
    /// another host's would (see `probe::clock::shift_for_test`).
    pub clock_shifts: BTreeMap<String, i64>,
    /// Roles under test on some CPUs, load generators (miner fleets) on the others; none:
    /// every role may use every CPU.
    pub cpus: Option<CpuSplit>,
    /// With the Docker engine: each role in a container of its own (events then go to
    /// the collector container).
    pub containers: Option<std::sync::Arc<Containers>>,
    /// A deployment's plan: roles are planned, not started (`stratum-bench deploy`).
    pub plan: Option<std::sync::Arc<crate::plan::Plan>>,
}

/// Where a role's events go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventsTo {
    /// Each role appends to `events/<name>.jsonl` itself (roles on the harness's host).
    Files,
    /// Each role keeps a journal in `journals/` and streams it to the collector there.
    Collector(SocketAddr),
}

impl Launcher {
    /// Roles of `exe` writing their own event files: what benches and one-host runs use.
    pub fn local(exe: &Path) -> Launcher {
        Launcher {
            exe: exe.to_path_buf(),
            events: EventsTo::Files,
            clock_shifts: BTreeMap::new(),
            cpus: None,
            containers: None,
            plan: None,
        }
    }

    /// Roles run by this very executable (`stratum-bench role ...`), each writing its own
    /// event files; with `isolate`, the load generators on CPUs of their own.
    pub fn this_executable(isolate: bool) -> Result<Launcher> {
        let exe = std::env::current_exe().context("cannot find the stratum-bench executable")?;
        Ok(Launcher {
            cpus: isolate.then(isolated_cpus).transpose()?,
            ..Launcher::local(&exe)
        })
    }

    /// The CPUs a role of `spec` runs on: miner fleets (and the floor's receivers, which
    /// stand in for them) load the roles under test.
    fn cpus_for(&self, spec: Option<&RoleSpec>) -> Option<&[usize]> {
        let split = self.cpus.as_ref()?;
        let load = matches!(
            spec,
            Some(
                RoleSpec::Sv1Miners { .. }
                    | RoleSpec::Sv2Miners { .. }
                    | RoleSpec::FloorPeers { .. }
            )
        );
        Some(if load { &split.load } else { &split.under_test })
    }

    /// The arguments that tell role `name` where its events go.
    fn event_args(&self, dir: &Path, name: &str) -> Result<Vec<std::ffi::OsString>> {
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        match self.events {
            EventsTo::Files => {
                args.push("--events".into());
                args.push(dir.join(EVENTS_DIR).join(format!("{name}.jsonl")).into());
            }
            EventsTo::Collector(addr) => {
                std::fs::create_dir_all(dir.join(JOURNALS_DIR))?;
                args.push("--collector".into());
                args.push(addr.to_string().into());
                args.push("--journal".into());
                args.push(dir.join(JOURNALS_DIR).join(format!("{name}.jsonl")).into());
            }
        }
        if let Some(shift) = self.clock_shifts.get(name) {
            args.push(format!("--test-clock-shift-ns={shift}").into());
        }
        Ok(args)
    }
}

/// Where roles that stream to the collector keep their journals (their spill).
pub const JOURNALS_DIR: &str = "journals";

fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET only sets bits within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        set
    }
}

/// Keeps the calling thread on `cpus` (a bench's own loop, beside roles kept there).
pub fn pin_this_thread(cpus: &[usize]) -> Result<()> {
    let set = cpu_set(cpus);
    // SAFETY: pid 0 is the calling thread; the set is a valid cpu_set_t.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot keep a thread on its CPUs");
    }
    Ok(())
}

/// The CPUs this process may run on (and so the roles it starts).
pub fn available_cpus() -> Result<Vec<usize>> {
    // SAFETY: sched_getaffinity fills the zeroed set it is given; CPU_ISSET reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error()).context("cannot read this process's CPUs");
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect())
    }
}

/// Roles under test and load generators on separate CPUs (`--isolate`): the halves of the
/// CPUs this process may use; an error naming the count when there are fewer than two.
pub fn isolated_cpus() -> Result<CpuSplit> {
    let cpus = available_cpus()?;
    CpuSplit::halves(&cpus).with_context(|| {
        format!(
            "--isolate keeps the load generators off the roles' CPUs, which needs at least 2 CPUs; this process may use {} ({cpus:?})",
            cpus.len()
        )
    })
}

pub struct RoleProcess {
    pub name: String,
    /// The role's process, or what attached to its container or follows its service.
    child: Child,
    pub meter: CpuMeter,
    exited: bool,
    /// A swarm service's name: it ends when the swarm says, not when `child` does.
    service: Option<(String, std::sync::Arc<Containers>)>,
    /// The network namespace it runs in, removed with it.
    pub isolation: Option<crate::netns::Netns>,
    /// A link's stdin, to tell it when the window opens (none where it cannot be told: a
    /// swarm service, which then counts from its own start).
    window_notice: Option<tokio::process::ChildStdin>,
}

/// A role's stdout after its READY line, appended to its log: a closed pipe would fail
/// the role's next write to it, and what it says is kept.
async fn keep_in_log(
    mut lines: Lines<BufReader<tokio::process::ChildStdout>>,
    mut log: tokio::fs::File,
) {
    use tokio::io::AsyncWriteExt;
    while let Ok(Some(line)) = lines.next_line().await {
        if log.write_all(format!("{line}\n").as_bytes()).await.is_err() {
            break;
        }
    }
}

impl RoleProcess {
    /// Tells a link the run's window opens `in_ns` from now (every role has started):
    /// its attack and outages count from then. Roles with no such notice ignore it.
    pub async fn tell_window_opens_in(&mut self, in_ns: u64) {
        use tokio::io::AsyncWriteExt;
        // Closed once told: a role reading its stdin ends that read, where an open pipe
        // would hold its exit for the runtime's shutdown timeout (2 s a link, a run 4 s
        // longer).
        let Some(mut stdin) = self.window_notice.take() else {
            return;
        };
        let line = format!("{} {in_ns}\n", crate::roles::WINDOW_NOTICE);
        if let Err(e) = stdin.write_all(line.as_bytes()).await {
            tracing::warn!(role = %self.name, error = %e, "cannot tell the link when the window opens");
        }
    }

    /// Starts `exe role` for `spec` (as a process, or in its container when the launcher
    /// has containers), its files in `dir` (`roles/`, `logs/`, `events/<name>.jsonl` or
    /// `journals/`), and waits for its READY line (up to 30 s, 90 s for a swarm
    /// service, 10 minutes for a Core the run starts), which is returned. A role that fails to start is killed (on drop) and its
    /// log's last lines reported.
    pub async fn spawn(
        launcher: &Launcher,
        dir: &Path,
        name: &str,
        spec: &RoleSpec,
    ) -> Result<(RoleProcess, Ready)> {
        for sub in ["logs", EVENTS_DIR] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        // A role's spec may hold the RPC password or the pool's authority key.
        probe::private::create_dir(&dir.join("roles"))?;
        let spec_path = dir.join("roles").join(format!("{name}.json"));
        let spec_text = serde_json::to_string_pretty(spec)?;
        let log_path = dir.join("logs").join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path)?;
        let mut role_args: Vec<std::ffi::OsString> =
            vec!["role".into(), "--spec".into(), spec_path.clone().into()];
        role_args.extend(launcher.event_args(dir, name)?);
        role_args.extend(["--name".into(), name.into()]);
        let cpus = launcher.cpus_for(Some(spec));
        // A link times its attack and outages from the window's opening, which it is told.
        let told_the_window = matches!(spec, RoleSpec::Link { .. });
        let mut service = None;
        let (mut command, container) = match &launcher.containers {
            None => {
                probe::private::write(&spec_path, &spec_text)?;
                let mut process = role_command(&launcher.exe, cpus);
                process.args(&role_args);
                (process, None)
            }
            Some(containers) if containers.is_swarm() => {
                // The service rewrites it itself, once it knows its address.
                probe::private::write(&spec_path, &spec_text)?;
                let name_of = containers.create_service(name, &spec_path, &role_args)?;
                // Its output from the start, wherever it runs.
                let mut follow = role_command("docker", None);
                follow.args(["service", "logs", "--follow", "--raw", &name_of]);
                service = Some((name_of, containers.clone()));
                (follow, None)
            }
            Some(containers) => {
                let (container, ip) = containers.create(name, &role_args, cpus, told_the_window)?;
                // Inside its container a role listens on its own address, and what it is
                // told of others' is theirs: no loopback is shared.
                let own = spec_text.replace("127.0.0.1", &ip.to_string());
                probe::private::write(&spec_path, own)?;
                let mut start = role_command("docker", None);
                start.args(["start", "--attach"]);
                if told_the_window {
                    start.arg("--interactive");
                }
                start.arg(&container);
                (start, Some((container, ip)))
            }
        };
        let after_ready = tokio::fs::File::from_std(log.try_clone()?);
        let told = told_the_window && service.is_none();
        let mut child = command
            .env("RUST_LOG", crate::container::role_log_filter())
            .stdin(if told {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {} (role {name})", launcher.exe.display()))?;
        let pid = child.id().context("the role has a pid")?;
        let stdout = child.stdout.take().context("the role's stdout is piped")?;
        let window_notice = child.stdin.take();
        let mut role = RoleProcess {
            name: name.to_string(),
            child,
            meter: CpuMeter::new(pid),
            exited: false,
            service,
            isolation: None,
            window_notice,
        };
        let mut lines = BufReader::new(stdout).lines();
        let wait = async {
            while let Some(line) = lines.next_line().await? {
                if let Some(json) = line.strip_prefix(READY_PREFIX) {
                    return Ok::<_, anyhow::Error>(Some(serde_json::from_str::<Ready>(json)?));
                }
            }
            Ok(None)
        };
        // A swarm service's task is scheduled, its overlay network attached, then started,
        // and its output reaches us through `docker service logs`: on a loaded one-node
        // swarm that has taken more than 30 s before the role printed a line.
        // A Core the run starts funds a key first: over a hundred blocks of real work on
        // its signet, about a minute here.
        let within = match (&role.service, spec) {
            (Some(_), _) => Duration::from_secs(90),
            (None, RoleSpec::CoreNetwork { .. }) => Duration::from_secs(600),
            (None, _) => Duration::from_secs(30),
        };
        let announced = tokio::time::timeout(within, wait).await;
        match announced {
            Ok(Ok(Some(ready))) => {
                tokio::spawn(keep_in_log(lines, after_ready));
                if let Some((container, ip)) = &container {
                    // The container's process, not the `docker start` that attached to it.
                    role.meter = CpuMeter::new(Containers::pid_of(container)?);
                    tracing::info!(role = name, container, %ip, "role in its container");
                }
                if let Some((service, containers)) = &role.service {
                    // Its process when its task runs on this host; elsewhere it is not
                    // ours to see (pid 0 reads as gone).
                    let pid = Containers::local_pid_of_service(service);
                    role.meter = CpuMeter::new(pid.unwrap_or(0));
                    let node = containers.note_node(service);
                    tracing::info!(
                        role = name,
                        service,
                        local = pid.is_some(),
                        node = %node.as_deref().unwrap_or("unknown"),
                        "role as a swarm service"
                    );
                }
                tracing::info!(role = name, %ready, "role ready");
                Ok((role, ready))
            }
            Ok(Ok(None)) | Ok(Err(_)) => {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                bail!(
                    "role {name} stopped before it was ready; last lines of {}:\n{}",
                    log_path.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            }
            Err(_) => bail!(
                "role {name} was not ready within {} s (see {})",
                within.as_secs(),
                log_path.display()
            ),
        }
    }

    /// Starts a program that is not ours as role `name`: `argv` (a program and its
    /// arguments), in `cwd` when given, its output in `logs/<name>.log`. Such a program
    /// announces nothing, so it is ready when `listen` accepts connections (within 30 s);
    /// one that exits first is reported with its log.
    pub async fn spawn_command(
        launcher: &Launcher,
        argv: &[String],
        cwd: Option<&Path>,
        dir: &Path,
        name: &str,
        listen: SocketAddr,
    ) -> Result<RoleProcess> {
        anyhow::ensure!(
            launcher.containers.is_none() && launcher.plan.is_none(),
            "role {name} (`{}`) is not stratum-bench: it runs as a process only",
            argv.join(" ")
        );
        let (program, args) = argv.split_first().context("an empty role command")?;
        let command = argv.join(" ");
        std::fs::create_dir_all(dir.join("logs"))?;
        let log_path = dir.join("logs").join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path)?;
        let mut cmd = role_command(program, launcher.cpus_for(None));
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let child = cmd
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| {
                format!("cannot start `{command}` for role {name} (is it installed and on PATH?)")
            })?;
        let pid = child.id().context("the role has a pid")?;
        let mut role = RoleProcess {
            name: name.to_string(),
            child,
            meter: CpuMeter::new(pid),
            exited: false,
            service: None,
            isolation: None,
            window_notice: None,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = role.newly_exited() {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                bail!(
                    "role {name} (`{command}`) exited with {status} before it listened on {listen}; last lines of {}:\n{}",
                    log_path.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            if tokio::net::TcpStream::connect(listen).await.is_ok() {
                tracing::info!(role = name, %listen, command, "role ready");
                return Ok(role);
            }
            if tokio::time::Instant::now() >= deadline {
                bail!(
                    "role {name} (`{command}`) did not listen on {listen} within 30 s (see {})",
                    log_path.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The exit status, the first time the process is seen to have ended.
    /// How it ended (an exit status, or a swarm task's end), the first time it is seen to.
    pub fn newly_exited(&mut self) -> Option<String> {
        if self.exited {
            return None;
        }
        let status = match &self.service {
            Some((service, containers)) => containers
                .service_ended(service)
                .then(|| "its swarm task ended".to_string())?,
            None => self.child.try_wait().ok().flatten()?.to_string(),
        };
        self.exited = true;
        Some(status)
    }

    /// SIGTERM, then SIGKILL after 10 s (a swarm service: its task stopped the same way
    /// by the swarm, then the log follower).
    pub async fn stop(&mut self) {
        // A link never told (a run stopped before its window): its stdin closes first.
        self.window_notice = None;
        if let Some((service, containers)) = &self.service {
            let (service, containers) = (service.clone(), containers.clone());
            let _ = tokio::task::spawn_blocking(move || containers.stop_services(&[service])).await;
            let _ = self.child.kill().await;
            return;
        }
        if let Some(pid) = self.child.id() {
            // SAFETY: signalling a child we started; it may have exited already.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
        }
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(Ok(status)) if !status.success() && !self.exited => {
                tracing::warn!(role = %self.name, %status, "role ended uncleanly")
            }
            Ok(_) => {}
            Err(_) => {
                tracing::warn!(role = %self.name, "role did not stop in 10 s; killing it");
                let _ = self.child.kill().await;
            }
        }
    }
}

/// Stops roles, last started first; a swarm's services all at once first (the swarm takes
/// seconds for each, and the window has ended: their order changes nothing measured).
pub async fn stop_all(roles: &mut [RoleProcess]) {
    let services: Vec<String> = (roles.iter())
        .filter_map(|role| role.service.as_ref().map(|(name, _)| name.clone()))
        .collect();
    let swarm = (roles.iter()).find_map(|role| role.service.as_ref().map(|(_, c)| c.clone()));
    if let Some(containers) = swarm {
        let _ = tokio::task::spawn_blocking(move || containers.stop_services(&services)).await;
    }
    for role in roles.iter_mut().rev() {
        match role.service {
            // Stopped above: what is left of it here is its log follower.
            Some(_) => {
                let _ = role.child.kill().await;
            }
            None => role.stop().await,
        }
    }
}

/// The CPU and memory meter of the role called `name`, if it runs.
pub fn meter_of<'a>(roles: &'a mut [RoleProcess], name: &str) -> Option<&'a mut CpuMeter> {
    roles
        .iter_mut()
        .find(|r| r.name == name)
        .map(|r| &mut r.meter)
}
