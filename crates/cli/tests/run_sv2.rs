//! `stratum-bench run` with the real SRI pool and translator (configurations C and D)
//! beside the SV1 baseline: real processes, our node as their Template Provider.

use crate::common;

use crate::common::{events, out_dir, run_scenario, succeed, summary};
use serde_json::Value;

/// Our miners hold all the hashrate and blocks come every 2 s: each side of a run finds
/// several in a 30 s window (the tests say how many they need), over a 20 ms one-way link
/// (a test may set another after these).
const OUR_BLOCKS: &[&str] = &[
    "--set",
    "warmup=8s",
    "--set",
    "network.hashrate_share=1.0",
    "--set",
    "network.block_interval=2s",
    "--set",
    "miners.shares_per_min=30",
    "--set",
    "link.rtt_ms=40",
];

/// How far C's and D's new-block job may lie from SV1's, paired by tip, in the run of
/// `configs_c_and_d_...`. Six runs on the 2-core VM (`make test TESTS="-E
/// 'test(configs_c_and_d)'"` six times, the test prints both): C -0.30 to 1.40 ms (sd
/// 0.78), D -0.60 to -0.14 (sd 0.16). The bound is the largest seen and ten of C's sd:
/// 10 ms. The same SRI pool learning of blocks 60 ms late (the release test's delay on
/// its Template Provider) came out at 60.7 ms and failed it; with the delay at 0, -0.27.
const NEW_BLOCK_SV2_AGAINST_SV1_MS: f64 = 10.0;

/// `run_scenario` with two lists of arguments.
fn run_with(
    name: &str,
    dir: &std::path::Path,
    args: &[&str],
    more: &[&str],
) -> std::process::Command {
    let all: Vec<&str> = args.iter().chain(more).copied().collect();
    run_scenario(name, dir, &all)
}

/// Configurations C and D beside SV1 in one run, as the issue runs C (shorter), with our
/// miners holding all the hashrate so that each SV2 side finds blocks of its own:
/// acceptance is what the SRI pool decided (seen by the tap, not the translator's early
/// `true`), a new block crosses the link no faster than its one-way delay, the SV2 delta
/// against SV1 is there, and a block found through SV2 reaches the node by SubmitSolution
/// and is accepted, both through the translator (C) and from our SV2 miners (D).
#[test]
fn configs_c_and_d_count_the_sri_pools_verdicts_obey_the_link_and_submit_their_blocks() {
    let dir = out_dir("config-c");
    // Blocks every 2 s, all ours, over the 60 s window: about 30, a third a side, so a
    // side finds none in e^-10 of runs. The link's 100 ms comes after OUR_BLOCKS' 40:
    // the last setting of a key is the one taken.
    let out = run_with(
        "config-c",
        &dir,
        OUR_BLOCKS,
        &[
            "--duration",
            "60s",
            "--set",
            r#"sides=["sv1", "sv2-c", "sv2-d"]"#,
            "--set",
            "link.rtt_ms=100",
        ],
    )
    .output()
    .unwrap();
    succeed(out);
    let s = summary(&dir);
    let c = &s["sides"]["sv2-c"];
    let accepted = c["shares"]["accepted"].as_u64().unwrap();
    assert!(accepted > 0, "{c}");
    let judged_at_pool = events(&dir, "tap-sv2-c")
        .iter()
        .filter(|e| e["kind"] == "share_judged")
        .count();
    assert!(
        judged_at_pool as u64 >= accepted,
        "acceptance comes from the pool's verdicts"
    );
    let p50 = c["new_prevhash_job_ms"]["p50"]
        .as_f64()
        .expect("new blocks in 60 s of 2 s blocks");
    assert!(
        p50 >= 50.0,
        "a new block reached the farm faster than light: {p50} ms"
    );
    for role in [
        "pool-sv2-c",
        "translator-sv2-c",
        "tap-sv2-c",
        "link-sv2-c",
        "miners-sv2-c",
    ] {
        let r = &c["roles"][role];
        assert!(
            r["cpu_pct"]["count"].as_u64().unwrap() > 20,
            "{role} CPU samples"
        );
        assert!(
            r["rss_bytes"]["p50"].as_f64().unwrap() > 1e6,
            "{role} memory"
        );
    }
    let d = &s["deltas"]["sv2-c"];
    for key in ["new_prevhash_job_ms.p50", "shares.accepted"] {
        let row = &d[key];
        let (sv2, sv1, delta) = (
            row["sv2"].as_f64().unwrap(),
            row["sv1"].as_f64().unwrap(),
            row["delta"].as_f64().unwrap(),
        );
        assert!((sv2 - sv1 - delta).abs() < 1e-9, "{key}: {row}");
    }
    let tap = &s["link"]["tap_latency_ms"]["tap-sv2-c"];
    assert!(tap["up"]["count"].as_u64().unwrap() > 0, "{tap}");
    // Both pools hear of the same tips from the same node and their jobs cross the same
    // link once: paired by tip, C's new-block job is SV1's plus what the SRI pool and
    // translator take beyond our SV1 pool. A pool that learns of blocks late, or takes
    // long to build on them, moves it past the bound (NEW_BLOCK_SV2_AGAINST_SV1_MS).
    for side in ["sv2-c", "sv2-d"] {
        let job = (s["verdict"][side].as_array().unwrap().iter())
            .find(|r| r["metric"] == "new_prevhash_job_ms")
            .unwrap_or_else(|| panic!("{side}: no new-block row: {}", s["verdict"]));
        assert_eq!(job["method"], "paired", "{job}");
        let d = job["delta"].as_f64().unwrap();
        eprintln!("{side}: new-block job against sv1, paired by tip: {d:.2} ms ({job})");
        assert!(
            d.abs() < NEW_BLOCK_SV2_AGAINST_SV1_MS,
            "{side}: new-block job {d:.1} ms from SV1's on the same tips: {job}"
        );
    }

    let via_tdp = events(&dir, "node")
        .into_iter()
        .filter(|e| e["kind"] == "block_submitted" && e["via"] == "tdp")
        .filter(|e| e["reject_reason"].is_null())
        .count();
    assert!(via_tdp > 0, "no SubmitSolution accepted by the node");
    for side in ["sv2-c", "sv2-d"] {
        let b = &s["sides"][side]["blocks"];
        assert!(
            b["accepted"].as_u64().unwrap() > 0,
            "{side}: no block of ours accepted: {}",
            s["sides"][side]
        );
        let p50 = s["sides"][side]["block_propagation_ms"]["p50"]
            .as_f64()
            .unwrap();
        assert!(
            p50 >= 50.0,
            "{side}: a block crossed a 50 ms link in {p50} ms"
        );
    }
}

