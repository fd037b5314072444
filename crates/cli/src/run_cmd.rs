//! `stratum-bench run` and `stratum-bench role`.

use anyhow::{Context, Result};
use clap::Args;
use harness::RunOptions;
use report::run_data::Source;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct RunArgs {
    /// Scenario file (TOML), for example scenarios/sv1-baseline.toml.
    #[arg(required_unless_present = "plan")]
    scenario: Option<PathBuf>,
    /// A run a sweep planned (its points/<name>.plan.json): the scenario, its settings and
    /// the worth's assumptions all come from the file.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["scenario", "overrides", "rtt_from", "hashrate", "network_hashrate", "block_value_sats", "real_block_interval"]
    )]
    plan: Option<PathBuf>,
    /// Run directory (default runs/<time>-<name>/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Measured duration, overriding the scenario's (for example 60s, 5m).
    #[arg(long, value_parser = model::duration::parse_duration)]
    duration: Option<Duration>,
    /// Override any scenario field: --set network.block_interval=10s --set link.rtt_ms=100
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<model::scenario::Setting>,
    /// Emulate the round trips `stratum-bench latency` measured (its JSON file): SV1 sides
    /// get the first SV1 pool's median TCP connect time as link.rtt_ms, SV2 sides the first
    /// SV2 pool's (every side the one protocol's, when the file has one). --set still wins.
    #[arg(long, value_name = "FILE")]
    rtt_from: Option<PathBuf>,
    /// Where live Prometheus metrics and the live page are served during the run (the
    /// address is printed); the default takes a free port, so runs side by side do not
    /// collide. prometheus/prometheus.yml scrapes 127.0.0.1:9184.
    #[arg(long, default_value = "127.0.0.1:0")]
    metrics_bind: SocketAddr,
    /// Check the scenario (and the overrides) and print what the run would start, then
    /// exit without starting anything.
    #[arg(long)]
    check: bool,
    /// Also the roles' start-up lines, and the links' and taps' own costs in the result.
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    worth: WorthArgs,
    /// Stop as soon as every headline difference (new job, new job after a block, stale
    /// work, farm bandwidth; every side against the baseline) is known to within
    /// --precision: its interval that narrow, wherever it lies (stopping when one first
    /// excludes zero would call chance differences significant); the scenario's duration
    /// is the cap. Checked every 10 s.
    #[arg(long)]
    until_significant: bool,
    /// With --until-significant: a difference is known once its 95% interval's half-width
    /// is under this share of the baseline's value: 10%, 5, 2.5%.
    #[arg(long, default_value = "10%", value_parser = parse_precision)]
    precision: f64,
    /// Every so long through the measured window (10m, 30s), a snapshot of the run so far
    /// with its report: interim/<seconds measured>s/report.html in the run directory.
    #[arg(long, value_parser = model::duration::parse_duration)]
    report_every: Option<Duration>,
    /// Test only: ROLE=NS runs that role's clock NS nanoseconds apart from the host's, as
    /// another host's would be (with `placement.events = "collector"`).
    #[arg(long, hide = true, value_name = "ROLE=NS", allow_hyphen_values = true)]
    test_clock_shift: Vec<String>,
    /// Test only: drop every collector connection once, this many seconds into the run.
    #[arg(long, hide = true)]
    test_cut_collector_after_s: Option<f64>,
}

/// What the worth in sats a day is computed for.
#[derive(Args, Clone)]
pub struct WorthArgs {
    /// The farm the verdict's worth in sats a day is computed for: 100PH/s, 5.2e17 (H/s).
    #[arg(long, default_value = "1PH/s", value_parser = parse_hashrate)]
    hashrate: f64,
    /// The whole network's hashrate, for the farm's share of its blocks.
    #[arg(long, default_value = "1ZH/s", value_parser = parse_hashrate)]
    network_hashrate: f64,
    /// A block's value in sats (subsidy and fees); default: the run's network templates'.
    #[arg(long)]
    block_value_sats: Option<f64>,
    /// The real network's block interval the worth is priced at (10m, 600s): a delay of
    /// t after every block costs t / this of a farm's revenue, whatever the run's own
    /// (fast, simulated) block interval.
    #[arg(long, default_value = "600s", value_parser = parse_block_interval)]
    real_block_interval: Duration,
}

impl WorthArgs {
    /// The assumptions, checked.
    pub fn assumptions(&self) -> Result<analysis::worth::WorthAssumptions> {
        self.block_value_sats.map(check_block_value).transpose()?;
        Ok(analysis::worth::WorthAssumptions {
            farm_hashrate: self.hashrate,
            network_hashrate: self.network_hashrate,
            block_interval_s: self.real_block_interval.as_secs_f64(),
            block_value_sats: self.block_value_sats,
        })
    }
}

