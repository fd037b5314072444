//! The report of a benchmark directory: whichever of the fan-out, pool and template
//! results it holds, each with tables, charts, and the seed documents' figures beside
//! ours, labelled with the hardware they were measured on.

use crate::document::{Block, Document, Section};
use crate::svg::{cdf, line_chart, number, Series};
use analysis::bench::{
    CpuSplit, FanoutResult, FanoutVia, PoolBenchReport, TemplateBenchReport, TemplateMempool,
    Verdict, FANOUT_FILE, POOL_FILE, TEMPLATE_FILE,
};
use analysis::published::{self, SeedFigure, FASTPROXY_BROADCAST_US, FASTPROXY_TCP_US_PER_MINER};
use analysis::stats::Estimate;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Whether `dir` holds any benchmark's results.
pub fn is_bench_dir(dir: &Path) -> bool {
    [FANOUT_FILE, POOL_FILE, TEMPLATE_FILE]
        .iter()
        .any(|f| dir.join(f).is_file())
}

fn load<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Result<Option<T>> {
    let path = dir.join(file);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).map(Some).with_context(|| {
        format!(
            "{} is not a benchmark result this tool reads",
            path.display()
        )
    })
}

/// The report of the benchmark results in `dir`.
pub fn document(dir: &Path) -> Result<Document> {
    let mut sections = Vec::new();
    if let Some(results) = load::<Vec<FanoutResult>>(dir, FANOUT_FILE)? {
        sections.extend(fanout_sections(&results));
    }
    if let Some(report) = load::<PoolBenchReport>(dir, POOL_FILE)? {
        sections.extend(pool_sections(&report));
    }
    if let Some(report) = load::<TemplateBenchReport>(dir, TEMPLATE_FILE)? {
        sections.extend(template_sections(&report));
    }
    anyhow::ensure!(
        !sections.is_empty(),
        "{} holds no benchmark results ({FANOUT_FILE}, {POOL_FILE} or {TEMPLATE_FILE})",
        dir.display()
    );
    Ok(Document {
        title: "stratum-bench benchmarks".into(),
        subtitle: format!("Results in {}", dir.display()),
        sections,
    })
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn seed_table(figures: &[SeedFigure]) -> Block {
    Block::Table {
        head: ["published figure", "value", "measured on"]
            .map(String::from)
            .to_vec(),
        rows: figures
            .iter()
            .map(|f| {
                vec![
                    f.what.to_string(),
                    format!("{} {}", number(f.value), f.unit),
                    f.source.to_string(),
                ]
            })
            .collect(),
    }
}

/// Where the roles under test and the load ran: apart (`--isolate`), or on every CPU.
fn cpus_note(cpus: Option<&CpuSplit>) -> String {
    let list = |cpus: &[usize]| {
        cpus.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match cpus {
        Some(split) => format!(
            "Isolated: the roles under test ran on CPU(s) {} and the miner fleets loading them on CPU(s) {}.",
            list(&split.under_test),
            list(&split.load)
        ),
        None => "Not isolated: the roles under test and the miner fleets loading them shared every CPU (--isolate keeps them apart).".into(),
    }
}

/// What each floor writes a connection, and when the floor whose readers wait was timed,
/// as the results recorded them.
fn floor_write_note(results: &[FanoutResult]) -> String {
    let mut sizes: Vec<u32> = results.iter().filter_map(|r| r.floor_write_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let size = match sizes.as_slice() {
        [] => "The floors' write size was not recorded with these results.".into(),
        [bytes] => format!("Each floor writes {bytes} bytes a connection, about a clean mining.notify; the sender writes its own jobs' messages, which SV2's are smaller than (with grouped channels, one NewExtendedMiningJob and one SetNewPrevHash a connection)."),
        many => format!("The floors wrote {} bytes a connection in these results.", many.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
    };
    let between = results.iter().filter(|r| r.floor_between_rounds).count();
    let when = match between {
        0 => "The floor whose readers wait ran once the sender and its miners had stopped (results from before it was timed between rounds).",
        b if b == results.len() => "The floor whose readers wait was timed after each of the sender's rounds, its miners still connected and the machine as the sender had it; its figure is the median loop.",
        _ => "The floor whose readers wait was timed after each of the sender's rounds in some of these results, and once the sender had stopped in the others.",
    };
    format!("{size} {when}")
}

/// The sender over the floor, each round against the floor loop after it: the geometric
/// mean with its interval, or why there is none.
fn by_round(r: &FanoutResult) -> String {
    let Some(Estimate {
        point: Some(point),
        ci,
        units,
    }) = r.sender_over_floor_by_round()
    else {
        return "-".into();
    };
    match ci {
        Some((lo, hi)) => format!("{point:.2}x ({lo:.2} to {hi:.2}; {units} rounds)"),
        None => format!("{point:.2}x (too few rounds for an interval: {units})"),
    }
}

fn fanout_sections(results: &[FanoutResult]) -> Vec<Section> {
    let rows = results
        .iter()
        .map(|r| {
            vec![
                match &r.pool_build {
                    Some(build) => format!("{}: {build}", r.via.name()),
                    None => r.via.name(),
                },
                r.mode.name().into(),
                format!("{} ({})", r.miners, r.fleets),
                r.rounds.to_string(),
                ms(r.first_miner_ms.p50),
                ms(r.last_miner_ms.p50),
                r.us_per_miner.map_or("-".into(), |v| format!("{v:.2}")),
                r.floor()
                    .map_or("-".into(), |v| format!("{v:.2} ({})", r.floor_miners)),
                format!("{:.2}", r.bare_floor()),
                r.times_floor().map_or("-".into(), |x| format!("{x:.1}")),
                match (r.sender_us_per_miner, r.sender_times_floor()) {
                    (Some(v), Some(x)) => format!("{v:.2} ({x:.2}x)"),
                    _ => "-".into(),
                },
                by_round(r),
                ms(r.delivery_ms.p50),
                ms(r.delivery_ms.p99),
                r.missing.to_string(),
                match (r.via, r.sender_cpu_ms_per_round) {
                    (_, Some(v)) => format!("{v:.1}"),
                    // Not a process of ours: its CPU is out of sight.
                    (FanoutVia::Sv1At(_), None) => "-".into(),
                    (_, None) => "below one 10 ms tick".into(),
                },
            ]
        })
        .collect();
    let cpus = results.iter().find_map(|r| r.cpus.as_ref());
    // One line per sender and mode, over the miner counts.
    let mut lines: BTreeMap<String, Vec<&FanoutResult>> = BTreeMap::new();
    for r in results {
        lines
            .entry(format!("{} {}", r.via.name(), r.mode.name()))
            .or_default()
            .push(r);
    }
    let series = |value: &dyn Fn(&FanoutResult) -> Option<f64>| -> Vec<Series> {
        lines
            .iter()
            .map(|(name, rs)| Series {
                name: name.clone(),
                points: rs
                    .iter()
                    .filter_map(|r| value(r).map(|v| (f64::from(r.miners), v)))
                    .collect(),
            })
            .collect()
    };
    let mut per_miner = series(&|r| r.us_per_miner);
    let mut floor: Vec<(f64, f64)> = results
        .iter()
        .filter_map(|r| Some((f64::from(r.floor_miners), r.floor()?)))
        .collect();
    floor.sort_by(|a, b| a.0.total_cmp(&b.0));
    floor.dedup_by(|a, b| a.0 == b.0);
    per_miner.push(Series {
        name: "write floor (here)".into(),
        points: floor,
    });
    per_miner.push(Series {
        name: "FastProxy TCP (i7)".into(),
        points: vec![(225.0, FASTPROXY_TCP_US_PER_MINER)],
    });
    let mut last = series(&|r| r.last_miner_ms.p50);
    last.push(Series {
        name: "FastProxy TCP (i7)".into(),
        points: vec![(225.0, 6.030)],
    });
    last.push(Series {
        name: "FastProxy L2 (i7)".into(),
        points: vec![(225.0, FASTPROXY_BROADCAST_US / 1e3)],
    });
    vec![
        Section {
            title: "Job fan-out".into(),
            blocks: vec![
                Block::Para(cpus_note(cpus)),
                Block::Para(floor_write_note(results)),
                Block::Para("A new block makes the sender send a clean job to every connected miner; each miner records when it arrived. Times run from the moment the sender had the new block's work (the SV1 pool's job event; the tap in front of the translator passing it the SetNewPrevHash; for the SRI pool, whose own moment cannot be seen, the node's new tip, so the node-to-pool hop is in every time; for a pool given by address, the bench asking that pool's node for the block, so the node's notice and the pool's reaction to it are in every time: see the first miner) to each miner's receipt of work on that block, so the receiving fleets' scheduling on this machine is included; the floor is the least a sender can do: one write per already-connected loopback socket in a bare loop, each socket's reader waiting in epoll in another process (on the fleets' CPUs under --isolate), as every miner waits, so each write wakes a reader as the sender's do. Beside it, the same loop to sockets nobody waits on: the kernel's write alone, which no fan-out to waiting miners reaches. Our SV1 pool also records when its last write of a job returned: that fan-out, from its job event to the last write, is the sender's own time, the one comparable with the floor. Round by round, each of its fan-outs is set against the floor loop timed right after it, and the ratios' geometric mean is given with its 95% interval (each round a unit, no interval below five): what moved the machine between rounds cancels within a pair, where the ratio of the two medians keeps it.".into()),
                Block::Table {
                    head: [
                        "sender", "mode", "miners (fleets)", "rounds", "first miner ms (p50)", "last miner ms (p50)", "us per miner",
                        "floor us per miner (sockets)", "floor, nobody waiting, us per miner", "x floor", "sender's writes us per miner (x floor)", "sender's writes over the floor after each round: geometric mean (95%)", "delivery p50 ms", "delivery p99 ms",
                        "missing", "sender CPU ms per fan-out",
                    ]
                    .map(String::from)
                    .to_vec(),
                    rows,
                },
                Block::Chart {
                    title: "Microseconds per miner".into(),
                    svg: line_chart("Time to the last miner, per miner", "miners", "us per miner", &per_miner, false),
                },
                Block::Chart {
                    title: "Time to the last miner".into(),
                    svg: line_chart("Time until the last miner has the job (p50)", "miners", "ms", &last, false),
                },
            ],
        },
        Section {
            title: "Job fan-out: published figures".into(),
            blocks: vec![
                seed_table(published::FANOUT),
                Block::Note("FastProxy's miners sat on other machines behind a switch; here every miner is a socket on this host, so the kernel's receive work (per TCP segment, or per datagram copy in udp-broadcast mode) runs on the same cores as the sender.".into()),
            ],
        },
    ]
}

fn pool_sections(r: &PoolBenchReport) -> Vec<Section> {
    let rows = r
        .steps
        .iter()
        .map(|s| {
            vec![
                format!("{:.0}", s.offered_per_s),
                format!("{:.0}", s.accepted_per_s),
                s.submitted.to_string(),
                s.errors.to_string(),
                ms(s.latency_ms.p50),
                ms(s.p95_ms),
                ms(s.latency_ms.p99),
                s.pool_cpu_pct.map_or("-".into(), |c| format!("{c:.1}")),
                s.pool_cpu_us_per_share
                    .map_or("-".into(), |c| format!("{c:.1}")),
                match &s.verdict {
                    Verdict::Sustained => "sustained".to_string(),
                    Verdict::Stop(why) => format!("stop: {why}"),
                },
            ]
        })
        .collect();
    let points = |f: &dyn Fn(&analysis::bench::StepResult) -> Option<f64>| -> Vec<(f64, f64)> {
        r.steps
            .iter()
            .filter_map(|s| f(s).map(|v| (s.offered_per_s, v)))
            .collect()
    };
    let latency = [
        Series {
            name: "p50".into(),
            points: points(&|s| s.latency_ms.p50),
        },
        Series {
            name: "p95".into(),
            points: points(&|s| s.p95_ms),
        },
        Series {
            name: "p99".into(),
            points: points(&|s| s.latency_ms.p99),
        },
    ];
    let throughput = [
        Series {
            name: "accepted".into(),
            points: points(&|s| Some(s.accepted_per_s)),
        },
        Series {
            name: "offered".into(),
            points: points(&|s| Some(s.offered_per_s)),
        },
    ];
    let per_core = r.shares_per_cpu_second();
    vec![
        Section {
            title: format!("Pool capacity: {} with {} miners", r.target, r.miners),
            blocks: vec![
                Block::Para(format!(
                    "Share load from a fleet in another process, ramped step by step until the share response p99 passed the bound, errors appeared or the pool stopped keeping up. Max sustained: {} shares/s. Pool memory per connected miner: {}. Validated shares per pool CPU-second at the busiest sustained step: {}. {}",
                    r.max_sustained_shares_per_s.map_or("none".into(), |v| format!("{v:.0}")),
                    r.pool_rss_per_miner_bytes.map_or("-".into(), |b| format!("{:.1} KiB", b / 1024.0)),
                    per_core.map_or("-".into(), |v| format!("{v:.0}")),
                    cpus_note(r.cpus.as_ref()),
                )),
                Block::Table {
                    head: [
                        "offered/s", "accepted/s", "submitted", "errors", "p50 ms", "p95 ms", "p99 ms",
                        "pool CPU %", "CPU us/share", "verdict",
                    ]
                    .map(String::from)
                    .to_vec(),
                    rows,
                },
                Block::Chart {
                    title: "Share response latency".into(),
                    svg: line_chart("Share response latency by load", "shares/s offered", "ms", &latency, false),
                },
                Block::Chart {
                    title: "Shares answered".into(),
                    svg: line_chart("Shares accepted against offered", "shares/s offered", "shares/s", &throughput, false),
                },
            ],
        },
        Section {
            title: "Pool capacity: published figures".into(),
            blocks: vec![
                seed_table(published::POOL),
                Block::Note("goPool's figure is a CPU micro-benchmark of parsing and validation without sockets; ours is end to end (each share read from a connection, validated, answered, recorded), so the two differ in what they include, not only in hardware.".into()),
            ],
        },
    ]
}

fn template_sections(r: &TemplateBenchReport) -> Vec<Section> {
    let mut sections: Vec<Section> = r
        .mempools
        .iter()
        .map(|m| template_mempool_section(&r.node, m))
        .collect();
    if r.mempools.len() > 1 {
        sections.push(template_growth_section(r));
    }
    sections.push(Section {
        title: "Template latency: published figures".into(),
        blocks: vec![seed_table(published::TEMPLATE)],
    });
    sections
}

/// Every case on one mempool: a table and the latency distributions.
fn template_mempool_section(node: &str, m: &TemplateMempool) -> Section {
    let seed = |name: &str| published::TEMPLATE.iter().find(|f| f.what == name);
    let rows = m
        .cases
        .iter()
        .map(|c| {
            let d = &c.latency_ms;
            vec![
                c.name.clone(),
                c.reply_bytes
                    .map_or("-".into(), |b| format!("{}B", number(b as f64))),
                d.count.to_string(),
                ms(d.mean),
                ms(d.p50),
                ms(d.p99),
                ms(d.max),
                seed(&c.name).map_or("-".into(), |f| format!("{}", f.value)),
            ]
        })
        .collect();
    let series: Vec<Series> = m
        .cases
        .iter()
        .map(|c| Series {
            name: legend(&c.name),
            points: cdf(&c.samples_ms),
        })
        .collect();
    let size = m
        .mempool_txs
        .map_or(String::new(), |n| format!(", {n}-transaction mempool"));
    Section {
        title: format!("Template latency: {node}{size}"),
        blocks: vec![
            Block::Para(format!(
                "Each call timed to the last byte of the reply.{}{}",
                m.mempool_txs
                    .map_or(String::new(), |n| format!(" Mempool: {n} transactions.")),
                m.template_txs.map_or(String::new(), |n| format!(
                    " First template: {n} transactions."
                ))
            )),
            Block::Table {
                head: [
                    "case",
                    "reply",
                    "calls",
                    "mean ms",
                    "p50 ms",
                    "p99 ms",
                    "max ms",
                    "seed 003 mean ms",
                ]
                .map(String::from)
                .to_vec(),
                rows,
            },
            Block::Chart {
                title: format!("Template latency distributions{size}"),
                svg: line_chart(
                    "Template call latency (CDF)",
                    "ms",
                    "share of calls",
                    &series,
                    true,
                ),
            },
        ],
    }
}

/// How each case's median grows with the mempool.
fn template_growth_section(r: &TemplateBenchReport) -> Section {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in &r.mempools {
        for c in &m.cases {
            if let (Some(size), Some(p50)) = (m.mempool_txs, c.latency_ms.p50) {
                lines
                    .entry(legend(&c.name))
                    .or_default()
                    .push((size as f64, p50));
            }
        }
    }
    let series: Vec<Series> = lines
        .into_iter()
        .map(|(name, points)| Series { name, points })
        .collect();
    Section {
        title: "Template latency against mempool size".into(),
        blocks: vec![Block::Chart {
            title: "Median latency of each case by mempool size".into(),
            svg: line_chart(
                "Template call latency (p50) by mempool size",
                "transactions in the mempool",
                "ms",
                &series,
                false,
            ),
        }],
    }
}

/// A case's name short enough for a chart legend.
fn legend(case: &str) -> String {
    let short = case
        .split(" (")
        .next()
        .unwrap_or(case)
        .replace("getblocktemplatelight", "light")
        .replace("getblocktemplate", "gbt")
        .replace("NewTemplate + SetNewPrevHash", "TDP");
    short.chars().take(22).collect()
}
