//! `stratum-bench race`: at a farm, who hears of each new block first, the farm's own node
//! (ZMQ `hashblock`) or its pool (one session as a miner's: SV1 `mining.notify` with a new
//! prev hash, SV2 `SetNewPrevHash`). Both arrivals are stamped on the host's monotonic
//! clock the moment they are read, written to the race directory's events as they come,
//! and summarised by [`analysis::race`]. It submits nothing.

use crate::latency::Target;
use analysis::race::{
    summarize, RaceEvent, RaceParams, RaceRecord, RaceSummary, Source, EVENTS_FILE, SUMMARY_FILE,
};
use anyhow::{anyhow, bail, Context, Result};
use probe::clock::{clock_id, mono_ns, wall_ns};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stratum_apps::key_utils::Secp256k1PublicKey;
use stratum_apps::network_helpers::connect_with_noise;
use stratum_apps::network_helpers::noise_stream::NoiseTcpReadHalf;
use stratum_apps::stratum_core::binary_sv2::{Str0255Owned, U256Owned};
use stratum_apps::stratum_core::bitcoin::hashes::Hash;
use stratum_apps::stratum_core::bitcoin::BlockHash;
use stratum_apps::stratum_core::mining_sv2::OpenStandardMiningChannelOwned;
use stratum_apps::stratum_core::parsers_sv2::{AnyMessageOwned, MiningOwned};
use sv1_wire::{Message, Method, ParseError};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// A TCP connect that takes longer than this fails: the pool is unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest wait between attempts to get the pool back.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What a race is given.
#[derive(Debug, Clone)]
pub struct RaceOptions {
    /// The farm node's ZMQ publisher of `hashblock` (`tcp://HOST:PORT`).
    pub node_zmq: String,
    /// The pool's URL, as `stratum-bench latency` takes it.
    pub pool: String,
    pub worker: String,
    pub password: String,
    /// The race directory: created, or resumed into.
    pub out: PathBuf,
    pub duration: Duration,
    /// The node published no `hashblock` this long: it is broken (or not the farm's node).
    pub silent_after: Duration,
    /// A pool session that gives no work this long after connecting has failed.
    pub work_timeout: Duration,
    pub params: RaceParams,
}

/// How a race ended: its summary (written), and the error that stopped it, if any.
pub struct RaceOutcome {
    pub summary: RaceSummary,
    pub error: Option<anyhow::Error>,
}

/// Runs a race until its duration, Ctrl-C, SIGTERM or an error; the summary is written
/// in every case but an unusable directory.
pub async fn run(o: RaceOptions) -> Result<RaceOutcome> {
    let target = Target::parse(&o.pool)?;
    let mut events = EventsFile::open(&o.out, &o)?;
    events.push(
        mono_ns(),
        RaceEvent::Started {
            wall_ns: wall_ns(),
            clock: clock_id(),
            node: o.node_zmq.clone(),
            pool: o.pool.clone(),
            worker: o.worker.clone(),
        },
    )?;
    let (ended, error) = match race(&o, target, &mut events).await {
        Ok(reason) => (reason, None),
        Err(e) => (format!("error: {e:#}"), Some(e)),
    };
    events.push(mono_ns(), RaceEvent::Stopped { reason: ended })?;
    let summary = summarize(&events.records, mono_ns(), &o.params);
    crate::tap::write_json(&o.out.join(SUMMARY_FILE), &summary)?;
    Ok(RaceOutcome { summary, error })
}

/// What the pool's keeper reports.
enum PoolNote {
    /// A session's first work, on `tip`: a session (again).
    Work { tip: BlockHash },
    /// A new prev hash in a session that had work: a block notice.
    Tip { t_ns: u64, hash: BlockHash },
    /// The session ended (or could not be had), and why.
    Lost { reason: String, had_work: bool },
}

