//! SV1 pools other than the built-in one, as the pool of an SV1 side: a program the
//! harness starts with a config it fills in from a template, on our node, behind the
//! side's tap. `kind = "nomp"` is the adapter shipped here (stratum-pool-sha256, NOMP's
//! pool core, from npm); any other pool is a `command` and a `config_template`.

use crate::process::RoleProcess;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use model::sv1_pool::{ExternalSv1Pool, PoolFile};

/// What the harness fills in, by placeholder (`{rpc_url}` in a template).
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("rpc_url", "the node's RPC, http://127.0.0.1:PORT"),
    ("rpc_host", "the node's RPC host, 127.0.0.1"),
    ("rpc_port", "the node's RPC port"),
    ("rpc_user", "the RPC user"),
    ("rpc_password", "the RPC password"),
    (
        "rpc_cookie",
        "a cookie file holding user:password, as bitcoind writes one",
    ),
    (
        "zmq_hashblock",
        "the node's publisher of hashblock alone, tcp://127.0.0.1:PORT",
    ),
    (
        "zmq_rawblock",
        "its publisher of rawblock (and hashblock), on another port",
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
    ("workdir", "the directory the pool runs in"),
    ("program", "the pool's `program` field"),
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
    /// For a pool the user builds from its source: what `program` must point at.
    program: Option<&'static str>,
    /// Where it runs (placeholders filled; default: its install directory), and where
    /// its config goes there (default: `roles/<pool>.conf` in the run directory).
    workdir: Option<&'static str>,
    config_path: Option<&'static str>,
    /// What miners authorize as, when the pool checks (a payout address).
    worker_prefix: Option<&'static str>,
    /// It honours `mining.suggest_difficulty` and starts miners at its own otherwise.
    suggest_difficulty: bool,
    /// It listens on every interface, so it runs in a network namespace of its own.
    listens_everywhere: bool,
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
    program: None,
    workdir: None,
    config_path: None,
    worker_prefix: None,
    suggest_difficulty: false,
    listens_everywhere: false,
}, Adapter {
    name: "public-pool",
    command: "node {program}/dist/main",
    template: include_str!("../../../pools/public-pool/env"),
    files: &[],
    install: &[],
    installed: "",
    policy: "public-pool (benjamin-wilson/public-pool): rawblock over ZMQ, a new job on every block and every 60 s, difficulty as the miner suggests then vardiff every 60 s towards a share per 10 s, in a network namespace of its own (it binds every interface)",
    program: Some("a public-pool checkout built with `npm ci && npm run build` (the directory holding dist/main.js)"),
    workdir: Some("{run_dir}/{side}-public-pool"),
    config_path: Some(".env"),
    worker_prefix: Some("{payout_address}"),
    suggest_difficulty: true,
    listens_everywhere: true,
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
    program: Option<String>,
    template: Option<String>,
    workdir: Option<String>,
    config_path: Option<PathBuf>,
    /// More config files: where each goes in the workdir, and its template's text.
    files: Vec<(PathBuf, String)>,
    worker_prefix: Option<String>,
    adapter: Option<&'static Adapter>,
    /// How it learns of blocks, refreshes jobs and sets difficulty: what the scenario or
    /// adapter says, then what its config is given (read from the template).
    pub policy: Option<String>,
    /// The side's miners ask it for the side's difficulty.
    pub suggest_difficulty: bool,
    /// It runs in a network namespace of its own.
    pub isolate_network: bool,
}

/// Reads a scenario's entry (its template file, relative to the scenario's directory) and
/// checks its placeholders; `field` names it in errors.
pub fn resolve(pool: &ExternalSv1Pool, base: &Path, field: &str) -> Result<Resolved> {
    match (&pool.kind, &pool.command) {
        (Some(kind), None) => resolve_adapter(pool, kind, field),
        (None, Some(command)) => resolve_command(pool, command, base, field),
        _ => bail!(
            "scenario field `{field}`: give either `kind` (one of {:?}) or `command` (with a `config_template`), not both or neither",
            kinds()
        ),
    }
}

