//! The Bitcoin Core Mining IPC face: what `pool_sv2` and its embedded Job Declaration
//! Server, and `jd_client_sv2`, use as their template provider when configured with
//! `BitcoinCoreIpc`, and what sv2-tp reads. It serves the interface of Bitcoin Core v31 or
//! of v32.1 ([`MiningInterface`]), one schema (v32.1's `mining.capnp`, which keeps v31's
//! ordinals) with what each release answers.
//!
//! Cap'n Proto RPC over the UNIX socket `<data_dir>/regtest/node.sock`, as Bitcoin Core
//! lays it out: Init.construct / makeMining, ThreadMap.makeThread, Mining.createNewBlock /
//! checkBlock / getTip / waitTipChanged, and per template getBlockHeader, getBlock,
//! getCoinbaseTx, getCoinbaseMerklePath, getTxFees, getTxSigops, submitSolution, waitNext
//! and interruptWait. The templates are the node's own (each built for the client that
//! asks, marker transaction included), and a solution is judged as submitblock is.
//!
//! capnp-rpc is single-threaded, so the face runs on a thread of its own with a local
//! task set; every connection gets an RpcSystem, all of them share the one chain.

use crate::shared::Shared;
use crate::template::Template;
use anyhow::{Context as _, Result};
use bitcoin::hashes::Hash;
use bitcoin_capnp_types::capnp;
use bitcoin_capnp_types::capnp::capability::Rc;
use bitcoin_capnp_types::capnp_rpc::{self, rpc_twoparty_capnp, twoparty, RpcSystem};
use bitcoin_capnp_types::init_capnp::init;
use bitcoin_capnp_types::mining_capnp::{block_template, mining};
use bitcoin_capnp_types::proxy_capnp::{self, thread, thread_map};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// How often a waitNext looks for a better template on the same tip (Bitcoin Core looks
/// about every second).
const WAIT_NEXT_POLL: Duration = Duration::from_secs(1);

/// The answer to a client of an older Mining interface.
pub const UNSUPPORTED_VERSION: &str = "unsupported Mining IPC interface version: this node serves interface version 31 or later (Bitcoin Core v31, Init.makeMining @3); the client called Init @2, makeMining of version 30. Configure the client for version 31 (SRI: template_provider_type.BitcoinCoreIpc.version = 31)";

pub use model::network::MiningInterface;

/// The face's options: where its socket goes, and which interface it serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpcOptions {
    /// The socket is `<data_dir>/regtest/node.sock`.
    pub data_dir: PathBuf,
    #[serde(default)]
    pub interface: MiningInterface,
}

/// All the bitcoin there will be, in sats: waitNext's default fee threshold, which only
/// a new tip meets.
pub const MAX_MONEY: i64 = 21_000_000 * 100_000_000;

/// What Bitcoin Core v32 answers a client that calls the v31 submitSolution.
pub const OLD_SUBMIT_SOLUTION: &str =
    "Old submitSolution (@7) not supported. Please update your client!";

impl Face {
    /// What v31 answers for a method v32 added: Cap'n Proto's for a method it lacks.
    fn v32_only(&self) -> Result<(), capnp::Error> {
        match self.interface {
            MiningInterface::V31 => Err(not_implemented()),
            MiningInterface::V32 => Ok(()),
        }
    }
}

/// As Bitcoin Core (libmultiprocess) refuses it: a call whose context names no thread
/// of the client's (ThreadMap.makeThread), when no pool of threads is configured (v32's
/// ThreadMap.makePool, which this node does not offer).
fn threaded(context: capnp::Result<proxy_capnp::context::Reader<'_>>) -> Result<(), capnp::Error> {
    match context?.has_thread() {
        true => Ok(()),
        false => Err(failed(NO_THREAD)),
    }
}

/// Bitcoin Core's words for a call without a thread.
pub const NO_THREAD: &str = "no thread specified and no pool configured";

/// What a server answers for a method it does not have.
fn not_implemented() -> capnp::Error {
    capnp::Error::unimplemented("Method not implemented.".to_string())
}

/// Transaction ids as a lookup carries them, each 32 bytes.
fn hashes32(list: capnp::data_list::Reader<'_>) -> Result<Vec<[u8; 32]>, capnp::Error> {
    (list.iter())
        .map(|id| <[u8; 32]>::try_from(id?).map_err(|_| failed("a txid or wtxid is 32 bytes")))
        .collect()
}