/// The race proper, after its start is recorded: why it stopped, or the error.
async fn race(o: &RaceOptions, target: Target, events: &mut EventsFile) -> Result<String> {
    let mut zmq = sv1::hashblock::subscribe(&o.node_zmq)
        .await
        .with_context(|| format!("the node's ZMQ at {} is unreachable", o.node_zmq))?;
    let (node_tx, mut node_rx) = mpsc::unbounded_channel();
    // The receive is stamped on a task of its own, not behind the pool's or the disk's work.
    let node_task = tokio::spawn(async move {
        loop {
            let got = sv1::hashblock::next_block(&mut zmq).await;
            let t_ns = mono_ns();
            let failed = got.is_err();
            if node_tx.send((t_ns, got)).is_err() || failed {
                return;
            }
        }
    });
    let _node_task = AbortOnDrop(node_task);
    let (pool_tx, mut pool_rx) = mpsc::unbounded_channel();
    let keeper = tokio::spawn(keep_pool(
        target,
        o.worker.clone(),
        o.password.clone(),
        o.work_timeout,
        pool_tx,
    ));
    let _keeper = AbortOnDrop(keeper);
    // At start, a pool that cannot be had is an error, not a gap.
    match pool_rx.recv().await {
        Some(PoolNote::Work { tip }) => events.push(
            mono_ns(),
            RaceEvent::PoolSession {
                tip: tip.to_string(),
            },
        )?,
        Some(PoolNote::Lost { reason, .. }) => bail!("the pool at {}: {reason}", o.pool),
        _ => bail!("the pool at {}: no session", o.pool),
    }
    eprintln!(
        "race: node {} and pool {} connected; recording into {}",
        o.node_zmq,
        o.pool,
        o.out.display()
    );
    let mut live = Live::new();
    let mut in_gap = false;
    let started = tokio::time::Instant::now();
    let deadline = tokio::time::sleep(o.duration);
    tokio::pin!(deadline);
    let mut last_node = started;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // Both taken once, before the loop: a signal between two turns of it is not lost.
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    loop {
        tokio::select! {
            got = node_rx.recv() => {
                let Some((t_ns, got)) = got else { bail!("the node's ZMQ reader ended") };
                let hash = got.with_context(|| format!("the node's ZMQ at {}", o.node_zmq))?;
                last_node = tokio::time::Instant::now();
                events.push(t_ns, RaceEvent::Block { source: Source::Node, hash: hash.to_string() })?;
            }
            note = pool_rx.recv() => {
                let Some(note) = note else { bail!("the pool's keeper ended") };
                match note {
                    PoolNote::Tip { t_ns, hash } => events.push(
                        t_ns,
                        RaceEvent::Block { source: Source::Pool, hash: hash.to_string() },
                    )?,
                    PoolNote::Work { tip } => {
                        let t = mono_ns();
                        if std::mem::take(&mut in_gap) {
                            events.push(t, RaceEvent::GapEnded)?;
                            tracing::info!(pool = %o.pool, "the pool session is back");
                        }
                        events.push(t, RaceEvent::PoolSession { tip: tip.to_string() })?;
                    }
                    PoolNote::Lost { reason, had_work } => {
                        tracing::warn!(pool = %o.pool, %reason, had_work, "no pool session; reconnecting");
                        if !std::mem::replace(&mut in_gap, true) {
                            events.push(mono_ns(), RaceEvent::GapBegan { reason })?;
                        }
                    }
                }
            }
            _ = tick.tick() => {
                if last_node.elapsed() >= o.silent_after {
                    bail!(
                        "the node's ZMQ at {} published no hashblock for {:?}: is it the farm's \
                         node, on the same network as the pool, with -zmqpubhashblock?",
                        o.node_zmq,
                        o.silent_after
                    );
                }
                live.show(&summarize(&events.records, mono_ns(), &o.params), started.elapsed());
            }
            _ = &mut deadline => return Ok(live.done(format!("ran its {:?}", o.duration))),
            _ = int.recv() => return Ok(live.done("SIGINT".into())),
            _ = term.recv() => return Ok(live.done("SIGTERM".into())),
        }
    }
}

