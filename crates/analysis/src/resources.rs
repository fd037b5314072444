//! What each role process used of the machine over the measured window: its CPU in cores
//! and its resident memory.
//!
//! A process's CPU time grows in kernel ticks of 10 ms, so its rate over one second moves
//! in steps of 0.01 core: beside a role that uses a few thousandths of a core, a second's
//! reading is 0 or 1% at random. Rates over [`CPU_SPAN_S`] seconds of its running total
//! resolve 0.002 core, and their mean is the total's growth over the window, exactly.

use crate::manifest::{Sample, Window};
use crate::stats::{series_mean, with_interval};
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
    let mut totals: Vec<(u64, f64)> = Vec::new();
    let mut rebuilt = 0.0;
    for s in (samples.iter()).filter(|s| s.role == role && window.contains(s.t_ns)) {
        let total = s.cpu_s.unwrap_or_else(|| {
            if let Some(&(before, _)) = totals.last() {
                rebuilt += s.cpu_pct / 100.0 * s.t_ns.saturating_sub(before) as f64 / 1e9;
            }
            rebuilt
        });
        totals.push((s.t_ns, total));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

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
