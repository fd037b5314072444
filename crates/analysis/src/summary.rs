//! The `stratum-bench.summary.v1` schema and how it is computed.

use crate::bandwidth::{
    block_relay_counters, farm_rate_series, link_counters, side_bandwidth, tx_relay_counters,
    FarmNodeTraffic,
};
use crate::farm_lag::FarmNodeLag;
use crate::headline::{verdict, VerdictRow, BASELINE};
use crate::jobs::JobFacts;
use crate::manifest::{Manifest, Sample, SideRoles, Stopped, Window};
use crate::outage::{side_outages, SideOutage};
use crate::paths::path_readings;
use crate::resources::{pool_reading, resources, series_dist, Emulation, PoolCosts};
use crate::security::side_security;
use crate::shares::ShareFacts;
use crate::stats::{cluster_mean, series_mean, Clustered, Estimate};
use crate::timeline::Timeline;
use crate::worth::{seed_reading, total_interval, worth, SeedReading, WorthAssumptions, WorthRow};
use crate::Unmatched;
use probe::{Dist, Event, Record};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::bandwidth::{link_rates, Bandwidth, Direction};
pub use crate::declaration::JobDeclarationSummary;
pub use crate::resources::RoleResources;
pub use crate::shares::{BlockCounts, PoolWork, ShareCounts};
pub use crate::side::{Delta, FarmRates, LatencySamples, PoolRefused, SideSummary};

pub const SCHEMA: &str = "stratum-bench.summary.v1";
/// The role name of the harness's own events and CPU and memory samples.
pub const HARNESS_ROLE: &str = "harness";
/// The `unmatched` kind of a role that exited during the run, before its name.
pub const ROLE_EXITED: &str = "role_exited:";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub scenario: String,
    pub duration_s: f64,
    /// The side every other is set against in `verdict`, `worth` and `deltas`.
    #[serde(default = "baseline_default")]
    pub baseline: String,
    pub link: LinkSummary,
    pub network: NetworkSummary,
    pub sides: BTreeMap<String, SideSummary>,
    /// Per SV2 side, every numeric metric it shares with the `sv1` side: both values,
    /// the difference and the difference in percent of SV1.
    #[serde(default)]
    pub deltas: BTreeMap<String, BTreeMap<String, Delta>>,
    /// Per SV2 side, the headline metrics against `sv1` with their 95% intervals and
    /// significance under false discovery rate control (`analysis::headline`).
    #[serde(default)]
    pub verdict: BTreeMap<String, Vec<VerdictRow>>,
    /// Per side in the verdict, what its differences are worth to a farm, in sats a day
    /// (`analysis::worth`), and what that is computed for.
    #[serde(default)]
    pub worth: BTreeMap<String, Vec<WorthRow>>,
    #[serde(default)]
    pub worth_assumptions: WorthAssumptions,
    /// The published tool's reading, for comparison: minutes a year a side saves, as it
    /// computed them and as they follow from the blocks of a year.
    #[serde(default)]
    pub seed_reading: BTreeMap<String, SeedReading>,
    /// Per side in the verdict, the one line an operator acts on.
    #[serde(default)]
    pub conclusions: BTreeMap<String, crate::conclusion::Conclusion>,
    /// The harness's own process (it reads every event the roles write): what a run's
    /// measuring costs, and whether that stays flat over a long run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<RoleResources>,
    /// The host's CPU, memory and filesystem over the window, and a warning when it was
    /// saturated (`analysis::host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::host::HostHealth>,
    /// A deployment's other hosts, by site (`farm`): their roles' own reports of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_hosts: BTreeMap<String, crate::host::HostHealth>,
    /// Per side, what an attacker on its link took and how soon the side noticed
    /// (`analysis::security`), when the scenario planned one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security: BTreeMap<String, crate::security::SideSecurity>,
    /// Per side, what each outage of its pool or JDS cost (`analysis::outage`), when the
    /// scenario planned any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outages: BTreeMap<String, Vec<SideOutage>>,
    /// Events that could not be tied to their counterpart, by kind.
    pub unmatched: BTreeMap<String, u64>,
    /// What ended the measured window, when the run could end it early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// With roles on clocks other than the harness's: the most any latency between two
    /// roles may be off through the clocks' estimated offsets (`analysis::clocks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_uncertainty_ms: Option<f64>,
    /// The latencies that uncertainty blurs by over 10% of their median.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clock_limited: Vec<crate::clocks::ClockLimited>,
    /// The network's best template value in time, (seconds from the window's start,
    /// sats): drawn (`charts::Charts`), not summarised.
    #[serde(skip)]
    pub network_best: Vec<(f64, f64)>,
}

impl Summary {
    /// Why the window's latencies should be read with care, when a host the run's roles
    /// ran on was saturated: the harness's, or another a deployment or swarm put roles on.
    pub fn host_warning(&self) -> Option<String> {
        let warnings: Vec<String> = (self.host.iter())
            .filter_map(|h| h.warning.clone())
            .chain(self.other_hosts.iter().filter_map(|(site, h)| {
                Some(format!("the {site} site's host: {}", h.warning.as_ref()?))
            }))
            .collect();
        (!warnings.is_empty()).then(|| warnings.join("; "))
    }