/// A block's value given as `--block-value-sats`, refused unless a positive number.
pub fn check_block_value(v: f64) -> Result<f64> {
    anyhow::ensure!(
        v.is_finite() && v > 0.0,
        "--block-value-sats: {v} is not a positive number of sats"
    );
    Ok(v)
}

/// A block interval as `600s`, `10m` or `600`: positive.
pub fn parse_block_interval(text: &str) -> Result<Duration, String> {
    let d = model::duration::parse_duration(text)?;
    if d.is_zero() {
        return Err(format!(
            "{text:?}: a block interval must be above zero (600s, 10m)"
        ));
    }
    Ok(d)
}

/// A precision as `5%` or `5`: a percentage in (0, 100).
pub fn parse_precision(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value: f64 = t
        .strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a percentage (5%, 2.5)"))?;
    if !(value > 0.0 && value < 100.0) {
        return Err(format!(
            "{text:?}: a precision is a percentage above 0 and below 100 (5%, 2.5)"
        ));
    }
    Ok(value)
}

/// A hashrate as `100PH/s`, `100 PH`, `5.2e17` or `5.2e17H/s`: hashes per second.
pub fn parse_hashrate(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t).trim_end();
    let t = t.strip_suffix(['H', 'h']).unwrap_or(t);
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (number, prefix) = t.split_at(split);
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a hashrate (100PH/s, 5.2e17)"))?;
    let scale = match prefix.trim() {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Z" => 1e21,
        other => return Err(format!("unknown prefix {other:?} in {text:?}: use H/s, kH/s, MH/s, GH/s, TH/s, PH/s, EH/s or ZH/s (100PH/s, 5.2e17)")),
    };
    if !(value.is_finite() && value > 0.0) {
        return Err(format!(
            "{text:?}: a hashrate must be positive (100PH/s, 5.2e17)"
        ));
    }
    Ok(value * scale)
}

#[derive(Args)]
pub struct RoleArgs {
    /// Role spec (JSON) the harness wrote.
    #[arg(
        long,
        required_unless_present = "spec_env",
        conflicts_with = "spec_env"
    )]
    spec: Option<PathBuf>,
    /// The role spec itself, from this environment variable (a deployment's services
    /// carry theirs so, on any host).
    #[arg(long, value_name = "VAR")]
    spec_env: Option<String>,
    /// Events file to append to (roles on the harness's host).
    #[arg(
        long,
        required_unless_present = "collector",
        conflicts_with = "collector"
    )]
    events: Option<PathBuf>,
    /// The harness's events collector (HOST:PORT, a name or an address) to stream events
    /// to, keeping them in --journal until it holds them.
    #[arg(long, requires = "journal")]
    collector: Option<String>,
    /// The local journal of events sent to --collector.
    #[arg(long)]
    journal: Option<PathBuf>,
    /// The address the role binds what it serves of its own accord (the node's RPC and
    /// ZMQ): loopback, but in a container its own address.
    #[arg(long, default_value = "127.0.0.1")]
    bind_ip: std::net::IpAddr,
    /// A swarm service: find this role's address on the network `a.b.c.d/len`, and use it
    /// where the spec says 127.0.0.1 and for --bind-ip.
    #[arg(long, conflicts_with = "bind_ip")]
    own_address_in: Option<String>,
    /// A deployed role (`stratum-bench deploy`): the name its own address resolves to, used
    /// where the spec says 127.0.0.1 and for --bind-ip.
    #[arg(long, conflicts_with_all = ["bind_ip", "own_address_in"])]
    own_name: Option<String>,
    /// A deployed role: where its spec says STAND_IN, the address NAME resolves to.
    #[arg(long, value_name = "STAND_IN=NAME", requires = "own_name")]
    resolve: Vec<String>,
    /// A deployed role: start once HOST:PORT accepts connections (a role before it).
    #[arg(long, value_name = "HOST:PORT", requires = "own_name")]
    after: Vec<String>,
    /// Test only: run this role's clock this many nanoseconds apart from the host's.
    #[arg(long, hide = true, allow_hyphen_values = true)]
    test_clock_shift_ns: Option<i64>,
    /// Name the role records its events under.
    #[arg(long)]
    name: String,
}

