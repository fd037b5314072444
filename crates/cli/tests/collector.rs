//! Events through the collector: a role's clock apart from the harness's is found and
//! removed, and a collector that drops every connection mid-run loses no event.

use crate::common;

use crate::common::{out_dir, run_baseline, succeed};
use analysis::stream::compute;
use analysis::Manifest;
use probe::recorder::read_events;
use probe::Record;
use std::path::Path;

/// The miners' clock runs a quarter second ahead of the host's, as another host's might.
const SHIFTED: &str = "miners-sv1";
const SHIFT_NS: i64 = 250_000_000;
const ROLES: [&str; 5] = ["node", "pool-sv1", "tap-sv1", "link-sv1", SHIFTED];

fn events_of(dir: &Path, sub: &str, role: &str) -> Vec<Record> {
    read_events(&dir.join(sub).join(format!("{role}.jsonl"))).unwrap()
}

#[test]
fn a_shifted_clock_is_found_and_a_cut_collector_loses_nothing() {
    let out = out_dir("collector");
    let shift = format!("{SHIFTED}={SHIFT_NS}");
    succeed(
        run_baseline(
            &out,
            &[
                "--duration",
                "15s",
                "--set",
                "warmup=3s",
                "--set",
                "network.block_interval=2s",
                "--set",
                "placement.events=collector",
                "--test-clock-shift",
                &shift,
                "--test-cut-collector-after-s",
                "6",
            ],
        )
        .output()
        .unwrap(),
    );
    let manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();

    // The collector recovers the shift within the uncertainty it states.
    let clock = manifest
        .clocks
        .iter()
        .find(|c| c.roles == [SHIFTED])
        .expect("the shifted role's clock is its own");
    assert!(clock.applied && clock.exchanges >= 16, "{clock:?}");
    let error = (clock.offset_ns - SHIFT_NS).unsigned_abs();
    assert!(
        error <= clock.uncertainty_ns && clock.uncertainty_ns < 2_000_000,
        "offset {} ns for a shift of {SHIFT_NS} ns, uncertainty {} ns",
        clock.offset_ns,
        clock.uncertainty_ns
    );
    let own = manifest
        .clocks
        .iter()
        .find(|c| !c.applied)
        .expect("the harness's own clock, checked");
    assert!(own.roles.iter().any(|r| r == "pool-sv1"), "{own:?}");
    assert!(
        own.offset_ns.unsigned_abs() <= own.uncertainty_ns,
        "{own:?}"
    );

    // The summary carries the uncertainty, the report shows the clocks.
    let summary = common::summary(&out);
    let stated = summary["clock_uncertainty_ms"].as_f64().unwrap();
    assert!(
        (stated - clock.uncertainty_ns as f64 / 1e6).abs() < 1e-9,
        "{stated}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Clocks across hosts") && report.contains(SHIFTED));

    // The cut happened, and each role's copy holds its journal, every record once, in
    // order, stamps moved by the clock's offset and by nothing else.
    let resumed = ROLES.iter().filter(|role| {
        std::fs::read_to_string(out.join("logs").join(format!("{role}.log")))
            .unwrap_or_default()
            .contains("resuming")
    });
    assert!(resumed.count() >= 3, "the roles reconnected after the cut");
    for role in ROLES {
        let journal = events_of(&out, "journals", role);
        let copy = events_of(&out, "events", role);
        assert!(journal.len() > 3, "{role} recorded events");
        assert_eq!(copy.len(), journal.len(), "{role}: every event once");
        for (kept, sent) in copy.iter().zip(&journal) {
            assert_eq!(kept.event, sent.event, "{role}: in order");
            let moved = sent.t_ns as i64 - kept.t_ns as i64;
            if role == SHIFTED {
                let off = (moved - SHIFT_NS).unsigned_abs();
                assert!(off <= clock.uncertainty_ns, "{role}: moved {moved} ns");
            } else {
                assert_eq!(moved, 0, "{role}: the harness's clock is not moved");
            }
        }
    }

    // The latencies are those of a run without the shift, within the uncertainty; left
    // unmoved, the shift would show in them.
    let others: Vec<Record> = ROLES
        .iter()
        .filter(|r| **r != SHIFTED)
        .flat_map(|role| events_of(&out, "events", role))
        .chain(events_of(&out, "events", "harness"))
        .collect();
    let with_miners = |miners: Vec<Record>| {
        let records: Vec<Record> = others.iter().cloned().chain(miners).collect();
        compute(&manifest, &records, &[]).sides["sv1"].clone()
    };
    let journal = events_of(&out, "journals", SHIFTED);
    let unshifted = journal.iter().cloned().map(|mut r| {
        r.t_ns = (r.t_ns as i64 - SHIFT_NS) as u64;
        r
    });
    let measured = with_miners(events_of(&out, "events", SHIFTED));
    let truth = with_miners(unshifted.collect());
    let naive = with_miners(journal);
    let tolerance_ms = clock.uncertainty_ns as f64 / 1e6 + 1e-9;
    for (name, m, t, n) in [
        (
            "new job",
            &measured.new_job_ms,
            &truth.new_job_ms,
            &naive.new_job_ms,
        ),
        (
            "new job after a block",
            &measured.new_prevhash_job_ms,
            &truth.new_prevhash_job_ms,
            &naive.new_prevhash_job_ms,
        ),
    ] {
        assert!(m.count >= 3 && m.count == t.count, "{name}: {m:?} {t:?}");
        for (pm, pt, pn) in [(m.p50, t.p50, n.p50), (m.p90, t.p90, n.p90)] {
            let (pm, pt) = (pm.unwrap(), pt.unwrap());
            assert!(
                (pm - pt).abs() <= tolerance_ms,
                "{name}: {pm} ms, without the shift {pt} ms"
            );
            if let Some(pn) = pn {
                assert!(
                    (pn - pt).abs() > 200.0,
                    "{name}: the shift left unmoved shows ({pn} ms)"
                );
            }
        }
    }
}

