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
    check(&scenario)?;
    Ok(scenario)
}

/// [`Scenario::parse`], then checked against this machine.
pub fn parse(text: &str, path: &Path, overrides: &[Setting]) -> Result<Scenario> {
    let scenario = Scenario::parse(text, path, overrides)?;
    check(&scenario)?;
    Ok(scenario)
}

fn check(scenario: &Scenario) -> Result<()> {
    // Parsing made each template's path whole (from the scenario's directory).
    for (label, pool) in &scenario.sv1_pools {
        external_pool::resolve(pool, Path::new(""), &format!("sv1_pools.{label}"))?;
    }
    limits::check_miners(scenario.miners.count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario named by a relative path (as `stratum-bench run scenarios/x.toml` gives
    /// it) finds its pool's templates beside it, once.
    #[test]
    fn a_pools_templates_are_found_from_a_relative_scenario_path() {
        let path = Path::new("../../scenarios/sv1-ckpool.toml");
        let scenario = load(path, &[]).unwrap();
        let template = (scenario.sv1_pools.values())
            .find_map(|p| p.config_template.clone())
            .unwrap();
        assert!(template.is_file(), "{}", template.display());
    }
}
