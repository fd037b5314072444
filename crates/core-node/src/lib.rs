//! A real Bitcoin Core a benchmark, a test or a run starts: `bitcoin-node` (the
//! multiprocess node: its RPC on a loopback port, its Mining IPC socket in its data
//! directory) on a private chain of its own, stopped when done and killed if dropped, so
//! nothing is left running. [`funds`] funds a key of ours from blocks mined on it and
//! fills its mempool with transactions we sign: the Core built from the Rust registry's
//! source has no wallet.
//!
//! Two chains ([`Chain`]): regtest, where every hash is a block (what a benchmark of
//! templates or a test of block acceptance wants), and a custom signet whose challenge is
//! `OP_TRUE`, where a block takes real work (what a run needs: there a share is not a
//! block).

pub mod funds;
mod mine;

pub use mine::SolvedBlock;

use anyhow::{bail, Context, Result};
use bitcoind_rpc::{RpcCallError, RpcClient};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The RPC user every Core started here answers to.
pub const RPC_USER: &str = "stratum-bench";
/// How long Core may take to answer RPC and open its IPC socket.
const START_WITHIN: Duration = Duration::from_secs(60);
/// The oldest Core whose Mining IPC the roles here speak (v31's `makeMining @3`).
const OLDEST_MAJOR: u32 = 31;

pub use model::chain::Chain;

/// What tells Core to run `chain`.
fn chain_args(chain: Chain) -> &'static [&'static str] {
    match chain {
        Chain::Regtest => &["-regtest"],
        // Blocks of any age are tips to mine on: the chain is made now, from a genesis
        // of 2020.
        Chain::Signet => &["-signet", "-signetchallenge=51", "-maxtipage=2000000000"],
    }
}

/// A running Bitcoin Core on a private chain.
pub struct CoreNode {
    child: Option<Child>,
    pub chain: Chain,
    /// As `-version` prints it, e.g. `v31.99.0-unk`.
    pub version: String,
    pub datadir: PathBuf,
    pub rpc: RpcClient,
    pub rpc_url: String,
    /// `<datadir>/<chain>/node.sock`.
    pub ipc_socket: PathBuf,
    /// Core's own output, kept in the data directory.
    pub log: PathBuf,
}

