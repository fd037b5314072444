//! A fleet of SV2 miners in one process (configurations B and D).
//!
//! Each miner connects to the pool over Noise (authenticated with the pool's authority
//! key), sets up the mining protocol and opens a channel:
//! - extended (the default), as firmware that rolls its own extranonce: jobs arrive as
//!   NewExtendedMiningJob, and the miner builds the coinbase from the job's prefix, its
//!   extranonce and the suffix, and folds it up the merkle path;
//! - standard (header-only mining, `REQUIRES_STANDARD_JOBS`): jobs arrive as NewMiningJob
//!   with the merkle root ready, so the template behind a job cannot be seen at the miner
//!   (its jobs count as unmatched for new-job times; new-block times still work);
//! - standard, several to a connection (`channels_per_connection`), as the devices behind
//!   a farm's proxy: without `REQUIRES_STANDARD_JOBS` the pool groups them and sends each
//!   job once, to the group channel, as a NewExtendedMiningJob each member completes with
//!   its own extranonce prefix.
//!
//! Future jobs wait for their SetNewPrevHash. Headers are hashed for real at the
//! configured rate. It records the same events as the SV1 fleet: a job
//! when it can start on it (with the template's marker, the first merkle path entry), a
//! share when it is sent, and the pool's answer when it comes (a Success may acknowledge
//! a batch).

use anyhow::{bail, Context, Result};
use bitcoin::block::{Header, Version};
use bitcoin::hashes::Hash;
use bitcoin::{BlockHash, CompactTarget, Target, TxMerkleNode};
use mining::farm::{AbortOnDrop, Failover, PoolChoice, SessionEnd};
use probe::{mono_ns, Event, Recorder};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use stratum_apps::key_utils::Secp256k1PublicKey;
use stratum_apps::network_helpers::connect_with_noise;
use stratum_apps::network_helpers::noise_stream::{NoiseTcpReadHalf, NoiseTcpWriteHalf};
use stratum_apps::stratum_core::binary_sv2::{B032Owned, Str0255Owned, U256Owned};
use stratum_apps::stratum_core::channels_sv2::merkle_root::merkle_root_from_path;
use stratum_apps::stratum_core::codec_sv2::SerializedFrame;
use stratum_apps::stratum_core::common_messages_sv2::{Protocol, SetupConnectionOwned};
use stratum_apps::stratum_core::handlers_sv2::{
    HandleMiningMessagesFromServerOwnedSync, HandlerErrorType, SupportedChannelTypes,
};
use stratum_apps::stratum_core::mining_sv2::{
    CloseChannelOwned, NewExtendedMiningJobOwned, NewMiningJobOwned,
    OpenExtendedMiningChannelOwned, OpenExtendedMiningChannelSuccessOwned,
    OpenMiningChannelErrorOwned, OpenStandardMiningChannelOwned,
    OpenStandardMiningChannelSuccessOwned, SetCustomMiningJobErrorOwned,
    SetCustomMiningJobSuccessOwned, SetExtranoncePrefixOwned, SetGroupChannelOwned,
    SetNewPrevHashOwned, SetTargetOwned, SubmitSharesErrorOwned, SubmitSharesExtendedOwned,
    SubmitSharesStandardOwned, SubmitSharesSuccessOwned, UpdateChannelErrorOwned,
};
use stratum_apps::stratum_core::parsers_sv2::{
    AnyMessageOwned, CommonMessages, CommonMessagesOwned, Mining, MiningOwned, ParserError, Tlv,
};
use stratum_apps::utils::protocol_message_type::{protocol_message_type, MessageType};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetConfig {
    pub pool: SocketAddr,
    pub pool_public: Secp256k1PublicKey,
    /// A connection carrying a group of channels crosses the LAN at its first miner's
    /// delay; only a miner on a connection of its own reconnects and fails over.
    #[serde(flatten)]
    pub machines: mining::farm::Machines,
    /// Channels are opened as `<prefix>.<index>`.
    pub user_prefix: String,
    pub channel: ChannelKind,
    /// Standard channels per connection. Above one, the channels share their connection as
    /// the devices behind a farm's proxy do, and the pool sends each job once, to their
    /// group channel (SetupConnection without REQUIRES_STANDARD_JOBS); each member derives
    /// its own merkle root from its extranonce prefix.
    #[serde(default = "one")]
    pub channels_per_connection: u32,
    /// The backup pool a miner on a connection of its own turns to after
    /// `reconnect.failover_after` failures in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupPool>,
}

/// A backup pool: its address and authority key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BackupPool {
    pub address: SocketAddr,
    pub public: Secp256k1PublicKey,
}

impl FleetConfig {
    /// What miner `index` calls itself in SetupConnection.
    fn device_id(&self, index: u32) -> String {
        format!("{}.{index}", self.user_prefix)
    }

    /// Where `choice` is, and its authority key.
    fn upstream(&self, choice: PoolChoice) -> (SocketAddr, Secp256k1PublicKey) {
        match (choice, &self.backup) {
            (PoolChoice::Backup, Some(b)) => (b.address, b.public),
            _ => (self.pool, self.pool_public),
        }
    }
}

fn one() -> u32 {
    1
}

pub use model::scenario::ChannelKind;

/// The fleet, mining until stopped.
pub type FleetHandle = mining::hashing::Fleet;

pub(crate) type Slot = mining::hashing::Slot<Active>;

