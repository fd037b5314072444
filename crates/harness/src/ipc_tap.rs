//! The IPC tap between SV2 pools and a real node's Mining interface (Bitcoin Core v31's
//! or v32's `node.sock`, Cap'n Proto RPC; it reads both): what the RPC tap is for SV1 pools. It listens on a
//! socket of its own, connects each pool to the node's, passes every message unchanged,
//! and reads a copy: each template the node hands the pool (the answer to createNewBlock
//! or waitNext, stamped when it passed), identified once the pool has read its header
//! and coinbase merkle path (`mining::work_id`, as a job built on it shows it), and each
//! tip as it reaches the pool: the node's answer to getTip or waitTipChanged, or the first
//! template on it. Every call a pool makes is timed, from its passing to its answer's
//! (`IpcCallAnswered`): what the node takes to answer each Mining method.

use anyhow::{Context, Result};
use bitcoin::hashes::Hash;
use bitcoin_capnp_types::capnp;
use bitcoin_capnp_types::capnp::traits::HasTypeId;
use bitcoin_capnp_types::capnp_rpc::rpc_capnp::{message, message_target, payload, return_};
use bitcoin_capnp_types::common_capnp::block_ref;
use bitcoin_capnp_types::mining_capnp::{block_template, mining};
use probe::{mono_ns, Event, Recorder};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::task::TaskTracker;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IpcTapConfig {
    /// The node's socket (`<datadir>/<network>/node.sock`).
    pub node_socket: PathBuf,
    /// Where the tap's own socket goes: `<data_dir>/<subdir>/node.sock`, as the pools
    /// configured with `data_dir` and the node's network look for it.
    pub data_dir: PathBuf,
    /// The network's subdirectory (`regtest`, `signet`, `testnet4`; empty for mainnet).
    pub subdir: String,
}

/// Method ordinals of `mining.capnp`, Bitcoin Core v31's and v32.1's (which keeps v31's
/// and adds the rest).
mod methods {
    // Mining
    pub const GET_TIP: u16 = 2;
    pub const WAIT_TIP_CHANGED: u16 = 3;
    pub const CREATE_NEW_BLOCK: u16 = 4;
    /// v32
    pub const SUBMIT_BLOCK: u16 = 7;
    // BlockTemplate
    pub const GET_BLOCK_HEADER: u16 = 1;
    pub const GET_COINBASE_TX: u16 = 5;
    pub const GET_COINBASE_MERKLE_PATH: u16 = 6;
    /// v31's submitSolution (v32 refuses it).
    pub const SUBMIT_SOLUTION_V31: u16 = 7;
    pub const WAIT_NEXT: u16 = 8;
    /// v32's submitSolution, with a reason.
    pub const SUBMIT_SOLUTION: u16 = 10;
}

/// What a call the pool made asks for, kept until its answer passes.
#[derive(Debug, Clone)]
enum Asked {
    Template,
    Tip,
    Header(TemplateRef),
    Coinbase(TemplateRef),
    MerklePath(TemplateRef),
    /// A block the pool submitted, read from the call: its header, its height, and how
    /// it was submitted (which says how to read the answer).
    Solution(bitcoin::block::Header, Option<u32>, Submission),
}

/// The calls that submit a block.
#[derive(Debug, Clone, Copy)]
enum Submission {
    /// BlockTemplate.submitSolution @7 (v31): a bare result.
    SolutionV31,
    /// BlockTemplate.submitSolution @10 (v32): the result with a reason.
    Solution,
    /// Mining.submitBlock @7 (v32): a whole block, the result with a reason.
    Block,
}

/// A template as the pool names it in its calls: a capability the node exported, or the
/// answer of a question not yet returned (a pipelined call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TemplateRef {
    Export(u32),
    Answer(u32),
}

/// What the tap knows of one template so far.
#[derive(Default)]
struct Seen {
    t_ns: u64,
    header: Option<bitcoin::block::Header>,
    branch: Option<Vec<bitcoin::TxMerkleNode>>,
    /// Coinbase value (subsidy and fees) and height, from getCoinbaseTx.
    coinbase: Option<(u64, u32)>,
    recorded: bool,
}

