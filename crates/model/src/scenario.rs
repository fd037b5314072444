//! Scenario files: what a run does, in TOML, with `--set key=value` overrides. A bad
//! file or override is reported with the field's path and the problem.

use crate::attack::AttackKind;
use crate::duration as dur;
use crate::lag::BlockLag;
use crate::network::Arrivals;
pub use crate::sv1_pool::{ExternalSv1Pool, PoolFile};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// One side of a run: its name as the scenario gives it (`sv2-a`, or `sv1-b` for a second
/// SV1 side), and the configuration it runs, read from the name once, when the scenario
/// is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Side {
    name: String,
    pub config: Config,
}

impl Side {
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl TryFrom<String> for Side {
    type Error = String;

    fn try_from(name: String) -> Result<Side, String> {
        match Config::of_side(&name) {
            Some(config) => Ok(Side { name, config }),
            None => Err(format!(
                "unknown side {name:?} (this build runs {:?}, each alone or with a label after a dash, as sv1-b)",
                Config::names()
            )),
        }
    }
}

impl From<Side> for String {
    fn from(side: Side) -> String {
        side.name
    }
}

/// A side is used where its name is: in role names, keys and messages.
impl std::ops::Deref for Side {
    type Target = str;

    fn deref(&self) -> &str {
        &self.name
    }
}

impl std::borrow::Borrow<str> for Side {
    fn borrow(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl PartialEq<str> for Side {
    fn eq(&self, other: &str) -> bool {
        self.name == other
    }
}

impl PartialEq<&str> for Side {
    fn eq(&self, other: &&str) -> bool {
        self.name == *other
    }
}

impl PartialEq<String> for Side {
    fn eq(&self, other: &String) -> bool {
        &self.name == other
    }
}

/// The configurations this build can run: the SV1 baseline; configuration A (SV1 miners
/// -> SRI translator -> SRI JDC with the farm's node -> WAN -> SRI pool + JDS);
/// configuration B (SV2 miners -> JDC -> WAN -> pool + JDS); configuration C (SV1 miners
/// -> SRI translator -> WAN -> SRI pool, the node as Template Provider); configuration D
/// (SV2 miners -> WAN -> SRI pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Config {
    Sv1,
    Sv2A,
    Sv2B,
    Sv2C,
    Sv2D,
}

impl TryFrom<String> for Config {
    type Error = String;
    fn try_from(name: String) -> Result<Config, String> {
        (Config::ALL.into_iter().find(|c| c.name() == name)).ok_or_else(|| {
            format!(
                "{name:?} is not a configuration (one of {})",
                Config::names().join(", ")
            )
        })
    }
}

impl From<Config> for &'static str {
    fn from(config: Config) -> &'static str {
        config.name()
    }
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Config {
    pub const ALL: [Config; 5] = [
        Config::Sv1,
        Config::Sv2A,
        Config::Sv2B,
        Config::Sv2C,
        Config::Sv2D,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Config::Sv1 => "sv1",
            Config::Sv2A => "sv2-a",
            Config::Sv2B => "sv2-b",
            Config::Sv2C => "sv2-c",
            Config::Sv2D => "sv2-d",
        }
    }

    /// What a side of this configuration runs, from the farm to the node.
    pub fn path(self) -> &'static str {
        match self {
            Config::Sv1 => "SV1 miners -> link -> tap -> SV1 pool -> node (RPC, ZMQ)",
            Config::Sv2A => "SV1 miners -> SRI translator -> SRI JDC (farm node, its own templates) -> link -> tap -> SRI pool + JDS -> node (Mining IPC)",
            Config::Sv2B => "SV2 miners -> SRI JDC (farm node, its own templates) -> link -> tap -> SRI pool + JDS -> node (Mining IPC)",
            Config::Sv2C => "SV1 miners -> SRI translator -> link -> tap -> SRI pool -> Template Provider (TDP)",
            Config::Sv2D => "SV2 miners -> link -> tap -> SRI pool -> Template Provider (TDP)",
        }
    }

    /// The configuration a side runs: a side is named by its configuration, or by its
    /// configuration and a label after a dash (`sv1-b`, `sv2-d-2`): a second side of the
    /// same configuration, as an A/A check runs.
    pub fn of_side(side: &str) -> Option<Config> {
        // Longest name first, so `sv2-a` is not read as a label of something shorter.
        let mut all = Config::ALL;
        all.sort_by_key(|c| std::cmp::Reverse(c.name().len()));
        all.into_iter().find(|c| {
            side == c.name()
                || side
                    .strip_prefix(c.name())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|label| {
                        !label.is_empty()
                            && label
                                .chars()
                                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
                    })
        })
    }

    /// The names of every configuration, for messages.
    pub fn names() -> Vec<&'static str> {
        Config::ALL.iter().map(|c| c.name()).collect()
    }

    /// The farm declares its own jobs (a JDC with its own node).
    pub fn declares_jobs(self) -> bool {
        matches!(self, Config::Sv2A | Config::Sv2B)
    }

    /// Each miner's own connection crosses the WAN link to the pool (no proxy at the
    /// farm gathers them): the link and the pool's tap hold one per miner.
    pub fn miners_cross_the_link(self) -> bool {
        matches!(self, Config::Sv1 | Config::Sv2D)
    }

    /// SV1 miners reach SV2 through SRI's translator.
    pub fn translates(self) -> bool {
        matches!(self, Config::Sv2A | Config::Sv2C)
    }

    /// The pool builds the jobs from the node's templates (Template Provider or IPC).
    pub fn pool_templates(self) -> bool {
        matches!(self, Config::Sv2C | Config::Sv2D)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// Measured time, after the warm-up.
    #[serde(with = "dur")]
    pub duration: Duration,
    /// Time before measuring starts (connections, first jobs, vardiff settling).
    #[serde(with = "dur", default = "default_warmup")]
    pub warmup: Duration,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The report adds a table of the published tool's figures beside this run's: for a
    /// scenario in the published results' conditions (`scenarios/seed-context.toml`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compare_published: bool,
    /// Configurations run side by side on the same network and link.
    pub sides: Vec<Side>,
    /// The side every other is set against in the verdict and the worth (default `sv1`):
    /// `baseline = "sv2-c"` with sides `["sv2-c", "sv2-c-b"]` is an A/A check of C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    pub network: Network,
    pub link: Link,
    pub miners: Miners,
    /// Outages of every side's pool (or JDS) alike, at given times in the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// What every side falls back on when its pool goes away.
    #[serde(default)]
    pub backup: Backup,
    #[serde(default)]
    pub pool: Pool,
    #[serde(default)]
    pub sv2: Sv2,
    /// The farm's own node, on the sides that declare jobs.
    #[serde(default)]
    pub farm_node: FarmNode,
    /// Other builds of the SRI roles, to compare releases (default: the pinned ones
    /// linked into stratum-bench).
    #[serde(default)]
    pub roles: RoleCommands,
    /// SV1 pools other than the built-in one, by the label of the SV1 side that runs each:
    /// side `sv1-nomp` runs `[sv1_pools.nomp]`. An SV1 side without one runs ours.
    #[serde(default)]
    pub sv1_pools: std::collections::BTreeMap<String, ExternalSv1Pool>,
    #[serde(default)]
    pub placement: Placement,
    /// A real, synced node the SV1 sides run against instead of the simulated network.
    #[serde(default)]
    pub node: Option<RealNode>,
    /// What `stratum-bench sweep` varies when no `--vary` is given (`run` ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSection>,
}

/// A real node in place of the simulated network: one of yours the run reaches, or a
/// Bitcoin Core the run starts.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "NodeFields", into = "NodeFields")]
pub enum RealNode {
    Reached(ReachedNode),
    Started(StartedCore),
}

/// A real bitcoind (or any node with its RPC), reached as its pools reach it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReachedNode {
    /// Its JSON-RPC, `http://HOST:PORT`.
    pub url: String,
    pub rpc_user: String,
    pub rpc_password: String,
    /// Its ZMQ publisher of `hashblock` (`-zmqpubhashblock`), `tcp://HOST:PORT`. Without
    /// one, SV1 pools long-poll getblocktemplate and the tap asks `waitfornewblock`.
    pub zmq: Option<String>,
    /// The chain it must be on (`main`, `test`, `testnet4`, `signet`, `regtest`, as
    /// getblockchaininfo names it), checked before the run.
    pub chain: Option<String>,
    /// Its Mining IPC socket (Bitcoin Core v31 started with `-ipcbind=unix`:
    /// `<datadir>/<chain>/node.sock`), for SV2 sides C and D; checked before the run.
    pub ipc: Option<std::path::PathBuf>,
}

/// A Bitcoin Core (`bitcoin-node`, v31 or later, built with IPC) the run starts on a
/// custom signet of its own and drives as the network (`crate::core_network`).
#[derive(Debug, Clone, PartialEq)]
pub struct StartedCore {
    pub program: std::path::PathBuf,
}

/// `[node]` as written: the fields of either kind, told apart by `program`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    program: Option<std::path::PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rpc_user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rpc_password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    zmq: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ipc: Option<std::path::PathBuf>,
}

impl TryFrom<NodeFields> for RealNode {
    type Error = String;
    fn try_from(f: NodeFields) -> Result<RealNode, String> {
        if let Some(program) = f.program {
            let reached = [
                ("url", f.url.is_some()),
                ("rpc_user", f.rpc_user.is_some()),
                ("rpc_password", f.rpc_password.is_some()),
                ("zmq", f.zmq.is_some()),
                ("chain", f.chain.is_some()),
                ("ipc", f.ipc.is_some()),
            ];
            if let Some((field, _)) = reached.iter().find(|(_, set)| *set) {
                return Err(format!("`{field}` is for a node of yours the run reaches; with `program` the run starts the node itself and knows its own"));
            }
            return Ok(RealNode::Started(StartedCore { program }));
        }
        let needed = |field: &str, value: Option<String>| {
            value.ok_or_else(|| format!("`{field}` is missing: give the node's `url`, `rpc_user` and `rpc_password` (a node of yours), or `program` (a bitcoin-node the run starts)"))
        };
        Ok(RealNode::Reached(ReachedNode {
            url: needed("url", f.url)?,
            rpc_user: needed("rpc_user", f.rpc_user)?,
            rpc_password: needed("rpc_password", f.rpc_password)?,
            zmq: f.zmq,
            chain: f.chain,
            ipc: f.ipc,
        }))
    }
}

impl From<RealNode> for NodeFields {
    fn from(node: RealNode) -> NodeFields {
        match node {
            RealNode::Started(core) => NodeFields {
                program: Some(core.program),
                ..NodeFields::default()
            },
            RealNode::Reached(n) => NodeFields {
                url: Some(n.url),
                rpc_user: Some(n.rpc_user),
                rpc_password: Some(n.rpc_password),
                zmq: n.zmq,
                chain: n.chain,
                ipc: n.ipc,
                ..NodeFields::default()
            },
        }
    }
}

