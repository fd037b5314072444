//! Calibration measured, not assumed: synthetic A/A runs (two sides drawn from one
//! process) through the verdict's own code path, counting how often each row's raw p-value
//! falls under 0.05 and how often a run flags anything after Benjamini-Hochberg. The runs
//! are shaped like ours: tips shared by both sides with a common delay (the node's build),
//! one side or the other waiting on a lock at each tip (negatively correlated sides),
//! skewed delays, now and then a miner that gets no job until the next tip, shares that
//! go stale in bursts after a tip, autocorrelated bandwidth, few and many tips.

use crate::headline::{rows, Compared, Headline};
use crate::side::LatencySamples;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MINERS: usize = 4;

fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    -(1.0 - rng.gen::<f64>()).ln() * mean
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v) = (1.0 - rng.gen::<f64>(), rng.gen::<f64>());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn poisson(rng: &mut ChaCha8Rng, mean: f64) -> u64 {
    let (limit, mut k, mut p) = ((-mean).exp(), 0, 1.0);
    loop {
        p *= rng.gen::<f64>();
        if p <= limit {
            return k;
        }
        k += 1;
    }
}

/// What is common to both sides at each tip: when it lasted, the node's build delay, the
/// network's best template value, and which side waited on the other's build.
struct Tip {
    gap_ms: f64,
    build_ms: f64,
    value: f64,
    a_waits: bool,
}

/// One side of an A/A run over `tips`.
fn side(rng: &mut ChaCha8Rng, tips: &[Tip], is_a: bool) -> LatencySamples {
    let mut s = LatencySamples::default();
    for (k, tip) in tips.iter().enumerate() {
        let name = format!("tip{k}");
        let lock_ms = if tip.a_waits == is_a { 2.0 } else { 0.0 };
        let pool_ms = exponential(rng, 3.0);
        let mut waits = Vec::new();
        for _ in 0..MINERS {
            let mut wait = 20.0 + tip.build_ms + lock_ms + pool_ms + exponential(rng, 1.0);
            // Now and then a miner gets no job on the tip: it waits until the next.
            if rng.gen::<f64>() < 0.003 {
                wait = tip.gap_ms;
            } else {
                s.new_prevhash_job_ms.push(&name, wait);
            }
            s.stale_wait_ms.push(&name, wait.min(tip.gap_ms));
            waits.push(wait.min(tip.gap_ms));
        }
        // Each tip's template, then a refresh of the side's own, reach the miners as one
        // broadcast each; both are counted under the tip they build on.
        for refresh in 0..2 {
            let build = if refresh == 0 {
                tip.build_ms
            } else {
                exponential(rng, 2.0)
            };
            let pool_ms = exponential(rng, 3.0);
            for _ in 0..MINERS {
                s.new_job_ms
                    .push(&name, 20.0 + build + pool_ms + exponential(rng, 1.0));
            }
        }
        // Valid work on the tip's template, a little behind the best now and then.
        let valid_ms: f64 = waits.iter().map(|w| tip.gap_ms - w).sum();
        let behind = if rng.gen::<f64>() < 0.3 {
            rng.gen::<f64>() * 5_000.0
        } else {
            0.0
        };
        s.template_value.push(&name, tip.value - behind, valid_ms);
        // Shares: stale while a miner waits, in a burst after the tip.
        let stale_share = waits.iter().sum::<f64>() / (MINERS as f64 * tip.gap_ms);
        for _ in 0..poisson(rng, tip.gap_ms / 1_000.0 * 8.0) {
            let stale = rng.gen::<f64>() < stale_share;
            s.stale_by_tip.push(&name, stale);
            s.accepted_by_tip
                .push(&name, !stale && rng.gen::<f64>() > 0.005);
        }
        if rng.gen::<f64>() < 0.5 {
            s.block_propagation_ms
                .push(&format!("{name}-{is_a}"), 30.0 + exponential(rng, 5.0));
        }
    }
    // Bandwidth second by second, autocorrelated (phi 0.5) around 1,000 B/s.
    let seconds = (tips.iter().map(|t| t.gap_ms).sum::<f64>() / 1_000.0) as usize;
    let mut series = |mean: f64| {
        let mut x = 0.0;
        (0..seconds.max(10))
            .map(|_| {
                x = 0.5 * x + normal(rng) * 100.0;
                mean + x
            })
            .collect::<Vec<f64>>()
    };
    s.farm_tx_per_s = series(300.0);
    s.farm_rx_per_s = series(1_000.0);
    s
}

/// An A/A run of `n` tips: both sides' rows against each other.
fn run(rng: &mut ChaCha8Rng, n: usize) -> Vec<crate::headline::VerdictRow> {
    let tips: Vec<Tip> = (0..n)
        .map(|_| Tip {
            gap_ms: 2_000.0 + exponential(rng, 10_000.0),
            // Skewed: a lognormal around 5 ms.
            build_ms: (5f64.ln() + 0.8 * normal(rng)).exp(),
            value: 312_500_000.0 + normal(rng) * 20_000.0,
            a_waits: rng.gen(),
        })
        .collect();
    let a = side(rng, &tips, true);
    let b = side(rng, &tips, false);
    let compared = |samples| Compared {
        samples,
        farm_node: false,
        tips_without_work: 0,
    };
    rows(&compared(&a), &compared(&b))
}

#[test]
fn identical_sides_are_flagged_as_often_as_the_tests_say() {
    const DRAWS: usize = 2_400;
    let sizes = [6, 10, 20, 40];
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    // Per row: (tested, raw p < 0.05), over all draws and over draws of 20 tips or more.
    let mut all = vec![(0u32, 0u32); Headline::ALL.len()];
    let mut many = vec![(0u32, 0u32); Headline::ALL.len()];
    let mut flagged_runs = 0;
    for draw in 0..DRAWS {
        let n = sizes[draw % sizes.len()];
        let rows = run(&mut rng, n);
        flagged_runs += u32::from(rows.iter().any(|r| r.significant));
        for (i, r) in rows.iter().enumerate() {
            let Some(p) = r.p_value else { continue };
            let low = u32::from(p < 0.05);
            all[i] = (all[i].0 + 1, all[i].1 + low);
            if n >= 20 {
                many[i] = (many[i].0 + 1, many[i].1 + low);
            }
        }
    }
    let mut report = String::new();
    for (i, h) in Headline::ALL.iter().enumerate() {
        let share = |(n, low): (u32, u32)| f64::from(low) / f64::from(n.max(1));
        report.push_str(&format!(
            "{}: {:.3} of {} ({:.3} of {} with 20 tips or more)\n",
            h.label(),
            share(all[i]),
            all[i].0,
            share(many[i]),
            many[i].0
        ));
    }
    let runs_flagged = f64::from(flagged_runs) / DRAWS as f64;
    report.push_str(&format!("runs with any flag after BH: {runs_flagged:.3}\n"));
    eprintln!("{report}");
    for (i, h) in Headline::ALL.iter().enumerate() {
        let (n, low) = all[i];
        assert!(n >= 500, "{}: tested in only {n} runs\n{report}", h.label());
        let share = f64::from(low) / f64::from(n);
        assert!(share <= 0.07, "{} too liberal\n{report}", h.label());
        let (n, low) = many[i];
        let share = f64::from(low) / f64::from(n);
        assert!(share >= 0.03, "{} wastes power\n{report}", h.label());
    }
    assert!(runs_flagged <= 0.06, "{report}");
}
