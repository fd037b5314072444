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
    let fit = limits::miners_fit(scenario.miners.count)?;
    check_relay_shards(scenario, fit)
}

/// A scenario whose relays must run as shards here asks nothing of them they cannot do:
/// shards share their port as processes on one host, and an attacker, an outage or a
/// backup pool's route is the first shard's alone, so it would reach only its part of
/// the miners.
fn check_relay_shards(scenario: &Scenario, fit: limits::MinersFit) -> Result<()> {
    let sharded: Vec<String> = (scenario.sides.iter())
        .filter(|s| s.config.miners_cross_the_link())
        .map(|s| s.to_string())
        .collect();
    if sharded.is_empty() || fit.relay_shards == 1 {
        return Ok(());
    }
    let why = format!(
        "{} miners a side need the link and tap of {} as {} processes each (two descriptors a miner, {} a process here), and",
        scenario.miners.count,
        sharded.join(" and "),
        fit.relay_shards,
        fit.per_process
    );
    let fits = fit.relay_capacity();
    let refuse = |field: &str, what: &str| -> Result<()> {
        anyhow::bail!("scenario field `{field}`: {why} {what}; at most {fits} miners a side run without shards here")
    };
    use model::scenario::Engine;
    if scenario.placement.engine != Engine::Process {
        refuse("placement.engine", "the shards of a relay share one port, which processes on one host can and containers cannot")?;
    }
    if scenario.backup.pool {
        refuse(
            "backup.pool",
            "a backup pool's route would be the first shard's alone, its part of the miners'",
        )?;
    }
    if scenario.link.attack.is_some() {
        refuse(
            "link.attack",
            "an attacker would sit in the first shard alone and reach only its part of the miners",
        )?;
    }
    if !scenario.faults.is_empty() {
        refuse(
            "faults",
            "an outage would cut the first shard alone, only its part of the miners",
        )?;
    }
    Ok(())
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
