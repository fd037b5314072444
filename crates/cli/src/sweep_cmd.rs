//! `stratum-bench sweep`: a scenario run at every point of a grid of settings, each run a
//! `stratum-bench run` process of its own (`harness::sweep::runner`), then the curves.

use crate::run_cmd::WorthArgs;
use analysis::sweep::{RunStatus, SweepRecord};
use anyhow::Result;
use clap::Args;
use harness::sweep::runner::SweepOptions;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct SweepArgs {
    /// Scenario file (TOML). Its `[[sweep.vary]]` tables say what to vary when no --vary
    /// is given (scenarios/sweep-rtt.toml, scenarios/sweep-miners.toml).
    scenario: PathBuf,
    /// A scenario key and its values: --vary link.rtt_ms=10,50,100. Any key `--set` takes,
    /// `roles.pool.command=/path/a/pool_sv2,/path/b/pool_sv2` or `release=DIR_A,DIR_B`
    /// (directories of pre-built pool_sv2, translator_sv2, jd_client_sv2; `builtin` is the
    /// pinned SRI build linked in, whose CPU and memory are not a release binary's). Two or more --vary cross their values (a grid); the first is the x
    /// axis, the others give one panel per combination.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    vary: Vec<String>,
    /// Pair the --vary lists value by value instead of crossing them.
    #[arg(long)]
    zip: bool,
    /// Runs per point, each with its own seed (the scenario's, plus 0, 1, ...). Five or more
    /// let a release comparison judge releases rather than runs.
    #[arg(long)]
    repeat: Option<u32>,
    /// The sweep's directory (default runs/sweep-<scenario name>). Run the same command
    /// again and it goes on where it stopped: a run whose directory is whole is not run
    /// again.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Runs at once, each on CPUs of its own (its roles and its fleets apart, as
    /// placement.isolate does): 2 CPUs a run; refused beyond what this machine has.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Measured duration of every run, overriding the scenario's (60s, 5m).
    #[arg(long)]
    duration: Option<String>,
    /// Override a scenario field in every run: --set network.block_interval=10s
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<model::scenario::Setting>,
    /// With a release (or role command) varied: exit with status 2 when a release is
    /// worse than the first by more than this many percent on a headline metric (a side's
    /// new-job, new-job-after-a-block or block-propagation latency or stale work; an SRI
    /// role's CPU or memory), significantly and its whole 95% interval past it, as
    /// `compare` judges; a sweep with a failed run fails it. Give --repeat 5 or more to
    /// judge releases rather than runs, and every release as binaries.
    #[arg(long, value_name = "PCT")]
    fail_on_regression: Option<f64>,
    #[command(flatten)]
    worth: WorthArgs,
}

pub async fn run(args: SweepArgs) -> Result<std::process::ExitCode> {
    let gate = args.fail_on_regression;
    if gate.is_some() && !varies_a_release(&args)? {
        anyhow::bail!(
            "--fail-on-regression judges releases: vary one key, a release or an SRI role's command, and nothing else (--vary release=DIR_A,DIR_B or --vary roles.pool.command=PATH_A,PATH_B)"
        );
    }
    let swept = harness::sweep::runner::sweep(SweepOptions {
        worth: args.worth.assumptions()?,
        scenario: args.scenario,
        vary: args.vary,
        zip: args.zip,
        repeat: args.repeat,
        out: args.out,
        jobs: args.jobs,
        duration: args.duration,
        overrides: args.overrides,
    })
    .await?;
    let (record, releases) = written(&swept.dir, swept.interrupted)?;
    if gate.is_some() {
        whole_for_the_gate(&record, &releases, swept.interrupted)?;
    }
    Ok(crate::report_cmd::gate(&releases, gate))
}

/// A gate judges every release on all its runs: a sweep cut short, a failed run, or a
/// release without a comparison fails it rather than passing on what is left.
fn whole_for_the_gate(
    record: &SweepRecord,
    releases: &[report::compare::Comparison],
    interrupted: bool,
) -> Result<()> {
    let done = record.count(RunStatus::Done);
    if interrupted || done < record.runs.len() {
        anyhow::bail!(
            "--fail-on-regression: {done} of the sweep's {} runs finished: the gate judges every release on all its runs (see the report for the failures; run the same command again to finish)",
            record.runs.len()
        );
    }
    let compared = record
        .values
        .first()
        .map_or(0, |v| v.len().saturating_sub(1));
    if releases.len() < compared {
        anyhow::bail!(
            "--fail-on-regression: {} of {compared} release(s) could be compared with the first: see the sweep's report",
            releases.len()
        );
    }
    if record.repeat < 5 {
        eprintln!(
            "--fail-on-regression: with {} run(s) a release, latencies are judged run against run, and CPU, memory and stale work (one unit a run) cannot be: give --repeat 5 or more to judge them",
            record.repeat
        );
    }
    Ok(())
}

/// Whether the sweep varies one key, a release or an SRI role's command: by its --vary, or
/// else by the scenario's `[[sweep.vary]]`.
fn varies_a_release(args: &SweepArgs) -> Result<bool> {
    let keys: Vec<String> = if args.vary.is_empty() {
        let scenario = harness::on_host::load(&args.scenario, &args.overrides)?;
        (scenario.sweep.iter())
            .flat_map(|s| s.vary.iter().map(|v| v.key.clone()))
            .collect()
    } else {
        (args.vary.iter())
            .filter_map(|v| Some(v.split_once('=')?.0.trim().to_string()))
            .collect()
    };
    Ok(matches!(keys.as_slice(), [key] if analysis::sweep::is_release_key(key)))
}

/// The sweep's report, and what it says at the end: the slopes, the files, the failures;
/// returns the record and each release against the first.
fn written(
    dir: &Path,
    interrupted: bool,
) -> Result<(SweepRecord, Vec<report::compare::Comparison>)> {
    let report::sweep::Written {
        record,
        files: written,
        releases,
    } = report::sweep::write(dir)?;
    print!("{}", slopes_text(&record));
    let failed = record.count(RunStatus::Failed);
    println!(
        "sweep written to {} ({}){}",
        dir.display(),
        written
            .iter()
            .filter_map(|f| f.file_name()?.to_str())
            .collect::<Vec<_>>()
            .join(", "),
        if failed > 0 {
            format!("; {failed} run(s) failed (see the report)")
        } else {
            String::new()
        }
    );
    if interrupted {
        println!(
            "(interrupted: the report covers the runs done; run the same command again to go on)"
        );
    }
    Ok((record, releases))
}

/// Each side's slope of the headline latencies and of the scale readings, for the
/// terminal.
fn slopes_text(record: &SweepRecord) -> String {
    use analysis::sweep::CurveKind;
    let Some(a) = &record.analysis else {
        return String::new();
    };
    let mut out = String::new();
    for c in a.curves.iter().filter(|c| {
        matches!(
            c.kind,
            CurveKind::Side | CurveKind::Scale | CurveKind::Emulation
        )
    }) {
        for f in &c.fits {
            out.push_str(&format!(
                "{} per {}: {} slope {:.4}{} ({} points{})\n",
                c.label,
                a.key,
                f.side,
                f.slope,
                f.slope_ci
                    .map_or(String::new(), |(lo, hi)| format!(" [{lo:.4}, {hi:.4}]")),
                f.points,
                if f.panel.is_empty() {
                    String::new()
                } else {
                    format!(", {}", f.panel)
                }
            ));
        }
    }
    out
}
