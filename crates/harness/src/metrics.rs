//! Live Prometheus metrics of a run, kept by `prometheus-client`: the share, block and
//! latency metrics are updated as the streaming analysis consumes each event (one count,
//! one histogram observation per event), the levels (template value, bandwidth, the
//! roles' CPU and memory) are set from the live summary and the roles' samples. Metric
//! names are listed in the README.

use crate::host::{HostSecond, CPU_MODES};
use analysis::stream::Observed;
use analysis::summary::ROLE_EXITED;
use analysis::Summary;
use anyhow::{Context, Result};
use probe::ShareVerdict;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;

/// Upper bounds (seconds, Prometheus' base unit) of the latency histogram buckets.
const BUCKETS_S: &[f64] = &[
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// Latest CPU percent and resident bytes of each role.
pub type RoleGauges = BTreeMap<String, (f64, u64)>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Side {
    side: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SideOutcome {
    side: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SideSiteDirection {
    side: String,
    site: String,
    direction: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Role {
    role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CpuMode {
    cpu: String,
    mode: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Mountpoint {
    mountpoint: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type Latencies = Family<Side, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS_S.iter().copied())
}

/// What a count a summary gives in all (`total` of `key`) adds to a counter that stands at
/// the last total `seen` of it: summaries repeat what earlier ones held.
fn newly_counted(seen: &mut BTreeMap<String, u64>, key: &str, total: u64) -> u64 {
    let seen = seen.entry(key.to_string()).or_default();
    let new = total.saturating_sub(*seen);
    *seen = (*seen).max(total);
    new
}

/// The run's metrics, registered once and updated as the run goes.
pub struct LiveMetrics {
    exposition: Exposition,
    shares: Family<SideOutcome, Counter>,
    blocks: Family<SideOutcome, Counter>,
    network_blocks: Counter,
    new_job: Latencies,
    new_prevhash_job: Latencies,
    block_propagation: Latencies,
    template_value: Family<Side, FloatGauge>,
    network_template_value: FloatGauge,
    bandwidth: Family<SideSiteDirection, FloatGauge>,
    role_cpu: Family<Role, FloatGauge>,
    role_rss: Family<Role, Gauge>,
    link_rtt: Family<Side, FloatGauge>,
    role_exits: Family<Role, Counter>,
    pool_refused: Family<Side, Counter>,
    unmatched: Family<Kind, Counter>,
    /// What the counters set from summaries stand at, to add only what is new.
    unmatched_seen: BTreeMap<String, u64>,
    pool_refused_seen: BTreeMap<String, u64>,
    /// The host, named as node exporter names it (counted from the run's start).
    host_cpu_seconds: Family<CpuMode, Counter<f64, AtomicU64>>,
    host_memory_total: Gauge,
    host_memory_available: Gauge,
    host_load: [FloatGauge; 3],
    host_fs_avail: Family<Mountpoint, Gauge>,
    host_fs_size: Family<Mountpoint, Gauge>,
}

/// A registry and the Prometheus text it renders.
#[derive(Default)]
pub struct Exposition {
    pub registry: Registry,
    /// Counter families, whose names the exposition must end in `_total`.
    counters: Vec<&'static str>,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        let mut m = LiveMetrics {
            exposition: Exposition::default(),
            shares: Family::default(),
            blocks: Family::default(),
            network_blocks: Counter::default(),
            new_job: Family::new_with_constructor(latency_histogram),
            new_prevhash_job: Family::new_with_constructor(latency_histogram),
            block_propagation: Family::new_with_constructor(latency_histogram),
            template_value: Family::default(),
            network_template_value: FloatGauge::default(),
            bandwidth: Family::default(),
            role_cpu: Family::default(),
            role_rss: Family::default(),
            link_rtt: Family::default(),
            role_exits: Family::default(),
            pool_refused: Family::default(),
            unmatched: Family::default(),
            unmatched_seen: BTreeMap::new(),
            pool_refused_seen: BTreeMap::new(),
            host_cpu_seconds: Family::default(),
            host_memory_total: Gauge::default(),
            host_memory_available: Gauge::default(),
            host_load: Default::default(),
            host_fs_avail: Family::default(),
            host_fs_size: Family::default(),
        };
        m.register_counters();
        m.register_host();
        m.register_run();
        m
    }
}

impl Exposition {
    /// Registers a counter family, named as the library wants it (without `_total`), and
    /// notes it for [`Exposition::render`].
    pub fn register_counter(
        &mut self,
        name: &'static str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        self.registry.register(name, help, metric);
        self.counters.push(name);
    }

    /// The Prometheus text exposition (format 0.0.4). The library writes OpenMetrics, whose
    /// counter families are named without `_total` (their samples with it) and which ends
    /// in `# EOF`; Prometheus' text format and `promtool check metrics` want the family
    /// named as its samples, so counters' HELP and TYPE lines get `_total` here and the
    /// end marker goes (client_rust issue 51).
    pub fn render(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            return String::new();
        }
        let mut out = String::with_capacity(text.len());
        for line in text.lines() {
            if line == "# EOF" {
                continue;
            }
            let renamed = ["# HELP ", "# TYPE "].iter().find_map(|tag| {
                let rest = line.strip_prefix(tag)?;
                let (name, tail) = rest.split_once(' ')?;
                self.counters
                    .contains(&name)
                    .then(|| format!("{tag}{name}_total {tail}"))
            });
            out.push_str(renamed.as_deref().unwrap_or(line));
            out.push('\n');
        }
        out
    }
}

impl LiveMetrics {
    /// The run's counters: shares, blocks, exits, unmatched events.
    fn register_counters(&mut self) {
        // Counters are registered without `_total`: the library adds it to their samples.
        let e = &mut self.exposition;
        e.register_counter(
            "stratum_bench_shares",
            "Shares in the measured window by side and outcome: submitted; stale when the job was outdated at submission; accepted, pool_stale and rejected as the pool judged them.",
            self.shares.clone(),
        );
        e.register_counter(
            "stratum_bench_blocks",
            "Blocks found by a side's miners, and those the node accepted.",
            self.blocks.clone(),
        );
        e.register_counter(
            "stratum_bench_network_blocks",
            "Tip changes of the simulated network in the measured window.",
            self.network_blocks.clone(),
        );
        e.register_counter(
            "stratum_bench_role_exits",
            "Roles that exited during the run (any exit before the run stops them is a failure).",
            self.role_exits.clone(),
        );
        e.register_counter(
            "stratum_bench_pool_refused_connections",
            "Connections a side's pool refused its taps: above zero, the pool stopped serving, and the side measures that from then on, not the protocol.",
            self.pool_refused.clone(),
        );
        e.register_counter(
            "stratum_bench_unmatched",
            "Events that could not be tied to their counterpart, by kind.",
            self.unmatched.clone(),
        );
    }

    /// The host's CPU, memory, load and filesystem, by node exporter's names where promtool allows them.
    fn register_host(&mut self) {
        let e = &mut self.exposition;
        e.register_counter(
            "node_cpu_seconds",
            "Seconds the host's CPUs spent in each mode since the run started (node exporter's name).",
            self.host_cpu_seconds.clone(),
        );
        let r = &mut e.registry;
        r.register(
            // node exporter's node_memory_MemTotal_bytes, renamed: its camelCase fails
            // promtool's lint, which the exposition is held to.
            "stratum_bench_host_memory_total_bytes",
            "The host's memory (node exporter: node_memory_MemTotal_bytes).",
            self.host_memory_total.clone(),
        );
        r.register(
            "stratum_bench_host_memory_available_bytes",
            "The host's memory available to start new work without swapping (node exporter: node_memory_MemAvailable_bytes).",
            self.host_memory_available.clone(),
        );
        for (name, gauge) in ["node_load1", "node_load5", "node_load15"]
            .into_iter()
            .zip(&self.host_load)
        {
            r.register(
                name,
                "The host's load average (node exporter's name).",
                gauge.clone(),
            );
        }
        r.register(
            "node_filesystem_avail_bytes",
            "Bytes available on the filesystem of the run directory (node exporter's name).",
            self.host_fs_avail.clone(),
        );
        r.register(
            "node_filesystem_size_bytes",
            "Size of the filesystem of the run directory (node exporter's name).",
            self.host_fs_size.clone(),
        );
    }

    /// The run's distributions and gauges: latencies, template values, bandwidth, roles' CPU and memory, link round trips.
    fn register_run(&mut self) {
        let r = &mut self.exposition.registry;
        r.register(
            "stratum_bench_new_job_seconds",
            "From the node producing a template to a miner receiving the first job on it.",
            self.new_job.clone(),
        );
        r.register(
            "stratum_bench_new_prevhash_job_seconds",
            "From a tip change at the node to a miner receiving a job on the new prev hash.",
            self.new_prevhash_job.clone(),
        );
        r.register(
            "stratum_bench_block_propagation_seconds",
            "From a miner submitting a block-level share to the node accepting the block.",
            self.block_propagation.clone(),
        );
        r.register(
            "stratum_bench_template_value_sats",
            "Time-weighted mean value (subsidy + fees) of the templates a side's miners mined on.",
            self.template_value.clone(),
        );
        r.register(
            "stratum_bench_network_template_value_sats",
            "Mean value of the best template the network could build.",
            self.network_template_value.clone(),
        );
        r.register(
            "stratum_bench_bandwidth_bytes_per_second",
            "Application bytes per second across the WAN link, by side, site and direction.",
            self.bandwidth.clone(),
        );
        r.register(
            "stratum_bench_role_cpu_percent",
            "CPU use of each role process, in percent of one core (last second).",
            self.role_cpu.clone(),
        );
        r.register(
            "stratum_bench_role_rss_bytes",
            "Resident memory of each role process.",
            self.role_rss.clone(),
        );
        r.register(
            "stratum_bench_link_rtt_seconds",
            "The round trip of each side's emulated WAN link, as configured.",
            self.link_rtt.clone(),
        );
    }

    /// What the streams learned from the events consumed since the last call.
    pub fn observe(&self, observed: &[(String, Observed)], network_blocks: u64) {
        self.network_blocks.inc_by(network_blocks);
        for (side, o) in observed {
            let count = |family: &Family<SideOutcome, Counter>, outcome: &str| {
                let labels = SideOutcome {
                    side: side.clone(),
                    outcome: outcome.into(),
                };
                family.get_or_create(&labels).inc();
            };
            let latency = |family: &Latencies, ms: f64| {
                let labels = Side { side: side.clone() };
                family.get_or_create(&labels).observe(ms / 1e3);
            };
            match *o {
                Observed::Submitted { stale } => {
                    count(&self.shares, "submitted");
                    if stale {
                        count(&self.shares, "stale");
                    }
                }
                Observed::Judged(verdict) => count(
                    &self.shares,
                    match verdict {
                        ShareVerdict::Accepted => "accepted",
                        ShareVerdict::Stale => "pool_stale",
                        _ => "rejected",
                    },
                ),
                Observed::BlockFound => count(&self.blocks, "found"),
                Observed::BlockAccepted { ms } => {
                    count(&self.blocks, "accepted");
                    latency(&self.block_propagation, ms);
                }
                Observed::NewJob { ms } => latency(&self.new_job, ms),
                Observed::NewPrevhashJob { ms } => latency(&self.new_prevhash_job, ms),
            }
        }
    }

    /// The levels a live summary gives (means, rates), and the counts only a summary
    /// knows (what could not be matched, the roles that exited).
    pub fn summarized(&mut self, summary: &Summary) {
        for (name, s) in &summary.sides {
            let side = Side { side: name.clone() };
            // Every side's series from the first summary on, at zero until counted: a
            // query or a rule sees 0, not nothing.
            for (family, outcomes) in [
                (
                    &self.shares,
                    &["submitted", "stale", "accepted", "pool_stale", "rejected"][..],
                ),
                (&self.blocks, &["found", "accepted"][..]),
            ] {
                for outcome in outcomes {
                    let labels = SideOutcome {
                        side: name.clone(),
                        outcome: (*outcome).into(),
                    };
                    family.get_or_create(&labels).inc_by(0);
                }
            }
            for latencies in [
                &self.new_job,
                &self.new_prevhash_job,
                &self.block_propagation,
            ] {
                drop(latencies.get_or_create(&side));
            }
            if let Some(v) = s.template_value_sats.mean {
                self.template_value.get_or_create(&side).set(v);
            }
            self.link_rtt.get_or_create(&side).set(s.link_rtt_ms / 1e3);
            let refused = s.pool_refused.map_or(0, |r| r.connections);
            let new = newly_counted(&mut self.pool_refused_seen, name, refused);
            self.pool_refused.get_or_create(&side).inc_by(new);
            if let Some(b) = &s.bandwidth_bytes_per_s {
                for (site, direction, v) in [
                    ("farm", "tx", b.farm.tx),
                    ("farm", "rx", b.farm.rx),
                    ("pool", "tx", b.pool.tx),
                    ("pool", "rx", b.pool.rx),
                ] {
                    let labels = SideSiteDirection {
                        side: name.clone(),
                        site: site.into(),
                        direction: direction.into(),
                    };
                    self.bandwidth.get_or_create(&labels).set(v);
                }
            }
        }
        if let Some(v) = summary.network.template_value_sats.mean {
            self.network_template_value.set(v);
        }
        for (kind, n) in &summary.unmatched {
            let new = newly_counted(&mut self.unmatched_seen, kind, *n);
            if let Some(role) = kind.strip_prefix(ROLE_EXITED) {
                self.role_exits
                    .get_or_create(&Role { role: role.into() })
                    .inc_by(new);
            }
            self.unmatched
                .get_or_create(&Kind { kind: kind.clone() })
                .inc_by(new);
        }
    }

    /// Each role's CPU and memory of the last second.
    pub fn roles(&self, roles: &RoleGauges) {
        for (role, (cpu, rss)) in roles {
            let labels = Role { role: role.clone() };
            self.role_cpu.get_or_create(&labels).set(*cpu);
            self.role_rss
                .get_or_create(&labels)
                .set(i64::try_from(*rss).unwrap_or(i64::MAX));
        }
    }

    /// The host's last second.
    pub fn host(&self, second: &HostSecond) {
        for (core, seconds) in &second.cpu_seconds {
            for (mode, s) in CPU_MODES.iter().zip(seconds) {
                let labels = CpuMode {
                    cpu: core.to_string(),
                    mode: mode.to_string(),
                };
                self.host_cpu_seconds.get_or_create(&labels).inc_by(*s);
            }
        }
        let r = &second.reading;
        let bytes = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
        self.host_memory_total.set(bytes(r.mem_total_bytes));
        self.host_memory_available.set(bytes(r.mem_available_bytes));
        for (gauge, v) in self.host_load.iter().zip([r.load1, r.load5, r.load15]) {
            gauge.set(v);
        }
        let run_dir = Mountpoint {
            mountpoint: "run_dir".into(),
        };
        self.host_fs_avail
            .get_or_create(&run_dir)
            .set(bytes(r.fs_avail_bytes));
        self.host_fs_size
            .get_or_create(&run_dir)
            .set(bytes(r.fs_size_bytes));
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn render(&self) -> String {
        self.exposition.render()
    }
}

/// Binds the metrics address up front, so a port in use fails the run before anything starts.
pub async fn bind_metrics(bind: SocketAddr) -> Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(bind).await.with_context(|| {
        format!(
            "cannot serve metrics on {bind} (port {} in use? choose another with --metrics-bind)",
            bind.port()
        )
    })?;
    // The address bound, not the one asked for: `--metrics-bind 127.0.0.1:0` takes any port.
    let addr = listener.local_addr()?;
    eprintln!("metrics on http://{addr}/metrics, live dashboard on http://{addr}/");
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_counts_once_and_the_exposition_is_prometheus_text() {
        let m = LiveMetrics::default();
        let sv1 = |o| ("sv1".to_string(), o);
        m.observe(
            &[
                sv1(Observed::Submitted { stale: false }),
                sv1(Observed::Submitted { stale: true }),
                sv1(Observed::Judged(ShareVerdict::Accepted)),
                sv1(Observed::Judged(ShareVerdict::Stale)),
                sv1(Observed::Judged(ShareVerdict::Duplicate)),
                sv1(Observed::NewPrevhashJob { ms: 40.0 }),
                sv1(Observed::NewPrevhashJob { ms: 400.0 }),
            ],
            2,
        );
        m.observe(&[sv1(Observed::Submitted { stale: false })], 1);
        // A side's series are there from its first summary, at zero until counted; the
        // counts only a summary knows grow by what is new.
        let manifest: analysis::Manifest = serde_json::from_value(serde_json::json!({
            "scenario": "s", "window_start_ns": 0, "window_end_ns": 1_000_000_000u64,
            "node_role": "node",
            "link": {"rtt_ms": 100.0, "jitter_ms": 0.0, "bandwidth_bps": null},
            "sides": {"sv2": {"config": "sv2-c", "miners": 1, "miners_role": "miners",
                "pool_role": "pool", "link_role": "link", "roles": ["pool"]}}
        }))
        .unwrap();
        let exited = probe::Record {
            t_ns: 1,
            role: "harness".into(),
            event: probe::Event::RoleExited {
                name: "pool".into(),
                status: "exit status: 1".into(),
            },
        };
        let refused = probe::Record {
            t_ns: 2,
            role: "pool".into(),
            event: probe::Event::TapUpstreamUnreachable {
                connection: 1,
                reason: "cannot reach the pool: Connection refused (os error 111)".into(),
                refused: true,
            },
        };
        let summary = analysis::stream::compute(&manifest, &[exited, refused], &[]);
        let mut fresh = LiveMetrics::default();
        fresh.summarized(&summary);
        fresh.summarized(&summary);
        let text = fresh.render();
        for line in [
            "stratum_bench_shares_total{side=\"sv2\",outcome=\"pool_stale\"} 0",
            "stratum_bench_blocks_total{side=\"sv2\",outcome=\"accepted\"} 0",
            "stratum_bench_block_propagation_seconds_count{side=\"sv2\"} 0",
            "stratum_bench_role_exits_total{role=\"pool\"} 1",
            // Counted once over two summaries that both hold it.
            "stratum_bench_pool_refused_connections_total{side=\"sv2\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        let text = m.render();
        for line in [
            "# TYPE stratum_bench_shares_total counter",
            "stratum_bench_shares_total{side=\"sv1\",outcome=\"submitted\"} 3",
            "stratum_bench_shares_total{side=\"sv1\",outcome=\"stale\"} 1",
            "stratum_bench_shares_total{side=\"sv1\",outcome=\"accepted\"} 1",
            "stratum_bench_shares_total{side=\"sv1\",outcome=\"pool_stale\"} 1",
            "stratum_bench_shares_total{side=\"sv1\",outcome=\"rejected\"} 1",
            "stratum_bench_network_blocks_total 3",
            "# TYPE stratum_bench_new_prevhash_job_seconds histogram",
            "stratum_bench_new_prevhash_job_seconds_count{side=\"sv1\"} 2",
            "stratum_bench_new_prevhash_job_seconds_bucket{le=\"0.05\",side=\"sv1\"} 1",
            "stratum_bench_new_prevhash_job_seconds_bucket{le=\"0.5\",side=\"sv1\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("# EOF"));
    }
}
