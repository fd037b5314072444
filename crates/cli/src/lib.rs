//! `stratum-bench`: one command line over the whole benchmark suite. The binary
//! (`main.rs`) only stamps it with the commit it was built from.

mod bench_fanout;
mod bench_link;
mod bench_pool;
mod bench_template;
mod deploy_cmd;
mod latency_cmd;
mod race_cmd;
mod report_cmd;
mod run_cmd;
mod scenarios_cmd;
mod sweep_cmd;
mod tap_cmd;
mod targets;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use std::time::Duration;
use tracing_subscriber::EnvFilter;

/// Benchmark Stratum V1 against Stratum V2 on a simulated Bitcoin network.
///
/// stratum-bench runs real mining roles against a simulated Bitcoin network on one
/// machine and measures what Stratum V2 changes: stale shares, template value, time to
/// new work, block propagation, bandwidth, CPU and memory. Logs go to stderr; set
/// RUST_LOG (for example RUST_LOG=debug) for more detail.
#[derive(Parser)]
#[command(name = "stratum-bench", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the simulated Bitcoin network node standalone, for any bitcoind-RPC pool.
    ///
    /// It speaks bitcoind's JSON-RPC (getblocktemplate, submitblock, ...) and ZMQ
    /// (hashblock, rawblock) as a regtest node would. Blocks from "the rest of the
    /// network" arrive at random (Poisson) times; transactions arrive in the mempool at
    /// the preset's rate. Example:
    ///
    ///   stratum-bench node --rpc-user u --rpc-password p --block-interval 30s
    Node(Box<tools::node::NodeArgs>),
    /// Run a scenario: start every role as its own process, measure, write the run.
    ///
    /// Writes to the run directory (default runs/<time>-<name>/): events/ (one JSON-lines
    /// file per role), samples.jsonl (CPU and memory per role, every second),
    /// scenario.toml (as it ran, overrides applied), manifest.json, summary.json, and
    /// logs/. Live Prometheus metrics are served on --metrics-bind while it runs.
    /// Example:
    ///
    ///   stratum-bench run scenarios/sv1-baseline.toml --duration 60s --set link.rtt_ms=100
    Run(run_cmd::RunArgs),
    /// Print a finished run's conclusions, table and verdict again (from its summary.json).
    ///
    /// Example:
    ///
    ///   stratum-bench show runs/20261126-0100-sv1-vs-sv2
    Show(report_cmd::ShowArgs),
    /// List the shipped scenarios (scenarios/*.toml) with what each is for.
    Scenarios(scenarios_cmd::ScenariosArgs),
    /// Run a scenario at every point of a grid of settings, and draw how the answer moves.
    ///
    /// Each point is a full run of every side (`stratum-bench run`, its own process, its
    /// directory under points/), --repeat seeds a point. Writes sweep.json (the plan, each
    /// run's state, the curves and fitted lines), sweep.md, sweep.html (a chart per metric,
    /// a curve per side with its 95% band), points.csv and fits.csv. Ctrl-C leaves every
    /// finished run whole and a report of them; the same command again goes on. Examples:
    ///
    ///   stratum-bench sweep scenarios/sweep-rtt.toml
    ///
    ///   stratum-bench sweep scenarios/sv1-vs-sv2.toml --vary link.rtt_ms=10,100,400 --duration 2m
    ///
    ///   stratum-bench sweep scenarios/release.toml --vary release=TOOLS/sri-0.7.0,TOOLS/sri-0.6.0 --repeat 5
    ///
    /// (TOOLS: where `make releases` installs, `<target>/tools`; docs/releases.md)
    Sweep(sweep_cmd::SweepArgs),
    /// Write report.md and report.html (and with --pdf report.pdf) for a run directory.
    Report(report_cmd::ReportArgs),
    /// Compare runs: every latency, role CPU and memory, and bandwidth of each run
    /// against the first, with p50/p90/p99, deltas and 95% bootstrap intervals.
    Compare(report_cmd::CompareArgs),
    /// Export a run's events as CSV tables, for notebooks.
    Export(report_cmd::ExportArgs),
    /// Run one role process (what `run` starts for each role; for debugging by hand).
    #[command(hide = true)]
    Role(run_cmd::RoleArgs),
    /// Collect the events of roles that stream them (`role --collector`), from containers
    /// or other hosts, into an events directory, with each clock's offset from this host's.
    ///
    /// Runs until SIGTERM or Ctrl-C, then writes the clocks' estimates to --clocks. Run it
    /// on the harness's host: events are put on this host's clock. Example:
    ///
    ///   stratum-bench collect --listen 0.0.0.0:7000 --events run/events --clocks run/clocks.json
    #[command(hide = true)]
    Collect(run_cmd::CollectArgs),
    /// Build the container image every role runs from (`FROM scratch`: this executable and
    /// the libraries it loads), with no registry.
    ///
    /// Other hosts get it with `docker save TAG | ssh HOST docker load`. Example:
    ///
    ///   stratum-bench image --tag stratum-bench:dev
    Image(run_cmd::ImageArgs),
    /// Write a scenario's run as a compose file, for starting the roles yourself.
    ///
    /// Writes DIR/compose.yaml (every role and the events collector as services of the
    /// `stratum-bench image`, the pool and farm sites on internal networks joined only by
    /// each side's link, no port published, each role's spec in its environment), DIR/run/
    /// (where the collector writes the run) and DIR/README.md (how to start it with
    /// `docker compose` or `docker stack deploy`, stop it, and read the run). Example:
    ///
    ///   stratum-bench deploy scenarios/sv1-vs-sv2.toml --out deploy/ --duration 10m
    Deploy(deploy_cmd::DeployArgs),
    /// Measure a real deployment: a relay in front of a real pool, recording what crosses it.
    #[command(subcommand)]
    Tap(tap_cmd::TapCommand),
    /// The round trip to pools as a miner sees it, as percentiles per pool.
    ///
    /// Each probe opens a fresh connection: TCP connect, then `mining.subscribe` (SV1) or
    /// the Noise handshake and SetupConnection (SV2). A probe that is refused, times out
    /// or gets garbage is counted as such and never enters a time. `run --rtt-from FILE`
    /// makes a run's link these round trips. Example:
    ///
    ///   stratum-bench latency stratum+tcp://pool.example:3333 --interval 60s --duration 1h
    Latency(latency_cmd::LatencyArgs),
    /// Who tells your farm of a new block first: your own node or your pool.
    ///
    /// Under SV1 miners move to a new block when the pool says so (mining.notify with a
    /// new prev hash); under SV2 configurations A and B, SRI's Job Declarator Client moves
    /// them when the farm's own node hears of it. So whether A/B is faster than SV1 for a
    /// farm depends on which of the two hears first there. race subscribes to the node's
    /// ZMQ hashblock and opens one session to the pool as a miner would (SV1: subscribe,
    /// authorize; SV2: Noise, SetupConnection, OpenStandardMiningChannel), submits
    /// nothing, and stamps both arrivals of every block, tied by its hash, on one
    /// monotonic clock. Lead = node arrival - pool arrival (positive: the pool told first).
    ///
    /// It writes DIR/events.jsonl as it goes and DIR/summary.json at the end (also on
    /// Ctrl-C and SIGTERM): blocks seen by both, only the node, only the pool; the lead's
    /// distribution with a 95% interval of its mean over blocks; and A/B's new-block work
    /// against SV1's (lead + --roles-ms, an assumption) in ms and sats a day at --hashrate.
    /// The same command again resumes into DIR. A pool that drops the session is
    /// reconnected with backoff and the gap recorded. Examples:
    ///
    ///   stratum-bench race --node-zmq tcp://127.0.0.1:28332 --pool stratum+tcp://127.0.0.1:3333 --worker farm.race --out race/ --duration 24h
    ///
    ///   stratum-bench race --node-zmq tcp://127.0.0.1:28332 --pool stratum2+tcp://127.0.0.1:34254/9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72 --worker farm.race --out race-sv2/
    ///
    ///   stratum-bench race --show race/
    ///
    /// docs/race.md says what each figure means.
    Race(Box<race_cmd::RaceArgs>),
    /// Micro-benchmarks of single parts.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// getblocktemplate latency on a large mempool: a freshly built template and a
    /// cached one (the measurement of BCHN's getblocktemplatelight notes: 62 ms fresh, 0.9 ms cached
    /// with 6,000 transactions).
    Template(bench_template::TemplateArgs),
    /// Job fan-out: time for one new job to reach N connected miners, against the
    /// machine's floor (one write per connected loopback socket) and FastProxy's figures.
    Fanout(bench_fanout::FanoutArgs),
    /// Pool capacity: ramp share load from a separate process until the share response
    /// p99 passes a bound or errors appear; max sustained shares/s, latency per step, pool
    /// CPU per share and memory per connected miner (the goPool operator notes' questions).
    Pool(bench_pool::PoolArgs),
    /// What the userspace WAN relay adds to a round trip beyond the delay it emulates
    /// (its timer lateness and the two extra loopback hops).
    Link(bench_link::LinkArgs),
}