/// Starts the fleet `cfg` describes, recording into `recorder`.
pub fn start(cfg: FleetConfig, recorder: Recorder) -> Result<FleetHandle> {
    let m = &cfg.machines;
    let (miners, ramp, threads, rates) = (m.miners, m.ramp, m.hash_threads, m.hashrates());
    let group = cfg.channels_per_connection.max(1);
    anyhow::ensure!(
        group == 1 || cfg.channel == ChannelKind::Standard,
        "channels_per_connection above 1 needs standard channels (a group of header-only devices)"
    );
    // One config for every miner: it holds each miner's draws, so a copy a miner would
    // grow the fleet's memory with the square of its miners.
    let cfg = Arc::new(cfg);
    // Group members hand their slot and share queue to the miner that opens their
    // connection (the first of each group).
    let registry: Arc<parking_lot::Mutex<HashMap<u32, Member>>> = Arc::default();
    mining::hashing::Fleet::start(
        miners,
        ramp,
        threads,
        rates,
        |index, slot, shares, mut stop| {
            let (cfg, recorder, registry) = (cfg.clone(), recorder.clone(), registry.clone());
            async move {
                let leader = index - index % group;
                let run = async {
                    if group == 1 {
                        return run_reconnecting(index, &cfg, &slot, shares, &recorder).await;
                    }
                    registry.lock().insert(
                        index,
                        Member {
                            index,
                            slot,
                            shares,
                        },
                    );
                    if index != leader {
                        return std::future::pending().await;
                    }
                    let last = (leader + group).min(cfg.machines.miners);
                    let members = loop {
                        {
                            let mut r = registry.lock();
                            if (leader..last).all(|i| r.contains_key(&i)) {
                                break (leader..last).filter_map(|i| r.remove(&i)).collect();
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    };
                    run_group(&cfg, members, &recorder).await
                };
                tokio::select! {
                    r = run => {
                        if let Err(e) = r {
                            tracing::warn!(miner = index, error = format!("{e:#}"), "SV2 miner stopped");
                        }
                    }
                    _ = stop.changed() => {}
                }
            }
        },
    )
}

/// A miner whose channel another miner's connection carries.
struct Member {
    index: u32,
    slot: Arc<Slot>,
    shares: mpsc::UnboundedReceiver<Found>,
}

/// A job as the pool sent it.
struct Job {
    version: u32,
    work: JobWork,
}

enum JobWork {
    /// The coinbase around our extranonce, and the merkle path it folds up.
    Extended {
        merkle_path: Vec<[u8; 32]>,
        coinbase_prefix: Vec<u8>,
        coinbase_suffix: Vec<u8>,
    },
    /// Header-only: the merkle root is given.
    Standard { merkle_root: [u8; 32] },
}

/// What the miner hashes on now (in its slot, for the hashing threads).
pub(crate) struct Active {
    job_id: u32,
    prev_hash: BlockHash,
    ntime: u32,
    version: u32,
    standard: bool,
    extranonce: Vec<u8>,
    share_target: Target,
    block_target: Target,
    scanner: mining::HeaderScanner,
}

/// A share a hashing thread found, for the miner's connection to send.
pub(crate) struct Found {
    job_id: u32,
    prev_hash: BlockHash,
    nonce: u32,
    ntime: u32,
    version: u32,
    standard: bool,
    extranonce: Vec<u8>,
    block_hash: Option<BlockHash>,
}

impl mining::hashing::Work for Active {
    type Share = Found;

    fn hash(&mut self, n: u64, found: &mut Vec<Found>) {
        for _ in 0..n {
            let Some((nonce, hash)) = self.scanner.next() else {
                // Nonces exhausted: a miner this fast would roll its extranonce; ours wait
                // for the next job, which comes long before at the rates we run.
                break;
            };
            if self.share_target.is_met_by(hash) {
                found.push(Found {
                    job_id: self.job_id,
                    prev_hash: self.prev_hash,
                    nonce,
                    ntime: self.ntime,
                    version: self.version,
                    standard: self.standard,
                    extranonce: self.extranonce.clone(),
                    block_hash: self.block_target.is_met_by(hash).then_some(hash),
                });
            }
        }
    }
}

pub(crate) struct Miner {
    index: u32,
    channel_id: u32,
    /// Shares go as SubmitSharesStandard (whatever kind of job the work came as: a
    /// group's members get extended jobs).
    standard_channel: bool,
    /// What the pool may send it on its own channel: a standard channel's jobs or an
    /// extended one's.
    channel_type: SupportedChannelTypes,
    /// A standard channel in a group, which also takes its group channel's extended jobs.
    grouped: bool,
    extranonce_prefix: Vec<u8>,
    extranonce_size: usize,
    next_extranonce: u64,
    share_target: Target,
    jobs: HashMap<u32, Job>,
    /// The latest prev hash and its job, ntime and bits.
    tip: Option<(u32, BlockHash, u32, CompactTarget)>,
    slot: Arc<Slot>,
    next_sequence: u32,
    /// Sequence numbers sent and not yet answered, with their share ids.
    pending: BTreeMap<u32, u64>,
}

/// A miner on a connection of its own, for as long as the fleet runs: a session, and
/// another each it loses, as firmware reconnects (`mining::farm::reconnecting`).
async fn run_reconnecting(
    index: u32,
    cfg: &FleetConfig,
    slot: &Arc<Slot>,
    shares: mpsc::UnboundedReceiver<Found>,
    recorder: &Recorder,
) -> Result<()> {
    let mut sessions = Sessions {
        index,
        cfg,
        slot,
        recorder,
        shares,
        next_share_id: 1,
    };
    let has_backup = cfg.backup.is_some();
    mining::farm::reconnecting(
        index,
        &cfg.machines.reconnect,
        has_backup,
        recorder,
        &mut sessions,
    )
    .await;
    Ok(())
}

/// One miner's sessions with its pool.
struct Sessions<'a> {
    index: u32,
    cfg: &'a FleetConfig,
    slot: &'a Arc<Slot>,
    recorder: &'a Recorder,
    shares: mpsc::UnboundedReceiver<Found>,
    next_share_id: u64,
}

impl mining::farm::Sessions for Sessions<'_> {
    async fn session(&mut self, failover: &mut Failover) -> SessionEnd {
        let index = self.index;
        let (address, public) = self.cfg.upstream(failover.pool());
        let stream = match TcpStream::connect(address).await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!(miner = index, error = %e, "cannot connect; retrying");
                return SessionEnd::Refused;
            }
        };
        // What was found for a session that ended is never sent.
        while self.shares.try_recv().is_ok() {}
        let ended = self.mine((stream, address, public), failover).await;
        // Without a pool the job is dead: nothing to hash until the next session's.
        self.slot.set(None);
        ended.unwrap_or_else(|e| {
            let error = format!("{e:#}");
            tracing::info!(miner = index, error, "session with the pool ended");
            SessionEnd::Lost
        })
    }
}

