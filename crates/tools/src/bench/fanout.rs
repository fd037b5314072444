//! `stratum-bench bench fanout`: how long a sender takes to get one new job to every
//! miner (FastProxy, Zhong et al.: 6,030 us for 225 miners over TCP, 26.8 us per miner).
//!
//! N miners sit connected in separate fleet processes; a new block makes the sender (the
//! built-in SV1 pool, SRI's translator, the SRI pool, or anyone's SV1 pool on a regtest
//! node the bench can mine on) send work on it to all of them; each miner records when it
//! arrived, and the block's hash ties each receipt to its round.
//! Beside it, the machine's floor: a bare loop of one `write` per already-connected
//! loopback socket whose reader waits in another process, as the miners do, timed after
//! each of the sender's rounds with its miners still connected, so both see the same
//! machine (and the same loop to sockets nobody waits on, the kernel's write alone).

use analysis::bench::{
    account, Deliveries, FanoutMode, FanoutResult, FanoutVia, FloorCalibration, PairedRound,
    FANOUT_CALIBRATION_FILE, FANOUT_FILE,
};
use anyhow::{Context, Result};
use harness::builtin::{start_builtin, start_sri_pool, start_template_provider, start_translator};
use harness::process::{stop_all, Launcher, RoleProcess};
use harness::roles::RoleSpec;
use mining::farm::Machines;
use probe::{Dist, Event, Record};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct FanoutOptions {
    pub miners: Vec<u32>,
    pub via: FanoutVia,
    pub mode: FanoutMode,
    /// Channels per connection in `sv2-group` mode.
    pub group_size: u32,
    /// New blocks (fan-outs) measured per miner count.
    pub rounds: usize,
    /// The regtest node behind a pool given by address, where each round's block is mined.
    pub node: Option<ForeignNode>,
    /// With `sv2-pool` or `translator`: a build of `pool_sv2` in place of the linked one.
    pub pool_binary: Option<sri::release::Build>,
    pub out: PathBuf,
    pub launcher: Launcher,
}

/// A bitcoind-compatible node's RPC.
pub struct ForeignNode {
    pub url: String,
    pub user: String,
    pub password: String,
}

pub async fn run(opts: FanoutOptions) -> Result<Vec<FanoutResult>> {
    let mut results = Vec::new();
    anyhow::ensure!(
        opts.rounds > 0,
        "no rounds: a fan-out is measured over at least one"
    );
    // Every count is checked before anything starts.
    let per_connection = match opts.mode {
        FanoutMode::Sv2Group => opts.group_size,
        FanoutMode::Tcp | FanoutMode::UdpBroadcast => 1,
    };
    let largest = opts
        .miners
        .iter()
        .copied()
        .max()
        .context("no miner count")?;
    // What a fleet can hold does not depend on the count; the largest count is the check.
    let fleet_size = harness::limits::fanout_fleet_size(largest, per_connection)?;
    for &n in &opts.miners {
        let dir = opts.out.join(format!("miners-{n}"));
        clear(&dir)?;
        let connections = n.div_ceil(per_connection);
        let mut roles = Vec::new();
        let outcome = measure(&opts, n, fleet_size.miners, connections, &dir, &mut roles).await;
        stop_all(&mut roles).await;
        let mut r = outcome?;
        r.floor_miners = connections;
        // The kernel's write alone: both ends in this process, nobody waiting.
        let bare_sockets = connections.min(fleet_size.sockets);
        let bare = on_sender_cpus(&opts.launcher, move || {
            bare_floor(bare_sockets, FLOOR_WRITE)
        })
        .await?;
        r.bare_floor_us_per_miner = Some(per_miner(bare, connections, n));
        eprintln!(
            "{n} miners: last miner p50 {} ms, {} us per miner (floor {:.2} us), {} missing",
            r.last_miner_ms
                .p50
                .map_or("-".into(), |v| format!("{v:.3}")),
            r.us_per_miner.map_or("-".into(), |v| format!("{v:.2}")),
            r.floor_us_per_miner,
            r.missing
        );
        results.push(r);
    }
    std::fs::write(
        opts.out.join(FANOUT_FILE),
        serde_json::to_string_pretty(&results)? + "\n",
    )?;
    Ok(results)
}

