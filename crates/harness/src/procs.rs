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

    /// CPU use since the previous call, in percent of one core, and resident bytes.
    /// `None` once the process is gone (or on the first call for CPU).
    pub fn sample(&mut self) -> Option<(Option<f64>, u64)> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).ok()?;
        // Fields after the command name (which may hold spaces) in parentheses.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.pid)).ok()?;
        let rss = statm.split_whitespace().nth(1)?.parse::<u64>().ok()? * page_size();
        let now = Instant::now();
        let cpu = self.last.map(|(t, prev)| {
            let secs = now.duration_since(t).as_secs_f64().max(1e-6);
            (ticks.saturating_sub(prev)) as f64 / clock_ticks() / secs * 100.0
        });
        self.last = Some((now, ticks));
        Some((cpu, rss))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_this_process() {
        let mut m = CpuMeter::new(std::process::id());
        let (cpu, rss) = m.sample().unwrap();
        assert!(cpu.is_none());
        assert!(rss > 1_000_000);
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 200 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let (cpu, _) = m.sample().unwrap();
        assert!(
            cpu.unwrap() > 30.0,
            "a busy loop shows as CPU: {cpu:?} ({x})"
        );
        assert!(CpuMeter::new(u32::MAX - 1).sample().is_none());
    }
}
