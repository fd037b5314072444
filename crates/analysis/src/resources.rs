//! What each role process used of the machine over the measured window: its CPU in cores
//! and its resident memory.
//!
//! A process's CPU time grows in kernel ticks of 10 ms, so its rate over one second moves
//! in steps of 0.01 core: beside a role that uses a few thousandths of a core, a second's
//! reading is 0 or 1% at random. Rates over [`CPU_SPAN_S`] seconds of its running total
//! resolve 0.002 core, and their mean is the total's growth over the window, exactly.

use crate::manifest::{Sample, Window};
use crate::stats::{series_mean, with_interval, Estimate};
use probe::Dist;
use serde::{Deserialize, Serialize};

/// Seconds of CPU time each CPU rate spans.
pub const CPU_SPAN_S: f64 = 5.0;

/// One role's CPU and memory in the window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoleResources {
    /// Each second's CPU, percent of one core.
    pub cpu_pct: Dist,
    /// CPU in cores, one value per [`CPU_SPAN_S`] seconds ([`cpu_cores`]); absent from
    /// summaries written before it was.
    #[serde(default)]
    pub cpu_cores: Dist,
    pub rss_bytes: Dist,
}

/// What a side's pool costs its operator: its process's CPU and memory, and the bytes its
/// end of the link carries, in all and per miner.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolCosts {
    /// Its CPU in cores: the mean over the window, its interval by batches of spans.
    pub cpu_cores: Estimate,
    /// CPU ms per accepted share: a side whose farm proxy aggregates its miners into one
    /// channel (A, B's JDC) sends the pool only the shares that meet that channel's target,
    /// a few a minute whatever the miners; its CPU a miner is the one to compare there.
    pub cpu_ms_per_share: Estimate,
    /// CPU per connected miner, thousandths of a core.
    pub cpu_millicores_per_miner: Estimate,
    /// Its resident memory, mean bytes.
    pub rss_bytes: Option<f64>,
    /// What each miner costs the pool's end of the link, bytes a second both ways.
    pub link_bytes_per_s_per_miner: Estimate,
}

impl PoolCosts {
    /// A pool's costs from its process's resources (none when it was not sampled), over
    /// `window_s` with `miners` connected, of which `accepted` shares were accepted, its
    /// end of the link carrying `link_bytes_per_s`.
    pub fn of(
        pool: Option<&RoleResources>,
        miners: u32,
        accepted: u64,
        window_s: f64,
        link_bytes_per_s: &Estimate,
    ) -> PoolCosts {
        let cpu = pool.map_or_else(Estimate::default, |p| Estimate::mean_of(&p.cpu_cores));
        let shares_per_s = accepted as f64 / window_s;
        let miners = f64::from(miners.max(1));
        PoolCosts {
            cpu_ms_per_share: if shares_per_s > 0.0 {
                cpu.scaled(1_000.0 / shares_per_s)
            } else {
                Estimate::default()
            },
            cpu_millicores_per_miner: cpu.scaled(1_000.0 / miners),
            cpu_cores: cpu,
            rss_bytes: pool.and_then(|p| p.rss_bytes.mean),
            link_bytes_per_s_per_miner: link_bytes_per_s.scaled(1.0 / miners),
        }
    }
}

/// Below this a pool's CPU is too small to set against another's: its mean resolves about
/// a ten-thousandth of a core over a minute, and a percent of a few ten-thousandths is
/// noise.
pub const MIN_COMPARED_CORES: f64 = 0.001;