/// Where the miners connect, and how a round's start is seen.
struct Sender {
    rpc: bitcoind_rpc::RpcClient,
    /// The process whose CPU is the fan-out's, when it is one of ours.
    role: Option<&'static str>,
    /// The SRI pool's key, for SV2 miners.
    sv2_key: Option<stratum_apps::key_utils::Secp256k1PublicKey>,
    miners_connect: std::net::SocketAddr,
    /// Each new block's start, by its hash (the prev hash of the miners' jobs on it).
    origin: Origin,
}

enum Origin {
    /// The SV1 pool's clean job broadcast (its own event).
    PoolJob,
    /// The SetNewPrevHash passing the tap in front of the translator.
    TapRelayed,
    /// The node's new tip: the SRI pool's own moment cannot be seen, so the node's tip and
    /// its hop to the pool are inside every time.
    NodeTip,
    /// The bench asking a node it does not run for the block: its mining, its notice to
    /// the pool and the pool's reaction are inside every time.
    BlockAsked,
}

impl Origin {
    /// `(new block hash, when the sender had it)` from the sender's events, or for a
    /// foreign node from the blocks the bench `asked` for.
    fn starts(&self, dir: &Path, from_ns: u64, asked: &[(String, u64)]) -> Vec<(String, u64)> {
        let file = match self {
            Origin::PoolJob => "pool",
            Origin::TapRelayed => "tap",
            Origin::NodeTip => "node",
            Origin::BlockAsked => return asked.to_vec(),
        };
        let mut first: HashMap<String, u64> = HashMap::new();
        for r in read_lenient(&dir.join(format!("events/{file}.jsonl"))) {
            let hash = match (&r.event, self) {
                (
                    Event::JobBroadcast {
                        prev_hash,
                        clean: true,
                        ..
                    },
                    Origin::PoolJob,
                ) => prev_hash,
                (Event::NewPrevHashRelayed { prev_hash, .. }, Origin::TapRelayed) => prev_hash,
                (Event::TipChanged { hash, .. }, Origin::NodeTip) => hash,
                _ => continue,
            };
            if r.t_ns >= from_ns {
                let t = first.entry(hash.clone()).or_insert(r.t_ns);
                *t = (*t).min(r.t_ns);
            }
        }
        let mut starts: Vec<(String, u64)> = first.into_iter().collect();
        starts.sort_by_key(|(_, t)| *t);
        starts
    }
}

async fn start_sender(
    opts: &FanoutOptions,
    dir: &Path,
    broadcast: Option<std::net::SocketAddr>,
    roles: &mut Vec<RoleProcess>,
) -> Result<Sender> {
    Ok(match opts.via {
        FanoutVia::Sv1Pool => {
            // Shares out of reach: the miners only listen.
            let builtin = start_builtin(&opts.launcher, dir, 1e9, broadcast, roles).await?;
            Sender {
                rpc: builtin.rpc,
                role: Some("pool"),
                sv2_key: None,
                miners_connect: builtin.pool,
                origin: Origin::PoolJob,
            }
        }
        FanoutVia::Translator => {
            let tp = start_template_provider(&opts.launcher, dir, roles).await?;
            let sender = ("pool", opts.pool_binary.as_ref());
            let pool = start_sri_pool(&opts.launcher, dir, sender, &tp, 1.0, roles).await?;
            let translator = start_translator(&opts.launcher, dir, &pool, roles).await?;
            Sender {
                rpc: pool.rpc,
                role: Some("translator"),
                sv2_key: None,
                miners_connect: translator,
                origin: Origin::TapRelayed,
            }
        }
        FanoutVia::Sv2Pool => {
            let tp = start_template_provider(&opts.launcher, dir, roles).await?;
            let sender = ("pool", opts.pool_binary.as_ref());
            let pool = start_sri_pool(&opts.launcher, dir, sender, &tp, 1.0, roles).await?;
            Sender {
                rpc: pool.rpc,
                role: Some("pool"),
                sv2_key: Some(pool.keys.public),
                miners_connect: pool.pool,
                origin: Origin::NodeTip,
            }
        }
        FanoutVia::Sv1At(pool) => {
            let node = opts
                .node
                .as_ref()
                .context("a pool given by address needs its node's RPC (--node-rpc)")?;
            Sender {
                rpc: regtest_node(node).await?,
                role: None,
                sv2_key: None,
                miners_connect: answering(pool).await?,
                origin: Origin::BlockAsked,
            }
        }
    })
}

