//! CPU and resident memory of role processes, read from /proc.

use std::time::Instant;

/// Successive CPU readings of one process.
pub struct CpuMeter {
    pid: u32,
    last: Option<(Instant, u64)>,
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

impl CpuMeter {
    pub fn new(pid: u32) -> Self {
        CpuMeter { pid, last: None }
    }

    /// The process's CPU and memory now. `None` once the process is gone.
    pub fn sample(&mut self) -> Option<ProcReading> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        // Fields after the command name (which may hold spaces) in parentheses.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.pid)).ok()?;
        let rss = statm.split_whitespace().nth(1)?.parse::<u64>().ok()? * page_size();
        let now = Instant::now();
        let cpu_pct = self.last.map(|(t, prev)| {
            let secs = now.duration_since(t).as_secs_f64().max(1e-6);
            (ticks.saturating_sub(prev)) as f64 / clock_ticks() / secs * 100.0
        });
        self.last = Some((now, ticks));
        Some(ProcReading {
            cpu_pct,
            cpu_s: ticks as f64 / clock_ticks(),
            rss_bytes: rss,
        })
    }
}

/// One reading of a process.
#[derive(Debug, Clone, Copy)]
pub struct ProcReading {
    /// CPU use since the previous reading, in percent of one core (`None` on the first).
    pub cpu_pct: Option<f64>,
    /// CPU time the process has used since it started, user and system, in seconds: its
    /// kernel ticks (10 ms each), so a rate over several seconds resolves a fraction of a
    /// tick a second where one second's rate moves in whole percents of a core.
    pub cpu_s: f64,
    pub rss_bytes: u64,
}

/// The process listening for TCP on `addr` (or on every address at its port), found
/// through the kernel's socket tables: how a pool that is not ours gets its CPU measured.
/// `None` when no process we may look into holds it.
pub fn listener_pid(addr: std::net::SocketAddr) -> Option<u32> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| listening_inode(line, addr))
                .collect::<Vec<_>>()
        })
        .collect();
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let holds = std::fs::read_dir(entry.path().join("fd"))
                .ok()?
                .flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|link| wanted.iter().any(|w| link.as_os_str() == w.as_str()));
            holds.then_some(pid)
        })
}

/// The socket inode of a `/proc/net/tcp{,6}` line listening on `addr`'s port, at `addr`
/// or at every address.
fn listening_inode(line: &str, addr: std::net::SocketAddr) -> Option<String> {
    const LISTEN: &str = "0A";
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (ip_hex, port_hex) = fields.get(1)?.split_once(':')?;
    if fields.get(3) != Some(&LISTEN) || u16::from_str_radix(port_hex, 16).ok()? != addr.port() {
        return None;
    }
    // The address is printed as 32-bit words in host (little-endian) order.
    let bytes: Vec<u8> = (0..ip_hex.len() / 8)
        .filter_map(|w| u32::from_str_radix(&ip_hex[w * 8..w * 8 + 8], 16).ok())
        .flat_map(u32::to_le_bytes)
        .collect();
    let ip = match bytes.len() {
        4 => std::net::IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => {
            let v6 = std::net::Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?);
            v6.to_ipv4_mapped().map_or(v6.into(), Into::into)
        }
        _ => return None,
    };
    (ip == addr.ip() || ip.is_unspecified()).then(|| fields.get(9).map(|i| i.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_process_listening_on_an_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert_eq!(listener_pid(addr), Some(std::process::id()));
        drop(listener);
        assert_eq!(listener_pid(addr), None);
    }

    #[test]
    fn measures_this_process() {
        let mut m = CpuMeter::new(std::process::id());
        let first = m.sample().unwrap();
        assert!(first.cpu_pct.is_none());
        assert!(first.rss_bytes > 1_000_000);
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 200 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let second = m.sample().unwrap();
        assert!(
            second.cpu_pct.unwrap() > 30.0,
            "a busy loop shows as CPU: {second:?} ({x})"
        );
        // The running total grew by the loop's CPU time, at least most of its 200 ms.
        assert!(
            second.cpu_s - first.cpu_s >= 0.1,
            "{first:?} then {second:?}"
        );
        assert!(CpuMeter::new(u32::MAX - 1).sample().is_none());
    }
}
