//! The harness's end of the events collector (the role's end is `probe::ship`).
//!
//! Each role streams its events journal over TCP; the collector writes it to
//! `events/<role>.jsonl` in the run directory, as the file sink would, with every stamp
//! moved onto the harness's clock. A role whose connection drops reconnects and is told
//! how many bytes the collector holds, so its copy has every event once, in order.
//!
//! `CLOCK_MONOTONIC` is one clock per boot of a host. For each clock the roles report,
//! the collector runs bursts of NTP-style probes (at the start, every
//! [`PROBE_EVERY`] and at the end) and keeps the offset of the probe with the shortest
//! round trip: the true offset lies within half that round trip of it, whatever the split
//! of the trip between the two directions. A role on the harness's own clock is not
//! moved (its offset is zero by construction); its probes are kept as a check.

use analysis::manifest::ClockOffset;
use anyhow::{bail, Context, Result};
use parking_lot::Mutex;
use probe::ship::{Have, Hello, CLOCK_HELLO, EVENTS_HELLO};
use probe::{mono_ns, Record};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{AbortHandle, JoinHandle};

/// How often each clock is probed again during the run.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);
/// Probes in one burst; the one with the shortest round trip counts.
const BURST: usize = 8;
/// How long a role's events wait for its clock's first estimate.
const CLOCK_WAIT: Duration = Duration::from_secs(10);
/// The longest line a role may send (a record is a few hundred bytes).
const MAX_LINE: usize = 1 << 20;

pub struct Collector {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

struct Shared {
    events_dir: PathBuf,
    own_clock: String,
    copies: Mutex<HashMap<String, Copy>>,
    clocks: Mutex<BTreeMap<String, Clock>>,
    probe_now: Notify,
    connections: Mutex<Vec<AbortHandle>>,
}

/// The collector's copy of one role's events.
struct Copy {
    file: std::fs::File,
    /// Journal bytes written so far (before any stamp was moved).
    have: u64,
    /// Which connection may write: a reconnecting role supersedes its old connection.
    connection: u64,
}

#[derive(Default)]
struct Clock {
    roles: BTreeSet<String>,
    /// Offset (the clock minus the harness's), from the latest burst.
    offset_ns: Option<i64>,
    /// The widest uncertainty of any burst so far: what any event may have been moved
    /// off by.
    widest_ns: u64,
    exchanges: u64,
}

impl Collector {
    /// Listens on `bind` and writes into `events_dir`.
    pub async fn start(bind: SocketAddr, events_dir: PathBuf) -> Result<Collector> {
        let listener = TcpListener::bind(bind)
            .await
            .with_context(|| format!("cannot start the events collector on {bind}"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            events_dir,
            own_clock: probe::clock::clock_id(),
            copies: Mutex::new(HashMap::new()),
            clocks: Mutex::new(BTreeMap::new()),
            probe_now: Notify::new(),
            connections: Mutex::new(Vec::new()),
        });
        let accepting = shared.clone();
        let accept = tokio::spawn(async move {
            let mut next_connection = 0u64;
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors, say: wait rather than spin.
                        tracing::warn!("collector accept: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                next_connection += 1;
                let (shared, id) = (accepting.clone(), next_connection);
                let task = tokio::spawn(async move {
                    if let Err(e) = serve(&shared, stream, id).await {
                        tracing::warn!(%peer, "collector connection closed: {e:#}");
                    }
                });
                let mut connections = accepting.connections.lock();
                // Those that ended need no cutting.
                connections.retain(|c| !c.is_finished());
                connections.push(task.abort_handle());
            }
        });
        Ok(Collector {
            addr,
            shared,
            accept,
        })
    }

    /// Drops every connection, as a network fault would; roles reconnect and resume.
    pub fn cut_connections(&self) {
        for connection in self.shared.connections.lock().drain(..) {
            connection.abort();
        }
    }

    /// Fails when a role's clock has no estimate within [`CLOCK_WAIT`], or one less
    /// certain than `bound`, naming the roles and the figures.
    pub async fn check_clocks(&self, bound: Duration) -> Result<()> {
        let from = format!("the collector at {}", self.addr);
        check_offsets(|| self.clocks(), &[], bound, &from).await
    }