impl CoreNode {
    /// Starts `program` (`bitcoin-node`, v31 or later) on `chain` in `datadir`, RPC on a
    /// free loopback port (user `stratum-bench`, `password`), Mining IPC on its socket, no
    /// peers; returns once both answer.
    pub async fn start(
        program: &Path,
        datadir: &Path,
        chain: Chain,
        password: &str,
    ) -> Result<CoreNode> {
        let version = version_of(program)?;
        std::fs::create_dir_all(datadir)
            .with_context(|| format!("cannot create {}", datadir.display()))?;
        let port = free_port()?;
        let log = datadir.join("bitcoin-node.log");
        let out = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        // If we die without stopping it (a signal, a test's timeout), the kernel kills it:
        // its data directory is ours and throwaway, and its shutdown can take a minute.
        let mut command = lifecycle::command_with_death_signal(program, libc::SIGKILL);
        command
            .args(chain_args(chain))
            .arg(format!("-datadir={}", datadir.display()))
            .args(["-server=1", "-listen=0", "-dnsseed=0", "-fixedseeds=0"])
            .args(["-rpcbind=127.0.0.1", "-rpcallowip=127.0.0.1"])
            .arg(format!("-rpcport={port}"))
            .args([
                &format!("-rpcuser={RPC_USER}"),
                &format!("-rpcpassword={password}"),
            ])
            .args(["-ipcbind=unix", "-printtoconsole=1", "-nodebuglogfile"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        // Its own process group: a Ctrl-C meant for us does not stop it before we do.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", program.display()))?;
        let rpc_url = format!("http://127.0.0.1:{port}");
        let mut node = CoreNode {
            child: Some(child),
            chain,
            version,
            datadir: datadir.to_path_buf(),
            rpc: RpcClient::new(&rpc_url, RPC_USER, password),
            rpc_url,
            ipc_socket: datadir.join(chain.name()).join("node.sock"),
            log,
        };
        if let Err(e) = node.wait_ready().await {
            node.kill();
            let tail = log_tail(&node.log);
            return Err(e.context(format!(
                "{} did not start; its log is {}:\n{tail}",
                program.display(),
                node.log.display()
            )));
        }
        tracing::info!(version = %node.version, rpc = %node.rpc_url, ipc = %node.ipc_socket.display(), "Bitcoin Core ready");
        Ok(node)
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!("it exited ({status})");
            }
            let answered = match self.rpc.call::<Value>("getblockchaininfo", json!([])).await {
                Ok(info) => {
                    anyhow::ensure!(
                        info["chain"] == self.chain.name(),
                        "it is on {}, not {}",
                        info["chain"],
                        self.chain.name()
                    );
                    true
                }
                // -28: still warming up; a refused connection: not listening yet.
                Err(RpcCallError::Rpc { code: -28, .. } | RpcCallError::Transport(_)) => false,
                Err(e) => return Err(e.into()),
            };
            if answered && self.ipc_socket.exists() {
                return Ok(());
            }
            if started.elapsed() > START_WITHIN {
                bail!(
                    "no {} within {} s",
                    if answered {
                        "Mining IPC socket (is it bitcoin-node, started with -ipcbind=unix?)"
                    } else {
                        "RPC answer"
                    },
                    START_WITHIN.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Calls `method` and decodes its result.
    pub async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T> {
        (self.rpc.call(method, params).await).with_context(|| format!("Bitcoin Core's {method}"))
    }

    /// `blocks` blocks mined to `address`: by Core itself on regtest (at once), by us
    /// grinding Core's templates on signet (Core's own miner is one thread without
    /// midstate: about 1.3 s a block here, against under half a second).
    pub async fn mine_to(
        &self,
        address: &bitcoin::Address,
        blocks: u32,
    ) -> Result<Vec<bitcoin::BlockHash>> {
        if self.chain == Chain::Regtest {
            return (self.call("generatetoaddress", json!([blocks, address.to_string()]))).await;
        }
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let mut hashes = Vec::with_capacity(blocks as usize);
        for _ in 0..blocks {
            let script = address.script_pubkey();
            let block = self
                .solve(&script, b"/stratum-bench setup/", threads, false)
                .await?;
            self.submit(&block).await?;
            hashes.push(block.hash);
        }
        Ok(hashes)
    }

    /// Asks Core to stop (its clock back to real time first, if a benchmark mocked it) and
    /// waits for it; past 30 s it is killed, and the log says so. Its shutdown has hung
    /// once here after a benchmark's IPC client left; what was measured stands.
    pub async fn stop(mut self) -> Result<()> {
        let _ = self.rpc.call::<Value>("setmocktime", json!([0])).await;
        let _ = self.rpc.call::<Value>("stop", json!([])).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Some(child) = self.child.as_mut() {
            if child.try_wait()?.is_some() {
                self.child = None;
                return Ok(());
            }
            if Instant::now() > deadline {
                let log = self.log.display();
                tracing::warn!(%log, "Bitcoin Core did not stop within 30 s of the stop RPC; killed");
                self.kill();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// Asks Core to stop with SIGTERM (its own graceful shutdown) and waits up to 10 s,
    /// then kills it: what a command stopped by a signal or an error leaves behind.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for CoreNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `program -version`'s first line, checked to be Bitcoin Core of v31 or later.
fn version_of(program: &Path) -> Result<String> {
    let out = Command::new(program)
        .arg("-version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    let version = (first.split_whitespace())
        .find(|w| w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit()));
    let (true, Some(version)) = (first.starts_with("Bitcoin Core"), version) else {
        bail!(
            "{} is not Bitcoin Core's bitcoin-node: `-version` printed {:?}",
            program.display(),
            first
        );
    };
    let major: u32 = (version[1..].split('.').next().unwrap_or_default())
        .parse()
        .unwrap_or(0);
    anyhow::ensure!(
        major >= OLDEST_MAJOR,
        "{} is Bitcoin Core {version}, older than v{OLDEST_MAJOR}: its Mining IPC is not the one the roles here speak",
        program.display()
    );
    Ok(version.to_string())
}

/// A password for a Core's RPC no one else knows.
pub fn fresh_password() -> String {
    format!("{:016x}", rand::random::<u64>())
}

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The last lines of Core's log, for an error.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
