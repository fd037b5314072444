//! Builders for the golden tests: synthetic runs whose expected summaries are worked out
//! by hand in each test.

use crate::manifest::{LinkParams, Manifest, Sample, SideRoles};
use crate::stream::compute;
use crate::summary::Summary;
use probe::{Event, Record, ShareVerdict, TipCause};

pub const MS: u64 = 1_000_000;

pub fn rec(t_ns: u64, role: &str, event: Event) -> Record {
    Record {
        t_ns,
        role: role.into(),
        event,
    }
}

/// `rec` at `t_s` seconds.
pub fn rec_s(t_s: f64, role: &str, event: Event) -> Record {
    rec((t_s * 1e9) as u64, role, event)
}

/// A run with a 0-10 s window, a 100 ms link, the network node `node`, and `sides`.
pub fn manifest(sides: Vec<(String, SideRoles)>) -> Manifest {
    Manifest {
        scenario: "golden".into(),
        window_start_ns: 0,
        window_end_ns: 10_000 * MS,
        node_role: "node".into(),
        link: LinkParams {
            rtt_ms: 100.0,
            jitter_ms: 0.0,
            bandwidth_bps: None,
        },
        sides: sides.into_iter().collect(),
        baseline: None,
        start_order: Vec::new(),
        worth: Default::default(),
        stopped: None,
        clocks: Vec::new(),
        per_miner: Default::default(),
        interim: None,
        attack: None,
        awaiting_start: false,
        network_arrivals: Default::default(),
    }
}

/// `sv1`: two miners (`miners`), the pool `pool` decides, link `link`.
pub fn sv1_side() -> (String, SideRoles) {
    (
        "sv1".into(),
        SideRoles {
            config: model::scenario::Config::Sv1,
            miners: 2,
            miner_hashrate: None,
            miners_role: "miners".into(),
            pool_role: "pool".into(),
            backup_pool_role: None,
            link_role: "link".into(),
            link_rtt_ms: None,
            farm_node_role: None,
            farm_node_hop_ms: None,
            farm_node_lag: None,
            feed_link_role: None,
            job_declaration_role: None,
            roles: vec!["node".into(), "pool".into(), "miners".into()],
            pool_software: None,
            pool_policy: None,
            template_role: None,
        },
    )
}

/// `sv2-a`: two miners behind a JDC on the farm's own node `node-farm`.
pub fn farm_side() -> (String, SideRoles) {
    (
        "sv2-a".into(),
        SideRoles {
            config: model::scenario::Config::Sv2A,
            miners: 2,
            miner_hashrate: None,
            miners_role: "miners-a".into(),
            pool_role: "tap-a".into(),
            backup_pool_role: None,
            link_role: "link-a".into(),
            link_rtt_ms: Some(40.0),
            farm_node_role: Some("node-farm".into()),
            farm_node_hop_ms: Some(20.0),
            farm_node_lag: Some("20 ms (test)".into()),
            feed_link_role: None,
            job_declaration_role: Some("jdtap-a".into()),
            roles: vec!["node".into(), "node-farm".into(), "jdc-a".into()],
            pool_software: None,
            pool_policy: None,
            template_role: None,
        },
    )
}

pub fn tip(t_ns: u64, hash: &str, cause: TipCause) -> Record {
    tip_at("node", t_ns, hash, cause)
}

/// A tip change at the node `role` (a farm's own node: "node-farm").
pub fn tip_at(role: &str, t_ns: u64, hash: &str, cause: TipCause) -> Record {
    rec(
        t_ns,
        role,
        Event::TipChanged {
            height: 1,
            hash: hash.into(),
            prev_hash: "-".into(),
            cause,
            tx_count: 0,
            fees_sats: 0,
        },
    )
}

pub fn template(t_ns: u64, node: &str, marker: &str, prev: &str, value: u64) -> Record {
    rec(
        t_ns,
        node,
        Event::TemplateBuilt {
            template_id: 1,
            prev_hash: prev.into(),
            height: 2,
            value_sats: value,
            fees_sats: 0,
            tx_count: 1,
            weight: 1,
            marker_txid: marker.into(),
            asker: "pool".into(),
            queued_ns: 0,
            build_ns: 0,
        },
    )
}

/// A job to miner `miner` of the `sv1` side.
pub fn job(t_ns: u64, miner: u32, prev: &str, marker: Option<&str>) -> Record {
    job_to("miners", t_ns, miner, prev, marker)
}