/// Every side of one run, configurations A and B with a farm node each: every job a
/// side's miners got is tied to a template of the node that side mines on (the farm's own
/// node for A and B, the network's for the others), by marker, read from the raw events.
/// And A and B end to end: the real pool with its JDS on our node's Mining IPC, the real
/// JDC in FULLTEMPLATE mode on the farm's own node. Declared jobs are accepted, blocks
/// found on them reach the network's node (through the farm's node, which passes them
/// on), and what crossed to the pool took at least the injected delays.
#[test]
fn all_five_sides_in_one_run_tie_jobs_to_their_own_node_and_declare_jobs() {
    let dir = out_dir("five-sides");
    let out = run_with(
        "config-a",
        &dir,
        &[
            "--duration",
            "30s",
            "--set",
            r#"sides=["sv1", "sv2-a", "sv2-b", "sv2-c", "sv2-d"]"#,
        ],
        OUR_BLOCKS,
    )
    .output()
    .unwrap();
    succeed(out);
    let s = summary(&dir);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let markers_of = |node: &str| -> std::collections::HashSet<String> {
        events(&dir, node)
            .into_iter()
            .filter(|e| e["kind"] == "template_built")
            .map(|e| e["marker_txid"].as_str().unwrap().to_string())
            .collect()
    };
    let network_markers = markers_of("node");
    for (side, roles) in manifest["sides"].as_object().unwrap() {
        let node = roles["farm_node_role"].as_str().unwrap_or("node");
        let own = if node == "node" {
            network_markers.clone()
        } else {
            let farm = markers_of(node);
            assert!(
                farm.is_disjoint(&network_markers),
                "{side}: {node} built templates with the network node's markers"
            );
            farm
        };
        let jobs: Vec<Value> = events(&dir, roles["miners_role"].as_str().unwrap())
            .into_iter()
            .filter(|e| e["kind"] == "job_received")
            .collect();
        assert!(!jobs.is_empty(), "{side}: no jobs");
        for job in &jobs {
            let marker = job["marker_txid"].as_str().unwrap_or("none");
            assert!(
                own.contains(marker),
                "{side}: job {job} is not on a template of {node}"
            );
        }
    }
    // Every side's pool credits its accepted shares at a difficulty the tap or pool saw
    // (the SV1 pool's set_difficulty, each SV2 channel's target), near the work done: 4
    // miners at 30 shares a minute over 30 s make about 60 shares, so 50-170% is 3.5 sd.
    for (side, summary) in s["sides"].as_object().unwrap() {
        let work = &summary["pool_work"];
        assert_eq!(work["accepted_without_difficulty"], 0, "{side}: {work}");
        let pct = work["credited_pct"].as_f64().unwrap();
        assert!((50.0..170.0).contains(&pct), "{side}: {work}");
    }
    // The two farm nodes number their templates apart.
    assert!(markers_of("node-sv2-a").is_disjoint(&markers_of("node-sv2-b")));
    for kind in ["job_on_another_nodes_template", "job_without_node_template"] {
        assert!(s["unmatched"][kind].is_null(), "{kind}: {}", s["unmatched"]);
    }
    let (mut farm_blocks_accepted, mut submitted_via_ipc) = (0, 0);
    for side in ["sv2-a", "sv2-b"] {
        let side_summary = &s["sides"][side];
        let jd = &side_summary["job_declaration"];
        assert!(jd["accepted"].as_u64().unwrap() > 0, "{side}: {jd}");
        // A declaration crosses the 40 ms round trip at least once.
        let rtt = jd["round_trip_ms"]["p50"].as_f64().unwrap();
        assert!(rtt >= 40.0, "{side}: a declaration answered in {rtt} ms");
        assert!(
            side_summary["shares"]["accepted"].as_u64().unwrap() > 0,
            "{side}: {side_summary}"
        );
        // Blocks found on declared jobs reach the network through the farm's node, 20 ms
        // away. With five sides sharing the hashrate a side finds about 3 in the window,
        // none in about 5% of runs (Poisson): the two farm sides together must have one
        // accepted (none in both: 0.25% of runs), and each side that has one took the hop.
        let accepted = side_summary["blocks"]["accepted"].as_u64().unwrap();
        farm_blocks_accepted += accepted;
        if accepted > 0 {
            let p50 = side_summary["block_propagation_ms"]["p50"]
                .as_f64()
                .unwrap();
            assert!(
                p50 >= 20.0,
                "{side}: a block reached the network in {p50} ms"
            );
        }
        // The farm node's blocks count as compact blocks; the emulation's whole-block feed
        // is shown apart, in no site's total.
        let bw = &side_summary["bandwidth_bytes_per_s"];
        let compact = bw["farm_block_relay_modelled"]["rx"].as_f64().unwrap();
        let farm_rx = bw["farm"]["rx"].as_f64().unwrap();
        let relay = bw["farm_tx_relay_modelled"].as_f64().unwrap();
        let link_down = bw["pool"]["tx"].as_f64().unwrap();
        assert!(compact > 0.0, "{side}: no compact blocks: {bw}");
        assert!(bw["emulation_feed"]["rx"].as_f64().unwrap() > 0.0, "{bw}");
        // Over the whole run (a window's edge can hold a block in one counter and not the
        // other, and a 2 s block can be mostly transactions the farm never saw), compact
        // blocks cost far less than the whole blocks the feed carried.
        let last = |role: &str, kind: &str, field: &str| {
            events(&dir, role)
                .into_iter()
                .filter(|e| e["kind"] == kind)
                .filter_map(|e| e[field].as_u64())
                .max()
                .unwrap_or(0)
        };
        let compact_total = last(&format!("node-{side}"), "block_relay_modelled", "received");
        let feed_total = last(&format!("feed-{side}"), "link_bytes", "down_bytes");
        assert!(
            feed_total > 2 * compact_total,
            "{side}: whole blocks {feed_total} B against compact {compact_total} B"
        );
        assert!(
            (farm_rx - (link_down + relay + compact)).abs() < 1e-6,
            "{side}: the farm receives its link, relay and compact blocks, not the feed: {bw}"
        );
        let farm_node = format!("node-{side}");
        let via_ipc = events(&dir, &farm_node)
            .into_iter()
            .filter(|e| e["kind"] == "block_submitted" && e["via"] == "ipc")
            .count();
        submitted_via_ipc += via_ipc;
        for role in [
            farm_node.as_str(),
            &format!("pool-{side}"),
            &format!("jdc-{side}"),
        ] {
            assert!(
                side_summary["roles"][role]["cpu_pct"]["count"]
                    .as_u64()
                    .unwrap()
                    > 0,
                "{side}: no resource samples of {role}"
            );
        }
    }
    assert!(
        farm_blocks_accepted > 0,
        "no block of the farms accepted: {}",
        s["sides"]
    );
    assert!(
        submitted_via_ipc > 0,
        "no JDC submitted a block to its node"
    );
    assert!(s["sides"]["sv2-a"]["roles"]["translator-sv2-a"].is_object());
    assert!(
        s["sides"]["sv2-a"]["roles"]["node"].is_null(),
        "the shared node is no side's"
    );
    assert!(s["network"]["node"]["cpu_pct"]["count"].as_u64().unwrap() > 0);
    // Every block the farms submitted reached the network's node by its RPC.
    let forwarded = events(&dir, "node")
        .into_iter()
        .filter(|e| e["kind"] == "block_submitted" && e["via"] == "submitblock")
        .filter(|e| e["reject_reason"].is_null())
        .count();
    assert!(
        forwarded > 0,
        "no farm block was accepted by the network's node"
    );
    // The report of five sides as Chromium lays it out: no element wider than the page
    // (report::layout, as the report's own test measures it), and every chart's drawn
    // path has points.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(!html.contains(r#"d="""#), "an empty path in a chart");
    let (_, png, _) = common::load_page(
        &format!("file://{}", dir.join("report.html").display()),
        &dir.join("chromium"),
        &dir.join("report.png"),
    );
    assert_eq!(&png[1..4], b"PNG");
    let layout = report::layout::measure(&dir.join("report.html"), 1200, 1400).unwrap();
    assert!(
        layout.too_wide.is_empty(),
        "wider than the page: {:?}",
        layout.too_wide
    );
}