/// One connection's state: the pool's open questions, and its templates.
#[derive(Default)]
struct Connection {
    asked: HashMap<u32, Asked>,
    /// Every open call the pool made, by question: its method and when it passed.
    calls: HashMap<u32, (String, u64)>,
    /// Tips this pool has been handed a template on.
    tips: std::collections::HashSet<bitcoin::BlockHash>,
    /// Questions whose answer is a template, to the export it resolved to.
    answers: HashMap<u32, u32>,
    templates: HashMap<u32, Seen>,
    submitted: Submitted,
    /// The node's RPC, asked where a block v31's submitSolution called processed went
    /// (its answer does not say).
    node: Option<Arc<bitcoind_rpc::RpcClient>>,
    /// Those questions, in flight beside the relay (`IpcTap::settle` waits for them).
    asking: TaskTracker,
}

impl Connection {
    /// A block submitted, once read: kept as this run's own (so the tip it makes is not
    /// taken for the network's), and asked after.
    fn solution(
        &self,
        block: Option<(bitcoin::block::Header, Option<u32>)>,
        submission: Submission,
    ) -> Option<Asked> {
        let (header, height) = block?;
        self.submitted.lock().insert(header.block_hash());
        Some(Asked::Solution(header, height, submission))
    }

    /// The export a template reference names, once known.
    fn export(&self, r: TemplateRef) -> Option<u32> {
        match r {
            TemplateRef::Export(e) => Some(e),
            TemplateRef::Answer(q) => self.answers.get(&q).copied(),
        }
    }

    /// Notes what an answer told of template `r` (`set`), and records the template once
    /// all it needs is known.
    fn read(&mut self, r: TemplateRef, recorder: &Recorder, set: impl FnOnce(&mut Seen)) {
        let Some(e) = self.export(r) else {
            return;
        };
        if let Some(seen) = self.templates.get_mut(&e) {
            set(seen);
        }
        record_if_known(e, self, recorder);
    }
}

/// Blocks the pools submitted, noted as each call passes (the node may announce the
/// block before its answer does): shared with the RPC tap, whose ZMQ tips they mark ours.
pub type Submitted = Arc<parking_lot::Mutex<std::collections::HashSet<bitcoin::BlockHash>>>;

/// A running tap; its socket is removed when dropped.
pub struct IpcTap {
    pub socket: PathBuf,
    task: tokio::task::JoinHandle<()>,
    asking: TaskTracker,
}