    /// Each side whose pool stopped taking connections, in words: its figures from then on
    /// are of a pool not serving.
    pub fn pool_warnings(&self) -> Vec<String> {
        (self.sides.iter())
            .filter_map(|(side, s)| Some(s.pool_refused?.in_words(side)))
            .collect()
    }
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
    /// The window over its blocks: the simulated pace every stale share and stale-work
    /// share of this run is at (mainnet's is 600 s); `None` without a block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_interval_s: Option<f64>,
    /// How the rest of the network's blocks arrived (the manifest's): said beside the pace
    /// when they were regular, which no tip of the real network is.
    #[serde(default)]
    pub arrivals: model::network::Arrivals,
    /// The network's node: shared by every side, so it is in no side's roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<RoleResources>,
    /// The network node's template builds by who asked (a pool's RPC user, or `tdp`,
    /// `ipc`): identical sides stay alike only while none waits on another's build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub template_builds: Vec<TemplateBuilds>,
}

/// One asker's template builds in the window: how long each waited for the node's state
/// (another face's hold of it) and how long the build took, in ms.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TemplateBuilds {
    pub asker: String,
    pub builds: usize,
    pub queued_ms: Dist,
    pub build_ms: Dist,
}

/// What befell each side's link, per side: what an attacker took (`analysis::security`)
/// and what outages cost (`analysis::outage`).
struct OnPath {
    security: BTreeMap<String, crate::security::SideSecurity>,
    outages: BTreeMap<String, Vec<SideOutage>>,
}

fn on_path(
    m: &Manifest,
    facts: &BTreeMap<String, (JobFacts, ShareFacts)>,
    block_value: f64,
) -> OnPath {
    let window = m.window();
    let security = match &m.attack {
        Some(planned) => (facts.iter())
            .filter_map(|(name, (_, shares))| {
                let roles = m.sides.get(name)?;
                let side = side_security(
                    roles,
                    &shares.attack,
                    planned,
                    window,
                    &m.worth,
                    block_value,
                )?;
                Some((name.clone(), side))
            })
            .collect(),
        None => BTreeMap::new(),
    };
    let outages: BTreeMap<String, Vec<SideOutage>> = (facts.iter())
        .filter_map(|(name, (_, shares))| {
            let roles = m.sides.get(name)?;
            let factors = &m.per_miner.hashrate_factor;
            let side = side_outages(
                roles,
                &shares.outages,
                factors,
                window,
                &m.worth,
                block_value,
            );
            (!side.is_empty()).then(|| (name.clone(), side))
        })
        .collect();
    OnPath { security, outages }
}

