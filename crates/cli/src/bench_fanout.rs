//! `stratum-bench bench fanout`.

use analysis::bench::{FanoutMode, FanoutVia};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use tools::bench::fanout::{FanoutOptions, ForeignNode};

#[derive(Args)]
pub struct FanoutArgs {
    /// Miner counts to measure, comma separated (FastProxy, Zhong et al., used 225).
    #[arg(long, value_delimiter = ',', default_value = "225,1000")]
    miners: Vec<u32>,
    /// The sender: `sv1-pool` (the built-in SV1 pool, to SV1 miners), `translator` (SRI's
    /// translator with one aggregated channel up to the SRI pool, to SV1 miners; times
    /// start as the pool's SetNewPrevHash reaches it) or `sv2-pool` (the SRI pool, to SV2
    /// miners each on its own connection and standard channel; times start at the node's
    /// new tip, the pool's own moment being out of sight), or HOST:PORT of an SV1 pool
    /// already running on this machine, anyone's, on a regtest node named by --node-rpc
    /// (times start as the bench asks that node for the block).
    #[arg(long, default_value = "sv1-pool")]
    via: FanoutVia,
    /// With `--via sv2-pool` or `translator`: a `pool_sv2` binary to send in place of the
    /// linked release (an SRI release's, `make releases`), given the same config. It is
    /// asked its version first; one whose config this build does not know is refused.
    #[arg(long, value_name = "PATH")]
    pool_command: Option<PathBuf>,
    /// With --via HOST:PORT: the RPC URL of the regtest node behind that pool, for example
    /// http://127.0.0.1:18443. Each round mines a block there (generatetoaddress).
    #[arg(long)]
    node_rpc: Option<String>,
    /// RPC user and password of --node-rpc.
    #[arg(long, default_value = "")]
    rpc_user: String,
    #[arg(long, default_value = "")]
    rpc_password: String,
    /// How jobs travel: `tcp` (one write per miner's connection), `udp-broadcast` (with
    /// `sv1-pool`: one datagram to the loopback broadcast address every miner listens on,
    /// TCP as the fallback) or `sv2-group` (with `sv2-pool`: --group-size standard channels
    /// share each connection, as devices behind a farm's proxy, and the pool sends each
    /// job once per connection, to their group channel).
    #[arg(long, default_value = "tcp")]
    mode: FanoutMode,
    /// Channels per connection in `sv2-group` mode.
    #[arg(long, default_value_t = 100)]
    group_size: u32,
    /// New blocks (fan-outs) measured per miner count. Each is paired with a floor loop
    /// timed after it; below five pairs the sender over the floor has no interval.
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Where fanout.json, report.md and report.html (with charts), and the roles' logs and
    /// events go.
    #[arg(long, default_value = "runs/fanout")]
    out: PathBuf,
    /// Keep the miner fleets that make the load off the CPUs of the roles under test:
    /// they run on the second half of this process's CPUs, everything else on the first
    /// (needs at least 2). Without it every process may use every CPU, so the load's own
    /// work shows in the numbers.
    #[arg(long)]
    isolate: bool,
    /// Instead of a sender, an A/A test of the round-by-round interval: RUNS runs at each
    /// --miners count in which a second floor (its readers in a process of their own)
    /// stands in for the sender's fan-out, --rounds pairs per run (at least five), each
    /// with a round's pause between the two loops, as a sender's round has. The sides are
    /// identical, so the share of runs whose 95% interval excludes 1 is how often that
    /// interval calls identical sides different (about 5% if it holds). Writes
    /// fanout-calibration.json to --out, after each count.
    #[arg(
        long,
        value_name = "RUNS",
        conflicts_with_all = ["via", "mode", "group_size", "node_rpc", "rpc_user", "rpc_password", "pool_command"]
    )]
    calibrate: Option<usize>,
}

pub async fn run(args: FanoutArgs) -> Result<()> {
    if let Some(runs) = args.calibrate {
        anyhow::ensure!(
            runs > 0 && !args.miners.is_empty(),
            "--calibrate and --miners must not be empty"
        );
        anyhow::ensure!(
            args.rounds >= analysis::stats::MIN_UNITS,
            "--calibrate needs --rounds {} or more: fewer give a run no interval",
            analysis::stats::MIN_UNITS
        );
        let launcher = harness::process::Launcher::this_executable(args.isolate)?;
        let calibrations =
            tools::bench::fanout::calibrate(&args.miners, runs, args.rounds, &args.out, &launcher)
                .await?;
        for c in &calibrations {
            let s = c.summary();
            let share = s.share_ci.map_or(String::new(), |(lo, hi)| {
                format!(" (95%: {:.0}% to {:.0}%)", lo * 100.0, hi * 100.0)
            });
            let means = s.means.map_or(String::new(), |[lowest, highest, mean, sd]| {
                format!("; the runs' geometric means {lowest:.3} to {highest:.3}, mean {mean:.3}, sd {sd:.3}")
            });
            println!(
                "{} miners: {} of {} runs' 95% intervals exclude 1{share}{means}",
                c.miners, s.leaving_out_one, s.with_interval
            );
        }
        return Ok(());
    }
    let node = match (args.via, args.node_rpc) {
        (FanoutVia::Sv1At(pool), Some(url)) => {
            crate::targets::on_this_machine(pool, "--via")?;
            crate::targets::url_on_this_machine(&url, "--node-rpc")?;
            Some(ForeignNode {
                url,
                user: args.rpc_user,
                password: args.rpc_password,
            })
        }
        (FanoutVia::Sv1At(pool), None) => bail!(
            "--via {pool} needs --node-rpc: the URL of the regtest node behind that pool, where each round's block is mined"
        ),
        (_, Some(_)) => bail!(
            "--node-rpc is for a pool given by --via HOST:PORT; the built-in senders run their own node"
        ),
        (_, None) => None,
    };
    if args.mode == FanoutMode::UdpBroadcast && args.via != FanoutVia::Sv1Pool {
        bail!(
            "--mode udp-broadcast: only the built-in SV1 pool broadcasts ({} speaks TCP only)",
            args.via.name()
        );
    }
    if args.mode == FanoutMode::Sv2Group && args.via != FanoutVia::Sv2Pool {
        bail!("--mode sv2-group: group channels are an SV2 pool's (use --via sv2-pool)");
    }
    if args.pool_command.is_some()
        && !matches!(args.via, FanoutVia::Sv2Pool | FanoutVia::Translator)
    {
        bail!("--pool-command: only --via sv2-pool and --via translator run an SRI pool");
    }
    let pool_binary = crate::targets::sri_pool_binary(args.pool_command.as_deref())?;
    anyhow::ensure!(args.group_size > 0, "--group-size must be at least 1");
    anyhow::ensure!(
        args.rounds > 0 && !args.miners.is_empty(),
        "--rounds and --miners must not be empty"
    );
    tools::bench::fanout::run(FanoutOptions {
        miners: args.miners,
        via: args.via,
        mode: args.mode,
        group_size: args.group_size,
        rounds: args.rounds,
        node,
        pool_binary,
        out: args.out.clone(),
        launcher: harness::process::Launcher::this_executable(args.isolate)?,
    })
    .await?;
    crate::report_cmd::bench_report(&args.out)
}