impl Sessions<'_> {
    /// One session with the pool on `stream` (to `address`, whose key is `public`): until
    /// its connection ends, the pool is silent for `reconnect.silence`, or, on the backup,
    /// the primary serves again.
    async fn mine(
        &mut self,
        (stream, address, public): (TcpStream, SocketAddr, Secp256k1PublicKey),
        failover: &mut Failover,
    ) -> Result<SessionEnd> {
        let Sessions {
            index,
            cfg,
            slot,
            recorder,
            shares,
            next_share_id,
        } = self;
        let (index, cfg, slot, recorder) = (*index, *cfg, *slot, *recorder);
        // Bit 0 of the flags, REQUIRES_STANDARD_JOBS: header-only mining.
        let flags = u32::from(cfg.channel == ChannelKind::Standard);
        let device_id = cfg.device_id(index);
        let (reader, mut writer) = establish(stream, public, address, &device_id, flags).await?;
        failover.answered();
        sv2_wire::send(
            &mut writer,
            AnyMessageOwned::Mining(open_channel(cfg, 1, index)),
            "the pool",
        )
        .await?;
        let lan = cfg.machines.per_miner.lan_delay(index);
        let (read_task, frames) = read_frames(reader, index);
        let _reader = AbortOnDrop(vec![read_task]);
        let mut frames = mining::farm::lan_hop(frames, lan, mono_ns);
        let (outgoing_tx, outgoing) = mpsc::unbounded_channel();
        let mut outgoing = mining::farm::lan_hop(outgoing, lan, mono_ns);
        let mut miner = Miner::new(index, cfg.channel, false, slot.clone());
        let silence = tokio::time::sleep(cfg.machines.reconnect.silence);
        tokio::pin!(silence);
        let every = cfg.machines.reconnect.primary_check_every;
        let check = || serves_work(cfg, index, flags);
        let primary_back = mining::farm::primary_back(failover.pool(), every, check);
        tokio::pin!(primary_back);
        let result = loop {
            tokio::select! {
                got = frames.recv() => {
                    let Some((t, msg)) = got else { break Ok(SessionEnd::Lost) };
                    silence.as_mut().reset(tokio::time::Instant::now() + cfg.machines.reconnect.silence);
                    if let Err(e) = miner.handle(msg, t, recorder) {
                        break Err(e);
                    }
                }
                _ = &mut silence => break Err(anyhow::anyhow!("the pool is silent")),
                _ = &mut primary_back => {
                    tracing::info!(miner = index, "the primary serves work again");
                    break Ok(SessionEnd::PrimaryBack);
                }
                Some(found) = shares.recv() => {
                    let message = miner.submission(found, next_share_id, recorder);
                    let _ = outgoing_tx.send((mono_ns(), message));
                }
                Some((_, message)) = outgoing.recv() => {
                    if let Err(e) = sv2_wire::send(&mut writer, message, "the pool").await {
                        break Err(e);
                    }
                }
            }
        };
        result
    }
}

/// Whether the primary serves work: its Noise handshake, a successful SetupConnection and
/// a job on a channel opened as miner `index`'s, within the check's time (the SV2 form of
/// ESP-Miner's heartbeat of its primary).
async fn serves_work(cfg: &FleetConfig, index: u32, flags: u32) -> bool {
    let check = async {
        let stream = TcpStream::connect(cfg.pool).await?;
        let device_id = cfg.device_id(index);
        let (mut reader, mut writer) =
            establish(stream, cfg.pool_public, cfg.pool, &device_id, flags).await?;
        let open = AnyMessageOwned::Mining(open_channel(cfg, 1, index));
        sv2_wire::send(&mut writer, open, "the pool").await?;
        loop {
            if let Some(MiningOwned::NewExtendedMiningJob(_) | MiningOwned::NewMiningJob(_)) =
                read_mining(&mut reader).await?
            {
                return anyhow::Ok(());
            }
        }
    };
    matches!(
        tokio::time::timeout(mining::farm::PRIMARY_CHECK_TIMEOUT, check).await,
        Ok(Ok(()))
    )
}

/// One connection carrying the standard channels of `members`, grouped by the pool: a
/// message to the group channel goes to every member, each member deriving its work in
/// turn (so a member's receipt includes the derivations before it, as behind a proxy).
async fn run_group(cfg: &FleetConfig, members: Vec<Member>, recorder: &Recorder) -> Result<()> {
    let first = members.first().map_or(0, |m| m.index);
    let (reader, mut writer) = connect(cfg, first, 0).await?;
    let (found_tx, mut found) = mpsc::unbounded_channel();
    let mut miners = Vec::with_capacity(members.len());
    let mut forwarders = Vec::with_capacity(members.len());
    for (k, member) in members.into_iter().enumerate() {
        sv2_wire::send(
            &mut writer,
            AnyMessageOwned::Mining(open_channel(cfg, k as u32, member.index)),
            "the pool",
        )
        .await?;
        miners.push(Miner::new(member.index, cfg.channel, true, member.slot));
        let (tx, mut shares) = (found_tx.clone(), member.shares);
        forwarders.push(tokio::spawn(async move {
            while let Some(f) = shares.recv().await {
                if tx.send((k, f)).is_err() {
                    return;
                }
            }
        }));
    }
    let lan = cfg.machines.per_miner.lan_delay(first);
    let (read_task, frames) = read_frames(reader, first);
    forwarders.push(read_task);
    let _tasks = AbortOnDrop(forwarders);
    let mut frames = mining::farm::lan_hop(frames, lan, mono_ns);
    let (outgoing_tx, outgoing) = mpsc::unbounded_channel();
    let mut outgoing = mining::farm::lan_hop(outgoing, lan, mono_ns);
    let mut group_channel = None;
    let mut next_share_id = 1u64;
    let result = loop {
        tokio::select! {
            got = frames.recv() => {
                let Some((t, msg)) = got else { break Ok(()) };
                let handled = match addressee(&msg) {
                    Some(Addressee::Request(k)) => {
                        if let MiningOwned::OpenStandardMiningChannelSuccess(m) = &msg {
                            group_channel = Some(m.group_channel_id);
                        }
                        match miners.get_mut(k as usize) {
                            Some(miner) => miner.handle(msg, t, recorder),
                            None => Ok(()),
                        }
                    }
                    Some(Addressee::Channel(c)) if Some(c) == group_channel => miners
                        .iter_mut()
                        .try_for_each(|miner| miner.handle(msg.clone(), mono_ns(), recorder)),
                    Some(Addressee::Channel(c)) => match miners.iter_mut().find(|m| m.channel_id == c) {
                        Some(miner) => miner.handle(msg, t, recorder),
                        None => Ok(()),
                    },
                    None => Ok(()),
                };
                if let Err(e) = handled {
                    break Err(e);
                }
            }
            Some((k, f)) = found.recv() => {
                let message = miners[k].submission(f, &mut next_share_id, recorder);
                let _ = outgoing_tx.send((mono_ns(), message));
            }
            Some((_, message)) = outgoing.recv() => {
                if let Err(e) = sv2_wire::send(&mut writer, message, "the pool").await {
                    break Err(e);
                }
            }
        }
    };
    result
}

/// Who a message from the pool is for: the channel opened by a request, or a channel (or
/// group channel) by id.
enum Addressee {
    Request(u32),
    Channel(u32),
}

fn addressee(msg: &MiningOwned) -> Option<Addressee> {
    use Addressee::{Channel, Request};
    Some(match msg {
        MiningOwned::OpenStandardMiningChannelSuccess(m) => Request(m.request_id),
        MiningOwned::OpenExtendedMiningChannelSuccess(m) => Request(m.request_id),
        MiningOwned::OpenMiningChannelError(m) => Request(m.request_id),
        MiningOwned::NewMiningJob(m) => Channel(m.channel_id),
        MiningOwned::NewExtendedMiningJob(m) => Channel(m.channel_id),
        MiningOwned::SetNewPrevHash(m) => Channel(m.channel_id),
        MiningOwned::SetTarget(m) => Channel(m.channel_id),
        MiningOwned::SubmitSharesSuccess(m) => Channel(m.channel_id),
        MiningOwned::SubmitSharesError(m) => Channel(m.channel_id),
        _ => return None,
    })
}

