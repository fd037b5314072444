//! Writes events as JSON lines from a background thread.
//!
//! `record` only stamps and enqueues: no lock, serialisation or disk write sits inside a
//! measured interval. The queue is unbounded so no event is ever dropped; the writer drains
//! it and flushes when the recorder is closed or dropped.

use crate::clock::clock_id;
use crate::clock::{mono_ns, wall_ns};
use crate::event::{Event, Record};
use crate::ship::{ship, ClockAnswerer, Hello};
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A cheap, clonable handle for recording events. A disabled recorder discards events.
#[derive(Clone)]
pub struct Recorder {
    inner: Option<Arc<Inner>>,
}

/// The queue into a writer thread, and the thread.
type Writer = (Sender<Record>, JoinHandle<std::io::Result<()>>);

struct Inner {
    role: String,
    tx: Mutex<Option<Sender<Record>>>,
    writer: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
    /// With the network sink: the thread that hands the journal to the collector, and
    /// the one answering its clock probes.
    shipper: Mutex<Option<JoinHandle<Result<()>>>>,
    clock: Option<ClockAnswerer>,
}

impl Recorder {
    /// A recorder that keeps nothing (for standalone use without a run directory).
    pub fn disabled() -> Self {
        Recorder { inner: None }
    }

    /// Appends events of `role` to `path` (created, or appended to if it exists).
    pub fn to_file(path: &Path, role: &str) -> Result<Self> {
        let (writer, _) = start_writer(path, role, false)?;
        Ok(Self::started(role, writer, None, None))
    }

    /// The network sink: appends events of `role` to the local `journal`, as
    /// [`Recorder::to_file`] does, and ships them to the harness's collector at
    /// `collector` (`HOST:PORT`, see [`crate::ship`]); `close` returns once the collector
    /// holds them all.
    pub fn to_collector(journal: &Path, collector: &str, role: &str) -> Result<Self> {
        if let Some(dir) = journal.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let hello = Hello {
            role: role.to_string(),
            clock: clock_id(),
        };
        let clock = ClockAnswerer::start(collector.to_string(), hello.clone())?;
        let (writer, wake) = start_writer(journal, role, true)?;
        let journal = journal.to_path_buf();
        let wake = wake.context("the writer wakes the shipper")?;
        let collector = collector.to_string();
        let shipper = std::thread::Builder::new()
            .name(format!("ship-{role}"))
            .spawn(move || ship(journal, collector, hello, wake))
            .context("cannot start the events shipper thread")?;
        Ok(Self::started(role, writer, Some(shipper), Some(clock)))
    }

    fn started(
        role: &str,
        (tx, writer): Writer,
        shipper: Option<JoinHandle<Result<()>>>,
        clock: Option<ClockAnswerer>,
    ) -> Self {
        let rec = Recorder {
            inner: Some(Arc::new(Inner {
                role: role.to_string(),
                tx: Mutex::new(Some(tx)),
                writer: Mutex::new(Some(writer)),
                shipper: Mutex::new(shipper),
                clock,
            })),
        };
        rec.record(Event::ClockAnchor { wall_ns: wall_ns() });
        rec
    }

    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Stamps `event` now and queues it.
    pub fn record(&self, event: Event) {
        self.record_at(mono_ns(), event);
    }

    /// Queues `event` with a stamp taken earlier, where the event really happened.
    pub fn record_at(&self, t_ns: u64, event: Event) {
        let Some(inner) = &self.inner else { return };
        let record = Record {
            t_ns,
            role: inner.role.clone(),
            event,
        };
        if let Some(tx) = inner.tx.lock().expect("recorder lock").as_ref() {
            // The receiver lives until `close`, after which recording is a caller bug.
            if tx.send(record).is_err() {
                tracing::error!("event recorded after the recorder was closed");
            }
        }
    }

    /// Stops accepting events, writes out everything queued, and reports write errors.
    pub fn close(&self) -> Result<()> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        inner.tx.lock().expect("recorder lock").take();
        if let Some(writer) = inner.writer.lock().expect("recorder lock").take() {
            writer
                .join()
                .map_err(|_| anyhow::anyhow!("events writer thread panicked"))?
                .context("writing events failed")?;
        }
        let shipper = inner.shipper.lock().expect("recorder lock").take();
        let shipped = match shipper {
            Some(shipper) => shipper
                .join()
                .map_err(|_| anyhow::anyhow!("events shipper thread panicked"))
                .and_then(|shipped| shipped),
            None => Ok(()),
        };
        if let Some(clock) = &inner.clock {
            clock.stop();
        }
        shipped
    }
}

/// The writer thread of a recorder: drains the queue into `path`, flushing after each
/// batch; with `wake`, it ticks the returned receiver after each flush and drops it when
/// the last event is written.
fn start_writer(path: &Path, role: &str, wake: bool) -> Result<(Writer, Option<Receiver<()>>)> {
    let file = File::options()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open events file {}", path.display()))?;
    let (tx, rx) = channel::<Record>();
    // One pending tick is enough: the shipper reads to the end of the journal each time.
    let (woken, waker) = if wake {
        let (t, r) = sync_channel::<()>(1);
        (Some(t), Some(r))
    } else {
        (None, None)
    };
    let writer = std::thread::Builder::new()
        .name(format!("events-{role}"))
        .spawn(move || -> std::io::Result<()> {
            let mut out = BufWriter::new(file);
            // Blocks until a record arrives; ends when every sender is gone.
            while let Ok(first) = rx.recv() {
                write_line(&mut out, &first)?;
                while let Ok(more) = rx.try_recv() {
                    write_line(&mut out, &more)?;
                }
                out.flush()?;
                if let Some(woken) = &woken {
                    let _ = woken.try_send(());
                }
            }
            out.flush()
        })
        .context("cannot start the events writer thread")?;
    Ok(((tx, writer), waker))
}

fn write_line(out: &mut impl Write, record: &Record) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    out.write_all(b"\n")
}

/// Reads an events file back (used by analysis and tests).
pub fn read_events(path: &Path) -> Result<Vec<Record>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read events file {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not an event record", path.display(), i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::TipCause;

    #[test]
    fn every_recorded_event_is_written_in_order() {
        let dir = std::env::temp_dir().join(format!("probe-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("events.jsonl");
        let _ = std::fs::remove_file(&path);
        let rec = Recorder::to_file(&path, "node").unwrap();
        for h in 0..1000u32 {
            rec.record(Event::TipChanged {
                height: h,
                hash: format!("{h:064x}"),
                prev_hash: String::new(),
                cause: TipCause::Network,
                tx_count: 0,
                fees_sats: 0,
            });
        }
        rec.close().unwrap();
        let events = read_events(&path).unwrap();
        assert_eq!(events.len(), 1001, "anchor plus every event");
        assert!(matches!(events[0].event, Event::ClockAnchor { .. }));
        let heights: Vec<u32> = events[1..]
            .iter()
            .map(|r| match r.event {
                Event::TipChanged { height, .. } => height,
                _ => panic!("unexpected event"),
            })
            .collect();
        assert_eq!(heights, (0..1000).collect::<Vec<_>>());
        assert!(events.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    }
}
