//! What the nodes saw, by identity: templates by marker (per node), as the job rules tie
//! jobs to them ([`Templates`]); and the network's tip changes and template values in
//! time order ([`Timeline`]), as the summary reads them.

use crate::manifest::Manifest;
use probe::{Event, Record};
use std::collections::{BTreeMap, HashMap};

/// A template a node built, as a job refers to it (by its marker txid).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemplateFact {
    pub t_ns: u64,
    pub value_sats: u64,
}

/// The templates the nodes built, by marker txid: one per node that built it (more than
/// one only when two nodes of a run share an id range: a harness bug the analysis exposes).
#[derive(Debug, Clone, Default)]
pub struct Templates(HashMap<String, Vec<(String, TemplateFact)>>);

impl Templates {
    /// The template a node's record says it built (by its marker), or an RPC tap's says a
    /// real node handed out (by its work id), if it says so.
    pub fn take(&mut self, r: &Record) {
        let (identity, value_sats) = match &r.event {
            Event::TemplateBuilt {
                marker_txid,
                value_sats,
                ..
            } => (marker_txid, value_sats),
            Event::TemplateFetched {
                work_id,
                value_sats,
                ..
            } => (work_id, value_sats),
            _ => return,
        };
        let fact = TemplateFact {
            t_ns: r.t_ns,
            value_sats: *value_sats,
        };
        self.add(&r.role, identity, fact);
    }

    /// A template `node` built; a node builds a marker once (and a work id is first handed
    /// out once), so a repeat is ignored.
    fn add(&mut self, node: &str, marker: &str, fact: TemplateFact) {
        let facts = self.0.entry(marker.to_string()).or_default();
        if !facts.iter().any(|(n, _)| n == node) {
            facts.push((node.to_string(), fact));
        }
    }

    /// The template behind a job, among those `node` built: by the job's marker, else
    /// (a real node marks none) by its work id; with the identity it was found by.
    pub fn find_job<'a>(
        &self,
        marker: Option<&'a str>,
        work_id: Option<&'a str>,
        node: &str,
    ) -> (TemplateMatch, Option<&'a str>) {
        match self.find(marker, node) {
            found @ TemplateMatch::Found(_) => (found, marker),
            by_marker => match work_id.map(|id| (self.find(Some(id), node), id)) {
                Some((found @ TemplateMatch::Found(_), id)) => (found, Some(id)),
                _ => (by_marker, None),
            },
        }
    }

    /// The template behind a job's marker, among those `node` built.
    fn find(&self, marker: Option<&str>, node: &str) -> TemplateMatch {
        let Some(marker) = marker else {
            return TemplateMatch::NoMarker;
        };
        match self.0.get(marker) {
            None if self.0.contains_key(reversed_hex(marker).as_str()) => {
                TemplateMatch::ByteReversed
            }
            None => TemplateMatch::Unknown,
            Some(facts) => match facts.iter().find(|(n, _)| n == node) {
                Some((_, f)) => TemplateMatch::Found(*f),
                None => TemplateMatch::OtherNode,
            },
        }
    }
}

/// The roles whose templates jobs are tied to: the network's node and the farms' own.
pub fn template_nodes(m: &Manifest) -> Vec<&str> {
    std::iter::once(m.node_role.as_str())
        .chain(m.sides.values().filter_map(|s| s.farm_node_role.as_deref()))
        .collect()
}

/// What the network's node saw in time: its tip changes and its best template values.
#[derive(Debug, Default)]
pub struct Timeline<'a> {
    /// The network node's tip changes: (time, new tip hash), in time order.
    pub tips: Vec<(u64, &'a str)>,
    /// The network's best template value, sampled in the window.
    pub network_values: Vec<f64>,
    /// Tip changes in the window (blocks of the whole network, ours included).
    pub network_blocks: u64,
    /// The network node's template builds in the window, by who asked: what each waited
    /// for the node's state, and what the build took (ms).
    pub template_builds: BTreeMap<&'a str, BuildTimes>,
}

/// One asker's template builds: waits for the node's state and build times, in ms.
#[derive(Debug, Default)]
pub struct BuildTimes {
    pub queued_ms: Vec<f64>,
    pub build_ms: Vec<f64>,
}

/// How a job's marker ties it to a template of the node its side mines on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TemplateMatch {
    Found(TemplateFact),
    /// The job carries no marker (an SV2 standard channel's job shows no merkle path).
    NoMarker,
    /// No node built a template with this marker.
    Unknown,
    /// The marker read backwards is a template's: the pool sent the merkle branch in
    /// display byte order, not the internal order a block's merkle tree hashes, so the
    /// miners' merkle root (and any block found on it) is wrong. goPool does this.
    ByteReversed,
    /// Another node of the run built it: the job is not tied to its side's node.
    OtherNode,
}

impl<'a> Timeline<'a> {
    /// `events` in time order.
    pub fn of(m: &'a Manifest, events: &[&'a Record]) -> Timeline<'a> {
        let window = m.window();
        let mut t = Timeline::default();
        for r in events.iter().filter(|r| r.role == m.node_role) {
            match &r.event {
                Event::TipChanged { hash, .. } => {
                    t.tips.push((r.t_ns, hash));
                    if window.contains(r.t_ns) {
                        t.network_blocks += 1;
                    }
                }
                Event::NetworkTemplateValue { value_sats, .. } if window.contains(r.t_ns) => {
                    t.network_values.push(*value_sats as f64);
                }
                Event::TemplateBuilt {
                    asker,
                    queued_ns,
                    build_ns,
                    ..
                } if window.contains(r.t_ns) && !asker.is_empty() => {
                    let times = t.template_builds.entry(asker).or_default();
                    times.queued_ms.push(*queued_ns as f64 / 1e6);
                    times.build_ms.push(*build_ns as f64 / 1e6);
                }
                _ => {}
            }
        }
        t
    }
}

/// A hex string's bytes in the opposite order ("a1b2" -> "b2a1").
fn reversed_hex(hex: &str) -> String {
    let pairs: Vec<&str> = (0..hex.len() / 2).map(|i| &hex[2 * i..2 * i + 2]).collect();
    pairs.into_iter().rev().collect()
}