/// Writes `summary` as a run directory's `summary.json`.
pub fn write(dir: &std::path::Path, summary: &Summary) -> anyhow::Result<()> {
    use anyhow::Context;
    let path = dir.join(model::run_dir::SUMMARY_FILE);
    std::fs::write(&path, serde_json::to_string_pretty(summary)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Whether the summary reads `event` beyond the job and share rules: what a streaming run
/// keeps of its events. Those kept grow in number with time, not with miners or shares
/// (a connection's end, once per miner, is the exception); per-connection relays of jobs,
/// tips and difficulties are not read, and would be millions in a long run. Every kind is
/// named, so a new one must be decided on.
pub fn kept_beyond_jobs_and_shares(event: &Event) -> bool {
    match event {
        Event::TipChanged { .. }
        | Event::TemplateBuilt { .. }
        | Event::TemplateFetched { .. }
        | Event::BlockSubmitted { .. }
        | Event::NetworkBlockSent { .. }
        | Event::IpcCallAnswered { .. }
        | Event::NetworkTemplateValue { .. }
        | Event::PoolTemplate { .. }
        | Event::JobDeclared { .. }
        | Event::DeclarationsUnanswered { .. }
        | Event::TapConnectionEnded { .. }
        | Event::MissingTransactionsRequested { .. }
        | Event::TxRelayModelled { .. }
        | Event::BlockRelayModelled { .. }
        | Event::LinkBytes { .. }
        | Event::LinkLateness { .. }
        | Event::TapLatency { .. }
        | Event::TapUpstreamUnreachable { .. }
        | Event::RoleExited { .. } => true,
        Event::ClockAnchor { .. }
        | Event::JobBroadcast { .. }
        | Event::JobWritten { .. }
        | Event::Resources { .. }
        | Event::JobReceived { .. }
        | Event::ShareSubmitted { .. }
        | Event::ShareAnswered { .. }
        | Event::ShareJudged { .. }
        | Event::Sv1JobRelayed { .. }
        | Event::Sv1DifficultySet { .. }
        | Event::TapMalformedLines { .. }
        | Event::TapBytes { .. }
        | Event::NodeBlockAnnounced { .. }
        // The tip timeline is the node's ZMQ, the same for every side; what the Mining
        // IPC told a pool of its tip is there to check the tap.
        | Event::IpcTipSeen { .. }
        | Event::NewPrevHashRelayed { .. }
        | Event::Sv2JobRelayed { .. }
        | Event::EncryptedRead { .. }
        // An attack's and an outage's facts are gathered with the shares they took
        // (`ShareFacts::on_path`).
        | Event::AttackBegan { .. }
        | Event::AttackApplied { .. }
        | Event::AttackedConnectionClosed { .. }
        | Event::FaultBegan { .. }
        | Event::FaultEnded { .. }
        | Event::PoolSwitched { .. } => false,
    }
}

/// The summary from each side's job and share facts, the nodes' `timeline` and the other
/// events (`events` in time order; those of the job and share rules may be left out).
pub fn assemble(
    m: &Manifest,
    timeline: &Timeline,
    events: &[&Record],
    samples: &[Sample],
    mut facts: BTreeMap<String, (JobFacts, ShareFacts)>,
    mut unmatched: Unmatched,
) -> Summary {
    let window = m.window();
    let network_value = series_dist(&timeline.network_values);
    // A block is worth what the network's templates were, unless the user said.
    let block_value = m
        .worth
        .block_value_sats
        .or(network_value.mean)
        .unwrap_or_default();
    let OnPath { security, outages } = on_path(m, &facts, block_value);
    let mut sides: BTreeMap<String, SideSummary> = (m.sides.iter())
        .map(|(name, side)| {
            let facts = facts.remove(name).unwrap_or_default();
            let at = SideInputs {
                m,
                timeline,
                events,
                samples,
                network_value_mean: network_value.mean,
            };
            let mut summary = side_summary(&at, side, facts);
            summary.pool_costs = summary.pool_costs_over(window.secs());
            (name.clone(), summary)
        })
        .collect();

    for r in events {
        if let Event::RoleExited { name, .. } = &r.event {
            unmatched.add(&format!("{ROLE_EXITED}{name}"), 1);
        }
    }
    let sampled = |role: &str| {
        samples
            .iter()
            .any(|s| s.role == role)
            .then(|| resources(samples, role, window))
    };
    let baseline = m.baseline.clone().unwrap_or_else(baseline_default);
    let lags: BTreeMap<String, FarmNodeLag> = (m.sides.iter())
        .filter_map(|(name, roles)| {
            let assumed = roles.farm_node_lag.as_deref()?;
            let side = &sides.get(name)?.samples;
            let base = sides.get(&baseline).filter(|_| *name != baseline);
            Some((
                name.clone(),
                FarmNodeLag::of(assumed, side, base.map(|b| &b.samples)),
            ))
        })
        .collect();
    for (name, lag) in &lags {
        if let Some(side) = sides.get_mut(name) {
            side.farm_node_lag = Some(lag.clone());
        }
    }
    let verdict_rows = verdict(&sides, &baseline);
    let worth_rows: BTreeMap<String, Vec<WorthRow>> = (verdict_rows.iter())
        .map(|(side, rows)| (side.clone(), worth(rows, &m.worth, block_value)))
        .collect();
    // Each total's interval resamples the tips its rows share, on both sides at once.
    let total_intervals: BTreeMap<String, (f64, f64)> = (verdict_rows.iter())
        .filter_map(|(name, rows)| {
            let (base, side) = (&sides.get(&baseline)?.samples, &sides.get(name)?.samples);
            let ci = total_interval(rows, base, side, &m.worth, block_value)?;
            Some((name.clone(), ci))
        })
        .collect();
    let mut conclusions = crate::conclusion::conclusions(
        &verdict_rows,
        &worth_rows,
        &total_intervals,
        &m.worth,
        m.worth.farm_revenue_per_day(block_value),
        &lags,
    );
    if let Some(base) = sides.get(&baseline) {
        for (name, c) in &mut conclusions {
            let Some(side) = sides.get(name) else {
                continue;
            };
            // A farm proxy that aggregates its miners sends the pool only some shares.
            let per_share = !(side.config.declares_jobs() || base.config.declares_jobs());
            c.pool = pool_reading(&side.pool_costs, &base.pool_costs, per_share, &baseline);
        }
    }
    // A pool that stopped serving, on either side of a comparison, comes before its worth.
    for (name, c) in &mut conclusions {
        let stopped: Vec<String> = [name, &baseline]
            .into_iter()
            .filter_map(|s| {
                let refused = sides.get(s)?.pool_refused.filter(PoolRefused::in_window);
                Some(refused?.briefly(s))
            })
            .collect();
        if !stopped.is_empty() {
            let part = format!("not a reading of the protocol: {}", stopped.join(", "));
            c.lead_with(name, &part);
        }
    }
    let clock_uncertainty_ms = crate::clocks::cross_clock_uncertainty_ms(&m.clocks);
    let clock_limited = crate::clocks::clock_limited(&sides, clock_uncertainty_ms);
    Summary {
        schema: SCHEMA.into(),
        scenario: m.scenario.clone(),
        duration_s: window.secs(),
        baseline: baseline.clone(),
        link: LinkSummary {
            rtt_ms: m.link.rtt_ms,
            jitter_ms: m.link.jitter_ms,
            bandwidth_bps: m.link.bandwidth_bps,
            relay_lateness_ms: per_role(events, |e| match e {
                Event::LinkLateness { up_ms, down_ms } => Some((up_ms, down_ms)),
                _ => None,
            }),
            tap_latency_ms: per_role(events, |e| match e {
                Event::TapLatency { up_ms, down_ms } => Some((up_ms, down_ms)),
                _ => None,
            }),
        },
        network: NetworkSummary {
            template_value_sats: network_value,
            blocks: timeline.network_blocks,
            block_interval_s: (timeline.network_blocks > 0)
                .then(|| window.secs() / timeline.network_blocks as f64),
            arrivals: m.network_arrivals,
            node: sampled(&m.node_role),
            template_builds: (timeline.template_builds.iter())
                .map(|(asker, times)| TemplateBuilds {
                    asker: asker.to_string(),
                    builds: times.build_ms.len(),
                    queued_ms: Dist::of(&times.queued_ms),
                    build_ms: Dist::of(&times.build_ms),
                })
                .collect(),
        },
        deltas: deltas(&sides, &baseline),
        worth: worth_rows.clone(),
        seed_reading: (verdict_rows.iter())
            .map(|(side, rows)| (side.clone(), seed_reading(rows, &m.worth)))
            .collect(),
        conclusions,
        worth_assumptions: WorthAssumptions {
            block_value_sats: Some(block_value),
            ..m.worth.clone()
        },
        verdict: verdict_rows,
        sides,
        harness: sampled(HARNESS_ROLE),
        host: crate::host::health(samples, window),
        other_hosts: crate::host::other_hosts(samples, window),
        security,
        outages,
        unmatched: unmatched.0,
        stopped: m.stopped.clone(),
        network_best: (events.iter())
            .filter_map(|r| match r.event {
                Event::NetworkTemplateValue { value_sats, .. } => Some((
                    (r.t_ns as f64 - m.window_start_ns as f64) / 1e9,
                    value_sats as f64,
                )),
                _ => None,
            })
            .collect(),
        clock_uncertainty_ms,
        clock_limited,
    }
}

/// What every side's summary is computed from.
struct SideInputs<'a> {
    m: &'a Manifest,
    timeline: &'a Timeline<'a>,
    events: &'a [&'a Record],
    samples: &'a [Sample],
    network_value_mean: Option<f64>,
}