/// Aborts a task when the race leaves, however it leaves.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps one session with the pool, for as long as the race runs: another after each is
/// lost, waiting 1 s, 2 s, 4 s ... up to a minute between attempts (back to 1 s once a
/// session gave work).
async fn keep_pool(
    target: Target,
    worker: String,
    password: String,
    work_timeout: Duration,
    tx: mpsc::UnboundedSender<PoolNote>,
) {
    let mut backoff = Duration::from_secs(1);
    loop {
        let mut had_work = false;
        let ended = session(
            &target,
            &worker,
            &password,
            work_timeout,
            &tx,
            &mut had_work,
        )
        .await;
        let reason = match ended {
            Ok(()) => "the pool closed the session".to_string(),
            Err(e) => format!("{e:#}"),
        };
        if had_work {
            backoff = Duration::from_secs(1);
        }
        if tx.send(PoolNote::Lost { reason, had_work }).is_err() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One session, until it ends: `had_work` is set once it gave work.
async fn session(
    target: &Target,
    worker: &str,
    password: &str,
    work_timeout: Duration,
    tx: &mpsc::UnboundedSender<PoolNote>,
    had_work: &mut bool,
) -> Result<()> {
    let host_port = match target {
        Target::Sv1 { host_port } | Target::Sv2 { host_port, .. } => host_port,
    };
    let address = tokio::net::lookup_host(host_port)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("{host_port} does not resolve"))?;
    let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => bail!("cannot connect to {address}: {e}"),
        Err(_) => bail!("cannot connect to {address}: no answer in {CONNECT_TIMEOUT:?}"),
    };
    let _ = stream.set_nodelay(true);
    let mut tips = Tips::default();
    let mut on_tip = |t_ns: u64, hash: BlockHash| -> Result<()> {
        let note = match tips.next(hash) {
            Some(true) => {
                *had_work = true;
                PoolNote::Work { tip: hash }
            }
            Some(false) => PoolNote::Tip { t_ns, hash },
            None => return Ok(()),
        };
        tx.send(note).map_err(|_| anyhow!("the race ended"))
    };
    match target {
        Target::Sv1 { .. } => {
            sv1_session(stream, worker, password, work_timeout, &mut on_tip).await
        }
        Target::Sv2 { authority, .. } => {
            let s = Sv2Session {
                address,
                authority: *authority,
                worker,
                work_timeout,
            };
            s.run(stream, &mut on_tip).await
        }
    }
}

/// The prev hashes of one session: the first is the tip it began on (no notice), each new
/// one after it a notice; the same again is none.
#[derive(Default)]
struct Tips {
    last: Option<BlockHash>,
}

impl Tips {
    /// `Some(true)`: the session's first; `Some(false)`: a new one; `None`: unchanged.
    fn next(&mut self, hash: BlockHash) -> Option<bool> {
        match self.last.replace(hash) {
            None => Some(true),
            Some(last) if last != hash => Some(false),
            Some(_) => None,
        }
    }
}

/// An SV1 session: `mining.subscribe`, `mining.authorize`, then every `mining.notify`'s
/// prev hash, read the moment its line arrives.
async fn sv1_session(
    stream: TcpStream,
    worker: &str,
    password: &str,
    work_timeout: Duration,
    on_tip: &mut impl FnMut(u64, BlockHash) -> Result<()>,
) -> Result<()> {
    let (read, mut write) = stream.into_split();
    let hello = Method::Subscribe {
        user_agent: Some("stratum-bench-race".into()),
    };
    let auth = Method::Authorize {
        worker: worker.to_string(),
        password: Some(password.to_string()),
    };
    let lines = [(1, hello), (2, auth)].map(|(id, method)| {
        Message::Request {
            id: id.into(),
            method,
        }
        .to_line()
    });
    write
        .write_all(&lines.concat())
        .await
        .context("cannot write to the pool")?;
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    let mut work_by = Some(tokio::time::Instant::now() + work_timeout);
    loop {
        line.clear();
        let got = match work_by {
            Some(by) => tokio::time::timeout_at(by, sv1::wire::read_raw_line(&mut read, &mut line))
                .await
                .map_err(|_| anyhow!("no work (mining.notify) within {work_timeout:?}"))?,
            None => sv1::wire::read_raw_line(&mut read, &mut line).await,
        };
        let t_ns = mono_ns();
        match got {
            Ok(()) => {}
            Err(sv1::wire::ReadError::Closed) => bail!("the pool closed the session"),
            Err(e) => bail!("read: {e}"),
        }
        let msg = match Message::parse(&line) {
            Ok(msg) => msg,
            Err(ParseError::Params { method, reason, .. }) if method == "mining.notify" => {
                bail!("a mining.notify the race cannot read: {reason}")
            }
            Err(e) => {
                let line = String::from_utf8_lossy(&line);
                tracing::warn!(%line, error = %e, "not SV1 from the pool");
                continue;
            }
        };
        match msg {
            Message::Response(answer) => {
                let refused = !answer.error.is_null()
                    || answer.result.is_null()
                    || answer.result == serde_json::Value::Bool(false);
                let what = match answer.id.as_u64() {
                    Some(1) => "mining.subscribe".to_string(),
                    Some(2) => format!("the worker {worker:?}"),
                    _ => continue,
                };
                if refused {
                    bail!("the pool refused {what}: {answer}");
                }
            }
            Message::Request {
                method: Method::Notify(notify),
                ..
            } => {
                let hash = prev_hash_from_notify(&notify.prev_hash)?;
                on_tip(t_ns, hash)?;
                work_by = None;
            }
            _ => {}
        }
    }
}

