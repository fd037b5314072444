//! The farm's own node sets configuration A's answer: SRI's JDC moves its miners to a new
//! block only when that node hears of it. Physics of the lag, in two short runs of SV1 and
//! A with a fixed `farm_node.block_lag` each: A's new-block job is the lag plus the roles'
//! own time, it moves one ms for each ms of lag, and the break-even is SV1's new-block job
//! less A's own time.

use crate::common::{out_dir, run_scenario, succeed, summary};
use serde_json::Value;

/// A's and SV1's new-block facts from one run at a fixed lag.
struct AtLag {
    lag_ms: f64,
    /// A's new-block job, mean ms.
    job_a: f64,
    /// SV1's new-block job, mean ms.
    job_sv1: f64,
    /// The farm node's lag as measured (its tip change after the network's), mean ms.
    measured_lag: f64,
    /// A's new-block job less each tip's measured lag, mean ms.
    own: f64,
    /// The summary's break-even lag, and its interval.
    break_even: f64,
    break_even_ci: (f64, f64),
    conclusion: String,
}

fn mean(v: &Value) -> f64 {
    v["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("no mean in {v}"))
}

/// SV1 and A for 24 s with the network's blocks every 2.5 s exactly (regular: 9 or 10
/// tips a run, never fewer than the 5 asked below, and never one within another's lag, as
/// Poisson blocks every 2.5 s over 36 s, as this test had, gave in 9% of gaps at 230
/// ms), found by the network only (our miners find none, so every tip comes to A's farm
/// node through its lag), a testnet mempool (a small block crosses the feed in well under
/// a ms), a 100 ms link round trip.
fn run_at(lag_ms: u32) -> AtLag {
    let dir = out_dir(&format!("farm-node-lag-{lag_ms}"));
    let lag = format!("farm_node.block_lag={lag_ms}");
    let out = run_scenario(
        "config-a",
        &dir,
        &[
            "--duration",
            "24s",
            "--set",
            "warmup=8s",
            "--set",
            "network.block_interval=2500ms",
            "--set",
            r#"network.arrivals="regular""#,
            "--set",
            "network.hashrate_share=0.001",
            "--set",
            r#"network.mempool="testnet""#,
            "--set",
            &lag,
        ],
    )
    .output()
    .unwrap();
    // The regular pace is said under the verdict it could move.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains(r#"(network.arrivals = "regular";"#),
        "the regular pace unsaid: {said}"
    );
    succeed(out);
    let s = summary(&dir);
    let a = &s["sides"]["sv2-a"];
    let lag = &a["farm_node_lag"];
    let be = &lag["break_even_lag_ms"];
    let ci = be["ci"].as_array().expect("a break-even interval");
    let result = AtLag {
        lag_ms: f64::from(lag_ms),
        job_a: mean(&a["new_prevhash_job_ms"]),
        job_sv1: mean(&s["sides"]["sv1"]["new_prevhash_job_ms"]),
        measured_lag: mean(&lag["lag_ms"]),
        own: mean(&lag["own_ms"]),
        break_even: be["point"].as_f64().unwrap(),
        break_even_ci: (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap()),
        conclusion: s["conclusions"]["sv2-a"]["text"]
            .as_str()
            .unwrap()
            .to_string(),
    };
    assert!(
        lag["lag_ms"]["count"].as_u64().unwrap() >= 5,
        "too few tips: {lag}"
    );
    assert!(
        lag["assumed"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{lag_ms} ms (")),
        "{lag}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[test]
fn a_new_block_job_is_the_farm_nodes_lag_plus_the_roles_own_time() {
    let (near, far) = (run_at(30), run_at(230));
    for r in [&near, &far] {
        eprintln!(
            "lag {} ms: A's new-block job {:.2} ms, measured lag {:.2} ms, own {:.2} ms; \
             SV1's {:.2} ms; break-even {:.2} ms [{:.2}, {:.2}]",
            r.lag_ms,
            r.job_a,
            r.measured_lag,
            r.own,
            r.job_sv1,
            r.break_even,
            r.break_even_ci.0,
            r.break_even_ci.1
        );
        // The farm node takes each block its lag after the network's node, plus the feed's
        // hop and the take itself: never sooner, and a few ms later at most on a machine
        // busy with other runs (2.05 ms seen with two A/A runs and a build beside it).
        assert!(
            (0.0..5.0).contains(&(r.measured_lag - r.lag_ms)),
            "at {} ms: measured lag {} ms",
            r.lag_ms,
            r.measured_lag
        );
        // A's job less the measured lag is the roles' own time within 2 ms.
        assert!(
            (r.job_a - r.measured_lag - r.own).abs() < 2.0,
            "at {} ms: job {} ms, own {} ms, measured lag {} ms",
            r.lag_ms,
            r.job_a,
            r.own,
            r.measured_lag
        );
        // SV1's new-block work crosses the link one way (50 ms) and no sooner.
        assert!(r.job_sv1 >= 50.0, "SV1 {}", r.job_sv1);
        // The break-even: SV1's new-block job less A's own time beyond the lag its node
        // had, within 3 ms, and its interval holds its point.
        let by_hand = r.job_sv1 - (r.job_a - r.measured_lag);
        assert!(
            (r.break_even - by_hand).abs() < 3.0,
            "break-even {} against {by_hand} by hand",
            r.break_even
        );
        assert!(r.break_even_ci.0 <= r.break_even && r.break_even <= r.break_even_ci.1);
        // The conclusion names it and the lag assumed.
        assert!(
            r.conclusion
                .contains("sooner only while your farm's node hears of blocks within")
                && r.conclusion.contains(&format!("here {} ms (", r.lag_ms)),
            "{}",
            r.conclusion
        );
    }
    // One ms of lag is one ms of A's new-block job: held above at each lag, within the run
    // (the job less the roles' own time is the measured lag within 2 ms, the measured lag
    // the set one within 5 ms). The two runs are not compared raw: the roles' own time
    // moves with the host between runs (0.5-2 ms one morning, 17-37 ms that afternoon,
    // for one build), so the slope is shown, after each run's own time, and not bounded.
    let slope = ((far.job_a - far.own) - (near.job_a - near.own)) / (far.lag_ms - near.lag_ms);
    eprintln!("slope of A's new-block job less its own time on the lag: {slope:.4}");
    // Below the break-even A is sooner than SV1, above it later.
    assert!(near.job_a < near.job_sv1 && far.job_a > far.job_sv1);
    assert!(near.conclusion.contains("ms sooner") && far.conclusion.contains("ms later"));
}
