//! What a run's report says, section by section, as a [`Document`].

use crate::document::{Block, Document, Section};
use crate::forest::{interval_chart, IntervalRow, Mark};
use crate::readings;
use crate::run_data::RunData;
use crate::svg::{cdf, cdf_chart, estimate, grouped, line_chart, number, percent, signed, Series};
use analysis::charts::Charts;
use analysis::headline::Reading;
use analysis::manifest::{Window, HOST_ROLE};
use analysis::metric::{Headline, Measure};
use analysis::resources::RoleResources;
use analysis::worth::{pct_text, sats_interval_text, sats_text};
use probe::Dist;
use std::collections::BTreeMap;

pub fn build(run: &RunData) -> Document {
    let name = run
        .manifest
        .as_ref()
        .map(|m| m.scenario.clone())
        .or_else(|| run.scenario.as_ref().map(|s| s.name.clone()))
        .unwrap_or_else(|| "unnamed run".into());
    let mut sections = Vec::new();
    if !run.problems.is_empty() {
        sections.push(Section {
            title: "Partial run".into(),
            blocks: run
                .problems
                .iter()
                .map(|p| Block::Note(p.clone()))
                .collect(),
        });
    }
    // Before any figure: a pool that stopped serving sets its side's from then on.
    let stopped = run
        .summary
        .as_ref()
        .map(|s| s.pool_warnings())
        .unwrap_or_default();
    if !stopped.is_empty() {
        sections.push(Section {
            title: "A pool stopped serving".into(),
            blocks: (stopped.iter())
                .map(|w| Block::Note(format!("{w}. Its log says why.")))
                .collect(),
        });
    }
    if let Some(summary) = run.summary.as_ref().filter(|s| !s.verdict.is_empty()) {
        sections.push(conclusions_section(summary));
        sections.push(verdict_section(summary));
        sections.push(worth_section(summary));
    }
    let planned = run.manifest.as_ref().and_then(|m| m.attack.as_ref());
    if let Some(summary) = &run.summary {
        sections.extend(crate::security::section(summary, planned));
        sections.extend(crate::outage::section(summary));
    }
    sections.push(context(run));
    match &run.summary {
        Some(summary) => {
            // Without a manifest nothing says where the window was: everything is drawn.
            let window = run.manifest.as_ref().map_or(
                Window {
                    start_ns: 0,
                    end_ns: u64::MAX,
                },
                |m| m.window(),
            );
            sections.push(readings_section(summary));
            sections.push(shares_section(run, summary));
            sections.push(latency_section(summary, &run.charts));
            sections.push(bandwidth_section(summary, &run.charts));
            sections.push(roles_section(run, summary, window));
            if let Some(health) = &summary.host {
                sections.push(host_section(run, health, window, None));
            }
            for (site, health) in &summary.other_hosts {
                sections.push(host_section(run, health, window, Some(site)));
            }
            if run.scenario.as_ref().is_some_and(|s| s.compare_published) {
                sections.push(published_section(summary));
            }
            if let Some(uncertainty) = summary.clock_uncertainty_ms {
                sections.push(clocks_section(run, summary, uncertainty));
            }
            if !summary.unmatched.is_empty() {
                sections.push(Section {
                    title: "Unmatched events".into(),
                    blocks: vec![
                        Block::Para("Events that could not be tied to their counterpart are counted, never dropped:".into()),
                        Block::Table {
                            head: vec!["kind".into(), "count".into()],
                            rows: summary.unmatched.iter().map(|(k, n)| vec![k.clone(), n.to_string()]).collect(),
                        },
                    ],
                });
            }
        }
        None => sections.push(raw_counts(run)),
    }
    Document {
        title: format!("stratum-bench report: {name}"),
        subtitle: format!(
            "Run directory {}{}",
            run.dir.display(),
            if run.problems.is_empty() {
                String::new()
            } else {
                " (partial)".into()
            }
        ),
        sections,
    }
}

/// Roles on other clocks than the harness's: each clock's offset, and the latencies its
/// uncertainty blurs.
fn clocks_section(run: &RunData, summary: &analysis::Summary, uncertainty_ms: f64) -> Section {
    let clocks = run.manifest.iter().flat_map(|m| &m.clocks);
    let mut blocks = vec![
        Block::Para(format!("Roles stamped events on clocks other than the harness's; each stamp was moved by its clock's estimated offset. A latency between two roles may be off by up to {uncertainty_ms:.3} ms through these estimates.")),
        Block::Table {
            head: vec!["clock".into(), "roles".into(), "offset ms".into(), "uncertainty ms".into(), "moved".into(), "probes".into()],
            rows: clocks
                .map(|c| {
                    vec![
                        c.clock.clone(),
                        c.roles.join(", "),
                        format!("{:.3}", c.offset_ns as f64 / 1e6),
                        format!("{:.3}", c.uncertainty_ns as f64 / 1e6),
                        if c.applied { "yes" } else { "no (the harness's clock)" }.into(),
                        c.exchanges.to_string(),
                    ]
                })
                .collect(),
        },
    ];
    for limited in &summary.clock_limited {
        blocks.push(Block::Note(format!(
            "{} {}: median {:.3} ms, but the clocks' uncertainty is {:.3} ms, over 10% of it: read it with care.",
            limited.side, limited.metric, limited.p50_ms, limited.uncertainty_ms
        )));
    }
    Section {
        title: "Clocks across hosts".into(),
        blocks,
    }
}

fn row(k: &str, v: impl Into<String>) -> Vec<String> {
    vec![k.to_string(), v.into()]
}

