//! Live Prometheus metrics of a run, rendered from the same summary the run ends with.

use analysis::summary::ROLE_EXITED;
use analysis::Summary;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Upper bounds (seconds, Prometheus' base unit) of the latency histogram buckets.
const BUCKETS_S: &[f64] = &[
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0,
];

/// Latest CPU percent and resident bytes of each role.
pub type RoleGauges = BTreeMap<String, (f64, u64)>;

/// The Prometheus text exposition of `summary` (metric names are listed in the README).
pub fn render(summary: &Summary, roles: &RoleGauges) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, lines: Vec<String>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    };
    let sides = &summary.sides;
    family(
        "stratum_bench_shares_total",
        "counter",
        "Shares in the measured window by side and outcome: accepted where the pool decides, stale when the job was outdated at submission, pool_stale as the pool judged it.",
        sides
            .iter()
            .flat_map(|(side, s)| {
                let c = &s.shares;
                [
                    ("submitted", c.submitted),
                    ("accepted", c.accepted),
                    ("stale", c.stale),
                    ("rejected", c.rejected),
                    ("pool_stale", c.pool_stale),
                ]
                    .map(|(o, n)| format!("stratum_bench_shares_total{{side=\"{side}\",outcome=\"{o}\"}} {n}"))
            })
            .collect(),
    );
    family(
        "stratum_bench_blocks_total",
        "counter",
        "Blocks found by a side's miners, and those the node accepted.",
        sides
            .iter()
            .flat_map(|(side, s)| {
                [("found", s.blocks.found), ("accepted", s.blocks.accepted)].map(|(o, n)| {
                    format!("stratum_bench_blocks_total{{side=\"{side}\",outcome=\"{o}\"}} {n}")
                })
            })
            .collect(),
    );
    family(
        "stratum_bench_network_blocks_total",
        "counter",
        "Tip changes of the simulated network in the measured window.",
        vec![format!(
            "stratum_bench_network_blocks_total {}",
            summary.network.blocks
        )],
    );
    for (metric, help, pick) in [
        (
            "stratum_bench_new_job_seconds",
            "From the node producing a template to a miner receiving the first job on it.",
            (|s: &analysis::summary::SideSummary| &s.samples.new_job_ms)
                as fn(&_) -> &analysis::stats::Clustered,
        ),
        (
            "stratum_bench_new_prevhash_job_seconds",
            "From a tip change at the node to a miner receiving a job on the new prev hash.",
            |s| &s.samples.new_prevhash_job_ms,
        ),
        (
            "stratum_bench_block_propagation_seconds",
            "From a miner submitting a block-level share to the node accepting the block.",
            |s| &s.samples.block_propagation_ms,
        ),
    ] {
        let mut lines = Vec::new();
        let bounds_ms: Vec<f64> = BUCKETS_S.iter().map(|le| le * 1e3).collect();
        for (side, s) in sides {
            let samples = pick(s);
            for (le, n) in BUCKETS_S.iter().zip(samples.at_or_below(&bounds_ms)) {
                lines.push(format!(
                    "{metric}_bucket{{side=\"{side}\",le=\"{le}\"}} {n}"
                ));
            }
            lines.push(format!(
                "{metric}_bucket{{side=\"{side}\",le=\"+Inf\"}} {}",
                samples.count()
            ));
            lines.push(format!(
                "{metric}_sum{{side=\"{side}\"}} {}",
                samples.sum() / 1e3
            ));
            lines.push(format!(
                "{metric}_count{{side=\"{side}\"}} {}",
                samples.count()
            ));
        }
        family(metric, "histogram", help, lines);
    }
    family(
        "stratum_bench_template_value_sats",
        "gauge",
        "Time-weighted mean value (subsidy + fees) of the templates a side's miners mined on.",
        sides
            .iter()
            .filter_map(|(side, s)| {
                s.template_value_sats
                    .mean
                    .map(|v| format!("stratum_bench_template_value_sats{{side=\"{side}\"}} {v}"))
            })
            .collect(),
    );
    family(
        "stratum_bench_network_template_value_sats",
        "gauge",
        "Mean value of the best template the network could build.",
        summary
            .network
            .template_value_sats
            .mean
            .map(|v| format!("stratum_bench_network_template_value_sats {v}"))
            .into_iter()
            .collect(),
    );
    family(
        "stratum_bench_bandwidth_bytes_per_second",
        "gauge",
        "Application bytes per second across the WAN link, by side, site and direction.",
        sides
            .iter()
            .filter_map(|(side, s)| Some((side, s.bandwidth_bytes_per_s.as_ref()?)))
            .flat_map(|(side, b)| {
                [("farm", "tx", b.farm.tx), ("farm", "rx", b.farm.rx), ("pool", "tx", b.pool.tx), ("pool", "rx", b.pool.rx)].map(
                    |(site, dir, v)| {
                        format!("stratum_bench_bandwidth_bytes_per_second{{side=\"{side}\",site=\"{site}\",direction=\"{dir}\"}} {v}")
                    },
                )
            })
            .collect(),
    );
    family(
        "stratum_bench_role_cpu_percent",
        "gauge",
        "CPU use of each role process, in percent of one core (last second).",
        roles
            .iter()
            .map(|(r, (cpu, _))| format!("stratum_bench_role_cpu_percent{{role=\"{r}\"}} {cpu}"))
            .collect(),
    );
    family(
        "stratum_bench_role_rss_bytes",
        "gauge",
        "Resident memory of each role process.",
        roles
            .iter()
            .map(|(r, (_, rss))| format!("stratum_bench_role_rss_bytes{{role=\"{r}\"}} {rss}"))
            .collect(),
    );
    family(
        "stratum_bench_link_rtt_seconds",
        "gauge",
        "The round trip of each side's emulated WAN link, as configured.",
        sides
            .iter()
            .map(|(side, s)| {
                format!(
                    "stratum_bench_link_rtt_seconds{{side=\"{side}\"}} {}",
                    s.link_rtt_ms / 1e3
                )
            })
            .collect(),
    );
    family(
        "stratum_bench_role_exits_total",
        "counter",
        "Roles that exited during the run (any exit before the run stops them is a failure).",
        summary
            .unmatched
            .iter()
            .filter_map(|(k, n)| {
                let role = k.strip_prefix(ROLE_EXITED)?;
                Some(format!(
                    "stratum_bench_role_exits_total{{role=\"{role}\"}} {n}"
                ))
            })
            .collect(),
    );
    family(
        "stratum_bench_unmatched_total",
        "counter",
        "Events that could not be tied to their counterpart, by kind.",
        summary
            .unmatched
            .iter()
            .map(|(k, n)| format!("stratum_bench_unmatched_total{{kind=\"{k}\"}} {n}"))
            .collect(),
    );
    out
}