/// One side's summary from its job and share facts, its link's and farm node's
/// counters, and its roles' samples.
fn side_summary(
    at: &SideInputs,
    side: &SideRoles,
    (jobs, shares): (JobFacts, ShareFacts),
) -> SideSummary {
    let SideInputs {
        m,
        timeline,
        events,
        samples,
        ..
    } = *at;
    let window = m.window();
    let farm_node = farm_node_traffic(events, side);
    let link = link_counters(events.iter().copied(), &side.link_role);
    let bandwidth = side_bandwidth(&link, farm_node.as_ref(), window);
    let farm_per_s = farm_rate_series(&link, farm_node.as_ref(), window);
    let link_rtt_ms = side.link_rtt_ms.unwrap_or(m.link.rtt_ms);
    let stale_per_tip = stale_work_per_tip(&jobs.stale_wait_ms, 0.0, side.miners, window);
    let pool_stale_per_tip =
        stale_work_per_tip(&jobs.stale_wait_ms, link_rtt_ms / 2.0, side.miners, window);
    // What the pool's end of the link carries, both ways (the link alone).
    let pool_link_both = series_mean(
        &(farm_rate_series(&link, None, window).iter())
            .map(|r| r.0 + r.1)
            .collect::<Vec<_>>(),
    );
    let new_job_ms = jobs.new_job_ms.dist();
    let new_prevhash_job_ms = jobs.new_prevhash_job_ms.dist();
    // One bootstrap for the wait's distribution and its share at the real pace.
    let stale_wait_ms = jobs.stale_wait_ms.dist();
    let stale_work_real_pct =
        share_of_a_block(&Estimate::mean_of(&stale_wait_ms), m.worth.block_interval_s);
    let block_propagation_ms = shares.block_propagation_ms.dist();
    let value = jobs.value_by_tip.dist();
    SideSummary {
        config: side.config,
        miners: side.miners,
        link_rtt_ms,
        farm_node: side.farm_node_role.is_some(),
        stale_wait_ms,
        tips_without_work: jobs.tips_without_job,
        stale_work_real_pct,
        shares: shares.shares,
        pool_work: shares.pool_work,
        blocks: shares.blocks,
        readings: path_readings(
            side,
            link_rtt_ms,
            &new_job_ms,
            &new_prevhash_job_ms,
            &block_propagation_ms,
        ),
        block_propagation_ms,
        new_job_ms,
        new_prevhash_job_ms,
        share_answer_ms: shares.share_answer_ms.dist(),
        template_value_sats: value.clone(),
        template_value_vs_network: value
            .mean
            .zip(at.network_value_mean)
            .map(|(side, network)| Delta::of(side, network)),
        templates_mined: (jobs.templates_mined.iter())
            .map(|&(ns, value)| {
                let s = ns.saturating_sub(window.start_ns) as f64 / 1e9;
                (s, value as f64)
            })
            .collect(),
        work_s: jobs.work,
        stale_work_pct: cluster_mean(&stale_per_tip).within(0.0, 100.0),
        pool_stale_work_pct: cluster_mean(&pool_stale_per_tip).within(0.0, 100.0),
        by_hashrate: crate::farm::by_hashrate(
            &m.per_miner.hashrate_factor,
            side.miner_hashrate,
            &shares.by_miner,
            &jobs.work_by_miner,
            window.secs(),
        ),
        bandwidth_bytes_per_s: bandwidth,
        farm_rates: FarmRates {
            tx: series_mean(&farm_per_s.iter().map(|r| r.0).collect::<Vec<_>>()),
            rx: series_mean(&farm_per_s.iter().map(|r| r.1).collect::<Vec<_>>()),
            pool_both: pool_link_both,
        },
        job_declaration: side
            .job_declaration_role
            .as_deref()
            .map(|role| crate::declaration::job_declaration(events, role, window)),
        // The break-even needs the baseline: set once every side is summarised.
        farm_node_lag: None,
        template_provider: side.template_role.as_deref().map(|role| {
            crate::template_provider::template_provider(timeline, events, role, window)
        }),
        // Set once the side's roles and rates are in (`pool_costs_over`).
        pool_costs: PoolCosts::default(),
        emulation: emulation(side, events, samples, window),
        pool_refused: pool_refused(side, events, window),
        roles: side
            .roles
            .iter()
            .filter(|role| **role != m.node_role)
            .map(|role| (role.clone(), resources(samples, role, window)))
            .collect(),
        samples: LatencySamples {
            new_job_ms: jobs.new_job_ms,
            new_prevhash_job_ms: jobs.new_prevhash_job_ms,
            block_propagation_ms: shares.block_propagation_ms,
            share_answer_ms: shares.share_answer_ms,
            template_value: jobs.value_by_tip,
            stale_wait_ms: jobs.stale_wait_ms,
            farm_node_lag_ms: jobs.farm_node_lag_ms,
            own_new_block_ms: jobs.own_new_block_ms,
            stale_by_tip: shares.stale_by_tip,
            accepted_by_tip: shares.accepted_by_tip,
            farm_tx_per_s: farm_per_s.iter().map(|r| r.0).collect(),
            farm_rx_per_s: farm_per_s.iter().map(|r| r.1).collect(),
        },
    }
}

