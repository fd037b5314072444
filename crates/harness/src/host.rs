//! The machine a run ran on: what it is, written to `host.json` so a report can say where
//! numbers come from, and how busy it was, read every second as node exporter reads it.

use crate::idle_memory::IdleMemoryProbe;
use analysis::manifest::HostReading;
use model::host::Host;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The git commit of the binary this process runs, stamped by the binary's `main` (its
/// build script reads it): stamped here, every commit would rebuild this crate and all
/// above it.
static BUILD_COMMIT: OnceLock<&'static str> = OnceLock::new();

/// Names the commit this process's binary was built from; the first call holds.
pub fn set_build_commit(commit: &'static str) {
    let _ = BUILD_COMMIT.set(commit);
}

/// This machine, this build of stratum-bench, and the SRI build of each role of the run.
pub fn capture(sri_roles: Vec<String>) -> Host {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let field = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(':').or_else(|| l.split_once('=')))
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    let memory_kib: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    Host {
        cpu_model: field(&cpuinfo, "model name"),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: memory_kib * 1024,
        os: field(&read("/etc/os-release"), "PRETTY_NAME"),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: BUILD_COMMIT.get().unwrap_or(&"unknown").to_string(),
        sri_releases: sri::LINKED_RELEASES.iter().map(|r| r.to_string()).collect(),
        sri_roles,
    }
}

/// The modes of `/proc/stat`'s cpu lines, in their order, as node exporter labels them.
pub const CPU_MODES: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];
const IDLE: usize = 3;
const IOWAIT: usize = 4;

/// One core's number and its ticks per mode since boot.
type CoreTicks = (usize, [u64; 8]);

/// Successive readings of the host: CPU per core, memory, load, the run directory's
/// filesystem and the run's CPU throttling.
pub struct HostMeter {
    fs_path: PathBuf,
    /// The CPUs the run's roles may use, when not all of the host's.
    run_cpus: Option<Vec<usize>>,
    cgroup_stat: Option<ThrottleStat>,
    /// The cores' ticks, and each group's throttled time (ns), at the last reading.
    last: Option<(Vec<CoreTicks>, Option<Vec<u64>>)>,
    idle_probe: Option<IdleMemoryProbe>,
}

/// One second of the host: the reading for the samples, and the seconds each core spent
/// in each mode over it (for `node_cpu_seconds_total`).
pub struct HostSecond {
    pub reading: HostReading,
    /// By core number.
    pub cpu_seconds: Vec<(usize, [f64; 8])>,
}

impl HostMeter {
    /// A meter of this host; `fs_path` names the filesystem to watch (the run directory),
    /// `run_cpus` the CPUs the run's roles may use (busy on their own when not all).
    pub fn new(fs_path: &Path, run_cpus: &[usize]) -> HostMeter {
        HostMeter {
            fs_path: fs_path.to_path_buf(),
            run_cpus: Some(run_cpus.to_vec()).filter(|c| !c.is_empty()),
            cgroup_stat: own_cgroup_cpu_stat(),
            last: None,
            idle_probe: None,
        }
    }

    /// Also reads how fast the host hands back idle memory, every
    /// [`crate::idle_memory::REST`], in the second after each probe.
    pub fn with_idle_probe(self) -> HostMeter {
        HostMeter {
            idle_probe: IdleMemoryProbe::start(crate::idle_memory::REST),
            ..self
        }
    }

