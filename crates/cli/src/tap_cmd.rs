//! `stratum-bench tap`.

use analysis::tap::TapSummary;
use anyhow::Result;
use clap::{Args, Subcommand};
use model::duration::parse_duration;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum TapCommand {
    /// Relay SV1 between miners (or a farm's proxy) and a real pool, and measure it.
    ///
    /// Every byte passes unchanged, line by line. Recorded as each line passes: every job
    /// (mining.notify), difficulty, and share with the pool's verdict, per worker; bytes
    /// per direction; what the tap itself adds per line; with --node-zmq, each block the
    /// operator's node announces, so "new block at the node -> job at the miner" is
    /// measured. Ctrl-C (or --duration) ends it and writes summary.json; `stratum-bench
    /// report DIR` renders it. Point miners at --listen instead of the pool. Example:
    ///
    ///   stratum-bench tap sv1 --upstream pool.example:3333 --listen 127.0.0.1:3333 --out tap-run --node-zmq tcp://127.0.0.1:28332
    Sv1(TapArgs),
    /// Relay SV2 between miners (or a proxy, or a JDC) and a real pool, and measure it.
    ///
    /// With --authority-secret-key (an operator tapping their own pool or JDS) the tap
    /// answers the miners' Noise handshake with the pool's own key, opens its own session
    /// to the pool, and forwards every frame unchanged, recording every job, block
    /// (SetNewPrevHash) and share with the pool's verdict, per channel. Miners keep the
    /// pool's public key: the tap proves the same authority.
    ///
    /// Without the key it relays the encrypted stream byte for byte and records only bytes
    /// and reads, with their sizes and times: an SV2 frame's length is inside its
    /// encrypted header, so no tool can tell frames apart without the key. Example:
    ///
    ///   stratum-bench tap sv2 --upstream pool.example:34254 --listen 127.0.0.1:34254 --out tap-run --authority-secret-key "$KEY"
    Sv2(Sv2TapArgs),
}

#[derive(Args)]
pub struct Sv2TapArgs {
    #[command(flatten)]
    tap: TapArgs,
    /// The pool's authority secret key, base58check as SRI's configs hold it (or from the
    /// environment, which keeps it out of the process list).
    #[arg(
        long,
        env = "STRATUM_BENCH_AUTHORITY_SECRET_KEY",
        hide_env_values = true
    )]
    authority_secret_key: Option<String>,
}

#[derive(Args)]
pub struct TapArgs {
    /// Where miners connect: 127.0.0.1:3333 for SV1, 127.0.0.1:34254 for SV2 unless you
    /// say otherwise. Anyone who can reach a tap reaches the pool through it, under their
    /// own worker names.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The pool (or proxy) tapped, as HOST:PORT.
    #[arg(long)]
    upstream: String,
    /// Directory for events/, tap.json and summary.json (created).
    #[arg(long)]
    out: PathBuf,
    /// Serve Prometheus metrics (stratum_bench_tap_*) on this address, at /metrics.
    #[arg(long)]
    metrics_bind: Option<SocketAddr>,
    /// The operator's node's ZMQ endpoint publishing hashblock (bitcoind
    /// -zmqpubhashblock), to measure new-block job times.
    #[arg(long, value_name = "URL")]
    node_zmq: Option<String>,
    /// End after this long (for example 10m) instead of at Ctrl-C.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Refuse to start unless this many connections fit the descriptor limit (a farm of
    /// thousands of machines needs twice as many descriptors).
    #[arg(long, value_name = "N")]
    max_connections: Option<u64>,
}

pub async fn run(command: TapCommand) -> Result<()> {
    let (protocol, args, default_port) = match command {
        TapCommand::Sv1(args) => (tools::tap::Protocol::Sv1, args, 3333),
        TapCommand::Sv2(args) => (
            tools::tap::Protocol::Sv2 {
                authority_secret_key: args.authority_secret_key,
            },
            args.tap,
            34254,
        ),
    };
    let out = args.out.clone();
    let summary = tools::tap::run(
        protocol,
        tools::tap::TapOptions {
            listen: (args.listen).unwrap_or(SocketAddr::from(([127, 0, 0, 1], default_port))),
            upstream: args.upstream,
            out: args.out,
            metrics_bind: args.metrics_bind,
            node_zmq: args.node_zmq,
            duration: args.duration,
            max_connections: args.max_connections,
        },
    )
    .await?;
    print_summary(&summary);
    println!(
        "written to {} (render it with: stratum-bench report {})",
        out.display(),
        out.display()
    );
    Ok(())
}

fn print_summary(s: &TapSummary) {
    println!(
        "{:.0} s, {} connections ({} could not reach the pool), {} jobs relayed",
        s.duration_s, s.connections, s.upstream_unreachable, s.jobs_relayed
    );
    let verdicts: Vec<String> = (s.verdicts.iter())
        .map(|(v, n)| format!("{n} {v}"))
        .collect();
    println!(
        "shares: {} from {} workers",
        if verdicts.is_empty() {
            "none".to_string()
        } else {
            verdicts.join(", ")
        },
        s.workers.len()
    );
    println!(
        "bytes: {} up ({:.0}/s), {} down ({:.0}/s)",
        s.bytes_up, s.bytes_up_per_s, s.bytes_down, s.bytes_down_per_s
    );
    if s.encrypted_reads_up + s.encrypted_reads_down > 0 {
        println!(
            "encrypted reads: {} up, {} down (frames cannot be told apart without the key)",
            s.encrypted_reads_up, s.encrypted_reads_down
        );
    }
}