/// A Noise connection to the pool with the mining protocol set up (`flags` as
/// SetupConnection carries them), split into its halves.
async fn connect(
    cfg: &FleetConfig,
    index: u32,
    flags: u32,
) -> Result<(NoiseTcpReadHalf, NoiseTcpWriteHalf)> {
    let stream = loop {
        match TcpStream::connect(cfg.pool).await {
            Ok(s) => break s,
            Err(e) => {
                tracing::debug!(miner = index, error = %e, "cannot connect; retrying");
                tokio::time::sleep(cfg.machines.reconnect.retry_every).await;
            }
        }
    };
    let device_id = cfg.device_id(index);
    establish(stream, cfg.pool_public, cfg.pool, &device_id, flags).await
}

/// The Noise handshake with the pool at `endpoint` (authenticated by `public`) on
/// `stream`, and SetupConnection as `device_id` with `flags`.
async fn establish(
    stream: TcpStream,
    public: Secp256k1PublicKey,
    endpoint: SocketAddr,
    device_id: &str,
    flags: u32,
) -> Result<(NoiseTcpReadHalf, NoiseTcpWriteHalf)> {
    let _ = stream.set_nodelay(true);
    let noise = connect_with_noise(stream, Some(public))
        .await
        .map_err(|e| anyhow::anyhow!("Noise handshake with the pool failed: {e}"))?;
    let (mut reader, mut writer) = noise.into_split();
    set_up_mining(&mut reader, &mut writer, endpoint, device_id, flags).await?;
    Ok((reader, writer))
}

/// SetupConnection for the mining protocol (`flags` as it carries them) on a Noise
/// connection to `endpoint`, and the pool's answer: an error unless it is Success.
pub async fn set_up_mining(
    reader: &mut NoiseTcpReadHalf,
    writer: &mut NoiseTcpWriteHalf,
    endpoint: std::net::SocketAddr,
    device_id: &str,
    flags: u32,
) -> Result<()> {
    let setup = SetupConnectionOwned {
        protocol: Protocol::MiningProtocol,
        min_version: 2,
        max_version: 2,
        flags,
        endpoint_host: text(&endpoint.ip().to_string()),
        endpoint_port: endpoint.port(),
        vendor: text("stratum-bench"),
        hardware_version: text("cpu"),
        firmware: text(env!("CARGO_PKG_VERSION")),
        device_id: text(device_id),
    };
    sv2_wire::send(
        writer,
        AnyMessageOwned::Common(CommonMessagesOwned::SetupConnection(setup)),
        "the pool",
    )
    .await?;
    // Scoped: a read half dropped while one of its frames lives spins forever.
    let mut frame = reader
        .read_frame()
        .await
        .map_err(|e| anyhow::anyhow!("no SetupConnection answer: {e}"))?;
    let header = frame.header();
    match CommonMessages::try_from((header.msg_type(), frame.payload())) {
        Ok(CommonMessages::SetupConnectionSuccess(_)) => Ok(()),
        Ok(CommonMessages::SetupConnectionError(e)) => bail!(
            "the pool refused SetupConnection: {}",
            String::from_utf8_lossy(e.error_code.as_ref())
        ),
        other => bail!("unexpected answer to SetupConnection: {other:?}"),
    }
}

/// The request opening miner `index`'s channel.
fn open_channel(cfg: &FleetConfig, request_id: u32, index: u32) -> MiningOwned {
    let user_identity = text(&format!("{}.{index}", cfg.user_prefix));
    match cfg.channel {
        ChannelKind::Extended => {
            MiningOwned::OpenExtendedMiningChannel(OpenExtendedMiningChannelOwned {
                request_id,
                user_identity,
                nominal_hash_rate: cfg.machines.hashrate as f32,
                max_target: U256Owned::from([0xff; 32]),
                min_extranonce_size: 8,
            })
        }
        ChannelKind::Standard => {
            MiningOwned::OpenStandardMiningChannel(OpenStandardMiningChannelOwned {
                request_id,
                user_identity,
                nominal_hash_rate: cfg.machines.hashrate as f32,
                max_target: U256Owned::from([0xff; 32]),
            })
        }
    }
}

/// Frames are read on their own task (a frame read cannot be cancelled halfway), each
/// mining message passed on with the moment it was read.
fn read_frames(
    mut reader: NoiseTcpReadHalf,
    index: u32,
) -> (
    tokio::task::JoinHandle<()>,
    mpsc::UnboundedReceiver<(u64, MiningOwned)>,
) {
    let (tx, frames) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        loop {
            match read_mining(&mut reader).await {
                Ok(Some(m)) => {
                    if tx.send((mono_ns(), m)).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::info!(
                        miner = index,
                        error = format!("{e:#}"),
                        "pool connection ended"
                    );
                    return;
                }
            }
        }
    });
    (task, frames)
}

/// A share found, ready to send.
pub(crate) struct Share {
    sequence_number: u32,
    job_id: u32,
    prev_hash: BlockHash,
    block_hash: Option<BlockHash>,
    message: MiningOwned,
}

impl Miner {
    /// Miner `index` on a `channel` of its own, or one of a group's (`grouped`).
    pub(crate) fn new(index: u32, channel: ChannelKind, grouped: bool, slot: Arc<Slot>) -> Miner {
        let channel_type = match channel {
            ChannelKind::Extended => SupportedChannelTypes::Extended,
            ChannelKind::Standard => SupportedChannelTypes::Standard,
        };
        Miner {
            index,
            channel_id: 0,
            channel_type,
            grouped,
            standard_channel: channel == ChannelKind::Standard,
            extranonce_prefix: Vec::new(),
            extranonce_size: 8,
            next_extranonce: u64::from(index) << 32,
            share_target: Target::MAX,
            jobs: HashMap::new(),
            tip: None,
            slot,
            next_sequence: 0,
            pending: BTreeMap::new(),
        }
    }

    /// Sends a share found on this miner's channel, recording it.
    /// The share's message, recorded as submitted now (it is sent once across the LAN).
    fn submission(
        &mut self,
        found: Found,
        next_share_id: &mut u64,
        recorder: &Recorder,
    ) -> AnyMessageOwned {
        let share = self.share(found);
        let id = *next_share_id;
        *next_share_id += 1;
        self.pending.insert(share.sequence_number, id);
        recorder.record(Event::ShareSubmitted {
            miner: self.index,
            share_id: id,
            job_id: share.job_id.to_string(),
            prev_hash: share.prev_hash.to_string(),
            block_hash: share.block_hash.map(|h| h.to_string()),
        });
        AnyMessageOwned::Mining(share.message)
    }