/// SV1's `mining.notify` prev hash: the block hash's internal bytes with each 4-byte word
/// reversed ([`sv1::job::prevhash_from_stratum`]).
pub fn prev_hash_from_notify(field: &str) -> Result<BlockHash> {
    sv1::job::prevhash_from_stratum(field)
        .with_context(|| format!("mining.notify prev hash {field:?}"))
}

/// An SV2 session's settings.
struct Sv2Session<'a> {
    address: SocketAddr,
    authority: Option<Secp256k1PublicKey>,
    worker: &'a str,
    work_timeout: Duration,
}

impl Sv2Session<'_> {
    /// The Noise handshake with the pool's authority key, SetupConnection (mining,
    /// header-only), OpenStandardMiningChannel, then every SetNewPrevHash.
    async fn run(
        &self,
        stream: TcpStream,
        on_tip: &mut impl FnMut(u64, BlockHash) -> Result<()>,
    ) -> Result<()> {
        let noise = connect_with_noise(stream, self.authority)
            .await
            .map_err(|e| {
                anyhow!("Noise handshake failed (is the authority key the pool's?): {e:?}")
            })?;
        let (mut reader, mut writer) = noise.into_split();
        // Bit 0, REQUIRES_STANDARD_JOBS: a header-only device, its own channel's messages.
        sv2::fleet::set_up_mining(
            &mut reader,
            &mut writer,
            self.address,
            "stratum-bench-race",
            1,
        )
        .await?;
        let open = OpenStandardMiningChannelOwned {
            request_id: 1,
            user_identity: Str0255Owned::try_from(self.worker.as_bytes().to_vec())
                .map_err(|_| anyhow!("the worker name is over 255 bytes"))?,
            // A small device: the race submits nothing.
            nominal_hash_rate: 1e9,
            max_target: U256Owned::from([0xff; 32]),
        };
        let open = AnyMessageOwned::Mining(MiningOwned::OpenStandardMiningChannel(open));
        sv2_wire::send(&mut writer, open, "the pool").await?;
        let (frames, mut rx) = read_frames(reader);
        let _frames = AbortOnDrop(frames);
        let mut work_by = Some(tokio::time::Instant::now() + self.work_timeout);
        loop {
            let got = match work_by {
                Some(by) => tokio::time::timeout_at(by, rx.recv()).await.map_err(|_| {
                    anyhow!("no work (SetNewPrevHash) within {:?}", self.work_timeout)
                })?,
                None => rx.recv().await,
            };
            let (t_ns, msg) = got.context("the frame reader ended")?;
            match msg? {
                MiningOwned::SetNewPrevHash(p) => {
                    // U256 in internal (little-endian) order, as the header carries it.
                    let bytes: [u8; 32] = p.prev_hash.as_ref().try_into().context("prev_hash")?;
                    on_tip(t_ns, BlockHash::from_byte_array(bytes))?;
                    work_by = None;
                }
                MiningOwned::OpenMiningChannelError(e) => bail!(
                    "the pool refused the worker {:?}: {}",
                    self.worker,
                    String::from_utf8_lossy(e.error_code.as_ref())
                ),
                _ => {}
            }
        }
    }
}

/// A frame of another protocol, or a mining message; the reader's error ends it.
type Frame = (u64, Result<MiningOwned>);

/// Frames are read on a task of their own (a frame read cannot be cancelled halfway), each
/// mining message stamped the moment it was read.
fn read_frames(
    mut reader: NoiseTcpReadHalf,
) -> (tokio::task::JoinHandle<()>, mpsc::UnboundedReceiver<Frame>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        loop {
            // Scoped: a read half dropped while one of its frames lives spins forever.
            let msg = match reader.read_frame().await {
                Err(e) => Err(anyhow!("the pool closed the session ({e})")),
                Ok(frame) => match sv2::fleet::decode_mining(frame) {
                    Ok(None) => continue,
                    Ok(Some(msg)) => Ok(msg),
                    Err(e) => Err(anyhow!("the pool sent {e}")),
                },
            };
            let failed = msg.is_err();
            if tx.send((mono_ns(), msg)).is_err() || failed {
                return;
            }
        }
    });
    (task, rx)
}

/// The race directory's events: those already there (a resumed race), and each new one
/// appended and flushed as it comes.
struct EventsFile {
    records: Vec<RaceRecord>,
    file: std::fs::File,
    path: PathBuf,
}