/// A pool by `kind`: the adapter shipped here, and what the entry may add to it.
fn resolve_adapter(pool: &ExternalSv1Pool, kind: &str, field: &str) -> Result<Resolved> {
    let adapter = ADAPTERS.iter().find(|a| a.name == kind).with_context(|| {
        format!(
            "scenario field `{field}.kind`: unknown pool kind {kind:?} (this build has {:?}; any other pool is a `command` with a `config_template`)",
            kinds()
        )
    })?;
    let program = match (adapter.program, &pool.program) {
        (Some(_), Some(program)) => {
            check_placeholders(program, &format!("scenario field `{field}.program`"))?;
            Some(program.clone())
        }
        (Some(what), None) => bail!(
            "scenario field `{field}.program`: the {kind} pool is built by you; give {what} (`--set {field}.program=/path`)"
        ),
        (None, _) => None,
    };
    if adapter.listens_everywhere && pool.isolate_network == Some(false) {
        bail!("scenario field `{field}.isolate_network`: the {kind} pool listens on every interface; it runs only in a network namespace of its own");
    }
    let given = [
        (
            "program",
            adapter.program.is_none() && pool.program.is_some(),
        ),
        ("config_template", pool.config_template.is_some()),
        ("workdir", pool.workdir.is_some()),
        ("config_path", pool.config_path.is_some()),
        ("files", !pool.files.is_empty()),
    ];
    if let Some((name, _)) = given.iter().find(|(_, set)| *set) {
        bail!("scenario field `{field}.{name}`: an adapter (`kind`) brings its own; give it with a `command` instead");
    }
    Ok(Resolved {
        name: pool.name.clone().unwrap_or_else(|| kind.to_string()),
        command: adapter.command.into(),
        program,
        template: Some(adapter.template.into()),
        workdir: adapter.workdir.map(String::from),
        config_path: adapter.config_path.map(PathBuf::from),
        files: Vec::new(),
        worker_prefix: (pool.worker_prefix.clone()).or(adapter.worker_prefix.map(String::from)),
        adapter: Some(adapter),
        policy: Some(adapter.policy.into()),
        suggest_difficulty: pool
            .suggest_difficulty
            .unwrap_or(adapter.suggest_difficulty),
        isolate_network: pool.isolate_network.unwrap_or(adapter.listens_everywhere),
    })
}

/// A pool as a `command` of the user's, with its config templates read and checked.
fn resolve_command(
    pool: &ExternalSv1Pool,
    command: &str,
    base: &Path,
    field: &str,
) -> Result<Resolved> {
    check_placeholders(command, &format!("scenario field `{field}.command`"))?;
    match shlex::split(command) {
        None => bail!("scenario field `{field}.command`: a quote is not closed"),
        Some(words) if words.is_empty() => {
            bail!("scenario field `{field}.command`: is empty: name a program")
        }
        Some(_) => {}
    }
    if let Some(workdir) = &pool.workdir {
        check_placeholders(workdir, &format!("scenario field `{field}.workdir`"))?;
    }
    match &pool.program {
        Some(program) => check_placeholders(program, &format!("scenario field `{field}.program`"))?,
        None if placeholders_in(command).contains(&"program") => {
            bail!("scenario field `{field}.command`: uses {{program}}: give `{field}.program`")
        }
        None => {}
    }
    if let Some(prefix) = &pool.worker_prefix {
        check_placeholders(prefix, &format!("scenario field `{field}.worker_prefix`"))?;
    }
    if let Some(path) = &pool.config_path {
        inside_workdir(pool, path, &format!("{field}.config_path"))?;
    }
    let template = match &pool.config_template {
        Some(path) => Some(read_template(
            base,
            path,
            &format!("{field}.config_template"),
        )?),
        None => None,
    };
    let mut files = Vec::new();
    for (i, file) in pool.files.iter().enumerate() {
        let field = format!("{field}.files[{i}]");
        inside_workdir(pool, &file.path, &format!("{field}.path"))?;
        let text = read_template(base, &file.template, &format!("{field}.template"))?;
        files.push((file.path.clone(), text));
    }
    let all_config: String = template
        .iter()
        .chain(files.iter().map(|f| &f.1))
        .map(String::as_str)
        .collect();
    let policy = [
        pool.policy.clone(),
        (!all_config.is_empty()).then(|| config_policy(&all_config)),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    Ok(Resolved {
        name: pool.name.clone().unwrap_or_else(|| {
            let program = pool
                .program
                .as_deref()
                .or(command.split_whitespace().next());
            let program = program.unwrap_or("pool");
            program.rsplit('/').next().unwrap_or(program).to_string()
        }),
        command: command.to_string(),
        program: pool.program.clone(),
        template,
        workdir: pool.workdir.clone(),
        config_path: pool.config_path.clone(),
        files,
        worker_prefix: pool.worker_prefix.clone(),
        adapter: None,
        policy: (!policy.is_empty()).then_some(policy),
        suggest_difficulty: pool.suggest_difficulty.unwrap_or(false),
        isolate_network: pool.isolate_network.unwrap_or(false),
    })
}

/// A template's text, its placeholders checked; `field` names it in errors.
fn read_template(base: &Path, path: &Path, field: &str) -> Result<String> {
    let path = base.join(path);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("scenario field `{field}`: cannot read {}", path.display()))?;
    check_placeholders(
        &text,
        &format!("scenario field `{field}` ({})", path.display()),
    )?;
    Ok(text)
}