    /// Every clock seen, with its latest estimate.
    pub fn clocks(&self) -> Vec<ClockOffset> {
        self.shared
            .clocks
            .lock()
            .iter()
            .map(|(id, clock)| {
                ClockOffset {
                    clock: id.clone(),
                    roles: clock.roles.iter().cloned().collect(),
                    // No estimate yet shows as zero probes.
                    offset_ns: clock.offset_ns.unwrap_or_default(),
                    uncertainty_ns: clock.widest_ns,
                    applied: *id != self.shared.own_clock,
                    exchanges: clock.exchanges,
                }
            })
            .collect()
    }

    /// Probes every clock once more (the end of the run), waiting up to 2 s for it.
    pub async fn probe_again(&self) {
        let exchanges = || -> u64 {
            self.shared
                .clocks
                .lock()
                .values()
                .map(|c| c.exchanges)
                .sum()
        };
        let before = exchanges();
        self.shared.probe_now.notify_waiters();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while exchanges() == before && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut_connections();
    }
}

/// Waits up to [`CLOCK_WAIT`] until `clocks` (read again each time) covers every role of
/// `expected` and has an estimate for every clock other than the harness's, then fails
/// when one has none or one less certain than `bound`, naming the roles and the figures.
pub async fn check_offsets(
    clocks: impl Fn() -> Vec<ClockOffset>,
    expected: &[String],
    bound: Duration,
    from: &str,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + CLOCK_WAIT;
    let unseen = |clocks: &[ClockOffset]| {
        expected
            .iter()
            .find(|role| !clocks.iter().any(|c| c.roles.contains(role)))
            .cloned()
    };
    // The harness's own clock needs no estimate: its offset is zero by construction.
    let known = |clocks: &[ClockOffset]| {
        unseen(clocks).is_none() && clocks.iter().all(|c| !c.applied || c.exchanges > 0)
    };
    while !known(&clocks()) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let clocks = clocks();
    if let Some(role) = unseen(&clocks) {
        bail!(
            "role {role}'s clock never reached {from} within {} s",
            CLOCK_WAIT.as_secs()
        );
    }
    for offset in clocks.into_iter().filter(|c| c.applied) {
        let roles = offset.roles.join(", ");
        if offset.exchanges == 0 {
            bail!(
                "the clock of role(s) {roles} ({}) has no estimate after {} s: its clock connection to {from} never answered",
                offset.clock,
                CLOCK_WAIT.as_secs()
            );
        }
        if offset.uncertainty_ns > bound.as_nanos() as u64 {
            bail!(
                "the clock of role(s) {roles} ({}) is not known well enough to measure across it: offset {:.3} ms ± {:.3} ms after {} probes (bound ± {:.3} ms)",
                offset.clock,
                offset.offset_ns as f64 / 1e6,
                offset.uncertainty_ns as f64 / 1e6,
                offset.exchanges,
                bound.as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
}

/// `stratum-bench collect`: a collector on its own, for roles in containers or on other
/// hosts, writing into `events_dir` until SIGTERM or Ctrl-C, and every clock's estimate
/// as JSON into `clocks_file` after every round of probes and at the end; returns the
/// last estimates. It must run on the harness's host: its clock is the one events are
/// put on.
pub async fn serve_until_stopped(
    listen: SocketAddr,
    events_dir: PathBuf,
    clocks_file: &std::path::Path,
) -> Result<Vec<ClockOffset>> {
    std::fs::create_dir_all(&events_dir)
        .with_context(|| format!("cannot create {}", events_dir.display()))?;
    let collector = Collector::start(listen, events_dir).await?;
    tracing::info!(listen = %collector.addr, "collecting events");
    let write = |collector: &Collector| -> Result<()> {
        // Whole or not at all: the harness reads it while the run goes.
        let partial = clocks_file.with_extension("json.partial");
        std::fs::write(
            &partial,
            serde_json::to_string_pretty(&collector.clocks())? + "\n",
        )
        .and_then(|()| std::fs::rename(&partial, clocks_file))
        .with_context(|| format!("cannot write {}", clocks_file.display()))
    };
    let mut every = tokio::time::interval(PROBE_EVERY);
    let stop = crate::roles::terminated();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = every.tick() => write(&collector)?,
            _ = &mut stop => break,
        }
    }
    collector.probe_again().await;
    write(&collector)?;
    Ok(collector.clocks())
}

async fn serve(shared: &Shared, stream: TcpStream, connection: u64) -> Result<()> {
    stream.set_nodelay(true)?;
    let mut stream = BufReader::new(stream);
    let mut first = Vec::new();
    let read = tokio::time::timeout(
        Duration::from_secs(10),
        (&mut stream).take(4096).read_until(b'\n', &mut first),
    )
    .await
    .context("no hello within 10 s")??;
    let first = String::from_utf8_lossy(&first[..read]);
    let hello = |json: &str| -> Result<Hello> {
        let hello: Hello = serde_json::from_str(json.trim()).context("not a hello")?;
        let valid = !hello.role.is_empty()
            && !hello.role.starts_with('.')
            && hello.role.len() <= 128
            && hello
                .role
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !valid {
            bail!("{:?} is not a role name", hello.role);
        }
        Ok(hello)
    };
    if let Some(json) = first.strip_prefix(EVENTS_HELLO) {
        receive_events(shared, stream, hello(json)?, connection).await
    } else if let Some(json) = first.strip_prefix(CLOCK_HELLO) {
        probe_clock(shared, stream, hello(json)?).await
    } else {
        bail!("the first line is neither EVENTS nor CLOCK: {first:?}")
    }
}

/// Writes a role's journal bytes into its copy, stamps moved onto the harness's clock.
async fn receive_events(
    shared: &Shared,
    mut stream: BufReader<TcpStream>,
    hello: Hello,
    connection: u64,
) -> Result<()> {
    register(shared, &hello);
    let role = hello.role;
    let own_clock = hello.clock == shared.own_clock;
    let deadline = tokio::time::Instant::now() + CLOCK_WAIT;
    while !own_clock && offset_of(shared, &hello.clock).is_none() {
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "role {role}: no estimate of its clock within {} s (its clock connection never answered)",
                CLOCK_WAIT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let have = {
        let mut copies = shared.copies.lock();
        let copy = match copies.entry(role.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let path = shared.events_dir.join(format!("{role}.jsonl"));
                let file = std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("cannot open {}", path.display()))?;
                e.insert(Copy {
                    file,
                    have: 0,
                    connection,
                })
            }
        };
        copy.connection = connection;
        copy.have
    };
    send_have(stream.get_mut(), have).await?;
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            if !pending.is_empty() {
                bail!("role {role} ended its stream inside a line");
            }
            let have = shared.copies.lock().get(&role).map_or(0, |c| c.have);
            send_have(stream.get_mut(), have).await?;
            return Ok(());
        }
        pending.extend_from_slice(&chunk[..n]);
        let Some(last) = pending.iter().rposition(|&b| b == b'\n') else {
            if pending.len() > MAX_LINE {
                bail!("role {role} sent a line over {MAX_LINE} bytes");
            }
            continue;
        };
        let whole: Vec<u8> = pending.drain(..=last).collect();
        let offset = if own_clock {
            0
        } else {
            offset_of(shared, &hello.clock).unwrap_or(0)
        };
        // Nothing of a chunk holding a line that is not a record is written: the role is
        // told where its copy ends, and the line stays in its journal.
        let moved = move_stamps(&whole, offset)
            .with_context(|| format!("role {role} sent a line that is not an event record"))?;
        let mut copies = shared.copies.lock();
        let copy = copies.get_mut(&role).context("the role's copy exists")?;
        if copy.connection != connection {
            bail!("role {role} reconnected; this connection is superseded");
        }
        copy.file
            .write_all(&moved)
            .with_context(|| format!("cannot write the events of role {role}"))?;
        copy.have += whole.len() as u64;
    }
}