/// A farm node's modelled relay and its feed link, as link counters.
fn farm_node_traffic(events: &[&Record], side: &SideRoles) -> Option<FarmNodeTraffic> {
    let farm = side.farm_node_role.as_deref()?;
    Some(FarmNodeTraffic {
        tx_relay: tx_relay_counters(events.iter().copied(), farm),
        block_relay: block_relay_counters(events.iter().copied(), farm),
        feed: (side.feed_link_role.as_deref())
            .map(|feed| link_counters(events.iter().copied(), feed))
            .unwrap_or_default(),
    })
}

/// A wait after each block as a share of the time between blocks at `block_interval_s`,
/// percent, with its interval: the stale work a real network's pace would give.
fn share_of_a_block(wait_ms: &Estimate, block_interval_s: f64) -> Estimate {
    let block_ms = block_interval_s * 1e3;
    Estimate {
        point: wait_ms.point.map(|w| w / block_ms * 100.0),
        ci: (wait_ms.ci).map(|(lo, hi)| (lo / block_ms * 100.0, hi / block_ms * 100.0)),
        units: wait_ms.units,
    }
}

fn baseline_default() -> String {
    BASELINE.to_string()
}

/// What side `side`'s relays and fleet cost (`Emulation`): their CPU from `samples`, and
/// what each relay itself added, from the summary each writes at its end.
fn emulation(
    side: &SideRoles,
    events: &[&Record],
    samples: &[Sample],
    window: Window,
) -> Emulation {
    let relays = side.relays();
    let on_path = |role: &str| model::shard::is_of(role, &side.link_role) || side.is_pool(role);
    let lateness = (events.iter())
        .filter(|r| on_path(&r.role))
        .filter_map(|r| match &r.event {
            Event::LinkLateness { up_ms, down_ms } | Event::TapLatency { up_ms, down_ms } => {
                Some((up_ms, down_ms))
            }
            _ => None,
        });
    Emulation::of(samples, (relays, &side.miners_role), lateness, window)
}