/// The socket a client configured with `network = "regtest"` and `data_dir` connects to.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("regtest").join("node.sock")
}

/// A running IPC face: its socket, removed when dropped.
pub struct IpcFace {
    pub socket: PathBuf,
}

impl Drop for IpcFace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Binds `<data_dir>/regtest/node.sock` and serves it on a thread of its own.
pub fn start(shared: Arc<Shared>, options: &IpcOptions) -> Result<IpcFace> {
    let interface = options.interface;
    let socket = socket_path(&options.data_dir);
    let dir = socket.parent().expect("the socket has a directory");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if socket.exists() {
        // A socket left by a node that died; a live one answers.
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            anyhow::bail!(
                "{} is in use by another node (choose another data directory)",
                socket.display()
            );
        }
        std::fs::remove_file(&socket)?;
    }
    let std_listener = std::os::unix::net::UnixListener::bind(&socket)
        .with_context(|| format!("cannot listen for IPC on {}", socket.display()))?;
    std_listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("ipc".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the IPC face");
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, async move {
                let listener = match tokio::net::UnixListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!(error = %e, "IPC listener failed");
                        return;
                    }
                };
                let mut stop = shared.subscribe_stop();
                let mut connections = 0u64;
                loop {
                    let (stream, _) = tokio::select! {
                        a = probe::listen::accept_next("Mining IPC", || listener.accept()) => a,
                        _ = stop.wait_for(|s| *s) => break,
                    };
                    let (read, write) = stream.into_split();
                    connections += 1;
                    let asker = format!("ipc {connections}");
                    let rpc = serve_connection(&shared, interface, read, write, asker);
                    tokio::task::spawn_local(async move {
                        match rpc.await {
                            Ok(()) => tracing::info!("IPC client left"),
                            Err(e) => tracing::info!(error = %e, "IPC connection closed"),
                        }
                    });
                    tracing::info!("IPC client connected");
                }
            });
        })
        .context("cannot start the IPC thread")?;
    Ok(IpcFace { socket })
}

/// A client of the Mining IPC at `socket`: its Init capability, its RPC system running
/// on the current local task set (capnp-rpc is single-threaded).
pub async fn connect(socket: &Path) -> std::io::Result<init::Client> {
    let stream = tokio::net::UnixStream::connect(socket).await?;
    let (read, write) = stream.into_split();
    let network = twoparty::VatNetwork::new(
        read.compat(),
        write.compat_write(),
        rpc_twoparty_capnp::Side::Client,
        Default::default(),
    );
    let mut rpc = RpcSystem::new(Box::new(network), None);
    let client: init::Client = rpc.bootstrap(rpc_twoparty_capnp::Side::Server);
    tokio::task::spawn_local(rpc);
    Ok(client)
}

/// A client's Mining interface, and the thread of its own its calls name: Bitcoin Core
/// refuses a call whose context names no thread ("no thread specified").
pub struct MiningClient {
    pub mining: mining::Client,
    pub thread: thread::Client,
}

/// The Mining interface (version 31 or 32), asked for as the SRI roles ask:
/// Init.construct for the thread map, a thread of the client's, then Init.makeMining with
/// it in its context.
pub async fn mining_client(init: &init::Client) -> Result<MiningClient, capnp::Error> {
    let constructed = init.construct_request().send().promise.await?;
    let thread_map = constructed.get()?.get_thread_map()?;
    let made = thread_map.make_thread_request().send().promise.await?;
    let thread = made.get()?.get_result()?;
    let mut request = init.make_mining_request();
    request.get().get_context()?.set_thread(thread.clone());
    let reply = request.send().promise.await?;
    let mining = reply.get()?.get_result()?;
    Ok(MiningClient { mining, thread })
}

impl MiningClient {
    /// A new template (createNewBlock with Core's default options, no cooldown: a
    /// template at once, as on a synced node).
    pub async fn new_template(&self) -> Result<block_template::Client, capnp::Error> {
        let mut request = self.mining.create_new_block_request();
        request.get().get_context()?.set_thread(self.thread.clone());
        request.get().set_cooldown(false);
        request.get().init_options();
        let reply = request.send().promise.await?;
        reply.get()?.get_result()
    }

    /// A new template, read as the SRI pool reads one (so the IPC tap knows it), and a
    /// block mined on it.
    pub async fn mined_as_a_pool(
        &self,
    ) -> Result<(block_template::Client, bitcoin::Block), capnp::Error> {
        let template = self.new_template().await?;
        self.read_as_a_pool(&template).await?;
        let block = self.mine(&template).await?;
        Ok((template, block))
    }

