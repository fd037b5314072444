//! A scenario checked against this machine, beyond what its own fields say (those
//! `model::Scenario` checks): each SV1 pool of the user's resolvable (its adapter known,
//! its templates read, their placeholders ours) and the miners within the machine's file
//! descriptors and ports. Every command that runs a scenario loads it through here.

use crate::{external_pool, limits};
use anyhow::Result;
use model::scenario::{Scenario, Setting};
use std::path::Path;

/// [`Scenario::load`], then checked against this machine.
pub fn load(path: &Path, overrides: &[Setting]) -> Result<Scenario> {
    let scenario = Scenario::load(path, overrides)?;
    check(&scenario, path)?;
    Ok(scenario)
}

/// [`Scenario::parse`], then checked against this machine.
pub fn parse(text: &str, path: &Path, overrides: &[Setting]) -> Result<Scenario> {
    let scenario = Scenario::parse(text, path, overrides)?;
    check(&scenario, path)?;
    Ok(scenario)
}

fn check(scenario: &Scenario, path: &Path) -> Result<()> {
    let base = path.parent().unwrap_or(Path::new("."));
    for (label, pool) in &scenario.sv1_pools {
        external_pool::resolve(pool, base, &format!("sv1_pools.{label}"))?;
    }
    limits::check_miners(scenario.miners.count)
}