    /// Handles a message from the pool that arrived at `t`, by SRI's handlers: a message
    /// this miner's kind of channel does not take ends its session with the reason.
    pub(crate) fn handle(&mut self, msg: MiningOwned, t: u64, recorder: &Recorder) -> Result<()> {
        let grouped = self.grouped;
        let mut arrived = Arrived {
            miner: self,
            t,
            recorder,
        };
        let handled = match msg {
            // SRI's dispatch has no kind for a standard channel in a group, to which SRI's
            // pool sends both its own channel's NewMiningJob and the group channel's
            // extended jobs: those go to their handlers directly.
            MiningOwned::NewExtendedMiningJob(j) if grouped => {
                arrived.handle_new_extended_mining_job(None, j, None)
            }
            MiningOwned::SetGroupChannel(g) if grouped => {
                arrived.handle_set_group_channel(None, g, None)
            }
            other => arrived.handle_mining_message_from_server(None, other, None),
        };
        handled.map_err(|e| e.0)
    }

    /// Keeps a job; one with a min_ntime is for the current prev hash and starts at once,
    /// one without waits for its SetNewPrevHash.
    fn add_job(
        &mut self,
        job_id: u32,
        job: Job,
        min_ntime: Option<u32>,
        t: u64,
        recorder: &Recorder,
    ) -> Result<()> {
        self.jobs.insert(job_id, job);
        if let (Some(min_ntime), Some((_, prev, ntime, bits))) = (min_ntime, self.tip) {
            self.activate(job_id, prev, ntime.max(min_ntime), bits, t, recorder)?;
        }
        Ok(())
    }

    /// Starts hashing on `job_id` under `prev`, and records the job as received now.
    fn activate(
        &mut self,
        job_id: u32,
        prev: BlockHash,
        ntime: u32,
        bits: CompactTarget,
        t: u64,
        recorder: &Recorder,
    ) -> Result<()> {
        let Some(job) = self.jobs.get(&job_id) else {
            tracing::debug!(
                miner = self.index,
                job_id,
                "prev hash for a job not received"
            );
            return Ok(());
        };
        // The template's marker is the first merkle path entry; a standard job shows only
        // its merkle root, so neither its marker nor its work id.
        let (marker_txid, work_id) = match &job.work {
            JobWork::Extended { merkle_path, .. } => {
                let branch: Vec<TxMerkleNode> = (merkle_path.iter())
                    .map(|m| TxMerkleNode::from_byte_array(*m))
                    .collect();
                let marker = merkle_path.first();
                (
                    marker.map(|m| bitcoin::Txid::from_byte_array(*m).to_string()),
                    Some(mining::work_id(&prev, &branch)),
                )
            }
            JobWork::Standard { .. } => (None, None),
        };
        recorder.record_at(
            t,
            Event::JobReceived {
                miner: self.index,
                job_id: job_id.to_string(),
                prev_hash: prev.to_string(),
                marker_txid,
                clean: self.tip.is_some_and(|(j, ..)| j == job_id),
                work_id,
            },
        );
        self.next_extranonce += 1;
        // The channel's rollable extranonce: our counter in its last (up to) 8 bytes.
        let mut extranonce = vec![0u8; self.extranonce_size];
        let counter = self.next_extranonce.to_be_bytes();
        let n = self.extranonce_size.min(8);
        extranonce[self.extranonce_size - n..].copy_from_slice(&counter[8 - n..]);
        let header = self.header(job, prev, ntime, bits, &extranonce)?;
        self.slot.set(Some(Active {
            job_id,
            prev_hash: prev,
            ntime,
            version: job.version,
            standard: self.standard_channel,
            extranonce,
            share_target: self.share_target,
            block_target: Target::from_compact(bits),
            scanner: mining::HeaderScanner::new(&header),
        }));
        Ok(())
    }

    fn header(
        &self,
        job: &Job,
        prev: BlockHash,
        ntime: u32,
        bits: CompactTarget,
        extranonce: &[u8],
    ) -> Result<Header> {
        let root = match &job.work {
            JobWork::Extended {
                merkle_path,
                coinbase_prefix,
                coinbase_suffix,
            } => {
                let mut full = self.extranonce_prefix.clone();
                full.extend_from_slice(extranonce);
                merkle_root_from_path(coinbase_prefix, coinbase_suffix, &full, merkle_path)
                    .context("the job's coinbase does not decode")?
            }
            JobWork::Standard { merkle_root } => *merkle_root,
        };
        Ok(Header {
            version: Version::from_consensus(job.version as i32),
            prev_blockhash: prev,
            merkle_root: TxMerkleNode::from_byte_array(root),
            time: ntime,
            bits,
            nonce: 0,
        })
    }

    /// The message for a share found, with the channel's next sequence number.
    pub(crate) fn share(&mut self, f: Found) -> Share {
        let sequence_number = self.next_sequence;
        self.next_sequence = self.next_sequence.wrapping_add(1);
        let message = if f.standard {
            MiningOwned::SubmitSharesStandard(SubmitSharesStandardOwned {
                channel_id: self.channel_id,
                sequence_number,
                job_id: f.job_id,
                nonce: f.nonce,
                ntime: f.ntime,
                version: f.version,
            })
        } else {
            MiningOwned::SubmitSharesExtended(SubmitSharesExtendedOwned {
                channel_id: self.channel_id,
                sequence_number,
                job_id: f.job_id,
                nonce: f.nonce,
                ntime: f.ntime,
                version: f.version,
                extranonce: B032Owned::try_from(f.extranonce).expect("at most 32 bytes"),
            })
        };
        Share {
            sequence_number,
            job_id: f.job_id,
            prev_hash: f.prev_hash,
            block_hash: f.block_hash,
            message,
        }
    }
}

/// The widest extranonce (prefix and the miner's part) a share can carry.
const MAX_EXTRANONCE: usize = 32;

/// What is wrong with a message from the pool, as SRI's handlers find it.
pub(crate) struct FromPool(anyhow::Error);

impl HandlerErrorType for FromPool {
    fn unexpected_message(extension_type: u16, message_type: u8) -> Self {
        FromPool(anyhow::anyhow!(
            "the pool sent message type {message_type:#04x} (extension {extension_type}), which this miner's channel does not take"
        ))
    }

    fn parse_error(error: ParserError) -> Self {
        FromPool(anyhow::anyhow!(
            "the pool's message does not parse: {error:?}"
        ))
    }
}