    /// What the SRI pool reads of a template before it makes a job of it: its header,
    /// coinbase and coinbase merkle path (what lets the IPC tap know the template).
    pub async fn read_as_a_pool(
        &self,
        template: &block_template::Client,
    ) -> Result<(), capnp::Error> {
        let mut header = template.get_block_header_request();
        header.get().get_context()?.set_thread(self.thread.clone());
        header.send().promise.await?;
        let mut coinbase = template.get_coinbase_tx_request();
        coinbase
            .get()
            .get_context()?
            .set_thread(self.thread.clone());
        coinbase.send().promise.await?;
        let mut path = template.get_coinbase_merkle_path_request();
        path.get().get_context()?.set_thread(self.thread.clone());
        path.send().promise.await?;
        Ok(())
    }

    /// A template's block as a client mines it: its bare coinbase, the nonce ground until
    /// the header meets the target (a few tries at regtest's).
    pub async fn mine(
        &self,
        template: &block_template::Client,
    ) -> Result<bitcoin::Block, capnp::Error> {
        let mut request = template.get_block_request();
        request.get().get_context()?.set_thread(self.thread.clone());
        let reply = request.send().promise.await?;
        let mut block: bitcoin::Block =
            bitcoin::consensus::deserialize(reply.get()?.get_result()?).map_err(failed)?;
        // Bitcoin Core leaves the root to the solution's submitter.
        block.header.merkle_root = block
            .compute_merkle_root()
            .ok_or_else(|| failed("a block without transactions"))?;
        grind(&mut block.header);
        Ok(block)
    }

    /// waitNext on `template`, up to `timeout_ms`, for a new tip or fees grown by
    /// `fee_threshold` sats ([`MAX_MONEY`]: a new tip only, Core's default): the call is
    /// sent now, the future gives its answer (`None` at the timeout).
    pub fn wait_next(
        &self,
        template: &block_template::Client,
        timeout_ms: f64,
        fee_threshold: i64,
    ) -> impl std::future::Future<Output = Result<Option<block_template::Client>, capnp::Error>>
    {
        let mut request = template.wait_next_request();
        let sent = (|| {
            request.get().get_context()?.set_thread(self.thread.clone());
            let mut options = request.get().init_options();
            options.set_timeout(timeout_ms);
            options.set_fee_threshold(fee_threshold);
            Ok::<_, capnp::Error>(())
        })();
        let promise = sent.map(|()| request.send().promise);
        async move {
            let reply = promise?.await?;
            let r = reply.get()?;
            Ok(if r.has_result() {
                Some(r.get_result()?)
            } else {
                None
            })
        }
    }

    /// Submits a whole block (v32's submitBlock): whether the node took it, and its reason.
    pub async fn submit_block(
        &self,
        block: &bitcoin::Block,
    ) -> Result<(bool, String), capnp::Error> {
        let mut request = self.mining.submit_block_request();
        request.get().get_context()?.set_thread(self.thread.clone());
        request
            .get()
            .set_block(&bitcoin::consensus::serialize(block));
        let reply = request.send().promise.await?;
        let r = reply.get()?;
        Ok((r.get_result(), r.get_reason()?.to_string()?))
    }

    /// Submits `block`, mined on `template`, with the submitSolution of `interface` (v31's
    /// @7, v32's @10), as sv2-tp picks by the node's version: whether the node took it,
    /// and its reason (v31's call gives none).
    pub async fn submit_solution(
        &self,
        template: &block_template::Client,
        block: &bitcoin::Block,
        interface: MiningInterface,
    ) -> Result<(bool, String), capnp::Error> {
        let h = &block.header;
        let coinbase = bitcoin::consensus::serialize(&block.txdata[0]);
        // Both calls' parameters are laid out alike (context, version, timestamp, nonce,
        // coinbase); only the ordinal and the answer differ.
        macro_rules! fill {
            ($request:expr) => {{
                let mut request = $request;
                let mut p = request.get();
                p.reborrow().get_context()?.set_thread(self.thread.clone());
                p.set_version(h.version.to_consensus() as u32);
                p.set_timestamp(h.time);
                p.set_nonce(h.nonce);
                p.set_coinbase(&coinbase);
                request
            }};
        }
        match interface {
            MiningInterface::V31 => {
                let request = fill!(template.submit_solution_old7_request());
                let reply = request.send().promise.await?;
                Ok((reply.get()?.get_result(), String::new()))
            }
            MiningInterface::V32 => {
                let reply = fill!(template.submit_solution_request())
                    .send()
                    .promise
                    .await?;
                let r = reply.get()?;
                Ok((r.get_result(), r.get_reason()?.to_string()?))
            }
        }
    }
}

