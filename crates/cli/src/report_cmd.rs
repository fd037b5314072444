//! `stratum-bench report`.

use anyhow::{Context, Result};
use clap::Args;
use report::run_data::{RunData, Source};
use std::path::PathBuf;

#[derive(Args)]
pub struct ReportArgs {
    /// A run directory written by `stratum-bench run`, or the output directory of a
    /// `stratum-bench bench` command (fanout, pool, template), or a sweep directory
    /// (`stratum-bench sweep`: its sweep.md, sweep.html and CSVs again, from the runs done).
    run_dir: PathBuf,
    /// Also print report.pdf with headless Chromium (Debian package chromium).
    #[arg(long)]
    pdf: bool,
    /// Run the analysis again over the run's events instead of reading the summary.json
    /// and charts.json it wrote (after a fix to the analysis, say), and write them again.
    /// Without it, only a run whose files are missing or of another version is analysed
    /// again (for the report only), and says so.
    #[arg(long)]
    recompute: bool,
}

/// After a bench: its report written beside its JSON, and printed.
pub fn bench_report(out: &std::path::Path) -> Result<()> {
    let written = report::write_report(out, false, Source::Written)?;
    let md = std::fs::read_to_string(&written[0])?;
    print!("{md}");
    println!(
        "\nwritten to {} (report.md, report.html with charts)",
        out.display()
    );
    Ok(())
}

pub fn report(args: ReportArgs) -> Result<()> {
    // A race directory's report is its summary in words, as `show` prints it.
    if crate::race_cmd::is_race_dir(&args.run_dir) {
        let text = report::race::render(&crate::race_cmd::read(&args.run_dir)?);
        let path = args.run_dir.join("report.md");
        std::fs::write(
            &path,
            format!("# stratum-bench race\n\n```text\n{text}```\n"),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}", path.display());
        return Ok(());
    }
    // A sweep's report rewrites its sweep.json: not while the sweep writes there.
    let _lock = (args.run_dir.join(analysis::sweep::SWEEP_FILE).is_file())
        .then(|| harness::sweep::runner::Lock::take(&args.run_dir))
        .transpose()?;
    for file in report::write_report(
        &args.run_dir,
        args.pdf,
        if args.recompute {
            Source::Recompute
        } else {
            Source::Written
        },
    )? {
        println!("{}", file.display());
    }
    Ok(())
}

#[derive(Args)]
pub struct ShowArgs {
    /// A run directory written by `stratum-bench run`.
    run_dir: PathBuf,
    /// Also the links' relay lateness and the taps' added time.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten)]
    reprice: RepriceArgs,
}

/// A finished run priced again, each assumption where given: the analysis runs again over
/// the run's events (a few seconds), nothing is written, and the output says so.
#[derive(Args)]
pub struct RepriceArgs {
    /// Price the run for a farm of this hashrate instead (10PH/s, 5.2e17 H/s).
    #[arg(long, value_parser = crate::run_cmd::parse_hashrate)]
    hashrate: Option<f64>,
    /// ... on a network of this hashrate.
    #[arg(long, value_parser = crate::run_cmd::parse_hashrate)]
    network_hashrate: Option<f64>,
    /// ... with blocks worth this many sats (subsidy and fees).
    #[arg(long)]
    block_value_sats: Option<f64>,
    /// ... at this real block interval (10m, 600s).
    #[arg(long, value_parser = crate::run_cmd::parse_block_interval)]
    real_block_interval: Option<std::time::Duration>,
}

impl RepriceArgs {
    fn change(&self) -> Result<analysis::manifest::WorthChange> {
        let block_value_sats = (self.block_value_sats)
            .map(crate::run_cmd::check_block_value)
            .transpose()?;
        Ok(analysis::manifest::WorthChange {
            farm_hashrate: self.hashrate,
            network_hashrate: self.network_hashrate,
            block_interval_s: self.real_block_interval.map(|d| d.as_secs_f64()),
            block_value_sats,
        })
    }
}

/// The terminal's view: 100 columns, colour when stdout is a terminal.
pub fn terminal(verbose: bool) -> report::terminal::Terminal {
    report::terminal::Terminal {
        colour: std::io::IsTerminal::is_terminal(&std::io::stdout()),
        verbose,
        ..Default::default()
    }
}

