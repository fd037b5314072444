//! Watching a run while it goes, with the real tools an operator has: the run's own page
//! in Chromium, Prometheus scraping `/metrics` and answering every Grafana panel's query,
//! and `promtool` checking the shipped rules.

use crate::common::{free_port, http_get, load_page, out_dir, run_scenario, Killed};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo_file(path: &str) -> PathBuf {
    crate::common::crate_dir().join("../..").join(path)
}

#[test]
fn the_shipped_rules_pass_promtool() {
    for args in [
        ["check", "rules", "rules.yml"],
        ["test", "rules", "rules_test.yml"],
    ] {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(repo_file("prometheus"))
            .output()
            .expect("promtool (make test installs the Debian package prometheus)");
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Percent-encodes a PromQL query for a URL.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What Prometheus answers for an instant query: the result vector.
fn query(prometheus: &str, promql: &str) -> Vec<serde_json::Value> {
    let body = http_get(
        prometheus,
        &format!("/api/v1/query?query={}", encode(promql)),
    )
    .unwrap_or_else(|| panic!("Prometheus rejects {promql}"));
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["status"], "success", "{promql}: {answer}");
    answer["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A series' value, when it is a number (`histogram_quantile` gives NaN with no data).
fn finite(sample: &serde_json::Value) -> Option<f64> {
    sample["value"][1]
        .as_str()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
}

/// Every query of the Grafana dashboard, with its panel's title.
fn dashboard_queries() -> Vec<(String, String)> {
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_file("grafana/dashboard.json")).unwrap(),
    )
    .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 10, "a panel per measurement");
    panels
        .iter()
        .flat_map(|panel| {
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "panels read the dashboard's Prometheus"
            );
            let title = panel["title"].as_str().unwrap().to_string();
            panel["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |t| (title.clone(), t["expr"].as_str().unwrap().to_string()))
        })
        .collect()
}

/// Where two JSON trees differ, by dotted path (numbers within rounding are equal).
fn differences(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Vec<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| {
                    let (u, v) = (
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    );
                    differences(u, v, &format!("{path}.{k}"))
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .flat_map(|(i, (u, v))| differences(u, v, &format!("{path}[{i}]")))
            .collect(),
        // JSON read back may be a unit in the last place off (serde_json's float parsing).
        (Value::Number(x), Value::Number(y))
            if (x.as_f64().unwrap() - y.as_f64().unwrap()).abs()
                <= 1e-12 * x.as_f64().unwrap().abs().max(1e-300) =>
        {
            Vec::new()
        }
        _ if a == b => Vec::new(),
        _ => vec![format!("{path}: {a} against {b}")],
    }
}