/// The chains getblockchaininfo names.
pub const CHAINS: [&str; 5] = ["main", "test", "testnet4", "signet", "regtest"];

/// How roles run: where their events go, and on which CPUs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// Where each role runs.
    #[serde(default)]
    pub engine: Engine,
    /// With the swarm engine: the swarm placement constraint of the pool site's roles
    /// (and the links), and of the farm site's.
    #[serde(default = "default_pool_nodes")]
    pub pool_nodes: String,
    #[serde(default = "default_farm_nodes")]
    pub farm_nodes: String,
    #[serde(default)]
    pub events: EventsSink,
    /// Keep the miner fleets on their own CPUs, apart from the roles under test (the
    /// second half of the harness's CPUs against the first; needs at least 2).
    #[serde(default)]
    pub isolate: bool,
}

fn default_pool_nodes() -> String {
    "node.labels.site==pool".into()
}

fn default_farm_nodes() -> String {
    "node.labels.site==farm".into()
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            engine: Engine::default(),
            pool_nodes: default_pool_nodes(),
            farm_nodes: default_farm_nodes(),
            events: EventsSink::default(),
            isolate: false,
        }
    }
}

/// Where roles run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// Each role an OS process on this host.
    #[default]
    Process,
    /// Each role a container of the stratum-bench image on this host's Docker engine: the
    /// pool site and the farm site on internal networks of their own, joined only by each
    /// side's link; events through the collector.
    Docker,
    /// The same, each role a Docker Swarm service on the nodes `placement.pool_nodes` or
    /// `placement.farm_nodes` select, the networks overlays across the swarm's hosts.
    Swarm,
}

/// Where roles' events go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventsSink {
    /// Each role appends to its file in the run directory: roles on the harness's host.
    #[default]
    File,
    /// Each role streams its events to the harness over TCP, keeping a local journal
    /// until the harness holds them, and the harness puts every stamp on its own clock:
    /// what roles on other hosts need (`journals/` holds the roles' copies).
    Collector,
}

/// What a scenario file's `[sweep]` table says (`scenarios/sweep-rtt.toml`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    /// `[[sweep.vary]] key = "link.rtt_ms"  values = [10, 50, 100]`.
    #[serde(default)]
    pub vary: Vec<VarySection>,
    /// Pair the lists value by value instead of crossing them.
    #[serde(default)]
    pub zip: bool,
    /// Runs per point, each with its own seed.
    #[serde(default)]
    pub repeat: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VarySection {
    pub key: String,
    pub values: Vec<toml::Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleCommands {
    pub pool: Option<RoleCommand>,
    pub translator: Option<RoleCommand>,
    pub jdc: Option<RoleCommand>,
    /// A Template Provider of the user's for sides C and D: `sv2-tp` (stratum-mining/sv2-tp),
    /// run against the node's Mining IPC in place of the node's own TDP face.
    pub template_provider: Option<RoleCommand>,
}

impl RoleCommands {
    /// Each command with the scenario field that names it.
    fn named(&self) -> [(&'static str, &Option<RoleCommand>); 4] {
        [
            ("roles.pool.command", &self.pool),
            ("roles.translator.command", &self.translator),
            ("roles.jdc.command", &self.jdc),
            ("roles.template_provider.command", &self.template_provider),
        ]
    }
}

/// The miner-side node of configurations A and B: it follows the pool-side node (the
/// network) and builds the farm's templates from its own view of the mempool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FarmNode {
    /// Share of the network's transactions that reach the farm's mempool, in `[0, 1]`.
    #[serde(default = "default_overlap")]
    pub mempool_overlap: f64,
    /// How much later than the pool's node the farm's node hears of each block, and how
    /// long a block found at the farm takes to reach the network: SRI's JDC moves its
    /// miners to a new block only when this node hears of it, so in A and B this lag sets
    /// the new-block job, the stale work and the farm's block propagation. Fixed (ms), a
    /// lognormal `{ median_ms, p90_ms }`, or measured lags `{ file }` (one ms a line: a
    /// race's leads plus the pool's own time and one-way link, docs/farm-node.md); one
    /// draw per block, the same for every farm node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_lag: Option<BlockLag>,
    /// Where `block_lag` comes from (a measurement, a paper), said beside every verdict
    /// it sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_lag_source: Option<String>,
    /// How much later than the pool's node the farm's node gets each transaction.
    #[serde(default = "default_tx_relay")]
    pub tx_relay_ms: f64,
    /// Replaced by `block_lag` and `tx_relay_ms`: refused with a message saying so.
    #[serde(default, skip_serializing)]
    propagation_ms: Option<toml::Value>,
}

impl Default for FarmNode {
    fn default() -> Self {
        FarmNode {
            mempool_overlap: default_overlap(),
            block_lag: None,
            block_lag_source: None,
            tx_relay_ms: default_tx_relay(),
            propagation_ms: None,
        }
    }
}

impl FarmNode {
    /// The lag each block is drawn from: the scenario's, or the default.
    pub fn lag(&self) -> BlockLag {
        self.block_lag.clone().unwrap_or_default()
    }

    /// The lag in words with where it comes from: "20 ms (source)".
    pub fn lag_in_words(&self) -> String {
        let source = match (&self.block_lag, &self.block_lag_source) {
            (_, Some(source)) => source.clone(),
            (None, None) => default_lag_source(),
            (Some(_), None) => {
                "set by the scenario, no source given (farm_node.block_lag_source)".into()
            }
        };
        format!("{} ({source})", self.lag().describe())
    }
}

fn default_overlap() -> f64 {
    0.95
}

/// The lab's default: a farm node peered close to its pool's. Not a measurement; the
/// public network's median is far later (scenarios/farm-node-public.toml).
fn default_lag_source() -> String {
    "the default, an assumption: a farm node peered directly with its pool's; a node on \
     the public network hears of blocks 454 ms late at the median (Fechner et al., ACM SAC \
     2022)"
        .into()
}

/// Transactions cross the same peer hop as the default block lag.
fn default_tx_relay() -> f64 {
    20.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleCommand {
    /// A program and its arguments; `-c CONFIG` (the generated config) is appended, as
    /// SRI's `pool_sv2` and `translator_sv2` binaries take it. A Template Provider gets
    /// sv2-tp's options instead (`-datadir`, `-chain`, `-ipcconnect`, `-sv2bind`, ...).
    pub command: String,
}

/// The kind of channel each miner opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    #[default]
    Extended,
    Standard,
}

/// Settings of the SV2 sides. The template refresh interval is `pool.job_refresh` for
/// both protocols, so SV1 and SV2 pools get new templates on the same policy.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sv2 {
    /// Accepted shares the SRI pool acknowledges in one SubmitShares.Success.
    #[serde(default = "default_batch")]
    pub share_batch_size: u32,
    /// The translator opens one upstream channel for all SV1 miners (true) or one each.
    #[serde(default)]
    pub aggregate_channels: bool,
    /// How the SRI pool gets templates from the node.
    #[serde(default)]
    pub template_provider: NodeTemplates,
    /// The channels our SV2 miners open: `extended` or `standard` (header-only).
    #[serde(default)]
    pub channel: ChannelKind,
}

/// Where the SRI pool of sides C and D takes the node's templates from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeTemplates {
    /// The node's SV2 Template Distribution Protocol face.
    #[default]
    Tdp,
    /// The node's Bitcoin Core Mining IPC face.
    Ipc,
}

impl Default for Sv2 {
    fn default() -> Self {
        Sv2 {
            share_batch_size: default_batch(),
            aggregate_channels: false,
            template_provider: NodeTemplates::default(),
            channel: Default::default(),
        }
    }
}

fn default_batch() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Mean time between blocks of the whole network.
    #[serde(with = "dur")]
    pub block_interval: Duration,
    /// Share of the network hashrate held by all miners under test, all sides together.
    pub hashrate_share: f64,
    /// `mainnet`, `testnet` or `empty`.
    #[serde(default = "default_mempool")]
    pub mempool: String,
    /// The node rebuilds a cached template after this long, once the mempool changed.
    #[serde(with = "dur", default = "default_refresh")]
    pub template_refresh: Duration,
    #[serde(default = "default_height")]
    pub start_height: u32,
    /// The Mining IPC interface our node serves, as Bitcoin Core v31 (31, the default:
    /// what the SRI roles pinned here speak) or v32.1 (32: the old submitSolution @7
    /// refused, so only sides whose IPC client is v32-ready can run; sv2-tp is).
    #[serde(default)]
    pub mining_ipc: crate::network::MiningInterface,
    /// How the rest of the network's blocks arrive: `poisson` (the default, as blocks
    /// arrive) or `regular` (one every gap exactly, for tests and comparisons that need a
    /// known number of tips; said in the run's plan, for stale work is not the network's).
    #[serde(default)]
    pub arrivals: Arrivals,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub rtt_ms: f64,
    /// Round trips of single sides instead of `rtt_ms` (the seed measured configuration A
    /// behind 145 ms and C behind 129 ms): `side_rtt_ms = { "sv2-c" = 129 }`.
    #[serde(default)]
    pub side_rtt_ms: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    pub jitter_ms: f64,
    /// Each way; absent means unlimited.
    #[serde(default)]
    pub bandwidth_mbps: Option<f64>,
    /// Fixed farm-side port of the link (side i listens on port + i), so that outside SV1
    /// miners can join a run; absent means any free port.
    #[serde(default)]
    pub farm_port: Option<u16>,
    /// An attacker on every side's link alike, from a moment in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<LinkAttack>,
}

/// `[link.attack]`: what an attacker on the path does, and when it begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AttackFields", into = "AttackFields")]
pub struct LinkAttack {
    pub attack: crate::attack::Attack,
    /// After the window opens.
    pub at: Duration,
}

/// `[link.attack]` as written: the fields each kind takes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttackFields {
    kind: AttackKind,
    #[serde(with = "dur")]
    at: Duration,
    /// hijack-worker: the attacker's worker name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account: Option<String>,
    /// hijack-job: the attacker's output script, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    payout: Option<String>,
    /// tamper: one bit flipped in every this many bytes, each way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    every_bytes: Option<u64>,
}

/// The window before an attack: its shares are what the attack's are set against, and the
/// links begin their attacks a few seconds apart at most (each from its own start).
const MIN_BEFORE_ATTACK: Duration = Duration::from_secs(10);