/// The scenario's settings as the run had them, or nothing when its record is missing
/// (the report's problems say why).
fn settings_rows(s: &model::Scenario) -> Vec<Vec<String>> {
    let d = |d| model::duration::format(d);
    vec![
        row("scenario", s.name.clone()),
        row(
            "measured / warm-up",
            format!("{} / {}", d(s.duration), d(s.warmup)),
        ),
        row("sides", s.side_names().join(", ")),
        row("miners per side", s.miners.count.to_string()),
        row(
            "shares per minute per miner",
            s.miners.shares_per_min.to_string(),
        ),
        row(
            "hashes per share (sets each miner's hashrate)",
            s.miners.hashes_per_share.to_string(),
        ),
        row(
            "miners' hashrates around it / farm-LAN delay",
            format!("{} / {}", s.miners.hashrate, s.miners.lan_delay_ms),
        ),
        row(
            "network block interval / our hashrate share",
            format!(
                "{} / {}",
                d(s.network.block_interval),
                s.network.hashrate_share
            ),
        ),
        row(
            "mempool / template refresh",
            format!("{} / {}", s.network.mempool, d(s.network.template_refresh)),
        ),
        row(
            "link RTT / jitter (ms)",
            format!("{} / {}", s.link.rtt_ms, s.link.jitter_ms),
        ),
        row("SV1 pool job refresh", d(s.pool.job_refresh)),
    ]
}

fn context(run: &RunData) -> Section {
    let mut rows = run.scenario.as_ref().map(settings_rows).unwrap_or_default();
    let tool = (run.host.as_ref())
        .map(|h| format!("{} ({})", h.tool_version, h.git_commit))
        .unwrap_or_else(|| "-".into());
    let reached = run.scenario.as_ref().and_then(|s| match &s.node {
        Some(model::scenario::RealNode::Reached(node)) => Some(node),
        _ => None,
    });
    let node = match reached {
        Some(node) => {
            rows.push(row(
                "node",
                format!(
                    "a real node at {} (chain {}): templates as the pools got them through the RPC tap (node-tap), tips from its ZMQ hashblock as received: later than the node's own tip change by the notice's delivery (0.2 to 0.3 ms on an idle host, up to 5.7 ms with a CPU hog beside it, measured with stratum-bench node as the real node), so every latency from a tip reads short by that much",
                    node.url,
                    node.chain.as_deref().unwrap_or("-")
                ),
            ));
            "RPC tap"
        }
        None => "node",
    };
    rows.push(row(
        "roles",
        format!(
            "{node}, SV1 pool, link relay, tap and miner fleets: stratum-bench {tool}, built in"
        ),
    ));
    // Each SV1 side's pool, by name and version, and how it learns of blocks.
    for (side, roles) in run.manifest.iter().flat_map(|m| m.sides.iter()) {
        if let Some(pool) = &roles.pool_software {
            let policy = roles.pool_policy.as_deref().unwrap_or("policy not given");
            rows.push(row(&format!("{side}'s pool"), format!("{pool}: {policy}")));
        }
    }
    rows.extend(sri_row(run));
    let builds =
        (run.summary.as_ref()).and_then(|s| readings::template_builds(&s.network.template_builds));
    rows.extend(builds.map(|b| row("template builds", b)));
    rows.extend(run.host.as_ref().map(machine_rows).into_iter().flatten());
    Section {
        title: "Context".into(),
        blocks: vec![Block::Table {
            head: vec!["".into(), "this run".into()],
            rows,
        }],
    }
}

/// The build each SRI role ran (the release linked in, or a binary of the user's), when
/// a side runs SV2.
fn sri_row(run: &RunData) -> Option<Vec<String>> {
    let scenario = run.scenario.as_ref()?;
    if scenario
        .sides
        .iter()
        .all(|s| s.config == model::scenario::Config::Sv1)
    {
        return None;
    }
    if let Some(h) = run.host.as_ref().filter(|h| !h.sri_roles.is_empty()) {
        return Some(row("SRI roles under test", h.sri_roles.join("; ")));
    }
    // A run from before each role's build was recorded.
    let linked = (run.host.as_ref())
        .map(|h| h.sri_releases.join(", "))
        .unwrap_or_else(|| "-".into());
    let mut sri = format!("{linked} (crates.io, linked in)");
    let roles = &scenario.roles;
    for (role, given) in [("pool", &roles.pool), ("translator", &roles.translator)] {
        if let Some(given) = given {
            sri.push_str(&format!("; {role} replaced by `{}`", given.command));
        }
    }
    Some(row("SRI roles under test", sri))
}

/// The machine the run had: its CPU, cores, memory and OS (`host.json`).
fn machine_rows(h: &model::host::Host) -> Vec<Vec<String>> {
    vec![
        row(
            "machine",
            format!(
                "{}, {} cores, {:.1} GiB",
                h.cpu_model,
                h.cores,
                h.memory_bytes as f64 / 1073741824.0
            ),
        ),
        row("OS / kernel", format!("{} / {}", h.os, h.kernel)),
    ]
}

/// A row of a [`dist_head`] table: `name`, `d`'s cells and its mean's interval.
pub(crate) fn dist_row(name: String, d: &Dist) -> Vec<String> {
    let mut row = vec![name];
    row.extend(dist_cells(d));
    row.push(mean_ci(d));
    row
}

/// The head of a table of [`dist_row`]s, each named in `first`.
pub(crate) fn dist_head(first: &str) -> Vec<String> {
    [
        first,
        "count",
        "mean",
        "p50",
        "p90",
        "p99",
        "max",
        "mean, 95% CI",
    ]
    .map(String::from)
    .to_vec()
}

fn dist_cells(d: &Dist) -> Vec<String> {
    let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
    vec![
        d.count.to_string(),
        f(d.mean),
        f(d.p50),
        f(d.p90),
        f(d.p99),
        f(d.max),
    ]
}