/// The share counts the live page shows, per side (`data-submitted` of each side's card).
fn page_counts(dom: &str) -> Vec<u64> {
    dom.split("data-submitted=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse().ok())
        .collect()
}

/// One short run of SV1 against SV2 watched four ways while it goes: Chromium on its
/// page, Prometheus scraping it (with the shipped rules loaded), every Grafana panel's
/// query answered from that scrape, and interim reports.
#[test]
fn a_live_run_is_watched_in_chromium_and_through_prometheus() {
    let dir = out_dir("live");
    let metrics = format!("127.0.0.1:{}", free_port());
    let scratch = std::env::temp_dir().join(format!("live-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let run_log = scratch.join("run.log");
    let mut run = Killed(
        run_scenario(
            "sv1-vs-sv2",
            &dir,
            &[
                "--duration",
                "45s",
                "--set",
                "warmup=3s",
                "--set",
                "network.block_interval=4s",
                "--set",
                "network.hashrate_share=0.6",
                "--set",
                "miners.shares_per_min=120",
                "--metrics-bind",
                &metrics,
                "--report-every",
                "15s",
            ],
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&run_log).unwrap())
        .spawn()
        .unwrap(),
    );

    // Prometheus, as an operator runs it: every second, with the shipped rules.
    let config = scratch.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             rule_files: [{rules}]\n\
             scrape_configs:\n  - job_name: stratum-bench\n    static_configs: [{{targets: ['{metrics}']}}]\n",
            rules = repo_file("prometheus/rules.yml").display()
        ),
    )
    .unwrap();
    let prometheus = format!("127.0.0.1:{}", free_port());
    let _prometheus = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                scratch.join("data").display()
            ))
            .arg(format!("--web.listen-address={prometheus}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (make test installs the Debian package)"),
    );

    // How much of the window the run has measured, by its live summary.
    let window_s = || {
        http_get(&metrics, "/live.json")
            .and_then(|j| serde_json::from_str::<serde_json::Value>(&j).ok())
            .and_then(|j| j["summary"]["duration_s"].as_f64())
    };
    // The page, once the window has shares, and again seconds later. The roles' start and
    // the warm-up take seconds alone, more on a machine busy with other tests' builds.
    let deadline = Instant::now() + Duration::from_secs(150);
    loop {
        if window_s().is_some_and(|s| s >= 8.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run never reached its window"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let url = format!("http://{metrics}/");
    let profile = scratch.join("chromium");
    let (dom_1, png_1, console_1) = load_page(&url, &profile, &scratch.join("live-1.png"));
    std::thread::sleep(Duration::from_secs(4));
    let (dom_2, png_2, console_2) = load_page(&url, &profile, &scratch.join("live-2.png"));
    assert!(
        console_1.is_empty() && console_2.is_empty(),
        "console messages: {console_1:?} {console_2:?}"
    );
    let (before, after) = (page_counts(&dom_1), page_counts(&dom_2));
    assert_eq!(before.len(), 4, "a card per side: {before:?}");
    assert_eq!(after.len(), 4, "a card per side: {after:?}");
    assert!(
        before.iter().zip(&after).all(|(b, a)| a > b),
        "every side's share count grows between the loads: {before:?} then {after:?}"
    );
    assert!(dom_2.matches("<path").count() >= 4, "the charts have lines");
    assert_eq!(&png_1[1..4], b"PNG");
    assert_ne!(png_1, png_2, "the two screenshots differ");

    // Every panel's query answers from the scrape, with numbers where the run has them.
    // Some need an event the run makes at random (a block one of our miners found, for
    // block propagation: about 0.15 a second here): each is asked again until it has a
    // number or 41 s of the 45 s window have passed, which leaves the run alive for the
    // rules below. After a fixed 10 s wait, CI once found no block of ours accepted yet.
    for (panel, promql) in dashboard_queries() {
        let result = loop {
            let result = query(&prometheus, &promql);
            let settled = window_s().is_none_or(|s| s >= 41.0);
            if settled || result.iter().any(|r| finite(r).is_some()) {
                break result;
            }
            std::thread::sleep(Duration::from_secs(1));
        };
        assert!(!result.is_empty(), "panel {panel:?}: no data for {promql}");
        assert!(
            result.iter().any(|r| finite(r).is_some()),
            "panel {panel:?}: only NaN for {promql}: {result:?}"
        );
    }
    // The host, as node exporter names it: every core in every mode, and its memory.
    let cores = std::thread::available_parallelism().unwrap().get();
    let busy = query(
        &prometheus,
        r#"rate(node_cpu_seconds_total{mode!="idle"}[10s])"#,
    );
    assert!(busy.len() >= cores * 7, "{busy:?}");
    let memory = query(
        &prometheus,
        "stratum_bench_host_memory_available_bytes / stratum_bench_host_memory_total_bytes",
    );
    assert!(
        memory.iter().filter_map(finite).any(|r| r > 0.0 && r < 1.0),
        "{memory:?}"
    );
    // The recording rules evaluate on the scraped run too.
    for rule in [
        "stratum_bench:share_stale_ratio:rate5m",
        "stratum_bench:share_acceptance_ratio:rate5m",
        "stratum_bench:template_value_vs_network:ratio",
    ] {
        let result = query(&prometheus, rule);
        assert_eq!(result.len(), 4, "{rule}: a series per side: {result:?}");
    }

    let status = run.0.wait().unwrap();
    assert!(
        status.success(),
        "the run failed: {}",
        std::fs::read_to_string(&run_log).unwrap_or_default()
    );
    // Interim reports at 15 s and 30 s of the 45 s window, each of the run so far.
    for (at, measured) in [("15s", 15.0), ("30s", 30.0)] {
        let snapshot = dir.join("interim").join(at);
        let report = std::fs::read_to_string(snapshot.join("report.html"))
            .unwrap_or_else(|_| panic!("an interim report at {at}"));
        assert!(report.contains("an interim report"), "it says what it is");
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(snapshot.join("summary.json")).unwrap())
                .unwrap();
        let duration = summary["duration_s"].as_f64().unwrap();
        assert!(
            (measured..measured + 2.0).contains(&duration),
            "{at}: a window of {duration} s"
        );
    }
    // The run analysed its events as they came; read back from its files at once, they
    // give the same summary.
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let batch = analysis::stream::summarize(&dir).unwrap();
    let differ = differences(&written, &serde_json::to_value(&batch).unwrap(), "");
    assert!(
        differ.is_empty(),
        "streamed and batch summaries differ: {differ:#?}"
    );
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    assert!(
        samples.contains("\"role\":\"harness\""),
        "the harness samples its own CPU and memory"
    );
    let _ = std::fs::remove_dir_all(&scratch);
    let _ = std::fs::remove_dir_all(&dir);
}
