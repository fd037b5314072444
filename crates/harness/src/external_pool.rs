//! SV1 pools other than the built-in one, as the pool of an SV1 side: a program the
//! harness starts with a config it fills in from a template, on our node, behind the
//! side's tap. `kind = "nomp"` is the adapter shipped here (stratum-pool-sha256, NOMP's
//! pool core, from npm); any other pool is a `command` and a `config_template`.

use crate::process::RoleProcess;
use crate::scenario::ExternalSv1Pool;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// What the harness fills in, by placeholder (`{rpc_url}` in a template).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("rpc_url", "the node's RPC, http://127.0.0.1:PORT"),
    ("rpc_host", "the node's RPC host, 127.0.0.1"),
    ("rpc_port", "the node's RPC port"),
    ("rpc_user", "the RPC user"),
    ("rpc_password", "the RPC password"),
    (
        "zmq_hashblock",
        "the node's ZMQ publisher, tcp://127.0.0.1:PORT",
    ),
    (
        "zmq_rawblock",
        "the same publisher (bitcoind may split topics; ours does not)",
    ),
    (
        "listen_host",
        "where the pool listens for miners, 127.0.0.1",
    ),
    (
        "listen_port",
        "the port it listens on (the side's tap connects to it)",
    ),
    ("payout_address", "a regtest address for the coinbase"),
    (
        "difficulty",
        "the share difficulty every side's miners start at",
    ),
    (
        "job_refresh_s",
        "pool.job_refresh in seconds: the same-tip refresh of every side",
    ),
    ("coinbase_tag", "a coinbase tag naming the side"),
    ("side", "the side's name"),
    ("run_dir", "the run directory"),
    ("config", "the filled-in config file"),
    ("adapter_dir", "where an adapter's files are installed"),
];

/// The adapters shipped with stratum-bench.
struct Adapter {
    name: &'static str,
    command: &'static str,
    template: &'static str,
    /// Files written into the install directory.
    files: &'static [(&'static str, &'static str)],
    /// Run there once, when `installed` is missing.
    install: &'static [&'static str],
    installed: &'static str,
    /// How the pool learns of blocks and refreshes jobs, for the report.
    policy: &'static str,
}

const ADAPTERS: &[Adapter] = &[Adapter {
    name: "nomp",
    command: "node {adapter_dir}/pool.js {config}",
    template: include_str!("../../../pools/nomp/config.json"),
    files: &[
        ("package.json", include_str!("../../../pools/nomp/package.json")),
        (
            "package-lock.json",
            include_str!("../../../pools/nomp/package-lock.json"),
        ),
        ("pool.js", include_str!("../../../pools/nomp/pool.js")),
    ],
    install: &["npm", "ci", "--no-audit", "--no-fund"],
    installed: "node_modules/stratum-pool-sha256",
    policy: "stratum-pool-sha256 2.1.3 (NOMP's pool core): polls getblocktemplate every 500 ms (no ZMQ), rebroadcasts a job after pool.job_refresh, fixed difficulty",
}];

/// Where adapters are installed, kept between runs: `$STRATUM_BENCH_CACHE`, or
/// `~/.cache/stratum-bench`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("STRATUM_BENCH_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/stratum-bench")))
        .unwrap_or_else(|| std::env::temp_dir().join("stratum-bench"))
}

/// The kinds a scenario may name.
pub fn kinds() -> Vec<&'static str> {
    ADAPTERS.iter().map(|a| a.name).collect()
}

/// The `{name}` placeholders in `text`, in order.
fn placeholders_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if !after[..close].is_empty()
                    && after[..close]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

/// Fails on a placeholder the harness does not fill, naming it and where it is.
pub fn check_placeholders(text: &str, what: &str) -> Result<()> {
    for name in placeholders_in(text) {
        if !PLACEHOLDERS.iter().any(|(known, _)| *known == name) {
            let known: Vec<String> = PLACEHOLDERS
                .iter()
                .map(|(k, _)| format!("{{{k}}}"))
                .collect();
            bail!(
                "{what}: unknown placeholder {{{name}}} (the harness fills {})",
                known.join(", ")
            );
        }
    }
    Ok(())
}