impl Drop for IpcTap {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The socket a client configured with `data_dir` and a network of `subdir` opens.
pub fn socket_path(data_dir: &Path, subdir: &str) -> PathBuf {
    match subdir {
        "" => data_dir.join("node.sock"),
        sub => data_dir.join(sub).join("node.sock"),
    }
}

impl IpcTap {
    /// `node`: the node's RPC, without which a block v31's submitSolution calls processed
    /// is recorded as taken (the answer cannot tell one taken from one stored beside
    /// the tip).
    pub async fn start(
        cfg: IpcTapConfig,
        recorder: Recorder,
        submitted: Submitted,
        node: Option<Arc<bitcoind_rpc::RpcClient>>,
    ) -> Result<IpcTap> {
        let socket = socket_path(&cfg.data_dir, &cfg.subdir);
        if let Some(dir) = socket.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)
            .with_context(|| format!("cannot listen on {}", socket.display()))?;
        let node_socket = Arc::new(cfg.node_socket);
        let asking = TaskTracker::new();
        let connections_ask = asking.clone();
        let task = tokio::spawn(async move {
            loop {
                let pool = match listener.accept().await {
                    Ok((pool, _)) => pool,
                    Err(e) => {
                        // Out of descriptors, say: the next connection may be served.
                        tracing::warn!(error = %e, "the IPC tap could not accept a connection");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let (node_socket, recorder) = (node_socket.clone(), recorder.clone());
                let state = Connection {
                    submitted: submitted.clone(),
                    node: node.clone(),
                    asking: connections_ask.clone(),
                    ..Default::default()
                };
                tokio::spawn(async move {
                    match UnixStream::connect(node_socket.as_path()).await {
                        Ok(node) => relay(pool, node, recorder, state).await,
                        Err(e) => tracing::error!(
                            socket = %node_socket.display(),
                            error = %e,
                            "the node's Mining IPC socket refused a pool's connection"
                        ),
                    }
                });
            }
        });
        Ok(IpcTap {
            socket,
            task,
            asking,
        })
    }

    /// Waits, up to `SETTLE`, for the questions still asked of the node about submitted
    /// blocks, so a block found as the run ends is recorded, not lost.
    pub async fn settle(&self) {
        self.asking.close();
        if tokio::time::timeout(SETTLE, self.asking.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                unanswered = self.asking.len(),
                "the node did not say where submitted blocks went: not recorded"
            );
        }
    }
}

/// How long after a block's answer the tap asks where it went.
const ASK_AFTER: std::time::Duration = std::time::Duration::from_millis(250);

/// How long `IpcTap::settle` waits for the node's answers.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

/// Both ways of one pool's connection, each message passed on whole, then read.
async fn relay(pool: UnixStream, node: UnixStream, recorder: Recorder, state: Connection) {
    let (pool_read, pool_write) = pool.into_split();
    let (node_read, node_write) = node.into_split();
    let state = Arc::new(parking_lot::Mutex::new(state));
    let up = pass(pool_read, node_write, state.clone(), recorder.clone(), true);
    let down = pass(node_read, pool_write, state, recorder, false);
    let (up, down) = tokio::join!(up, down);
    for (way, result) in [("to the node", up), ("to the pool", down)] {
        if let Err(e) = result {
            tracing::info!(way, error = format!("{e:#}"), "IPC connection ended");
        }
    }
}

/// The length of the first whole message in `buf` (Cap'n Proto's stream framing: a
/// segment count, each segment's size in words, padding, the segments), if it is whole.
fn framed_len(buf: &[u8]) -> Option<usize> {
    let word = |i: usize| -> Option<usize> {
        Some(u32::from_le_bytes(buf.get(i * 4..i * 4 + 4)?.try_into().ok()?) as usize)
    };
    let segments = word(0)? + 1;
    let header_words = (segments + 1).div_ceil(2);
    let mut len = header_words * 8;
    for s in 0..segments {
        len += word(1 + s)? * 8;
    }
    (buf.len() >= len).then_some(len)
}

/// Copies `from` to `to` a message at a time, reading each: the pool's calls when `up`,
/// the node's answers otherwise.
async fn pass(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    state: Arc<parking_lot::Mutex<Connection>>,
    recorder: Recorder,
    up: bool,
) -> Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        while let Some(len) = framed_len(&buf) {
            let t = mono_ns();
            to.write_all(&buf[..len]).await?;
            let mut state = state.lock();
            if let Err(e) = read_message(&buf[..len], t, up, &mut state, &recorder) {
                tracing::debug!(error = %e, "an IPC message not read");
            }
            drop(state);
            buf.drain(..len);
        }
    }
}