/// Checks that `socket` serves Bitcoin Core's Mining interface as the SRI pool will ask for
/// it ([`mining_client`]: Init.makeMining @3, which a v30 node does not have), before a run
/// starts anything on it, and says how it takes solutions: v32.1's submitSolution @10
/// answers (here an empty coinbase, which it refuses), a node without it takes v31's @7.
/// (A Core built between the two, with v32's lookups and v31's submitSolution, is 31
/// here: what matters to a client is how it submits.) An error says what answered
/// instead. It builds one template, and blocks for up to 5 s, on a thread of its own
/// (capnp-rpc is single-threaded).
pub fn check_served(socket: &Path) -> Result<MiningInterface> {
    let socket = socket.to_path_buf();
    // capnp-rpc is single-threaded: its own thread, runtime and local set.
    std::thread::spawn(move || -> Result<MiningInterface> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async move {
            let client = connect(&socket)
                .await
                .context("cannot connect (is the node started with -ipcbind=unix?)")?;
            let ask = async {
                let client = mining_client(&client).await?;
                let template = client.new_template().await?;
                let mut probe = template.submit_solution_request();
                probe.get().get_context()?.set_thread(client.thread.clone());
                let interface = match probe.send().promise.await {
                    Err(e) if e.kind == capnp::ErrorKind::Unimplemented => MiningInterface::V31,
                    _ => MiningInterface::V32,
                };
                Ok::<_, capnp::Error>(interface)
            };
            match tokio::time::timeout(Duration::from_secs(5), ask).await {
                Ok(Ok(interface)) => Ok(interface),
                Ok(Err(e)) => anyhow::bail!(
                    "does not serve Bitcoin Core's Mining interface of version 31 or 32 (Core v31 or later, or sv2-tp's node): it answered {e}"
                ),
                Err(_) => anyhow::bail!(
                    "no Cap'n Proto answer within 5 s: not Bitcoin Core's Mining IPC"
                ),
            }
        })
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the IPC check panicked"))?
}

/// The Mining interface served to one client over any byte stream (a socket, or the
/// fuzzer's bytes); it ends when the client does. `asker` names the connection in the
/// node's record of its builds.
pub(crate) fn serve_connection(
    shared: &Arc<Shared>,
    interface: MiningInterface,
    read: impl tokio::io::AsyncRead + Unpin + 'static,
    write: impl tokio::io::AsyncWrite + Unpin + 'static,
    asker: String,
) -> RpcSystem<rpc_twoparty_capnp::Side> {
    let network = twoparty::VatNetwork::new(
        read.compat(),
        write.compat_write(),
        rpc_twoparty_capnp::Side::Server,
        Default::default(),
    );
    let init: init::Client = capnp_rpc::new_client(InitServer {
        face: Face {
            shared: shared.clone(),
            interface,
            asker: asker.into(),
        },
    });
    RpcSystem::new(Box::new(network), Some(init.client))
}

fn failed(e: impl std::fmt::Display) -> capnp::Error {
    capnp::Error::failed(e.to_string())
}

/// What every capability of one connection shares: the node, the interface served, and
/// the connection's name in the node's record of its builds.
#[derive(Clone)]
struct Face {
    shared: Arc<Shared>,
    interface: MiningInterface,
    asker: std::rc::Rc<str>,
}

struct InitServer {
    face: Face,
}

impl init::Server for InitServer {
    async fn construct(
        self: Rc<Self>,
        _: init::ConstructParams,
        mut results: init::ConstructResults,
    ) -> Result<(), capnp::Error> {
        let map: thread_map::Client = capnp_rpc::new_client(ThreadMapServer);
        results.get().set_thread_map(map);
        Ok(())
    }

    /// Init @2 is makeMining in interface version 30: a client built for it gets told,
    /// as Bitcoin Core v31 tells it.
    async fn make_mining_old2(
        self: Rc<Self>,
        _: init::MakeMiningOld2Params,
        _: init::MakeMiningOld2Results,
    ) -> Result<(), capnp::Error> {
        tracing::warn!("an IPC client asked for the Mining interface of version 30");
        Err(capnp::Error::failed(UNSUPPORTED_VERSION.to_string()))
    }