/// The worker a hijacker names when the scenario names none.
const DEFAULT_ATTACKER_ACCOUNT: &str = "attacker.rig";
/// The longest worker name our SV1 pool takes.
const MAX_ACCOUNT: usize = 256;
/// The script a job hijacker pays itself when the scenario names none: a P2WPKH output.
const DEFAULT_ATTACKER_PAYOUT: &str = "0014a77ac4e7a77ac4e7a77ac4e7a77ac4e7a77ac4e7";
/// The longest output script consensus allows.
const MAX_SCRIPT: usize = 10_000;

impl AttackFields {
    /// The fields set that `kind` does not take, by name.
    fn foreign(&self) -> Vec<&'static str> {
        let takes: &[&str] = match self.kind {
            AttackKind::HijackWorker => &["account"],
            AttackKind::HijackJob => &["payout"],
            AttackKind::Tamper => &["every_bytes"],
            AttackKind::Inject => &[],
        };
        [
            ("account", self.account.is_some()),
            ("payout", self.payout.is_some()),
            ("every_bytes", self.every_bytes.is_some()),
        ]
        .into_iter()
        .filter(|(name, set)| *set && !takes.contains(name))
        .map(|(name, _)| name)
        .collect()
    }
}

impl TryFrom<AttackFields> for LinkAttack {
    type Error = String;

    fn try_from(f: AttackFields) -> Result<Self, String> {
        if let Some(field) = f.foreign().first() {
            return Err(format!("`{field}` is not a field of {}", f.kind));
        }
        let attack = match f.kind {
            AttackKind::HijackWorker => {
                let account = f
                    .account
                    .unwrap_or_else(|| DEFAULT_ATTACKER_ACCOUNT.to_string());
                if account.is_empty()
                    || account.len() > MAX_ACCOUNT
                    || account.chars().any(|c| c.is_whitespace() || c.is_control())
                {
                    return Err(format!(
                        "account {account:?} is not a worker name (1 to {MAX_ACCOUNT} characters, no spaces)"
                    ));
                }
                crate::attack::Attack::HijackWorker { account }
            }
            AttackKind::HijackJob => {
                let text = f.payout.as_deref().unwrap_or(DEFAULT_ATTACKER_PAYOUT);
                match hex::decode(text) {
                    Ok(payout) if (1..=MAX_SCRIPT).contains(&payout.len()) => {
                        crate::attack::Attack::HijackJob { payout }
                    }
                    _ => {
                        return Err(format!(
                        "payout {text:?} is not an output script in hex (1 to {MAX_SCRIPT} bytes)"
                    ))
                    }
                }
            }
            AttackKind::Tamper => match f.every_bytes.unwrap_or(DEFAULT_TAMPER_EVERY) {
                0 => return Err("every_bytes must be at least 1".into()),
                every_bytes => crate::attack::Attack::Tamper { every_bytes },
            },
            AttackKind::Inject => crate::attack::Attack::Inject,
        };
        Ok(LinkAttack { attack, at: f.at })
    }
}

/// One bit in 20 kB of what a link carries: a flip every minute or so on a side of four
/// miners.
const DEFAULT_TAMPER_EVERY: u64 = 20_000;

impl From<LinkAttack> for AttackFields {
    fn from(a: LinkAttack) -> Self {
        let mut fields = AttackFields {
            kind: AttackKind::Inject,
            at: a.at,
            account: None,
            payout: None,
            every_bytes: None,
        };
        match a.attack {
            crate::attack::Attack::HijackWorker { account } => {
                fields.kind = AttackKind::HijackWorker;
                fields.account = Some(account);
            }
            crate::attack::Attack::HijackJob { payout } => {
                fields.kind = AttackKind::HijackJob;
                fields.payout = Some(hex::encode(payout));
            }
            crate::attack::Attack::Tamper { every_bytes } => {
                fields.kind = AttackKind::Tamper;
                fields.every_bytes = Some(every_bytes);
            }
            crate::attack::Attack::Inject => {}
        }
        fields
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Miners {
    /// Miners per side.
    pub count: u32,
    pub shares_per_min: f64,
    /// Hashes a share takes at the start difficulty: with `shares_per_min` it sets each
    /// miner's real hashrate (`shares_per_min / 60 * hashes_per_share`).
    #[serde(default = "default_hashes_per_share")]
    pub hashes_per_share: f64,
    #[serde(default = "default_threads")]
    pub hash_threads: usize,
    /// Connections spread over this long at start.
    #[serde(with = "dur", default = "default_ramp")]
    pub ramp: Duration,
    /// How the miners' hashrates spread around the nominal one (which stays their mean):
    /// real farms mix machine generations. Every side gets the same draws.
    #[serde(default)]
    pub hashrate: HashrateSpread,
    /// Each miner's one-way delay across the farm's LAN to its first hop (the farm's proxy
    /// or the WAN link), both ways. Every side gets the same draws.
    #[serde(default)]
    pub lan_delay_ms: DelaySpread,
    /// After a lost connection, a miner connects again this much later (ESP-Miner: 1 s).
    #[serde(with = "dur", default = "default_reconnect_after")]
    pub reconnect_after: Duration,
    /// A failed connect is tried again this often (ESP-Miner: 5 s).
    #[serde(with = "dur", default = "default_retry_every")]
    pub retry_every: Duration,
    /// A pool that sends nothing for this long is given up on and connected to again
    /// (ESP-Miner's socket receive timeout: 180 s).
    #[serde(with = "dur", default = "default_silence_timeout")]
    pub silence_timeout: Duration,
    /// Failures in a row (a refused connect, a lost session) before a miner turns to its
    /// backup pool (ESP-Miner: 3).
    #[serde(default = "default_failover_after")]
    pub failover_after: u32,
    /// How often a miner on its backup checks whether its primary serves work again
    /// (ESP-Miner: 60 s).
    #[serde(with = "dur", default = "default_primary_check_every")]
    pub primary_check_every: Duration,
}

impl Miners {
    /// How each miner gets its pool back.
    pub fn reconnect(&self) -> mining::farm::Reconnect {
        mining::farm::Reconnect {
            after: self.reconnect_after,
            retry_every: self.retry_every,
            silence: self.silence_timeout,
            failover_after: self.failover_after,
            primary_check_every: self.primary_check_every,
        }
    }
}

fn default_failover_after() -> u32 {
    mining::farm::Reconnect::default().failover_after
}
fn default_primary_check_every() -> Duration {
    mining::farm::Reconnect::default().primary_check_every
}

/// `[backup]`: what every side falls back on when its pool goes away.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backup {
    /// A second pool of the side's own kind, behind the side's link on a route of its own
    /// (its own tap): SV1 and SV2 miners turn to it as their firmware does, and SRI's
    /// translator as its upstream list says. The sides that declare jobs (A, B) have
    /// their JDC's fallback to solo mining instead, always.
    #[serde(default)]
    pub pool: bool,
}

fn default_reconnect_after() -> Duration {
    mining::farm::Reconnect::default().after
}
fn default_retry_every() -> Duration {
    mining::farm::Reconnect::default().retry_every
}
fn default_silence_timeout() -> Duration {
    mining::farm::Reconnect::default().silence
}

/// `[[faults]]`: the far end of every side's link goes away for a while.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// What goes away: `pool` (the side's pool, as its link reaches it), `jds` (the
    /// pool's Job Declarator, on the sides that declare jobs) or `link` (the farm's WAN:
    /// everything its link carries, a backup pool's route too).
    pub target: FaultTarget,
    /// `drop`: connections close and the port refuses new ones; `stall`: connections stay
    /// open and nothing crosses.
    pub kind: probe::event::FaultKind,
    /// After the window opens.
    #[serde(with = "dur")]
    pub at: Duration,
    #[serde(with = "dur")]
    pub lasts: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultTarget {
    Pool,
    Jds,
    /// The farm's WAN itself: every route of the side's link at once (its pool, its JDS,
    /// its backup pool).
    Link,
}

impl FaultTarget {
    pub fn name(self) -> &'static str {
        match self {
            FaultTarget::Pool => "pool",
            FaultTarget::Jds => "jds",
            FaultTarget::Link => "link",
        }
    }
}

/// How miners' hashrates spread, as multiples of the nominal hashrate with mean 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
pub enum HashrateSpread {
    /// Every miner at the nominal hashrate.
    #[default]
    Fixed,
    /// Lognormal: the multiples' logarithms have standard deviation `sigma` (0.5: most
    /// machines within 0.4x to 2x).
    Lognormal { sigma: f64 },
    /// A few large machines and many small ones: the miner of rank k hashes in proportion
    /// to 1 / k^`exponent`; ranks are dealt to the miners at random.
    Zipf { exponent: f64 },
}

/// How a per-miner delay (milliseconds) spreads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
pub enum DelaySpread {
    Fixed {
        value: f64,
    },
    Uniform {
        min: f64,
        max: f64,
    },
    /// Lognormal around `median` ms, its logarithm's standard deviation `sigma`.
    Lognormal {
        median: f64,
        sigma: f64,
    },
}

impl Default for DelaySpread {
    fn default() -> Self {
        DelaySpread::Fixed { value: 0.0 }
    }
}

/// The longest farm-LAN delay a draw may give: a LAN, not a WAN.
const MAX_LAN_DELAY_MS: f64 = 1_000.0;

impl std::fmt::Display for HashrateSpread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashrateSpread::Fixed => write!(f, "all alike"),
            HashrateSpread::Lognormal { sigma } => write!(f, "lognormal, sigma {sigma}"),
            HashrateSpread::Zipf { exponent } => write!(f, "Zipf, exponent {exponent}"),
        }
    }
}

impl std::fmt::Display for DelaySpread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DelaySpread::Fixed { value } if *value == 0.0 => write!(f, "none"),
            DelaySpread::Fixed { value } => write!(f, "{value} ms"),
            DelaySpread::Uniform { min, max } => write!(f, "{min} to {max} ms, uniform"),
            DelaySpread::Lognormal { median, sigma } => {
                write!(f, "lognormal around {median} ms, sigma {sigma}")
            }
        }
    }
}

impl HashrateSpread {
    /// What is wrong with the parameters, if anything.
    fn problem(&self) -> Option<String> {
        match *self {
            HashrateSpread::Fixed => None,
            HashrateSpread::Lognormal { sigma } => (!(0.0..=3.0).contains(&sigma))
                .then(|| format!("lognormal sigma {sigma} is not in [0, 3]")),
            HashrateSpread::Zipf { exponent } => (!(0.0..=3.0).contains(&exponent))
                .then(|| format!("zipf exponent {exponent} is not in [0, 3]")),
        }
    }