/// The scenario file, its settings and the worth's assumptions: from a sweep's plan, or
/// from the command line (the round trips `--rtt-from` names first, so `--set` decides).
fn what_to_run(args: &RunArgs) -> Result<harness::sweep::runner::RunPlan> {
    if let Some(plan) = &args.plan {
        return harness::sweep::runner::RunPlan::read(plan);
    }
    let scenario = args
        .scenario
        .clone()
        .expect("clap requires a scenario without --plan");
    let mut settings = Vec::new();
    if let Some(file) = &args.rtt_from {
        // The sides come from the scenario as given.
        let sides = harness::on_host::load(&scenario, &args.overrides)?.sides;
        let report = tools::latency::read(file)?;
        settings = tools::latency::rtt_overrides(report.link_rtt_ms(), &sides)?;
        let said: Vec<String> = settings.iter().map(ToString::to_string).collect();
        eprintln!(
            "link round trips from {}: {}",
            file.display(),
            said.join(", ")
        );
    }
    settings.extend(args.overrides.iter().cloned());
    Ok(harness::sweep::runner::RunPlan {
        scenario,
        settings,
        worth: args.worth.assumptions()?,
    })
}

pub async fn run(args: RunArgs) -> Result<()> {
    let plan = what_to_run(&args)?;
    let scenario =
        harness::on_host::load(&plan.scenario, &plan.settings)?.measured_for(args.duration)?;
    let worth = plan.worth;
    if args.check {
        println!("{} is valid; a run would start:", plan.scenario.display());
        for line in scenario.plan() {
            println!("  {line}");
        }
        for role in harness::sri_builds::identify(&scenario)? {
            println!("  SRI {:?}: {role}", role.app);
        }
        return Ok(());
    }
    eprintln!(
        "running {} ({} side(s), {} miners each, {:.0} s measured after {:.0} s warm-up)",
        scenario.name,
        scenario.sides.len(),
        scenario.miners.count,
        scenario.duration.as_secs_f64(),
        scenario.warmup.as_secs_f64(),
    );
    let outcome = harness::run(RunOptions {
        scenario,
        out: args.out,
        metrics_bind: args.metrics_bind,
        worth,
        until_known_pct: args.until_significant.then_some(args.precision),
        launcher: harness::process::Launcher {
            clock_shifts: test_clock_shifts(&args.test_clock_shift)?,
            // The scenario's `placement.isolate` decides.
            ..harness::process::Launcher::this_executable(false)?
        },
        interim_reports: args
            .report_every
            .map(|every| (every, write_interim_report as harness::run::InterimReport)),
        cut_collector_after: args
            .test_cut_collector_after_s
            .map(Duration::try_from_secs_f64)
            .transpose()
            .context("--test-cut-collector-after-s: not a number of seconds")?,
    })
    .await?;
    // What `show` prints of the run directory, from the summary at hand.
    println!();
    print!(
        "{}",
        report::terminal::render(
            &outcome.summary,
            &report::terminal::pools_of(&outcome.dir),
            &crate::report_cmd::terminal(args.verbose)
        )
    );
    match report::write_report(&outcome.dir, false, Source::Written) {
        Ok(files) => println!(
            "run written to {} ({})",
            outcome.dir.display(),
            files
                .iter()
                .filter_map(|f| f.file_name()?.to_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(e) => println!(
            "run written to {} (report failed: {e:#})",
            outcome.dir.display()
        ),
    }
    if outcome.interrupted {
        println!("(interrupted: the summary covers the time until Ctrl-C or SIGTERM)");
    }
    Ok(())
}

pub async fn role(args: RoleArgs) -> Result<()> {
    harness::launch::launch(harness::launch::Launch {
        name: args.name,
        spec: args.spec,
        spec_env: args.spec_env,
        events: args.events,
        collector: args.collector,
        journal: args.journal,
        bind_ip: args.bind_ip,
        own_address_in: args.own_address_in,
        own_name: args.own_name,
        resolve: args.resolve,
        after: args.after,
        test_clock_shift_ns: args.test_clock_shift_ns,
    })
    .await
}

#[derive(Args)]
pub struct CollectArgs {
    /// Where roles connect (inside a container: 0.0.0.0:PORT on its own networks).
    #[arg(long, default_value = "127.0.0.1:7000")]
    listen: SocketAddr,
    /// The events directory to write (`<role>.jsonl` per role).
    #[arg(long, requires = "clocks")]
    events: Option<PathBuf>,
    /// Where each clock's offset and uncertainty go, after every round of probes and at
    /// the end (JSON).
    #[arg(long, requires = "events")]
    clocks: Option<PathBuf>,
    /// A deployment's run directory (`stratum-bench deploy`): at the end, set its window
    /// from when its last role started and write its summary. Alone (no --events), finish
    /// a deployment's run whose collector died before it could: from the events it wrote
    /// and its clocks' last estimates (DIR/clocks.json).
    #[arg(long, value_name = "DIR", required_unless_present = "events")]
    finish: Option<PathBuf>,
}

pub async fn collect(args: CollectArgs) -> Result<()> {
    let (Some(events), Some(clocks)) = (args.events, args.clocks) else {
        let dir = args
            .finish
            .as_deref()
            .context("--finish DIR, or --events and --clocks")?;
        return harness::deploy::finish_after_collector(dir);
    };
    let deployment = (args.finish.as_ref())
        .map(|dir| harness::deploy::awaiting_collection(dir).map(|plan| (dir, plan)))
        .transpose()?;
    let clocks = harness::collector::serve_until_stopped(args.listen, events, &clocks).await?;
    match deployment {
        Some((dir, plan)) => harness::deploy::finish_collected(dir, plan, clocks),
        None => Ok(()),
    }
}

#[derive(Args)]
pub struct ImageArgs {
    /// The image's tag (default stratum-bench:<version>).
    #[arg(long)]
    tag: Option<String>,
}

pub fn image(args: ImageArgs) -> Result<()> {
    let tag = args.tag.unwrap_or_else(harness::container::default_tag);
    let exe = std::env::current_exe().context("cannot find the stratum-bench executable")?;
    harness::container::build_image(&exe, &tag)?;
    println!("built {tag}; on another host: docker save {tag} | ssh HOST docker load");
    Ok(())
}

/// `--test-clock-shift ROLE=NS` pairs.
fn test_clock_shifts(pairs: &[String]) -> Result<std::collections::BTreeMap<String, i64>> {
    pairs
        .iter()
        .map(|pair| {
            let (role, ns) = pair
                .split_once('=')
                .with_context(|| format!("--test-clock-shift {pair}: expected ROLE=NANOSECONDS"))?;
            let ns: i64 = ns
                .parse()
                .with_context(|| format!("--test-clock-shift {pair}: {ns} is not nanoseconds"))?;
            Ok((role.to_string(), ns))
        })
        .collect()
}

/// An interim snapshot's report: Markdown and HTML (no PDF: Chromium mid-run costs the
/// roles CPU), by `stratum-bench report` in a process of its own. Reading the run's files
/// takes memory for a moment, which a long-lived harness would keep (its allocator holds
/// freed memory), and the harness's own samples should be what measuring costs.
fn write_interim_report(dir: &std::path::Path) -> Result<()> {
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let out = lifecycle::command(&exe)
        .arg("report")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot start {} report", exe.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "{} report {} ended with {}: {}",
            exe.display(),
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{parse_block_interval, parse_hashrate, parse_precision};
    use std::time::Duration;

    #[test]
    fn a_real_block_interval_is_a_positive_duration() {
        assert_eq!(parse_block_interval("600s"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_block_interval("10m"), Ok(Duration::from_secs(600)));
        assert!(parse_block_interval("0s")
            .unwrap_err()
            .contains("above zero"));
        assert!(parse_block_interval("-5s").is_err());
        assert!(parse_block_interval("soon")
            .unwrap_err()
            .contains("not a duration"));
    }

    #[test]
    fn hashrates_in_the_forms_operators_write_them() {
        assert_eq!(parse_hashrate("100PH/s"), Ok(1e17));
        assert_eq!(parse_hashrate("100 PH/s"), Ok(1e17));
        assert_eq!(parse_hashrate("1ZH/s"), Ok(1e21));
        assert_eq!(parse_hashrate("5.2e17"), Ok(5.2e17));
        assert_eq!(parse_hashrate("5.2e17H/s"), Ok(5.2e17));
        assert_eq!(parse_hashrate("250TH"), Ok(2.5e14));
        assert!(parse_hashrate("100XH/s")
            .unwrap_err()
            .contains("unknown prefix"));
        assert!(parse_hashrate("fast")
            .unwrap_err()
            .contains("not a hashrate"));
        assert!(parse_hashrate("-1PH/s").unwrap_err().contains("positive"));
        assert!(parse_hashrate("0").unwrap_err().contains("positive"));
        assert_eq!(parse_precision("5%"), Ok(5.0));
        assert_eq!(parse_precision(" 2.5 "), Ok(2.5));
        assert!(parse_precision("0%").unwrap_err().contains("above 0"));
        assert!(parse_precision("high")
            .unwrap_err()
            .contains("not a percentage"));
    }
}