/// `text` with every known placeholder replaced by its value.
fn fill(text: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = text.to_string();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// An external pool as a scenario gives it, resolved: its command, its config template's
/// text, and what the report says of it.
pub struct Resolved {
    pub name: String,
    command: String,
    template: Option<String>,
    adapter: Option<&'static Adapter>,
    pub policy: Option<String>,
}

/// Reads a scenario's entry (its template file, relative to the scenario's directory) and
/// checks its placeholders; `field` names it in errors.
pub fn resolve(pool: &ExternalSv1Pool, base: &Path, field: &str) -> Result<Resolved> {
    match (&pool.kind, &pool.command) {
        (Some(kind), None) => {
            let adapter = ADAPTERS.iter().find(|a| a.name == kind).with_context(|| {
                format!(
                    "scenario field `{field}.kind`: unknown pool kind {kind:?} (this build has {:?}; any other pool is a `command` with a `config_template`)",
                    kinds()
                )
            })?;
            Ok(Resolved {
                name: pool.name.clone().unwrap_or_else(|| kind.clone()),
                command: adapter.command.into(),
                template: Some(adapter.template.into()),
                adapter: Some(adapter),
                policy: Some(adapter.policy.into()),
            })
        }
        (None, Some(command)) => {
            check_placeholders(command, &format!("scenario field `{field}.command`"))?;
            if command.split_whitespace().next().is_none() {
                bail!("scenario field `{field}.command`: is empty: name a program");
            }
            let template = match &pool.config_template {
                Some(path) => {
                    let path = base.join(path);
                    let text = std::fs::read_to_string(&path).with_context(|| {
                        format!(
                            "scenario field `{field}.config_template`: cannot read {}",
                            path.display()
                        )
                    })?;
                    check_placeholders(
                        &text,
                        &format!("scenario field `{field}.config_template` ({})", path.display()),
                    )?;
                    Some(text)
                }
                None => None,
            };
            Ok(Resolved {
                name: pool.name.clone().unwrap_or_else(|| {
                    command.split_whitespace().next().unwrap_or("pool").to_string()
                }),
                command: command.clone(),
                template,
                adapter: None,
                policy: pool.policy.clone(),
            })
        }
        _ => bail!(
            "scenario field `{field}`: give either `kind` (one of {:?}) or `command` (with a `config_template`), not both or neither",
            kinds()
        ),
    }
}

/// Where the node and the run are, for the placeholders.
pub struct Site<'a> {
    pub rpc: SocketAddr,
    pub rpc_user: &'a str,
    pub rpc_password: &'a str,
    pub zmq: Option<&'a str>,
    pub difficulty: f64,
    pub job_refresh_s: f64,
    pub payout_address: String,
    pub run_dir: &'a Path,
    /// Where adapters are installed (kept between runs).
    pub cache_dir: &'a Path,
}

impl Resolved {
    /// Installs an adapter if needed, fills in the config, starts the pool as role `name`
    /// listening on `listen`, and waits until it accepts connections.
    pub async fn start(
        &self,
        site: &Site<'_>,
        side: &str,
        name: &str,
        listen: SocketAddr,
    ) -> Result<RoleProcess> {
        let adapter_dir = match self.adapter {
            Some(adapter) => install(adapter, site.cache_dir).await?,
            None => PathBuf::new(),
        };
        let config = site.run_dir.join("roles").join(format!("{name}.conf"));
        let values: BTreeMap<&str, String> = BTreeMap::from([
            ("rpc_url", format!("http://{}", site.rpc)),
            ("rpc_host", site.rpc.ip().to_string()),
            ("rpc_port", site.rpc.port().to_string()),
            ("rpc_user", site.rpc_user.to_string()),
            ("rpc_password", site.rpc_password.to_string()),
            ("zmq_hashblock", site.zmq.unwrap_or_default().to_string()),
            ("zmq_rawblock", site.zmq.unwrap_or_default().to_string()),
            ("listen_host", listen.ip().to_string()),
            ("listen_port", listen.port().to_string()),
            ("payout_address", site.payout_address.clone()),
            ("difficulty", site.difficulty.to_string()),
            ("job_refresh_s", format!("{}", site.job_refresh_s.round())),
            ("coinbase_tag", format!("/stratum-bench {side}/")),
            ("side", side.to_string()),
            ("run_dir", site.run_dir.display().to_string()),
            ("config", config.display().to_string()),
            ("adapter_dir", adapter_dir.display().to_string()),
        ]);
        std::fs::create_dir_all(config.parent().expect("roles/"))?;
        if let Some(template) = &self.template {
            std::fs::write(&config, fill(template, &values))
                .with_context(|| format!("cannot write {}", config.display()))?;
        }
        let argv: Vec<String> = fill(&self.command, &values)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let cwd = self.adapter.map(|_| adapter_dir.as_path());
        RoleProcess::spawn_command(&argv, cwd, site.run_dir, name, listen).await
    }
}

/// The adapter's files in `<cache>/pools/<name>`, and its install step run there once.
async fn install(adapter: &Adapter, cache: &Path) -> Result<PathBuf> {
    let dir = cache.join("pools").join(adapter.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (file, text) in adapter.files {
        std::fs::write(dir.join(file), text)
            .with_context(|| format!("cannot write {}", dir.join(file).display()))?;
    }
    if !dir.join(adapter.installed).exists() {
        let (program, args) = adapter.install.split_first().expect("an install command");
        tracing::info!(pool = adapter.name, dir = %dir.display(), "installing the pool adapter");
        let out = tokio::process::Command::new(program)
            .args(args)
            .current_dir(&dir)
            .output()
            .await
            .with_context(|| {
                format!(
                    "cannot run `{}` to install the {} pool (is it installed?)",
                    adapter.install.join(" "),
                    adapter.name
                )
            })?;
        if !out.status.success() {
            bail!(
                "`{}` in {} failed installing the {} pool: {}",
                adapter.install.join(" "),
                dir.display(),
                adapter.name,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_checked_and_filled() {
        let text = r#"{"port": {listen_port}, "url": "{rpc_url}", "literal": {}, "x": "{ not}"}"#;
        assert_eq!(placeholders_in(text), vec!["listen_port", "rpc_url"]);
        check_placeholders(text, "t").unwrap();
        let err = check_placeholders("a {nope} b", "pools.x").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("pools.x: unknown placeholder {nope}"),
            "{err}"
        );
        let values = BTreeMap::from([
            ("listen_port", "3333".to_string()),
            ("rpc_url", "http://h".to_string()),
        ]);
        assert_eq!(
            fill(text, &values),
            r#"{"port": 3333, "url": "http://h", "literal": {}, "x": "{ not}"}"#
        );
        // The shipped adapters use only what the harness fills.
        for a in ADAPTERS {
            check_placeholders(a.template, a.name).unwrap();
            check_placeholders(a.command, a.name).unwrap();
        }
    }
}