    /// The second since the previous call; `None` on the first (CPU shares need two
    /// readings) or when /proc cannot be read.
    pub fn sample(&mut self) -> Option<HostSecond> {
        let cores = core_ticks(&std::fs::read_to_string("/proc/stat").ok()?);
        let throttled_ns = self.cgroup_stat.as_ref().map(ThrottleStat::read);
        let previous = self.last.replace((cores.clone(), throttled_ns.clone()));
        let (before, throttled_before) = previous?;
        // A core that came or went since: its seconds are not comparable.
        let numbers = |c: &[CoreTicks]| c.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        if numbers(&before) != numbers(&cores) {
            return None;
        }
        let ticks = clock_ticks();
        let mut core_busy_pct = Vec::with_capacity(cores.len());
        let mut cpu_seconds = Vec::with_capacity(cores.len());
        let (mut busy_all, mut total_all) = (0u64, 0u64);
        let (mut busy_run, mut total_run) = (0u64, 0u64);
        // Judged apart only when some online core is not the run's.
        let run_cpus =
            (self.run_cpus.as_ref()).filter(|run| cores.iter().any(|(cpu, _)| !run.contains(cpu)));
        for ((cpu, now), (_, then)) in cores.iter().zip(&before) {
            let delta: [u64; 8] = std::array::from_fn(|m| now[m].saturating_sub(then[m]));
            let total: u64 = delta.iter().sum();
            let busy = total - delta[IDLE] - delta[IOWAIT];
            core_busy_pct.push(if total == 0 {
                0.0
            } else {
                busy as f64 / total as f64 * 100.0
            });
            busy_all += busy;
            total_all += total;
            if run_cpus.is_some_and(|c| c.contains(cpu)) {
                busy_run += busy;
                total_run += total;
            }
            cpu_seconds.push((*cpu, delta.map(|t| t as f64 / ticks)));
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib = |key: &str| stat_field(&meminfo.replace(':', ""), key).unwrap_or(0) * 1024;
        let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let load: Vec<f64> = (loadavg.split_whitespace().take(3))
            .filter_map(|v| v.parse().ok())
            .collect();
        let (fs_avail_bytes, fs_size_bytes) = filesystem(&self.fs_path).unwrap_or((0, 0));
        Some(HostSecond {
            reading: HostReading {
                core_busy_pct,
                busy_pct: if total_all == 0 {
                    0.0
                } else {
                    busy_all as f64 / total_all as f64 * 100.0
                },
                run_cpus_busy_pct: (run_cpus.is_some() && total_run > 0)
                    .then(|| busy_run as f64 / total_run as f64 * 100.0),
                mem_total_bytes: kib("MemTotal"),
                mem_available_bytes: kib("MemAvailable"),
                load1: load.first().copied().unwrap_or(0.0),
                load5: load.get(1).copied().unwrap_or(0.0),
                load15: load.get(2).copied().unwrap_or(0.0),
                fs_avail_bytes,
                fs_size_bytes,
                // The longest any quota over the roles held them back: each group's
                // hold is at least the roles', and nested holds overlap.
                throttled_ms: throttled_ns.zip(throttled_before).map(|(now, then)| {
                    let held = now.iter().zip(&then).map(|(n, t)| n.saturating_sub(*t));
                    held.max().unwrap_or(0) as f64 / 1e6
                }),
                idle_touch: self.idle_probe.as_ref().and_then(IdleMemoryProbe::take),
            },
            cpu_seconds,
        })
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// Each core's `cpuN` line of /proc/stat (not the `cpu` total).
fn core_ticks(stat: &str) -> Vec<CoreTicks> {
    stat.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            // `cpuN`: a core by its number (an offline one has no line); `cpu` is all.
            let cpu = words.next()?.strip_prefix("cpu")?.parse().ok()?;
            let mut fields = words.map(|v| v.parse().unwrap_or(0));
            Some((cpu, std::array::from_fn(|_| fields.next().unwrap_or(0))))
        })
        .collect()
}

/// The number after `key` on the line that starts with it (`key value ...`).
fn stat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next()? == key).then(|| words.next()?.parse().ok())?
    })
}

/// Where this process's group (which its roles share unless a container moves them) and
/// each group above it count the time a CPU quota held them back, and the unit: cgroup
/// v1's `cpu` controller (`throttled_time`, ns), else v2 (`throttled_usec`). A quota on a
/// group above (a systemd slice's, a container's) holds the roles back as much as one on
/// their own.
struct ThrottleStat {
    paths: Vec<PathBuf>,
    field: &'static str,
    ns_per_unit: u64,
}

impl ThrottleStat {
    /// Each group's throttled time so far, ns (0 where it cannot be read).
    fn read(&self) -> Vec<u64> {
        (self.paths.iter())
            .map(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                stat_field(&text, self.field).unwrap_or(0) * self.ns_per_unit
            })
            .collect()
    }
}

fn own_cgroup_cpu_stat() -> Option<ThrottleStat> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let at = |root: &str, group: &str, field: &str| throttle_stats(Path::new(root), group, field);
    let v1 = text.lines().find_map(|l| {
        let (_, rest) = l.split_once(':')?;
        let (controllers, path) = rest.split_once(':')?;
        controllers.split(',').any(|c| c == "cpu").then_some(path)
    });
    if let Some(paths) = v1.and_then(|p| at("/sys/fs/cgroup/cpu", p, "throttled_time")) {
        return Some(ThrottleStat {
            paths,
            field: "throttled_time",
            ns_per_unit: 1,
        });
    }
    let v2 = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let paths = (at("/sys/fs/cgroup", v2, "throttled_usec"))
        .or_else(|| at("/sys/fs/cgroup/unified", v2, "throttled_usec"))?;
    Some(ThrottleStat {
        paths,
        field: "throttled_usec",
        ns_per_unit: 1_000,
    })
}