    /// As Bitcoin Core (libmultiprocess) does, a call without a thread of the client's
    /// (ThreadMap.makeThread, passed in its context) is refused.
    async fn make_mining(
        self: Rc<Self>,
        params: init::MakeMiningParams,
        mut results: init::MakeMiningResults,
    ) -> Result<(), capnp::Error> {
        if !params.get()?.get_context()?.has_thread() {
            return Err(failed("invalid thread handle"));
        }
        let mining: mining::Client = capnp_rpc::new_client(MiningServer {
            face: self.face.clone(),
        });
        results.get().set_result(mining);
        Ok(())
    }
}

/// Threads exist so Bitcoin Core knows where to run a call; ours all run here.
struct ThreadMapServer;

impl thread_map::Server for ThreadMapServer {
    async fn make_thread(
        self: Rc<Self>,
        params: thread_map::MakeThreadParams,
        mut results: thread_map::MakeThreadResults,
    ) -> Result<(), capnp::Error> {
        let name = params.get()?.get_name()?.to_string()?;
        let thread: thread::Client = capnp_rpc::new_client(ThreadServer { name });
        results.get().set_result(thread);
        Ok(())
    }
}

struct ThreadServer {
    name: String,
}

impl thread::Server for ThreadServer {
    async fn get_name(
        self: Rc<Self>,
        _: thread::GetNameParams,
        mut results: thread::GetNameResults,
    ) -> Result<(), capnp::Error> {
        results.get().set_result(&self.name);
        Ok(())
    }
}

struct MiningServer {
    face: Face,
}

impl mining::Server for MiningServer {
    async fn is_test_chain(
        self: Rc<Self>,
        params: mining::IsTestChainParams,
        mut results: mining::IsTestChainResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        results.get().set_result(true);
        Ok(())
    }

    async fn is_initial_block_download(
        self: Rc<Self>,
        params: mining::IsInitialBlockDownloadParams,
        mut results: mining::IsInitialBlockDownloadResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        results.get().set_result(false);
        Ok(())
    }

    async fn get_tip(
        self: Rc<Self>,
        params: mining::GetTipParams,
        mut results: mining::GetTipResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let (hash, height) = {
            let state = self.face.shared.sync();
            (state.tip_hash(), state.chain().height())
        };
        let mut r = results.get();
        let mut tip = r.reborrow().init_result();
        tip.set_hash(hash.as_byte_array());
        tip.set_height(height as i32);
        r.set_has_result(true);
        Ok(())
    }