pub fn show(args: ShowArgs) -> Result<()> {
    let change = args.reprice.change()?;
    // A race directory (`stratum-bench race`) reads as a race.
    if crate::race_cmd::is_race_dir(&args.run_dir) {
        anyhow::ensure!(
            change.is_empty(),
            "{} is a race: it has no worth to price again (--hashrate and the like are for a run)",
            args.run_dir.display()
        );
        print!(
            "{}",
            report::race::render(&crate::race_cmd::read(&args.run_dir)?)
        );
        return Ok(());
    }
    let shown = report::terminal::show(&args.run_dir, &terminal(args.verbose), &change)?;
    print!("{shown}");
    Ok(())
}

#[derive(Args)]
pub struct CompareArgs {
    /// The baseline (A), then one or more to compare against it. Each is a run directory,
    /// or a directory of run directories (several seeds of one setting), judged together:
    /// a role's CPU and memory and every per-second series by run, so a difference in
    /// them can be significant only with five runs or more a side.
    #[arg(required = true, num_args = 2..)]
    runs: Vec<PathBuf>,
    /// Where compare.md, compare.html and compare.json go.
    #[arg(long, default_value = "runs/compare")]
    out: PathBuf,
    /// Exit with status 2 when a headline metric (a side's new-job, new-job-after-a-block
    /// or block-propagation latency or stale work; an SRI role's CPU or memory) is significantly worse
    /// than A by more than this many percent, its whole 95% interval past it (to gate a CI
    /// on performance). With one run a side that judges the two runs; give directories of
    /// five runs or more a side to judge the releases.
    #[arg(long, value_name = "PCT")]
    fail_on_regression: Option<f64>,
}

pub fn compare(args: CompareArgs) -> Result<std::process::ExitCode> {
    let base = RunData::load_runs(&args.runs[0])?;
    let mut comparisons = Vec::new();
    for other in &args.runs[1..] {
        comparisons.push(report::compare::compare(
            &base,
            &RunData::load_runs(other)?,
        )?);
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut doc = report::document::Document {
        title: "stratum-bench comparison".into(),
        subtitle: format!("A: {}", args.runs[0].display()),
        sections: Vec::new(),
    };
    for c in &comparisons {
        for mut s in c.document().sections {
            s.title = format!("{} against A", c.run_b);
            doc.sections.push(s);
        }
    }
    std::fs::write(args.out.join("compare.md"), doc.to_markdown())?;
    std::fs::write(args.out.join("compare.html"), doc.to_html())?;
    std::fs::write(
        args.out.join("compare.json"),
        serde_json::to_string_pretty(&comparisons)? + "\n",
    )?;
    print!("{}", doc.to_markdown());
    println!("\nwritten to {}", args.out.display());
    Ok(gate(&comparisons, args.fail_on_regression))
}

/// Exit status 2 when a headline metric regressed beyond `pct` (the regressions said on
/// stderr), success otherwise or with no gate.
pub fn gate(
    comparisons: &[report::compare::Comparison],
    pct: Option<f64>,
) -> std::process::ExitCode {
    let Some(pct) = pct else {
        return std::process::ExitCode::SUCCESS;
    };
    let regressed = report::compare::regressions(comparisons, pct);
    if regressed.is_empty() {
        eprintln!("no headline metric worse by more than {pct}% (significant)");
        return std::process::ExitCode::SUCCESS;
    }
    eprintln!(
        "regressions beyond {pct}% (significant):\n  {}",
        regressed.join("\n  ")
    );
    std::process::ExitCode::from(2)
}

#[derive(Args)]
pub struct ExportArgs {
    /// A run directory.
    run_dir: PathBuf,
    /// Directory for the CSV files (one per event kind, samples.csv, latencies.csv).
    #[arg(long)]
    csv: PathBuf,
}

pub fn export(args: ExportArgs) -> Result<()> {
    let run = RunData::load(&args.run_dir)?;
    for f in report::export::export_csv(&run, &args.csv)? {
        println!("{}", f.display());
    }
    Ok(())
}
