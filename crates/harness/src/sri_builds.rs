//! Which SRI build runs each SRI role of a run: the release linked into stratum-bench, or
//! a binary the scenario names (`roles.<role>.command`), identified before anything starts.

use anyhow::{Context, Result};
use model::scenario::{Config, RoleCommand, Scenario};
use sri::release::Build;
use sri::App;
use std::path::Path;

/// An SRI role some side of the run runs, and the build that runs it.
#[derive(Debug, Clone)]
pub struct RoleBuild {
    pub app: App,
    /// `None`: the release linked into stratum-bench.
    pub binary: Option<Build>,
}

impl std::fmt::Display for RoleBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.binary {
            Some(b) => write!(f, "{b} ({})", b.program.display()),
            None => {
                let package = self.app.package();
                let linked = (sri::LINKED_RELEASES.iter())
                    .find(|r| r.split(' ').next() == Some(package))
                    .copied()
                    .unwrap_or(package);
                write!(f, "{linked} (linked in)")
            }
        }
    }
}

/// The SRI roles the scenario's sides run, each with its build; every binary is asked its
/// app and version, and one this build does not write the config of is refused, naming
/// the scenario field.
pub fn identify(s: &Scenario) -> Result<Vec<RoleBuild>> {
    let runs = |wanted: fn(Config) -> bool| s.sides.iter().any(|side| wanted(side.config));
    let roles: [(App, bool, &Option<RoleCommand>, &str); 3] = [
        (
            App::Pool,
            runs(|c| c != Config::Sv1),
            &s.roles.pool,
            "roles.pool.command",
        ),
        (
            App::Translator,
            runs(Config::translates),
            &s.roles.translator,
            "roles.translator.command",
        ),
        (
            App::JobDeclaratorClient,
            runs(Config::declares_jobs),
            &s.roles.jdc,
            "roles.jdc.command",
        ),
    ];
    let mut builds = Vec::new();
    for (app, run, command, field) in roles {
        if !run {
            continue;
        }
        let binary = match command {
            None => None,
            Some(c) => {
                // SRI's binaries are started as `PROGRAM [ARGS] -c CONFIG`: the program
                // is the first word.
                let program = c.command.split_whitespace().next().unwrap_or_default();
                let build = sri::release::identify(Path::new(program), app)
                    .with_context(|| format!("scenario field {field}"))?;
                Some(build)
            }
        };
        builds.push(RoleBuild { app, binary });
    }
    Ok(builds)
}

/// Starts an SRI binary as role `name` with `config` (written to `<dir>/roles/<name>.toml`
/// and given as `-c CONFIG`, as SRI's binaries take it), once it listens on `listen`.
pub async fn spawn_binary(
    launcher: &crate::process::Launcher,
    dir: &Path,
    name: &str,
    command: &str,
    (listen, config): (std::net::SocketAddr, String),
) -> Result<crate::process::RoleProcess> {
    // The config holds the pool's authority secret: the owner's.
    probe::private::create_dir(&dir.join("roles"))?;
    let path = dir.join("roles").join(format!("{name}.toml"));
    probe::private::write(&path, config)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let argv: Vec<String> = (command.split_whitespace().map(str::to_string))
        .chain(["-c".to_string(), path.display().to_string()])
        .collect();
    crate::process::RoleProcess::spawn_command(launcher, &argv, None, dir, name, listen)
        .await
        .with_context(|| {
            format!(
                "SRI role {name} (`{command}`) did not serve: logs/{name}.log says why (a config this build refuses?)"
            )
        })
}

/// The builds in words, one a role: "pool_sv2 0.6.0 (/path/pool_sv2)".
pub fn described(builds: &[RoleBuild]) -> Vec<String> {
    builds.iter().map(RoleBuild::to_string).collect()
}
