//! The host's health over the measured window: whether the roles had the CPU and memory
//! they needed. A saturated host inflates every latency it serves, on every side alike
//! or not, so a verdict from such a window says so.

use crate::manifest::{HostReading, Sample, Window, HOST_ROLE};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A second counts as saturated above this busy share of the cores the run's roles may
/// use (all the host's, unless a CPU set says otherwise), percent.
pub const SATURATED_BUSY_PCT: f64 = 90.0;
/// The window is flagged when more than this share of its seconds were saturated.
pub const SATURATED_SHARE: f64 = 0.10;
/// ... or when less than this share of memory was available at some second.
pub const LOW_MEMORY_SHARE: f64 = 0.05;
/// Memory left idle that takes longer than this to touch again, ms per MiB at the median,
/// is noted: a role's first work after a quiet spell pays it, a few MiB of code and data
/// for a reaction to a new block. Main memory streams a MiB in about 0.1 ms; a machine's
/// caches gone cold cost a few times that, not ten.
pub const SLOW_IDLE_TOUCH_MS_PER_MIB: f64 = 1.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostHealth {
    /// Seconds sampled in the window.
    pub seconds: usize,
    pub cores: usize,
    /// All cores' busy share, percent: mean, 95th percentile and most in a second.
    pub busy_mean_pct: f64,
    pub busy_p95_pct: f64,
    pub busy_max_pct: f64,
    /// The busy share of the CPUs the run's roles may use, mean, when those are not all of
    /// the host's; saturation is judged on them then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_cpus_busy_mean_pct: Option<f64>,
    /// Seconds above [`SATURATED_BUSY_PCT`], and their share of `seconds`.
    pub saturated_seconds: usize,
    pub saturated_share: f64,
    /// The busiest core's share in its busiest second, percent.
    pub core_max_pct: f64,
    pub load1_max: f64,
    pub mem_total_bytes: u64,
    pub mem_available_min_bytes: u64,
    /// The run directory's filesystem: least available, and its size.
    pub fs_avail_min_bytes: u64,
    pub fs_size_bytes: u64,
    /// Time the run's roles were held back by a CPU quota in the window, ms (absent
    /// without a readable cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_ms: Option<f64>,
    /// Why the window's latencies should be read with care, when they should.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// How fast the host handed back idle memory, where the harness probed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_touch: Option<IdleTouchHealth>,
}

/// The window's probes of idle memory ([`probe::event::IdleTouch`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleTouchHealth {
    pub probes: usize,
    /// How long the harness left the memory idle before each probe, s (as configured, the
    /// longest if the window's probes differ).
    pub rest_s: f64,
    /// The first touch after a rest, ms per MiB: median (nearest rank, as every p50 of
    /// the summary) and most.
    pub idle_ms_per_mib_p50: f64,
    pub idle_ms_per_mib_max: f64,
    /// The same memory touched again at once, ms per MiB, median.
    pub hot_ms_per_mib_p50: f64,
    /// What it means for the run's latencies, when the first touch is slow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The idle-memory probes among `readings`; `None` without any.
fn idle_touch_health(readings: &[&HostReading]) -> Option<IdleTouchHealth> {
    let touches: Vec<_> = readings.iter().filter_map(|r| r.idle_touch).collect();
    if touches.is_empty() {
        return None;
    }
    let median = |v: Vec<f64>| probe::stats::percentile(&v, 0.5).unwrap_or(f64::NAN);
    let rest_s = touches.iter().map(|t| t.rest_s).fold(0.0, f64::max);
    let idle: Vec<f64> = touches.iter().map(|t| t.idle_ms_per_mib).collect();
    let idle_ms_per_mib_max = idle.iter().copied().fold(0.0, f64::max);
    let idle_ms_per_mib_p50 = median(idle);
    let hot_ms_per_mib_p50 = median(touches.iter().map(|t| t.hot_ms_per_mib).collect());
    let note = (idle_ms_per_mib_p50 > SLOW_IDLE_TOUCH_MS_PER_MIB).then(|| {
        format!(
            "this host hands back idle memory slowly: memory left idle {rest_s:.0} s took {idle_ms_per_mib_p50:.1} ms per MiB to touch again at the median ({hot_ms_per_mib_p50:.2} ms hot); a role's first work after a quiet spell, such as its reaction to a new block, includes that, so what the roles added beyond a path's configured delay is partly this host's"
        )
    });
    Some(IdleTouchHealth {
        probes: touches.len(),
        rest_s,
        idle_ms_per_mib_p50,
        idle_ms_per_mib_max,
        hot_ms_per_mib_p50,
        note,
    })
}