/// The connections side `side`'s pool (or its backup) refused until the window's end:
/// its taps found nothing listening. Other failures to connect (a timeout, a tap out of
/// descriptors) are the lab's, in the taps' logs, and not counted here.
fn pool_refused(side: &SideRoles, events: &[&Record], window: Window) -> Option<PoolRefused> {
    let refused: Vec<u64> = (events.iter())
        .filter(|r| side.judges(&r.role) && r.t_ns <= window.end_ns)
        .filter(|r| matches!(r.event, Event::TapUpstreamUnreachable { refused: true, .. }))
        .map(|r| r.t_ns)
        .collect();
    let from_start = |t: u64| (t as f64 - window.start_ns as f64) / 1e9;
    Some(PoolRefused {
        connections: refused.len() as u64,
        first_s: from_start(*refused.iter().min()?),
        last_s: from_start(*refused.iter().max()?),
    })
}

/// What the relays and taps themselves added, per role and direction (each writes one
/// summary at its end).
fn per_role(
    events: &[&Record],
    pick: fn(&Event) -> Option<(&Dist, &Dist)>,
) -> BTreeMap<String, LatenessSummary> {
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
}

/// Each tip's share of the stale work, in percent of the miners' time: its miners' waits
/// for current work, each plus `in_flight_ms` (stale miner-seconds), x tips / (miners x
/// window), so their mean is the share and resampling tips gives its interval. One unit
/// per tip.
fn stale_work_per_tip(
    stale_wait_ms: &Clustered,
    in_flight_ms: f64,
    miners: u32,
    window: Window,
) -> Vec<Vec<f64>> {
    let per_tip = stale_wait_ms.totals();
    let miner_s = f64::from(miners) * window.secs();
    if miner_s <= 0.0 {
        return Vec::new();
    }
    let scale = per_tip.len() as f64 / miner_s * 100.0;
    per_tip
        .iter()
        .map(|tip| {
            let stale_ms = tip.sum + tip.weight * in_flight_ms;
            vec![stale_ms / 1e3 * scale]
        })
        .collect()
}