    async fn wait_tip_changed(
        self: Rc<Self>,
        params: mining::WaitTipChangedParams,
        mut results: mining::WaitTipChangedResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let p = params.get()?;
        let current = p.get_current_tip()?.to_vec();
        let timeout = millis(p.get_timeout());
        let mut tips = self.face.shared.subscribe_tip();
        let changed = async {
            while tips.borrow_and_update().as_byte_array()[..] == current[..] {
                if tips.changed().await.is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, changed).await;
        let (hash, height) = {
            let state = self.face.shared.sync();
            (state.tip_hash(), state.chain().height())
        };
        let mut tip = results.get().init_result();
        tip.set_hash(hash.as_byte_array());
        tip.set_height(height as i32);
        Ok(())
    }

    async fn create_new_block(
        self: Rc<Self>,
        params: mining::CreateNewBlockParams,
        mut results: mining::CreateNewBlockResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let face = &self.face;
        let template = face.shared.build_template(&face.asker);
        results
            .get()
            .set_result(TemplateServer::client(face, template));
        Ok(())
    }

    async fn check_block(
        self: Rc<Self>,
        params: mining::CheckBlockParams,
        mut results: mining::CheckBlockResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let p = params.get()?;
        let options = p.get_options()?;
        let checks = crate::validate::Checks {
            pow: options.get_check_pow(),
            merkle_root: options.get_check_merkle_root(),
        };
        let verdict = judged(p.get_block()?, |block| {
            self.face.shared.sync().check_proposal(&block, checks)
        });
        answer_verdict!(results, verdict);
        Ok(())
    }

    async fn interrupt(
        self: Rc<Self>,
        _: mining::InterruptParams,
        _: mining::InterruptResults,
    ) -> Result<(), capnp::Error> {
        // createNewBlock answers at once here, so there is nothing to interrupt.
        Ok(())
    }

    /// v32: a whole block, judged as submitblock judges it.
    async fn submit_block(
        self: Rc<Self>,
        params: mining::SubmitBlockParams,
        mut results: mining::SubmitBlockResults,
    ) -> Result<(), capnp::Error> {
        // What v32 added is missing from v31, with or without a thread.
        self.face.v32_only()?;
        threaded(params.get()?.get_context())?;
        let verdict = judged(params.get()?.get_block()?, |block| {
            let hash = block.block_hash();
            let verdict = self.face.shared.judge_block(block, "ipc");
            let said = verdict.as_deref().unwrap_or("accepted");
            tracing::info!(%hash, verdict = said, "block from IPC submitBlock");
            verdict
        });
        answer_verdict!(results, verdict);
        Ok(())
    }

    /// v32: mempool transactions by txid, an empty entry for one not there (as Core
    /// serializes a transaction it does not have).
    async fn get_transactions_by_tx_i_d(
        self: Rc<Self>,
        params: mining::GetTransactionsByTxIDParams,
        mut results: mining::GetTransactionsByTxIDResults,
    ) -> Result<(), capnp::Error> {
        // What v32 added is missing from v31, with or without a thread.
        self.face.v32_only()?;
        threaded(params.get()?.get_context())?;
        let asked = hashes32(params.get()?.get_txids()?)?;
        let found: Vec<Vec<u8>> = {
            let state = self.face.shared.sync();
            (asked.into_iter())
                .map(|id| state.mempool().get(&bitcoin::Txid::from_byte_array(id)))
                .map(|tx| {
                    tx.map(|m| bitcoin::consensus::serialize(&m.tx))
                        .unwrap_or_default()
                })
                .collect()
        };
        set_data_list(results.get().init_result(found.len() as u32), &found);
        Ok(())
    }

    /// v32: mempool transactions by wtxid, an empty entry for one not there.
    async fn get_transactions_by_witness_i_d(
        self: Rc<Self>,
        params: mining::GetTransactionsByWitnessIDParams,
        mut results: mining::GetTransactionsByWitnessIDResults,
    ) -> Result<(), capnp::Error> {
        // What v32 added is missing from v31, with or without a thread.
        self.face.v32_only()?;
        threaded(params.get()?.get_context())?;
        let asked = hashes32(params.get()?.get_wtxids()?)?;
        let found: Vec<Vec<u8>> = {
            let state = self.face.shared.sync();
            // One pass over the mempool, however many are asked for.
            let wanted: std::collections::HashSet<_> = asked.iter().collect();
            let by_wtxid: std::collections::HashMap<_, _> = (state.mempool().by_feerate())
                .map(|m| (m.wtxid.to_byte_array(), m))
                .filter(|(w, _)| wanted.contains(w))
                .map(|(w, m)| (w, bitcoin::consensus::serialize(&m.tx)))
                .collect();
            (asked.iter())
                .map(|w| by_wtxid.get(w).cloned().unwrap_or_default())
                .collect()
        };
        set_data_list(results.get().init_result(found.len() as u32), &found);
        Ok(())
    }
}

/// Sets a reply's result, reason and debug (check_block's, submit_block's and v32
/// submitSolution's, alike but of different types) from a verdict: `None` is taken.
macro_rules! answer_verdict {
    ($results:expr, $verdict:expr) => {{
        let mut r = $results.get();
        r.set_result($verdict.is_none());
        r.set_reason($verdict.as_deref().unwrap_or(""));
        r.set_debug("");
    }};
}
use answer_verdict;

/// A block a client sent, judged: `None` when taken, else the reason (Core's
/// `block-decode-failed` for bytes that are no block).
fn judged(bytes: &[u8], judge: impl FnOnce(bitcoin::Block) -> Option<String>) -> Option<String> {
    match bitcoin::consensus::deserialize::<bitcoin::Block>(bytes) {
        Ok(block) => judge(block),
        Err(_) => Some("block-decode-failed".to_string()),
    }
}

/// Raises `header`'s nonce, from where it is, until the header meets its target.
pub fn grind(header: &mut bitcoin::block::Header) {
    let target = bitcoin::Target::from_compact(header.bits);
    while header.validate_pow(target).is_err() {
        header.nonce = header.nonce.wrapping_add(1);
    }
}

fn set_data_list(mut list: capnp::data_list::Builder<'_>, items: &[Vec<u8>]) {
    for (i, item) in items.iter().enumerate() {
        list.set(i as u32, item);
    }
}

/// One template handed out over IPC.
struct TemplateServer {
    face: Face,
    template: Arc<Template>,
    /// Bumped by interruptWait: a waitNext in progress returns without a template.
    interrupts: AtomicU64,
}

impl TemplateServer {
    fn client(face: &Face, template: Arc<Template>) -> block_template::Client {
        capnp_rpc::new_client(TemplateServer {
            face: face.clone(),
            template,
            interrupts: AtomicU64::new(0),
        })
    }