/// The host's samples in the window summed up; `None` when there are none (a run from
/// before host samples, or one too short for two readings).
pub fn health(samples: &[Sample], window: Window) -> Option<HostHealth> {
    health_of(samples, window, HOST_ROLE)
}

/// The other hosts a deployment's roles ran on (samples `host-<site>`), each summed up
/// as [`health`] sums up the harness's.
pub fn other_hosts(samples: &[Sample], window: Window) -> BTreeMap<String, HostHealth> {
    let names: BTreeSet<&str> = (samples.iter())
        .filter_map(|s| s.role.strip_prefix(HOST_ROLE)?.strip_prefix('-'))
        .collect();
    (names.into_iter())
        .filter_map(|site| {
            let role = format!("{HOST_ROLE}-{site}");
            Some((site.to_string(), health_of(samples, window, &role)?))
        })
        .collect()
}

fn health_of(samples: &[Sample], window: Window, role: &str) -> Option<HostHealth> {
    let readings: Vec<_> = samples
        .iter()
        .filter(|s| s.role == role && window.contains(s.t_ns))
        .filter_map(|s| s.host.as_ref())
        .collect();
    if readings.is_empty() {
        return None;
    }
    let n = readings.len();
    let mut busy: Vec<f64> = readings.iter().map(|r| r.busy_pct).collect();
    busy.sort_by(f64::total_cmp);
    // The roles wait for the CPUs they may use: a CPU set's, when the run has one.
    let run_cpus: Vec<f64> = readings
        .iter()
        .filter_map(|r| r.run_cpus_busy_pct)
        .collect();
    let saturated_seconds = (readings.iter())
        .filter(|r| r.run_cpus_busy_pct.unwrap_or(r.busy_pct) > SATURATED_BUSY_PCT)
        .count();
    let saturated_share = saturated_seconds as f64 / n as f64;
    let throttled = readings.iter().filter_map(|r| r.throttled_ms);
    let throttled_ms = readings
        .iter()
        .any(|r| r.throttled_ms.is_some())
        .then(|| throttled.sum::<f64>());
    let mem_total_bytes = readings
        .iter()
        .map(|r| r.mem_total_bytes)
        .max()
        .unwrap_or(0);
    let mem_available_min_bytes = (readings.iter().map(|r| r.mem_available_bytes))
        .min()
        .unwrap_or(0);
    let mut warnings = Vec::new();
    if saturated_share > SATURATED_SHARE {
        let whose = match run_cpus.is_empty() {
            true => "the host's CPU was",
            false => "the CPUs the run's roles may use were",
        };
        warnings.push(format!(
            "{whose} over {SATURATED_BUSY_PCT:.0}% busy for {saturated_seconds} of {n} s ({:.0}%)",
            saturated_share * 100.0
        ));
    }
    if let Some(ms) = throttled_ms.filter(|&ms| ms > 0.0) {
        warnings.push(format!(
            "the run's roles were held back by a CPU quota for {ms:.0} ms"
        ));
    }
    if (mem_available_min_bytes as f64) < LOW_MEMORY_SHARE * mem_total_bytes as f64 {
        warnings.push(format!(
            "memory available fell to {:.0} MB of {:.0} MB",
            mem_available_min_bytes as f64 / 1e6,
            mem_total_bytes as f64 / 1e6
        ));
    }
    let warning = (!warnings.is_empty()).then(|| {
        format!(
            "{}: latencies from this window include waits for the CPU, not only the protocol's; run fewer miners or on more cores",
            warnings.join("; ")
        )
    });
    Some(HostHealth {
        seconds: n,
        cores: readings
            .iter()
            .map(|r| r.core_busy_pct.len())
            .max()
            .unwrap_or(0),
        busy_mean_pct: busy.iter().sum::<f64>() / n as f64,
        busy_p95_pct: busy[((n as f64 * 0.95).ceil() as usize).clamp(1, n) - 1],
        busy_max_pct: busy[n - 1],
        run_cpus_busy_mean_pct: (!run_cpus.is_empty())
            .then(|| run_cpus.iter().sum::<f64>() / run_cpus.len() as f64),
        saturated_seconds,
        saturated_share,
        core_max_pct: (readings
            .iter()
            .flat_map(|r| r.core_busy_pct.iter().copied()))
        .fold(0.0, f64::max),
        load1_max: readings.iter().map(|r| r.load1).fold(0.0, f64::max),
        mem_total_bytes,
        mem_available_min_bytes,
        fs_avail_min_bytes: readings.iter().map(|r| r.fs_avail_bytes).min().unwrap_or(0),
        fs_size_bytes: readings.iter().map(|r| r.fs_size_bytes).max().unwrap_or(0),
        throttled_ms,
        warning,
        idle_touch: idle_touch_health(&readings),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t_s: u64, cores: [f64; 2], available_mb: u64, throttled_ms: f64) -> Sample {
        let busy = (cores[0] + cores[1]) / 2.0;
        Sample {
            t_ns: t_s * 1_000_000_000,
            role: HOST_ROLE.into(),
            cpu_pct: busy * 2.0,
            cpu_s: None,
            rss_bytes: 0,
            host: Some(HostReading {
                core_busy_pct: cores.to_vec(),
                busy_pct: busy,
                run_cpus_busy_pct: None,
                mem_total_bytes: 1_000_000_000,
                mem_available_bytes: available_mb * 1_000_000,
                load1: busy / 50.0,
                load5: 0.0,
                load15: 0.0,
                fs_avail_bytes: 5_000,
                fs_size_bytes: 10_000,
                throttled_ms: Some(throttled_ms),
                idle_touch: None,
            }),
        }
    }

    fn window(start_s: u64, end_s: u64) -> Window {
        Window {
            start_ns: start_s * 1_000_000_000,
            end_ns: end_s * 1_000_000_000,
        }
    }

    #[test]
    fn a_quiet_host_is_not_flagged() {
        // Ten seconds at 20% and 40% on the two cores: 30% busy, nothing saturated.
        let samples: Vec<Sample> = (1..=10)
            .map(|t| second(t, [20.0, 40.0], 600, 0.0))
            .collect();
        let h = health(&samples, window(1, 10)).unwrap();
        assert_eq!((h.seconds, h.cores, h.saturated_seconds), (10, 2, 0));
        assert!((h.busy_mean_pct - 30.0).abs() < 1e-9);
        assert_eq!((h.busy_max_pct, h.core_max_pct), (30.0, 40.0));
        assert!((h.load1_max - 0.6).abs() < 1e-9);
        assert_eq!(h.mem_available_min_bytes, 600_000_000);
        assert_eq!(h.throttled_ms, Some(0.0));
        assert_eq!(h.warning, None);
    }

    #[test]
    fn a_saturated_window_is_flagged_by_hand() {
        // 20 seconds: 17 at 50%, 3 at 95% (both cores at 95): 3/20 = 15% saturated, over
        // the 10% the flag allows. Mean 0.85 * 50 + 0.15 * 95 = 56.75; p95 is the 19th of
        // 20 sorted, 95. A second outside the window (t = 30, at 100%) is not counted.
        let mut samples: Vec<Sample> = (1..=17)
            .map(|t| second(t, [60.0, 40.0], 600, 0.0))
            .collect();
        samples.extend((18..=20).map(|t| second(t, [95.0, 95.0], 600, 0.0)));
        samples.push(second(30, [100.0, 100.0], 600, 0.0));
        let h = health(&samples, window(1, 20)).unwrap();
        assert_eq!((h.seconds, h.saturated_seconds), (20, 3));
        assert!((h.saturated_share - 0.15).abs() < 1e-12);
        assert!((h.busy_mean_pct - 56.75).abs() < 1e-9);
        assert_eq!((h.busy_p95_pct, h.busy_max_pct), (95.0, 95.0));
        let w = h.warning.unwrap();
        assert!(
            w.starts_with("the host's CPU was over 90% busy for 3 of 20 s (15%)"),
            "{w}"
        );

        // Two saturated seconds of 20 (10%) is not over the share; a quota's hold and
        // memory under 5% of the total are flagged on their own.
        let mut samples: Vec<Sample> = (1..=18)
            .map(|t| second(t, [50.0, 50.0], 600, 0.0))
            .collect();
        samples.extend((19..=20).map(|t| second(t, [95.0, 95.0], 40, 12.5)));
        let h = health(&samples, window(1, 20)).unwrap();
        assert_eq!(h.saturated_seconds, 2);
        assert_eq!(h.throttled_ms, Some(25.0));
        let w = h.warning.unwrap();
        assert!(!w.contains("busy for"), "{w}");
        assert!(w.contains("held back by a CPU quota for 25 ms"), "{w}");
        assert!(
            w.contains("memory available fell to 40 MB of 1000 MB"),
            "{w}"
        );
    }

    #[test]
    fn a_run_on_some_cpus_is_judged_on_those() {
        // The run may use core 0 only (a CPU set): 95% there, 5% on core 1, so the host
        // is 50% busy and the roles wait all the same. Ten seconds, all saturated; the
        // mean over the run's CPU is 95.
        let samples: Vec<Sample> = (1..=10)
            .map(|t| {
                let mut s = second(t, [95.0, 5.0], 600, 0.0);
                if let Some(h) = s.host.as_mut() {
                    h.run_cpus_busy_pct = Some(95.0);
                }
                s
            })
            .collect();
        let h = health(&samples, window(1, 10)).unwrap();
        assert!((h.busy_mean_pct - 50.0).abs() < 1e-9);
        assert_eq!(h.run_cpus_busy_mean_pct, Some(95.0));
        assert_eq!(h.saturated_seconds, 10);
        let w = h.warning.unwrap();
        assert!(
            w.starts_with("the CPUs the run's roles may use were over 90% busy for 10 of 10 s"),
            "{w}"
        );
        // The same host with the run on both cores is not saturated.
        let all: Vec<Sample> = (1..=10).map(|t| second(t, [95.0, 5.0], 600, 0.0)).collect();
        assert_eq!(health(&all, window(1, 10)).unwrap().warning, None);
    }

    #[test]
    fn idle_memory_is_summed_up_by_hand_and_noted_when_slow() {
        let probed = |t: u64, idle: f64, hot: f64| {
            let mut s = second(t, [20.0, 40.0], 600, 0.0);
            s.host.as_mut().unwrap().idle_touch = Some(probe::event::IdleTouch {
                rest_s: 5.0,
                idle_ms_per_mib: idle,
                hot_ms_per_mib: hot,
            });
            s
        };
        // Ten seconds, probes at 2, 5 and 9 s: 0.4, 2.5 and 6.0 ms per MiB idle, so the
        // median is 2.5 (over the 1.0 noted) and the most 6.0; hot 0.05, 0.07, 0.06: 0.06.
        // A probe after the window (12 s, 50 ms per MiB) is not counted.
        let mut samples: Vec<Sample> = (1..=10)
            .map(|t| match t {
                2 => probed(t, 0.4, 0.05),
                5 => probed(t, 2.5, 0.07),
                9 => probed(t, 6.0, 0.06),
                _ => second(t, [20.0, 40.0], 600, 0.0),
            })
            .collect();
        samples.push(probed(12, 50.0, 0.05));
        let h = health(&samples, window(1, 10)).unwrap();
        let idle = h.idle_touch.unwrap();
        assert_eq!((idle.probes, idle.rest_s), (3, 5.0));
        assert_eq!(
            (idle.idle_ms_per_mib_p50, idle.idle_ms_per_mib_max),
            (2.5, 6.0)
        );
        assert_eq!(idle.hot_ms_per_mib_p50, 0.06);
        let note = idle.note.unwrap();
        assert!(
            note.contains("memory left idle 5 s took 2.5 ms per MiB to touch again at the median (0.06 ms hot)"),
            "{note}"
        );
        // Not a saturation: the verdict's warning stays clear.
        assert_eq!(h.warning, None);

        // Two probes, 1.0 and 8.0: the median by nearest rank is the first, 1.0, which is
        // not over the 1.0 noted: no note, though the most is 8.0.
        let samples = [probed(1, 8.0, 0.05), probed(2, 1.0, 0.05)];
        let idle = health(&samples, window(1, 2)).unwrap().idle_touch.unwrap();
        assert_eq!(
            (idle.idle_ms_per_mib_p50, idle.idle_ms_per_mib_max),
            (1.0, 8.0)
        );
        assert_eq!(idle.note, None);
        // No probe, no reading.
        let quiet = [second(1, [20.0, 40.0], 600, 0.0)];
        assert_eq!(health(&quiet, window(1, 1)).unwrap().idle_touch, None);
    }

    #[test]
    fn no_host_samples_no_health() {
        assert_eq!(health(&[], window(0, 10)), None);
    }

    #[test]
    fn each_other_host_is_summed_up_apart_and_its_saturation_is_warned_of() {
        // The harness's host quiet at 30%; the farm's (samples `host-farm`) at 95% on both
        // cores for all 10 s: 10 of 10 seconds saturated, by hand.
        let mut samples: Vec<Sample> = (1..=10)
            .map(|t| second(t, [20.0, 40.0], 600, 0.0))
            .collect();
        samples.extend((1..=10).map(|t| Sample {
            role: format!("{HOST_ROLE}-farm"),
            ..second(t, [95.0, 95.0], 600, 0.0)
        }));
        let here = health(&samples, window(1, 10)).unwrap();
        assert!((here.busy_mean_pct - 30.0).abs() < 1e-9);
        let others = other_hosts(&samples, window(1, 10));
        assert_eq!(others.keys().collect::<Vec<_>>(), ["farm"]);
        let farm = &others["farm"];
        assert_eq!((farm.seconds, farm.saturated_seconds), (10, 10));
        assert!((farm.busy_mean_pct - 95.0).abs() < 1e-9);
        let summary = crate::summary::Summary {
            host: Some(here),
            other_hosts: others,
            ..crate::stream::compute(&crate::testing::manifest(vec![]), &[], &[])
        };
        let warning = summary.host_warning().unwrap();
        assert!(
            warning.starts_with(
                "the farm site's host: the host's CPU was over 90% busy for 10 of 10 s (100%)"
            ),
            "{warning}"
        );
        // A role's samples are no host's.
        let role = Sample {
            role: "miners-sv1".into(),
            ..second(1, [50.0, 50.0], 600, 0.0)
        };
        assert!(other_hosts(&[role], window(0, 10)).is_empty());
    }

    #[test]
    fn a_hosts_second_as_a_sample_is_its_cores_busy_share_and_used_memory() {
        // 2 cores at 10% and 30%: 20% busy, 40% of one core; 1 GB total, 600 MB available:
        // 400 MB used.
        let reading = second(1, [10.0, 30.0], 600, 0.0).host.unwrap();
        let s = Sample::of_host(7, "host-farm", reading);
        assert_eq!((s.t_ns, s.role.as_str(), s.cpu_s), (7, "host-farm", None));
        assert!((s.cpu_pct - 40.0).abs() < 1e-9);
        assert_eq!(s.rss_bytes, 400_000_000);
    }
}
