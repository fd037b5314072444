//! Reports, comparisons and exports of run directories made with known numbers.

use analysis::manifest::{LinkParams, Manifest, Sample, SideRoles};
use probe::{Event, Record, ShareVerdict, TipCause};
use report::run_data::Source;
use report::svg::signed;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// A finished SV1 run of 300 s: a tip every 10 s reaching 4 miners `one_way_ms` (+0..5 ms)
/// later, one share per miner per tip, link counters and role samples every second.
fn fake_run(name: &str, one_way_ms: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("events")).unwrap();
    let t0 = 1_000 * S;
    let rec = |t: u64, role: &str, event: Event| Record {
        t_ns: t,
        role: role.into(),
        event,
    };
    let (mut node, mut miners, mut pool, mut link) = (vec![], vec![], vec![], vec![]);
    for i in 0..30u64 {
        let t = t0 + i * 10 * S;
        let (hash, marker) = (format!("tip{i}"), format!("mk{i}"));
        node.push(rec(
            t,
            "node",
            Event::TipChanged {
                height: i as u32,
                hash: hash.clone(),
                prev_hash: format!("tip{}", i.saturating_sub(1)),
                cause: TipCause::Network,
                tx_count: 1,
                fees_sats: 0,
            },
        ));
        node.push(rec(
            t + MS,
            "node",
            Event::TemplateBuilt {
                template_id: i,
                prev_hash: hash.clone(),
                height: i as u32 + 1,
                value_sats: 312_500_000 + i * 1000,
                fees_sats: i * 1000,
                tx_count: 2,
                weight: 1000,
                marker_txid: marker.clone(),
                asker: "pool".into(),
                queued_ns: 0,
                build_ns: 200_000,
            },
        ));
        node.push(rec(
            t + 2 * MS,
            "node",
            Event::NetworkTemplateValue {
                value_sats: 312_500_000 + i * 1000,
                fees_sats: i * 1000,
                mempool_txs: 10,
            },
        ));
        pool.push(rec(
            t + 2 * MS,
            "pool-sv1",
            Event::PoolTemplate {
                height: i as u32 + 1,
                prev_hash: hash.clone(),
                value_sats: 312_500_000 + i * 1000,
                marker_txid: Some(marker.clone()),
                reason: "new_tip".into(),
            },
        ));
        for m in 0..4u32 {
            let jitter = (u64::from(m) * 7 + i * 3) % 5;
            miners.push(rec(
                t + (one_way_ms + 1 + jitter) * MS,
                "miners-sv1",
                Event::JobReceived {
                    miner: m,
                    job_id: format!("{i}"),
                    prev_hash: hash.clone(),
                    marker_txid: Some(marker.clone()),
                    clean: true,
                    work_id: None,
                },
            ));
            miners.push(rec(
                t + 5 * S,
                "miners-sv1",
                Event::ShareSubmitted {
                    miner: m,
                    share_id: i,
                    job_id: format!("{i}"),
                    prev_hash: hash.clone(),
                    block_hash: None,
                },
            ));
            pool.push(rec(
                t + 5 * S + one_way_ms * MS,
                "pool-sv1",
                Event::ShareJudged {
                    worker: format!("w{m}"),
                    job_id: format!("{i}"),
                    verdict: ShareVerdict::Accepted,
                    block_hash: None,
                    reason: None,
                    difficulty: Some(1.0),
                },
            ));
        }
    }
    let mut samples = String::new();
    // Ten seconds of warm-up before the window, with memory no second of the window has.
    for sec in 0..10u64 {
        for role in ["node", "pool-sv1", "link-sv1", "miners-sv1"] {
            let s = Sample {
                t_ns: t0 - (10 - sec) * S,
                role: role.into(),
                cpu_pct: 90.0,
                cpu_s: Some(0.9 * sec as f64),
                rss_bytes: WARM_UP_RSS,
                host: None,
            };
            samples.push_str(&(serde_json::to_string(&s).unwrap() + "\n"));
        }
    }
    let mut cpu_s: BTreeMap<&str, f64> = BTreeMap::new();
    for sec in 0..=300u64 {
        let t = t0 + sec * S;
        link.push(rec(
            t,
            "link-sv1",
            Event::LinkBytes {
                up_bytes: sec * 100,
                down_bytes: sec * 250,
            },
        ));
        for (role, cpu) in [
            ("node", 1.0),
            ("pool-sv1", 2.0),
            ("link-sv1", 0.5),
            ("miners-sv1", 3.0),
        ] {
            let pct = cpu + (sec % 3) as f64;
            // The running total the percentages come from.
            let total = cpu_s.entry(role).or_insert(9.0);
            *total += pct / 100.0;
            let s = Sample {
                t_ns: t,
                role: role.into(),
                cpu_pct: pct,
                cpu_s: Some(*total),
                rss_bytes: 30_000_000,
                host: None,
            };
            samples.push_str(&(serde_json::to_string(&s).unwrap() + "\n"));
        }
    }
    for (file, records) in [
        ("node", node),
        ("miners-sv1", miners),
        ("pool-sv1", pool),
        ("link-sv1", link),
    ] {
        let mut f =
            std::fs::File::create(dir.join("events").join(format!("{file}.jsonl"))).unwrap();
        for r in records {
            writeln!(f, "{}", serde_json::to_string(&r).unwrap()).unwrap();
        }
    }
    std::fs::write(dir.join("samples.jsonl"), samples).unwrap();
    let manifest = Manifest {
        scenario: "sv1-baseline".into(),
        window_start_ns: t0,
        window_end_ns: t0 + 300 * S,
        node_role: "node".into(),
        baseline: None,
        start_order: Vec::new(),
        link: LinkParams {
            rtt_ms: 2.0 * one_way_ms as f64,
            jitter_ms: 0.0,
            bandwidth_bps: None,
        },
        // A second SV1 side on the same roles: an A/A verdict, so the report has one.
        sides: ["sv1", "sv1-b"]
            .map(|name| {
                (
                    name.to_string(),
                    SideRoles {
                        config: model::scenario::Config::Sv1,
                        miners: 4,
                        miner_hashrate: Some(4_294_967_296.0 / 10.0),
                        miners_role: "miners-sv1".into(),
                        pool_role: "pool-sv1".into(),
                        backup_pool_role: None,
                        link_role: "link-sv1".into(),
                        link_rtt_ms: None,
                        farm_node_role: None,
                        farm_node_hop_ms: None,
                        farm_node_lag: None,
                        feed_link_role: None,
                        job_declaration_role: None,
                        roles: ["node", "pool-sv1", "link-sv1", "miners-sv1"]
                            .map(String::from)
                            .to_vec(),
                        pool_software: None,
                        pool_policy: None,
                        template_role: None,
                    },
                )
            })
            .into(),
        worth: Default::default(),
        stopped: None,
        clocks: Vec::new(),
        per_miner: Default::default(),
        interim: None,
        attack: None,
        awaiting_start: false,
        network_arrivals: Default::default(),
    };
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    // The scenario's record, as a run writes it: whole.
    let scenario = model::Scenario::parse(
        &format!(
            "name = \"sv1-baseline\"\nduration = \"5m\"\nsides = [\"sv1\"]\n[network]\nblock_interval = \"30s\"\nhashrate_share = 0.5\n[miners]\ncount = 2\nshares_per_min = 10\n[link]\nrtt_ms = {}\n",
            2 * one_way_ms
        ),
        Path::new("scenario.toml"),
        &[],
    )
    .unwrap();
    std::fs::write(
        dir.join("scenario.toml"),
        toml::to_string(&scenario).unwrap(),
    )
    .unwrap();
    let summary = analysis::summarize(&dir).unwrap();
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string(&summary).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join(model::run_dir::CHARTS_FILE),
        serde_json::to_string(&analysis::charts::Charts::of(&summary)).unwrap(),
    )
    .unwrap();
    dir
}