/// The bottom line, first: one line per side, as the analysis words it.
fn conclusions_section(summary: &analysis::Summary) -> Section {
    let mut blocks = vec![Block::Figures(first_screen(summary))];
    blocks.push(Block::Note("Filled: significant; hollow: no difference shown. `*`: set by a scenario parameter or a model (the farm node's mempool, its modelled relay), in no total; `+`: set by the farm node's lag, an assumption (see the verdict's notes).".into()));
    blocks.extend(summary.conclusions.iter().map(|(side, c)| {
        // A summary from before the sentences were kept: its line, whole.
        let mut items = if c.sentences.is_empty() {
            vec![c.text.clone()]
        } else {
            c.sentences.clone()
        };
        items.extend((c.pool.iter()).map(|pool| analysis::conclusion::sentence(pool)));
        Block::Points {
            lead: side.clone(),
            items,
        }
    }));
    blocks.push(Block::Note(format!(
        "Against {}, over {:.0} s. The worth prices the measured delays at the real network's {:.0} s blocks, for the farm below; only what the protocol sets is summed (rows a scenario parameter or a model sets are marked and left out). The sum's 95% interval draws the tips its rows share once for all of them, so rows that move together, or against each other, count as they do.",
        summary.baseline, summary.duration_s, summary.worth_assumptions.block_interval_s
    )));
    blocks.extend(crate::readings::caveats(summary).map(Block::Note));
    Section {
        title: "Conclusions".into(),
        blocks,
    }
}

/// The first screen: per measure, every side's difference against the baseline on each
/// headline metric with its 95% interval (a forest plot); then each side's worth as a bar.
fn first_screen(summary: &analysis::Summary) -> Vec<(String, String)> {
    let colour = |side: &str| summary.sides.keys().position(|s| s == side).unwrap_or(0);
    let mut measures: Vec<Measure> = Headline::ALL.iter().map(|h| h.measure()).collect();
    measures.sort();
    measures.dedup();
    let mut figures = Vec::new();
    for measure in measures {
        let mut rows = Vec::new();
        for metric in Headline::ALL.into_iter().filter(|h| h.measure() == measure) {
            for (side, verdict) in &summary.verdict {
                let Some(r) = verdict.iter().find(|r| r.metric == metric) else {
                    continue;
                };
                let places = metric.decimals();
                let text = match (r.delta, r.ci) {
                    (Some(d), Some((lo, hi))) => format!(
                        "{} [{}, {}]",
                        signed(d, places),
                        signed(lo, places),
                        signed(hi, places)
                    ),
                    (Some(d), None) => signed(d, places),
                    _ => String::new(),
                };
                let mark = match (&r.modelled, &r.assumed) {
                    (Some(_), _) => " *",
                    (None, Some(_)) => " +",
                    (None, None) => "",
                };
                // A hollow point says "no difference shown" itself.
                let reading = match r.reading() {
                    Reading::Better | Reading::Worse => format!(" {}", r.reading().label()),
                    Reading::NoDifferenceShown => String::new(),
                    Reading::NoInterval => {
                        let why = r.no_interval.as_deref().unwrap_or("no interval");
                        format!(" {}", why.split(" (").next().unwrap_or(why))
                    }
                };
                // The axis gives the unit: "new job after a block", not "..., mean ms".
                let label = metric.label();
                rows.push(IntervalRow {
                    group: label.split(", mean").next().unwrap_or(label).to_string(),
                    side: side.clone(),
                    colour: colour(side),
                    point: r.delta,
                    ci: r.ci,
                    significant: r.significant,
                    text: vec![format!("{text}{reading}{mark}").trim().to_string()],
                });
            }
        }
        if rows.is_empty() {
            continue;
        }
        let title = format!(
            "{} against {} (95% intervals)",
            match measure {
                Measure::Ms => "Times",
                Measure::Percent => "Shares",
                Measure::Sats => "Template value",
                Measure::BytesPerS => "Farm bandwidth",
            },
            summary.baseline
        );
        let svg = interval_chart(&title, measure.axis(), &rows, Mark::Point);
        figures.push((title, svg));
    }
    let a = &summary.worth_assumptions;
    let worth: Vec<IntervalRow> = (summary.conclusions.iter())
        .map(|(side, c)| IntervalRow {
            group: String::new(),
            side: side.clone(),
            colour: colour(side),
            point: c.worth_sats_per_day,
            ci: c.worth_sats_per_day_ci,
            significant: c
                .worth_sats_per_day_ci
                .is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0),
            text: match c.worth_sats_per_day {
                Some(w) => vec![
                    format!(
                        "{}{}",
                        sats_text(w),
                        sats_interval_text(c.worth_sats_per_day_ci, 1.0)
                    ),
                    (c.worth_pct_of_revenue)
                        .map_or(String::new(), |p| pct_text(p, c.worth_pct_of_revenue_ci)),
                ],
                None => vec!["not priced".into()],
            }
            .into_iter()
            .filter(|line| !line.is_empty())
            .collect(),
        })
        .collect();
    if !worth.is_empty() {
        let title = format!(
            "Worth to a {} farm: sats a day, and % of its revenue (95% intervals)",
            analysis::worth::hashrate_label(a.farm_hashrate)
        );
        let axis = "sats a day";
        // The bottom line first.
        let bars = interval_chart(&title, axis, &worth, Mark::Bar);
        figures.insert(0, (title, bars));
    }
    figures
}