    /// `miners` multiples of the nominal hashrate, mean 1; empty for `Fixed`.
    fn draw(&self, miners: u32, rng: &mut impl rand::Rng) -> Vec<f64> {
        use rand::seq::SliceRandom;
        use rand_distr::Distribution;
        let raw: Vec<f64> = match *self {
            HashrateSpread::Fixed => return Vec::new(),
            HashrateSpread::Lognormal { sigma } => {
                let d = rand_distr::LogNormal::new(0.0, sigma).expect("sigma checked");
                (0..miners).map(|_| d.sample(rng)).collect()
            }
            HashrateSpread::Zipf { exponent } => {
                let mut ranks: Vec<f64> =
                    (1..=miners).map(|k| f64::from(k).powf(-exponent)).collect();
                ranks.shuffle(rng);
                ranks
            }
        };
        let mean = raw.iter().sum::<f64>() / raw.len().max(1) as f64;
        raw.iter().map(|x| x / mean).collect()
    }
}

impl DelaySpread {
    fn problem(&self) -> Option<String> {
        let ms = |x: f64| (0.0..=MAX_LAN_DELAY_MS).contains(&x);
        match *self {
            DelaySpread::Fixed { value } if !ms(value) => {
                Some(format!("{value} is not a delay in ms (0 to {MAX_LAN_DELAY_MS})"))
            }
            DelaySpread::Uniform { min, max } if !(ms(min) && ms(max) && min <= max) => Some(
                format!("uniform {min} to {max} is not a range of delays in ms (0 to {MAX_LAN_DELAY_MS})"),
            ),
            DelaySpread::Lognormal { median, sigma }
                if !(ms(median) && median > 0.0 && (0.0..=3.0).contains(&sigma)) =>
            {
                Some(format!(
                    "lognormal median {median} ms, sigma {sigma}: needs a median in (0, {MAX_LAN_DELAY_MS}] and sigma in [0, 3]"
                ))
            }
            _ => None,
        }
    }

    /// `miners` delays in microseconds (capped at the longest LAN delay); empty when
    /// every one is zero.
    fn draw(&self, miners: u32, rng: &mut impl rand::Rng) -> Vec<u64> {
        use rand_distr::Distribution;
        let ms: Vec<f64> = match *self {
            DelaySpread::Fixed { value: 0.0 } => return Vec::new(),
            DelaySpread::Fixed { value } => vec![value; miners as usize],
            DelaySpread::Uniform { min, max } => (0..miners)
                .map(|_| {
                    if max > min {
                        rng.gen_range(min..=max)
                    } else {
                        min
                    }
                })
                .collect(),
            DelaySpread::Lognormal { median, sigma } => {
                let d = rand_distr::LogNormal::new(median.ln(), sigma).expect("checked");
                (0..miners).map(|_| d.sample(rng)).collect()
            }
        };
        ms.iter()
            .map(|d| (d.min(MAX_LAN_DELAY_MS) * 1e3).round() as u64)
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// A fresh job on the same tip this long after the last new tip or job (the seed's SV1
    /// pool: 60 s). One rule for every side's template source: the SV1 pool, the
    /// Template Provider, and the SRI roles' Mining IPC `min_interval`.
    #[serde(with = "dur", default = "default_refresh")]
    pub job_refresh: Duration,
    /// ... when its fees grew by at least this much over the last one (default 0).
    #[serde(default)]
    pub refresh_fee_threshold_sats: u64,
    #[serde(with = "dur", default = "default_retarget")]
    pub vardiff_retarget: Duration,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            job_refresh: default_refresh(),
            refresh_fee_threshold_sats: 0,
            vardiff_retarget: default_retarget(),
        }
    }
}

fn default_warmup() -> Duration {
    Duration::from_secs(10)
}
fn default_seed() -> u64 {
    1
}
fn default_mempool() -> String {
    "mainnet".into()
}
fn default_refresh() -> Duration {
    Duration::from_secs(30)
}
fn default_height() -> u32 {
    880_000
}
fn default_hashes_per_share() -> f64 {
    2000.0
}
fn default_threads() -> usize {
    1
}
fn default_ramp() -> Duration {
    Duration::from_secs(1)
}
fn default_retarget() -> Duration {
    Duration::from_secs(60)
}

impl Link {
    /// The round trip of `side`'s link.
    pub fn rtt_of(&self, side: &str) -> f64 {
        self.side_rtt_ms.get(side).copied().unwrap_or(self.rtt_ms)
    }

    /// The longest round trip of any side.
    pub fn longest_rtt(&self) -> f64 {
        self.side_rtt_ms
            .values()
            .fold(self.rtt_ms, |a, b| a.max(*b))
    }
}

impl Scenario {
    /// The farm-side port of the side at `index` in `sides`: `link.farm_port + index`, or
    /// 0 (any free port) when the scenario fixes none.
    pub fn farm_port(&self, index: usize) -> u16 {
        self.link.farm_port.map_or(0, |p| p + index as u16)
    }

