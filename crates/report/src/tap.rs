//! The report of a standalone tap's directory (`stratum-bench tap`): what crossed a real
//! deployment's connections, and what the tap could not see.

use crate::content::{dist_head, dist_row};
use crate::document::{Block, Document, Section};
use crate::svg::{grouped, number};
use analysis::tap::{TapProtocol, TapSetup, TapSummary, TAP_FILE};
use anyhow::{Context, Result};
use probe::Dist;
use std::path::Path;

/// Workers listed one by one; the rest are summed in one row.
const WORKERS_LISTED: usize = 50;

/// Whether `dir` is a tap's directory.
pub fn is_tap_dir(dir: &Path) -> bool {
    dir.join(TAP_FILE).is_file()
}

/// The report of the tap directory `dir`, from its `summary.json` or, when the tap did
/// not write one (killed), from its events.
pub fn document(dir: &Path) -> Result<Document> {
    let path = dir.join(TAP_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let setup: TapSetup = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a tap's setup", path.display()))?;
    let summary_path = dir.join(model::run_dir::SUMMARY_FILE);
    let summary = match std::fs::read_to_string(&summary_path) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not a tap's summary", summary_path.display()))?,
        Err(_) => analysis::tap::summarize_dir(dir),
    };
    Ok(Document {
        title: format!("stratum-bench tap ({})", setup.protocol.name()),
        subtitle: format!(
            "{} in front of {}, for {:.0} s ({})",
            setup.listen,
            setup.upstream,
            summary.duration_s,
            dir.display()
        ),
        sections: if setup.decoded {
            vec![
                shares_section(&setup, &summary),
                jobs_section(&setup, &summary),
                connections_section(&summary),
                bandwidth_section(&summary),
                blind_spots(&setup),
            ]
        } else {
            vec![
                encrypted_section(&summary),
                connections_section(&summary),
                bandwidth_section(&summary),
                blind_spots(&setup),
            ]
        },
    })
}

fn dist_table(rows: Vec<(&str, &Dist)>) -> Block {
    Block::Table {
        head: dist_head(""),
        rows: (rows.into_iter())
            .map(|(what, d)| dist_row(what.to_string(), d))
            .collect(),
    }
}