/// Each side against the baseline on the headline metrics: the numbers behind the
/// conclusions.
fn verdict_section(summary: &analysis::Summary) -> Section {
    let host_saturated = summary.host_warning().is_some();
    // A table a side, as the terminal shows them.
    let mut tables = Vec::new();
    for (side, verdict) in &summary.verdict {
        let mut rows = Vec::new();
        for row in verdict {
            let places = row.metric.decimals();
            let f = |x: Option<f64>| x.map_or("-".into(), |v| grouped(v, places));
            let signed = |v: f64| signed(v, places);
            rows.push(vec![
                row.metric.label().to_string(),
                f(row.sv1),
                f(row.sv2),
                row.delta.map_or("-".into(), |d| match row.pct {
                    Some(p) => format!("{} ({p:+.1}%)", signed(d)),
                    None => signed(d),
                }),
                match (row.ci, &row.no_interval) {
                    (Some((lo, hi)), _) => format!("{} to {}", signed(lo), signed(hi)),
                    (None, Some(why)) => why.clone(),
                    (None, None) => "-".into(),
                },
                row.reading().label().to_string(),
                match (&row.modelled, row.tips_without_work.max(row.baseline_tips_without_work)) {
                    (Some(why), _) => format!("{}; {why}", row.method.label()),
                    (None, _) if row.assumed.is_some() => format!(
                        "{}; {}",
                        row.method.label(),
                        row.assumed.as_deref().unwrap_or_default()
                    ),
                    (None, Some(n)) if n > 0 => {
                        format!(
                            "{}; miner-tips without work: {} on {}, {} on {side}, each counted until this run's next tip (a cap mainnet's blocks would not set: for the side with more, the price is a floor)",
                            row.method.label(),
                            row.baseline_tips_without_work.unwrap_or_default(),
                            summary.baseline,
                            row.tips_without_work.unwrap_or_default(),
                        )
                    }
                    _ => row.method.label().to_string(),
                } + if host_saturated && row.metric.is_latency() {
                    "; host-saturated"
                } else {
                    ""
                },
            ]);
        }
        tables.push(Block::Table {
            head: [
                &format!("{side} against {}", summary.baseline),
                &summary.baseline,
                side,
                "difference",
                "95% interval",
                "reading",
                "how tested",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
    let mut blocks = Vec::new();
    if let Some(warning) = summary.host_warning() {
        blocks.push(Block::Note(format!(
            "Host saturated: {warning}. Rows in ms (marked host-saturated) are read with care."
        )));
    }

    // What a reader must know to read a row, once a metric.
    let noted = (Headline::ALL.into_iter())
        .filter(|h| summary.verdict.values().flatten().any(|r| r.metric == *h));
    for h in noted {
        if let Some(note) = h.def().note {
            blocks.push(Block::Note(format!("{}: {note}.", h.label())));
        }
    }
    // A and B: what the farm node's lag sets, and the lag at which the answer turns.
    for (side, s) in &summary.sides {
        if let Some(lag) = &s.farm_node_lag {
            blocks.push(Block::Note(format!(
                "{side}: {}. Its new-block job, stale work and block propagation are set by this lag (SRI's JDC moves its miners to a new block only when the farm's node hears of it); measure your own node's with `stratum-bench race`.",
                crate::readings::farm_node_lag(lag)
            )));
        }
    }
    Section {
        title: format!("Verdict: each side against {}", summary.baseline),
        blocks: blocks.into_iter().chain(tables).chain([
            Block::Para(format!(
                "Intervals count what is independent: latencies by the tip or template whose broadcast they belong to (one block reaches every miner at once), bandwidth by batches of seconds, stale shares and acceptance by the tip they came under. Where both sides share the unit (the network's tips), they are compared paired: a resample draws the same tips for both. Where a count of shares is small, a sign-flip permutation test over tips decides (a burst of stale shares at one tip is one tip, not many shares). Below {} units on a side there is no interval and nothing is called significant. Significant: the interval excludes zero and the difference survives Benjamini-Hochberg control of the false discovery rate at {:.0}% among every row of the run (all sides together); a significant row reads better or worse for the operator (lower waits, stale shares and bytes are better; higher acceptance and template value), any other \"no difference shown\", which is not \"no difference\": the interval says how large one could be. Stale work after a block: each miner's wait from the tip change at the node to its first job on that tip or a later one (a tip it got no job on counts until the next), averaged over miners and tips; it is what the worth prices.",
                analysis::stats::MIN_UNITS,
                analysis::headline::FDR * 100.0
            )),
        ]).collect(),
    }
}

/// What each side's differences are worth to a farm, with what that assumes.
fn worth_section(summary: &analysis::Summary) -> Section {
    let a = &summary.worth_assumptions;
    let mut rows = Vec::new();
    for (side, worth) in &summary.worth {
        for w in worth {
            rows.push(vec![
                side.clone(),
                w.metric.label().to_string(),
                w.sats_per_day.map_or("too few".into(), sats_text),
                w.ci.map_or("-".into(), |(lo, hi)| {
                    format!("{} to {}", sats_text(lo), sats_text(hi))
                }),
                w.pct_of_revenue
                    .map_or("-".into(), |p| pct_text(p, w.pct_of_revenue_ci)),
                w.per_ms.map_or("-".into(), |x| format!("{x:.4}")),
                match (&w.modelled, &w.assumed) {
                    (Some(why), _) => format!("{} ({why}; in no total)", w.how),
                    (None, Some(why)) => format!("{} ({why}; at the assumed lag)", w.how),
                    (None, None) => w.how.clone(),
                },
            ]);
        }
    }
    let mut blocks = vec![
        Block::Para(format!(
            "For {} ({:.6} blocks a day for the farm): what each difference against {} earns or costs it a day. Positive: the side earns more. Intervals carry over from the verdict; a difference the verdict does not call significant may be worth nothing. Set the farm with `run --hashrate 100PH/s` (and `--network-hashrate`, `--block-value-sats`).",
            crate::readings::the_farm(a),
            a.farm_blocks_per_day(),
            summary.baseline,
        )),
        Block::Para("Stale work and block propagation price the same thing per ms: a delay of t ms costs t / (block interval) of a farm's revenue, after every block for stale work, on the farm's own blocks for propagation (1 - exp(-t / interval), the same for t far below it). The column \"a ms\" shows it; the two rows differ because the two delays differ.".into()),
        Block::Table {
            head: ["side", "from", "sats a day", "95% interval", "of the farm's revenue (95%)", "a ms", "how"].map(String::from).to_vec(),
            rows,
        },
    ];
    let minutes = |m: Option<f64>| m.map_or("-".into(), |m| grouped(m, 1));
    let seed: Vec<String> = (summary.seed_reading.iter())
        .map(|(side, r)| {
            format!(
                "{side}: {} minutes a year as the published tool computed them (new-job difference x template refreshes every {:.0} s), {} from new-block work x the blocks of a year",
                minutes(r.new_job_minutes),
                analysis::worth::SEED_REFRESH_S,
                minutes(r.new_block_job_minutes)
            )
        })
        .collect();
    if !seed.is_empty() {
        blocks.push(Block::Note(format!(
            "The published tool read differences as time saved ({}; it printed 682 minutes for its configuration C). A minute saved has no price and weighs a rare event like a frequent one; sats a day price the stale work and fees that time stands for.",
            seed.join("; ")
        )));
    }
    Section {
        title: "What it is worth".into(),
        blocks,
    }
}

/// The 95% interval of a distribution's mean (from the analysis), or why there is none.
fn mean_ci(d: &Dist) -> String {
    match (d.mean_ci, d.units) {
        (Some((lo, hi)), _) => format!("{lo:.1} to {hi:.1}"),
        (None, Some(n)) if d.count > 0 => format!("too few (n = {n})"),
        _ => "-".into(),
    }
}

/// A title as a heading starts: "new job" -> "New job".
fn capitalised(title: &str) -> String {
    let mut chars = title.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

fn readings_section(summary: &analysis::Summary) -> Section {
    let mut blocks = Vec::new();
    let idle = summary.host.as_ref().and_then(|h| h.idle_touch.as_ref());
    if let Some(idle) = idle.filter(|i| i.note.is_some()) {
        blocks.push(Block::Note(format!(
            "Part of what the roles added below is this host's: memory left idle {:.0} s took {:.1} ms per MiB to touch again at the median, against {:.2} ms touched again at once (section Host).",
            idle.rest_s, idle.idle_ms_per_mib_p50, idle.hot_ms_per_mib_p50
        )));
    }
    for (name, side) in &summary.sides {
        let r = &side.readings;
        for (_, latency) in Headline::distributions() {
            let Some(path) = latency.path else { continue };
            let (what, path) = (latency.what, path(r));
            match (latency.dist)(side).p50 {
                Some(p50) => blocks.push(Block::Para(readings::over_path(name, what, p50, path))),
                None => blocks.push(Block::Note(format!("{name}: no samples for \"{what}\" in this run (for blocks: none was found by our miners)."))),
            }
        }
    }
    let baseline = summary.baseline.as_str();
    if summary.sides.contains_key(baseline) {
        for (name, rows) in &summary.verdict {
            for (headline, latency) in Headline::distributions() {
                let Some(row) = rows.iter().find(|r| r.metric == headline) else {
                    continue;
                };
                let what = latency.what.replace("miners got", "delivers");
                blocks.push(Block::Para(readings::latency_delta(
                    name, baseline, &what, row,
                )));
            }
        }
        if summary.sides.len() == 1 {
            blocks.push(Block::Note(format!(
                "Only the {baseline} side ran: every other side appears here against {baseline}, with deltas and 95% intervals, when a scenario runs one."
            )));
        }
    }
    Section {
        title: "Readings".into(),
        blocks,
    }
}

fn shares_section(run: &RunData, summary: &analysis::Summary) -> Section {
    let mut rows = Vec::new();
    for (name, s) in &summary.sides {
        let c = &s.shares;
        let value = s.template_value_sats.mean;
        rows.push(vec![
            name.clone(),
            c.submitted.to_string(),
            c.per_miner_min.map_or("-".into(), |r| format!("{r:.1}")),
            c.accepted.to_string(),
            format!("{}: {}", c.stale, percent(c.stale_pct, c.stale_pct_ci, 3)),
            format!(
                "{}: {}",
                c.pool_stale,
                percent(c.pool_stale_pct, c.pool_stale_pct_ci, 3)
            ),
            c.rejected.to_string(),
            c.acceptance_pct.map_or("-".into(), |p| format!("{p:.2}%")),
            s.pool_work
                .credited_pct
                .map_or("-".into(), |p| format!("{p:.1}%")),
            estimate(&analysis::stats::Estimate::mean_of(&s.stale_wait_ms), 1),
            estimate(&s.stale_work_real_pct, 4),
            estimate(&s.stale_work_pct, 3),
            estimate(&s.pool_stale_work_pct, 3),
            format!("{} / {}", s.blocks.found, s.blocks.accepted),
            value.map_or("-".into(), |v| format!("{v:.0}")),
            s.template_value_vs_network
                .as_ref()
                .map_or("-".into(), |d| {
                    format!("{:+.0} ({:+.4}%)", d.delta, d.pct.unwrap_or(f64::NAN))
                }),
        ]);
    }
    let mut series = vec![Series {
        name: "network best".into(),
        points: run.charts.network_best.clone(),
    }];
    // What each side's miners mined on, as the analysis tied their jobs to templates.
    for (name, side) in &summary.sides {
        series.push(Series {
            name: name.clone(),
            points: side.templates_mined.clone(),
        });
    }
    let tenths: Vec<Vec<String>> = (summary.sides.iter())
        .flat_map(|(name, s)| {
            s.by_hashrate.iter().map(move |g| {
                vec![
                    name.clone(),
                    g.group.to_string(),
                    g.miners.to_string(),
                    g.hashrate_hs.map_or_else(
                        || format!("{:.2}x", g.hashrate_factor),
                        |h| {
                            format!(
                                "{} ({:.2}x)",
                                analysis::worth::hashrate_label(h),
                                g.hashrate_factor
                            )
                        },
                    ),
                    g.shares_submitted.to_string(),
                    g.stale_pct.map_or("-".into(), |p| format!("{p:.2}%")),
                    g.stale_work_pct.map_or("-".into(), |p| format!("{p:.3}%")),
                ]
            })
        })
        .collect();
    // The measured window only: warm-up and drain are not what the table weighs.
    for s in &mut series {
        s.points
            .retain(|(t, _)| (0.0..=summary.duration_s).contains(t));
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut section = Section {
        title: "Shares, blocks and templates".into(),
        blocks: vec![
            Block::by_side(
                ["side", "submitted", "per miner a minute", "accepted", "stale (95% by tip)", "stale at the pool (95% by tip)", "rejected", "acceptance", "work credited", "stale work after a block, mean ms (95% by tip)", "stale work % at the real block interval", "stale work % at this run's pace", "stale work at the pool %, this run's pace", "blocks found / accepted", "template value (sats, time-weighted)", "against the network"]
                    .map(String::from)
                    .to_vec(),
                rows,
            ),
            Block::Para("Accepted counts where the pool decides; stale means the share's job was outdated when the miner submitted it (the pool's own stale verdict, after the link, is shown apart, in percent of its verdicts). Stale work is the miners' time on an outdated job (from each tip change to each miner's first job on that tip or a later one, at most until the next tip, over miners x window): what counted stale shares estimate, resolved in minutes instead of hours. At the pool it also holds the shares in flight: sent fresh, they cross the link one way after the pool, beside the node, has moved on. Every side's miners are set to the same shares a minute (a fixed difficulty where a pool takes one); per miner a minute shows what each side got, so a pool that moves its own difficulty shows here. Work credited is the difficulty of the shares the pool accepted, summed, in percent of the work the side's miners did at their hashrate over the window: what the pool pays for, about 100% when nothing is lost (a few hundred shares put it within about 10%).".into()),
            Block::Chart { title: "Template value over time".into(), svg: line_chart("Template value over time: the network's best, and what each side mined", "seconds into the measured window", "sats", &series, true) },
        ],
    };
    if !tenths.is_empty() {
        section.blocks.push(Block::Table {
            head: [
                "side",
                "hashrate tenth (1: smallest)",
                "miners",
                "mean hashrate",
                "shares submitted",
                "stale",
                "stale work % (time on outdated jobs)",
            ]
            .map(String::from)
            .to_vec(),
            rows: tenths,
        });
        section.blocks.push(Block::Para("The farm's machines differ (the scenario's miners.hashrate): ranked by hashrate and cut into tenths, every side with the same machines. Each tenth's stale shares and its time on outdated work show whether large and small machines lose alike.".into()));
    }
    section
}

fn latency_section(summary: &analysis::Summary, charts: &Charts) -> Section {
    let mut blocks = Vec::new();
    for (headline, latency) in Headline::distributions() {
        let title = capitalised(latency.title);
        let series: Vec<Series> = (charts.sides.iter())
            .map(|(name, s)| Series {
                name: name.clone(),
                points: cdf(&s.latencies.get(&headline).map_or(vec![], |u| u.concat())),
            })
            .collect();
        blocks.push(Block::Chart {
            title: format!("{title}: distribution"),
            svg: cdf_chart(&format!("{title} (CDF)"), "ms", &series),
        });
        let mut rows = Vec::new();
        for (name, s) in &summary.sides {
            rows.push(dist_row(name.clone(), (latency.dist)(s)));
        }
        if summary.sides.values().all(|s| (latency.dist)(s).count == 0) {
            blocks.push(Block::Note(format!(
                "{title}: too few samples in this run to say anything (no events)."
            )));
        }
        blocks.push(Block::Table {
            head: dist_head("side"),
            rows,
        });
    }
    let provided: Vec<_> = (summary.sides.iter())
        .filter_map(|(name, s)| Some((name, s.template_provider.as_ref()?)))
        .collect();
    if !provided.is_empty() {
        blocks.push(Block::Note(
            "A template on each new tip at the pool, from the tip change at the node, through the Template Provider the run started (sv2-tp) to the tap in front of the pool. A tip missed got no template on it before the next tip.".into(),
        ));
        blocks.push(Block::Table {
            head: dist_head("side"),
            rows: (provided.iter())
                .map(|(name, tp)| dist_row(name.to_string(), &tp.new_tip_ms))
                .collect(),
        });
        blocks.push(Block::Table {
            head: vec!["side".into(), "tips missed".into(), "refreshes".into()],
            rows: (provided.iter())
                .map(|(name, tp)| {
                    vec![
                        name.to_string(),
                        tp.tips_missed.to_string(),
                        tp.refreshes.to_string(),
                    ]
                })
                .collect(),
        });
    }
    Section {
        title: "Latency and time (ms)".into(),
        blocks,
    }
}

/// Bytes per second across each side's link, per direction, second by second.
fn bandwidth_section(summary: &analysis::Summary, charts: &Charts) -> Section {
    // Second k of the window is drawn at its end, k + 1 s.
    let per_second = |bytes: &[f64]| -> Points {
        (bytes.iter().enumerate())
            .map(|(k, b)| (k as f64 + 1.0, *b))
            .collect()
    };
    let mut series = Vec::new();
    for (name, side) in &charts.sides {
        series.push(Series {
            name: format!("{name} farm tx"),
            points: per_second(&side.farm_tx_per_s),
        });
        series.push(Series {
            name: format!("{name} farm rx"),
            points: per_second(&side.farm_rx_per_s),
        });
    }
    let rows = summary
        .sides
        .iter()
        .map(|(name, s)| match &s.bandwidth_bytes_per_s {
            Some(b) => vec![
                name.clone(),
                format!("{:.1}", b.farm.tx),
                format!("{:.1}", b.farm.rx),
                format!("{:.1}", b.pool.tx),
                format!("{:.1}", b.pool.rx),
                format!("{:.1}", b.farm_tx_relay_modelled),
                format!(
                    "{:.1} / {:.1}",
                    b.farm_block_relay_modelled.tx, b.farm_block_relay_modelled.rx
                ),
                b.emulation_feed
                    .as_ref()
                    .map_or("-".into(), |f| format!("{:.1} / {:.1}", f.tx, f.rx)),
            ],
            None => [name.as_str(), "not recorded", "-", "-", "-", "-", "-", "-"]
                .map(String::from)
                .to_vec(),
        })
        .collect();
    Section {
        title: "Bandwidth at farm and pool".into(),
        blocks: vec![
            Block::Chart { title: "Bandwidth over time".into(), svg: line_chart("Farm bandwidth over time", "seconds into the measured window", "bytes per second", &series, false) },
            Block::by_side(["side", "farm tx B/s", "farm rx B/s", "pool tx B/s", "pool rx B/s", "of farm rx: tx relay (modelled)", "of farm tx / rx: compact blocks (modelled)", "emulation feed tx / rx (in no total)"].map(String::from).to_vec(), rows),
            Block::Para("Application bytes crossing the emulated WAN link, means over the measured window (the chart draws its seconds; the warm-up's connections and first jobs, a burst, are not drawn). The farm's tx is the pool's rx. A farm with its own node (configurations A, B) also exchanges transactions and blocks with the network, modelled as a real node moves them: transaction relay (inv, getdata, tx) and blocks as BIP152 compact blocks (short ids, the prefilled coinbase, and the transactions its mempool lacked); those are part of the farm's totals. The emulation's own whole-block feed between the nodes is shown apart and counted in no total.".into()),
        ],
    }
}

/// Each role's CPU in cores and memory over the measured window: the charts from the
/// samples in it, the table from the summary.
fn roles_section(run: &RunData, summary: &analysis::Summary, window: Window) -> Section {
    let mut roles: BTreeMap<&str, &RoleResources> = BTreeMap::new();
    for side in summary.sides.values() {
        roles.extend(side.roles.iter().map(|(r, v)| (r.as_str(), v)));
    }
    let node = run.manifest.as_ref().map(|m| m.node_role.as_str());
    if let (Some(node), Some(r)) = (node, &summary.network.node) {
        roles.insert(node, r);
    }
    if let Some(r) = &summary.harness {
        roles.insert(analysis::summary::HARNESS_ROLE, r);
    }
    let origin = window.start_ns;
    let cpu: Vec<Series> = (roles.keys())
        .map(|role| Series {
            name: role.to_string(),
            points: (analysis::resources::cpu_cores(&run.samples, role, window).into_iter())
                .map(|(t, cores)| (secs(t, origin), cores))
                .collect(),
        })
        .collect();
    let rss: Vec<Series> = (roles.keys())
        .map(|role| Series {
            name: role.to_string(),
            points: (run.samples.iter())
                .filter(|s| s.role == *role && window.contains(s.t_ns))
                .map(|s| (secs(s.t_ns, origin), s.rss_bytes as f64 / 1e6))
                .collect(),
        })
        .collect();
    let f = |x: Option<f64>, places: usize| x.map_or("-".into(), |v| format!("{v:.places$}"));
    let rows = (roles.iter())
        .map(|(role, r)| {
            let mb = |x: Option<f64>| f(x.map(|b| b / 1e6), 1);
            vec![
                role.to_string(),
                f(r.cpu_cores.mean, 4),
                f(r.cpu_cores.max, 3),
                mb(r.rss_bytes.p50),
                mb(r.rss_bytes.max),
            ]
        })
        .collect();
    let span = analysis::resources::CPU_SPAN_S;
    Section {
        title: "Roles: CPU and memory".into(),
        blocks: vec![
            Block::Chart {
                title: "CPU over time".into(),
                svg: line_chart(
                    &format!("CPU per role, each point its CPU time over {span:.0} s"),
                    "seconds into the measured window",
                    "cores",
                    &cpu,
                    false,
                ),
            },
            Block::Chart {
                title: "Memory over time".into(),
                svg: line_chart(
                    "Resident memory per role",
                    "seconds into the measured window",
                    "MB",
                    &rss,
                    false,
                ),
            },
            Block::Table {
                head: [
                    "role",
                    "CPU cores, mean",
                    &format!("CPU cores, busiest {span:.0} s"),
                    "RSS MB p50",
                    "RSS MB max",
                ]
                .map(String::from)
                .to_vec(),
                rows,
            },
            Block::by_side(
                ["side", "pool CPU, millicores (95%)", "CPU ms a share", "CPU a miner, millicores", "pool MB, mean", "link B/s a miner"]
                    .map(String::from)
                    .to_vec(),
                (summary.sides.iter())
                    .map(|(name, s)| {
                        let c = &s.pool_costs;
                        vec![
                            name.clone(),
                            estimate(&c.cpu_cores.scaled(1_000.0), 2),
                            estimate(&c.cpu_ms_per_share, 2),
                            estimate(&c.cpu_millicores_per_miner, 2),
                            f(c.rss_bytes.map(|b| b / 1e6), 1),
                            estimate(&c.link_bytes_per_s_per_miner, 0),
                        ]
                    })
                    .collect(),
            ),
            Block::Para("What each side's pool costs its operator: its CPU, in all, per accepted share and per connected miner, its memory, and the bytes a second each miner costs its end of the link (both ways). Behind a farm proxy that aggregates its miners into one channel (A, B's JDC) the pool sees only the shares that meet that channel's target, a few a minute whatever the miners: read its CPU a miner there.".into()),
            Block::Para(format!("The measured window only (the warm-up's connections and first jobs are not drawn). CPU is the process's own CPU time (user and system, in the kernel's 10 ms ticks) over each {span:.0} s, in cores: 0.010 is a hundredth of one core. One second's reading moves in whole hundredths, so a role using a few thousandths would read 0 or 0.01 at random; each {span:.0} s resolves 0.002, and the mean, the window's total over its length, a ten-thousandth in a minute or more.")),
        ],
    }
}

/// (seconds, value) pairs of one time series.
type Points = Vec<(f64, f64)>;

/// The machine under the roles: its CPU per core, memory and load over the window, and
/// whether it was saturated.
/// `site`: a deployment's host of that site, other than the harness's.
fn host_section(
    run: &RunData,
    health: &analysis::host::HostHealth,
    window: Window,
    site: Option<&str>,
) -> Section {
    let role = match site {
        Some(site) => format!("{HOST_ROLE}-{site}"),
        None => HOST_ROLE.to_string(),
    };
    let host: Vec<(f64, &analysis::manifest::HostReading)> = (run.samples.iter())
        .filter(|s| s.role == role && window.contains(s.t_ns))
        .filter_map(|s| Some((secs(s.t_ns, window.start_ns), s.host.as_ref()?)))
        .collect();
    let cores = host
        .iter()
        .map(|(_, r)| r.core_busy_pct.len())
        .max()
        .unwrap_or(0);
    let mut cpu: Vec<Series> = (0..cores)
        .map(|c| Series {
            name: format!("core {c}"),
            points: (host.iter())
                .filter_map(|(t, r)| Some((*t, *r.core_busy_pct.get(c)?)))
                .collect(),
        })
        .collect();
    cpu.push(Series {
        name: "all cores".into(),
        points: host.iter().map(|(t, r)| (*t, r.busy_pct)).collect(),
    });
    let gb = |b: u64| format!("{:.2}", b as f64 / 1e9);
    let mut blocks = vec![match &health.warning {
        Some(w) => Block::Note(format!("Saturated: {w}. The verdict's latencies are marked.")),
        None => Block::Para(format!(
            "The host was not saturated: {} over {:.0}% busy for {} of {} s (the flag is over {:.0}% of the window), {}, memory never under {:.0}% available.",
            match health.run_cpus_busy_mean_pct {
                Some(_) => "the CPUs the run's roles may use were",
                None => "its CPU was",
            },
            analysis::host::SATURATED_BUSY_PCT,
            health.saturated_seconds,
            health.seconds,
            analysis::host::SATURATED_SHARE * 100.0,
            match health.throttled_ms {
                Some(_) => "no CPU quota held the roles back",
                None => "CPU quotas not readable here (no cgroup cpu.stat)",
            },
            analysis::host::LOW_MEMORY_SHARE * 100.0
        )),
    }];
    if let Some(note) = health.idle_touch.as_ref().and_then(|i| i.note.as_ref()) {
        blocks.push(Block::Note(format!("Idle memory: {note}.")));
    }
    blocks.push(Block::Chart {
        title: "Host CPU over time".into(),
        svg: line_chart(
            "Busy share per core",
            "seconds into the measured window",
            "% busy",
            &cpu,
            false,
        ),
    });
    blocks.push(Block::Table {
        head: vec!["reading".into(), "value".into()],
        rows: vec![
            row("cores", health.cores.to_string()),
            row(
                "all cores busy %: mean / p95 / max",
                format!(
                    "{:.1} / {:.1} / {:.1}",
                    health.busy_mean_pct, health.busy_p95_pct, health.busy_max_pct
                ),
            ),
            row(
                "the CPUs the run's roles may use, busy % mean",
                health
                    .run_cpus_busy_mean_pct
                    .map_or("all of the host's".into(), |b| format!("{b:.1}")),
            ),
            row(
                "seconds over 90% busy (of the roles' CPUs)",
                format!(
                    "{} of {} ({:.1}%)",
                    health.saturated_seconds,
                    health.seconds,
                    health.saturated_share * 100.0
                ),
            ),
            row(
                "busiest core, busiest second %",
                format!("{:.1}", health.core_max_pct),
            ),
            row(
                "load average (1 min), most",
                format!("{:.2}", health.load1_max),
            ),
            row(
                "memory available, least / total GB",
                format!(
                    "{} / {}",
                    gb(health.mem_available_min_bytes),
                    gb(health.mem_total_bytes)
                ),
            ),
            row(
                "run directory's filesystem, least free / size GB",
                format!(
                    "{} / {}",
                    gb(health.fs_avail_min_bytes),
                    gb(health.fs_size_bytes)
                ),
            ),
            row(
                "held back by a CPU quota, ms",
                health
                    .throttled_ms
                    .map_or("- (no readable cgroup)".into(), |ms| format!("{ms:.0}")),
            ),
            row(
                "memory left idle, first touch ms per MiB: median / most (again at once)",
                health
                    .idle_touch
                    .as_ref()
                    .map_or("- (not probed)".into(), |i| {
                        format!(
                            "{:.2} / {:.2} ({:.2}), {} probes after {:.0} s idle",
                            i.idle_ms_per_mib_p50,
                            i.idle_ms_per_mib_max,
                            i.hot_ms_per_mib_p50,
                            i.probes,
                            i.rest_s
                        )
                    }),
            ),
        ],
    });
    Section {
        title: match site {
            Some(site) => format!("Host of the {site} site"),
            None => "Host".into(),
        },
        blocks,
    }
}

fn published_section(summary: &analysis::Summary) -> Section {
    let Some(beside) = analysis::published::beside_published(summary) else {
        return Section {
            title: "Published results beside ours".into(),
            blocks: vec![Block::Note("No sv1 side in this run.".into())],
        };
    };
    let f = |x: Option<f64>| x.map_or("-".into(), number);
    let rows = beside
        .iter()
        .map(|row| {
            let p = row.published;
            vec![
                format!("{} ({})", p.label, p.unit),
                f(p.config_a),
                f(p.config_c),
                f(row.ours),
                row.vs_config_a_pct
                    .map_or("-".into(), |d| format!("{d:+.0}%")),
                p.method_note.to_string(),
            ]
        })
        .collect();
    Section {
        title:
            "Published results beside ours (SV1 side, the published SV1/SV2 benchmark on testnet4)"
                .into(),
        blocks: vec![
            Block::Table {
                head: [
                    "metric",
                    "seed, config A (RTT 145 ms)",
                    "seed, config C (RTT 129 ms)",
                    "this run",
                    "this run against A",
                    "method difference",
                ]
                .map(String::from)
                .to_vec(),
                rows,
            },
            Block::Note(analysis::published::TEMPLATE_VALUE_NOTE.into()),
        ],
    }
}

/// Without a manifest: what each role recorded, so a killed run still tells something.
fn raw_counts(run: &RunData) -> Section {
    let counts = run.event_counts.clone();
    Section {
        title: "Recorded events".into(),
        blocks: vec![Block::Table {
            head: vec!["role".into(), "event".into(), "count".into()],
            rows: counts
                .into_iter()
                .map(|((role, kind), n)| vec![role, kind, n.to_string()])
                .collect(),
        }],
    }
}

fn secs(t_ns: u64, origin: u64) -> f64 {
    (t_ns as f64 - origin as f64) / 1e9
}
