//! `stratum-bench latency` against our SV1 pool, SRI's pool and a port that never
//! answers, and `run --rtt-from` taking its result.

use crate::common::{exe, out_dir, run_baseline, start_sri_pool, start_sv1_pool};
use std::process::Command;

#[test]
fn latency_probes_pools_counts_failures_apart_and_a_run_emulates_it() {
    let out = out_dir("latency");
    let (_node, _pool, sv1_port, _) = start_sv1_pool(&out.join("sv1"));
    let sri = start_sri_pool(&out.join("sri"));
    let (sri_port, sri_key) = (sri.port, sri.keys.public);
    // Listening, so the connect succeeds, but never accepting nor answering.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let file = out.join("latency.json");
    let urls = [
        format!("stratum+tcp://127.0.0.1:{sv1_port}"),
        format!("stratum2+tcp://127.0.0.1:{sri_port}/{sri_key}"),
        format!("stratum+tcp://127.0.0.1:{silent_port}"),
    ];
    // The SRI pool listens once it has its first template.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", sri_port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the SRI pool never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let probed = Command::new(exe())
        .arg("latency")
        .args(&urls)
        .args(["--interval", "1s", "--duration", "3s", "--timeout", "1s"])
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&probed.stdout);
    assert!(
        probed.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&probed.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let targets = report["targets"].as_array().unwrap();
    for (t, url) in targets.iter().zip(&urls) {
        assert_eq!(t["url"], url.as_str());
        assert!(t["probes"].as_u64().unwrap() >= 3, "{t}");
    }
    for answering in &targets[..2] {
        assert_eq!(answering["answered"], answering["probes"], "{answering}");
        assert!(answering["failures"].as_object().unwrap().is_empty());
        let p50 = answering["request_ms"]["p50"].as_f64().unwrap();
        assert!((0.0..1_000.0).contains(&p50), "{answering}");
        assert!(answering["connect_ms"]["p99"].as_f64().unwrap() < 1_000.0);
    }
    assert!(
        targets[1]["handshake_ms"]["p50"].as_f64().is_some(),
        "the SV2 handshake is timed"
    );
    let silent_target = &targets[2];
    assert_eq!(silent_target["answered"], 0, "{silent_target}");
    assert_eq!(
        silent_target["failures"]["timeout"],
        silent_target["probes"]
    );
    assert!(
        silent_target["request_ms"]["mean"].is_null(),
        "a failure is never a time"
    );
    assert!(printed.contains("timeout"), "{printed}");

    // A run emulates the SV1 pool's round trip (no side of it is SV2).
    let expected = targets[0]["connect_ms"]["p50"].as_f64().unwrap();
    let run_dir = out.join("run");
    let run = run_baseline(
        &run_dir,
        &[
            "--rtt-from",
            file.to_str().unwrap(),
            "--duration",
            "5s",
            "--set",
            "warmup=2s",
        ],
    )
    .output()
    .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ran: toml::Table =
        toml::from_str(&std::fs::read_to_string(run_dir.join("scenario.toml")).unwrap()).unwrap();
    let rtt = ran["link"]["rtt_ms"].as_float().unwrap();
    assert!(
        (rtt - expected).abs() < 1e-9,
        "link.rtt_ms {rtt}, measured {expected}"
    );
}