/// Parses the command line and runs the command; `build_commit` is the git commit the
/// binary was built from, written into every run's `host.json`.
pub fn main(build_commit: &'static str) -> ExitCode {
    harness::host::set_build_commit(build_commit);
    let cli = Cli::parse();
    // A run's own progress and result are its output: the roles' start-up lines only with
    // --verbose (RUST_LOG decides when set).
    let quiet = matches!(&cli.command, Command::Run(args) if !args.verbose);
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new(if quiet { "warn" } else { "info" })),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal: role logs and piped output stay plain.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let on_stop = cli.command.on_stop();
    if on_stop == OnStop::Itself {
        lifecycle::stops_handled_here();
    }
    let is_run = matches!(&cli.command, Command::Run(_));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let outcome = runtime.block_on(async {
        if on_stop == OnStop::AsAnyProgram {
            return execute(cli.command).await;
        }
        let mut stops = lifecycle::Stops::listen()?;
        tokio::select! {
            outcome = execute(cli.command) => outcome,
            (signalled, running) = stops.cancelling() => Ok(Ended::Stopped(signalled, running)),
        }
    });
    // Whatever the command started and did not wait for is stopped and waited for here
    // (a command cancelled by a signal drops its children unwaited): none outlives it.
    runtime.shutdown_timeout(Duration::from_secs(2));
    let left_running = lifecycle::stop_children(CHILDREN_GRACE);
    let said = |what: &str, processes: &[lifecycle::Stopped]| {
        if !processes.is_empty() {
            let names: Vec<String> = processes.iter().map(ToString::to_string).collect();
            eprintln!("{what}: {}", names.join(", "));
        }
    };
    match outcome {
        Ok(Ended::Done(code)) => {
            said("stopped what it had left running", &left_running);
            code
        }
        Ok(Ended::Stopped(signalled, mut running)) => {
            let what = if is_run {
                " before the run's window opened: nothing was measured yet"
            } else {
                ""
            };
            eprintln!("stopped by {signalled}{what}");
            for process in left_running {
                running.retain(|r| r.pid != process.pid);
                running.push(process);
            }
            said("stopped with it", &running);
            signalled.end_the_process()
        }
        Err(e) => {
            said("stopped what it had left running", &left_running);
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// How long a child process left running at the end has, after SIGTERM, before it is
/// killed: a role writes what it has within a second; Bitcoin Core may take several.
const CHILDREN_GRACE: Duration = Duration::from_secs(15);

/// What SIGTERM or Ctrl-C does to a command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnStop {
    /// It stops gracefully by itself; a second signal cancels it.
    Itself,
    /// Cancelled at the first, unless it has said it stops by itself from then on (a run
    /// once its window opens, a sweep once its runs start).
    Cancelled,
    /// It only reads and writes files, awaiting nothing (no handler would be polled while
    /// it works): the signal ends it as it would any program.
    AsAnyProgram,
}

impl Command {
    fn on_stop(&self) -> OnStop {
        match self {
            Command::Node(_)
            | Command::Role(_)
            | Command::Collect(_)
            | Command::Race(_)
            | Command::Tap(_) => OnStop::Itself,
            Command::Show(_)
            | Command::Scenarios(_)
            | Command::Image(_)
            | Command::Report(_)
            | Command::Compare(_)
            | Command::Export(_) => OnStop::AsAnyProgram,
            Command::Run(_)
            | Command::Sweep(_)
            | Command::Deploy(_)
            | Command::Latency(_)
            | Command::Bench(_) => OnStop::Cancelled,
        }
    }
}

/// How a command ended, when it did not fail.
enum Ended {
    Done(ExitCode),
    /// By a signal, with the child processes running when it came.
    Stopped(lifecycle::Signalled, Vec<lifecycle::Stopped>),
}

async fn execute(command: Command) -> anyhow::Result<Ended> {
    let done = |r: anyhow::Result<()>| r.map(|()| Ended::Done(ExitCode::SUCCESS));
    match command {
        Command::Node(args) => done(tools::node::run(*args).await),
        Command::Run(args) => done(run_cmd::run(args).await),
        Command::Show(args) => done(report_cmd::show(args)),
        Command::Scenarios(args) => done(scenarios_cmd::list(args)),
        Command::Sweep(args) => sweep_cmd::run(args).await.map(Ended::Done),
        Command::Role(args) => done(run_cmd::role(args).await),
        Command::Collect(args) => done(run_cmd::collect(args).await),
        Command::Image(args) => done(run_cmd::image(args)),
        Command::Deploy(args) => done(deploy_cmd::run(args).await),
        Command::Report(args) => done(report_cmd::report(args)),
        Command::Compare(args) => report_cmd::compare(args).map(Ended::Done),
        Command::Export(args) => done(report_cmd::export(args)),
        Command::Tap(command) => done(tap_cmd::run(command).await),
        Command::Latency(args) => done(latency_cmd::run(args).await),
        Command::Race(args) => done(race_cmd::run(*args).await),
        Command::Bench(BenchCommand::Template(args)) => done(bench_template::run(args).await),
        Command::Bench(BenchCommand::Link(args)) => done(bench_link::run(args).await),
        Command::Bench(BenchCommand::Pool(args)) => done(bench_pool::run(args).await),
        Command::Bench(BenchCommand::Fanout(args)) => done(bench_fanout::run(args).await),
    }
}
