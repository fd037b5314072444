//! The event schema. Every measured thing is an [`Event`] stamped once, where it happens.
//!
//! Later roles add variants; analysis correlates them by identity (template id, marker
//! txid, job id, block hash), never by time windows.

use serde::{Deserialize, Serialize};

/// One line of an events file: when, who, what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `CLOCK_MONOTONIC` nanoseconds at the moment the event happened.
    pub t_ns: u64,
    /// The role instance that saw it (for example `node`, `pool`, `miners-sv1`).
    pub role: String,
    #[serde(flatten)]
    pub event: Event,
}

/// What an attacker on a link did to a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttackAction {
    /// An SV1 `mining.authorize` now names the attacker's worker.
    AuthorizeRewritten,
    /// An SV1 `mining.submit` now names the attacker's worker.
    SubmitRewritten,
    /// The attacker authorized its own worker on a connection the farm had opened.
    OwnWorkerAuthorized,
    /// A byte of a stream the attacker cannot read (SV2's ciphertext) changed.
    CiphertextChanged,
    /// One bit of the stream flipped.
    ByteFlipped,
    /// An SV1 `mining.submit` the farm never sent, in its worker's name.
    SubmitInjected,
    /// Bytes of the attacker's own in a stream it cannot read (SV2), as a frame.
    FrameInjected,
    /// An SV1 `mining.notify` whose coinbase now pays the attacker.
    JobRewritten,
}

/// How a link's far end fails in an outage (scenario `faults`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    Drop,
    Stall,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Drop => "drop",
            FaultKind::Stall => "stall",
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One end of a connection across the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkEnd {
    Farm,
    Pool,
}