fn read_message(
    bytes: &[u8],
    t: u64,
    up: bool,
    state: &mut Connection,
    recorder: &Recorder,
) -> capnp::Result<()> {
    let options = capnp::message::ReaderOptions {
        traversal_limit_in_words: None,
        nesting_limit: 64,
    };
    let reader = capnp::serialize::read_message_from_flat_slice(&mut &bytes[..], options)?;
    let message: message::Reader = reader.get_root()?;
    match (up, message.which()?) {
        (true, message::Call(call)) => {
            let call = call?;
            let target = match call.get_target()?.which()? {
                message_target::ImportedCap(id) => TemplateRef::Export(id),
                message_target::PromisedAnswer(answer) => {
                    TemplateRef::Answer(answer?.get_question_id())
                }
            };
            // A question id is used again once its answer is finished: a template it named
            // before is not the one it will name.
            state.answers.remove(&call.get_question_id());
            let method = method_name(call.get_interface_id(), call.get_method_id());
            state.calls.insert(call.get_question_id(), (method, t));
            let template = state.export(target).map_or(target, TemplateRef::Export);
            let asked = match (call.get_interface_id(), call.get_method_id()) {
                (mining::Client::TYPE_ID, methods::CREATE_NEW_BLOCK) => Some(Asked::Template),
                (mining::Client::TYPE_ID, methods::GET_TIP | methods::WAIT_TIP_CHANGED) => {
                    Some(Asked::Tip)
                }
                (block_template::Client::TYPE_ID, methods::WAIT_NEXT) => Some(Asked::Template),
                (block_template::Client::TYPE_ID, methods::GET_BLOCK_HEADER) => {
                    Some(Asked::Header(template))
                }
                (block_template::Client::TYPE_ID, methods::GET_COINBASE_TX) => {
                    Some(Asked::Coinbase(template))
                }
                (block_template::Client::TYPE_ID, methods::GET_COINBASE_MERKLE_PATH) => {
                    Some(Asked::MerklePath(template))
                }
                (
                    block_template::Client::TYPE_ID,
                    m @ (methods::SUBMIT_SOLUTION_V31 | methods::SUBMIT_SOLUTION),
                ) => {
                    // v31's @7 and v32's @10 lay their parameters out alike.
                    let p = (call.get_params()?.get_content())
                        .get_as::<block_template::submit_solution_params::Reader>()?;
                    let solution = (p.get_version(), p.get_timestamp(), p.get_nonce());
                    let block = submitted_block(state, template, solution, p.get_coinbase()?);
                    let submission = match m {
                        methods::SUBMIT_SOLUTION_V31 => Submission::SolutionV31,
                        _ => Submission::Solution,
                    };
                    state.solution(block, submission)
                }
                (mining::Client::TYPE_ID, methods::SUBMIT_BLOCK) => {
                    let p = (call.get_params()?.get_content())
                        .get_as::<mining::submit_block_params::Reader>()?;
                    let block = bitcoin::consensus::deserialize::<bitcoin::Block>(p.get_block()?)
                        .ok()
                        .map(|b| (b.header, b.bip34_block_height().ok().map(|h| h as u32)));
                    state.solution(block, Submission::Block)
                }
                _ => None,
            };
            if let Some(asked) = asked {
                state.asked.insert(call.get_question_id(), asked);
            }
        }
        (false, message::Return(ret)) => {
            let ret = ret?;
            if let Some((method, asked_ns)) = state.calls.remove(&ret.get_answer_id()) {
                recorder.record_at(t, Event::IpcCallAnswered { method, asked_ns });
            }
            let Some(asked) = state.asked.remove(&ret.get_answer_id()) else {
                return Ok(());
            };
            match (ret.which()?, asked) {
                (return_::Results(results), asked) => {
                    answered(asked, ret.get_answer_id(), results?, t, state, recorder)?
                }
                // A node that refuses the call (v32 refuses v31's submitSolution) has
                // still been handed the block, and said why it did not take it.
                (return_::Exception(e), Asked::Solution(header, height, _)) => {
                    let reason = e?.get_reason()?.to_string().unwrap_or_default();
                    record_submission(&header, height, Some(reason), t, recorder);
                }
                _ => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// The blocks a tap recorded, in order, each with the node's reject reason (`None`:
/// taken): what a check of block acceptance reads.
pub fn submissions(records: Vec<probe::Record>) -> Vec<(String, Option<String>)> {
    (records.into_iter())
        .filter_map(|r| match r.event {
            Event::BlockSubmitted {
                hash,
                reject_reason,
                ..
            } => Some((hash, reject_reason)),
            _ => None,
        })
        .collect()
}

/// A Mining IPC call as the tap names it: `Mining.createNewBlock`, or the interface and
/// ordinal (`BlockTemplate@2`) of one it does not follow.
fn method_name(interface: u64, method: u16) -> String {
    let (iface, name) = match interface {
        mining::Client::TYPE_ID => (
            "Mining",
            match method {
                methods::GET_TIP => Some("getTip"),
                methods::WAIT_TIP_CHANGED => Some("waitTipChanged"),
                methods::CREATE_NEW_BLOCK => Some("createNewBlock"),
                methods::SUBMIT_BLOCK => Some("submitBlock"),
                _ => None,
            },
        ),
        block_template::Client::TYPE_ID => (
            "BlockTemplate",
            match method {
                methods::GET_BLOCK_HEADER => Some("getBlockHeader"),
                methods::GET_COINBASE_TX => Some("getCoinbaseTx"),
                methods::GET_COINBASE_MERKLE_PATH => Some("getCoinbaseMerklePath"),
                methods::SUBMIT_SOLUTION_V31 => Some("submitSolution@7"),
                methods::WAIT_NEXT => Some("waitNext"),
                methods::SUBMIT_SOLUTION => Some("submitSolution"),
                _ => None,
            },
        ),
        other => return format!("{other:x}@{method}"),
    };
    match name {
        Some(name) => format!("{iface}.{name}"),
        None => format!("{iface}@{method}"),
    }
}

/// An answer to a question the tap follows.
fn answered(
    asked: Asked,
    answer_id: u32,
    results: payload::Reader,
    t: u64,
    state: &mut Connection,
    recorder: &Recorder,
) -> capnp::Result<()> {
    let content = results.get_content();
    match asked {
        Asked::Template => {
            // The answer holds one capability: the template, exported by the node.
            let caps = results.get_cap_table()?;
            use bitcoin_capnp_types::capnp_rpc::rpc_capnp::cap_descriptor;
            if let Some(cap) = caps.iter().next() {
                if let cap_descriptor::SenderHosted(id) = cap.which()? {
                    state.answers.insert(answer_id, id);
                    state.templates.insert(
                        id,
                        Seen {
                            t_ns: t,
                            ..Default::default()
                        },
                    );
                }
            }
        }
        Asked::Tip => {
            let tip: block_ref::Reader = content
                .get_as::<capnp::any_pointer::Reader>()?
                .get_as::<mining::wait_tip_changed_results::Reader>()?
                .get_result()?;
            if let Ok(hash) = bitcoin::BlockHash::from_slice(tip.get_hash()?) {
                recorder.record_at(
                    t,
                    Event::IpcTipSeen {
                        hash: hash.to_string(),
                        height: tip.get_height().max(0) as u32,
                    },
                );
            }
        }
        Asked::Header(r) => {
            let data = content
                .get_as::<block_template::get_block_header_results::Reader>()?
                .get_result()?;
            let header = bitcoin::consensus::deserialize(data).ok();
            state.read(r, recorder, |seen| seen.header = header);
        }
        Asked::Coinbase(r) => {
            let coinbase = content
                .get_as::<block_template::get_coinbase_tx_results::Reader>()?
                .get_result()?;
            let value = coinbase.get_block_reward_remaining().max(0) as u64;
            let height = bip34_height(coinbase.get_script_sig_prefix()?);
            state.read(r, recorder, |seen| {
                seen.coinbase = Some((value, height.unwrap_or(0)))
            });
        }
        Asked::Solution(header, height, submission) => {
            let rejected = match submission {
                Submission::SolutionV31 => {
                    let r =
                        content.get_as::<block_template::submit_solution_old7_results::Reader>()?;
                    match (r.get_result(), &state.node) {
                        (true, Some(node)) => {
                            // Off the relay's path, and after the burst a block brings
                            // (new tips, new templates), so the question takes nothing
                            // from what is measured then.
                            let (node, recorder) = (node.clone(), recorder.clone());
                            state.asking.spawn(async move {
                                tokio::time::sleep(ASK_AFTER).await;
                                let reason = processed_off_chain(&node, &header).await;
                                record_submission(&header, height, reason, t, &recorder);
                            });
                            return Ok(());
                        }
                        (processed, _) => (!processed).then(|| "submitSolution: false".to_string()),
                    }
                }
                Submission::Solution => {
                    let r = content.get_as::<block_template::submit_solution_results::Reader>()?;
                    (!r.get_result()).then(|| reason("submitSolution", r.get_reason()))
                }
                Submission::Block => {
                    let r = content.get_as::<mining::submit_block_results::Reader>()?;
                    (!r.get_result()).then(|| reason("submitBlock", r.get_reason()))
                }
            };
            record_submission(&header, height, rejected, t, recorder);
        }
        Asked::MerklePath(r) => {
            let path = content
                .get_as::<block_template::get_coinbase_merkle_path_results::Reader>()?
                .get_result()?;
            let branch: Vec<bitcoin::TxMerkleNode> = path
                .iter()
                .filter_map(|node| bitcoin::TxMerkleNode::from_slice(node.ok()?).ok())
                .collect();
            state.read(r, recorder, |seen| seen.branch = Some(branch));
        }
    }
    Ok(())
}

/// A submission's reject reason as the node words it: `call: reason`.
fn reason(call: &str, reason: capnp::Result<capnp::text::Reader>) -> String {
    let reason = reason
        .ok()
        .and_then(|r| r.to_string().ok())
        .unwrap_or_default();
    format!(
        "{call}: {}",
        if reason.is_empty() { "false" } else { &reason }
    )
}

/// Where a block v31's submitSolution called processed went. Core's answer is true for
/// every block it stored, "independent of block validity": one taken, and one beside the
/// tip (a race lost, or found invalid when connected). The node's `confirmations` (-1 off
/// its active chain) tells them apart: `None` for a block on the chain, else the reason.
async fn processed_off_chain(
    node: &bitcoind_rpc::RpcClient,
    header: &bitcoin::block::Header,
) -> Option<String> {
    #[derive(Deserialize)]
    struct Confirmations {
        confirmations: i64,
    }
    let hash = header.block_hash();
    match node
        .call::<Confirmations>("getblockheader", serde_json::json!([hash]))
        .await
    {
        Ok(c) if c.confirmations > 0 => None,
        Ok(_) => Some(V31_OFF_CHAIN.to_string()),
        Err(e) => Some(format!("{V31_OFF_CHAIN} (getblockheader: {e})")),
    }
}

/// A block v31's submitSolution called processed that is not on the node's active chain.
pub const V31_OFF_CHAIN: &str = "submitSolution: true, not on the active chain";

fn record_submission(
    header: &bitcoin::block::Header,
    height: Option<u32>,
    reject_reason: Option<String>,
    t: u64,
    recorder: &Recorder,
) {
    recorder.record_at(
        t,
        Event::BlockSubmitted {
            hash: header.block_hash().to_string(),
            prev_hash: header.prev_blockhash.to_string(),
            height,
            template_id: None,
            via: "ipc".into(),
            reject_reason,
        },
    );
}

/// The block a submitSolution call makes of its template: the template's header with the
/// call's version, time and nonce, and the merkle root of its coinbase up the template's
/// path; and its height. `None` for a template the tap has not read, or a coinbase that
/// does not decode.
fn submitted_block(
    state: &Connection,
    template: TemplateRef,
    (version, time, nonce): (u32, u32, u32),
    coinbase: &[u8],
) -> Option<(bitcoin::block::Header, Option<u32>)> {
    let seen = state
        .export(template)
        .and_then(|e| state.templates.get(&e))?;
    let (Some(header), Some(branch)) = (&seen.header, &seen.branch) else {
        return None;
    };
    let coinbase = bitcoin::consensus::deserialize::<bitcoin::Transaction>(coinbase).ok()?;
    let root = ::mining::merkle_root_from_branch(coinbase.compute_txid().to_raw_hash(), branch);
    let header = bitcoin::block::Header {
        version: bitcoin::block::Version::from_consensus(version as i32),
        merkle_root: root,
        time,
        nonce,
        ..*header
    };
    Some((header, seen.coinbase.map(|c| c.1)))
}

/// Records template `e` once its header, merkle path and coinbase are known, stamped when
/// the node handed it to the pool.
fn record_if_known(e: u32, state: &mut Connection, recorder: &Recorder) {
    let Some(seen) = state.templates.get_mut(&e) else {
        return;
    };
    let (Some(header), Some(branch), Some((value, height)), false) =
        (&seen.header, &seen.branch, seen.coinbase, seen.recorded)
    else {
        return;
    };
    seen.recorded = true;
    // A template on a tip the pool had none on is how the tip reaches it (the SRI pool
    // waits on waitNext, which returns on a new tip).
    if state.tips.insert(header.prev_blockhash) {
        recorder.record_at(
            seen.t_ns,
            Event::IpcTipSeen {
                hash: header.prev_blockhash.to_string(),
                height: height.saturating_sub(1),
            },
        );
    }
    recorder.record_at(
        seen.t_ns,
        Event::TemplateFetched {
            prev_hash: header.prev_blockhash.to_string(),
            height,
            value_sats: value,
            // The path has one node per level; the transactions are not read.
            tx_count: 0,
            work_id: ::mining::work_id(&header.prev_blockhash, branch),
        },
    );
}

/// The height a coinbase's script starts with (BIP34: a push of the height).
fn bip34_height(script_sig: &[u8]) -> Option<u32> {
    let (&len, rest) = script_sig.split_first()?;
    match len {
        0x51..=0x60 => Some(u32::from(len - 0x50)),
        1..=4 => {
            let bytes = rest.get(..len as usize)?;
            Some(
                bytes
                    .iter()
                    .rev()
                    .fold(0u32, |h, b| (h << 8) | u32::from(*b)),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_measured_as_capnp_lays_them_out() {
        // One segment of 2 words: header 8 bytes (count-1 = 0, size 2), body 16.
        let mut one = vec![0, 0, 0, 0, 2, 0, 0, 0];
        one.extend([7u8; 16]);
        assert_eq!(framed_len(&one), Some(24));
        assert_eq!(framed_len(&one[..23]), None, "not whole yet");
        // Two segments (1 and 3 words): count, two sizes, padding = 16 bytes, body 32.
        let mut two = vec![1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
        two.extend([0u8; 32]);
        two.extend([9u8; 5]);
        assert_eq!(
            framed_len(&two),
            Some(48),
            "the next message's bytes are not counted"
        );
        assert_eq!(framed_len(&[0, 0]), None);
    }

    /// Our node serving `interface`, and the tap before it (asking the node's RPC where a
    /// processed block went when `ask_rpc`), recording to the returned file.
    async fn tapped_node(
        dir: &Path,
        interface: node::ipc::MiningInterface,
        ask_rpc: bool,
    ) -> (node::NodeHandle, IpcTap, Recorder, PathBuf) {
        let _ = std::fs::remove_dir_all(dir);
        let config = node::NodeConfig {
            scripted_arrivals: Some(Vec::new()),
            ..node::NodeConfig::default()
        };
        let auth = node::RpcAuth::UserPassword {
            user: "u".into(),
            password: "p".into(),
        };
        let node = node::NodeHandle::start(node::NodeOptions {
            ipc: Some(node::ipc::IpcOptions {
                data_dir: dir.join("node"),
                interface,
            }),
            ..node::NodeOptions::local(config, auth)
        })
        .await
        .unwrap();
        let events = dir.join("tap.jsonl");
        let recorder = Recorder::to_file(&events, "ipc-tap").unwrap();
        let rpc = format!("http://{}", node.rpc_addr);
        let rpc = ask_rpc.then(|| Arc::new(bitcoind_rpc::RpcClient::new(&rpc, "u", "p")));
        let tap = IpcTap::start(
            IpcTapConfig {
                node_socket: node.ipc.as_ref().unwrap().socket.clone(),
                data_dir: dir.join("tap"),
                subdir: "regtest".into(),
            },
            recorder.clone(),
            Submitted::default(),
            rpc,
        )
        .await
        .unwrap();
        (node, tap, recorder, events)
    }

    /// A client of Bitcoin Core v31's interface through the tap: v31's submitSolution
    /// answers true for every block the node processed, and the tap asks the node where
    /// each went: the block taken is recorded as taken, a rival on the same template
    /// (stored beside the tip, a race lost) with the reason. Without the node's RPC, the
    /// tap cannot tell and records both taken.
    #[tokio::test]
    async fn v31_blocks_called_processed_are_recorded_where_they_went() {
        for ask_rpc in [true, false] {
            let dir =
                std::env::temp_dir().join(format!("sb-tap-v31-{ask_rpc}-{}", std::process::id()));
            let (node, tap, recorder, events) =
                tapped_node(&dir, node::ipc::MiningInterface::V31, ask_rpc).await;
            let socket = tap.socket.clone();
            let local = tokio::task::LocalSet::new();
            let (first, rival) = local
                .run_until(async move {
                    let init = node::ipc::connect(&socket).await.unwrap();
                    let mining = node::ipc::mining_client(&init).await.unwrap();
                    let (template, first) = mining.mined_as_a_pool().await.unwrap();
                    let mut rival = first.clone();
                    rival.header.nonce = rival.header.nonce.wrapping_add(1);
                    node::ipc::grind(&mut rival.header);
                    for block in [&first, &rival] {
                        let answer = mining.submit_solution(
                            &template,
                            block,
                            node::ipc::MiningInterface::V31,
                        );
                        assert_eq!(answer.await.unwrap(), (true, String::new()));
                    }
                    (first, rival)
                })
                .await;
            tap.settle().await;
            recorder.close().unwrap();
            let submitted = submissions(probe::recorder::read_events(&events).unwrap());
            let (one, two) = (
                first.block_hash().to_string(),
                rival.block_hash().to_string(),
            );
            let off_chain = ask_rpc.then(|| V31_OFF_CHAIN.to_string());
            let mut expected = vec![(one, None), (two, off_chain)];
            let mut submitted = submitted;
            submitted.sort();
            expected.sort();
            assert_eq!(submitted, expected, "asking the node: {ask_rpc}");
            drop(tap);
            node.shutdown().await.unwrap();
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A client of Bitcoin Core v32.1's interface through the tap, against our node serving
    /// it: the template read as a pool reads it, the v31 submitSolution refused with
    /// Core's words and recorded so, v32's submitSolution and submitBlock taken and
    /// recorded with the blocks' own hashes.
    #[tokio::test]
    async fn v32_submissions_through_the_tap_are_recorded_with_the_nodes_answer() {
        use node::ipc::MiningInterface::{V31, V32};
        let dir = std::env::temp_dir().join(format!("sb-tap-v32-{}", std::process::id()));
        let (node, tap, recorder, events) = tapped_node(&dir, V32, false).await;
        let socket = tap.socket.clone();
        let local = tokio::task::LocalSet::new();
        let (first, second) = local
            .run_until(async move {
                let init = node::ipc::connect(&socket).await.unwrap();
                let mining = node::ipc::mining_client(&init).await.unwrap();
                let (template, first) = mining.mined_as_a_pool().await.unwrap();
                let submit = |interface| mining.submit_solution(&template, &first, interface);
                let error = submit(V31).await.expect_err("v32 refuses @7");
                assert!(
                    error.to_string().contains(node::ipc::OLD_SUBMIT_SOLUTION),
                    "{error}"
                );
                assert_eq!(submit(V32).await.unwrap(), (true, String::new()));

                // On the new tip, a whole block.
                let next = mining.new_template().await.unwrap();
                let second = mining.mine(&next).await.unwrap();
                let taken = mining.submit_block(&second).await.unwrap();
                assert_eq!(taken, (true, String::new()), "submitBlock");
                (first, second)
            })
            .await;
        recorder.close().unwrap();
        let recorded = probe::recorder::read_events(&events).unwrap();
        // Every call is timed from its passing to its answer's, named by its method.
        let calls: Vec<&str> = (recorded.iter())
            .filter_map(|r| match &r.event {
                Event::IpcCallAnswered { method, asked_ns } => {
                    assert!(*asked_ns <= r.t_ns, "{method} answered before it was asked");
                    Some(method.as_str())
                }
                _ => None,
            })
            .collect();
        for method in [
            "Mining.createNewBlock",
            "BlockTemplate.submitSolution@7",
            "BlockTemplate.submitSolution",
            "Mining.submitBlock",
        ] {
            assert!(calls.contains(&method), "{method} not in {calls:?}");
        }
        let submitted = submissions(recorded);
        let (one, two) = (
            first.block_hash().to_string(),
            second.block_hash().to_string(),
        );
        assert_eq!(submitted.len(), 3, "{submitted:?}");
        assert_eq!(submitted[0].0, one);
        let refused = submitted[0].1.as_deref().unwrap_or_default();
        assert!(
            refused.contains(node::ipc::OLD_SUBMIT_SOLUTION),
            "{refused}"
        );
        assert_eq!(submitted[1], (one, None), "v32's submitSolution, taken");
        assert_eq!(submitted[2], (two, None), "submitBlock, taken");
        drop(tap);
        node.shutdown().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn heights_are_read_from_bip34_pushes() {
        assert_eq!(bip34_height(&[0x03, 0x40, 0x0d, 0x03]), Some(200_000));
        assert_eq!(bip34_height(&[0x01, 0x65]), Some(101));
        assert_eq!(bip34_height(&[0x55]), Some(5));
        assert_eq!(bip34_height(&[]), None);
    }
}