/// A side's pool against the baseline's, in words: its CPU in all and a share, and its
/// link bytes a miner, each in percent of the baseline's. A run's CPU is one level, set by
/// its workload: shown, never tested (several runs a side, `compare`, test it). CPU under
/// [`MIN_COMPARED_CORES`] on the baseline is said, not compared; CPU a share only where
/// both sides' pools judge every share (`per_share`: no farm proxy aggregating them).
pub fn pool_reading(
    side: &PoolCosts,
    base: &PoolCosts,
    per_share: bool,
    baseline: &str,
) -> Option<String> {
    let pct = |a: &Estimate, b: &Estimate| {
        Some((a.point? / b.point? - 1.0) * 100.0).filter(|p| p.is_finite())
    };
    let mut parts = Vec::new();
    match base.cpu_cores.point {
        Some(cores) if cores < MIN_COMPARED_CORES => {
            parts.push(format!(
                "CPU not compared ({baseline}'s pool used {:.2} millicores, under the {} this line compares from)",
                cores * 1e3,
                MIN_COMPARED_CORES * 1e3
            ));
        }
        _ => {
            let cpu = pct(&side.cpu_cores, &base.cpu_cores);
            parts.extend(cpu.map(|p| format!("CPU {p:+.0}%")));
            let share = (pct(&side.cpu_ms_per_share, &base.cpu_ms_per_share)).filter(|_| per_share);
            parts.extend(share.map(|p| format!("CPU a share {p:+.0}%")));
        }
    }
    let link = pct(
        &side.link_bytes_per_s_per_miner,
        &base.link_bytes_per_s_per_miner,
    );
    parts.extend(link.map(|p| format!("link bytes a miner {p:+.0}%")));
    (!parts.is_empty()).then(|| {
        format!(
            "its pool against {baseline}'s, this run: {}",
            parts.join(", ")
        )
    })
}

/// What the emulation itself costs a side, on the machine the protocol under test
/// shares: the CPU of its relays (the WAN links and the taps, every shard) and of its
/// miner fleet, and the most the relays added to a message. Load and delay no protocol
/// makes: what separates the lab from the pool at scale.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Emulation {
    /// The relays' processes, every shard.
    pub relays: Vec<String>,
    /// Their CPU together, in cores: the mean over the window, its interval by batches of
    /// spans.
    pub relays_cpu_cores: Estimate,
    /// The miner fleet's CPU, in cores, the same way.
    pub miners_cpu_cores: Estimate,
    /// What the relays on the miners' path (the side's link and the tap in front of its
    /// pool, every shard) added: the largest p99 of any of them, either way, ms (a link
    /// past each chunk's due time, a tap from a message read to it written on). `None`
    /// when none recorded it.
    pub relay_lateness_p99_ms: Option<f64>,
}

impl Emulation {
    /// A side's emulation costs: `relays` and `miners`'s CPU from `samples` over `window`,
    /// and the lateness of the relays on the miners' path, each its (up, down)
    /// distributions in ms.
    pub fn of<'a>(
        samples: &[Sample],
        (relays, miners): (Vec<String>, &str),
        lateness: impl IntoIterator<Item = (&'a Dist, &'a Dist)>,
        window: Window,
    ) -> Emulation {
        let worst = (lateness.into_iter())
            .flat_map(|(up, down)| [up.p99, down.p99])
            .flatten()
            .reduce(f64::max);
        Emulation {
            relays_cpu_cores: group_cpu_cores(samples, &relays, window),
            miners_cpu_cores: group_cpu_cores(samples, &[miners.to_string()], window),
            relays,
            relay_lateness_p99_ms: worst,
        }
    }
}

/// The CPU of several roles together, in cores: over each [`CPU_SPAN_S`] seconds from the
/// first sample of any, the CPU every role used (its running total, linear between its own
/// samples, which need not fall at the others' moments: a role on another host reports on
/// its own clock), summed; the mean with its interval by batch means. A role adds nothing
/// before its first sample or after its last. No estimate when none was sampled twice.
pub fn group_cpu_cores(samples: &[Sample], roles: &[String], window: Window) -> Estimate {
    let totals: Vec<Vec<(u64, f64)>> = (roles.iter())
        .map(|role| rising_total(&running_total(samples, role, window)))
        .filter(|t| t.len() >= 2)
        .collect();
    let (Some(first), Some(last)) = (
        totals.iter().map(|t| t[0].0).min(),
        totals
            .iter()
            .filter_map(|t| t.last())
            .map(|&(t, _)| t)
            .max(),
    ) else {
        return Estimate::default();
    };
    let span = (CPU_SPAN_S * 1e9) as u64;
    let cores: Vec<f64> = (0..)
        .map(|k| first + k * span)
        .take_while(|from| from + span <= last)
        .map(|from| {
            let used = |t: &[(u64, f64)]| total_at(t, from + span) - total_at(t, from);
            totals.iter().map(|t| used(t)).sum::<f64>() / CPU_SPAN_S
        })
        .collect();
    if cores.is_empty() {
        return Estimate::default();
    }
    Estimate::mean_of(&series_dist(&cores))
}

