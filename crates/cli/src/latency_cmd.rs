//! `stratum-bench latency`.

use analysis::latency::LatencyReport;
use anyhow::Result;
use clap::Args;
use model::duration::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct LatencyArgs {
    /// Pools to probe: stratum+tcp://HOST:PORT (SV1) or stratum2+tcp://HOST:PORT[/KEY]
    /// (SV2, with the pool's base58 authority key to check it).
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// Probe every pool this often.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    interval: Duration,
    /// Keep probing this long (the first round always runs): 1h measures a day's hour.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    duration: Duration,
    /// A probe with no answer by then fails as a timeout.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
    /// Where every probe and each pool's percentiles go (JSON, for `run --rtt-from`).
    #[arg(long, default_value = "latency.json")]
    out: PathBuf,
}

pub async fn run(args: LatencyArgs) -> Result<()> {
    let report =
        tools::latency::probe_all(&args.urls, args.interval, args.duration, args.timeout).await?;
    tools::latency::write(&report, &args.out)?;
    print(&report);
    println!("written to {}", args.out.display());
    Ok(())
}

fn print(report: &LatencyReport) {
    let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
    for t in &report.targets {
        let failures: Vec<String> = (t.failures.iter())
            .map(|(why, n)| format!("{n} {why}"))
            .collect();
        println!(
            "{}: {} of {} probes answered{}",
            t.url,
            t.answered,
            t.probes,
            if failures.is_empty() {
                String::new()
            } else {
                format!(" (failed: {})", failures.join(", "))
            }
        );
        let mut rows = vec![("TCP connect", &t.connect_ms)];
        if let Some(h) = &t.handshake_ms {
            rows.push(("Noise handshake", h));
        }
        rows.push(("first request", &t.request_ms));
        for (what, d) in rows {
            println!(
                "  {what:16} ms  p50 {}  p90 {}  p99 {}  max {}",
                f(d.p50),
                f(d.p90),
                f(d.p99),
                f(d.max)
            );
        }
    }
}
