//! A recorded run (SV1 and configurations A, C and D, 2 miners a side, 15 s with a block
//! every 3 s: `tests/fixtures/recorded-run`) replayed through the streaming path as a live
//! harness reads it (a horizon, a second's worth of each file at a time), against the same
//! rules over its events put in one time order first (`stream::compute`).

use analysis::input::RunInput;
use analysis::manifest::Manifest;
use analysis::stream::{JobStream, Reorder, RunStream, ShareStream};
use analysis::Unmatched;
use probe::Record;
use std::collections::BTreeMap;
use std::path::Path;

fn fixture() -> (Manifest, RunInput) {
    let dir = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo and nextest"))
        .join("tests/fixtures/recorded-run");
    let manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let input = RunInput::read(&dir);
    assert!(input.unreadable.is_empty(), "{:?}", input.unreadable);
    (manifest, input)
}

/// The records as a harness tailing the role files every second gets them: each file's
/// lines in the order written, a second's worth at a time, file after file.
fn as_read_live(records: &[Record]) -> Vec<Vec<Record>> {
    let mut by_role: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records {
        by_role.entry(&r.role).or_default().push(r);
    }
    let first = records.iter().map(|r| r.t_ns).min().unwrap();
    let last = records.iter().map(|r| r.t_ns).max().unwrap();
    let mut ticks = Vec::new();
    let mut tick = first;
    while tick <= last + 1_000_000_000 {
        ticks.push(
            by_role
                .values()
                .flat_map(|file| {
                    file.iter()
                        .filter(move |r| r.t_ns <= tick && r.t_ns + 1_000_000_000 > tick)
                })
                .map(|r| (*r).clone())
                .collect(),
        );
        tick += 1_000_000_000;
    }
    ticks
}