/// Fails unless `path` is relative to the pool's workdir and stays inside it.
fn inside_workdir(pool: &ExternalSv1Pool, path: &Path, field: &str) -> Result<()> {
    if !path.is_relative()
        || path
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        bail!(
            "scenario field `{field}`: {} must be relative to `workdir` and stay inside it",
            path.display()
        );
    }
    if pool.workdir.is_none() {
        bail!("scenario field `{field}`: give a `workdir` it is relative to");
    }
    Ok(())
}

/// What a pool's config template shows of its policy: whether it is told of blocks over
/// ZMQ, given the run's same-tip refresh, and given the side's difficulty. A pool not given
/// one of them follows its own (polling, its own refresh, vardiff), which the report says.
fn config_policy(template: &str) -> String {
    let has = |name: &str| placeholders_in(template).contains(&name);
    let blocks = if has("zmq_hashblock") || has("zmq_rawblock") {
        "told of blocks over ZMQ"
    } else {
        "no ZMQ in its config (it polls, or needs blocknotify)"
    };
    let refresh = if has("job_refresh_s") {
        "same-tip refresh set to the run's"
    } else {
        "its own same-tip refresh"
    };
    let difficulty = if has("difficulty") {
        "difficulty set to the side's"
    } else {
        "its own difficulty (vardiff or its default)"
    };
    format!("its config: {blocks}, {refresh}, {difficulty}")
}

/// Where the node and the run are, for the placeholders.
pub struct Site<'a> {
    pub rpc: SocketAddr,
    pub rpc_user: &'a str,
    pub rpc_password: &'a str,
    /// The node's publisher of `hashblock` and `rawblock`.
    pub zmq: Option<&'a str>,
    /// Its publisher of `hashblock` alone (bitcoind with one address per topic).
    pub zmq_hashblock: Option<&'a str>,
    pub difficulty: f64,
    pub job_refresh_s: f64,
    pub payout_address: String,
    pub run_dir: &'a Path,
    /// How roles start (their CPUs).
    pub launcher: &'a crate::process::Launcher,
    /// Where adapters are installed (kept between runs).
    pub cache_dir: &'a Path,
}

/// A started pool, where it listens, and what the side's miners authorize as there
/// (`None`: whatever the run gives any side's miners).
pub struct Started {
    pub process: RoleProcess,
    pub listen: SocketAddr,
    pub worker_prefix: Option<String>,
}