fn chromium(args: &[&str], profile: &Path) -> std::process::Output {
    Command::new("chromium")
        .args(report::chromium_flags(profile))
        .args(["--enable-logging=stderr", "--v=0"])
        .args(args)
        .output()
        .expect("chromium is installed (make test installs the Debian package)")
}

#[test]
fn the_html_report_has_every_section_with_charts_and_renders_cleanly() {
    let dir = fake_run("html", 50);
    report::write_report(&dir, true, Source::Written).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for title in [
        "Conclusions",
        "Verdict: each side against sv1",
        "What it is worth",
        "Context",
        "Readings",
        "Shares, blocks and templates",
        "Latency and time",
        "Bandwidth at farm and pool",
        "Roles: CPU and memory",
    ] {
        assert!(
            html.contains(title) && md.contains(title),
            "the report lacks {title}"
        );
    }
    for section in html.split("<section").skip(1) {
        let has_chart = section.contains("<svg");
        let charted = ["Shares, blocks", "Latency", "Bandwidth", "Roles"]
            .iter()
            .any(|t| section.contains(t));
        assert!(
            !charted || has_chart,
            "a section without its chart: {}",
            &section[..80.min(section.len())]
        );
    }
    assert!(
        !html.contains("http://")
            || html
                .matches("http://")
                .all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\"")),
        "nothing is loaded from the network"
    );
    assert!(
        html.contains("roles and relays added"),
        "readings are there"
    );
    // The A/A side's verdict: every headline metric, nothing significant, priced.
    let verdict = md
        .split("## Verdict")
        .nth(1)
        .and_then(|v| v.split("## ").next())
        .unwrap();
    assert!(
        verdict.contains("| sv1-b against sv1 |")
            && verdict.contains("| new job after a block, mean ms |"),
        "{verdict}"
    );
    assert!(!verdict.contains("| yes |"), "A/A differs: {verdict}");
    assert!(
        md.contains("| sv1-b | stale work after a block, mean ms |"),
        "worth of stale work"
    );
    // The conclusions come first, one line per side, from summary.json.
    let first = md.split("\n## ").nth(1).unwrap_or_default();
    assert!(first.starts_with("Conclusions"), "{md}");
    assert!(
        first.contains("**sv1-b**") && first.contains("- Miners reach new-block work"),
        "{first}"
    );

    // It opens in headless Chromium without console errors, and the screenshot has charts.
    let profile = std::env::temp_dir().join(format!("report-chromium-{}", std::process::id()));
    let url = format!(
        "file://{}",
        dir.join("report.html").canonicalize().unwrap().display()
    );
    let shot = dir.join("report.png");
    let out = chromium(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,2400",
            &url,
        ],
        &profile,
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Failed to load resource"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(&png[1..4], b"PNG");
    assert!(
        png.len() > 40_000,
        "the screenshot is nearly blank ({} bytes)",
        png.len()
    );
    let dom = chromium(&["--dump-dom", &url], &profile);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.matches("<svg").count() >= 6,
        "charts in the rendered page"
    );

    // The PDF's text can be extracted.
    let text = Command::new("pdftotext")
        .arg(dir.join("report.pdf"))
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils)");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Latency and time") && text.contains("sv1-baseline"),
        "PDF text: {}",
        &text[..200.min(text.len())]
    );
    let _ = std::fs::remove_dir_all(&profile);
}