/// Whole JSON lines, each checked to be an event record, with every stamp moved back by
/// `offset_ns` (kept byte for byte when there is nothing to move).
fn move_stamps(lines: &[u8], offset_ns: i64) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut record: Record = serde_json::from_slice(line)?;
        if offset_ns == 0 {
            out.extend_from_slice(line);
        } else {
            record.t_ns = record.t_ns.saturating_add_signed(-offset_ns);
            serde_json::to_writer(&mut out, &record)?;
        }
        out.push(b'\n');
    }
    Ok(out)
}

fn offset_of(shared: &Shared, clock: &str) -> Option<i64> {
    shared.clocks.lock().get(clock).and_then(|c| c.offset_ns)
}

async fn send_have(stream: &mut TcpStream, have: u64) -> Result<()> {
    let line = serde_json::to_string(&Have { have })? + "\n";
    stream.write_all(line.as_bytes()).await?;
    Ok(())
}

/// Notes which clock the role of `hello` reads (either of its connections may come first).
fn register(shared: &Shared, hello: &Hello) {
    shared
        .clocks
        .lock()
        .entry(hello.clock.clone())
        .or_default()
        .roles
        .insert(hello.role.clone());
}

/// Probes a role's clock in bursts until the connection ends.
async fn probe_clock(
    shared: &Shared,
    mut stream: BufReader<TcpStream>,
    hello: Hello,
) -> Result<()> {
    register(shared, &hello);
    loop {
        // The exchange with the shortest round trip: (delay, offset).
        let mut best = (u64::MAX, 0i64);
        for _ in 0..BURST {
            // A role closes its clock connection when it stops: nothing to report.
            let Some(exchange) = probe_once(&mut stream).await? else {
                return Ok(());
            };
            best = best.min(exchange);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (delay, offset) = best;
        {
            let mut clocks = shared.clocks.lock();
            let clock = clocks.entry(hello.clock.clone()).or_default();
            clock.offset_ns = Some(offset);
            clock.widest_ns = clock.widest_ns.max(delay.div_ceil(2));
            clock.exchanges += BURST as u64;
        }
        tokio::select! {
            _ = tokio::time::sleep(PROBE_EVERY) => {}
            _ = shared.probe_now.notified() => {}
        }
    }
}

/// One four-timestamp exchange: the round trip less the role's turnaround, and the
/// offset (role minus harness) at its middle; `None` once the role has gone.
async fn probe_once(stream: &mut BufReader<TcpStream>) -> Result<Option<(u64, i64)>> {
    let t1 = mono_ns();
    if stream
        .get_mut()
        .write_all(format!("{t1}\n").as_bytes())
        .await
        .is_err()
    {
        return Ok(None);
    }
    let mut line = String::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        (&mut *stream).take(256).read_line(&mut line).await
    })
    .await
    .context("no answer to a clock probe within 5 s")?;
    let t4 = mono_ns();
    // Closed or reset: the role has stopped.
    if !matches!(read, Ok(n) if n > 0) {
        return Ok(None);
    }
    exchange(t1, &line, t4).map(Some)
}