/// Every numeric metric another side shares with the SV1 side, as it against SV1.
pub fn deltas(
    sides: &BTreeMap<String, SideSummary>,
    baseline: &str,
) -> BTreeMap<String, BTreeMap<String, Delta>> {
    let Some(sv1) = sides.get(baseline) else {
        return BTreeMap::new();
    };
    let base = numeric_leaves(&serde_json::to_value(sv1).expect("a summary serialises"));
    sides
        .iter()
        .filter(|(name, _)| name.as_str() != baseline)
        .map(|(name, side)| {
            let ours = numeric_leaves(&serde_json::to_value(side).expect("a summary serialises"));
            let rows = ours
                .into_iter()
                .filter(|(path, _)| path != "miners")
                .filter_map(|(path, sv2)| {
                    let sv1 = *base.get(&path)?;
                    Some((path, Delta::of(sv2, sv1)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::WorkTime;
    use crate::testing::*;
    use probe::{ShareVerdict, TipCause};

    /// A started Core's network blocks (one per block) and the IPC tap's timed calls (a
    /// few per tip and pool) grow with time, not with miners: a streaming run keeps them.
    #[test]
    fn core_network_blocks_and_timed_ipc_calls_are_kept_in_a_streaming_run() {
        let sent = Event::NetworkBlockSent {
            hash: "00".into(),
            late_ns: 1_500_000,
            accepted: true,
        };
        let call = Event::IpcCallAnswered {
            method: "BlockTemplate.getCoinbaseTx".into(),
            asked_ns: 1,
        };
        assert!(kept_beyond_jobs_and_shares(&sent));
        assert!(kept_beyond_jobs_and_shares(&call));
    }

    /// One SV1 side over 0-10 s: templates, jobs, a block, shares, a role that died.
    fn run() -> Vec<Record> {
        vec![
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_010 * MS, "node", "A", "P", 100),
            job(1_070 * MS, 0, "P", Some("A")),
            job(1_090 * MS, 1, "P", Some("A")),
            template(6_000 * MS, "node", "B", "P", 300),
            job(6_050 * MS, 0, "P", Some("B")),
            job(6_060 * MS, 1, "P", Some("UNKNOWN")),
            share(7_000 * MS, 0, 1, "P", Some("BLK")),
            judged(7_050 * MS, ShareVerdict::Accepted),
            accepted_block(7_080 * MS, "BLK"),
            tip(7_081 * MS, "BLK", TipCause::Submitted),
            share(8_000 * MS, 1, 2, "P", None),
            rec(
                9_000 * MS,
                "harness",
                Event::RoleExited {
                    name: "pool".into(),
                    status: "signal 9".into(),
                },
            ),
        ]
    }

    #[test]
    fn a_run_summarised_by_hand() {
        let m = manifest(vec![sv1_side()]);
        let samples = vec![
            Sample {
                t_ns: 2_000 * MS,
                role: "pool".into(),
                cpu_pct: 10.0,
                cpu_s: None,
                rss_bytes: 1_000,
                host: None,
            },
            Sample {
                t_ns: 2_000 * MS,
                role: "node".into(),
                cpu_pct: 50.0,
                cpu_s: None,
                rss_bytes: 9_000,
                host: None,
            },
            Sample {
                t_ns: 3_000 * MS,
                role: HARNESS_ROLE.into(),
                cpu_pct: 4.0,
                cpu_s: None,
                rss_bytes: 4_000,
                host: None,
            },
        ];
        let mut events = run();
        events.push(rec(
            5_000 * MS,
            "node",
            Event::NetworkTemplateValue {
                value_sats: 200,
                fees_sats: 0,
                mempool_txs: 1,
            },
        ));
        let s = computed(&m, &events, &samples);
        let side = &s.sides["sv1"];
        assert_eq!(side.new_job_ms.count, 3);
        assert_eq!(side.new_job_ms.max, Some(80.0));
        assert_eq!(side.new_prevhash_job_ms.p50, Some(70.0));
        assert_eq!(side.block_propagation_ms.p50, Some(80.0));
        assert_eq!((side.blocks.found, side.blocks.accepted), (1, 1));
        assert_eq!((side.shares.submitted, side.shares.accepted), (2, 1));
        assert_eq!(side.shares.stale, 1, "the share on P after BLK");
        // The share on P after BLK is stale: no verdict is missing for it.
        assert_eq!(s.unmatched.get("share_without_verdict"), None);
        assert_eq!(s.unmatched["job_without_node_template"], 1);
        assert_eq!(
            s.unmatched["tip_without_job"], 2,
            "no miner got a job on BLK"
        );
        assert_eq!(s.unmatched["role_exited:pool"], 1);
        // Valid work: miner 0 on A 1.07-6.05 s, on B 6.05-7.081 s; miner 1 on A
        // 1.09-6.06 s; after BLK both are stale (2.919 s each); miner 1's unknown job
        // from 6.06 s to BLK is unmatched.
        let w = &side.work_s;
        assert!((w.valid_s - (4.98 + 1.031 + 4.97)).abs() < 1e-9, "{w:?}");
        assert!((w.stale_s - 2.0 * 2.919).abs() < 1e-9, "{w:?}");
        assert!((w.unmatched_s - 1.021).abs() < 1e-9, "{w:?}");
        let mean = side.template_value_sats.mean.unwrap();
        let expected = (100.0 * (4.98 + 4.97) + 300.0 * 1.031) / (4.98 + 4.97 + 1.031);
        assert!((mean - expected).abs() < 1e-6, "{mean} vs {expected}");
        // Mined over time: A (100 sats) from 1.07 s, when miner 0 began on it, B (300)
        // from 6.05 s; each once, however many miners mined it.
        let mined: Vec<(f64, f64)> = (side.templates_mined.iter())
            .map(|&(t, v)| ((t * 1e3).round() / 1e3, v))
            .collect();
        assert_eq!(mined, [(1.07, 100.0), (6.05, 300.0)]);
        let vs_network = side.template_value_vs_network.as_ref().unwrap();
        assert!((vs_network.delta - (expected - 200.0)).abs() < 1e-6);
        assert_eq!(s.network.blocks, 2);
        // Two blocks in the 10 s window: one every 5 s.
        assert_eq!(s.network.block_interval_s, Some(5.0));
        // The shared node is the network's, not the side's.
        assert_eq!(
            side.roles.keys().collect::<Vec<_>>(),
            vec!["miners", "pool"]
        );
        assert_eq!(s.network.node.as_ref().unwrap().cpu_pct.mean, Some(50.0));
        assert_eq!(s.harness.as_ref().unwrap().rss_bytes.max, Some(4_000.0));
        assert_eq!(side.roles["pool"].rss_bytes.mean, Some(1_000.0));
        assert_eq!(side.roles["miners"].cpu_pct.count, 0);
        // No link records: no bandwidth, not zero.
        assert_eq!(side.bandwidth_bytes_per_s, None);
    }

    #[test]
    fn the_order_events_arrive_in_changes_nothing() {
        let m = manifest(vec![sv1_side()]);
        let mut events = run();
        let forward = computed(&m, &events, &[]);
        events.reverse();
        let backward = computed(&m, &events, &[]);
        assert_eq!(
            serde_json::to_value(&forward).unwrap(),
            serde_json::to_value(&backward).unwrap()
        );
    }

    #[test]
    fn the_block_pace_is_the_window_over_the_networks_blocks() {
        let m = manifest(vec![sv1_side()]);
        // Two tips in the 10 s window: a block every 5 s at this run's pace.
        let s = computed(&m, &run(), &[]);
        assert_eq!(s.network.blocks, 2);
        assert_eq!(s.network.block_interval_s, Some(5.0));
        // No block: no pace.
        let quiet = computed(&m, &[], &[]);
        assert_eq!(quiet.network.block_interval_s, None);
        // How the blocks arrived is the manifest's, carried for the verdict's caveat.
        assert_eq!(s.network.arrivals, model::network::Arrivals::Poisson);
        let regular = Manifest {
            network_arrivals: model::network::Arrivals::Regular,
            ..m.clone()
        };
        let s = computed(&regular, &run(), &[]);
        assert_eq!(s.network.arrivals, model::network::Arrivals::Regular);
    }

    #[test]
    fn a_live_summary_in_warm_up_has_no_duration_and_no_data() {
        let mut m = manifest(vec![sv1_side()]);
        m.window_start_ns = 5_000 * MS;
        m.window_end_ns = 4_000 * MS; // the window has not begun
        let s = computed(&m, &run(), &[]);
        assert_eq!(s.duration_s, 0.0);
        assert_eq!(s.sides["sv1"].shares.submitted, 0);
        assert_eq!(s.sides["sv1"].work_s, WorkTime::default());
    }

    #[test]
    fn deltas_compare_every_shared_number_with_sv1() {
        let m = manifest(vec![sv1_side(), farm_side()]);
        let s = computed(&m, &run(), &[]);
        let a = &s.deltas["sv2-a"];
        assert_eq!(a["link_rtt_ms"], Delta::of(40.0, 100.0));
        assert_eq!(a["link_rtt_ms"].pct, Some(-60.0));
        assert_eq!(a["shares.submitted"].pct, Some(-100.0));
        assert!(!a.contains_key("miners"));
        assert_eq!(Delta::of(3.0, 0.0).pct, None);
    }

    /// SRI's pool can stop listening while its process lives on (one connection's fault
    /// cancels them all): no exit is recorded, so the taps' refused connections say it.
    #[test]
    fn a_pool_that_stops_listening_is_said_before_the_verdict() {
        let m = manifest(vec![sv1_side(), farm_side()]);
        let unreachable = |t_s: f64, role: &str, refused: bool| {
            rec_s(
                t_s,
                role,
                Event::TapUpstreamUnreachable {
                    connection: 1,
                    reason: "Connection refused (os error 111)".into(),
                    refused,
                },
            )
        };
        let refused = |t_s: f64, role: &str| unreachable(t_s, role, true);
        let mut events = run();
        events.extend([
            refused(4.0, "tap-a"),
            refused(5.0, "tap-a"),
            // A shard of the same tap counts, and holds the first refusal.
            refused(3.2, "tap-a-shard2"),
            // Not in front of a pool: its JDS's tap.
            refused(1.0, "jdtap-a"),
            // A connection that failed otherwise (a timeout): the lab's, not the pool's.
            unreachable(2.0, "tap-a", false),
            // After the window, as the run stops its roles.
            refused(10.5, "tap-a"),
        ]);
        let s = computed(&m, &events, &[]);
        assert_eq!(s.sides["sv1"].pool_refused, None);
        let stopped = s.sides["sv2-a"].pool_refused.unwrap();
        assert_eq!(stopped.connections, 3);
        assert!((stopped.first_s - 3.2).abs() < 1e-9, "{}", stopped.first_s);
        assert!((stopped.last_s - 5.0).abs() < 1e-9, "{}", stopped.last_s);
        let warning = "sv2-a's pool refused connections from 3 s into the window to 5 s into the window (3 its taps could not open): while it did, sv2-a measured a pool that was not serving, not the protocol";
        assert_eq!(s.pool_warnings(), vec![warning.to_string()]);
        // The line the run would have had comes after it, whole.
        let without = computed(&m, &run(), &[]).conclusions["sv2-a"].text.clone();
        let line = &s.conclusions["sv2-a"];
        assert_eq!(
            line.text,
            format!(
                "sv2-a: not a reading of the protocol: sv2-a's pool refused connections from 3 s into the window; {}",
                without.strip_prefix("sv2-a: ").unwrap()
            )
        );
        assert!(line.sentences[0].starts_with("Not a reading of the protocol: sv2-a's pool"));
        // Refused in the warm-up alone (the window starting at 6 s), then served: said,
        // and the window's line is the protocol's.
        let late = Manifest {
            window_start_ns: 6_000 * MS,
            ..m.clone()
        };
        let s = computed(&late, &events, &[]);
        let early = s.sides["sv2-a"].pool_refused.unwrap();
        assert!(
            !early.in_window() && (early.last_s + 1.0).abs() < 1e-9,
            "{early:?}"
        );
        assert_eq!(s.pool_warnings().len(), 1);
        let without = computed(&late, &run(), &[]).conclusions["sv2-a"]
            .text
            .clone();
        assert_eq!(s.conclusions["sv2-a"].text, without);
        // Before the window: said as such.
        let early = PoolRefused {
            connections: 22_315,
            first_s: -95.4,
            last_s: 120.0,
        };
        assert!(early.in_words("sv2-d").contains(
            "from 95 s before the window to 120 s into the window (22315 its taps could not open)"
        ));
    }
}