/// A message from the pool for `miner`, arrived at `t`.
struct Arrived<'a> {
    miner: &'a mut Miner,
    t: u64,
    recorder: &'a Recorder,
}

/// Each message family in a handler of its own, as SRI's roles handle them; SRI's default
/// dispatch refuses what the channel's kind does not take (a job for another kind of
/// channel, a custom job without work selection, a message only a miner sends).
impl HandleMiningMessagesFromServerOwnedSync for Arrived<'_> {
    type Error = FromPool;

    fn get_channel_type_for_server(&self, _: Option<usize>) -> SupportedChannelTypes {
        self.miner.channel_type
    }

    fn is_work_selection_enabled_for_server(&self, _: Option<usize>) -> bool {
        false
    }

    fn get_negotiated_extensions_with_server(
        &self,
        _: Option<usize>,
    ) -> Result<Vec<u16>, FromPool> {
        Ok(Vec::new())
    }

    fn handle_open_standard_mining_channel_success(
        &mut self,
        _: Option<usize>,
        m: OpenStandardMiningChannelSuccessOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let miner = &mut *self.miner;
        miner.channel_id = m.channel_id;
        miner.share_target = target_of(m.target.as_ref());
        // The whole extranonce is the pool's: a group job's coinbase is completed with it
        // alone.
        miner.extranonce_prefix = m.extranonce_prefix.as_ref().to_vec();
        miner.extranonce_size = 0;
        Ok(())
    }

    fn handle_open_extended_mining_channel_success(
        &mut self,
        _: Option<usize>,
        m: OpenExtendedMiningChannelSuccessOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        // A share carries the extranonce in 32 bytes at most (B0_32): a wider grant could
        // never be submitted.
        let width = m.extranonce_prefix.as_ref().len() + usize::from(m.extranonce_size);
        if width > MAX_EXTRANONCE {
            return Err(FromPool(anyhow::anyhow!(
                "the pool granted a {width}-byte extranonce; SV2 carries at most {MAX_EXTRANONCE}"
            )));
        }
        let miner = &mut *self.miner;
        miner.channel_id = m.channel_id;
        miner.share_target = target_of(m.target.as_ref());
        miner.extranonce_prefix = m.extranonce_prefix.as_ref().to_vec();
        miner.extranonce_size = usize::from(m.extranonce_size);
        Ok(())
    }

    fn handle_open_mining_channel_error(
        &mut self,
        _: Option<usize>,
        e: OpenMiningChannelErrorOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let code = String::from_utf8_lossy(e.error_code.as_ref()).into_owned();
        Err(FromPool(anyhow::anyhow!(
            "the pool refused the channel: {code}"
        )))
    }

    fn handle_update_channel_error(
        &mut self,
        _: Option<usize>,
        _: UpdateChannelErrorOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        // The fleet never updates a channel.
        Ok(())
    }

    fn handle_close_channel(
        &mut self,
        _: Option<usize>,
        m: CloseChannelOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let reason = String::from_utf8_lossy(m.reason_code.as_ref()).into_owned();
        Err(FromPool(anyhow::anyhow!(
            "the pool closed the channel: {reason}"
        )))
    }

    fn handle_set_extranonce_prefix(
        &mut self,
        _: Option<usize>,
        m: SetExtranoncePrefixOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        self.miner.extranonce_prefix = m.extranonce_prefix.as_ref().to_vec();
        Ok(())
    }

    fn handle_submit_shares_success(
        &mut self,
        _: Option<usize>,
        s: SubmitSharesSuccessOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let miner = &mut *self.miner;
        let rest = (miner.pending).split_off(&s.last_sequence_number.wrapping_add(1));
        for share_id in std::mem::replace(&mut miner.pending, rest).into_values() {
            let answered = Event::ShareAnswered {
                miner: miner.index,
                share_id,
                accepted: true,
                error: None,
            };
            self.recorder.record_at(self.t, answered);
        }
        Ok(())
    }

    fn handle_submit_shares_error(
        &mut self,
        _: Option<usize>,
        e: SubmitSharesErrorOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        if let Some(share_id) = self.miner.pending.remove(&e.sequence_number) {
            let answered = Event::ShareAnswered {
                miner: self.miner.index,
                share_id,
                accepted: false,
                error: Some(String::from_utf8_lossy(e.error_code.as_ref()).into()),
            };
            self.recorder.record_at(self.t, answered);
        }
        Ok(())
    }

    fn handle_new_mining_job(
        &mut self,
        _: Option<usize>,
        j: NewMiningJobOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let job = Job {
            version: j.version,
            work: JobWork::Standard {
                merkle_root: j.merkle_root.as_ref().try_into().expect("32 bytes"),
            },
        };
        let min_ntime = j.min_ntime.clone().into_inner();
        (self
            .miner
            .add_job(j.job_id, job, min_ntime, self.t, self.recorder))
        .map_err(FromPool)
    }

    fn handle_new_extended_mining_job(
        &mut self,
        _: Option<usize>,
        j: NewExtendedMiningJobOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let merkle_path = (j.merkle_path.iter())
            .map(|n| n.as_ref().try_into().expect("32 bytes"))
            .collect();
        let job = Job {
            version: j.version,
            work: JobWork::Extended {
                merkle_path,
                coinbase_prefix: j.coinbase_tx_prefix.as_ref().to_vec(),
                coinbase_suffix: j.coinbase_tx_suffix.as_ref().to_vec(),
            },
        };
        let min_ntime = j.min_ntime.clone().into_inner();
        (self
            .miner
            .add_job(j.job_id, job, min_ntime, self.t, self.recorder))
        .map_err(FromPool)
    }

    fn handle_set_new_prev_hash(
        &mut self,
        _: Option<usize>,
        p: SetNewPrevHashOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let prev = BlockHash::from_byte_array(p.prev_hash.as_ref().try_into().expect("32 bytes"));
        let bits = CompactTarget::from_consensus(p.nbits);
        let miner = &mut *self.miner;
        miner.tip = Some((p.job_id, prev, p.min_ntime, bits));
        // Jobs older than the new prev hash can no longer be mined.
        miner.jobs.retain(|id, _| *id >= p.job_id);
        (miner.activate(p.job_id, prev, p.min_ntime, bits, self.t, self.recorder)).map_err(FromPool)
    }

    fn handle_set_custom_mining_job_success(
        &mut self,
        _: Option<usize>,
        _: SetCustomMiningJobSuccessOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        Err(FromPool(anyhow::anyhow!(
            "the pool answered a custom job the fleet never declared"
        )))
    }

    fn handle_set_custom_mining_job_error(
        &mut self,
        _: Option<usize>,
        _: SetCustomMiningJobErrorOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        Err(FromPool(anyhow::anyhow!(
            "the pool answered a custom job the fleet never declared"
        )))
    }

    fn handle_set_target(
        &mut self,
        _: Option<usize>,
        s: SetTargetOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        let target = target_of(s.maximum_target.as_ref());
        self.miner.share_target = target;
        self.miner.slot.with(|w| w.share_target = target);
        Ok(())
    }

    fn handle_set_group_channel(
        &mut self,
        _: Option<usize>,
        _: SetGroupChannelOwned,
        _: Option<&[Tlv]>,
    ) -> Result<(), FromPool> {
        // The group's connection routes its channel's messages to every member.
        Ok(())
    }
}