/// Why the tip moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TipCause {
    /// The simulated rest of the network found a block.
    Network,
    /// A block submitted to this node (by a pool under test) was accepted.
    Submitted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// First record of every events file: ties the monotonic clock to calendar time.
    ClockAnchor { wall_ns: u64 },
    /// The node's best chain moved to a new block.
    TipChanged {
        height: u32,
        hash: String,
        prev_hash: String,
        cause: TipCause,
        tx_count: usize,
        fees_sats: u64,
    },
    /// The node built a new block template (and handed it out).
    TemplateBuilt {
        template_id: u64,
        prev_hash: String,
        height: u32,
        /// Subsidy plus fees: what a block on this template pays.
        value_sats: u64,
        fees_sats: u64,
        /// Transactions besides the coinbase, the marker included.
        tx_count: usize,
        weight: u64,
        /// Txid of the template's marker transaction: the first merkle branch a miner sees.
        marker_txid: String,
        /// Who asked: a getblocktemplate client's RPC user, or the face (`tdp`, `ipc`).
        #[serde(default)]
        asker: String,
        /// How long the asker waited for the node's state around the build (another
        /// face's hold of it), and how long the build itself took: what keeps identical
        /// sides alike is that neither waits on the other's build.
        #[serde(default)]
        queued_ns: u64,
        #[serde(default)]
        build_ns: u64,
    },
    /// A real node's getblocktemplate answer passed the RPC tap between it and a pool:
    /// the template as the pool got it, stamped when the whole answer had passed.
    /// `work_id` is its identity, as a job built on it shows it (`mining::work_id`).
    TemplateFetched {
        prev_hash: String,
        height: u32,
        value_sats: u64,
        /// Transactions besides the coinbase.
        tx_count: usize,
        work_id: String,
    },
    /// A real node's Mining IPC told a pool of its tip (getTip, waitTipChanged), as the
    /// IPC tap between them saw the answer pass.
    IpcTipSeen { hash: String, height: u32 },
    /// A Mining IPC call a pool made, answered by the node: its method, and when the call
    /// passed the IPC tap (the event's time is when the answer passed).
    IpcCallAnswered { method: String, asked_ns: u64 },
    /// A started Core's rest of the network submitted its block (stamped at Core's
    /// answer), `late_ns` after the Poisson time it was due: ground ahead, it is late
    /// when the tip moved just before (it is then ground on the new tip) or grinding
    /// outlasted the gap.
    NetworkBlockSent {
        hash: String,
        late_ns: u64,
        accepted: bool,
    },
    /// A block was submitted to the node; `reject_reason` is `None` when it was accepted.
    BlockSubmitted {
        hash: String,
        prev_hash: String,
        height: Option<u32>,
        /// Template the block was built from, when its marker transaction identifies one.
        template_id: Option<u64>,
        via: String,
        reject_reason: Option<String>,
    },
    /// Value of the best template the network could build at this moment (a time series).
    NetworkTemplateValue {
        value_sats: u64,
        fees_sats: u64,
        mempool_txs: usize,
    },
    /// A pool got a template from its node (getblocktemplate, or TDP later).
    PoolTemplate {
        height: u32,
        prev_hash: String,
        value_sats: u64,
        /// First merkle branch of the template: the node's marker txid when the node is
        /// ours, any txid otherwise.
        marker_txid: Option<String>,
        /// Why it was fetched: `new_tip`, `refresh` or `start`.
        reason: String,
    },
    /// A pool sent a job to its miners.
    JobBroadcast {
        job_id: String,
        prev_hash: String,
        marker_txid: Option<String>,
        clean: bool,
        /// The miners it goes to: for our SV1 pool, the connections subscribed and
        /// authorized.
        miners: usize,
    },
    /// A pool's write of a job to the last of the connections it was published to
    /// returned: from its `JobBroadcast` to here is the sender's own fan-out time.
    JobWritten { job_id: String, connections: u32 },
    /// A deployed role's own process, and the host it runs on, over the last second: a
    /// role on another host reports what the harness there cannot read (its CPU time,
    /// user and system, seconds since it started; its resident memory).
    Resources {
        cpu_s: f64,
        rss_bytes: u64,
        host: HostReading,
    },
    /// A miner received a job.
    JobReceived {
        miner: u32,
        job_id: String,
        prev_hash: String,
        marker_txid: Option<String>,
        clean: bool,
        /// The job's prev hash and merkle branches, hashed (`mining::work_id`): its
        /// template's identity where the node marks none (a real node).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        work_id: Option<String>,
    },
    /// A miner sent a share; `block_hash` is set when it also meets the block target.
    ShareSubmitted {
        miner: u32,
        share_id: u64,
        job_id: String,
        prev_hash: String,
        block_hash: Option<String>,
    },
    /// A miner got the answer to its share (which may come before the pool validated it,
    /// as SRI's translator answers).
    ShareAnswered {
        miner: u32,
        share_id: u64,
        accepted: bool,
        error: Option<String>,
    },
    /// Where acceptance is decided: a pool judged a share.
    ShareJudged {
        worker: String,
        job_id: String,
        verdict: ShareVerdict,
        block_hash: Option<String>,
        /// The pool's own words for a rejection, as it sent them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The difficulty the share counts at (1 is 2^32 hashes' worth of work), when
        /// the judge knows it: what the pool credits for it when accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        difficulty: Option<f64>,
    },
    /// An SV1 tap passed a `mining.notify` to a miner's connection.
    Sv1JobRelayed {
        connection: u32,
        job_id: String,
        prev_hash: String,
        /// First merkle branch: the node's marker txid when the node is ours.
        marker_txid: Option<String>,
        clean: bool,
    },
    /// An SV1 tap passed a `mining.set_difficulty` to a miner's connection.
    Sv1DifficultySet { connection: u32, difficulty: f64 },
    /// Lines an SV1 tap passed on that were not JSON (written at the end), per direction.
    TapMalformedLines { up: u64, down: u64 },
    /// A Job Declarator Server answered a DeclareMiningJob (seen by a tap in front of it);
    /// `error` is its error code, `None` when the job was accepted.
    JobDeclared {
        connection: u32,
        request_id: u32,
        /// Transactions the job declared, besides the coinbase.
        tx_count: usize,
        /// From the declaration passing the tap to the answer passing it back.
        round_trip_ms: f64,
        error: Option<String>,
    },
    /// Declarations a tapped connection still waited on when it ended (a JDS that went away
    /// or never answered).
    DeclarationsUnanswered { count: usize },
    /// A tap passed the pool's SetNewPrevHash downstream: from here the downstream (a
    /// translator, say) has the new block's work.
    NewPrevHashRelayed {
        connection: u32,
        /// The channel it activates a job on (0 in runs before channels were recorded).
        #[serde(default)]
        channel: u32,
        prev_hash: String,
    },
    /// A tap passed the pool's job for a channel's work now (a future job becomes work
    /// with its SetNewPrevHash instead).
    Sv2JobRelayed {
        connection: u32,
        channel: u32,
        job_id: u32,
    },
    /// A tap without the pool's key read encrypted bytes from one side (up: from the
    /// miner). A frame's length is in its encrypted header, so a read is all the wire
    /// shows: one frame when frames arrive apart, several when they arrive together.
    EncryptedRead {
        connection: u32,
        up: bool,
        bytes: usize,
    },
    /// A connection through a tap ended (either side closed it, or a message broke it).
    TapConnectionEnded { connection: u32, reason: String },
    /// A tap could not reach its upstream for a client's connection, which it closed;
    /// `refused`: nothing listened there (the connection was refused), as opposed to a
    /// timeout or the tap's own lack of descriptors.
    TapUpstreamUnreachable {
        connection: u32,
        reason: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        refused: bool,
    },
    /// Bytes a standalone tap relayed so far, towards the pool and from it (sampled every
    /// second and at its end).
    TapBytes { up_bytes: u64, down_bytes: u64 },
    /// The operator's node announced a new block on ZMQ `hashblock`, stamped as it was
    /// received (its own delay from the node's tip change is not in it).
    NodeBlockAnnounced { hash: String },
    /// A Job Declarator Server asked for transactions of a declared job it did not know.
    MissingTransactionsRequested {
        connection: u32,
        request_id: u32,
        count: usize,
    },
    /// Bytes a farm's node received by transaction relay so far (modelled: it regenerates
    /// the network's transaction stream; sampled every second).
    TxRelayModelled { bytes: u64 },
    /// Bytes a farm's node received and sent in blocks so far, as BIP152 compact blocks
    /// would carry them (modelled: the emulation moves whole blocks over ZMQ and RPC;
    /// sampled every second).
    BlockRelayModelled { received: u64, sent: u64 },
    /// Bytes that crossed the WAN link so far, per direction (sampled every second).
    LinkBytes { up_bytes: u64, down_bytes: u64 },
    /// An outage of the link's far end (scenario `faults`) began: the `target` it stands
    /// for (`pool`, `jds`), the `fault` (`drop`, `stall`) and how long it lasts.
    FaultBegan {
        target: String,
        fault: FaultKind,
        lasts_ms: f64,
    },
    /// That outage ended.
    FaultEnded { target: String },
    /// A miner turned to its other pool (`to`: `backup` or `primary`), as its firmware
    /// does after failures in a row, or once a check found its primary serving again.
    PoolSwitched { miner: u32, to: String },
    /// An attacker on the link (scenario `link.attack`) began, of this kind.
    AttackBegan { attack: String },
    /// The attacker changed a connection's stream (`conn` numbers the link's connections
    /// from 0), going up (farm to pool) or down, at the moment the bytes reached it.
    AttackApplied {
        conn: u64,
        up: bool,
        action: AttackAction,
        /// The SV1 job it changed (a job hijack), by the pool's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        job_id: Option<String>,
    },
    /// A connection the attacker had changed ended; `by` is the end that closed it first.
    AttackedConnectionClosed { conn: u64, by: LinkEnd },
    /// The link relay's own lateness past due, per direction, in ms (written at the end).
    LinkLateness {
        up_ms: crate::Dist,
        down_ms: crate::Dist,
    },
    /// What a Noise-terminating tap added per frame, per direction, in ms (written at the
    /// end).
    TapLatency {
        up_ms: crate::Dist,
        down_ms: crate::Dist,
    },
    /// A role process ended before the run did.
    RoleExited { name: String, status: String },
}

