//! What the nodes saw, by identity: templates by marker (per node), the network's tip
//! changes in time order, the blocks it accepted. Every per-side rule reads this.

use crate::manifest::Manifest;
use probe::{Event, Record};
use std::collections::HashMap;

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

#[derive(Debug, Default)]
pub struct Timeline<'a> {
    pub templates: Templates,
    /// The network node's tip changes: (time, new tip hash), in time order.
    pub tips: Vec<(u64, &'a str)>,
    /// Blocks the network node accepted: hash -> time.
    pub accepted_blocks: HashMap<&'a str, u64>,
    /// The network's best template value, sampled in the window.
    pub network_values: Vec<f64>,
    /// Tip changes in the window (blocks of the whole network, ours included).
    pub network_blocks: u64,
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
        let template_nodes = template_nodes(m);
        let mut t = Timeline::default();
        for r in events {
            let role = r.role.as_str();
            if !template_nodes.contains(&role) {
                continue;
            }
            t.templates.take(r);
            if role != m.node_role {
                continue;
            }
            match &r.event {
                Event::TipChanged { hash, .. } => {
                    t.tips.push((r.t_ns, hash));
                    if window.contains(r.t_ns) {
                        t.network_blocks += 1;
                    }
                }
                Event::BlockSubmitted {
                    hash,
                    reject_reason: None,
                    ..
                } => {
                    t.accepted_blocks.entry(hash).or_insert(r.t_ns);
                }
                Event::NetworkTemplateValue { value_sats, .. } if window.contains(r.t_ns) => {
                    t.network_values.push(*value_sats as f64);
                }
                _ => {}
            }
        }
        t
    }

    /// The network's tip at `t`; `None` before the first tip change the node recorded.
    pub fn tip_at(&self, t: u64) -> Option<&'a str> {
        let i = self.tips.partition_point(|(t_tip, _)| *t_tip <= t);
        i.checked_sub(1).map(|i| self.tips[i].1)
    }

    /// Whether work on `prev_hash` at `t` was outdated: the network's tip had moved on.
    /// Before the first recorded tip nothing is known to be outdated.
    pub fn outdated(&self, prev_hash: &str, t: u64) -> bool {
        self.tip_at(t).is_some_and(|tip| tip != prev_hash)
    }

    /// `[from, to)` cut where the network's tip changed: (start, end, tip), in order.
    pub fn tip_spans(&self, from: u64, to: u64) -> Vec<(u64, u64, Option<&'a str>)> {
        let mut spans = Vec::new();
        let mut start = from;
        let mut tip = self.tip_at(from);
        let first = self.tips.partition_point(|(t, _)| *t <= from);
        for &(t_tip, hash) in &self.tips[first..] {
            if t_tip >= to {
                break;
            }
            if t_tip > start {
                spans.push((start, t_tip, tip));
            }
            start = t_tip;
            tip = Some(hash);
        }
        if to > start {
            spans.push((start, to, tip));
        }
        spans
    }
}

/// A hex string's bytes in the opposite order ("a1b2" -> "b2a1").
fn reversed_hex(hex: &str) -> String {
    let pairs: Vec<&str> = (0..hex.len() / 2).map(|i| &hex[2 * i..2 * i + 2]).collect();
    pairs.into_iter().rev().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::TipCause;

    #[test]
    fn tip_spans_cut_an_interval_where_the_tip_moved() {
        let m = manifest(vec![sv1_side()]);
        let events = [
            tip(100, "A", TipCause::Network),
            tip(300, "B", TipCause::Network),
            tip(300, "C", TipCause::Submitted), // two changes at one instant: C wins
            tip(700, "D", TipCause::Network),
        ];
        let refs: Vec<&Record> = events.iter().collect();
        let t = Timeline::of(&m, &refs);
        assert_eq!(t.tip_at(50), None);
        assert_eq!(t.tip_at(300), Some("C"));
        assert_eq!(
            t.tip_spans(50, 800),
            vec![
                (50, 100, None),
                (100, 300, Some("A")),
                (300, 700, Some("C")),
                (700, 800, Some("D"))
            ]
        );
        assert_eq!(t.tip_spans(150, 250), vec![(150, 250, Some("A"))]);
        assert_eq!(t.tip_spans(300, 300), vec![]);
        assert!(!t.outdated("X", 50), "before any tip nothing is outdated");
        assert!(t.outdated("A", 300) && !t.outdated("C", 300));
    }
}