/// A little-endian U256 target as the mining protocol carries it.
fn target_of(bytes: &[u8]) -> Target {
    let le: [u8; 32] = bytes.try_into().unwrap_or([0xff; 32]);
    Target::from_le_bytes(le)
}

fn text(s: &str) -> Str0255Owned {
    Str0255Owned::try_from(s.as_bytes().to_vec()).expect("under 256 bytes")
}

/// The next mining message, or `None` for a frame of another protocol.
async fn read_mining(reader: &mut NoiseTcpReadHalf) -> Result<Option<MiningOwned>> {
    let frame = reader
        .read_frame()
        .await
        .map_err(|e| anyhow::anyhow!("read: {e}"))?;
    decode_mining(frame)
}

/// A frame's mining message, `None` for a frame of another protocol.
pub fn decode_mining(mut frame: SerializedFrame) -> Result<Option<MiningOwned>> {
    let header = frame.header();
    if protocol_message_type(header.ext_type(), header.msg_type()) != MessageType::Mining {
        return Ok(None);
    }
    let msg = Mining::try_from((header.msg_type(), frame.payload()))
        .map_err(|e| anyhow::anyhow!("malformed mining message: {e:?}"))?;
    Ok(Some(msg.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stratum_apps::stratum_core::binary_sv2::{
        B064KOwned, Seq0255Owned, Sv2OptionOwned, U256Owned,
    };
    use stratum_apps::stratum_core::mining_sv2::{
        NewExtendedMiningJobOwned, NewMiningJobOwned, OpenExtendedMiningChannelSuccessOwned,
        SetNewPrevHashOwned, SubmitSharesErrorOwned, SubmitSharesSuccess,
    };

    /// A miner of `channel` and a recorder into a file of its own, read back by `events`.
    fn miner(name: &str, channel: ChannelKind) -> (Miner, Recorder, std::path::PathBuf) {
        let path =
            std::env::temp_dir().join(format!("sv2-fleet-{name}-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let recorder = Recorder::to_file(&path, "miners").unwrap();
        let (slot, _shares) = Slot::new();
        (Miner::new(3, channel, false, slot), recorder, path)
    }

    fn events(recorder: &Recorder, path: &std::path::Path) -> Vec<Event> {
        recorder.close().unwrap();
        let records = probe::recorder::read_events(path).unwrap();
        let _ = std::fs::remove_file(path);
        records.into_iter().map(|r| r.event).collect()
    }

    fn granted(prefix: &[u8], size: u16) -> MiningOwned {
        MiningOwned::OpenExtendedMiningChannelSuccess(OpenExtendedMiningChannelSuccessOwned {
            request_id: 1,
            channel_id: 7,
            target: U256Owned::from([0xff; 32]),
            extranonce_size: size,
            extranonce_prefix: B032Owned::try_from(prefix.to_vec()).unwrap(),
            group_channel_id: 0,
        })
    }

    fn prev_hash(job_id: u32, hash: [u8; 32]) -> MiningOwned {
        MiningOwned::SetNewPrevHash(SetNewPrevHashOwned {
            channel_id: 7,
            job_id,
            prev_hash: U256Owned::from(hash),
            min_ntime: 1_000,
            nbits: 0x207f_ffff,
        })
    }

    /// A coinbase of one input whose scriptSig ends in 12 bytes of extranonce, cut
    /// around them: (prefix, suffix).
    fn coinbase_around_extranonce() -> (Vec<u8>, Vec<u8>) {
        let tx = bitcoin::Transaction {
            version: bitcoin::transaction::Version::TWO,
            lock_time: bitcoin::absolute::LockTime::ZERO,
            input: vec![bitcoin::TxIn {
                script_sig: bitcoin::ScriptBuf::from_bytes(
                    [&[3u8, 1, 2, 3][..], &[0; 12]].concat(),
                ),
                ..Default::default()
            }],
            output: vec![bitcoin::TxOut {
                value: bitcoin::Amount::from_sat(312_500_000),
                script_pubkey: bitcoin::ScriptBuf::new(),
            }],
        };
        let bytes = bitcoin::consensus::serialize(&tx);
        // Version 4, one input 1, its outpoint 36, the scriptSig's length 1 and push 4.
        let at = 4 + 1 + 36 + 1 + 4;
        (bytes[..at].to_vec(), bytes[at + 12..].to_vec())
    }

    fn extended_job(job_id: u32, min_ntime: Option<u32>, marker: [u8; 32]) -> MiningOwned {
        let (prefix, suffix) = coinbase_around_extranonce();
        MiningOwned::NewExtendedMiningJob(NewExtendedMiningJobOwned {
            channel_id: 7,
            job_id,
            min_ntime: Sv2OptionOwned::new(min_ntime),
            version: 0x2000_0000,
            version_rolling_allowed: true,
            merkle_path: Seq0255Owned::new(vec![U256Owned::from(marker)]).unwrap(),
            coinbase_tx_prefix: B064KOwned::try_from(prefix).unwrap(),
            coinbase_tx_suffix: B064KOwned::try_from(suffix).unwrap(),
        })
    }

    #[test]
    fn an_extended_channel_takes_its_grant_and_refuses_one_it_could_not_submit() {
        let (mut m, recorder, path) = miner("grant", ChannelKind::Extended);
        m.handle(granted(&[1, 2, 3, 4], 8), 0, &recorder).unwrap();
        assert_eq!(m.channel_id, 7);
        assert_eq!(
            (m.extranonce_prefix.as_slice(), m.extranonce_size),
            (&[1u8, 2, 3, 4][..], 8)
        );
        // 4 + 30 bytes is more than a share's 32-byte extranonce can carry.
        let err = m
            .handle(granted(&[1, 2, 3, 4], 30), 0, &recorder)
            .unwrap_err();
        assert!(err.to_string().contains("34-byte"), "{err}");
        let recorded = events(&recorder, &path);
        assert!(
            (recorded.iter()).all(|e| !matches!(e, Event::JobReceived { .. })),
            "a grant is no work: {recorded:?}"
        );
    }

    /// SRI's dispatch by channel kind: an extended job reaches an extended channel and a
    /// group's member, never a standard channel of its own (that asked for standard jobs),
    /// and a message only a miner sends is refused with its type named.
    #[test]
    fn a_message_the_channels_kind_does_not_take_is_refused_with_its_type() {
        let job = extended_job(1, None, [0xaa; 32]);
        let (mut standard, recorder, _) = miner("kinds", ChannelKind::Standard);
        let err = standard.handle(job.clone(), 0, &recorder).unwrap_err();
        assert!(err.to_string().contains("0x1f"), "{err}");
        let (slot, _shares) = Slot::new();
        let mut member = Miner::new(4, ChannelKind::Standard, true, slot);
        member.handle(job.clone(), 0, &recorder).unwrap();
        let (mut extended, ..) = miner("kinds-extended", ChannelKind::Extended);
        extended.handle(job, 0, &recorder).unwrap();
        let open = MiningOwned::OpenStandardMiningChannel(OpenStandardMiningChannelOwned {
            request_id: 1,
            user_identity: text("a pool's echo"),
            nominal_hash_rate: 1.0,
            max_target: U256Owned::from([0xff; 32]),
        });
        let err = extended.handle(open, 0, &recorder).unwrap_err();
        assert!(err.to_string().contains("does not take"), "{err}");
    }

    /// A future job waits for its SetNewPrevHash, which makes it the work and drops the
    /// jobs before it; a job for now starts at once on the current prev hash; a prev hash
    /// for a job never received is no work.
    #[test]
    fn jobs_become_work_with_their_prev_hash_and_older_ones_are_dropped() {
        let (mut m, recorder, path) = miner("jobs", ChannelKind::Extended);
        let (p, q, marker) = ([0x11; 32], [0x22; 32], [0xaa; 32]);
        m.handle(granted(&[1, 2, 3, 4], 8), 0, &recorder).unwrap();
        m.handle(extended_job(1, None, marker), 10, &recorder)
            .unwrap();
        m.handle(extended_job(2, None, marker), 11, &recorder)
            .unwrap();
        assert_eq!(m.jobs.len(), 2, "future jobs wait");
        m.handle(prev_hash(2, p), 20, &recorder).unwrap();
        assert_eq!(
            m.jobs.keys().collect::<Vec<_>>(),
            vec![&2],
            "job 1 is before the tip"
        );
        m.handle(extended_job(3, Some(1_001), marker), 30, &recorder)
            .unwrap();
        m.handle(prev_hash(9, q), 40, &recorder).unwrap();
        assert!(m.jobs.is_empty(), "every job is before job 9");

        let jobs: Vec<(String, String, Option<String>, bool)> = (events(&recorder, &path))
            .into_iter()
            .filter_map(|e| match e {
                Event::JobReceived {
                    job_id,
                    prev_hash,
                    marker_txid,
                    clean,
                    ..
                } => Some((job_id, prev_hash, marker_txid, clean)),
                _ => None,
            })
            .collect();
        let (p, marker) = (
            BlockHash::from_byte_array(p).to_string(),
            bitcoin::Txid::from_byte_array(marker).to_string(),
        );
        assert_eq!(
            jobs,
            vec![
                // The tip's own job: clean.
                ("2".into(), p.clone(), Some(marker.clone()), true),
                // A job for now on the same tip.
                ("3".into(), p, Some(marker), false),
            ]
        );
    }

    /// A standard channel's job carries its merkle root: work without a marker.
    #[test]
    fn a_standard_job_is_work_without_a_marker() {
        let (mut m, recorder, path) = miner("standard", ChannelKind::Standard);
        m.handle(prev_hash(5, [0x33; 32]), 0, &recorder).unwrap();
        let job = MiningOwned::NewMiningJob(NewMiningJobOwned {
            channel_id: 7,
            job_id: 5,
            min_ntime: Sv2OptionOwned::new(Some(1_000)),
            version: 0x2000_0000,
            merkle_root: U256Owned::from([0x44; 32]),
        });
        m.handle(job, 10, &recorder).unwrap();
        let received: Vec<(Option<String>, Option<String>)> = (events(&recorder, &path))
            .into_iter()
            .filter_map(|e| match e {
                Event::JobReceived {
                    marker_txid,
                    work_id,
                    ..
                } => Some((marker_txid, work_id)),
                _ => None,
            })
            .collect();
        assert_eq!(received, vec![(None, None)]);
    }

    /// A success answers every share sent up to its sequence number; an error answers
    /// its one share; an answer to nothing pending is no answer.
    #[test]
    fn answers_are_tied_to_shares_by_sequence_number() {
        let (mut m, recorder, path) = miner("answers", ChannelKind::Extended);
        m.handle(granted(&[1, 2, 3, 4], 8), 0, &recorder).unwrap();
        // Four shares, ids 100 to 103, go out as sequence numbers 0 to 3.
        let mut next_share_id = 100;
        for nonce in 0..4 {
            let found = Found {
                job_id: 1,
                prev_hash: BlockHash::from_byte_array([0x11; 32]),
                nonce,
                ntime: 1_000,
                version: 0x2000_0000,
                standard: false,
                extranonce: vec![0; 8],
                block_hash: None,
            };
            let sent = m.submission(found, &mut next_share_id, &recorder);
            let AnyMessageOwned::Mining(MiningOwned::SubmitSharesExtended(share)) = sent else {
                panic!("an extended share");
            };
            assert_eq!((share.channel_id, share.sequence_number), (7, nonce));
        }
        let success = MiningOwned::SubmitSharesSuccess(SubmitSharesSuccess {
            channel_id: 7,
            last_sequence_number: 1,
            new_submits_accepted_count: 2,
            new_shares_sum: 2,
        });
        m.handle(success, 10, &recorder).unwrap();
        let error = |sequence_number| {
            MiningOwned::SubmitSharesError(SubmitSharesErrorOwned {
                channel_id: 7,
                sequence_number,
                error_code: text("stale-share"),
            })
        };
        m.handle(error(3), 20, &recorder).unwrap();
        m.handle(error(3), 30, &recorder).unwrap();
        assert_eq!(m.pending.keys().collect::<Vec<_>>(), vec![&2]);
        let answered: Vec<(u64, bool, Option<String>)> = (events(&recorder, &path))
            .into_iter()
            .filter_map(|e| match e {
                Event::ShareAnswered {
                    share_id,
                    accepted,
                    error,
                    ..
                } => Some((share_id, accepted, error)),
                _ => None,
            })
            .collect();
        assert_eq!(
            answered,
            vec![
                (100, true, None),
                (101, true, None),
                (103, false, Some("stale-share".into())),
            ]
        );
    }
}