/// The RPC of a node the bench may mine on: it answers, and its chain is regtest.
async fn regtest_node(node: &ForeignNode) -> Result<bitcoind_rpc::RpcClient> {
    let rpc = bitcoind_rpc::RpcClient::new(&node.url, &node.user, &node.password);
    let info: serde_json::Value = tokio::time::timeout(
        Duration::from_secs(5),
        rpc.call("getblockchaininfo", serde_json::json!([])),
    )
    .await
    .map_err(|_| anyhow::anyhow!("the node at {} did not answer within 5 s", node.url))?
    .with_context(|| format!("the node at {} does not answer RPC", node.url))?;
    anyhow::ensure!(
        info["chain"] == "regtest",
        "the node at {} is on {}, not regtest: the bench mines a block there each round",
        node.url,
        info["chain"]
    );
    Ok(rpc)
}

/// `pool`, once it accepts a connection (within 5 s).
async fn answering(pool: std::net::SocketAddr) -> Result<std::net::SocketAddr> {
    match tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(pool)).await {
        Ok(Ok(_)) => Ok(pool),
        Ok(Err(e)) => Err(e).with_context(|| format!("no pool answers at {pool}")),
        Err(_) => anyhow::bail!("the pool at {pool} did not accept a connection within 5 s"),
    }
}

/// A fleet of `count` listening miners of the kind the sender serves.
fn fleet_spec(
    sender: &Sender,
    count: u32,
    first: u32,
    broadcast: Option<std::net::SocketAddr>,
    group_size: Option<u32>,
) -> RoleSpec {
    // Connections are spread out a little (a group's members share their leader's).
    let connections = count.div_ceil(group_size.unwrap_or(1));
    let ramp = Duration::from_secs_f64(f64::from(connections) / 2000.0);
    match sender.sv2_key {
        None => RoleSpec::Sv1Miners {
            config: sv1::fleet::FleetConfig {
                backup: None,
                pool: sender.miners_connect,
                machines: Machines {
                    ramp,
                    ..Machines::alike(count, 1.0, 1)
                },
                worker_prefix: format!("fanout-{first}"),
                broadcast,
                suggest_difficulty: None,
            },
        },
        Some(key) => RoleSpec::Sv2Miners {
            config: sv2::fleet::FleetConfig {
                backup: None,
                pool: sender.miners_connect,
                pool_public: key,
                machines: Machines {
                    // Each Noise handshake costs both sides a little CPU.
                    ramp: ramp * 4,
                    ..Machines::alike(count, 1.0, 1)
                },
                user_prefix: format!("fanout-{first}"),
                // Header-only devices: one NewMiningJob per channel, or in groups one
                // NewExtendedMiningJob per connection.
                channel: sv2::fleet::ChannelKind::Standard,
                channels_per_connection: group_size.unwrap_or(1),
            },
        },
    }
}

/// Per miner, what takes `per_write` for each of `connections` serving `n` miners: with
/// channels grouped, one write serves a whole connection's miners.
fn per_miner(per_write: f64, connections: u32, n: u32) -> f64 {
    per_write * f64::from(connections) / f64::from(n.max(1))
}

