//! `stratum-bench race`.

use crate::run_cmd::{parse_block_interval, parse_hashrate};
use analysis::race::{RaceParams, RaceRecord, RaceSummary, EVENTS_FILE, SCHEMA, SUMMARY_FILE};
use anyhow::{bail, Context, Result};
use clap::Args;
use model::duration::parse_duration;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct RaceArgs {
    /// The farm node's ZMQ publisher of `hashblock` (bitcoind's -zmqpubhashblock).
    #[arg(long, value_name = "ENDPOINT", required_unless_present = "show")]
    node_zmq: Option<String>,
    /// The pool: stratum+tcp://HOST:PORT (SV1) or stratum2+tcp://HOST:PORT/AUTHORITY_PUBKEY
    /// (SV2, the pool's base58 authority key).
    #[arg(long, value_name = "URL", required_unless_present = "show")]
    pool: Option<String>,
    /// The worker the session authorizes (SV1) or opens its channel as (SV2).
    #[arg(long, required_unless_present = "show")]
    worker: Option<String>,
    /// SV1's mining.authorize password.
    #[arg(long, default_value = "x")]
    password: String,
    /// The race directory: events.jsonl as it goes, summary.json at the end. An existing
    /// race directory is resumed: its blocks are kept and new ones appended.
    #[arg(long, value_name = "DIR", required_unless_present = "show")]
    out: Option<PathBuf>,
    /// How long to race (24h, 90m).
    #[arg(long, default_value = "24h", value_parser = parse_duration)]
    duration: Duration,
    /// Fail when the node publishes no hashblock this long. Mainnet goes 30 minutes
    /// without a block several times a day, two hours about once in three years.
    #[arg(long, default_value = "2h", value_parser = parse_duration)]
    silent_after: Duration,
    /// A pool session that gives no work this long after connecting has failed.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    work_timeout: Duration,
    /// A block only one source announced is counted as one-sided after this long.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    settle: Duration,
    /// Assumed: the SV2 farm roles' (JDC, translator) own time to build a new-block job,
    /// ms; 1.6 is configuration A's new-block job minus its farm node's lag in
    /// stratum-bench's default run.
    #[arg(long, default_value_t = analysis::race::DEFAULT_ROLES_MS)]
    roles_ms: f64,
    /// The farm the worth in sats a day is computed for: 100PH/s, 5.2e17 (H/s).
    #[arg(long, default_value = "1PH/s", value_parser = parse_hashrate)]
    hashrate: f64,
    /// The whole network's hashrate, for the farm's share of its blocks.
    #[arg(long, default_value = "1ZH/s", value_parser = parse_hashrate)]
    network_hashrate: f64,
    /// A block's value in sats (subsidy and fees); default: the subsidy, 312500000.
    #[arg(long)]
    block_value_sats: Option<f64>,
    /// The real network's block interval the worth is priced at (10m, 600s).
    #[arg(long, default_value = "600s", value_parser = parse_block_interval)]
    real_block_interval: Duration,
    /// Print the race in DIR (its summary.json; without one, its events as they stand)
    /// and exit.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["node_zmq", "pool", "worker", "out"])]
    show: Option<PathBuf>,
}

pub async fn run(args: RaceArgs) -> Result<()> {
    if let Some(dir) = &args.show {
        print!("{}", report::race::render(&read(dir)?));
        return Ok(());
    }
    if let Some(v) = args.block_value_sats {
        anyhow::ensure!(
            v.is_finite() && v > 0.0,
            "--block-value-sats: {v} is not a positive number of sats"
        );
    }
    anyhow::ensure!(
        args.roles_ms.is_finite() && args.roles_ms >= 0.0,
        "--roles-ms: {} is not a number of ms",
        args.roles_ms
    );
    let params = RaceParams {
        settle_s: args.settle.as_secs_f64(),
        roles_ms: args.roles_ms,
        worth: analysis::worth::WorthAssumptions {
            farm_hashrate: args.hashrate,
            network_hashrate: args.network_hashrate,
            block_interval_s: args.real_block_interval.as_secs_f64(),
            block_value_sats: args.block_value_sats,
        },
    };
    let (Some(node_zmq), Some(pool), Some(worker), Some(out)) =
        (args.node_zmq, args.pool, args.worker, args.out)
    else {
        bail!("--node-zmq, --pool, --worker and --out are needed to race");
    };
    let outcome = tools::race::run(tools::race::RaceOptions {
        node_zmq,
        pool,
        worker,
        password: args.password,
        out: out.clone(),
        duration: args.duration,
        silent_after: args.silent_after,
        work_timeout: args.work_timeout,
        params,
    })
    .await?;
    print!("{}", report::race::render(&outcome.summary));
    println!("written to {}", out.join(SUMMARY_FILE).display());
    match outcome.error {
        Some(e) => Err(e.context(format!(
            "the race stopped; what it recorded is kept in {}",
            out.display()
        ))),
        None => Ok(()),
    }
}

/// Whether `dir` holds a race (its events file), not a run.
pub fn is_race_dir(dir: &Path) -> bool {
    dir.join(EVENTS_FILE).is_file()
}

/// A race directory's summary: summary.json, or for a race still running (or killed), its
/// events summarised as they stand, with the default settings.
pub fn read(dir: &Path) -> Result<RaceSummary> {
    let summary = dir.join(SUMMARY_FILE);
    if let Ok(text) = std::fs::read_to_string(&summary) {
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", summary.display()))?;
        if value["schema"] != SCHEMA {
            bail!(
                "{} is not a race's summary (its schema is {}; `stratum-bench show` reads runs)",
                summary.display(),
                value["schema"]
            );
        }
        return serde_json::from_value(value)
            .with_context(|| format!("{} does not read as a race summary", summary.display()));
    }
    let events = dir.join(EVENTS_FILE);
    let text = std::fs::read_to_string(&events).with_context(|| {
        format!(
            "{} holds no race (no {SUMMARY_FILE} nor {EVENTS_FILE})",
            dir.display()
        )
    })?;
    let records: Vec<RaceRecord> = (text.lines())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let end = records.last().map_or(0, |r| r.t_ns);
    eprintln!(
        "{} has no {SUMMARY_FILE} yet: its events as they stand",
        dir.display()
    );
    Ok(analysis::race::summarize(
        &records,
        end,
        &RaceParams::default(),
    ))
}
