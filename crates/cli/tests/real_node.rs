//! The SV1 side against a real node: `stratum-bench node` started on its own, as a
//! foreign bitcoind would be, measured from outside (the RPC tap's templates, its ZMQ
//! tips), and the same run measured the built-in way from the node's own events.

mod common;

use common::{out_dir, run_baseline, start_node_announced, word_after};
use std::path::Path;
use std::process::Stdio;

fn manifest_of(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap()
}

/// The run's summary again in `to`, over `window`: as the run measured it from outside,
/// or with `node_events` (the node's own) in place of the RPC tap's, as the simulated
/// network measures it.
fn summarized_as(
    run: &Path,
    node_events: Option<&Path>,
    window: (u64, u64),
    to: &Path,
) -> serde_json::Value {
    let events = to.join("events");
    std::fs::create_dir_all(&events).unwrap();
    for entry in std::fs::read_dir(run.join("events")).unwrap() {
        let path = entry.unwrap().path();
        if node_events.is_none() || path.file_name().unwrap() != "node-tap.jsonl" {
            std::fs::copy(&path, events.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::copy(run.join("samples.jsonl"), to.join("samples.jsonl")).unwrap();
    let mut manifest = manifest_of(run);
    if let Some(node_events) = node_events {
        std::fs::copy(node_events, events.join("node.jsonl")).unwrap();
        manifest["node_role"] = "node".into();
    }
    (manifest["window_start_ns"], manifest["window_end_ns"]) = (window.0.into(), window.1.into());
    std::fs::write(to.join("manifest.json"), manifest.to_string()).unwrap();
    serde_json::to_value(analysis::summary::summarize(to).unwrap()).unwrap()
}

/// The run's window with each edge moved, if need be, off the node's templates and tips
/// (as the node and the RPC tap stamp them): the tap sees each a fraction of a millisecond
/// after the node, so an edge between the two would count it on one side only.
fn window_clear_of_events(run: &Path, node_events: &Path) -> (u64, u64) {
    const CLEARANCE_NS: u64 = 5_000_000;
    let manifest = manifest_of(run);
    let mut times = Vec::new();
    for file in [node_events, &run.join("events/node-tap.jsonl")] {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            if ["template_built", "template_fetched", "tip_changed"]
                .contains(&record["kind"].as_str().unwrap())
            {
                times.push(record["t_ns"].as_u64().unwrap());
            }
        }
    }
    let clear = |mut edge: u64| {
        while times.iter().any(|t| t.abs_diff(edge) < CLEARANCE_NS) {
            edge += CLEARANCE_NS;
        }
        edge
    };
    (
        clear(manifest["window_start_ns"].as_u64().unwrap()),
        clear(manifest["window_end_ns"].as_u64().unwrap()),
    )
}

#[test]
fn an_sv1_side_on_a_real_node_measures_what_the_node_itself_records() {
    let out = out_dir("real-node");
    std::fs::create_dir_all(&out).unwrap();
    let node_events = out.join("node-own.jsonl");
    let (mut node, ready) = start_node_announced(&[
        "--block-interval",
        "4s",
        "--preset",
        "testnet",
        // Blocks come from the node's simulated network, every 4 s on average.
        "--difficulty",
        "0.001",
        "--template-refresh",
        "2s",
        "--events",
        node_events.to_str().unwrap(),
    ]);
    let (rpc, zmq) = (
        word_after(&ready, "RPC http://"),
        word_after(&ready, "ZMQ "),
    );
    let real_node = |extra: &str| {
        format!(
            "node={{ url = \"http://{rpc}\", rpc_user = \"u\", rpc_password = \"p\", zmq = \"{zmq}\"{extra} }}"
        )
    };

    // Bad credentials and the wrong chain: clear errors before anything starts.
    let refused = |name: &str, node: String| {
        let ran = run_baseline(&out.join(name), &["--set", &node])
            .output()
            .unwrap();
        assert!(!ran.status.success(), "{name}");
        String::from_utf8_lossy(&ran.stderr).into_owned()
    };
    let said = refused(
        "bad-credentials",
        real_node("").replace("rpc_password = \"p\"", "rpc_password = \"wrong\""),
    );
    assert!(
        said.contains("node.rpc_password") && said.contains("401"),
        "{said}"
    );
    let said = refused("wrong-chain", real_node(", chain = \"main\""));
    assert!(
        said.contains("node.chain") && said.contains("regtest"),
        "{said}"
    );

    let run = out.join("run");
    let ran = run_baseline(
        &run,
        &[
            "--set",
            &real_node(", chain = \"regtest\""),
            "--set",
            "duration=\"25s\"",
            "--set",
            "warmup=\"5s\"",
            "--set",
            "pool.job_refresh=\"2s\"",
            "--set",
            "link.rtt_ms=20",
            // Beside ours, an unmodified pool: NOMP's pool core (from npm), which polls
            // getblocktemplate every 500 ms.
            "--set",
            "sides=[\"sv1\", \"sv1-nomp\"]",
            "--set",
            "sv1_pools.nomp={ kind = \"nomp\" }",
        ],
    )
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(out.join("run.log")).unwrap())
    .status()
    .unwrap();
    assert!(ran.success(), "see {}", out.join("run.log").display());
    let _ = node.0.kill();
    let _ = node.0.wait();

    let window = window_clear_of_events(&run, &node_events);
    let outside = summarized_as(&run, None, window, &out.join("from-outside"));
    let inside = summarized_as(&run, Some(&node_events), window, &out.join("by-the-node"));
    let side_metrics = ["sv1", "sv1-nomp"]
        .into_iter()
        .flat_map(|side| ["new_job_ms", "new_prevhash_job_ms"].map(|metric| (side, metric)));
    for (side, metric) in side_metrics {
        let (a, b) = (
            &outside["sides"][side][metric],
            &inside["sides"][side][metric],
        );
        eprintln!("{side} {metric}: from outside {a}; by the node {b}");
        let count = a["count"].as_u64().unwrap();
        assert!(count >= 8, "{side} {metric}: {count} samples from outside");
        assert_eq!(
            a["count"], b["count"],
            "{side} {metric}: outside {a}, by the node {b}"
        );
        for stat in ["mean", "p50", "max"] {
            let (x, y) = (a[stat].as_f64().unwrap(), b[stat].as_f64().unwrap());
            assert!(
                (x - y).abs() < 1.0,
                "{side} {metric} {stat}: {x} ms from the RPC tap and ZMQ, {y} ms by the node"
            );
        }
    }
    // The run directory keeps the node's password out; its report says what was measured.
    let kept = std::fs::read_to_string(run.join("scenario.toml")).unwrap();
    assert!(!kept.contains("rpc_password = \"p\""), "{kept}");
    let report = std::process::Command::new(common::exe())
        .arg("report")
        .arg(&run)
        .output()
        .unwrap();
    assert!(report.status.success());
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("a real node at http://{rpc} (chain regtest)")),
        "{md}"
    );
    // Jobs are tied to the node's templates by their work id, not a marker.
    let unmatched = &outside["unmatched"];
    assert!(
        unmatched.get("job_without_node_template").is_none(),
        "{unmatched}"
    );
}