/// The sender's fan-out to `n` miners over the rounds, and the floor at `connections` (the
/// median of one loop after each round), each round's beside the loop after it.
async fn measure(
    opts: &FanoutOptions,
    n: u32,
    fleet_size: u32,
    connections: u32,
    dir: &Path,
    roles: &mut Vec<RoleProcess>,
) -> Result<FanoutResult> {
    let broadcast = match opts.mode {
        FanoutMode::UdpBroadcast => Some(broadcast_address()?),
        FanoutMode::Tcp | FanoutMode::Sv2Group => None,
    };
    let group_size = (opts.mode == FanoutMode::Sv2Group).then_some(opts.group_size);
    let sender = start_sender(opts, dir, broadcast, roles).await?;
    // The miners, spread over fleet processes that each fit the descriptor limit; fleet
    // `i` numbers its miners from zero, so its receipts are offset by its first miner.
    let mut fleets = Vec::new();
    let mut first = 0u32;
    while first < n {
        let count = fleet_size.min(n - first);
        let name = format!("fleet-{}", fleets.len());
        let spec = fleet_spec(&sender, count, first, broadcast, group_size);
        let (fleet, _) = RoleProcess::spawn(&opts.launcher, dir, &name, &spec).await?;
        roles.push(fleet);
        fleets.push((dir.join(format!("events/{name}.jsonl")), first));
        first += count;
    }
    // Every miner has its first job before anything is measured.
    wait_for_work(&fleets, n, opts, dir).await?;
    // One write per connection, as the sender makes: its readers in a process of their
    // own, placed as the fleets are.
    let mut floor =
        Some(WaitedFloor::connect(&opts.launcher, dir, "floor-peers", connections, roles).await?);
    let mut floor_loops = Vec::with_capacity(opts.rounds);
    let mut sender_cpu = || {
        let role = sender.role?;
        harness::process::meter_of(roles, role)?.sample()
    };
    let sender_cpu_before = sender_cpu();
    let t_start = probe::mono_ns();
    let mut asked = Vec::with_capacity(opts.rounds);
    // Each round's blocks, in order: its fan-out is the one on them.
    let mut round_blocks = Vec::with_capacity(opts.rounds);
    for _ in 0..opts.rounds {
        let t = probe::mono_ns();
        let hashes: Vec<String> = sender
            .rpc
            .call(
                "generatetoaddress",
                serde_json::json!([1, "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"]),
            )
            .await
            .context("cannot trigger a new block")?;
        let pause = Instant::now() + round_pause(n);
        // The floor's loop once every miner has the round's work (or a bound has passed:
        // the accounting then counts who missed it), then time for its readers to read
        // before the next round begins.
        let straggle = pause + straggle_bound(n);
        tokio::time::sleep_until(pause.into()).await;
        while miners_with_work(&fleets, Some(&hashes)) < n && Instant::now() < straggle {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        round_blocks.push(hashes.clone());
        asked.extend(hashes.into_iter().map(|h| (h, t)));
        let (timed, us) = (floor.take().context("the floor")?)
            .time_a_loop(&opts.launcher)
            .await?;
        floor_loops.push(us);
        tokio::time::sleep(timed.settle).await;
        floor = Some(timed);
    }
    // The median as the sender's writes take theirs.
    let floor_us = Dist::of(&floor_loops)
        .p50
        .context("no round, so no floor")?;
    let sender_cpu_after = sender_cpu();

    // A sender that polls for blocks (NOMP, every 500 ms) may still be sending the last
    // one: wait for every miner, up to the bound, before counting the ones that never got
    // it.
    let straggle = Instant::now() + straggle_bound(n);
    let rounds = loop {
        let starts = sender.origin.starts(dir, t_start, &asked);
        let rounds = account(&starts, &receipts(&fleets), n);
        if rounds.iter().all(|r| r.missing == 0) || Instant::now() >= straggle {
            break rounds;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let deliveries = Deliveries::of(&rounds, n);
    let writes = match (opts.via, opts.mode) {
        (FanoutVia::Sv1Pool, FanoutMode::Tcp) => sender_writes(dir, t_start),
        _ => Vec::new(),
    };
    let writes_ms: Vec<f64> = writes.iter().map(|(_, ms)| *ms).collect();
    let writes_dist = Dist::of(&writes_ms);
    let sender_per_miner = |ms: f64| ms * 1e3 / f64::from(n);
    let paired_rounds = (round_blocks.iter().zip(&floor_loops))
        .filter_map(|(blocks, &floor)| {
            // The round's fan-out: the clean job on its block, however late it came.
            let (_, ms) = writes.iter().find(|(tip, _)| blocks.contains(tip))?;
            Some(PairedRound {
                sender_us_per_miner: sender_per_miner(*ms),
                floor_us_per_miner: per_miner(floor, connections, n),
            })
        })
        .collect();
    let result = FanoutResult {
        via: opts.via,
        pool_build: (opts.pool_binary.as_ref()).map(|b| format!("{b} ({})", b.program.display())),
        mode: opts.mode,
        miners: n,
        rounds: rounds.len(),
        us_per_miner: deliveries.us_per_miner,
        last_miner_ms: deliveries.last_miner_ms,
        first_miner_ms: deliveries.first_miner_ms,
        sender_us_per_miner: writes_dist.p50.map(sender_per_miner),
        sender_writes_ms: writes_dist,
        delivery_ms: deliveries.delivery_ms,
        missing: deliveries.missing,
        // The sender's CPU over the rounds (it is otherwise idle), per fan-out.
        sender_cpu_ms_per_round: match (sender_cpu_before, sender_cpu_after) {
            // Zero ticks is below the kernel's 10 ms resolution, not zero: left unknown.
            (Some(before), Some(after)) if !rounds.is_empty() && after.cpu_s > before.cpu_s => {
                Some((after.cpu_s - before.cpu_s) * 1e3 / rounds.len() as f64)
            }
            _ => None,
        },
        floor_us_per_miner: per_miner(floor_us, connections, n),
        bare_floor_us_per_miner: None,
        floor_write_bytes: Some(FLOOR_WRITE as u32),
        floor_between_rounds: true,
        floor_miners: 0,
        fleets: fleets.len() as u32,
        group_size,
        cpus: opts.launcher.cpus.clone(),
        paired_rounds,
    };
    Ok(result)
}

/// Empties `dir`: events append, so a run before into the same place would count as this
/// one's.
fn clear(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot clear {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// How long a round waits after asking for its block before its floor loop: time for the
/// fan-out to reach `n` miners.
fn round_pause(n: u32) -> Duration {
    Duration::from_millis(1000 + u64::from(n) / 10)
}

/// The round-by-round interval held to identical sides, at each of `miners`: `runs` runs
/// of `rounds` rounds, in each a second floor (its own readers, its own process) standing
/// in for the sender, its loop timed where a sender's fan-out is, a round's pause before
/// the floor's.
pub async fn calibrate(
    miners: &[u32],
    runs: usize,
    rounds: usize,
    out: &Path,
    launcher: &Launcher,
) -> Result<Vec<FloorCalibration>> {
    let largest = miners.iter().copied().max().context("no miner count")?;
    // Both floors' writing ends are this process's: twice the sockets a sender holds.
    if harness::limits::fanout_fleet_size(largest.saturating_mul(2), 1).is_err() {
        anyhow::bail!(
            "--calibrate --miners {largest}: this process holds both floors' sockets, {} file descriptors and more, and this machine allows {} per process",
            u64::from(largest) * 2,
            harness::limits::raise_fd_limit()
        );
    }
    let mut calibrations = Vec::new();
    for &n in miners {
        let dir = out.join(format!("calibration-{n}"));
        clear(&dir)?;
        let mut peers = Vec::new();
        let mut calibration = FloorCalibration {
            miners: n,
            runs: Vec::with_capacity(runs),
        };
        let outcome = async {
            let stand_in = WaitedFloor::connect(launcher, &dir, "stand-in-peers", n, &mut peers);
            let mut stand_in = stand_in.await?;
            let mut floor =
                WaitedFloor::connect(launcher, &dir, "floor-peers", n, &mut peers).await?;
            for run in 0..runs {
                let mut paired = Vec::with_capacity(rounds);
                for _ in 0..rounds {
                    let us_stand_in;
                    (stand_in, us_stand_in) = stand_in.time_a_loop(launcher).await?;
                    tokio::time::sleep(round_pause(n)).await;
                    let us_floor;
                    (floor, us_floor) = floor.time_a_loop(launcher).await?;
                    tokio::time::sleep(floor.settle).await;
                    paired.push(PairedRound {
                        sender_us_per_miner: us_stand_in,
                        floor_us_per_miner: us_floor,
                    });
                }
                calibration.runs.push(paired);
                eprintln!("{n} miners: A/A run {} of {runs} done", run + 1);
            }
            anyhow::Ok(())
        }
        .await;
        stop_all(&mut peers).await;
        // Finished runs are kept whatever stopped the rest.
        if !calibration.runs.is_empty() {
            calibrations.push(calibration);
            std::fs::write(
                out.join(FANOUT_CALIBRATION_FILE),
                serde_json::to_string_pretty(&calibrations)? + "\n",
            )?;
        }
        outcome?;
    }
    Ok(calibrations)
}

/// Every miner's receipts of work, `(miner, prev_hash, t_ns)`, from the fleets' event
/// files: fleet `i` numbers its miners from zero, so its receipts are offset by its first.
fn receipts(fleets: &[(PathBuf, u32)]) -> Vec<(u32, String, u64)> {
    (fleets.iter())
        .flat_map(|(events, offset)| {
            read_lenient(events)
                .into_iter()
                .filter_map(move |r| match r.event {
                    Event::JobReceived {
                        miner, prev_hash, ..
                    } => Some((miner + offset, prev_hash, r.t_ns)),
                    _ => None,
                })
        })
        .collect()
}

/// How long past a round's pause its last miners are waited for: a sender that learns of
/// blocks by polling, on a loaded machine, may still be sending.
fn straggle_bound(n: u32) -> Duration {
    Duration::from_secs(10 + u64::from(n) / 200)
}

/// How many miners have had work, on one of `blocks` when given.
fn miners_with_work(fleets: &[(PathBuf, u32)], blocks: Option<&[String]>) -> u32 {
    let have: HashSet<u32> = (receipts(fleets).into_iter())
        .filter(|(_, prev_hash, _)| blocks.is_none_or(|b| b.contains(prev_hash)))
        .map(|(m, _, _)| m)
        .collect();
    have.len() as u32
}

/// Waits until each of the `n` miners has had a job, within a minute and a bit more for
/// many miners.
async fn wait_for_work(
    fleets: &[(PathBuf, u32)],
    n: u32,
    opts: &FanoutOptions,
    dir: &Path,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60 + u64::from(n) / 200);
    loop {
        let have = miners_with_work(fleets, None);
        if have == n {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {have} of {n} miners got work from the {} (see {}/logs)",
            opts.via.name(),
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Our SV1 pool's own fan-out times, `(prev_hash, ms)` in broadcast order: from each clean
/// job's broadcast event to its last connection write returning, matched by job id.
fn sender_writes(dir: &Path, from_ns: u64) -> Vec<(String, f64)> {
    let events = read_lenient(&dir.join("events/pool.jsonl"));
    let written: HashMap<&str, u64> = events
        .iter()
        .filter_map(|r| match &r.event {
            Event::JobWritten { job_id, .. } => Some((job_id.as_str(), r.t_ns)),
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter(|r| r.t_ns >= from_ns)
        .filter_map(|r| match &r.event {
            Event::JobBroadcast {
                job_id,
                prev_hash,
                clean: true,
                ..
            } => written
                .get(job_id.as_str())
                .map(|t| (prev_hash.clone(), t.saturating_sub(r.t_ns) as f64 / 1e6)),
            _ => None,
        })
        .collect()
}

/// The loopback broadcast address on a UDP port free now.
fn broadcast_address() -> Result<std::net::SocketAddr> {
    let probe = std::net::UdpSocket::bind("127.0.0.1:0").context("no free UDP port")?;
    let port = probe.local_addr()?.port();
    Ok(std::net::SocketAddr::from(([127, 255, 255, 255], port)))
}

/// Events of a file still being written: whole lines only.
fn read_lenient(path: &Path) -> Vec<Record> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Bytes the floor writes a connection: about a clean `mining.notify`.
const FLOOR_WRITE: usize = 600;
/// Loops a floor is measured over; its median is the floor.
const FLOOR_LOOPS: usize = 7;

/// The floor a sender is held to: `n` loopback connections whose readers wait in epoll in
/// a process of their own (`floor-peers`, on the fleets' CPUs under `--isolate`), timed
/// one `write` of a job's bytes to each in a bare loop (on the sender's CPUs). Each write
/// wakes a reader, as each of the sender's does.
struct WaitedFloor {
    servers: Vec<std::net::TcpStream>,
    /// Well past the time the readers take to read a loop's writes.
    settle: Duration,
}

impl WaitedFloor {
    /// Connects the `n` readers (`floor-peers`, added to `peers`), and lets them settle.
    async fn connect(
        launcher: &Launcher,
        dir: &Path,
        name: &str,
        n: u32,
        peers: &mut Vec<RoleProcess>,
    ) -> Result<WaitedFloor> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let spec = RoleSpec::FloorPeers {
            config: harness::floor_peers::FloorPeersConfig {
                connect: listener.local_addr()?,
                connections: n,
            },
        };
        // Accepted as they come: a full backlog would stall the peers' connects. A thread
        // of its own, so a peers process that never connects leaves it blocked, not the
        // bench.
        let accepting = std::thread::spawn(move || -> Result<Vec<std::net::TcpStream>> {
            (0..n)
                .map(|_| {
                    let (s, _) = listener.accept().context("floor: accept")?;
                    s.set_nodelay(true)?;
                    Ok(s)
                })
                .collect()
        });
        let (process, _) = RoleProcess::spawn(launcher, dir, name, &spec).await?;
        peers.push(process);
        // Every peer has connected (it said so): the accepting thread is done or nearly.
        let servers = tokio::task::spawn_blocking(move || accepting.join())
            .await?
            .map_err(|_| anyhow::anyhow!("the floor's accepting thread panicked"))??;
        let settle = Duration::from_millis(100) + Duration::from_micros(u64::from(n) * 30);
        tokio::time::sleep(settle).await;
        Ok(WaitedFloor { servers, settle })
    }

    /// One loop, µs a write; the readers then read it on their own (wait `settle` before
    /// anything else is timed).
    async fn time_a_loop(mut self, launcher: &Launcher) -> Result<(WaitedFloor, f64)> {
        on_sender_cpus(launcher, move || {
            let us = write_loop(&mut self.servers, &[b'x'; FLOOR_WRITE])?;
            Ok((self, us))
        })
        .await
    }
}

/// Runs `f` on a thread of its own, kept on the sender's CPUs under `--isolate` (a floor's
/// loop, under the conditions the sender's writes had).
async fn on_sender_cpus<T: Send + 'static>(
    launcher: &Launcher,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let cpus = launcher.cpus.as_ref().map(|c| c.under_test.clone());
    let thread = std::thread::spawn(move || {
        if let Some(cpus) = &cpus {
            harness::process::pin_this_thread(cpus)?;
        }
        f()
    });
    tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("a floor's thread panicked"))?
}

/// The kernel's write alone: `n` loopback connections with both ends here and nobody
/// waiting on them, one `write` of `len` bytes to each in a bare loop; per socket, in
/// microseconds.
pub fn bare_floor(n: u32, len: usize) -> Result<f64> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let mut clients = Vec::with_capacity(n as usize);
    let mut servers = Vec::with_capacity(n as usize);
    for _ in 0..n {
        clients.push(std::net::TcpStream::connect(addr).context("floor: connect")?);
        let (s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        servers.push(s);
    }
    for c in &clients {
        c.set_nonblocking(true)?;
    }
    let mut buf = vec![0u8; 64 * 1024];
    // Drained by hand: nobody else reads them.
    write_loops(&mut servers, len, || {
        for c in clients.iter_mut() {
            while let Ok(k) = c.read(&mut buf) {
                if k == 0 {
                    break;
                }
            }
        }
        Ok(())
    })
}

/// A floor's measure: `FLOOR_LOOPS` bare loops of one `write` of `len` bytes to each of
/// `servers`, `empty` (untimed) before each so every loop writes into empty buffers; the
/// median loop, per socket, in microseconds.
fn write_loops(
    servers: &mut [std::net::TcpStream],
    len: usize,
    mut empty: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let msg = vec![b'x'; len];
    let mut times = Vec::with_capacity(FLOOR_LOOPS);
    for _ in 0..FLOOR_LOOPS {
        empty()?;
        times.push(write_loop(servers, &msg)?);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// One bare loop of one `write` of `msg` to each of `servers`: per socket, in µs.
fn write_loop(servers: &mut [std::net::TcpStream], msg: &[u8]) -> Result<f64> {
    let t = Instant::now();
    for s in servers.iter_mut() {
        s.write_all(msg)?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / servers.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_measured() {
        let us = bare_floor(50, FLOOR_WRITE).unwrap();
        assert!(us > 0.0 && us < 1000.0, "{us} us per write");
    }
}