impl EventsFile {
    fn open(dir: &Path, o: &RaceOptions) -> Result<EventsFile> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(EVENTS_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let mut records = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            match serde_json::from_str::<RaceRecord>(line) {
                Ok(r) => records.push(r),
                // A line cut short by a kill: the rest is whole.
                Err(e) => {
                    tracing::warn!(line = i + 1, error = %e, "an unreadable event line skipped")
                }
            }
        }
        if let Some(RaceEvent::Started { node, pool, .. }) = records
            .iter()
            .map(|r| &r.event)
            .find(|e| matches!(e, RaceEvent::Started { .. }))
        {
            if *node != o.node_zmq || *pool != o.pool {
                bail!(
                    "{} holds a race of node {node} and pool {pool}, not of {} and {}: \
                     use another --out",
                    dir.display(),
                    o.node_zmq,
                    o.pool
                );
            }
            eprintln!(
                "race: resuming {} ({} events recorded)",
                dir.display(),
                records.len()
            );
        }
        let mut file = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // A line cut short gets its end, so the next one starts whole.
        if !text.is_empty() && !text.ends_with('\n') {
            file.write_all(b"\n")?;
        }
        Ok(EventsFile {
            records,
            file,
            path,
        })
    }

    /// Appends and flushes one event (stamped earlier, where it happened).
    fn push(&mut self, t_ns: u64, event: RaceEvent) -> Result<()> {
        let record = RaceRecord { t_ns, event };
        let line = serde_json::to_string(&record)? + "\n";
        (self.file.write_all(line.as_bytes()))
            .and_then(|()| self.file.flush())
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.records.push(record);
        Ok(())
    }
}

/// The live line on stderr: redrawn every second at a terminal, else a line when a count
/// changes.
struct Live {
    tty: bool,
    last: String,
}

impl Live {
    fn new() -> Live {
        Live {
            tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            last: String::new(),
        }
    }

    fn show(&mut self, s: &RaceSummary, elapsed: Duration) {
        let b = &s.blocks;
        let median = s.lead_ms.p50.map_or("-".into(), |m| format!("{m:+.1} ms"));
        let counts = format!(
            "blocks {}: both {}, only node {}, only pool {}, pending {}, node-only in gaps {}; \
             gaps {}; median lead {median}",
            b.seen, b.both, b.only_node, b.only_pool, b.pending, b.node_during_gap, s.gaps.count
        );
        let secs = elapsed.as_secs();
        let at = format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
        if self.tty {
            eprint!("\r\x1b[2Krace {at}  {counts}");
        } else if counts != self.last {
            eprintln!("race {at}  {counts}");
        }
        self.last = counts;
    }

    /// Ends the live line; the reason the race stopped.
    fn done(&self, reason: String) -> String {
        if self.tty {
            eprintln!();
        }
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Block 125551 of mainnet, 00000000000008a3a41b85b8b29ad444def299fee21793cd8b9e567eab02cd81
    /// (the prev hash of block 125552, the Bitcoin wiki's header-hashing example), as an
    /// SV1 pool sends it working on 125552: each 4-byte word of its internal (reversed)
    /// bytes reversed. Internal bytes
    /// 81cd02ab 7e569e8b cd9317e2 fe99f2de 44d49ab2 b8851ba4 a3080000 00000000, each word
    /// reversed: ab02cd81 8b9e567e e21793cd def299fe b29ad444 a41b85b8 000008a3 00000000.
    #[test]
    fn an_sv1_prev_hash_decodes_to_its_block() {
        let field = "ab02cd818b9e567ee21793cddef299feb29ad444a41b85b8000008a300000000";
        let hash = prev_hash_from_notify(field).unwrap();
        assert_eq!(
            hash.to_string(),
            "00000000000008a3a41b85b8b29ad444def299fee21793cd8b9e567eab02cd81"
        );
        assert_eq!(sv1::job::prevhash_to_stratum(&hash), field);
        assert!(prev_hash_from_notify("00").is_err());
    }

    #[test]
    fn a_sessions_first_prev_hash_is_its_tip_and_only_new_ones_are_notices() {
        let h = |b: u8| BlockHash::from_byte_array([b; 32]);
        let mut tips = Tips::default();
        assert_eq!(tips.next(h(1)), Some(true));
        assert_eq!(tips.next(h(1)), None);
        assert_eq!(tips.next(h(2)), Some(false));
        assert_eq!(tips.next(h(1)), Some(false), "a reorg back is news too");
    }
}