pub fn job_to(role: &str, t_ns: u64, miner: u32, prev: &str, marker: Option<&str>) -> Record {
    rec(
        t_ns,
        role,
        Event::JobReceived {
            miner,
            job_id: "j".into(),
            prev_hash: prev.into(),
            marker_txid: marker.map(str::to_string),
            clean: true,
            work_id: None,
        },
    )
}

/// A share from miner `miner` of the `sv1` side.
pub fn share(t_ns: u64, miner: u32, id: u64, prev: &str, block: Option<&str>) -> Record {
    share_from("miners", t_ns, miner, id, prev, block)
}

pub fn share_from(
    role: &str,
    t_ns: u64,
    miner: u32,
    id: u64,
    prev: &str,
    block: Option<&str>,
) -> Record {
    rec(
        t_ns,
        role,
        Event::ShareSubmitted {
            miner,
            share_id: id,
            job_id: "j".into(),
            prev_hash: prev.into(),
            block_hash: block.map(str::to_string),
        },
    )
}

pub fn answered(t_ns: u64, miner: u32, id: u64, accepted: bool) -> Record {
    rec(
        t_ns,
        "miners",
        Event::ShareAnswered {
            miner,
            share_id: id,
            accepted,
            error: None,
        },
    )
}

/// A verdict on a share of difficulty 1.
pub fn judged(t_ns: u64, verdict: ShareVerdict) -> Record {
    judged_at(t_ns, verdict, Some(1.0))
}

/// A verdict on a share of `difficulty`.
pub fn judged_at(t_ns: u64, verdict: ShareVerdict, difficulty: Option<f64>) -> Record {
    rec(
        t_ns,
        "pool",
        Event::ShareJudged {
            worker: "w".into(),
            job_id: "j".into(),
            verdict,
            block_hash: None,
            reason: None,
            difficulty,
        },
    )
}

pub fn accepted_block(t_ns: u64, hash: &str) -> Record {
    rec(
        t_ns,
        "node",
        Event::BlockSubmitted {
            hash: hash.into(),
            prev_hash: "P".into(),
            height: Some(2),
            template_id: None,
            via: "submitblock".into(),
            reject_reason: None,
        },
    )
}

pub fn link_bytes(t_ns: u64, role: &str, up: u64, down: u64) -> Record {
    rec(
        t_ns,
        role,
        Event::LinkBytes {
            up_bytes: up,
            down_bytes: down,
        },
    )
}

/// The summary of events in memory ([`compute`]), after checking that the path a live run
/// takes (the events in the order given, the samples spilled to disk) gives the same:
/// every golden summary holds for both.
pub fn computed(m: &Manifest, events: &[Record], samples: &[Sample]) -> Summary {
    let in_memory = compute(m, events, samples);
    let mut stream = crate::stream::RunStream::new(m, 0);
    let spill = scratch_dir("spill");
    stream.spill_to(&spill).expect("a scratch directory");
    for r in events {
        stream.push(r.clone());
    }
    let streamed = stream.finish(m, samples);
    let left: Vec<_> = std::fs::read_dir(&spill).unwrap().collect();
    assert!(left.is_empty(), "spilled samples removed once read back");
    std::fs::remove_dir(&spill).unwrap();
    assert_eq!(
        serde_json::to_value(&streamed).unwrap(),
        serde_json::to_value(&in_memory).unwrap(),
        "spilled and in-memory differ"
    );
    in_memory
}

/// A new empty directory under the system's temporary one, unique in this process.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("analysis-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A verdict row of `metric`, `base` on the baseline and `side` on the side, with the
/// interval `ci` (significant when it excludes zero).
pub fn verdict_row(
    metric: crate::metric::Headline,
    base: f64,
    side: f64,
    ci: Option<(f64, f64)>,
) -> crate::headline::VerdictRow {
    crate::headline::VerdictRow {
        metric,
        sv1: Some(base),
        sv2: Some(side),
        delta: Some(side - base),
        pct: Some((side - base) / base * 100.0),
        ci,
        p_value: ci.map(|_| 0.001),
        units: (24, 24),
        significant: ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0),
        no_interval: None,
        method: Default::default(),
        modelled: None,
        assumed: None,
        tips_without_work: None,
        baseline_tips_without_work: None,
    }
}