    /// The order the sides start in (and first ask the node for templates in), as indices
    /// into `sides`, drawn from the seed: the node serves its clients one after another,
    /// so a side always started first would always be served first, a systematic edge
    /// that identical sides must not have. The same seed gives the same order; A/A runs
    /// over seeds see every order.
    pub fn start_order(&self) -> Vec<usize> {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        let mut order: Vec<usize> = (0..self.sides.len()).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ 0x51de_0bde);
        order.shuffle(&mut rng);
        order
    }

    /// Reads `path`, applies `overrides`, and checks the result.
    pub fn load(path: &Path, overrides: &[Setting]) -> Result<Scenario> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scenario {}", path.display()))?;
        Scenario::parse(&text, path, overrides)
    }

    /// A run directory's `scenario.toml`, the scenario as it ran, read back as the record
    /// it is: not checked again, since its programs and files may be on another machine.
    pub fn from_record(text: &str) -> Result<Scenario> {
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let path = e.path().to_string();
            anyhow::anyhow!("scenario field `{path}`: {}", e.into_inner())
        })
    }

    /// [`Scenario::load`] of `text`, read from `path` (named in errors; relative paths in
    /// the scenario are taken from its directory).
    pub fn parse(text: &str, path: &Path, overrides: &[Setting]) -> Result<Scenario> {
        let mut table: toml::Table = text
            .parse()
            .with_context(|| format!("{} is not valid TOML", path.display()))?;
        for setting in overrides {
            setting.apply(&mut table)?;
        }
        let mut scenario: Scenario = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                let path = e.path().to_string();
                anyhow::anyhow!("scenario field `{path}`: {}", e.into_inner())
            })?;
        let base = path.parent().unwrap_or(Path::new("."));
        if let Some(RealNode::Started(core)) = &mut scenario.node {
            // Whole, so the copy in the run directory names the same program.
            core.program = std::path::absolute(base.join(&core.program))?;
            scenario.miners.hashes_per_share = scenario.signet_hashes_per_share();
        }
        if let Some(Err(e)) = (scenario.farm_node.block_lag.as_mut()).map(|lag| lag.load(base)) {
            anyhow::bail!("scenario field `farm_node.block_lag`: {e}");
        }
        scenario.check()?;
        // Templates are read relative to the scenario file; keep their paths whole, so
        // the copy in the run directory still names them.
        for pool in scenario.sv1_pools.values_mut() {
            if let Some(template) = &mut pool.config_template {
                *template = base.join(&*template);
            }
            for file in &mut pool.files {
                file.template = base.join(&file.template);
            }
            // A relative workdir is the scenario's too; one from a placeholder is the run's.
            if let Some(workdir) = &mut pool.workdir {
                if !workdir.starts_with('{') && Path::new(workdir.as_str()).is_relative() {
                    *workdir = base.join(&*workdir).display().to_string();
                }
            }
        }
        Ok(scenario)
    }

    /// What a run of this scenario would start, in words: the window, the network, and each
    /// side's path with what stands in for the defaults (`run --check` prints it).
    pub fn plan(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "{}: {:.0} s measured after {:.0} s of warm-up, seed {}; {} miners a side at {} shares a minute",
                self.name,
                self.duration.as_secs_f64(),
                self.warmup.as_secs_f64(),
                self.seed,
                self.miners.count,
                self.miners.shares_per_min
            ),
            match &self.node {
                Some(RealNode::Started(core)) => format!(
                    "node: Bitcoin Core {} started on a signet of its own (a block is {:.1} million hashes), the rest of the network's blocks {}, {} mempool; each miner hashes {:.0} H/s ({:.0} hashes a share) for {:.0}% of the blocks",
                    core.program.display(),
                    crate::chain::Chain::Signet.hashes_per_block() / 1e6,
                    self.network_pace(),
                    self.network.mempool,
                    self.miner_hashrate(),
                    self.miners.hashes_per_share,
                    self.network.hashrate_share * 100.0,
                ),
                Some(RealNode::Reached(node)) => format!(
                    "node: a real Bitcoin Core at {}{}",
                    node.url,
                    (node.ipc.as_ref()).map_or(String::new(), |ipc| format!(
                        ", Mining IPC {}",
                        ipc.display()
                    ))
                ),
                None => match self.network.arrivals {
                    Arrivals::Poisson => format!(
                        "node: the simulated network, a block every {:.0} s on average, {} mempool",
                        self.network.block_interval.as_secs_f64(),
                        self.network.mempool
                    ),
                    Arrivals::Regular => format!(
                        "node: the simulated network, the rest of the network's blocks {}, ours as our miners find them, {} mempool",
                        self.network_pace(),
                        self.network.mempool
                    ),
                },
            },
            format!("roles run as: {:?}", self.placement.engine).to_lowercase(),
        ];
        for side in &self.sides {
            let config = side.config;
            let mut line = format!(
                "{side}: {}; link round trip {} ms",
                config.path(),
                self.link.rtt_of(side)
            );
            if let Some(real) = self.real_node_in_path(config) {
                line.push_str(&real);
            } else if matches!(config, Config::Sv2A | Config::Sv2B) {
                // What sets this side's new-block answer, said before it runs.
                line.push_str(&format!(
                    "; farm node's block lag {}",
                    self.farm_node.lag_in_words()
                ));
            }
            if let Some(pool) = self.external_pool(side) {
                let what = (pool.kind.as_deref())
                    .or(pool.command.as_deref())
                    .unwrap_or("a pool of yours");
                line.push_str(&format!("; SV1 pool: {what}"));
            }
            // The user's programs in place of ours, where this side runs that role.
            let r = &self.roles;
            let programs = [
                (config != Config::Sv1, "pool", &r.pool),
                (config.translates(), "translator", &r.translator),
                (config.declares_jobs(), "JDC", &r.jdc),
                (
                    matches!(config, Config::Sv2C | Config::Sv2D),
                    "Template Provider",
                    &r.template_provider,
                ),
            ];
            for (runs, role, command) in programs {
                if let Some(c) = command.as_ref().filter(|_| runs) {
                    line.push_str(&format!("; {role}: {}", c.command));
                }
            }
            lines.push(line);
        }
        lines
    }

    /// The pool an SV1 side runs when it is not ours.
    pub fn external_pool(&self, side: &Side) -> Option<&ExternalSv1Pool> {
        let label = side.strip_prefix("sv1-")?;
        (side.config == Config::Sv1)
            .then(|| self.sv1_pools.get(label))
            .flatten()
    }

    /// Whether a side of the run is called `name`.
    pub fn has_side(&self, name: &str) -> bool {
        self.sides.iter().any(|s| s == name)
    }

    /// The sides' names, in the scenario's order.
    pub fn side_names(&self) -> Vec<&str> {
        self.sides.iter().map(Side::name).collect()
    }

    fn check(&self) -> Result<()> {
        self.check_placement()?;
        if self.sides.is_empty() {
            fail("sides", "name at least one side".into())?;
        }
        self.check_node()?;
        self.check_sides()?;
        self.check_roles()?;
        self.check_farm_node()?;
        self.check_times()?;
        self.check_network()?;
        self.check_sv1_pools()?;
        self.check_link()?;
        self.check_faults()?;
        self.check_backup()?;
        self.check_miners()
    }

    /// A backup pool is built of our own roles: another SV1 pool of yours is not doubled.
    fn check_backup(&self) -> Result<()> {
        if !self.backup.pool {
            return Ok(());
        }
        if let Some(side) = (self.sides.iter()).find(|s| self.external_pool(s).is_some()) {
            fail(
                "backup.pool",
                format!("side {side} runs another SV1 pool; a backup of it is not started (use the built-in pool's side, or no backup)"),
            )?;
        }
        Ok(())
    }

    /// Each fault inside the window, of some length, and a JDS fault only with a side that
    /// declares jobs.
    fn check_faults(&self) -> Result<()> {
        let declares = (self.sides.iter()).any(|s| matches!(s.config, Config::Sv2A | Config::Sv2B));
        for (i, f) in self.faults.iter().enumerate() {
            if f.lasts.is_zero() {
                fail(
                    &format!("faults[{i}].lasts"),
                    "must be longer than zero".into(),
                )?;
            }
            if f.at + f.lasts > self.duration {
                fail(
                    &format!("faults[{i}].at"),
                    format!(
                        "{:?} and {:?} after it end past the {:?} window",
                        f.at, f.lasts, self.duration
                    ),
                )?;
            }
            if f.target == FaultTarget::Jds && !declares {
                fail(
                    &format!("faults[{i}].target"),
                    "`jds` needs a side with a Job Declarator (sv2-a or sv2-b)".into(),
                )?;
            }
        }
        Ok(())
    }

    /// The scenario measured for `duration` instead of its own (`--duration`), checked.
    pub fn measured_for(mut self, duration: Option<Duration>) -> Result<Scenario> {
        if let Some(duration) = duration {
            self.duration = duration;
            self.check()?;
        }
        Ok(self)
    }

    /// The scenario with its roles in containers (the Docker engine, unless it names the
    /// swarm), checked again: what runs only as a process is refused by its field.
    pub fn in_containers(mut self) -> Result<Scenario> {
        if self.placement.engine == Engine::Process {
            self.placement.engine = Engine::Docker;
        }
        self.check()?;
        Ok(self)
    }

    /// What each engine can run: CPU sets are per host, and a program of yours or another
    /// pool runs as a process only.
    fn check_placement(&self) -> Result<()> {
        if self.placement.engine == Engine::Swarm && self.placement.isolate {
            fail(
            "placement.isolate",
            "CPU sets are per host; with the swarm engine, put the farm on nodes of its own (placement.farm_nodes)".into(),
        )?;
        }
        if self.placement.engine != Engine::Process {
            // What runs in a container is the stratum-bench image: nothing else is in it.
            if let Some(label) = self.sv1_pools.keys().next() {
                fail(
                    &format!("sv1_pools.{label}"),
                    "another SV1 pool runs as a process only; use placement.engine = \"process\""
                        .into(),
                )?;
            }
            for (field, role) in self.roles.named() {
                if role.is_some() {
                    fail(field, "a program of yours in place of a role runs as a process only; use placement.engine = \"process\"".into())?;
                }
            }
        }
        Ok(())
    }

    /// A real node: one of yours (its addresses, its chain, and the Mining IPC its SV2
    /// sides need), or a Core the run starts; either runs with the process engine.
    fn check_node(&self) -> Result<()> {
        match &self.node {
            None => return Ok(()),
            Some(RealNode::Started(core)) => {
                if !core.program.is_file() {
                    fail(
                        "node.program",
                        format!("{} is not a file (Bitcoin Core's bitcoin-node, built with IPC: scripts/build-bitcoin-core.sh)", core.program.display()),
                    )?;
                }
                if self.network.hashrate_share >= 1.0 {
                    fail(
                        "network.hashrate_share",
                        "with a started Core the rest of the network finds the blocks our miners do not: below 1".into(),
                    )?;
                }
            }
            Some(RealNode::Reached(node)) => self.check_reached_node(node)?,
        }
        if self.placement.engine != Engine::Process {
            fail(
                "node",
                "a real node runs with placement.engine = \"process\" only".into(),
            )?;
        }
        Ok(())
    }

    /// How a real node changes a side's path from [`Config::path`]'s, in words.
    fn real_node_in_path(&self, config: Config) -> Option<String> {
        let zmq = match self.node.as_ref()? {
            RealNode::Reached(node) => node.zmq.is_some(),
            RealNode::Started(_) => false,
        };
        Some(match config {
            Config::Sv1 if zmq => "; the node is real".into(),
            Config::Sv1 => "; the node is real and has no ZMQ: the pool long-polls getblocktemplate".into(),
            Config::Sv2C | Config::Sv2D => "; the Template Provider is the real node's Mining IPC, through the IPC tap".into(),
            Config::Sv2A | Config::Sv2B => "; the JDC takes templates from the pool's real node, through the same tap: no farm node of its own, so no farm-node lag".into(),
        })
    }

    /// A node of yours: its addresses, its chain, and the Mining IPC its SV2 sides need.
    fn check_reached_node(&self, node: &ReachedNode) -> Result<()> {
        if !node.url.starts_with("http://") {
            fail(
                "node.url",
                format!("{:?} is not http://HOST:PORT (the node's RPC)", node.url),
            )?;
        }
        if let Some(zmq) = node.zmq.as_ref().filter(|z| !z.starts_with("tcp://")) {
            fail(
                "node.zmq",
                format!("{zmq:?} is not tcp://HOST:PORT (the node's -zmqpubhashblock)"),
            )?;
        }
        if let Some(chain) = node.chain.as_deref().filter(|c| !CHAINS.contains(c)) {
            fail("node.chain", format!("{chain:?} is none of {CHAINS:?}"))?;
        }
        if self.network.arrivals == Arrivals::Regular {
            fail(
                "network.arrivals",
                format!("\"regular\" paces the blocks of a network the run makes: the blocks of the node at {} come as its own network finds them (leave it out, or use node.program for a Core the run starts)", node.url),
            )?;
        }
        let sv2 = (self.sides.iter()).find(|x| x.config != Config::Sv1);
        if let (Some(side), None) = (sv2, &node.ipc) {
            fail(
                "node.ipc",
                format!("side {side:?} takes its templates from the node's Mining IPC: give its socket (`ipc = \"<datadir>/<chain>/node.sock\"`, Bitcoin Core v31 started with -ipcbind=unix), or leave the side out"),
            )?;
        }
        if let Some(ipc) = &node.ipc {
            if node.chain.as_deref() == Some("test") {
                fail(
                    "node.chain",
                    format!("testnet3 has no Mining IPC network in the SRI pool (mainnet, testnet4, signet, regtest): {} cannot serve SV2 sides", ipc.display()),
                )?;
            }
        }
        Ok(())
    }

    /// Every side is a known configuration, named once, and the baseline is one of them.
    fn check_sides(&self) -> Result<()> {
        if let Some(baseline) = (self.baseline.as_ref()).filter(|b| !self.has_side(b)) {
            fail(
                "baseline",
                format!(
                    "{baseline:?} is not one of the sides {:?}",
                    self.side_names()
                ),
            )?;
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = self.sides.iter().find(|s| !seen.insert(s.name())) {
            fail(
                "sides",
                format!("{twice:?} is named twice (give the second a label: {twice}-b)"),
            )?;
        }
        Ok(())
    }

    /// Programs of yours in place of roles, and where the SV2 pool takes its templates.
    fn check_roles(&self) -> Result<()> {
        for (field, role) in self.roles.named() {
            if role.as_ref().is_some_and(|r| r.command.trim().is_empty()) {
                fail(
                    field,
                    "is empty: name a program, or leave the role out".into(),
                )?;
            }
        }
        if self.roles.template_provider.is_some() {
            let field = "roles.template_provider.command";
            let pool_templates = self.sides.iter().any(|x| x.config.pool_templates());
            if !pool_templates {
                fail(field, "no side takes the pool's templates from a Template Provider: add side \"sv2-c\" or \"sv2-d\", or leave the role out".into())?;
            }
            if self.sv2.template_provider == NodeTemplates::Ipc {
                fail(field, "the SRI pool then takes its templates from the Template Provider, not the node's Mining IPC: leave `sv2.template_provider` at \"tdp\"".into())?;
            }
        }
        Ok(())
    }

    /// The farm's node and the SV2 farm's share batches.
    fn check_farm_node(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.farm_node.mempool_overlap) {
            fail(
                "farm_node.mempool_overlap",
                format!(
                    "{} is not a share between 0 and 1",
                    self.farm_node.mempool_overlap
                ),
            )?;
        }
        if self.farm_node.propagation_ms.is_some() {
            fail(
                "farm_node.propagation_ms",
                "is now two fields: farm_node.block_lag (blocks: 25, \
                 { median_ms = 454, p90_ms = 6925 } or { file = \"lags.txt\" }) and \
                 farm_node.tx_relay_ms (transactions)"
                    .into(),
            )?;
        }
        if let Err(e) = self.farm_node.lag().check() {
            fail("farm_node.block_lag", e)?;
        }
        if !is_delay_ms(self.farm_node.lag().median_ms()) {
            fail(
                "farm_node.block_lag",
                "its median is not a delay of zero to an hour".into(),
            )?;
        }
        if !is_delay_ms(self.farm_node.tx_relay_ms) {
            fail(
                "farm_node.tx_relay_ms",
                format!(
                    "{} is not a delay of zero to an hour",
                    self.farm_node.tx_relay_ms
                ),
            )?;
        }
        if self.sv2.share_batch_size == 0 {
            fail("sv2.share_batch_size", "must be at least 1".into())?;
        }
        Ok(())
    }

    /// Every time is positive where it must be and at most a year.
    fn check_times(&self) -> Result<()> {
        if self.duration.is_zero() {
            fail("duration", "must be longer than zero".into())?;
        }
        // Times are kept in u64 nanoseconds (585 years); a year bounds every one a run uses.
        for (field, d) in [
            ("duration", self.duration),
            ("warmup", self.warmup),
            ("network.block_interval", self.network.block_interval),
            ("network.template_refresh", self.network.template_refresh),
            ("pool.job_refresh", self.pool.job_refresh),
        ] {
            if d > MAX_TIME {
                fail(field, format!("{d:?} is longer than a year"))?;
            }
        }
        Ok(())
    }

    /// The simulated network: its share of the hashrate, its block pace, its mempool.
    fn check_network(&self) -> Result<()> {
        if !(self.network.hashrate_share > 0.0 && self.network.hashrate_share <= 1.0) {
            fail(
                "network.hashrate_share",
                format!("{} is not in (0, 1]", self.network.hashrate_share),
            )?;
        }
        if self.network.block_interval.is_zero() {
            fail("network.block_interval", "must be longer than zero".into())?;
        }
        if let Err(e) = crate::network::MempoolPreset::parse(&self.network.mempool) {
            fail("network.mempool", e)?;
        }
        self.check_mining_ipc()
    }

    /// Bitcoin Core v32 refuses the submitSolution the pinned SRI roles call (they speak
    /// Mining IPC 30 and 31 only): a side whose pool or JDC would take its templates from
    /// a v32 face could mine and never submit a block, so it is refused, named.
    fn check_mining_ipc(&self) -> Result<()> {
        if self.network.mining_ipc == crate::network::MiningInterface::V31 {
            return Ok(());
        }
        if self.node.is_some() {
            fail(
                "network.mining_ipc",
                "sets our node's interface; a real node ([node]) serves its own".into(),
            )?;
        }
        let pool_ipc = self.sv2.template_provider == NodeTemplates::Ipc
            && self.roles.template_provider.is_none();
        let stuck: Vec<&str> = (self.sides.iter())
            .filter(|x| x.config.declares_jobs() || (x.config.pool_templates() && pool_ipc))
            .map(|x| x.name())
            .collect();
        if !stuck.is_empty() {
            fail(
                "network.mining_ipc",
                format!(
                    "32 (Bitcoin Core v32.1) refuses the v31 submitSolution (@7) that the SRI roles pinned here call (Mining IPC 30 and 31 only): sides {stuck:?} would never submit a block. Leave them out, give C and D their templates over TDP (sv2.template_provider = \"tdp\") or from sv2-tp (roles.template_provider), or keep 31"
                ),
            )?;
        }
        Ok(())
    }

    /// Each other SV1 pool is run by a side.
    fn check_sv1_pools(&self) -> Result<()> {
        for label in self.sv1_pools.keys() {
            let side = format!("sv1-{label}");
            if !self.has_side(&side) {
                fail(
                    &format!("sv1_pools.{label}"),
                    format!("no side runs it: add {side:?} to sides"),
                )?;
            }
        }
        Ok(())
    }

    /// The link's delays, per side and for all, and its rate.
    fn check_link(&self) -> Result<()> {
        for (side, rtt) in &self.link.side_rtt_ms {
            if !self.has_side(side) {
                fail(
                    "link.side_rtt_ms",
                    format!(
                        "names {side:?}, which is not one of the sides {:?}",
                        self.side_names()
                    ),
                )?;
            }
            if !is_delay_ms(*rtt) {
                fail(
                    &format!("link.side_rtt_ms.{side}"),
                    format!("{rtt} is not a round-trip time in ms (zero to an hour)"),
                )?;
            }
        }
        if !is_delay_ms(self.link.rtt_ms) {
            fail(
                "link.rtt_ms",
                format!(
                    "{} is not a round-trip time in ms (zero to an hour)",
                    self.link.rtt_ms
                ),
            )?;
        }
        if !is_delay_ms(self.link.jitter_ms) {
            fail(
                "link.jitter_ms",
                format!(
                    "{} is not a jitter in ms (zero to an hour)",
                    self.link.jitter_ms
                ),
            )?;
        }
        if let Some(b) = self.link.bandwidth_mbps {
            if !(b > 0.0 && b.is_finite()) {
                fail("link.bandwidth_mbps", format!("{b} is not a positive rate"))?;
            }
        }
        if let Some(attack) = &self.link.attack {
            if attack.at < MIN_BEFORE_ATTACK {
                fail(
                    "link.attack.at",
                    format!(
                        "{:?} leaves too little of the window before the attack (at least {:?}): the shares before it are the reference",
                        attack.at, MIN_BEFORE_ATTACK
                    ),
                )?;
            }
            if attack.at >= self.duration {
                fail(
                    "link.attack.at",
                    format!(
                        "{:?} is not inside the {:?} window (from its opening)",
                        attack.at, self.duration
                    ),
                )?;
            }
        }
        Ok(())
    }

    /// The fleet: its size, its share rate, its hashrate, and blocks several shares long.
    fn check_miners(&self) -> Result<()> {
        if self.miners.count == 0 {
            fail("miners.count", "needs at least one miner".into())?;
        }
        if self.miners.failover_after == 0 {
            fail("miners.failover_after", "must be at least 1 failure".into())?;
        }
        for (field, timer) in [
            ("miners.retry_every", self.miners.retry_every),
            ("miners.silence_timeout", self.miners.silence_timeout),
            (
                "miners.primary_check_every",
                self.miners.primary_check_every,
            ),
        ] {
            if timer.is_zero() {
                fail(
                    field,
                    "must be longer than zero (a miner would spin)".into(),
                )?;
            }
        }
        if !(self.miners.shares_per_min > 0.0 && self.miners.shares_per_min.is_finite()) {
            fail(
                "miners.shares_per_min",
                format!("{} is not a positive rate", self.miners.shares_per_min),
            )?;
        }
        if !(self.miners.hashes_per_share >= 16.0 && self.miners.hashes_per_share.is_finite()) {
            fail(
                "miners.hashes_per_share",
                format!("{} is below 16", self.miners.hashes_per_share),
            )?;
        }
        if let Some(problem) = self.miners.hashrate.problem() {
            fail("miners.hashrate", problem)?;
        }
        if let Some(problem) = self.miners.lan_delay_ms.problem() {
            fail("miners.lan_delay_ms", problem)?;
        }
        let per_block = self.hashes_per_block();
        if per_block < 4.0 * self.miners.hashes_per_share {
            fail(
            "network.block_interval",
            format!(
                "blocks would take {per_block:.0} hashes, less than 4 shares' worth ({:.0}): lengthen it, lower network.hashrate_share or raise miners.shares_per_min",
                4.0 * self.miners.hashes_per_share
            ),
        )?;
        }
        Ok(())
    }

    /// The farm's machines, as every side's fleet runs them.
    pub fn machines(&self) -> mining::farm::Machines {
        mining::farm::Machines {
            miners: self.miners.count,
            hashrate: self.miner_hashrate(),
            ramp: self.miners.ramp,
            hash_threads: self.miners.hash_threads,
            per_miner: self.per_miner(),
            reconnect: self.miners.reconnect(),
        }
    }

    /// Each miner's real hashrate.
    pub fn miner_hashrate(&self) -> f64 {
        self.miners.shares_per_min / 60.0 * self.miners.hashes_per_share
    }

    /// How each miner differs from the nominal one: drawn once from the scenario's seed,
    /// the same for every side (miner `i` of each side has the same hashrate and LAN).
    pub fn per_miner(&self) -> mining::farm::PerMiner {
        use rand::SeedableRng;
        // Streams of their own, so adding one spread never changes the other's draws.
        let mut hashrates = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ 0x4a54_7261_7465);
        let mut lan = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed ^ 0x4c41_4e64_6c79);
        mining::farm::PerMiner {
            hashrate_factor: self.miners.hashrate.draw(self.miners.count, &mut hashrates),
            lan_delay_us: self.miners.lan_delay_ms.draw(self.miners.count, &mut lan),
        }
    }

    /// Hashrate of every miner under test, all sides together.
    pub fn total_hashrate(&self) -> f64 {
        self.miner_hashrate() * f64::from(self.miners.count) * self.sides.len() as f64
    }

    /// Hashes per block, so that our miners find `hashrate_share` of the blocks.
    pub fn hashes_per_block(&self) -> f64 {
        self.total_hashrate() * self.network.block_interval.as_secs_f64()
            / self.network.hashrate_share
    }

    /// How the rest of the network's blocks come, in words: a regular pace is said with
    /// what it changes, for stale work then is not the network's.
    fn network_pace(&self) -> String {
        let every = self.network_block_interval().as_secs_f64();
        match self.network.arrivals {
            Arrivals::Poisson => format!("every {every:.0} s on average"),
            Arrivals::Regular => format!(
                "one every {every:.2} s (network.arrivals = \"regular\": no tip follows another closely and none keeps miners waiting long, so stale work and its worth are not the network's)"
            ),
        }
    }

    /// How often the rest of the network finds a block, on average: the blocks our miners
    /// do not find.
    pub fn network_block_interval(&self) -> Duration {
        (self.network.block_interval).div_f64(1.0 - self.network.hashrate_share.min(0.999))
    }

    /// On a started Core's signet a block takes a fixed number of hashes: the miners'
    /// share of them (`hashes_per_share`, at the scenario's share rate) is what gives our
    /// miners `hashrate_share` of the blocks at `block_interval`. Worked: 4.84 M hashes a
    /// block, 30% every 15 s is 96.8 kH/s; over 16 miners at 10 shares a minute, 36.3 k
    /// hashes a share.
    pub fn signet_hashes_per_share(&self) -> f64 {
        let ours = crate::chain::Chain::Signet.hashes_per_block() * self.network.hashrate_share
            / self.network.block_interval.as_secs_f64();
        let shares_per_s =
            f64::from(self.miners.count) * self.sides.len() as f64 * self.miners.shares_per_min
                / 60.0;
        if shares_per_s > 0.0 {
            ours / shares_per_s
        } else {
            self.miners.hashes_per_share
        }
    }

    /// The share difficulty that gives `hashes_per_share`.
    pub fn start_difficulty(&self) -> f64 {
        self.miners.hashes_per_share / mining::hashes_per_difficulty(1.0)
    }
}

