//! `stratum-bench deploy`: a scenario's run as a compose file, for users who start the
//! roles themselves.

use crate::run_cmd::WorthArgs;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct DeployArgs {
    /// Scenario file (TOML), for example scenarios/sv1-vs-sv2.toml.
    scenario: PathBuf,
    /// Where the compose file, its README and the run's directory (`run/`) go; a new one.
    #[arg(long)]
    out: PathBuf,
    /// Measured duration, overriding the scenario's (for example 60s, 5m).
    #[arg(long, value_parser = model::duration::parse_duration)]
    duration: Option<std::time::Duration>,
    /// Override any scenario field: --set network.block_interval=10s --set link.rtt_ms=100
    #[arg(long = "set", value_name = "KEY=VALUE")]
    overrides: Vec<model::scenario::Setting>,
    #[command(flatten)]
    worth: WorthArgs,
}

pub async fn run(args: DeployArgs) -> Result<()> {
    let scenario = harness::on_host::load(&args.scenario, &args.overrides)?
        .measured_for(args.duration)?
        .in_containers()?;
    let worth = args.worth.assumptions()?;
    let deployment = harness::deploy::deploy(scenario, worth, &args.out).await?;
    let dir = deployment.dir.display();
    println!(
        "{} roles and their collector written to {dir}/{}; how to start them: {dir}/README.md",
        deployment.roles,
        harness::deploy::COMPOSE_FILE
    );
    Ok(())
}