#[test]
fn a_recorded_run_streamed_as_it_is_read_gives_the_facts_of_one_time_order() {
    let (m, input) = fixture();
    let in_order = analysis::stream::compute(&m, &input.events, &input.samples);
    assert!(
        in_order.sides.values().all(|s| s.shares.submitted > 10),
        "the fixture has shares on every side"
    );

    let mut reorder = Reorder::new(2_000_000_000);
    let mut streams: BTreeMap<&str, ShareStream> = (m.sides.iter())
        .map(|(name, side)| {
            (
                name.as_str(),
                ShareStream::new(side, &m.node_role, m.window()),
            )
        })
        .collect();
    // The per-miner samples go to disk as a live run's do.
    let spill = std::env::temp_dir().join(format!("streaming-spill-{}", std::process::id()));
    std::fs::create_dir_all(&spill).unwrap();
    let mut job_streams: BTreeMap<&str, JobStream> = (m.sides.keys())
        .map(|name| {
            let mut stream = JobStream::new(&m, name);
            stream.spill_to(&spill, name).unwrap();
            (name.as_str(), stream)
        })
        .collect();
    let batches = as_read_live(&input.events);
    let delivered: usize = batches.iter().map(Vec::len).sum();
    assert_eq!(delivered, input.events.len(), "every record is read once");
    let mut now = input.events.iter().map(|r| r.t_ns).min().unwrap();
    for batch in batches {
        for r in batch {
            assert!(reorder.push(r).is_none(), "nothing late within the horizon");
        }
        now += 1_000_000_000;
        for r in reorder.release(now) {
            streams.values_mut().for_each(|s| s.consume(&r));
            job_streams.values_mut().for_each(|s| s.consume(&r));
        }
        // Memory is what the horizon holds, not the run.
        assert!(
            reorder.held() < input.events.len() / 3,
            "{} held",
            reorder.held()
        );
    }
    for r in reorder.drain() {
        streams.values_mut().for_each(|s| s.consume(&r));
        job_streams.values_mut().for_each(|s| s.consume(&r));
    }
    assert_eq!(reorder.late(), 0);

    let mut unmatched = Unmatched::default();
    for (name, stream) in streams {
        let facts = stream.finish(m.window(), &mut unmatched);
        let side = &in_order.sides[name];
        assert_eq!(facts.shares, side.shares, "{name}: share counts");
        assert_eq!(facts.pool_work, side.pool_work, "{name}: pool work");
        assert_eq!(facts.blocks, side.blocks, "{name}: blocks");
        assert_eq!(
            facts.block_propagation_ms.dist(),
            side.block_propagation_ms,
            "{name}: block propagation"
        );
    }
    // The job rules: every fact equal to theirs over the events put in one time order
    // first (as `stream::compute` reads events in memory).
    let mut sorter = Reorder::new(0);
    for r in &input.events {
        assert!(sorter.push(r.clone()).is_none());
    }
    let sorted = sorter.drain();
    let mut in_order_unmatched = Unmatched::default();
    for (name, stream) in job_streams {
        let mut whole = JobStream::new(&m, name);
        sorted.iter().for_each(|r| whole.consume(r));
        let in_order_jobs = whole.finish(&mut in_order_unmatched);
        assert!(
            in_order_jobs.new_prevhash_job_ms.values().len() >= 4,
            "{name}: tips with jobs"
        );
        assert_eq!(
            stream.finish(&mut unmatched),
            in_order_jobs,
            "{name}: job facts"
        );
    }
    for kind in [
        "tip_without_job",
        "job_without_marker",
        "job_without_node_template",
    ] {
        assert_eq!(
            unmatched.0.get(kind),
            in_order_unmatched.0.get(kind),
            "unmatched {kind}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&spill).unwrap().count(),
        0,
        "read back and removed"
    );
    std::fs::remove_dir(&spill).unwrap();
    for kind in [
        "share_without_verdict",
        "block_not_accepted_by_node",
        "accepted_share_without_difficulty",
    ] {
        assert_eq!(
            unmatched.0.get(kind),
            in_order.unmatched.get(kind),
            "unmatched {kind}"
        );
    }
}

/// The whole summary: the recorded run streamed as read live (a 2 s horizon), with live
/// summaries along the way, ends equal to the summary of its files read in one time order.
#[test]
fn a_recorded_run_streamed_gives_the_summary_of_one_time_order() {
    let (m, input) = fixture();
    let in_order = analysis::stream::compute(&m, &input.events, &input.samples);
    let mut stream = RunStream::new(&m, 2_000_000_000);
    let spill = std::env::temp_dir().join(format!("streaming-run-spill-{}", std::process::id()));
    stream.spill_to(&spill).unwrap();
    let mut now = input.events.iter().map(|r| r.t_ns).min().unwrap();
    for second in as_read_live(&input.events) {
        for r in second {
            stream.push(r);
        }
        now += 1_000_000_000;
        stream.advance(now);
        // A live summary does not disturb the stream.
        let so_far = Manifest {
            window_end_ns: now.min(m.window_end_ns),
            ..m.clone()
        };
        let live = stream.summary_at(&so_far, &input.samples);
        assert!(live.duration_s <= in_order.duration_s);
    }
    let (consumed, late) = stream.counts();
    assert_eq!(late, 0);
    assert!(consumed > 0);
    let streamed = stream.finish(&m, &input.samples);
    assert_eq!(
        serde_json::to_value(&streamed).unwrap(),
        serde_json::to_value(&in_order).unwrap()
    );
    for (name, side) in &streamed.sides {
        assert_eq!(
            side.samples.new_job_ms.values(),
            in_order.sides[name].samples.new_job_ms.values(),
            "{name}: the values themselves, read back from disk"
        );
    }
    assert_eq!(
        std::fs::read_dir(&spill).unwrap().count(),
        0,
        "read back and removed"
    );
    std::fs::remove_dir(&spill).unwrap();
    assert!(
        !in_order.verdict.is_empty(),
        "the fixture has a verdict to compare"
    );
}

/// The fixture's files read one by one through the streams, as a report reads a long run:
/// the summary of its files read in one time order, and every event seen once.
#[test]
fn a_run_directory_summarized_from_disk_gives_the_summary_of_one_time_order() {
    let (m, input) = fixture();
    let dir = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo and nextest"))
        .join("tests/fixtures/recorded-run");
    let in_order = analysis::stream::summarize(&dir).unwrap();
    let mut seen = 0;
    let (streamed, samples) = analysis::stream::summarize_dir(&dir, &m, |_| seen += 1).unwrap();
    assert_eq!(seen, input.events.len());
    assert_eq!(samples.len(), input.samples.len());
    assert_eq!(
        serde_json::to_value(&streamed).unwrap(),
        serde_json::to_value(&in_order).unwrap()
    );
    let left = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".analysis-"))
        .count();
    assert_eq!(left, 0, "the samples' folder removed");
}