/// What a pool decided about a share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareVerdict {
    Accepted,
    /// Its job was built on a previous block.
    Stale,
    Duplicate,
    LowDifficulty,
    UnknownJob,
    /// Malformed, unauthorized, bad extranonce or time, ...
    Invalid,
}

impl ShareVerdict {
    /// Every verdict, in the order reports list them.
    pub const ALL: [ShareVerdict; 6] = [
        ShareVerdict::Accepted,
        ShareVerdict::Stale,
        ShareVerdict::Duplicate,
        ShareVerdict::LowDifficulty,
        ShareVerdict::UnknownJob,
        ShareVerdict::Invalid,
    ];

    /// Its name, as events spell it.
    pub fn name(self) -> &'static str {
        match self {
            ShareVerdict::Accepted => "accepted",
            ShareVerdict::Stale => "stale",
            ShareVerdict::Duplicate => "duplicate",
            ShareVerdict::LowDifficulty => "low_difficulty",
            ShareVerdict::UnknownJob => "unknown_job",
            ShareVerdict::Invalid => "invalid",
        }
    }
}

/// The machine's own state over one second, as node exporter reads it from /proc: what
/// says whether the roles had the CPU they needed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostReading {
    /// Each online core's busy share of the second (everything but idle and iowait),
    /// percent, in the order of their numbers.
    pub core_busy_pct: Vec<f64>,
    /// All cores' busy share, percent.
    pub busy_pct: f64,
    /// The busy share of the CPUs the run's roles may use, percent, when those are not all
    /// of the host's (a CPU set of the run's, or `--isolate`'s half): their saturation is
    /// the roles' wait, whatever the other cores do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_cpus_busy_pct: Option<f64>,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
    /// The run directory's filesystem.
    pub fs_avail_bytes: u64,
    pub fs_size_bytes: u64,
    /// Time the run's control group was held back by its CPU quota in the second (its
    /// `cpu.stat`, cgroup v1 or v2), ms; absent without a readable cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_ms: Option<f64>,
    /// The host's hand-back of idle memory, in the seconds a probe of it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_touch: Option<IdleTouch>,
}

/// Memory's first touch after a rest, and the same touch again at once: a host that hands
/// idle memory back slowly (a virtual machine whose host reclaims or moves it) stretches
/// every role's first work after a quiet spell, such as its reaction to a new block.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IdleTouch {
    /// How long the memory was left idle, s.
    pub rest_s: f64,
    /// ms per MiB to touch memory left idle since the previous probe.
    pub idle_ms_per_mib: f64,
    /// ms per MiB to touch it again at once.
    pub hot_ms_per_mib: f64,
}
