//! What a run shows while it goes: the events read so far, the progress line and the
//! Prometheus endpoint.

use crate::metrics::{LiveMetrics, RoleGauges};
use analysis::summary::Summary;
use model::run_dir::EVENTS_DIR;
use parking_lot::Mutex;
use probe::Record;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Reads what the roles appended to their event files since the last call, line by line
/// (into the run's streaming analysis): nothing is held here but where each file was left.
pub(super) struct Tail {
    dir: PathBuf,
    /// Per file: the byte read up to and the lines read.
    read: HashMap<PathBuf, (u64, u64)>,
    /// Lines that are not event records, as `events/pool.jsonl:17`.
    unreadable: Vec<String>,
}

impl Tail {
    pub(super) fn new(dir: PathBuf) -> Self {
        Tail {
            dir,
            read: HashMap::new(),
            unreadable: Vec::new(),
        }
    }

    /// Hands every whole line appended since the last call to `each`, as a record.
    pub(super) fn read_into(&mut self, mut each: impl FnMut(Record)) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for path in files {
            let (offset, lines) = self.read.entry(path.clone()).or_insert((0, 0));
            let Ok(mut f) = std::fs::File::open(&path) else {
                continue;
            };
            if f.seek(SeekFrom::Start(*offset)).is_err() {
                continue;
            }
            let mut bytes = Vec::new();
            if f.read_to_end(&mut bytes).is_err() {
                continue;
            }
            // Only whole lines; a line still being written is read next time.
            let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            for line in bytes[..complete].split(|b| *b == b'\n') {
                *lines += 1;
                if line.trim_ascii().is_empty() {
                    continue;
                }
                match serde_json::from_slice::<Record>(line) {
                    Ok(r) => each(r),
                    Err(_) => self.unreadable.push(format!(
                        "{EVENTS_DIR}/{}:{lines}",
                        path.file_name().unwrap_or_default().to_string_lossy()
                    )),
                }
            }
            *offset += complete as u64;
        }
    }

    /// The lines read so far that were not event records.
    pub(super) fn unreadable(&self) -> &[String] {
        &self.unreadable
    }
}

pub(super) fn progress(s: &Summary, elapsed_ns: u64, total: Duration, interactive: bool) {
    let elapsed_s = elapsed_ns as f64 / 1e9;
    if interactive {
        // One line that stays one line: a bar, the time, and the sides' totals.
        let done = (elapsed_s / total.as_secs_f64().max(1e-9)).clamp(0.0, 1.0);
        const BAR: usize = 20;
        let filled = (done * BAR as f64).round() as usize;
        let (shares, stale, blocks) = (s.sides.values()).fold((0, 0, 0), |(a, b, c), side| {
            (
                a + side.shares.submitted,
                b + side.shares.stale,
                c + side.blocks.found,
            )
        });
        let line = format!(
            "[{}{}] {:.0}/{:.0} s; shares {shares}, stale {stale}; blocks {blocks} of {}",
            "#".repeat(filled),
            ".".repeat(BAR - filled),
            elapsed_s,
            total.as_secs_f64(),
            s.network.blocks
        );
        // Within an 80-column terminal, or the line wraps and each repaint leaves one.
        let line: String = line.chars().take(79).collect();
        eprint!("\r{line}\x1b[K");
        return;
    }
    let mut line = format!("[{elapsed_s:>4.0}s / {:.0}s]", total.as_secs_f64());
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
    eprintln!("{line}");
}

/// What a run shows while it goes: the latest summary (`None` until the first), the roles'
/// latest CPU and memory, and where the run is.
#[derive(Default)]
pub(super) struct LiveState {
    summary: Option<Summary>,
    /// The charts' points since the window began, so a page opened late shows the run.
    history: Vec<Point>,
    pub gauges: RoleGauges,
    /// What `/metrics` serves.
    pub metrics: LiveMetrics,
    pub elapsed_s: f64,
    pub total_s: f64,
}

/// Points the live charts keep at most: when full, every other one goes, so the whole run
/// stays in view at half the resolution and memory stays bounded however long it runs.
const MAX_POINTS: usize = 1_000;

/// What the live charts plot of one summary, per side.
#[derive(Clone, serde::Serialize)]
struct Point {
    t_s: f64,
    sides: BTreeMap<String, SidePoint>,
}

