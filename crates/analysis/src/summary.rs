//! The `stratum-bench.summary.v1` schema and how it is computed.

use crate::manifest::{Manifest, Sample, EVENTS_DIR, MANIFEST_FILE, SAMPLES_FILE};
use anyhow::{Context, Result};
use probe::{Dist, Event, Record, ShareVerdict, TipCause};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

pub const SCHEMA: &str = "stratum-bench.summary.v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub scenario: String,
    pub duration_s: f64,
    pub link: LinkSummary,
    pub network: NetworkSummary,
    pub sides: BTreeMap<String, SideSummary>,
    /// Per SV2 side, every numeric metric it shares with the `sv1` side: both values,
    /// the difference and the difference in percent of SV1.
    #[serde(default)]
    pub deltas: BTreeMap<String, BTreeMap<String, Delta>>,
    /// Events that could not be tied to their counterpart, by kind.
    pub unmatched: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub sv2: f64,
    pub sv1: f64,
    pub delta: f64,
    /// `None` when the SV1 value is zero.
    pub pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkSummary {
    pub rtt_ms: f64,
    pub jitter_ms: f64,
    pub bandwidth_bps: Option<u64>,
    /// What the relay itself added past each chunk's due time, per link role.
    pub relay_lateness_ms: BTreeMap<String, LatenessSummary>,
    /// What each Noise-terminating tap added per frame (up: towards the pool).
    #[serde(default)]
    pub tap_latency_ms: BTreeMap<String, LatenessSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatenessSummary {
    pub up: Dist,
    pub down: Dist,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetworkSummary {
    pub template_value_sats: Dist,
    pub blocks: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SideSummary {
    pub config: String,
    pub miners: u32,
    /// The round trip of this side's link.
    #[serde(default)]
    pub link_rtt_ms: f64,
    pub shares: ShareCounts,
    pub blocks: BlockCounts,
    pub block_propagation_ms: Dist,
    pub new_job_ms: Dist,
    pub new_prevhash_job_ms: Dist,
    pub template_value_sats: Dist,
    pub bandwidth_bytes_per_s: Bandwidth,
    /// What the farm's job declarations met at the pool's JDS (configurations A, B).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_declaration: Option<JobDeclarationSummary>,
    pub roles: BTreeMap<String, RoleResources>,
    /// The per-event values behind the latency distributions (for histograms).
    #[serde(skip)]
    pub samples: LatencySamples,
}

#[derive(Debug, Clone, Default)]
pub struct LatencySamples {
    pub new_job_ms: Vec<f64>,
    pub new_prevhash_job_ms: Vec<f64>,
    pub block_propagation_ms: Vec<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ShareCounts {
    pub submitted: u64,
    /// Accepted where acceptance is decided (the pool).
    pub accepted: u64,
    /// Submitted on a job whose prev hash was no longer the node's tip at that moment,
    /// whatever the pool answered.
    pub stale: u64,
    /// Rejected by the pool for any reason but staleness (low difficulty, duplicate,
    /// unknown job, malformed).
    pub rejected: u64,
    /// What the pool itself called stale (it judges on arrival, after the link).
    pub pool_stale: u64,
    pub acceptance_pct: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BlockCounts {
    pub found: u64,
    pub accepted: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Bandwidth {
    pub farm: Direction,
    pub pool: Direction,
    /// Part of `farm.rx` that is the farm node's transaction relay, modelled rather than
    /// carried (configurations A, B; zero elsewhere).
    #[serde(default)]
    pub farm_tx_relay_modelled: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobDeclarationSummary {
    /// DeclareMiningJob messages the JDS answered in the window.
    pub declared: u64,
    pub accepted: u64,
    /// Refused, by the JDS's error code.
    pub rejected: BTreeMap<String, u64>,
    /// From a declaration leaving the farm to the JDS's answer arriving there.
    pub round_trip_ms: Dist,
    /// Transactions per declared job, besides the coinbase.
    pub tx_count: Dist,
    /// ProvideMissingTransactions requests, and the transactions they asked for.
    pub missing_tx_requests: u64,
    pub missing_txs: u64,
    /// Declarations a connection still waited on when it ended.
    pub unanswered: u64,
    /// JDC-JDS connections that ended in the window: a JDC falling back (after a refused
    /// job) or a JDS going away.
    pub connections_ended: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Direction {
    pub tx: f64,
    pub rx: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoleResources {
    pub cpu_pct: Dist,
    pub rss_bytes: Dist,
}

/// Reads a run directory and computes its summary.
pub fn summarize(run_dir: &Path) -> Result<Summary> {
    let manifest: Manifest = serde_json::from_str(
        &std::fs::read_to_string(run_dir.join(MANIFEST_FILE))
            .with_context(|| format!("{} has no {MANIFEST_FILE}", run_dir.display()))?,
    )
    .with_context(|| format!("{MANIFEST_FILE} is not a manifest of this version"))?;
    let mut events = Vec::new();
    let dir = run_dir.join(EVENTS_DIR);
    for entry in
        std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?
    {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            events.extend(probe::recorder::read_events(&path)?);
        }
    }
    let samples = read_samples(&run_dir.join(SAMPLES_FILE))?;
    Ok(compute(&manifest, &events, &samples))
}

fn read_samples(path: &Path) -> Result<Vec<Sample>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(Vec::new());
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a sample", path.display(), i + 1))
        })
        .collect()
}

/// The summary of events and samples already in memory (in any order).
pub fn compute(m: &Manifest, records: &[Record], samples: &[Sample]) -> Summary {
    let mut events: Vec<&Record> = records.iter().collect();
    events.sort_by_key(|r| r.t_ns);
    let in_window = |t: u64| t >= m.window_start_ns && t <= m.window_end_ns;
    let mut unmatched: BTreeMap<String, u64> = BTreeMap::new();

    // What the node saw, by identity.
    let mut templates: HashMap<&str, (u64, u64)> = HashMap::new(); // marker -> (t, value)
    let mut tips: Vec<(u64, &str)> = Vec::new();
    let mut accepted_blocks: HashMap<&str, u64> = HashMap::new();
    let mut network_values = Vec::new();
    // Templates come from the network's node and from the farms' own nodes.
    let template_roles: HashSet<&str> = std::iter::once(m.node_role.as_str())
        .chain(m.sides.values().filter_map(|s| s.farm_node_role.as_deref()))
        .collect();
    for r in events
        .iter()
        .filter(|r| template_roles.contains(r.role.as_str()))
    {
        if let Event::TemplateBuilt {
            marker_txid,
            value_sats,
            ..
        } = &r.event
        {
            templates.insert(marker_txid, (r.t_ns, *value_sats));
        }
    }
    for r in events.iter().filter(|r| r.role == m.node_role) {
        match &r.event {
            Event::TipChanged { hash, .. } => tips.push((r.t_ns, hash)),
            Event::BlockSubmitted {
                hash,
                reject_reason: None,
                ..
            } => {
                accepted_blocks.insert(hash, r.t_ns);
            }
            Event::NetworkTemplateValue { value_sats, .. } if in_window(r.t_ns) => {
                network_values.push(*value_sats as f64);
            }
            _ => {}
        }
    }
    let network_blocks = events
        .iter()
        .filter(|r| r.role == m.node_role && in_window(r.t_ns))
        .filter(|r| {
            matches!(
                r.event,
                Event::TipChanged {
                    cause: TipCause::Network | TipCause::Submitted,
                    ..
                }
            )
        })
        .count() as u64;

    let mut sides = BTreeMap::new();
    for (name, side) in &m.sides {
        let mut new_job = Vec::new();
        let mut new_prevhash = Vec::new();
        let mut value_weighted = Vec::new();
        let mut first_job_on_template: HashSet<(u32, &str)> = HashSet::new();
        let mut first_job_on_tip: HashMap<(u32, &str), u64> = HashMap::new();
        // The job each miner is on, to weight template values by time mined.
        let mut current: HashMap<u32, (u64, u64)> = HashMap::new(); // miner -> (since, value)
        let mut shares = ShareCounts::default();
        let mut blocks = BlockCounts::default();
        let mut propagation = Vec::new();

        for r in events.iter().filter(|r| r.role == side.miners_role) {
            match &r.event {
                Event::JobReceived {
                    miner,
                    prev_hash,
                    marker_txid,
                    ..
                } => {
                    first_job_on_tip
                        .entry((*miner, prev_hash))
                        .or_insert(r.t_ns);
                    let template = marker_txid
                        .as_deref()
                        .and_then(|mk| templates.get(mk).map(|t| (mk, *t)));
                    match template {
                        Some((mk, (t_built, value))) => {
                            if first_job_on_template.insert((*miner, mk)) && in_window(t_built) {
                                new_job.push(ms(r.t_ns - t_built.min(r.t_ns)));
                            }
                            if let Some((since, v)) = current.insert(*miner, (r.t_ns, value)) {
                                push_weighted(&mut value_weighted, since, r.t_ns, v, m);
                            }
                        }
                        None => {
                            *unmatched
                                .entry("job_without_node_template".into())
                                .or_default() += 1
                        }
                    }
                }
                Event::ShareSubmitted {
                    prev_hash,
                    block_hash,
                    ..
                } if in_window(r.t_ns) => {
                    shares.submitted += 1;
                    if tip_at(&tips, r.t_ns).is_some_and(|tip| tip != prev_hash) {
                        shares.stale += 1;
                    }
                    if let Some(hash) = block_hash {
                        blocks.found += 1;
                        match accepted_blocks.get(hash.as_str()) {
                            Some(t_accept) => {
                                blocks.accepted += 1;
                                propagation.push(ms(t_accept.saturating_sub(r.t_ns)));
                            }
                            None => {
                                *unmatched
                                    .entry("block_not_accepted_by_node".into())
                                    .or_default() += 1
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for (since, value) in current.values() {
            push_weighted(&mut value_weighted, *since, m.window_end_ns, *value, m);
        }
        // Every miner's first job on every new tip, from the moment the node had it.
        for (t_tip, hash) in tips.iter().filter(|(t, _)| in_window(*t)) {
            for miner in 0..side.miners {
                match first_job_on_tip.get(&(miner, *hash)) {
                    Some(t_job) => new_prevhash.push(ms(t_job.saturating_sub(*t_tip))),
                    None => *unmatched.entry("tip_without_job".into()).or_default() += 1,
                }
            }
        }
        let mut judged = 0;
        for r in events
            .iter()
            .filter(|r| r.role == side.pool_role && in_window(r.t_ns))
        {
            if let Event::ShareJudged { verdict, .. } = r.event {
                judged += 1;
                match verdict {
                    ShareVerdict::Accepted => shares.accepted += 1,
                    ShareVerdict::Stale => shares.pool_stale += 1,
                    _ => shares.rejected += 1,
                }
            }
        }
        // A JDC is a pool to its miners: only shares that meet the upstream channel's
        // target go on to the pool, so most shares get no pool verdict, by design.
        if shares.submitted > judged && side.job_declaration_role.is_none() {
            *unmatched.entry("share_without_verdict".into()).or_default() +=
                shares.submitted - judged;
        }
        shares.acceptance_pct =
            (judged > 0).then(|| shares.accepted as f64 * 100.0 / judged as f64);

        let roles = side
            .roles
            .iter()
            .map(|role| {
                let mine: Vec<&Sample> = samples
                    .iter()
                    .filter(|s| &s.role == role && in_window(s.t_ns))
                    .collect();
                let cpu: Vec<f64> = mine.iter().map(|s| s.cpu_pct).collect();
                let rss: Vec<f64> = mine.iter().map(|s| s.rss_bytes as f64).collect();
                (
                    role.clone(),
                    RoleResources {
                        cpu_pct: Dist::of(&cpu),
                        rss_bytes: Dist::of(&rss),
                    },
                )
            })
            .collect();

        sides.insert(
            name.clone(),
            SideSummary {
                config: side.config.clone(),
                miners: side.miners,
                link_rtt_ms: side.link_rtt_ms.unwrap_or(m.link.rtt_ms),
                shares,
                blocks,
                block_propagation_ms: Dist::of(&propagation),
                new_job_ms: Dist::of(&new_job),
                new_prevhash_job_ms: Dist::of(&new_prevhash),
                template_value_sats: weighted_dist(&mut value_weighted),
                bandwidth_bytes_per_s: {
                    let mut b =
                        bandwidth(&link_counters(events.iter().copied(), &side.link_role), m);
                    if let Some(farm_node) = &side.farm_node_role {
                        let relayed = tx_relay_counters(events.iter().copied(), farm_node);
                        b.farm_tx_relay_modelled = bandwidth(&relayed, m).farm.rx;
                        b.farm.rx += b.farm_tx_relay_modelled;
                    }
                    b
                },
                job_declaration: side
                    .job_declaration_role
                    .as_deref()
                    .map(|role| job_declaration(&events, role, in_window)),
                roles,
                samples: LatencySamples {
                    new_job_ms: new_job,
                    new_prevhash_job_ms: new_prevhash,
                    block_propagation_ms: propagation,
                },
            },
        );
    }

    // What the relays and taps themselves added, per role and direction.
    let per_role =
        |pick: fn(&Event) -> Option<(&Dist, &Dist)>| -> BTreeMap<String, LatenessSummary> {
            events
                .iter()
                .filter_map(|r| {
                    let (up, down) = pick(&r.event)?;
                    Some((
                        r.role.clone(),
                        LatenessSummary {
                            up: up.clone(),
                            down: down.clone(),
                        },
                    ))
                })
                .collect()
        };
    let relay_lateness_ms = per_role(|e| match e {
        Event::LinkLateness { up_ms, down_ms } => Some((up_ms, down_ms)),
        _ => None,
    });
    let tap_latency_ms = per_role(|e| match e {
        Event::TapLatency { up_ms, down_ms } => Some((up_ms, down_ms)),
        _ => None,
    });
    for r in &events {
        if let Event::RoleExited { name, .. } = &r.event {
            *unmatched.entry(format!("role_exited:{name}")).or_default() += 1;
        }
    }

    Summary {
        schema: SCHEMA.into(),
        scenario: m.scenario.clone(),
        duration_s: (m.window_end_ns - m.window_start_ns) as f64 / 1e9,
        link: LinkSummary {
            rtt_ms: m.link.rtt_ms,
            jitter_ms: m.link.jitter_ms,
            bandwidth_bps: m.link.bandwidth_bps,
            relay_lateness_ms,
            tap_latency_ms,
        },
        network: NetworkSummary {
            template_value_sats: Dist::of(&network_values),
            blocks: network_blocks,
        },
        deltas: deltas(&sides),
        sides,
        unmatched,
    }
}

/// Every numeric metric an SV2 side shares with the SV1 side, as SV2 against SV1.
pub fn deltas(sides: &BTreeMap<String, SideSummary>) -> BTreeMap<String, BTreeMap<String, Delta>> {
    let Some(sv1) = sides.get("sv1") else {
        return BTreeMap::new();
    };
    let base = numeric_leaves(&serde_json::to_value(sv1).expect("a summary serialises"));
    sides
        .iter()
        .filter(|(name, _)| name.starts_with("sv2"))
        .map(|(name, side)| {
            let ours = numeric_leaves(&serde_json::to_value(side).expect("a summary serialises"));
            let rows = ours
                .into_iter()
                .filter(|(path, _)| path != "miners")
                .filter_map(|(path, sv2)| {
                    let sv1 = *base.get(&path)?;
                    let delta = sv2 - sv1;
                    let pct = (sv1 != 0.0).then(|| delta / sv1.abs() * 100.0);
                    Some((
                        path,
                        Delta {
                            sv2,
                            sv1,
                            delta,
                            pct,
                        },
                    ))
                })
                .collect();
            (name.clone(), rows)
        })
        .collect()
}

/// The numbers of a JSON tree by dotted path (`shares.accepted`, `new_job_ms.p50`).
fn numeric_leaves(v: &serde_json::Value) -> BTreeMap<String, f64> {
    fn walk(v: &serde_json::Value, path: &mut Vec<String>, out: &mut BTreeMap<String, f64>) {
        match v {
            serde_json::Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    out.insert(path.join("."), x);
                }
            }
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    path.push(k.clone());
                    walk(child, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// The node's tip at `t` (`tips` sorted by time); `None` before the first tip change.
fn tip_at<'a>(tips: &[(u64, &'a str)], t: u64) -> Option<&'a str> {
    let i = tips.partition_point(|(t_tip, _)| *t_tip <= t);
    i.checked_sub(1).map(|i| tips[i].1)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Adds the part of `[from, to)` inside the window, weighted by its length.
fn push_weighted(out: &mut Vec<(f64, f64)>, from: u64, to: u64, value: u64, m: &Manifest) {
    let from = from.max(m.window_start_ns);
    let to = to.min(m.window_end_ns);
    if to > from {
        out.push((value as f64, (to - from) as f64));
    }
}

/// A time-weighted distribution: each value counts for as long as it was mined on.
fn weighted_dist(samples: &mut [(f64, f64)]) -> Dist {
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = samples.iter().map(|s| s.1).sum();
    if samples.is_empty() || total <= 0.0 {
        return Dist::of(&[]);
    }
    let quantile = |q: f64| {
        let mut seen = 0.0;
        for (v, w) in samples.iter() {
            seen += w;
            if seen >= q * total {
                return Some(*v);
            }
        }
        samples.last().map(|s| s.0)
    };
    Dist {
        count: samples.len(),
        mean: Some(samples.iter().map(|(v, w)| v * w).sum::<f64>() / total),
        p50: quantile(0.5),
        p90: quantile(0.9),
        p99: quantile(0.99),
        max: samples.last().map(|s| s.0),
    }
}

/// A link role's cumulative byte counters: (time, up bytes, down bytes), in time order.
pub fn link_counters<'a>(
    events: impl IntoIterator<Item = &'a Record>,
    link_role: &str,
) -> Vec<(u64, u64, u64)> {
    let mut c: Vec<(u64, u64, u64)> = events
        .into_iter()
        .filter(|r| r.role == link_role)
        .filter_map(|r| match r.event {
            Event::LinkBytes {
                up_bytes,
                down_bytes,
            } => Some((r.t_ns, up_bytes, down_bytes)),
            _ => None,
        })
        .collect();
    c.sort_by_key(|x| x.0);
    c
}

/// A farm node's modelled transaction relay as link counters (all of it received).
fn tx_relay_counters<'a>(
    events: impl IntoIterator<Item = &'a Record>,
    farm_node: &str,
) -> Vec<(u64, u64, u64)> {
    events
        .into_iter()
        .filter(|r| r.role == farm_node)
        .filter_map(|r| match r.event {
            Event::TxRelayModelled { bytes } => Some((r.t_ns, 0, bytes)),
            _ => None,
        })
        .collect()
}

/// What a JDS tap saw in the window.
fn job_declaration(
    events: &[&Record],
    role: &str,
    in_window: impl Fn(u64) -> bool,
) -> JobDeclarationSummary {
    let mut j = JobDeclarationSummary {
        declared: 0,
        accepted: 0,
        rejected: BTreeMap::new(),
        round_trip_ms: Dist::of(&[]),
        tx_count: Dist::of(&[]),
        missing_tx_requests: 0,
        missing_txs: 0,
        unanswered: 0,
        connections_ended: 0,
    };
    let (mut rtts, mut txs) = (Vec::new(), Vec::new());
    for r in events
        .iter()
        .filter(|r| r.role == role && in_window(r.t_ns))
    {
        match &r.event {
            Event::JobDeclared {
                round_trip_ms,
                tx_count,
                error,
                ..
            } => {
                j.declared += 1;
                rtts.push(*round_trip_ms);
                txs.push(*tx_count as f64);
                match error {
                    None => j.accepted += 1,
                    Some(code) => *j.rejected.entry(code.clone()).or_default() += 1,
                }
            }
            Event::MissingTransactionsRequested { count, .. } => {
                j.missing_tx_requests += 1;
                j.missing_txs += *count as u64;
            }
            Event::DeclarationsUnanswered { count } => j.unanswered += *count as u64,
            Event::TapConnectionEnded { .. } => j.connections_ended += 1,
            _ => {}
        }
    }
    j.round_trip_ms = Dist::of(&rtts);
    j.tx_count = Dist::of(&txs);
    j
}

/// Bytes per second between successive counters: (time, up, down).
pub fn link_rates(counters: &[(u64, u64, u64)]) -> Vec<(u64, f64, f64)> {
    counters
        .windows(2)
        .filter(|w| w[1].0 > w[0].0)
        .map(|w| {
            let secs = (w[1].0 - w[0].0) as f64 / 1e9;
            (
                w[1].0,
                (w[1].1 - w[0].1) as f64 / secs,
                (w[1].2 - w[0].2) as f64 / secs,
            )
        })
        .collect()
}

/// Bytes per second across the link in the window, from its cumulative counters.
fn bandwidth(counters: &[(u64, u64, u64)], m: &Manifest) -> Bandwidth {
    let at = |t: u64| {
        counters
            .iter()
            .rev()
            .find(|c| c.0 <= t)
            .copied()
            .unwrap_or((t, 0, 0))
    };
    let (start, end) = (at(m.window_start_ns), at(m.window_end_ns));
    let secs = (end.0.saturating_sub(start.0)) as f64 / 1e9;
    if secs <= 0.0 {
        return Bandwidth::default();
    }
    let up = (end.1 - start.1) as f64 / secs;
    let down = (end.2 - start.2) as f64 / secs;
    Bandwidth {
        farm: Direction { tx: up, rx: down },
        pool: Direction { tx: down, rx: up },
        farm_tx_relay_modelled: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{LinkParams, SideRoles};

    fn rec(t_ns: u64, role: &str, event: Event) -> Record {
        Record {
            t_ns,
            role: role.into(),
            event,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn correlates_by_identity_and_counts_the_unmatched() {
        let m = Manifest {
            scenario: "t".into(),
            window_start_ns: 0,
            window_end_ns: 10_000 * MS,
            node_role: "node".into(),
            link: LinkParams {
                rtt_ms: 100.0,
                jitter_ms: 0.0,
                bandwidth_bps: None,
            },
            sides: BTreeMap::from([(
                "sv1".into(),
                SideRoles {
                    config: "sv1".into(),
                    miners: 2,
                    miners_role: "miners".into(),
                    pool_role: "pool".into(),
                    link_role: "link".into(),
                    link_rtt_ms: None,
                    farm_node_role: None,
                    job_declaration_role: None,
                    roles: vec!["pool".into()],
                },
            )]),
        };
        let job = |t, miner, prev: &str, marker: &str| {
            rec(
                t,
                "miners",
                Event::JobReceived {
                    miner,
                    job_id: "1".into(),
                    prev_hash: prev.into(),
                    marker_txid: Some(marker.into()),
                    clean: true,
                },
            )
        };
        let events = vec![
            rec(
                1000 * MS,
                "node",
                Event::TipChanged {
                    height: 1,
                    hash: "P".into(),
                    prev_hash: "O".into(),
                    cause: TipCause::Network,
                    tx_count: 0,
                    fees_sats: 0,
                },
            ),
            rec(
                1010 * MS,
                "node",
                Event::TemplateBuilt {
                    template_id: 1,
                    prev_hash: "P".into(),
                    height: 2,
                    value_sats: 100,
                    fees_sats: 0,
                    tx_count: 1,
                    weight: 1,
                    marker_txid: "A".into(),
                },
            ),
            job(1070 * MS, 0, "P", "A"),
            job(1090 * MS, 1, "P", "A"),
            // A second template on the same tip, 5 s later, worth more.
            rec(
                6000 * MS,
                "node",
                Event::TemplateBuilt {
                    template_id: 2,
                    prev_hash: "P".into(),
                    height: 2,
                    value_sats: 300,
                    fees_sats: 200,
                    tx_count: 2,
                    weight: 1,
                    marker_txid: "B".into(),
                },
            ),
            job(6050 * MS, 0, "P", "B"),
            job(6060 * MS, 1, "P", "UNKNOWN"),
            rec(
                7000 * MS,
                "miners",
                Event::ShareSubmitted {
                    miner: 0,
                    share_id: 1,
                    job_id: "1".into(),
                    prev_hash: "P".into(),
                    block_hash: Some("BLK".into()),
                },
            ),
            rec(
                7080 * MS,
                "node",
                Event::BlockSubmitted {
                    hash: "BLK".into(),
                    prev_hash: "P".into(),
                    height: Some(2),
                    template_id: Some(2),
                    via: "submitblock".into(),
                    reject_reason: None,
                },
            ),
            rec(
                7081 * MS,
                "node",
                Event::TipChanged {
                    height: 2,
                    hash: "BLK".into(),
                    prev_hash: "P".into(),
                    cause: TipCause::Submitted,
                    tx_count: 0,
                    fees_sats: 0,
                },
            ),
            rec(
                7050 * MS,
                "pool",
                Event::ShareJudged {
                    worker: "w".into(),
                    job_id: "1".into(),
                    verdict: ShareVerdict::Accepted,
                    block_hash: Some("BLK".into()),
                },
            ),
            rec(
                8000 * MS,
                "miners",
                Event::ShareSubmitted {
                    miner: 1,
                    share_id: 2,
                    job_id: "1".into(),
                    prev_hash: "P".into(),
                    block_hash: None,
                },
            ),
        ];
        let s = compute(&m, &events, &[]);
        let side = &s.sides["sv1"];
        assert_eq!(side.new_job_ms.count, 3);
        assert_eq!(side.new_job_ms.max, Some(80.0));
        assert_eq!(side.new_prevhash_job_ms.count, 2);
        assert_eq!(side.new_prevhash_job_ms.p50, Some(70.0));
        assert_eq!(side.block_propagation_ms.p50, Some(80.0));
        assert_eq!((side.blocks.found, side.blocks.accepted), (1, 1));
        assert_eq!((side.shares.submitted, side.shares.accepted), (2, 1));
        assert_eq!(side.shares.stale, 1, "the share on P after BLK");
        assert_eq!(s.unmatched["job_without_node_template"], 1);
        assert_eq!(s.unmatched["share_without_verdict"], 1);
        assert_eq!(
            s.unmatched["tip_without_job"], 2,
            "no miner got a job on BLK"
        );
        // Miner 0 mined value 100 for 4.98 s and 300 for 3.95 s; miner 1 100 for 8.91 s.
        let mean = side.template_value_sats.mean.unwrap();
        let expected =
            (100.0 * 4980.0 + 300.0 * 3950.0 + 100.0 * 8910.0) / (4980.0 + 3950.0 + 8910.0);
        assert!((mean - expected).abs() < 1e-6, "{mean} vs {expected}");
        assert_eq!(s.network.blocks, 2);
    }
}