/// The `cpu.stat` files of `group` (under the hierarchy at `root`) and of the groups above
/// it that count `field`; cgroup v2's root counts none (no quota can be set there).
fn throttle_stats(root: &Path, group: &str, field: &str) -> Option<Vec<PathBuf>> {
    let paths: Vec<PathBuf> = Path::new(group.trim_start_matches('/'))
        .ancestors()
        .map(|g| root.join(g).join("cpu.stat"))
        .filter(|stat| std::fs::read_to_string(stat).is_ok_and(|t| stat_field(&t, field).is_some()))
        .collect();
    (!paths.is_empty()).then_some(paths)
}

/// Available and total bytes of the filesystem holding `path`.
fn filesystem(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let frag = st.f_frsize as u64;
    Some((st.f_bavail as u64 * frag, st.f_blocks as u64 * frag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_groups_quota_and_those_above_it_are_read() {
        // A v2 hierarchy: the root counts no throttling; the slice above the run's group
        // and the group itself do.
        let root = std::env::temp_dir().join(format!("cgroup-{}", std::process::id()));
        let group = root.join("bench.slice/run.scope");
        std::fs::create_dir_all(&group).unwrap();
        std::fs::write(root.join("cpu.stat"), "usage_usec 9\n").unwrap();
        std::fs::write(root.join("bench.slice/cpu.stat"), "throttled_usec 5\n").unwrap();
        std::fs::write(group.join("cpu.stat"), "throttled_usec 7\n").unwrap();
        let paths = throttle_stats(&root, "/bench.slice/run.scope", "throttled_usec").unwrap();
        assert_eq!(
            paths,
            [group.join("cpu.stat"), root.join("bench.slice/cpu.stat")]
        );
        let stat = ThrottleStat {
            paths,
            field: "throttled_usec",
            ns_per_unit: 1_000,
        };
        assert_eq!(stat.read(), [7_000, 5_000]);
        assert!(throttle_stats(&root, "/", "throttled_usec").is_none());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn reads_cores_and_fields_as_proc_writes_them() {
        // CPU 1 is offline: no line.
        let stat = "cpu  10 0 5 100 1 0 0 0 0 0\ncpu0 4 0 2 50 1 0 0 0 0 0\ncpu2 6 0 3 50 0 0 0 0 0 0\nintr 1 2\n";
        assert_eq!(
            core_ticks(stat),
            vec![
                (0, [4, 0, 2, 50, 1, 0, 0, 0]),
                (2, [6, 0, 3, 50, 0, 0, 0, 0])
            ]
        );
        assert_eq!(
            stat_field("usage_usec 10\nthrottled_usec 2500\n", "throttled_usec"),
            Some(2500)
        );
        assert_eq!(stat_field("MemTotal 24000 kB", "MemTotal"), Some(24000));
    }

    #[test]
    fn a_busy_core_shows_in_the_hosts_reading() {
        let mut meter = HostMeter::new(Path::new("/"), &[]);
        assert!(
            meter.sample().is_none(),
            "the first reading has nothing to compare"
        );
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let second = meter.sample().expect("a second reading");
        let r = &second.reading;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(r.core_busy_pct.len() >= cores, "{r:?}");
        // This thread kept one core busy: at least that core's share of the host.
        assert!(
            r.busy_pct > 100.0 / r.core_busy_pct.len() as f64 * 0.5,
            "{r:?} ({x})"
        );
        assert!(r.core_busy_pct.iter().any(|&c| c > 50.0), "{r:?}");
        assert!(r.mem_total_bytes > r.mem_available_bytes && r.mem_available_bytes > 0);
        assert!(r.fs_size_bytes >= r.fs_avail_bytes && r.fs_size_bytes > 0);
        assert!(r.load1 >= 0.0);
        let seconds: f64 = (second.cpu_seconds.iter())
            .flat_map(|(_, modes)| modes)
            .sum();
        assert!(
            seconds > 0.1,
            "the cores' seconds add up to the time between readings: {seconds}"
        );
    }

    #[test]
    fn describes_this_machine() {
        let h = super::capture(Vec::new());
        assert!(h.cores >= 1 && h.memory_bytes > 0);
        assert_ne!(h.cpu_model, "unknown");
        assert!(!h.git_commit.is_empty());
    }
}