impl Resolved {
    /// The pool's config and its other files, filled in: the config at `config`, the
    /// others at their paths in `workdir`.
    fn write_configs(
        &self,
        config: &Path,
        workdir: Option<&Path>,
        values: &BTreeMap<&str, String>,
    ) -> Result<()> {
        let extra = (self.files.iter())
            .filter_map(|(path, text)| workdir.map(|dir| (dir.join(path), text)));
        for (path, text) in (self.template.as_ref())
            .map(|t| (config.to_path_buf(), t))
            .into_iter()
            .chain(extra)
        {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            // A pool's config holds the RPC password.
            probe::private::write(&path, fill(text, values))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// Installs an adapter if needed, fills in the config, starts the pool as role `name`
    /// listening on `listen`'s port (at `listen`, or at its end of the veth pair when it
    /// runs in a namespace of its own), and waits until it accepts connections.
    pub async fn start(
        &self,
        site: &Site<'_>,
        side: &str,
        name: &str,
        listen: SocketAddr,
    ) -> Result<Started> {
        let adapter_dir = match self.adapter {
            Some(adapter) if !adapter.install.is_empty() => {
                install(adapter, site.cache_dir).await?
            }
            _ => PathBuf::new(),
        };
        // In a namespace, the pool reaches the node through forwarders at the run's end.
        let mut netns = match self.isolate_network {
            true => Some(crate::netns::Netns::create().with_context(|| {
                format!("side {side}: the pool's network namespace (`isolate_network`)")
            })?),
            false => None,
        };
        let (mut rpc, mut zmq, mut zmq_hashblock) = (
            site.rpc,
            site.zmq.map(String::from),
            site.zmq_hashblock.map(String::from),
        );
        let mut listen = listen;
        if let Some(ns) = &mut netns {
            rpc = ns.forward(site.rpc).await?;
            for endpoint in [&mut zmq, &mut zmq_hashblock].into_iter().flatten() {
                let to: SocketAddr = (endpoint.strip_prefix("tcp://"))
                    .and_then(|a| a.parse().ok())
                    .with_context(|| format!("the node's ZMQ endpoint {endpoint}"))?;
                *endpoint = format!("tcp://{}", ns.forward(to).await?);
            }
            listen = SocketAddr::from((ns.pool_ip, listen.port()));
        }
        let roles_dir = site.run_dir.join("roles");
        probe::private::create_dir(&roles_dir)
            .with_context(|| format!("cannot create {}", roles_dir.display()))?;
        // Pools that read credentials from a cookie file (goPool) get one as bitcoind's.
        let cookie = roles_dir.join(format!("{name}.cookie"));
        probe::private::write(&cookie, format!("{}:{}", site.rpc_user, site.rpc_password))
            .with_context(|| format!("cannot write {}", cookie.display()))?;
        let mut values: BTreeMap<&str, String> = BTreeMap::from([
            ("rpc_url", format!("http://{rpc}")),
            ("rpc_host", rpc.ip().to_string()),
            ("rpc_port", rpc.port().to_string()),
            ("rpc_user", site.rpc_user.to_string()),
            ("rpc_password", site.rpc_password.to_string()),
            ("rpc_cookie", cookie.display().to_string()),
            (
                "zmq_hashblock",
                zmq_hashblock.or(zmq.clone()).unwrap_or_default(),
            ),
            ("zmq_rawblock", zmq.unwrap_or_default()),
            ("listen_host", listen.ip().to_string()),
            ("listen_port", listen.port().to_string()),
            ("payout_address", site.payout_address.clone()),
            ("difficulty", site.difficulty.to_string()),
            ("job_refresh_s", format!("{}", site.job_refresh_s.round())),
            ("coinbase_tag", format!("/stratum-bench {side}/")),
            ("side", side.to_string()),
            ("run_dir", site.run_dir.display().to_string()),
            ("adapter_dir", adapter_dir.display().to_string()),
        ]);
        let workdir = match (&self.workdir, self.adapter) {
            (Some(dir), _) => Some(PathBuf::from(fill(dir, &values))),
            (None, Some(_)) => Some(adapter_dir.clone()),
            (None, None) => None,
        };
        if let Some(dir) = &workdir {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the pool's workdir {}", dir.display()))?;
            values.insert("workdir", dir.display().to_string());
        }
        if let Some(program) = &self.program {
            values.insert("program", fill(program, &values));
        }
        let config = match (&workdir, &self.config_path) {
            (Some(dir), Some(path)) => dir.join(path),
            _ => roles_dir.join(format!("{name}.conf")),
        };
        values.insert("config", config.display().to_string());
        self.write_configs(&config, workdir.as_deref(), &values)?;
        let argv = shlex::split(&fill(&self.command, &values))
            .with_context(|| format!("role {name}: a quote in its command is not closed"))?;
        let argv: Vec<String> = (netns.iter().flat_map(|ns| ns.exec_prefix()))
            .chain(argv)
            .collect();
        let mut process = RoleProcess::spawn_command(
            site.launcher,
            &argv,
            workdir.as_deref(),
            site.run_dir,
            name,
            listen,
        )
        .await
        .with_context(|| match &netns {
            Some(ns) => format!(
                "side {side}: its pool in network namespace {} (at {})",
                ns.name, ns.pool_ip
            ),
            None => format!("side {side}: its pool"),
        })?;
        process.isolation = netns;
        Ok(Started {
            process,
            listen,
            worker_prefix: self.worker_prefix.as_ref().map(|p| fill(p, &values)),
        })
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
        // A quoted word stays one word; nothing is expanded.
        assert_eq!(
            shlex::split(r#"goPool -rpc-cookie "{rpc_cookie}" -bind '127.0.0.1' $HOME"#),
            Some(
                [
                    "goPool",
                    "-rpc-cookie",
                    "{rpc_cookie}",
                    "-bind",
                    "127.0.0.1",
                    "$HOME"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        // The shipped adapters use only what the harness fills.
        for a in ADAPTERS {
            check_placeholders(a.template, a.name).unwrap();
            check_placeholders(a.command, a.name).unwrap();
        }
    }

    #[test]
    fn a_pools_policy_is_read_from_what_its_config_is_given() {
        assert_eq!(
            config_policy("zmq = \"{zmq_hashblock}\"\ndiff = {difficulty}"),
            "its config: told of blocks over ZMQ, its own same-tip refresh, difficulty set to the side's"
        );
        assert_eq!(
            config_policy("rpc = \"{rpc_url}\"\nrebroadcast = {job_refresh_s}"),
            "its config: no ZMQ in its config (it polls, or needs blocknotify), same-tip refresh set to the run's, its own difficulty (vardiff or its default)"
        );
    }

    #[test]
    fn a_command_pools_fields_are_checked_naming_them() {
        let pool =
            |command: &str, workdir: Option<&str>, config_path: Option<&str>| ExternalSv1Pool {
                command: Some(command.into()),
                workdir: workdir.map(String::from),
                config_path: config_path.map(PathBuf::from),
                ..Default::default()
            };
        let err = |p: ExternalSv1Pool| {
            resolve(&p, Path::new("."), "sv1_pools.x")
                .err()
                .expect("an error")
                .to_string()
        };
        assert_eq!(
            err(pool("mypool 'unclosed", None, None)),
            "scenario field `sv1_pools.x.command`: a quote is not closed"
        );
        assert!(err(pool("mypool", Some("/w"), Some("../c.toml")))
            .starts_with("scenario field `sv1_pools.x.config_path`: ../c.toml must be relative"));
        assert!(err(pool("mypool", None, Some("c.toml")))
            .starts_with("scenario field `sv1_pools.x.config_path`: give a `workdir`"));
        assert!(err(pool("mypool", Some("{run_dir}/{nope}"), None))
            .contains("sv1_pools.x.workdir`: unknown placeholder {nope}"));
        let ok = resolve(
            &pool(
                "mypool -c {config}",
                Some("{run_dir}/p"),
                Some("data/c.toml"),
            ),
            Path::new("."),
            "sv1_pools.x",
        )
        .unwrap();
        assert_eq!(ok.name, "mypool");
        assert_eq!(ok.policy, None, "no template, nothing to read");
        assert_eq!(
            err(pool("{program} -c {config}", None, None)),
            "scenario field `sv1_pools.x.command`: uses {program}: give `sv1_pools.x.program`"
        );
        // Named after its program when the command starts with it.
        let built = ExternalSv1Pool {
            program: Some("/src/ckpool/src/ckpool".into()),
            ..pool("{program} -c {config}", None, None)
        };
        let ok = resolve(&built, Path::new("."), "sv1_pools.x").unwrap();
        assert_eq!(ok.name, "ckpool");
        // An adapter brings its own command, config and directory.
        let adapter = ExternalSv1Pool {
            kind: Some("nomp".into()),
            workdir: Some("/w".into()),
            ..Default::default()
        };
        assert_eq!(
            err(adapter),
            "scenario field `sv1_pools.x.workdir`: an adapter (`kind`) brings its own; give it with a `command` instead"
        );
    }
}
