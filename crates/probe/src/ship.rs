//! A role's side of the events collector: ship the journal, answer clock probes.
//!
//! A role on another host cannot append to the harness's run directory. It writes its
//! events to a local journal exactly as the file sink does, and a shipper thread sends the
//! journal's whole lines to the collector, starting at the byte the collector says its copy
//! ends. The journal is the spill: a slow collector holds back the shipper (TCP's
//! back-pressure), never the role; a lost connection resumes where the collector's copy
//! ends, so no event is lost or written twice.
//!
//! A second connection answers the collector's clock probes (NTP's four timestamps: the
//! collector's send and receive, this process's receive and send), from which the
//! collector puts this role's stamps on the harness's clock.
//!
//! The wire: each connection opens with one line, `EVENTS {hello}` or `CLOCK {hello}`.
//! On EVENTS the collector answers `{"have": BYTES}` and the role sends journal bytes from
//! there; when the role is done it half-closes and the collector answers `{"have": BYTES}`
//! once more. On CLOCK the collector sends `T1` lines and the role answers `T1 T2 T3`.

use crate::clock::mono_ns;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const EVENTS_HELLO: &str = "EVENTS ";
pub const CLOCK_HELLO: &str = "CLOCK ";

/// What a role says first on either connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub role: String,
    /// [`crate::clock::clock_id`] of the role's process.
    pub clock: String,
}

/// How many journal bytes the collector holds for a role.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Have {
    pub have: u64,
}

/// How long a closing role keeps trying to hand its last events over.
const FINISH_WITHIN: Duration = Duration::from_secs(30);
/// The most bytes sent in one write (whole lines only).
const CHUNK: usize = 64 * 1024;

/// Connects to the collector at `collector` (`HOST:PORT`, looked up on each attempt: a
/// collector in a container may move).
fn connect(collector: &str) -> Result<TcpStream> {
    let addrs: Vec<_> = collector
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the collector address {collector}"))?
        .collect();
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => {
            anyhow::Error::new(e).context(format!("cannot reach the collector at {collector}"))
        }
        None => anyhow::anyhow!("the collector address {collector} resolves to nothing"),
    })
}

/// Sends `journal` to the collector at `collector` until `wake` is closed (the journal is
/// then complete) and the collector holds all of it. `wake` ticks when the journal grew.
pub(crate) fn ship(
    journal: PathBuf,
    collector: String,
    hello: Hello,
    wake: Receiver<()>,
) -> Result<()> {
    let mut finishing: Option<Instant> = None;
    let mut backoff = Duration::from_millis(100);
    loop {
        match ship_once(&journal, &collector, &hello, &wake, &mut finishing) {
            Ok(()) => return Ok(()),
            Err(e) => {
                tracing::warn!(role = %hello.role, "events connection to the collector: {e:#}; resuming");
                if finishing.is_some_and(|since| since.elapsed() > FINISH_WITHIN) {
                    let len = std::fs::metadata(&journal).map(|m| m.len()).unwrap_or(0);
                    bail!(
                        "the collector at {collector} did not take the last events of role {} within {} s ({len} bytes; they are kept in {}): {e:#}",
                        hello.role,
                        FINISH_WITHIN.as_secs(),
                        journal.display()
                    );
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// One connection: hello, resume where the collector's copy ends, stream, and at the end
/// hand over and check the last bytes arrived.
fn ship_once(
    journal: &Path,
    collector: &str,
    hello: &Hello,
    wake: &Receiver<()>,
    finishing: &mut Option<Instant>,
) -> Result<()> {
    let mut stream = connect(collector)?;
    writeln!(stream, "{EVENTS_HELLO}{}", serde_json::to_string(hello)?)?;
    let mut answers = BufReader::new(stream.try_clone()?);
    // The collector answers once it knows this role's clock.
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut pos = read_have(&mut answers)?;
    let mut file =
        File::open(journal).with_context(|| format!("cannot read {}", journal.display()))?;
    let mut buf = vec![0u8; CHUNK];
    loop {
        file.seek(SeekFrom::Start(pos))?;
        let n = read_up_to(&mut file, &mut buf)?;
        // Whole lines only: a line the writer has half written goes next time.
        let whole = buf[..n]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        if whole > 0 {
            stream.write_all(&buf[..whole])?;
            pos += whole as u64;
            continue;
        }
        if finishing.is_some() {
            stream.shutdown(Shutdown::Write)?;
            let have = read_have(&mut answers)?;
            if have != pos {
                bail!("the collector holds {have} bytes of {pos}");
            }
            return Ok(());
        }
        match wake.recv_timeout(Duration::from_millis(200)) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            // The writer has flushed its last event: send to the end, then hand over.
            Err(RecvTimeoutError::Disconnected) => *finishing = Some(Instant::now()),
        }
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn read_have(answers: &mut impl BufRead) -> Result<u64> {
    let mut line = String::new();
    if answers.read_line(&mut line)? == 0 {
        bail!("the collector closed the connection");
    }
    let have: Have = serde_json::from_str(line.trim())
        .with_context(|| format!("the collector answered {line:?}"))?;
    Ok(have.have)
}

/// Answers the collector's clock probes until [`ClockAnswerer::stop`], reconnecting when
/// the connection drops.
pub(crate) struct ClockAnswerer {
    stopped: Arc<AtomicBool>,
    current: Arc<Mutex<Option<TcpStream>>>,
}

impl ClockAnswerer {
    pub(crate) fn start(collector: String, hello: Hello) -> Result<Self> {
        let stopped = Arc::new(AtomicBool::new(false));
        let current = Arc::new(Mutex::new(None::<TcpStream>));
        let (stop, conn) = (stopped.clone(), current.clone());
        std::thread::Builder::new()
            .name(format!("clock-{}", hello.role))
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Err(e) = answer(&collector, &hello, &conn) {
                        if !stop.load(Ordering::Relaxed) {
                            tracing::debug!(role = %hello.role, "clock connection: {e:#}");
                            std::thread::sleep(Duration::from_millis(500));
                        }
                    }
                }
            })
            .context("cannot start the clock thread")?;
        Ok(ClockAnswerer { stopped, current })
    }

    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Some(stream) = self.current.lock().expect("clock lock").take() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn answer(collector: &str, hello: &Hello, current: &Mutex<Option<TcpStream>>) -> Result<()> {
    let mut stream = connect(collector)?;
    *current.lock().expect("clock lock") = Some(stream.try_clone()?);
    writeln!(stream, "{CLOCK_HELLO}{}", serde_json::to_string(hello)?)?;
    let mut probes = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    loop {
        line.clear();
        if probes.read_line(&mut line)? == 0 {
            bail!("the collector closed the clock connection");
        }
        let t2 = mono_ns();
        let t1: u64 = line
            .trim()
            .parse()
            .with_context(|| format!("not a clock probe: {line:?}"))?;
        let t3 = mono_ns();
        stream.write_all(format!("{t1} {t2} {t3}\n").as_bytes())?;
    }
}
