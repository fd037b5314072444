//! What a run shows while it goes: the events read so far, the progress line and the
//! Prometheus endpoint.

use crate::metrics::{render, RoleGauges};
use analysis::summary::Summary;
use anyhow::{Context, Result};
use parking_lot::Mutex;
use probe::Record;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Reads what the roles appended to their event files since the last call.
pub(super) struct Tail {
    dir: PathBuf,
    offsets: HashMap<PathBuf, u64>,
    records: Vec<Record>,
}

impl Tail {
    pub(super) fn new(dir: PathBuf) -> Self {
        Tail {
            dir,
            offsets: HashMap::new(),
            records: Vec::new(),
        }
    }

    /// Every record so far, after reading what was appended since the last call.
    pub(super) fn read_new(&mut self) -> &[Record] {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return &self.records;
        };
        for path in entries.flatten().map(|e| e.path()) {
            let offset = self.offsets.entry(path.clone()).or_insert(0);
            let Ok(mut f) = std::fs::File::open(&path) else {
                continue;
            };
            if f.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut text = String::new();
            if f.read_to_string(&mut text).is_err() {
                continue;
            }
            // Only whole lines; a line still being written is read next time.
            let complete = text.rfind('\n').map_or(0, |i| i + 1);
            for line in text[..complete].lines() {
                if let Ok(r) = serde_json::from_str::<Record>(line) {
                    self.records.push(r);
                }
            }
            *offset += complete as u64;
        }
        &self.records
    }
}

pub(super) fn progress(s: &Summary, elapsed_ns: u64, total: Duration, interactive: bool) {
    let mut line = format!(
        "[{:>4.0}s / {:.0}s]",
        elapsed_ns as f64 / 1e9,
        total.as_secs_f64()
    );
    for (name, side) in &s.sides {
        line.push_str(&format!(
            "  {name}: shares {} ok {} stale {}, blocks {}/{}, new-block jobs {}",
            side.shares.submitted,
            side.shares.accepted,
            side.shares.stale,
            side.blocks.accepted,
            side.blocks.found,
            side.new_prevhash_job_ms.count
        ));
    }
    line.push_str(&format!("  | network blocks {}", s.network.blocks));
    if interactive {
        eprint!("\r{line}\x1b[K");
    } else {
        eprintln!("{line}");
    }
}

/// The latest summary and role gauges, as `/metrics` serves them.
pub(super) type Live = Arc<Mutex<(Option<Summary>, RoleGauges)>>;

/// Binds the metrics address up front, so a port in use fails the run before anything starts.
pub(super) async fn bind_metrics(bind: SocketAddr) -> Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(bind).await.with_context(|| {
        format!(
            "cannot serve metrics on {bind} (port {} in use? choose another with --metrics-bind)",
            bind.port()
        )
    })?;
    // The address bound, not the one asked for: `--metrics-bind 127.0.0.1:0` takes any port.
    eprintln!("metrics on http://{}/metrics", listener.local_addr()?);
    Ok(listener)
}

/// Serves `/metrics` from `live` until aborted.
pub(super) fn serve_metrics(
    listener: tokio::net::TcpListener,
    live: Live,
) -> tokio::task::JoinHandle<()> {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let live = live.clone();
            async move {
                let (summary, gauges) = &*live.lock();
                let body = summary
                    .as_ref()
                    .map(|s| render(s, gauges))
                    .unwrap_or_default();
                ([("content-type", "text/plain; version=0.0.4")], body)
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    })
}
