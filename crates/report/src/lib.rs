//! Reports people read. A run directory becomes `report.md` and a self-contained
//! `report.html` (inline SVG charts), optionally a PDF printed by headless Chromium;
//! two runs become a comparison; a run's tables become CSV; benchmark results become their
//! own report. Plain data in (the analysis's summary.json and charts.json), files out: a
//! report computes nothing; where the analysis must run again, it is analysis that reads
//! the events.

pub mod bench;
pub mod compare;
mod content;
pub mod document;
pub mod export;
mod forest;
pub mod fuzzing;
pub mod layout;
mod outage;
pub mod race;
pub mod readings;
pub mod run_data;
mod security;
pub mod svg;
pub mod sweep;
pub mod tap;
pub mod terminal;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Writes `report.md` and `report.html` (and `report.pdf` with `pdf`) into `run_dir`: the
/// report of a run, from the numbers of `source`, or of benchmark results when that is
/// what the directory holds.
pub fn write_report(run_dir: &Path, pdf: bool, source: run_data::Source) -> Result<Vec<PathBuf>> {
    if run_dir.join(analysis::sweep::SWEEP_FILE).is_file() {
        let mut written = sweep::write(run_dir)?.files;
        if pdf {
            let out = run_dir.join("sweep.pdf");
            print_pdf(&run_dir.join("sweep.html"), &out)?;
            written.push(out);
        }
        return Ok(written);
    }
    let is_run = run_dir.join(model::run_dir::MANIFEST_FILE).exists();
    let doc = if bench::is_bench_dir(run_dir) && !is_run {
        bench::document(run_dir)?
    } else if tap::is_tap_dir(run_dir) && !is_run {
        tap::document(run_dir)?
    } else {
        content::build(&run_data::RunData::load_from(run_dir, source)?)
    };
    let md = run_dir.join("report.md");
    let html = run_dir.join("report.html");
    std::fs::write(&md, doc.to_markdown())
        .with_context(|| format!("cannot write {}", md.display()))?;
    std::fs::write(&html, doc.to_html())
        .with_context(|| format!("cannot write {}", html.display()))?;
    let mut written = vec![md, html.clone()];
    if pdf {
        let out = run_dir.join("report.pdf");
        print_pdf(&html, &out)?;
        written.push(out);
    }
    Ok(written)
}

/// Prints an HTML file to PDF with headless Chromium (Debian's `chromium`).
pub fn print_pdf(html: &Path, pdf: &Path) -> Result<()> {
    let html = html.canonicalize()?;
    let profile =
        std::env::temp_dir().join(format!("stratum-bench-chromium-{}", std::process::id()));
    let status = lifecycle::command("chromium")
        .args(chromium_flags(&profile))
        .arg("--no-pdf-header-footer")
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("cannot run chromium (install the Debian package chromium)")?;
    let _ = std::fs::remove_dir_all(&profile);
    if !status.success() || !pdf.exists() {
        bail!("chromium could not print {} ({status})", html.display());
    }
    Ok(())
}

/// Headless Chromium that stays off the network and leaves no state behind.
pub fn chromium_flags(profile: &Path) -> Vec<String> {
    [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(std::iter::once(format!(
        "--user-data-dir={}",
        profile.display()
    )))
    .collect()
}