/// A role that cannot start stops the run before anything is measured, with its own
/// words: a missing program, and one that exits before it serves.
#[test]
fn an_sri_role_that_fails_to_start_stops_the_run_with_its_error() {
    let dir = out_dir("sv2-bad-role");
    let out = run_scenario(
        "config-c",
        &dir,
        &[
            "--set",
            r#"roles.translator.command="/nonexistent/translator_sv2""#,
        ],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // Asked its version before anything starts: the field, the binary and why.
    assert!(
        err.contains("roles.translator.command")
            && err.contains("/nonexistent/translator_sv2")
            && err.contains("does not start"),
        "{err}"
    );
    assert!(!dir.join("summary.json").exists(), "nothing was measured");

    // A known release that refuses its config once started: the run stops with the role's
    // own error.
    let dir = out_dir("sv2-bad-role-exits");
    std::fs::create_dir_all(&dir).unwrap();
    let pool = dir.join("pool_sv2");
    std::fs::write(
        &pool,
        "#!/bin/sh
[ \"$1\" = --version ] && echo 'pool_sv2 0.7.0' && exit 0
\
         echo 'error: unknown field no-such-field in the config' >&2
exit 1
",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let set = format!("roles.pool.command=\"{}\"", pool.display());
    let out = run_scenario("config-c", &dir.join("run"), &["--set", &set])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exited") && err.contains("no-such-field"),
        "the role's own error is shown: {err}"
    );
    assert!(err.contains("did not serve"), "{err}");
}

/// The SRI pool on Bitcoin Core's Mining IPC instead of TDP: our node's IPC face gives it
/// templates, its miners' shares are accepted, and its blocks come back by submitSolution.
/// The miners here open standard channels (header-only), the other kind the fleet speaks.
#[test]
fn the_sri_pool_mines_through_the_nodes_mining_ipc() {
    let dir = out_dir("sv2-ipc");
    let out = run_with(
        "config-d",
        &dir,
        &[
            "--duration",
            "30s",
            "--set",
            r#"sides=["sv2-d"]"#,
            "--set",
            "sv2.template_provider=ipc",
            "--set",
            "sv2.channel=standard",
        ],
        OUR_BLOCKS,
    )
    .output()
    .unwrap();
    succeed(out);
    let s = summary(&dir);
    let d = &s["sides"]["sv2-d"];
    assert!(d["shares"]["accepted"].as_u64().unwrap() > 0, "{d}");
    assert!(d["new_prevhash_job_ms"]["p50"].as_f64().unwrap() >= 20.0);
    let via_ipc = events(&dir, "node")
        .into_iter()
        .filter(|e| e["kind"] == "block_submitted" && e["via"] == "ipc")
        .filter(|e| e["reject_reason"].is_null())
        .count();
    assert!(via_ipc > 0, "no IPC submitSolution accepted by the node");
    assert!(d["blocks"]["accepted"].as_u64().unwrap() > 0, "{d}");
}