    /// The template's block with a bare coinbase, as Bitcoin Core's CreateNewBlock has.
    fn block(&self) -> bitcoin::Block {
        let t = &self.template;
        let coinbase = crate::template::network_coinbase(
            t.height,
            b"",
            t.value(),
            Some(&t.witness_commitment),
        );
        t.block_with(coinbase, t.mintime, 0)
    }

    /// The block a solution makes of this template, judged as submitblock judges it:
    /// `None` when accepted, else the reason.
    fn judge_solution(
        &self,
        version: u32,
        time: u32,
        nonce: u32,
        coinbase: &[u8],
    ) -> Result<Option<String>, capnp::Error> {
        let coinbase: bitcoin::Transaction =
            bitcoin::consensus::deserialize(coinbase).map_err(failed)?;
        let t = &self.template;
        let header = bitcoin::block::Header {
            version: bitcoin::block::Version::from_consensus(version as i32),
            prev_blockhash: t.prev_hash,
            merkle_root: bitcoin::TxMerkleNode::all_zeros(),
            time,
            bits: t.bits,
            nonce,
        };
        let block = crate::template::assemble_block(
            header,
            coinbase,
            &t.coinbase_merkle_branch,
            t.txs.iter().map(|m| m.tx.clone()),
        );
        let hash = block.block_hash();
        let verdict = self.face.shared.judge_block(block, "ipc");
        match &verdict {
            None => tracing::info!(%hash, "block from IPC submitSolution accepted"),
            Some(reason) => {
                tracing::info!(%hash, %reason, "block from IPC submitSolution rejected")
            }
        }
        Ok(verdict)
    }
}

impl block_template::Server for TemplateServer {
    async fn destroy(
        self: Rc<Self>,
        params: block_template::DestroyParams,
        _: block_template::DestroyResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        Ok(())
    }

    async fn get_block_header(
        self: Rc<Self>,
        params: block_template::GetBlockHeaderParams,
        mut results: block_template::GetBlockHeaderResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let header = bitcoin::consensus::serialize(&self.block().header);
        results.get().set_result(&header);
        Ok(())
    }

    async fn get_block(
        self: Rc<Self>,
        params: block_template::GetBlockParams,
        mut results: block_template::GetBlockResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let block = bitcoin::consensus::serialize(&self.block());
        results.get().set_result(&block);
        Ok(())
    }

    async fn get_tx_fees(
        self: Rc<Self>,
        params: block_template::GetTxFeesParams,
        mut results: block_template::GetTxFeesResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let txs = &self.template.txs;
        let mut list = results.get().init_result(txs.len() as u32);
        for (i, tx) in txs.iter().enumerate() {
            list.set(i as u32, tx.fee as i64);
        }
        Ok(())
    }

    async fn get_tx_sigops(
        self: Rc<Self>,
        params: block_template::GetTxSigopsParams,
        mut results: block_template::GetTxSigopsResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let txs = &self.template.txs;
        let mut list = results.get().init_result(txs.len() as u32);
        for (i, tx) in txs.iter().enumerate() {
            list.set(i as u32, i64::from(tx.sigops));
        }
        Ok(())
    }

    async fn get_coinbase_tx(
        self: Rc<Self>,
        params: block_template::GetCoinbaseTxParams,
        mut results: block_template::GetCoinbaseTxResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let t = &self.template;
        let height = bitcoin::script::Builder::new()
            .push_int(i64::from(t.height))
            .into_script();
        let commitment = bitcoin::consensus::serialize(&bitcoin::TxOut {
            value: bitcoin::Amount::ZERO,
            script_pubkey: t.witness_commitment.clone(),
        });
        let mut cb = results.get().init_result();
        cb.set_version(2);
        cb.set_sequence(u32::MAX);
        cb.set_script_sig_prefix(height.as_bytes());
        cb.set_witness(&[0u8; 32]);
        cb.set_block_reward_remaining(t.value() as i64);
        cb.set_lock_time(0);
        let mut outputs = cb.init_required_outputs(1);
        outputs.set(0, &commitment);
        Ok(())
    }