/// A running CPU total that never falls: a process started again adds nothing across its
/// restart, then what it uses from there.
fn rising_total(totals: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let (mut sum, mut before): (f64, Option<f64>) = (0.0, None);
    (totals.iter())
        .map(|&(t, total)| {
            sum += before.map_or(0.0, |b| (total - b).max(0.0));
            before = Some(total);
            (t, sum)
        })
        .collect()
}

/// A rising total at `t`: linear between its samples, held before the first and after the
/// last.
fn total_at(totals: &[(u64, f64)], t: u64) -> f64 {
    match totals.partition_point(|&(at, _)| at <= t) {
        0 => totals[0].1,
        i if i == totals.len() => totals[i - 1].1,
        i => {
            let ((t0, v0), (t1, v1)) = (totals[i - 1], totals[i]);
            v0 + (v1 - v0) * (t - t0) as f64 / (t1 - t0) as f64
        }
    }
}

/// A role's CPU and memory samples in the window.
pub fn resources(samples: &[Sample], role: &str, window: Window) -> RoleResources {
    let mine: Vec<&Sample> = (samples.iter())
        .filter(|s| s.role == role && window.contains(s.t_ns))
        .collect();
    let cpu: Vec<f64> = mine.iter().map(|s| s.cpu_pct).collect();
    let rss: Vec<f64> = mine.iter().map(|s| s.rss_bytes as f64).collect();
    let cores: Vec<f64> = (cpu_cores(samples, role, window).into_iter())
        .map(|(_, c)| c)
        .collect();
    RoleResources {
        cpu_pct: series_dist(&cpu),
        cpu_cores: series_dist(&cores),
        rss_bytes: series_dist(&rss),
    }
}

/// The distribution of a series sampled at a steady pace, with the interval of its mean by
/// batch means (one run's precision: a run against another is a run-level question).
pub fn series_dist(xs: &[f64]) -> Dist {
    with_interval(Dist::of(xs), &series_mean(xs))
}

/// A role's CPU in the window, in cores: from one sample to the first at least
/// [`CPU_SPAN_S`] seconds later (half a second of slack for the sampler's pace), the CPU
/// time it used over the time between, placed at the span's end (ns). A last span shorter
/// than that is left out. Runs from before the running total was recorded rebuild it from
/// each sample's percent over the time since the sample before; a total that falls (the
/// process started again) begins a new span.
pub fn cpu_cores(samples: &[Sample], role: &str, window: Window) -> Vec<(u64, f64)> {
    let totals = running_total(samples, role, window);
    let mut spans = Vec::new();
    let Some(mut start) = totals.first().copied() else {
        return spans;
    };
    for (&(_, before), &(t, total)) in totals.iter().zip(&totals[1..]) {
        let secs = t.saturating_sub(start.0) as f64 / 1e9;
        if total < before {
            start = (t, total);
        } else if secs >= CPU_SPAN_S - 0.5 {
            spans.push((t, (total - start.1) / secs));
            start = (t, total);
        }
    }
    spans
}