#[derive(Clone, serde::Serialize)]
struct SidePoint {
    submitted: u64,
    stale_pct: Option<f64>,
    new_prevhash_job_p50_ms: Option<f64>,
    farm_bytes_per_s: Option<f64>,
}

impl LiveState {
    /// The newest summary; charted once its window has begun.
    pub fn publish(&mut self, summary: Summary) {
        self.metrics.summarized(&summary);
        if summary.duration_s > 0.0 {
            if self.history.len() >= MAX_POINTS {
                let mut keep = false;
                self.history.retain(|_| {
                    keep = !keep;
                    keep
                });
            }
            self.history.push(Point {
                t_s: summary.duration_s,
                sides: (summary.sides.iter())
                    .map(|(name, s)| {
                        let point = SidePoint {
                            submitted: s.shares.submitted,
                            stale_pct: s.shares.stale_pct,
                            new_prevhash_job_p50_ms: s.new_prevhash_job_ms.p50,
                            farm_bytes_per_s: (s.bandwidth_bytes_per_s.as_ref())
                                .map(|b| b.farm.tx + b.farm.rx),
                        };
                        (name.clone(), point)
                    })
                    .collect(),
            });
        }
        self.summary = Some(summary);
    }
}

pub(super) type Live = Arc<Mutex<LiveState>>;

/// The live page's data: the live summary as analysis computed it, nothing recomputed.
#[derive(serde::Serialize)]
struct LiveJson<'a> {
    elapsed_s: f64,
    total_s: f64,
    summary: Option<&'a Summary>,
    history: &'a [Point],
    roles: BTreeMap<&'a str, RoleNow>,
}

#[derive(serde::Serialize)]
struct RoleNow {
    cpu_pct: f64,
    rss_bytes: u64,
}

/// The live dashboard: one self-contained page (no script or style from elsewhere) that
/// polls `/live.json`.
const PAGE: &str = include_str!("live.html");

/// The page, with the headline latencies it shows taken from the analysis's declarations.
fn page() -> String {
    let latencies: Vec<(&str, &str)> = (analysis::metric::Headline::distributions())
        .map(|(h, d)| (h.key(), d.title))
        .collect();
    let json = serde_json::to_string(&latencies).unwrap_or_else(|_| "[]".into());
    PAGE.replace("/*LATENCIES*/[]", &json)
}

/// Serves `/metrics`, the live page `/` and its data `/live.json` from `live` until aborted.
pub(super) fn serve_metrics(
    listener: tokio::net::TcpListener,
    live: Live,
) -> tokio::task::JoinHandle<()> {
    use axum::routing::get;
    let metrics = live.clone();
    let page = axum::response::Html(page());
    let app = axum::Router::new()
        .route(
            "/metrics",
            get(move || {
                let live = metrics.clone();
                async move {
                    let body = live.lock().metrics.render();
                    ([("content-type", "text/plain; version=0.0.4")], body)
                }
            }),
        )
        .route(
            "/live.json",
            get(move || {
                let live = live.clone();
                async move {
                    let state = live.lock();
                    let json = LiveJson {
                        elapsed_s: state.elapsed_s,
                        total_s: state.total_s,
                        summary: state.summary.as_ref(),
                        history: &state.history,
                        roles: (state.gauges.iter())
                            .map(|(name, (cpu_pct, rss_bytes))| {
                                let (cpu_pct, rss_bytes) = (*cpu_pct, *rss_bytes);
                                (name.as_str(), RoleNow { cpu_pct, rss_bytes })
                            })
                            .collect(),
                    };
                    let body = serde_json::to_string(&json).unwrap_or_default();
                    (
                        [
                            ("content-type", "application/json"),
                            ("cache-control", "no-store"),
                        ],
                        body,
                    )
                }
            }),
        )
        .route("/", get(move || std::future::ready(page.clone())));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    })
}

#[cfg(test)]
mod tests {
    /// The page's latency rows are the analysis's declared distributions, each by its key.
    #[test]
    fn the_live_page_lists_every_declared_latency() {
        let page = super::page();
        assert!(!page.contains("/*LATENCIES*/"), "placeholder left");
        for (h, d) in analysis::metric::Headline::distributions() {
            assert!(page.contains(&format!(r#"["{}","{}"]"#, h.key(), d.title)));
        }
    }
}