/// One scenario field set by its dotted key: what `--set KEY=VALUE` gives, and what a
/// sweep's point, the round trips `latency` measured or a plan hand a run. The value is
/// TOML (a number, a bool, a quoted string, a table), or a plain string (`10s`) when it
/// does not read as TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    pub key: String,
    pub value: toml::Value,
}

impl Setting {
    pub fn new(key: impl Into<String>, value: impl Into<toml::Value>) -> Setting {
        Setting {
            key: key.into(),
            value: value.into(),
        }
    }

    /// `key` set to `raw` as a user writes it: TOML, or else a plain string.
    pub fn of_text(key: &str, raw: &str) -> Setting {
        let value = format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        Setting::new(key.trim(), value)
    }

    /// Sets the field in `table`, making the tables on its path.
    fn apply(&self, table: &mut toml::Table) -> Result<()> {
        let parts: Vec<&str> = self.key.split('.').collect();
        let (last, parents) = parts.split_last().expect("split gives one part at least");
        let mut cursor = table;
        for (i, part) in parents.iter().enumerate() {
            let entry = cursor
                .entry(part.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            cursor = entry.as_table_mut().with_context(|| {
                format!(
                    "setting {}: `{}` is not a table",
                    self.key,
                    parts[..=i].join(".")
                )
            })?;
        }
        cursor.insert(last.to_string(), self.value.clone());
        Ok(())
    }
}

impl std::str::FromStr for Setting {
    type Err = String;
    fn from_str(assignment: &str) -> Result<Setting, String> {
        let (key, raw) = assignment
            .split_once('=')
            .filter(|(key, _)| !key.trim().is_empty())
            .ok_or_else(|| format!("{assignment:?}: expected KEY=VALUE (link.rtt_ms=100)"))?;
        Ok(Setting::of_text(key, raw))
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// The longest time a scenario may name.
const MAX_TIME: Duration = Duration::from_secs(365 * 86_400);

/// A delay in ms a run can apply: zero to an hour (a longer one is a mistake, and past
/// Duration's range would not convert at all).
fn is_delay_ms(ms: f64) -> bool {
    (0.0..=3_600_000.0).contains(&ms)
}

/// A scenario field's problem, as every check words it.
fn fail(field: &str, problem: String) -> Result<()> {
    bail!("scenario field `{field}`: {problem}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Scenario::load`] with `--set` assignments as a user writes them.
    fn with_sets(path: &Path, sets: &[String]) -> Result<Scenario> {
        let sets: Vec<Setting> = (sets.iter())
            .map(|s| s.parse())
            .collect::<Result<_, String>>()
            .map_err(anyhow::Error::msg)?;
        Scenario::load(path, &sets)
    }

    /// `BASE` with settings given as on the command line.
    fn base_with(sets: &[&str]) -> Result<Scenario> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        with_sets(&write(BASE), &sets)
    }

    /// A scenario file of its own for each call: tests run in parallel, and one rewriting
    /// a file another is reading would hand it half a scenario.
    fn write(text: &str) -> std::path::PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("scenario-{}-{n}.toml", std::process::id(),));
        std::fs::write(&p, text).unwrap();
        p
    }

