//! `stratum-bench report`.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReportArgs {
    /// A run directory written by `stratum-bench run`.
    run_dir: PathBuf,
    /// Also print report.pdf with headless Chromium (Debian package chromium).
    #[arg(long)]
    pdf: bool,
}

pub fn report(args: ReportArgs) -> Result<()> {
    for file in report::write_report(&args.run_dir, args.pdf)? {
        println!("{}", file.display());
    }
    Ok(())
}