fn shares_section(setup: &TapSetup, s: &TapSummary) -> Section {
    let mut blocks = Vec::new();
    let verdicts = probe::ShareVerdict::ALL.map(|v| v.name());
    let count =
        |m: &std::collections::BTreeMap<String, u64>, v: &str| m.get(v).copied().unwrap_or(0);
    let mut head = vec!["worker".to_string()];
    head.extend(verdicts.iter().map(|v| v.to_string()));
    head.push("accepted difficulty".into());
    let mut workers: Vec<_> = s.workers.iter().collect();
    workers.sort_by_key(|w| std::cmp::Reverse(w.verdicts.values().sum::<u64>()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    let worker_row = |name: String, m: &std::collections::BTreeMap<String, u64>, d: f64| {
        let mut r = vec![name];
        r.extend(verdicts.iter().map(|v| grouped(count(m, v) as f64, 0)));
        r.push(difficulty(d));
        r
    };
    rows.push(worker_row(
        "all workers".into(),
        &s.verdicts,
        s.workers.iter().map(|w| w.accepted_difficulty).sum(),
    ));
    for w in workers.iter().take(WORKERS_LISTED) {
        rows.push(worker_row(
            w.worker.clone(),
            &w.verdicts,
            w.accepted_difficulty,
        ));
    }
    if workers.len() > WORKERS_LISTED {
        let mut rest = std::collections::BTreeMap::new();
        for w in &workers[WORKERS_LISTED..] {
            for (v, n) in &w.verdicts {
                *rest.entry(v.clone()).or_default() += n;
            }
        }
        let difficulty = workers[WORKERS_LISTED..]
            .iter()
            .map(|w| w.accepted_difficulty)
            .sum();
        rows.push(worker_row(
            format!("{} more workers", workers.len() - WORKERS_LISTED),
            &rest,
            difficulty,
        ));
    }
    blocks.push(Block::Para(if setup.protocol == TapProtocol::Sv1 {
        "Each share with the pool's own answer, by the worker name it was submitted under. \
         Rejections are classed by the pool's words (stale, duplicate, low difficulty, \
         unknown job), else its error code."
            .into()
    } else {
        "Each share with the pool's own answer (SubmitShares.Success acknowledges a batch, \
         SubmitShares.Error one share), by the tapped connection and channel it was \
         submitted on. Rejections are classed by the SV2 error code; a share on a job the \
         channel's last SetNewPrevHash replaced is stale."
            .into()
    }));
    blocks.push(Block::Table { head, rows });
    Section {
        title: "Shares and verdicts".into(),
        blocks,
    }
}

/// Work credited, in share difficulty: test networks' difficulties are far below 1.
fn difficulty(d: f64) -> String {
    if d > 0.0 && d < 0.01 {
        format!("{d:.2e}")
    } else {
        number(d)
    }
}

fn jobs_section(setup: &TapSetup, s: &TapSummary) -> Section {
    let mut blocks = vec![Block::Para(format!(
        "{} jobs relayed to miners; {} blocks announced by the node.",
        grouped(s.jobs_relayed as f64, 0),
        s.blocks_announced
    ))];
    let between = match setup.protocol {
        TapProtocol::Sv1 => "between jobs on a connection",
        TapProtocol::Sv2 => "between jobs on a channel",
    };
    let mut rows = vec![(between, &s.job_interval_ms)];
    match &setup.node_zmq {
        Some(zmq) => {
            rows.push((
                "new block at the node to job at the miner",
                &s.new_block_job_ms,
            ));
            blocks.push(Block::Para(format!(
                "New-block job time: from the node's hashblock ({zmq}) reaching the tap to \
                 each connection's first job on that block. Negative when the pool's job came \
                 first (its node heard of the block before the operator's did). Blocks no \
                 connection got a job on: {}.",
                s.blocks_without_job
            )));
        }
        None => blocks.push(Block::Note(
            "No --node-zmq: new-block job times need the operator's node's hashblock.".into(),
        )),
    }
    blocks.push(dist_table(rows));
    Section {
        title: "Jobs (ms)".into(),
        blocks,
    }
}

/// An SV2 tap without the pool's key: the encrypted stream as reads.
fn encrypted_section(s: &TapSummary) -> Section {
    let mut blocks = vec![Block::Para(
        "The tap had no key: it relayed the Noise-encrypted stream byte for byte. An SV2 \
         frame's length travels in its encrypted header, so frames cannot be told apart: \
         each row counts reads, and a read holds one frame when frames arrive apart (a job, \
         a share, an answer), several when they arrive together. The first read each way \
         is the handshake."
            .into(),
    )];
    blocks.push(Block::Table {
        head: ["direction", "reads", "bytes"].map(String::from).to_vec(),
        rows: vec![
            vec![
                "to the pool".into(),
                grouped(s.encrypted_reads_up as f64, 0),
                grouped(s.bytes_up as f64, 0),
            ],
            vec![
                "from the pool".into(),
                grouped(s.encrypted_reads_down as f64, 0),
                grouped(s.bytes_down as f64, 0),
            ],
        ],
    });
    let mut sizes = Vec::new();
    if let Some(d) = &s.encrypted_read_bytes_up {
        sizes.push(("read to the pool, bytes", d));
    }
    if let Some(d) = &s.encrypted_read_bytes_down {
        sizes.push(("read from the pool, bytes", d));
    }
    if !sizes.is_empty() {
        blocks.push(dist_table(sizes));
    }
    Section {
        title: "Encrypted stream".into(),
        blocks,
    }
}

fn connections_section(s: &TapSummary) -> Section {
    let mut rows = vec![
        vec!["connections".to_string(), s.connections.to_string()],
        vec![
            "ended while the tap ran".into(),
            s.connections_ended.to_string(),
        ],
        vec![
            "closed: the pool could not be reached".into(),
            s.upstream_unreachable.to_string(),
        ],
    ];
    for (reason, n) in &s.end_reasons {
        rows.push(vec![format!("ended: {reason}"), n.to_string()]);
    }
    if !s.unreadable.is_empty() {
        rows.push(vec![
            "event lines unreadable".into(),
            s.unreadable.len().to_string(),
        ]);
    }
    Section {
        title: "Connections".into(),
        blocks: vec![Block::Table {
            head: vec!["".into(), "count".into()],
            rows,
        }],
    }
}

fn bandwidth_section(s: &TapSummary) -> Section {
    let mut blocks = vec![Block::Table {
        head: ["direction", "bytes", "bytes/s"].map(String::from).to_vec(),
        rows: vec![
            vec![
                "to the pool".into(),
                grouped(s.bytes_up as f64, 0),
                grouped(s.bytes_up_per_s, 0),
            ],
            vec![
                "from the pool".into(),
                grouped(s.bytes_down as f64, 0),
                grouped(s.bytes_down_per_s, 0),
            ],
        ],
    }];
    let mut added = Vec::new();
    if let Some(d) = &s.tap_added_up_ms {
        added.push(("added to the pool, ms", d));
    }
    if let Some(d) = &s.tap_added_down_ms {
        added.push(("added from the pool, ms", d));
    }
    if !added.is_empty() {
        blocks.push(Block::Para(
            "What the tap itself adds per message: from reading it whole to its write \
             returning."
                .into(),
        ));
        blocks.push(dist_table(added));
    }
    if s.malformed_up + s.malformed_down > 0 {
        blocks.push(Block::Note(format!(
            "Lines that were not JSON, passed on unread: {} to the pool, {} from it.",
            s.malformed_up, s.malformed_down
        )));
    }
    Section {
        title: "Bandwidth and the tap's own cost".into(),
        blocks,
    }
}

fn blind_spots(setup: &TapSetup) -> Section {
    let mut points = vec![
        "The tap sees only the connections that cross it: shares the pool rejects for \
         reasons it does not send, and the pool's own view of hashrate, are not here."
            .to_string(),
        "Times are when a message crossed the tap, not when the miner acted on it: the \
         farm's LAN and the miner's own firmware come after."
            .to_string(),
    ];
    if !setup.decoded {
        points.push(
            "Without the pool's authority key: no job, block, share or verdict, and no \
             frame boundaries. Run the tap with --authority-secret-key (the pool's own, so \
             its miners' connections verify as before) to see them."
                .into(),
        );
    } else if setup.node_zmq.is_none() {
        points.push("Without --node-zmq there is no block time to measure jobs from.".into());
    }
    Section {
        title: "What the tap cannot see".into(),
        blocks: points.into_iter().map(Block::Para).collect(),
    }
}