/// A role's running CPU total in the window, `(t_ns, core-seconds)` at each sample in time
/// order (a remote role's come as its reports do): as recorded, or rebuilt from the
/// percents of runs from before it was.
fn running_total(samples: &[Sample], role: &str, window: Window) -> Vec<(u64, f64)> {
    let mut mine: Vec<&Sample> = (samples.iter())
        .filter(|s| s.role == role && window.contains(s.t_ns))
        .collect();
    mine.sort_by_key(|s| s.t_ns);
    let mut totals: Vec<(u64, f64)> = Vec::new();
    let mut rebuilt = 0.0;
    for s in mine {
        let total = s.cpu_s.unwrap_or_else(|| {
            if let Some(&(before, _)) = totals.last() {
                rebuilt += s.cpu_pct / 100.0 * s.t_ns.saturating_sub(before) as f64 / 1e9;
            }
            rebuilt
        });
        totals.push((s.t_ns, total));
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// A pool at a steady 0.2 core and 30 MB for 300 s, 10 miners connected, 600 shares
    /// accepted (2 a second), its end of the link at 1,000 B/s: 0.2 core-s a second over
    /// 2 shares is 100 ms a share, 20 thousandths of a core a miner, 100 B/s a miner.
    #[test]
    fn a_pools_costs_are_its_cpu_a_share_and_a_miner_and_its_bytes_a_miner() {
        let pool = RoleResources {
            cpu_pct: series_dist(&[20.0; 300]),
            cpu_cores: series_dist(&[0.2; 60]),
            rss_bytes: series_dist(&[30e6; 300]),
        };
        let link = Estimate {
            point: Some(1_000.0),
            ci: Some((900.0, 1_100.0)),
            units: 30,
        };
        let c = PoolCosts::of(Some(&pool), 10, 600, 300.0, &link);
        let close = |e: &Estimate, x: f64| (e.point.unwrap() - x).abs() < 1e-9;
        assert!(close(&c.cpu_cores, 0.2), "{c:?}");
        assert!(close(&c.cpu_ms_per_share, 100.0), "{c:?}");
        assert!(close(&c.cpu_millicores_per_miner, 20.0), "{c:?}");
        assert_eq!(c.rss_bytes, Some(30e6));
        assert!(close(&c.link_bytes_per_s_per_miner, 100.0));
        assert_eq!(c.link_bytes_per_s_per_miner.ci, Some((90.0, 110.0)));
        // No share accepted: no cost a share, the rest as before.
        let none = PoolCosts::of(Some(&pool), 10, 0, 300.0, &link);
        assert_eq!(none.cpu_ms_per_share, Estimate::default());
        assert!(close(&none.cpu_millicores_per_miner, 20.0));
        // A pool not sampled: no CPU or memory, its link's bytes as they were.
        let unsampled = PoolCosts::of(None, 10, 600, 300.0, &link);
        assert_eq!(
            (unsampled.cpu_cores.point, unsampled.rss_bytes),
            (None, None)
        );
        assert!(close(&unsampled.link_bytes_per_s_per_miner, 100.0));
        // Against it, a pool at 0.3 core with the same shares and miners and 800 B/s on
        // its link: CPU +50%, 150 ms a share (+50%), 80 B/s a miner (-20%).
        let busier = RoleResources {
            cpu_cores: series_dist(&[0.3; 60]),
            ..pool.clone()
        };
        let link_less = Estimate {
            point: Some(800.0),
            ..link
        };
        let side = PoolCosts::of(Some(&busier), 10, 600, 300.0, &link_less);
        assert_eq!(
            pool_reading(&side, &c, true, "sv1").as_deref(),
            Some("its pool against sv1's, this run: CPU +50%, CPU a share +50%, link bytes a miner -20%")
        );
        // Behind a proxy that aggregates shares, or against a pool without one accepted,
        // no share's reading.
        let without_share = "its pool against sv1's, this run: CPU +50%, link bytes a miner -20%";
        assert_eq!(
            pool_reading(&side, &c, false, "sv1").as_deref(),
            Some(without_share)
        );
        assert_eq!(
            pool_reading(&side, &none, true, "sv1").as_deref(),
            Some(without_share)
        );
        // A baseline pool under a thousandth of a core is said, not compared.
        let idle = PoolCosts::of(
            Some(&RoleResources {
                cpu_cores: series_dist(&[0.0004; 60]),
                ..pool.clone()
            }),
            10,
            600,
            300.0,
            &link,
        );
        assert_eq!(
            pool_reading(&side, &idle, true, "sv1").as_deref(),
            Some("its pool against sv1's, this run: CPU not compared (sv1's pool used 0.40 millicores, under the 1 this line compares from), link bytes a miner -20%")
        );
    }

    /// Two relays at a steady 0.1 and 0.3 core and a fleet at 0.5 for 60 s, sampled every
    /// second: the relays together are 0.4 core (each 5 s span 0.5 core-s + 1.5 core-s
    /// over 5 s), the fleet 0.5; the worst p99 any relay added is the tap's 2 ms down.
    #[test]
    fn the_emulations_cpu_is_its_relays_summed_and_its_fleet_apart() {
        let steady = |role: &'static str, cores: f64| {
            (0..=60u64).map(move |k| Sample {
                role: role.into(),
                ..sample(k, cores * 100.0, Some(cores * k as f64))
            })
        };
        let samples: Vec<Sample> = (steady("link-sv1", 0.1))
            .chain(steady("tap-sv1-shard2", 0.3))
            .chain(steady("miners-sv1", 0.5))
            .collect();
        let window = Window {
            start_ns: 0,
            end_ns: 60 * S + S / 2,
        };
        let (link_up, link_down) = (Dist::of(&[0.2, 0.5]), Dist::of(&[0.1]));
        let (tap_up, tap_down) = (Dist::of(&[0.3]), Dist::of(&[2.0, 1.0]));
        let relays = vec!["link-sv1".to_string(), "tap-sv1-shard2".to_string()];
        let e = Emulation::of(
            &samples,
            (relays, "miners-sv1"),
            [(&link_up, &link_down), (&tap_up, &tap_down)],
            window,
        );
        let point = |e: &Estimate| (e.point.unwrap() * 1e9).round() / 1e9;
        assert_eq!(point(&e.relays_cpu_cores), 0.4);
        assert_eq!(point(&e.miners_cpu_cores), 0.5);
        assert_eq!(e.relay_lateness_p99_ms, Some(2.0));
        // A role never sampled adds nothing; none sampled, no estimate.
        let unsampled = vec!["link-sv1".to_string(), "link-sv1-shard9".to_string()];
        assert_eq!(point(&group_cpu_cores(&samples, &unsampled, window)), 0.1);
        assert_eq!(
            group_cpu_cores(&samples, &["tap-x".to_string()], window).point,
            None
        );
    }

    /// Roles sampled at their own moments (as a host reporting on its own clock): a relay
    /// at 0.1 core sampled on the second, 0 to 60 s, another at 0.3 core on the half
    /// second, 0.5 to 59.5 s. Over each 5 s from 0 they are 0.4 core together, except the
    /// first and last, where the second adds only what it used between its samples:
    /// (0.5 + 0.3 x 4.5) / 5 = 0.37. The mean of 12: (10 x 0.4 + 2 x 0.37) / 12 = 0.395.
    /// Summed by the moment each span ended, as before, they averaged: 0.2.
    #[test]
    fn roles_sampled_at_their_own_moments_are_summed_not_averaged() {
        let at = |role: &str, t_ns: u64, cores: f64| Sample {
            t_ns,
            role: role.into(),
            cpu_pct: cores * 100.0,
            cpu_s: Some(cores * t_ns as f64 / 1e9),
            rss_bytes: 1,
            host: None,
        };
        let samples: Vec<Sample> = (0..=60u64)
            .map(|k| at("link-a", k * S, 0.1))
            .chain((0..60u64).map(|k| at("tap-a", k * S + S / 2, 0.3)))
            .collect();
        let window = Window {
            start_ns: 0,
            end_ns: 61 * S,
        };
        let relays = ["link-a".to_string(), "tap-a".to_string()];
        let got = group_cpu_cores(&samples, &relays, window).point.unwrap();
        assert!((got - 0.395).abs() < 1e-9, "{got}");
        // A restart (the total falls to 0 at 30 s) adds nothing across it: the 5 s holding
        // it lose the relay's 0.1 core for that second.
        let restarted: Vec<Sample> = (0..=60u64)
            .map(|k| {
                let mut s = at("link-a", k * S, 0.1);
                if k >= 30 {
                    s.cpu_s = Some(0.1 * (k - 30) as f64);
                }
                s
            })
            .collect();
        let alone = ["link-a".to_string()];
        let got = group_cpu_cores(&restarted, &alone, window).point.unwrap();
        assert!((got - (11.0 * 0.1 + 0.08) / 12.0).abs() < 1e-9, "{got}");
    }

    fn sample(t_s: u64, cpu_pct: f64, cpu_s: Option<f64>) -> Sample {
        Sample {
            t_ns: t_s * S,
            role: "pool".into(),
            cpu_pct,
            cpu_s,
            rss_bytes: 1_000_000,
            host: None,
        }
    }

    /// A role using 0.013 core, sampled every second for 10 s: its running total in
    /// whole ticks is floor(1.3 k) / 100 s at second k.
    fn ticking(with_total: bool) -> Vec<Sample> {
        let ticks = [0, 1, 2, 3, 5, 6, 7, 9, 10, 11, 13];
        (0..ticks.len())
            .map(|k| {
                let pct = if k == 0 {
                    0.0
                } else {
                    f64::from(ticks[k] - ticks[k - 1])
                };
                let total = with_total.then(|| f64::from(ticks[k]) / 100.0);
                sample(k as u64, pct, total)
            })
            .collect()
    }

    const WINDOW: Window = Window {
        start_ns: 0,
        end_ns: 10 * S + S / 2,
    };

    #[test]
    fn cpu_in_cores_over_five_second_spans_of_the_running_total() {
        // Each second reads 1% or 2% of a core (0.01 or 0.02 core); over seconds 0-5 the
        // total grew 0.06 s (0.012 core), over 5-10 0.07 s (0.014): mean 0.013, the truth.
        let spans = cpu_cores(&ticking(true), "pool", WINDOW);
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].0, 5 * S);
        assert!((spans[0].1 - 0.012).abs() < 1e-12, "{spans:?}");
        assert_eq!(spans[1].0, 10 * S);
        assert!((spans[1].1 - 0.014).abs() < 1e-12, "{spans:?}");
        // Another role's samples, and samples outside the window, count for nothing.
        assert!(cpu_cores(&ticking(true), "jdc", WINDOW).is_empty());
        let late = Window {
            start_ns: 3 * S,
            end_ns: 10 * S,
        };
        // From second 3 (0.03 s) to 8 (0.10 s): 0.014 core; 8-10 is too short a span.
        let spans = cpu_cores(&ticking(true), "pool", late);
        assert_eq!(spans.len(), 1);
        assert!((spans[0].1 - 0.014).abs() < 1e-12, "{spans:?}");
    }

    #[test]
    fn a_run_without_the_running_total_rebuilds_it_from_each_seconds_percent() {
        let spans = cpu_cores(&ticking(false), "pool", WINDOW);
        let expected = [0.012, 0.014];
        assert_eq!(spans.len(), 2);
        for (got, want) in spans.iter().zip(expected) {
            assert!((got.1 - want).abs() < 1e-12, "{spans:?}");
        }
    }

    #[test]
    fn a_process_started_again_begins_a_new_span() {
        // 0.5 s used by second 3, then a new process from zero at second 4: the span from
        // 4 to 9 (0.2 s over 5 s) is 0.04 core, and nothing spans the restart.
        let totals = [0.0, 0.1, 0.3, 0.5, 0.0, 0.05, 0.1, 0.1, 0.15, 0.2];
        let samples: Vec<Sample> = (totals.iter().enumerate())
            .map(|(k, &c)| sample(k as u64, 0.0, Some(c)))
            .collect();
        let spans = cpu_cores(&samples, "pool", WINDOW);
        assert_eq!(spans.len(), 1, "{spans:?}");
        assert_eq!(spans[0].0, 9 * S);
        assert!((spans[0].1 - 0.04).abs() < 1e-12, "{spans:?}");
    }

    #[test]
    fn the_resources_summary_holds_the_cores_and_the_memory() {
        let r = resources(&ticking(true), "pool", WINDOW);
        assert_eq!(r.cpu_cores.count, 2);
        assert!((r.cpu_cores.mean.unwrap() - 0.013).abs() < 1e-12);
        assert!((r.cpu_cores.max.unwrap() - 0.014).abs() < 1e-12);
        // Eleven seconds of 0, 1, 1, 1, 2, 1, 1, 2, 1, 1, 2 percent: 13 / 11.
        assert_eq!(r.cpu_pct.count, 11);
        assert!((r.cpu_pct.mean.unwrap() - 13.0 / 11.0).abs() < 1e-12);
        assert_eq!(r.rss_bytes.p50, Some(1e6));
    }
}