    async fn get_coinbase_merkle_path(
        self: Rc<Self>,
        params: block_template::GetCoinbaseMerklePathParams,
        mut results: block_template::GetCoinbaseMerklePathResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let path = &self.template.coinbase_merkle_branch;
        let mut list = results.get().init_result(path.len() as u32);
        for (i, node) in path.iter().enumerate() {
            list.set(i as u32, node.as_byte_array());
        }
        Ok(())
    }

    /// v31's submitSolution: a bare result. Bitcoin Core v32 refuses it.
    async fn submit_solution_old7(
        self: Rc<Self>,
        params: block_template::SubmitSolutionOld7Params,
        mut results: block_template::SubmitSolutionOld7Results,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        if self.face.interface == MiningInterface::V32 {
            tracing::warn!("an IPC client called the v31 submitSolution (@7) of a v32 face");
            return Err(failed(OLD_SUBMIT_SOLUTION));
        }
        let p = params.get()?;
        let verdict = self.judge_solution(
            p.get_version(),
            p.get_timestamp(),
            p.get_nonce(),
            p.get_coinbase()?,
        )?;
        // Core's ProcessNewBlock answer; the node's events keep submitblock's reason.
        results
            .get()
            .set_result(crate::validate::processed_by_core(verdict.as_deref()));
        Ok(())
    }

    /// v32's submitSolution (@10): the result with submitblock's reason.
    async fn submit_solution(
        self: Rc<Self>,
        params: block_template::SubmitSolutionParams,
        mut results: block_template::SubmitSolutionResults,
    ) -> Result<(), capnp::Error> {
        // What v32 added is missing from v31, with or without a thread.
        self.face.v32_only()?;
        threaded(params.get()?.get_context())?;
        let p = params.get()?;
        let verdict = self.judge_solution(
            p.get_version(),
            p.get_timestamp(),
            p.get_nonce(),
            p.get_coinbase()?,
        )?;
        answer_verdict!(results, verdict);
        Ok(())
    }

    /// A newer template once the tip changes, or once the mempool gives one whose fees grew
    /// by the threshold; at the timeout or on interruptWait, a reply with no template (an
    /// error would make the pool drop the whole connection).
    async fn wait_next(
        self: Rc<Self>,
        params: block_template::WaitNextParams,
        mut results: block_template::WaitNextResults,
    ) -> Result<(), capnp::Error> {
        threaded(params.get()?.get_context())?;
        let options = params.get()?.get_options()?;
        let deadline = tokio::time::Instant::now() + millis(options.get_timeout());
        // maxMoney (the default) means "only on a new tip".
        let threshold = u64::try_from(options.get_fee_threshold()).unwrap_or(u64::MAX);
        let interrupts = self.interrupts.load(Ordering::Relaxed);
        let face = &self.face;
        let mut tips = face.shared.subscribe_tip();
        let current = &self.template;
        loop {
            let due = {
                let state = face.shared.sync();
                let new_tip = state.tip_hash() != current.prev_hash;
                let better = state.mempool().version() != current.mempool_version
                    && state.network_template_value().1 >= current.fees.saturating_add(threshold);
                new_tip || better
            };
            let next = due.then(|| face.shared.build_template(&face.asker));
            if let Some(t) = next {
                results.get().set_result(TemplateServer::client(face, t));
                return Ok(());
            }
            if self.interrupts.load(Ordering::Relaxed) != interrupts {
                return Ok(());
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(());
            }
            let pause = (deadline - now).min(WAIT_NEXT_POLL);
            let _ = tokio::time::timeout(pause, tips.changed()).await;
        }
    }

    async fn interrupt_wait(
        self: Rc<Self>,
        _: block_template::InterruptWaitParams,
        _: block_template::InterruptWaitResults,
    ) -> Result<(), capnp::Error> {
        self.interrupts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A timeout in milliseconds as Bitcoin Core's options carry it (a double, often huge).
fn millis(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_secs_f64((ms / 1000.0).min(86_400.0))
    } else if ms <= 0.0 {
        Duration::ZERO
    } else {
        Duration::from_secs(86_400)
    }
}
