//! The run directory: where it goes, what is written before the roles start and after
//! they stop.

use analysis::manifest::Manifest;
use analysis::summary::Summary;
use anyhow::{Context, Result};
use model::run_dir::{EVENTS_DIR, MANIFEST_FILE, SAMPLES_FILE};
use model::scenario::Scenario;
use std::path::{Path, PathBuf};
pub(super) fn default_dir(name: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, mo, d) = civil_from_days(days as i64);
    PathBuf::from("runs").join(format!(
        "{y:04}{mo:02}{d:02}-{:02}{:02}{:02}-{name}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Gregorian date of a count of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Creates the run directory's folders and writes what the run starts from: the scenario
/// as it runs (overrides applied) and the host. An SRI binary that is not a release this
/// build writes the config of fails it before anything is written.
pub(super) fn prepare(dir: &Path, scenario: &Scenario) -> Result<()> {
    let sri_roles = crate::sri_builds::described(&crate::sri_builds::identify(scenario)?);
    for sub in [EVENTS_DIR, "logs"] {
        std::fs::create_dir_all(dir.join(sub))
            .with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
    }
    // Role specs and configs hold the run's RPC password and authority keys: the owner's.
    probe::private::create_dir(&dir.join("roles"))
        .with_context(|| format!("cannot create {}", dir.join("roles").display()))?;
    write_scenario(dir, scenario)?;
    std::fs::write(
        dir.join(model::run_dir::HOST_FILE),
        serde_json::to_string_pretty(&crate::host::capture(sri_roles))?,
    )?;
    Ok(())
}

/// Writes `scenario.toml`: the scenario as it runs. A run directory is shared; a real
/// node's password stays with its owner.
pub(crate) fn write_scenario(dir: &Path, scenario: &Scenario) -> Result<()> {
    let mut shared = scenario.clone();
    if let Some(model::scenario::RealNode::Reached(node)) = &mut shared.node {
        node.rpc_password = "(withheld)".into();
    }
    std::fs::write(
        dir.join(model::run_dir::SCENARIO_FILE),
        toml::to_string(&shared).context("scenario serialises")?,
    )?;
    Ok(())
}

/// Where interim snapshots go, one folder each (`interim/600s/`).
pub const INTERIM_DIR: &str = "interim";

/// A snapshot of the run so far as a run directory of its own under `interim/<label>/`:
/// its manifest (the window ending now) and summary, the run's files linked, then its
/// report by `write_report`. Returns the snapshot's folder.
pub(super) fn write_interim(
    dir: &Path,
    label: &str,
    (manifest, summary): (&Manifest, &Summary),
    write_report: super::InterimReport,
) -> Result<PathBuf> {
    let at = dir.join(INTERIM_DIR).join(label);
    std::fs::create_dir_all(&at).with_context(|| format!("cannot create {}", at.display()))?;
    // The events and samples as they grow: the snapshot's window bounds what it reads.
    for shared in [
        EVENTS_DIR,
        SAMPLES_FILE,
        model::run_dir::SCENARIO_FILE,
        model::run_dir::HOST_FILE,
    ] {
        let link = at.join(shared);
        if !link.exists() {
            std::os::unix::fs::symlink(Path::new("../..").join(shared), &link)
                .with_context(|| format!("cannot link {}", link.display()))?;
        }
    }
    write_summary(&at, manifest, summary)?;
    write_report(&at)?;
    Ok(at)
}

/// A run directory this run made, removed again if the run ends before its roles start:
/// a run that cannot start leaves nothing behind; one that started roles keeps their logs.
pub(super) struct Unstarted(Option<PathBuf>);

impl Unstarted {
    /// Before anything is written to `dir`: only a directory that did not exist is removed
    /// (never an `--out` the user had).
    pub(super) fn new(dir: &Path) -> Unstarted {
        Unstarted((!dir.exists()).then(|| dir.to_path_buf()))
    }

    /// The roles start: the directory stays, whatever happens next.
    pub(super) fn roles_start(mut self) {
        self.0 = None;
    }
}

impl Drop for Unstarted {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Writes `manifest.json`, `summary.json` and what a report draws beside it,
/// `charts.json`.
pub(crate) fn write_results(dir: &Path, manifest: &Manifest, summary: &Summary) -> Result<()> {
    write_summary(dir, manifest, summary)?;
    analysis::charts::Charts::write(dir, summary)
}

/// Writes `manifest.json` and `summary.json` only: an interim snapshot's, whose per-miner
/// values are on disk until the run ends (its report reads them from the events).
fn write_summary(dir: &Path, manifest: &Manifest, summary: &Summary) -> Result<()> {
    std::fs::write(
        dir.join(MANIFEST_FILE),
        serde_json::to_string_pretty(manifest)?,
    )?;
    analysis::summary::write(dir, summary)
}