/// A deployment whose collector was killed mid-run (SIGKILL: nothing of its own ending
/// ran) is finished by `collect --finish DIR` alone, from what the collector left: its
/// copy of each role's events and its clocks' last estimates. A finished run is not
/// finished twice.
#[test]
fn a_deployment_whose_collector_died_is_finished_from_what_it_left() {
    let out = out_dir("collector-died");
    let deploy = std::process::Command::new(common::exe())
        .arg("deploy")
        .arg(common::scenario("sv1-baseline"))
        .arg("--out")
        .arg(&out)
        .args(["--duration", "30s"])
        .output()
        .unwrap();
    succeed(deploy);
    let run = out.join("run");
    let listen = format!("127.0.0.1:{}", common::free_port());
    let mut collector = common::Killed(
        std::process::Command::new(common::exe())
            .args(["collect", "--listen", &listen])
            .arg("--events")
            .arg(run.join("events"))
            .arg("--clocks")
            .arg(run.join("clocks.json"))
            .arg("--finish")
            .arg(&run)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(&listen).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the collector never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The network's node, deployed, ships a tip a second for 40 s of its clock.
    let node = probe::recorder::Recorder::to_collector(&out.join("node.journal"), &listen, "node")
        .unwrap();
    let t0 = probe::clock::mono_ns();
    for i in 0..40u64 {
        node.record_at(
            t0 + i * 1_000_000_000,
            probe::Event::TipChanged {
                height: i as u32,
                hash: format!("{i:064x}"),
                prev_hash: format!("{:064x}", i.saturating_sub(1)),
                cause: probe::TipCause::Network,
                tx_count: 1,
                fees_sats: 0,
            },
        );
    }
    node.close().unwrap();
    let copy = run.join("events").join("node.jsonl");
    let lines = || std::fs::read_to_string(&copy).map_or(0, |t| t.lines().count());
    while lines() < 40 || !run.join("clocks.json").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the collector's copy: {} lines",
            lines()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    collector.0.kill().unwrap();
    collector.0.wait().unwrap();
    assert!(
        !run.join("summary.json").exists(),
        "a killed collector finished nothing"
    );

    let finish = |dir: &Path| {
        std::process::Command::new(common::exe())
            .args(["collect", "--finish"])
            .arg(dir)
            .output()
            .unwrap()
    };
    succeed(finish(&run));
    let s = common::summary(&run);
    // The window opens a warm-up (10 s) after the node's first event and ends at its last:
    // the tips from 10 s to 39 s.
    let blocks = s["network"]["blocks"].as_u64().unwrap();
    assert!(
        (29..=30).contains(&blocks),
        "{blocks} blocks in {}",
        s["network"]
    );
    assert!(
        s["unmatched"]["role_without_events:pool-sv1"].as_u64() == Some(1),
        "a role that sent nothing is said: {}",
        s["unmatched"]
    );
    let manifest = Manifest::read(&run).unwrap();
    assert!(!manifest.awaiting_start);
    let again = finish(&run);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("is a finished run"));
}