/// The delay and offset of one exchange from the role's answer `T1 T2 T3`.
fn exchange(t1: u64, answer: &str, t4: u64) -> Result<(u64, i64)> {
    let stamps: Vec<u64> = answer
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("not a clock answer: {answer:?}"))?;
    let [echo, t2, t3] = stamps[..] else {
        bail!("not a clock answer: {answer:?}");
    };
    if echo != t1 || t3 < t2 {
        bail!("a clock answer to another probe, or time going back: {answer:?}");
    }
    let (t1, t2, t3, t4) = (t1 as i128, t2 as i128, t3 as i128, t4 as i128);
    let delay = ((t4 - t1) - (t3 - t2)).max(0) as u64;
    let offset = ((t2 - t1) + (t3 - t4)) / 2;
    Ok((delay, offset as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exchange_gives_the_offset_and_the_round_trip() {
        // The role's clock is 1,000 ns ahead; 30 ns out, 50 ns back, 7 ns turnaround.
        let (t1, t2, t3, t4) = (100, 100 + 30 + 1000, 100 + 30 + 1000 + 7, 100 + 30 + 7 + 50);
        let (delay, offset) = exchange(t1, &format!("{t1} {t2} {t3}"), t4).unwrap();
        assert_eq!(delay, 80);
        // Unequal directions put the estimate off by half their difference (10 ns),
        // inside the stated uncertainty of half the round trip (40 ns).
        assert_eq!(offset, 990);
        assert!((offset - 1000).unsigned_abs() <= delay.div_ceil(2));
    }

    #[test]
    fn an_answer_to_another_probe_is_refused() {
        assert!(exchange(5, "6 10 11", 20).is_err());
        assert!(exchange(5, "5 11 10", 20).is_err());
        assert!(exchange(5, "garbage", 20).is_err());
    }

    /// What the collector answers `lines` with on one connection (until it closes it).
    async fn answer_to(addr: SocketAddr, lines: &[u8]) -> String {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        // The collector may close before it has read everything.
        let _ = conn.write_all(lines).await;
        let _ = conn.shutdown().await;
        let mut answer = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), conn.read_to_string(&mut answer))
            .await
            .expect("the collector closes a connection it will not serve");
        answer
    }

    #[tokio::test]
    async fn bad_input_closes_one_connection_and_the_collector_serves_on() {
        let dir = std::env::temp_dir().join(format!("collector-bad-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let collector = Collector::start("127.0.0.1:0".parse().unwrap(), dir.clone())
            .await
            .unwrap();
        let own = probe::clock::clock_id();
        let hello =
            |role: &str| format!("{EVENTS_HELLO}{{\"role\":\"{role}\",\"clock\":\"{own}\"}}\n");
        // Neither kind of connection, a hello that is not one, a role name that would
        // leave the events directory, a line longer than any record: each refused.
        assert_eq!(
            answer_to(collector.addr, b"GET / HTTP/1.1\r\n\r\n").await,
            ""
        );
        assert_eq!(answer_to(collector.addr, b"EVENTS {not json\n").await, "");
        assert_eq!(
            answer_to(collector.addr, hello("../escape").as_bytes()).await,
            ""
        );
        let endless = [hello("long").into_bytes(), vec![b'x'; MAX_LINE + 2]].concat();
        assert_eq!(answer_to(collector.addr, &endless).await, "{\"have\":0}\n");
        // A line that is not a record is not written, and the role's copy holds nothing.
        let garbage = [
            hello("garbled").into_bytes(),
            b"{\"t_ns\": \"soon\"}\n".to_vec(),
        ]
        .concat();
        assert_eq!(answer_to(collector.addr, &garbage).await, "{\"have\":0}\n");
        // The next role is served as ever.
        let record = br#"{"t_ns":7,"role":"pool","kind":"clock_anchor","wall_ns":1}"#;
        let good = [hello("pool").into_bytes(), record.to_vec(), b"\n".to_vec()].concat();
        let have = format!("{{\"have\":0}}\n{{\"have\":{}}}\n", record.len() + 1);
        assert_eq!(answer_to(collector.addr, &good).await, have);
        assert_eq!(
            std::fs::read(dir.join("pool.jsonl")).unwrap(),
            [&record[..], b"\n"].concat()
        );
        assert!(!dir.join("../escape.jsonl").exists());
        assert_eq!(std::fs::read(dir.join("garbled.jsonl")).unwrap(), b"");
    }

    #[test]
    fn stamps_move_by_the_offset_and_stay_whole_lines() {
        let line = br#"{"t_ns":5000,"role":"pool","kind":"clock_anchor","wall_ns":1}"#;
        let lines = [&line[..], b"\n"].concat();
        let moved = move_stamps(&lines, 1200).unwrap();
        let record: Record = serde_json::from_slice(moved.strip_suffix(b"\n").unwrap()).unwrap();
        assert_eq!(record.t_ns, 3800);
        assert_eq!(move_stamps(&lines, 0).unwrap(), lines);
    }
}