/// The report as a reader's laptop shows it (1280 x 900): its first screen is the forest
/// plot and the worth bars, drawn from summary.json; nothing is wider than the window, no
/// number is split over two lines and no chart's text runs past its edge. Held on a run
/// made here and on a summary of the default scenario's four sides.
#[test]
fn the_first_screen_is_drawn_from_the_summary_and_the_page_fits_the_window() {
    let dir = fake_run("layout", 50);
    report::write_report(&dir, false, Source::Written).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let summary: analysis::Summary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let conclusions = html.split("<h2>Conclusions</h2>").nth(1).unwrap();
    let first = conclusions.split("</div>").next().unwrap();
    assert!(first.starts_with(r#"<div class="figures">"#), "{first}");
    // Each side's difference on a headline metric, as the verdict has it, and its worth.
    for (side, rows) in &summary.verdict {
        let r = (rows.iter())
            .find(|r| r.metric == analysis::metric::Headline::NewPrevhashJobMs)
            .unwrap();
        let (d, (lo, hi)) = (r.delta.unwrap(), r.ci.unwrap());
        let drawn = format!("{} [{}, {}]", signed(d, 1), signed(lo, 1), signed(hi, 1));
        assert!(first.contains(&drawn), "{side}: {drawn} not drawn");
        let c = &summary.conclusions[side];
        let worth = analysis::worth::sats_text(c.worth_sats_per_day.unwrap());
        let share =
            analysis::worth::pct_text(c.worth_pct_of_revenue.unwrap(), c.worth_pct_of_revenue_ci);
        assert!(
            first.contains(&worth) && first.contains(&share),
            "{side}: {worth}, {share}"
        );
    }
    assert!(first.contains("Worth to a 1 PH/s farm"), "{first}");
    // The four sides of the default scenario, every table and chart of its report.
    let four = std::env::temp_dir().join(format!("report-four-{}", std::process::id()));
    // Its summary alone: an empty events/ makes it a run directory.
    std::fs::create_dir_all(four.join("events")).unwrap();
    std::fs::write(
        four.join("summary.json"),
        include_str!("fixtures/summary-four-sides.json"),
    )
    .unwrap();
    report::write_report(&four, false, Source::Written).unwrap();
    for page in [dir.join("report.html"), four.join("report.html")] {
        let layout = report::layout::measure(&page, 1280, 900).unwrap();
        assert!(
            layout.too_wide.is_empty(),
            "{}: wider than the window: {:?}",
            page.display(),
            layout.too_wide
        );
        assert!(
            layout.split_numbers.is_empty(),
            "{}: numbers split: {:?}",
            page.display(),
            layout.split_numbers
        );
        assert!(
            layout.clipped_text.is_empty(),
            "{}: chart text cut: {:?}",
            page.display(),
            layout.clipped_text
        );
    }
    let _ = std::fs::remove_dir_all(&four);
}

/// What no second of the fake run's window holds: its warm-up's memory.
const WARM_UP_RSS: u64 = 777_000_000;

#[test]
fn the_roles_table_is_summary_json_s_and_the_charts_draw_the_window_only() {
    let dir = fake_run("roles", 50);
    report::write_report(&dir, false, Source::Written).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let summary: analysis::Summary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let section = md.split("## Roles: CPU and memory").nth(1).unwrap();
    let mut rows = 0;
    let node = summary
        .network
        .node
        .as_ref()
        .map(|r| ("node".to_string(), r));
    for (role, r) in summary.sides["sv1"]
        .roles
        .iter()
        .chain(node.iter().map(|(n, r)| (n, *r)))
    {
        let f = |x: Option<f64>, places: usize| format!("{:.places$}", x.unwrap());
        let row = format!(
            "| {role} | {} | {} | {} | {} |",
            f(r.cpu_cores.mean, 4),
            f(r.cpu_cores.max, 3),
            f(r.rss_bytes.p50.map(|b| b / 1e6), 1),
            f(r.rss_bytes.max.map(|b| b / 1e6), 1),
        );
        assert!(section.contains(&row), "{row} not in {section}");
        rows += 1;
    }
    assert_eq!(rows, 4);
    // pool-sv1 used 2, 3, 4% of a core in turn: 0.03 core, from its running total; the
    // warm-up's 0.9 core and 777 MB are in neither the table nor the charts.
    let pool = &summary.sides["sv1"].roles["pool-sv1"];
    assert!(
        (pool.cpu_cores.mean.unwrap() - 0.03).abs() < 0.001,
        "{pool:?}"
    );
    assert_eq!(pool.rss_bytes.max, Some(30e6));
    // Each chart's highest y tick: the CPU chart's within 0.1 core, the memory chart's
    // within 40 MB (the warm-up would take them to 1 core and 800 MB).
    let section = (html.rsplit("Roles: CPU and memory").next())
        .and_then(|s| s.split("<section").next())
        .unwrap();
    let top: Vec<f64> = (section.split("<svg").skip(1))
        .map(|svg| {
            (svg.split(r#"text-anchor="end">"#).skip(1))
                .filter_map(|t| t.split('<').next()?.parse::<f64>().ok())
                .fold(0.0, f64::max)
        })
        .collect();
    assert_eq!(top.len(), 2, "{section}");
    assert!(top[0] > 0.0 && top[0] <= 0.1, "CPU axis to {}", top[0]);
    assert!(
        top[1] >= 30.0 && top[1] <= 40.0,
        "memory axis to {}",
        top[1]
    );
}

/// `show RUN_DIR --hashrate 10PH/s`: the run priced again from its events, said at the top
/// and in every conclusion, nothing written; without its events a run cannot be.
#[test]
fn show_prices_a_finished_run_again_and_says_so() {
    let dir = fake_run("repriced", 50);
    report::write_report(&dir, false, Source::Recompute).unwrap();
    let written = std::fs::read_to_string(dir.join(model::run_dir::SUMMARY_FILE)).unwrap();
    let t = report::terminal::Terminal::default();
    let ten = analysis::manifest::WorthChange {
        farm_hashrate: Some(1e16),
        ..Default::default()
    };
    let shown = report::terminal::show(&dir, &t, &ten).unwrap();
    assert!(
        shown.starts_with("re-priced for a 10 PH/s farm on a 1 ZH/s network, 600 s blocks"),
        "{shown}"
    );
    assert!(shown.contains("for a 10 PH/s farm, "), "{shown}");
    let summary = report::terminal::repriced(&dir, &ten).unwrap();
    assert_eq!(summary.worth_assumptions.farm_hashrate, 1e16);
    let as_written = report::terminal::show(&dir, &t, &Default::default()).unwrap();
    assert!(as_written.contains("for a 1 PH/s farm, "), "{as_written}");
    let after = std::fs::read_to_string(dir.join(model::run_dir::SUMMARY_FILE)).unwrap();
    assert_eq!(written, after, "nothing written");
    std::fs::rename(dir.join("events"), dir.join("events.away")).unwrap();
    let err = format!("{:#}", report::terminal::show(&dir, &t, &ten).unwrap_err());
    assert!(err.contains("has no events"), "{err}");
}

/// The report presents what the analysis wrote: the same with the events gone, and the
/// same as the analysis run again over them (`report --recompute`).
#[test]
fn a_report_reads_the_runs_summary_and_charts_not_its_events() {
    let dir = fake_run("written", 50);
    let report_of = |source| {
        report::write_report(&dir, false, source).unwrap();
        std::fs::read_to_string(dir.join("report.md")).unwrap()
    };
    let recomputed = report_of(Source::Recompute);
    let written = report_of(Source::Written);
    assert!(written.contains("New job after a block"), "{written}");
    assert_eq!(written, recomputed);
    std::fs::rename(dir.join("events"), dir.join("events.away")).unwrap();
    assert_eq!(report_of(Source::Written), written, "no event read");
    std::fs::rename(dir.join("events.away"), dir.join("events")).unwrap();
    // Charts of another version: the analysis runs again, and the report says so.
    let charts = dir.join(model::run_dir::CHARTS_FILE);
    std::fs::write(&charts, r#"{"schema": "stratum-bench.charts.v0"}"#).unwrap();
    let again = report_of(Source::Written);
    assert!(again.contains("recomputed from the events"), "{again}");
    // Asked for, the analysis run again is written back: the charts of this version.
    report_of(Source::Recompute);
    assert!(analysis::charts::Charts::read(&dir).is_ok());
    assert_eq!(report_of(Source::Written), written);
}

/// A run file of `dir` (`samples.jsonl`, `events/<role>.jsonl`) opened to add lines to.
fn appending(dir: &Path, file: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(file))
        .unwrap()
}

/// A host whose idle memory is slow to touch is said where what the roles added is read.
#[test]
fn a_host_slow_to_hand_back_idle_memory_is_said_beside_the_readings() {
    let dir = fake_run("idle-memory", 50);
    // Three probes in the window, 3, 4 and 5 ms per MiB after 5 s idle (0.05 hot): the
    // median 4.0 is over the 1 ms noted.
    let mut samples = appending(&dir, "samples.jsonl");
    for (i, idle_ms_per_mib) in [3.0, 4.0, 5.0].into_iter().enumerate() {
        let reading = analysis::manifest::HostReading {
            core_busy_pct: vec![20.0, 20.0],
            busy_pct: 20.0,
            mem_total_bytes: 8_000_000_000,
            mem_available_bytes: 6_000_000_000,
            idle_touch: Some(probe::event::IdleTouch {
                rest_s: 5.0,
                idle_ms_per_mib,
                hot_ms_per_mib: 0.05,
            }),
            ..Default::default()
        };
        let t = 1_000 * S + (i as u64 + 1) * 10 * S;
        let s = Sample::of_host(t, "host", reading);
        writeln!(samples, "{}", serde_json::to_string(&s).unwrap()).unwrap();
    }
    report::write_report(&dir, false, Source::Recompute).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("Part of what the roles added below is this host's: memory left idle 5 s took 4.0 ms per MiB to touch again at the median, against 0.05 ms touched again at once"),
        "{md}"
    );
    assert!(
        md.contains("| 4.00 / 5.00 (0.05), 3 probes after 5 s idle |"),
        "{md}"
    );
    // A run without the probe says nothing of it.
    let unprobed = fake_run("unprobed", 50);
    report::write_report(&unprobed, false, Source::Recompute).unwrap();
    let md = std::fs::read_to_string(unprobed.join("report.md")).unwrap();
    assert!(!md.contains("Part of what the roles added"), "{md}");
}

/// A pool that stops listening while its process lives (SRI's pool can) is said first,
/// before any figure of its side.
#[test]
fn a_pool_that_stopped_taking_connections_is_said_first() {
    let dir = fake_run("refused", 50);
    let mut events = appending(&dir, "events/pool-sv1.jsonl");
    for t in [1_100 * S, 1_101 * S] {
        let refused = Record {
            t_ns: t,
            role: "pool-sv1".into(),
            event: Event::TapUpstreamUnreachable {
                connection: 9,
                reason: "cannot reach the pool: Connection refused (os error 111)".into(),
                refused: true,
            },
        };
        writeln!(events, "{}", serde_json::to_string(&refused).unwrap()).unwrap();
    }
    report::write_report(&dir, false, Source::Recompute).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = md.find("## A pool stopped serving").expect(&md);
    assert!(
        md[section..]
            .contains("sv1's pool refused connections from 100 s into the window to 101 s into the window (2 its taps could not open)"),
        "{md}"
    );
    assert!(
        section < md.find("## Shares").expect(&md),
        "said before the figures"
    );
    // A run whose pool served throughout has no such section.
    let served = fake_run("served", 50);
    report::write_report(&served, false, Source::Recompute).unwrap();
    let md = std::fs::read_to_string(served.join("report.md")).unwrap();
    assert!(!md.contains("stopped serving"), "{md}");
}

#[test]
fn comparing_a_run_with_itself_finds_nothing_and_a_slower_link_is_found() {
    let a = report::run_data::RunData::load(&fake_run("cmp-a", 50)).unwrap();
    let a = [a];
    let same = report::compare::compare(&a, &a).unwrap();
    assert!(!same.metrics.is_empty());
    assert!(
        same.metrics
            .iter()
            .all(|m| m.delta.as_ref().is_none_or(|d| !d.significant)),
        "nothing differs from itself"
    );

    let b = report::run_data::RunData::load(&fake_run("cmp-b", 70)).unwrap();
    let diff = report::compare::compare(&a, &[b]).unwrap();
    let m = diff
        .metrics
        .iter()
        .find(|m| m.subject == "sv1" && m.metric == "new job after a block")
        .unwrap();
    let d = m.delta.as_ref().unwrap();
    assert!(d.significant, "{d:?}");
    assert!(
        (d.delta - 20.0).abs() < 0.5,
        "20 ms more one-way delay: {}",
        d.delta
    );
    assert!(m.regressed(10.0) && !m.regressed(50.0), "{:?}", d.pct);
}

#[test]
fn a_directory_of_runs_is_one_side_of_a_comparison() {
    let group = std::env::temp_dir().join(format!("cmp-group-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&group);
    std::fs::create_dir_all(&group).unwrap();
    for k in 0..2 {
        let run = fake_run(&format!("cmp-group-{k}"), 50);
        std::fs::rename(&run, group.join(format!("seed-{k}"))).unwrap();
    }
    std::fs::write(group.join("notes.txt"), "not a run").unwrap();
    let runs = report::run_data::RunData::load_runs(&group).unwrap();
    assert_eq!(runs.len(), 2);
    let c = report::compare::compare(&runs, &runs).unwrap();
    assert!(c.run_a.starts_with("2 runs ("), "{}", c.run_a);
    let cpu = c.metrics.iter().find(|m| m.metric == "CPU").unwrap();
    assert_eq!(
        cpu.delta.as_ref().map(|d| d.units_a),
        Some(2),
        "a unit a run"
    );

    std::fs::create_dir_all(group.join("empty")).unwrap();
    let err = report::run_data::RunData::load_runs(&group.join("empty"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("not a run directory") && err.contains("nor a directory of runs"),
        "{err}"
    );
}

#[test]
fn partial_and_missing_runs_are_told_apart() {
    let dir = fake_run("partial", 50);
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    report::write_report(&dir, false, Source::Written).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("Partial run") && md.contains("job_received"),
        "{md}"
    );

    let err = report::write_report(Path::new("/nonexistent/run"), false, Source::Written)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no run directory"), "{err}");
}

#[test]
fn export_writes_a_table_per_event_kind() {
    let run = report::run_data::RunData::load(&fake_run("csv", 50)).unwrap();
    let out = std::env::temp_dir().join(format!("report-csv-out-{}", std::process::id()));
    let files = report::export::export_csv(&run, &out).unwrap();
    assert!(files.iter().any(|f| f.ends_with("job_received.csv")));
    let jobs = std::fs::read_to_string(out.join("job_received.csv")).unwrap();
    assert_eq!(jobs.lines().count(), 1 + 30 * 4, "a header and every job");
    assert!(jobs.starts_with("t_ms,role,"));
    let lat = std::fs::read_to_string(out.join("latencies.csv")).unwrap();
    assert_eq!(
        lat.lines()
            .filter(|l| l.starts_with("sv1,new_prevhash_job_ms"))
            .count(),
        30 * 4,
        "every tip in the window (the first is at its start), every miner"
    );
}

/// A bench directory as the three benches leave it, with known numbers.
fn fake_bench_dir(name: &str) -> PathBuf {
    use analysis::bench::*;
    use probe::Dist;
    let dir = std::env::temp_dir().join(format!("report-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fanout: Vec<FanoutResult> = [(225u32, 6.0), (1000, 30.0)]
        .into_iter()
        .map(|(miners, last_ms)| FanoutResult {
            via: FanoutVia::Sv1Pool,
            pool_build: None,
            mode: FanoutMode::Tcp,
            miners,
            rounds: 3,
            last_miner_ms: Dist::of(&[last_ms; 3]),
            first_miner_ms: Dist::of(&[0.2; 3]),
            us_per_miner: Some(last_ms * 1e3 / f64::from(miners)),
            sender_writes_ms: Dist::of(&[last_ms / 3.0; 3]),
            sender_us_per_miner: Some(last_ms / 3.0 * 1e3 / f64::from(miners)),
            delivery_ms: Dist::of(&[last_ms / 2.0; 30]),
            missing: 0,
            sender_cpu_ms_per_round: Some(4.0),
            floor_us_per_miner: 7.0,
            bare_floor_us_per_miner: Some(3.5),
            floor_write_bytes: Some(600),
            floor_between_rounds: true,
            floor_miners: miners,
            fleets: 1,
            group_size: None,
            cpus: None,
            // At 225, three rounds as they came: too few for an interval. At 1,000, five
            // rounds whose floors moved: 10 us against 5, 20, then 10 three times, 2x,
            // 0.5x and 1x: a geometric mean of 1 (the arithmetic mean of the ratios would
            // be 1.1).
            paired_rounds: match miners {
                225 => vec![
                    PairedRound {
                        sender_us_per_miner: 8.0,
                        floor_us_per_miner: 8.0,
                    };
                    3
                ],
                _ => [
                    (10.0, 5.0),
                    (10.0, 20.0),
                    (10.0, 10.0),
                    (10.0, 10.0),
                    (10.0, 10.0),
                ]
                .map(|(sender, floor)| PairedRound {
                    sender_us_per_miner: sender,
                    floor_us_per_miner: floor,
                })
                .to_vec(),
            },
        })
        .collect();
    let step = |offered: f64, p99: f64, verdict: Verdict| StepResult {
        offered_per_s: offered,
        submitted: (offered * 10.0) as u64,
        accepted: (offered * 10.0) as u64,
        errors: 0,
        accepted_per_s: offered,
        latency_ms: Dist::of(&[p99 / 3.0, p99]),
        p95_ms: Some(p99 / 2.0),
        pool_cpu_pct: Some(offered / 100.0),
        // Cheaper per share at lighter load, so the busiest step is not the cheapest.
        pool_cpu_us_per_share: Some(offered / 200.0),
        pool_rss_bytes: Some(20 << 20),
        verdict,
    };
    let pool = PoolBenchReport {
        target: "builtin".into(),
        miners: 200,
        steps: vec![
            step(1000.0, 0.3, Verdict::Sustained),
            step(2000.0, 0.5, Verdict::Sustained),
            step(4000.0, 9.0, Verdict::Stop("p99 passed".into())),
        ],
        max_sustained_shares_per_s: Some(2000.0),
        pool_rss_per_miner_bytes: Some(9000.0),
        cpus: Some(CpuSplit {
            under_test: vec![0],
            load: vec![1],
        }),
    };
    let case = |name: &str, ms: f64| TemplateCase {
        name: name.into(),
        reply_bytes: Some(1_270_000),
        latency_ms: Dist::of(&[ms; 5]),
        samples_ms: vec![ms; 5],
    };
    let mempool = |txs: usize, fresh_ms: f64| TemplateMempool {
        mempool_txs: Some(txs),
        template_txs: Some(txs * 3 / 4),
        cases: vec![
            case("getblocktemplatelight fresh", fresh_ms),
            case("getblocktemplatelight cached", 0.25),
        ],
    };
    let template = TemplateBenchReport {
        node: "builtin".into(),
        mempools: vec![mempool(1000, 5.0), mempool(6000, 24.0)],
    };
    let write = |file: &str, v: serde_json::Value| {
        std::fs::write(dir.join(file), v.to_string()).unwrap();
    };
    write(FANOUT_FILE, serde_json::to_value(&fanout).unwrap());
    write(POOL_FILE, serde_json::to_value(&pool).unwrap());
    write(TEMPLATE_FILE, serde_json::to_value(&template).unwrap());
    dir
}

#[test]
fn bench_results_get_a_report_with_charts_and_the_seed_figures_beside_ours() {
    let dir = fake_bench_dir("all");
    report::write_report(&dir, false, Source::Written).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for title in ["Job fan-out", "Pool capacity", "Template latency"] {
        assert!(md.contains(title) && html.contains(title), "no {title}");
    }
    // Ours: 30 ms to 1,000 miners is 30 us per miner, 4.3x the 7 us floor (3.5 us with
    // nobody waiting).
    assert!(
        md.contains(
            "| sv1-pool | tcp | 1000 (1) | 3 | 0.200 | 30.000 | 30.00 | 7.00 (1000) | 3.50 | 4.3 | 10.00 (1.43x) | 1.00x ("
        ) && md.contains("; 5 rounds) |")
            && md.contains("| 1.00x (too few rounds for an interval: 3) |"),
        "{md}"
    );
    assert!(
        md.contains("Each floor writes 600 bytes a connection, about a clean mining.notify")
            && md.contains(
                "The floor whose readers wait was timed after each of the sender's rounds"
            ),
        "{md}"
    );
    // Shares per CPU-second from 10 us per share.
    assert!(
        md.contains("Validated shares per pool CPU-second at the busiest sustained step: 100000. Isolated: the roles under test ran on CPU(s) 0 and the miner fleets loading them on CPU(s) 1."),
        "{md}"
    );
    // The seeds' figures with their hardware, and the seed mean beside the matching case.
    assert!(
        md.contains("26.8 us") && md.contains("Intel i7 at 2.1 GHz"),
        "{md}"
    );
    assert!(md.contains("AMD Ryzen 9 7950X"), "{md}");
    assert!(
        md.contains(
            "| getblocktemplatelight cached | 1.27MB | 5 | 0.250 | 0.250 | 0.250 | 0.250 | 0.917 |"
        ),
        "{md}"
    );
    // Each mempool size has its own section, and the medians are drawn against size.
    assert!(
        md.contains("Template latency: builtin, 1000-transaction mempool")
            && md.contains("Template latency: builtin, 6000-transaction mempool")
            && md.contains("Template latency against mempool size"),
        "{md}"
    );
    // Charts: us per miner and time to the last miner, latency and throughput by load, a
    // template CDF per mempool and latency by size; the FastProxy point beside ours.
    assert_eq!(html.matches("<svg").count(), 7, "{html}");
    assert!(html.contains("FastProxy TCP (i7)"));

    // A damaged result file names itself.
    std::fs::write(dir.join(analysis::bench::POOL_FILE), "{").unwrap();
    let err = format!(
        "{:#}",
        report::write_report(&dir, false, Source::Written).unwrap_err()
    );
    assert!(err.contains("pool-bench.json"), "{err}");
}