    const BASE: &str = r#"
name = "t"
duration = "60s"
sides = ["sv1"]
[network]
block_interval = "30s"
hashrate_share = 0.5
[link]
rtt_ms = 100
[miners]
count = 2
shares_per_min = 10
"#;

    #[test]
    fn loads_with_defaults_and_overrides() {
        let p = write(BASE);
        let s = with_sets(
            &p,
            &[
                "network.block_interval=10s".into(),
                "link.rtt_ms=145".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.network.block_interval, Duration::from_secs(10));
        assert_eq!(s.link.rtt_ms, 145.0);
        assert_eq!(s.pool.job_refresh, Duration::from_secs(30));
        assert!((s.miner_hashrate() - 10.0 / 60.0 * 2000.0).abs() < 1e-9);
    }

    #[test]
    fn bad_input_names_the_field() {
        let p = write(BASE);
        let err = |o: &str| format!("{:#}", with_sets(&p, &[o.to_string()]).unwrap_err());
        assert!(err("link.rtt_ms=fast").contains("link.rtt_ms"));
        assert!(err("network.hashrate_share=2").contains("network.hashrate_share"));
        assert!(err("network.blok_interval=1s").contains("blok_interval"));
        assert!(err("network.block_interval=soon").contains("network.block_interval"));
        assert!(err("sides=[\"sv9\"]").contains("sv9"));
        assert!(err("sides=[\"sv2\"]").contains("unknown side"));
        assert!(err("sides=[\"sv1\", \"sv1\"]").contains("named twice"));
        assert!(err("link.rtt_ms.x=1").contains("link.rtt_ms"));
        assert!(err("network.block_interval=100ms").contains("lengthen"));
        let node = |extra: &str| {
            format!("node = {{ url = \"http://127.0.0.1:8332\", rpc_user = \"u\", rpc_password = \"p\", zmq = \"tcp://127.0.0.1:28332\"{extra} }}")
        };
        assert!(with_sets(&p, &[node("")]).is_ok());
        assert!(err(&node(", chain = \"mainnet\"")).contains("node.chain"));
        assert!(err(&node(", port = 1")).contains("port"));
        assert!(err("node = { url = \"127.0.0.1:8332\", rpc_user = \"u\", rpc_password = \"p\", zmq = \"tcp://127.0.0.1:28332\" }").contains("node.url"));
        let sides = |list: &str| format!("sides={list}");
        let c = with_sets(&p, &[node(""), sides(r#"["sv1", "sv2-c"]"#)]);
        assert!(format!("{:#}", c.unwrap_err()).contains("scenario field `node.ipc`"));
        let with_ipc = node(", ipc = \"/n/regtest/node.sock\"");
        assert!(with_sets(
            &p,
            &[with_ipc.clone(), sides(r#"["sv1", "sv2-c", "sv2-d"]"#)]
        )
        .is_ok());
        assert!(with_sets(&p, &[with_ipc, sides(r#"["sv2-a", "sv2-b"]"#)]).is_ok());
        let a = with_sets(&p, &[node(""), sides(r#"["sv2-a"]"#)]);
        assert!(format!("{:#}", a.unwrap_err()).contains("scenario field `node.ipc`"));
        // A Template Provider of the user's serves sides C and D over TDP only.
        let tp = r#"roles.template_provider.command="/opt/sv2-tp/bin/sv2-tp -debug=sv2""#;
        assert!(with_sets(&p, &[tp.into(), sides(r#"["sv1", "sv2-c"]"#)]).is_ok());
        let problem = |o: &[String]| format!("{:#}", with_sets(&p, o).unwrap_err());
        let no_side = problem(&[tp.into(), sides(r#"["sv1", "sv2-a"]"#)]);
        assert!(
            no_side.contains("roles.template_provider.command") && no_side.contains("sv2-c"),
            "{no_side}"
        );
        let over_ipc = problem(&[
            tp.into(),
            sides(r#"["sv2-d"]"#),
            r#"sv2.template_provider="ipc""#.into(),
        ]);
        assert!(over_ipc.contains("sv2.template_provider"), "{over_ipc}");
        let unknown = problem(&[r#"sv2.template_provider="rpc""#.into()]);
        assert!(
            unknown.contains("sv2.template_provider") && unknown.contains("`tdp` or `ipc`"),
            "{unknown}"
        );
        let empty = problem(&[
            r#"roles.template_provider.command=" ""#.into(),
            sides(r#"["sv2-d"]"#),
        ]);
        assert!(empty.contains("roles.template_provider.command"), "{empty}");
    }

    /// `[node] program`: a Core the run starts. Its miners hash for their share of the
    /// signet's blocks, worked by hand: difficulty(1e0377ae) = 65535 / (227246 * 256) =
    /// 0.00112652, times 2^32 (difficulty 1's hashes, as shares count them) = 4,838,348
    /// hashes a block; half of them every 30 s is 80,639 H/s; 2 miners at 10 shares a
    /// minute make 1/3 share a second, so 241,917 hashes a share. Fields of a node
    /// of yours beside it, or a program that is no file, are named.
    #[test]
    fn a_started_core_sets_the_miners_work_and_refuses_a_reached_nodes_fields() {
        let p = write(BASE);
        let exe = std::env::current_exe().unwrap();
        let program = format!("node.program={:?}", exe.display().to_string());
        let s = with_sets(&p, std::slice::from_ref(&program)).unwrap();
        assert!(matches!(s.node, Some(RealNode::Started(ref c)) if c.program == exe));
        let per_share = s.miners.hashes_per_share;
        assert!((per_share - 241_917.0).abs() < 5.0, "{per_share}");
        let per_block = crate::chain::Chain::Signet.hashes_per_block();
        assert!((per_block - 4_838_348.0).abs() < 50.0, "{per_block}");
        let err = |o: &[String]| format!("{:#}", with_sets(&p, o).unwrap_err());
        let with_url = err(&[program.clone(), "node.url=\"http://x\"".into()]);
        assert!(
            with_url.contains("`url` is for a node of yours"),
            "{with_url}"
        );
        let nowhere = err(&["node.program=\"/nowhere/bitcoin-node\"".into()]);
        assert!(
            nowhere.contains("scenario field `node.program`"),
            "{nowhere}"
        );
        let all_ours = err(&[program, "network.hashrate_share=1".into()]);
        assert!(all_ours.contains("network.hashrate_share"), "{all_ours}");
    }

    /// Regular arrivals are named in the run's plan with what they change; Poisson ones,
    /// the default, as before; a kind the scenario cannot have names the field.
    #[test]
    fn regular_arrivals_are_said_in_the_plan_and_an_unknown_kind_names_the_field() {
        let load = base_with;
        let poisson = load(&[]).unwrap();
        assert_eq!(poisson.network.arrivals, Arrivals::Poisson);
        assert!(
            poisson.plan()[1].contains("on average"),
            "{:?}",
            poisson.plan()
        );
        let regular = load(&[
            r#"network.arrivals="regular""#,
            "network.block_interval=20s",
            "network.hashrate_share=0.3",
        ])
        .unwrap();
        let plan = &regular.plan()[1];
        assert!(
            plan.contains("one every 28.57 s") && plan.contains("not the network's"),
            "{plan}"
        );
        let bad = format!("{:#}", load(&[r#"network.arrivals="steady""#]).unwrap_err());
        assert!(bad.contains("arrivals") && bad.contains("regular"), "{bad}");
        // A node the run only reaches has its own network's blocks: nothing to pace.
        let reached = format!(
            "{:#}",
            load(&[
                r#"network.arrivals="regular""#,
                r#"sides=["sv1"]"#,
                r#"node={url="http://127.0.0.1:8332", rpc_user="u", rpc_password="p", zmq="tcp://127.0.0.1:28332"}"#,
            ])
            .unwrap_err()
        );
        assert!(
            reached.contains("scenario field `network.arrivals`"),
            "{reached}"
        );
    }

    /// Bitcoin Core v32's interface is refused where a pinned SRI role would call v31's
    /// submitSolution on it, and taken where none does.
    #[test]
    fn a_v32_node_is_refused_to_sides_that_would_submit_with_v31() {
        let load = base_with;
        let v32 = load(&["network.mining_ipc=32", r#"sides=["sv1","sv2-c"]"#]).unwrap();
        assert_eq!(v32.network.mining_ipc, crate::network::MiningInterface::V32);
        let problem = |sets: &[&str]| format!("{:#}", load(sets).unwrap_err());
        let a = problem(&["network.mining_ipc=32", r#"sides=["sv1","sv2-a","sv2-c"]"#]);
        assert!(
            a.contains("network.mining_ipc") && a.contains(r#"["sv2-a"]"#),
            "{a}"
        );
        let c = problem(&[
            "network.mining_ipc=32",
            r#"sides=["sv1","sv2-c"]"#,
            r#"sv2.template_provider="ipc""#,
        ]);
        assert!(c.contains(r#"["sv2-c"]"#), "{c}");
        let other = problem(&["network.mining_ipc=30"]);
        assert!(other.contains("31 (Bitcoin Core v31) or 32"), "{other}");
        let default = load(&[]).unwrap();
        assert_eq!(
            default.network.mining_ipc,
            crate::network::MiningInterface::V31
        );
    }

    #[test]
    fn an_attack_is_parsed_into_its_kind_and_bad_ones_are_refused_naming_the_field() {
        let p = write(BASE);
        let load = |attack: &str| with_sets(&p, &[format!("link.attack={{{attack}}}")]);
        let problem = |attack: &str| format!("{:#}", load(attack).unwrap_err());
        let hijack = load(r#"kind = "hijack-worker", at = "10s""#).unwrap();
        assert_eq!(
            hijack.link.attack,
            Some(LinkAttack {
                attack: crate::attack::Attack::HijackWorker {
                    account: DEFAULT_ATTACKER_ACCOUNT.into()
                },
                at: Duration::from_secs(10),
            })
        );
        let tamper = load(r#"kind = "tamper", at = "10s", every_bytes = 5000"#).unwrap();
        let early = problem(r#"kind = "tamper", at = "2s""#);
        assert!(early.contains("link.attack.at"), "{early}");
        assert_eq!(
            tamper.link.attack.unwrap().attack,
            crate::attack::Attack::Tamper { every_bytes: 5000 }
        );
        let unknown = problem(r#"kind = "ddos", at = "10s""#);
        assert!(
            unknown.contains("ddos") && unknown.contains("hijack-worker"),
            "{unknown}"
        );
        let late = problem(r#"kind = "tamper", at = "60s""#);
        assert!(late.contains("link.attack.at"), "{late}");
        let spaced = problem(r#"kind = "hijack-worker", at = "1s", account = "a b""#);
        assert!(spaced.contains("account"), "{spaced}");
        let mixed = problem(r#"kind = "hijack-worker", at = "1s", every_bytes = 9"#);
        assert!(mixed.contains("every_bytes"), "{mixed}");
        let zero = problem(r#"kind = "tamper", at = "1s", every_bytes = 0"#);
        assert!(zero.contains("every_bytes"), "{zero}");
        let typo = problem(r#"kind = "tamper", at = "1s", evry_bytes = 9"#);
        assert!(typo.contains("evry_bytes"), "{typo}");
        let job = load(r#"kind = "hijack-job", at = "10s", payout = "0014aabb""#).unwrap();
        assert_eq!(
            job.link.attack.unwrap().attack,
            crate::attack::Attack::HijackJob {
                payout: vec![0x00, 0x14, 0xaa, 0xbb]
            }
        );
        let odd = problem(r#"kind = "hijack-job", at = "10s", payout = "0014a""#);
        assert!(odd.contains("payout"), "{odd}");
        let foreign = problem(r#"kind = "inject", at = "10s", payout = "00""#);
        assert!(
            foreign.contains("`payout`") && foreign.contains("inject"),
            "{foreign}"
        );
    }

    #[test]
    fn faults_are_parsed_and_bad_ones_are_refused_naming_the_field() {
        let p = write(BASE);
        let load = |faults: &str| with_sets(&p, &[format!("faults=[{faults}]")]);
        let problem = |faults: &str| format!("{:#}", load(faults).unwrap_err());
        let drop = load(r#"{target="pool", kind="drop", at="10s", lasts="20s"}"#).unwrap();
        assert_eq!(
            drop.faults,
            vec![Fault {
                target: FaultTarget::Pool,
                kind: probe::event::FaultKind::Drop,
                at: Duration::from_secs(10),
                lasts: Duration::from_secs(20),
            }]
        );
        let late = problem(r#"{target="pool", kind="stall", at="50s", lasts="20s"}"#);
        assert!(late.contains("faults[0].at"), "{late}");
        let empty = problem(r#"{target="pool", kind="drop", at="5s", lasts="0s"}"#);
        assert!(empty.contains("faults[0].lasts"), "{empty}");
        let jds = problem(r#"{target="jds", kind="drop", at="5s", lasts="5s"}"#);
        assert!(
            jds.contains("faults[0].target") && jds.contains("sv2-a"),
            "{jds}"
        );
        let wan = load(r#"{target="link", kind="drop", at="5s", lasts="5s"}"#).unwrap();
        assert_eq!(wan.faults[0].target, FaultTarget::Link);
        let unknown = problem(r#"{target="node", kind="drop", at="5s", lasts="5s"}"#);
        assert!(
            unknown.contains("node") && unknown.contains("pool"),
            "{unknown}"
        );
        let kind = problem(r#"{target="pool", kind="flap", at="5s", lasts="5s"}"#);
        assert!(kind.contains("flap") && kind.contains("stall"), "{kind}");
        // The firmware timers have ESP-Miner's defaults.
        let timers = load("").unwrap().miners.reconnect();
        assert_eq!(timers, mining::farm::Reconnect::default());
        assert_eq!(timers.retry_every, Duration::from_secs(5));
        assert_eq!(timers.failover_after, 3);
        assert_eq!(timers.primary_check_every, Duration::from_secs(60));
        let with = |o: &str| with_sets(&p, &[o.to_string()]);
        assert!(with("backup.pool=true").unwrap().backup.pool);
        let never = format!("{:#}", with("miners.failover_after=0").unwrap_err());
        assert!(never.contains("miners.failover_after"), "{never}");
        let typo = format!("{:#}", with("backup.pools=true").unwrap_err());
        assert!(typo.contains("pools"), "{typo}");
    }

    #[test]
    fn a_farm_of_unequal_miners_is_drawn_once_from_the_seed() {
        let p = write(BASE);
        let load = |o: &[&str]| {
            let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
            with_sets(&p, &o)
        };
        let fixed = load(&["miners.count=1000"]).unwrap();
        assert!(fixed.per_miner().is_empty(), "alike unless asked");
        for spread in [
            r#"miners.hashrate={distribution="lognormal", sigma=0.8}"#,
            r#"miners.hashrate={distribution="zipf", exponent=1.0}"#,
        ] {
            let s = load(&["miners.count=1000", spread]).unwrap();
            let f = s.per_miner().hashrate_factor;
            assert_eq!(f.len(), 1000);
            let mean = f.iter().sum::<f64>() / 1000.0;
            assert!(
                (mean - 1.0).abs() < 1e-9,
                "{spread}: the nominal rate is the mean"
            );
            let (lo, hi) = f
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
            assert!(hi / lo > 5.0, "{spread}: unequal machines ({lo}..{hi})");
            assert_eq!(s.per_miner(), s.per_miner(), "the same draws every time");
            let other_seed = load(&["miners.count=1000", spread, "seed=2"]).unwrap();
            assert_ne!(other_seed.per_miner(), s.per_miner());
        }
        // Zipf ranks are dealt at random: the biggest machine is not simply miner 0.
        let zipf = load(&[
            "miners.count=1000",
            r#"miners.hashrate={distribution="zipf", exponent=1.0}"#,
        ])
        .unwrap()
        .per_miner()
        .hashrate_factor;
        assert!(zipf[0] < zipf.iter().cloned().fold(0.0, f64::max));

        let lan = load(&[
            "miners.count=1000",
            r#"miners.lan_delay_ms={distribution="uniform", min=0.5, max=2.5}"#,
        ])
        .unwrap()
        .per_miner();
        assert!(
            lan.hashrate_factor.is_empty(),
            "one spread leaves the other alone"
        );
        assert!(lan.lan_delay_us.iter().all(|d| (500..=2500).contains(d)));
        let mean = lan.lan_delay_us.iter().sum::<u64>() as f64 / 1000.0;
        assert!((1400.0..=1600.0).contains(&mean), "{mean} us");
        let fixed = load(&[r#"miners.lan_delay_ms={distribution="fixed", value=3}"#])
            .unwrap()
            .per_miner();
        assert!(fixed.lan_delay_us.iter().all(|d| *d == 3000));
        let lognormal = load(&[
            "miners.count=1001",
            r#"miners.lan_delay_ms={distribution="lognormal", median=1.0, sigma=0.5}"#,
        ])
        .unwrap()
        .per_miner();
        let mut sorted = lognormal.lan_delay_us.clone();
        sorted.sort();
        assert!(
            (850..=1150).contains(&sorted[500]),
            "median {} us",
            sorted[500]
        );

        let err = |o: &str| format!("{:#}", load(&[o]).unwrap_err());
        assert!(
            err(r#"miners.hashrate={distribution="lognormal", sigma=-1}"#)
                .contains("miners.hashrate")
        );
        assert!(err(r#"miners.hashrate={distribution="pareto"}"#).contains("pareto"));
        assert!(
            err(r#"miners.hashrate={distribution="zipf", exponent=1, sigma=2}"#).contains("sigma")
        );
        assert!(
            err(r#"miners.lan_delay_ms={distribution="uniform", min=3, max=1}"#)
                .contains("miners.lan_delay_ms")
        );
        assert!(
            err(r#"miners.lan_delay_ms={distribution="fixed", value=5000}"#)
                .contains("miners.lan_delay_ms")
        );
    }

    #[test]
    fn a_side_runs_its_configuration_with_or_without_a_label() {
        assert_eq!(Config::of_side("sv2-a"), Some(Config::Sv2A));
        assert_eq!(Config::of_side("sv1-b"), Some(Config::Sv1));
        assert_eq!(Config::of_side("sv2-d-2"), Some(Config::Sv2D));
        for bad in ["sv2", "sv1-", "sv2-e", "sv1b", "sv1-b c", "SV1"] {
            assert_eq!(Config::of_side(bad), None, "{bad}");
        }
    }
}
