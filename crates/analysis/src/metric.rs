//! Every headline metric declared once: its name, its unit, which way is better, how two
//! sides are tested against each other, the side's own value, and how it is shown. The
//! verdict, the sweeps' curves, the charts, the comparison, the terminal, the report, the
//! export and the live page take their rows from [`Headline::ALL`] and [`Headline::def`];
//! a metric is added with one entry in [`METRICS`] and the rule that fills its samples.

use crate::paths::{PathReading, PathReadings};
use crate::side::{LatencySamples, SideSummary};
use crate::stats::{Clustered, Counted, Estimate, Units};
use probe::Dist;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Headline {
    NewJobMs,
    NewPrevhashJobMs,
    StaleWaitMs,
    StaleSharesPct,
    AcceptancePct,
    BlockPropagationMs,
    FarmTxBytesPerS,
    FarmRxBytesPerS,
    TemplateValueSats,
    ShareAnswerMs,
}

/// Which way of a difference helps the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Every wait, stale shares, the farm's bytes.
    Lower,
    /// More template value, more shares accepted.
    Higher,
}

/// How a metric's two sides are set against each other, and the samples it reads.
#[derive(Clone, Copy)]
pub enum Test {
    /// By the network's tips, which both sides share: paired.
    PairedByTip(fn(&LatencySamples) -> &Units),
    /// By each side's own units (its blocks): clustered, not paired.
    Clustered(fn(&LatencySamples) -> &Clustered),
    /// A proportion of events counted by tip.
    Proportion(fn(&LatencySamples) -> &Counted),
    /// A per-second series, by batches of seconds (it autocorrelates).
    Series(fn(&LatencySamples) -> &[f64]),
}

/// A metric shown as a distribution of latencies: percentiles, a histogram, a CSV column.
#[derive(Clone, Copy)]
pub struct Distribution {
    /// Lower case, as a row starts: "new job".
    pub title: &'static str,
    /// What one sample is the time until: "miners got a new template's job".
    pub what: &'static str,
    pub dist: fn(&SideSummary) -> &Dist,
    /// The samples by the unit the interval takes (charts.json keeps them).
    pub clusters: fn(&LatencySamples) -> &Clustered,
    /// How the side's path splits it (link, pool, node), for metrics that cross the link.
    pub path: Option<fn(&PathReadings) -> &PathReading>,
}

/// What a metric's values are in: the axis its differences share with other metrics'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Measure {
    Ms,
    Percent,
    Sats,
    BytesPerS,
}

impl Measure {
    /// The axis of its differences.
    pub fn axis(self) -> &'static str {
        match self {
            Measure::Ms => "difference, ms",
            Measure::Percent => "difference, percentage points",
            Measure::Sats => "difference, sats",
            Measure::BytesPerS => "difference, bytes/s",
        }
    }
}

/// One headline metric, declared once.
pub struct Metric {
    pub headline: Headline,
    /// Its name in files: the summary's field, the charts' and the export's key, the
    /// sweeps' curve id.
    pub key: &'static str,
    /// The verdict's row label, with its unit.
    pub label: &'static str,
    /// Decimals a reader needs.
    pub decimals: usize,
    pub better: Better,
    /// What the interval counts as independent.
    pub unit: &'static str,
    /// What its values are in; a time (`Ms`) is one the roles take, which a saturated host
    /// inflates.
    pub measure: Measure,
    pub test: Test,
    /// A run that stops when it knows waits for this metric's interval.
    pub resolved_before_stopping: bool,
    /// The side's own value with its interval where the run has one.
    pub side_value: fn(&SideSummary) -> Estimate,
    pub distribution: Option<Distribution>,
    /// What a reader must know to read the row's difference, said beside the verdict.
    pub note: Option<&'static str>,
}

/// A side's count-based percentage, with the interval the counts give.
fn counted(point: Option<f64>, ci: Option<(f64, f64)>) -> Estimate {
    Estimate {
        point,
        ci,
        units: 0,
    }
}

/// In the order of [`Headline::ALL`] (a test holds them together).
const METRICS: [Metric; 10] = [
    Metric {
        headline: Headline::NewJobMs,
        key: "new_job_ms",
        label: "new job, mean ms",
        decimals: 1,
        better: Better::Lower,
        // Each side's templates, by the tip they build on: the node builds every client's
        // at the same tip; a farm node's (A, B) too, one peer hop later.
        unit: "tips",
        measure: Measure::Ms,
        test: Test::PairedByTip(|s| s.new_job_ms.units()),
        resolved_before_stopping: true,
        side_value: |s| Estimate::mean_of(&s.new_job_ms),
        distribution: Some(Distribution {
            title: "new job",
            what: "miners got a new template's job",
            dist: |s| &s.new_job_ms,
            clusters: |s| &s.new_job_ms,
            path: Some(|r| &r.new_job),
        }),
        note: None,
    },
    Metric {
        headline: Headline::NewPrevhashJobMs,
        key: "new_prevhash_job_ms",
        label: "new job after a block, mean ms",
        decimals: 1,
        better: Better::Lower,
        unit: "tips",
        measure: Measure::Ms,
        test: Test::PairedByTip(|s| s.new_prevhash_job_ms.units()),
        resolved_before_stopping: true,
        side_value: |s| Estimate::mean_of(&s.new_prevhash_job_ms),
        distribution: Some(Distribution {
            title: "new job after a block",
            what: "miners got work on a new block",
            dist: |s| &s.new_prevhash_job_ms,
            clusters: |s| &s.new_prevhash_job_ms,
            path: Some(|r| &r.new_prevhash_job),
        }),
        note: None,
    },
    Metric {
        headline: Headline::StaleWaitMs,
        key: "stale_wait_ms",
        label: "stale work after a block, mean ms",
        decimals: 1,
        better: Better::Lower,
        unit: "tips",
        measure: Measure::Ms,
        test: Test::PairedByTip(|s| s.stale_wait_ms.units()),
        resolved_before_stopping: true,
        side_value: |s| Estimate::mean_of(&s.stale_wait_ms),
        distribution: None,
        note: None,
    },
    Metric {
        headline: Headline::StaleSharesPct,
        key: "stale_shares_pct",
        label: "stale shares %",
        decimals: 3,
        better: Better::Lower,
        unit: "tips",
        measure: Measure::Percent,
        test: Test::Proportion(|s| &s.stale_by_tip),
        resolved_before_stopping: false,
        side_value: |s| counted(s.shares.stale_pct, s.shares.stale_pct_ci),
        distribution: None,
        note: None,
    },
    Metric {
        headline: Headline::AcceptancePct,
        key: "acceptance_pct",
        label: "acceptance %",
        decimals: 3,
        better: Better::Higher,
        unit: "tips",
        measure: Measure::Percent,
        test: Test::Proportion(|s| &s.accepted_by_tip),
        resolved_before_stopping: false,
        side_value: |s| counted(s.shares.acceptance_pct, None),
        distribution: None,
        note: None,
    },
    Metric {
        headline: Headline::BlockPropagationMs,
        key: "block_propagation_ms",
        label: "block propagation, mean ms",
        decimals: 1,
        better: Better::Lower,
        // Each side's own blocks.
        unit: "blocks",
        measure: Measure::Ms,
        test: Test::Clustered(|s| &s.block_propagation_ms),
        resolved_before_stopping: false,
        side_value: |s| Estimate::mean_of(&s.block_propagation_ms),
        distribution: Some(Distribution {
            title: "block propagation",
            what: "a found block reached the node",
            dist: |s| &s.block_propagation_ms,
            clusters: |s| &s.block_propagation_ms,
            path: Some(|r| &r.block_propagation),
        }),
        note: None,
    },
    Metric {
        headline: Headline::FarmTxBytesPerS,
        key: "farm_tx_bytes_per_s",
        label: "farm tx bytes/s",
        decimals: 0,
        better: Better::Lower,
        unit: "batches of seconds",
        measure: Measure::BytesPerS,
        test: Test::Series(|s| &s.farm_tx_per_s),
        resolved_before_stopping: true,
        side_value: |s| s.farm_rates.tx.clone(),
        distribution: None,
        note: None,
    },
    Metric {
        headline: Headline::FarmRxBytesPerS,
        key: "farm_rx_bytes_per_s",
        label: "farm rx bytes/s",
        decimals: 0,
        better: Better::Lower,
        unit: "batches of seconds",
        measure: Measure::BytesPerS,
        test: Test::Series(|s| &s.farm_rx_per_s),
        resolved_before_stopping: true,
        side_value: |s| s.farm_rates.rx.clone(),
        distribution: None,
        note: None,
    },
    Metric {
        headline: Headline::TemplateValueSats,
        key: "template_value_sats",
        label: "template value, mean sats",
        decimals: 0,
        better: Better::Higher,
        // Time-weighted by valid miner-time, by tip.
        unit: "tips",
        measure: Measure::Sats,
        test: Test::PairedByTip(|s| s.template_value.units()),
        resolved_before_stopping: false,
        side_value: |s| Estimate::mean_of(&s.template_value_sats),
        distribution: None,
        note: None,
    },
    Metric {
        headline: Headline::ShareAnswerMs,
        key: "share_answer_ms",
        label: "share answer, mean ms",
        decimals: 1,
        better: Better::Lower,
        // The shares of a tip meet the same pool state, and both sides see the same tips.
        unit: "tips",
        measure: Measure::Ms,
        test: Test::PairedByTip(|s| s.share_answer_ms.units()),
        resolved_before_stopping: false,
        side_value: |s| Estimate::mean_of(&s.share_answer_ms),
        distribution: Some(Distribution {
            title: "share answer",
            what: "miners got their shares' answers (from the pool across the link on SV1 and D, from the farm's proxy on A, B and C)",
            dist: |s| &s.share_answer_ms,
            clusters: |s| &s.share_answer_ms,
            path: None,
        }),
        note: Some("the answer the miners got from their next hop: the pool across the link (SV1, D), or a proxy at the farm (the translator of A and C, the JDC of B) that answers before the pool judges; a proxy's quicker answer is not a quicker verdict, and no worth prices it; with sv2.share_batch_size above 1 an SV2 answer also waits for its batch"),
    },
];

impl Headline {
    pub const ALL: [Headline; 10] = [
        Headline::NewJobMs,
        Headline::NewPrevhashJobMs,
        Headline::StaleWaitMs,
        Headline::StaleSharesPct,
        Headline::AcceptancePct,
        Headline::BlockPropagationMs,
        Headline::FarmTxBytesPerS,
        Headline::FarmRxBytesPerS,
        Headline::TemplateValueSats,
        Headline::ShareAnswerMs,
    ];

    /// The metric's declaration.
    pub fn def(self) -> &'static Metric {
        &METRICS[self as usize]
    }

    pub fn label(self) -> &'static str {
        self.def().label
    }

    pub fn key(self) -> &'static str {
        self.def().key
    }

    pub fn decimals(self) -> usize {
        self.def().decimals
    }

    pub fn is_latency(self) -> bool {
        self.def().measure == Measure::Ms
    }

    pub fn measure(self) -> Measure {
        self.def().measure
    }

    pub fn higher_is_better(self) -> bool {
        self.def().better == Better::Higher
    }

    pub fn unit(self) -> &'static str {
        self.def().unit
    }

    /// An interval by batches of a run's per-second series.
    pub fn batched(self) -> bool {
        matches!(self.def().test, Test::Series(_))
    }

    /// The metrics shown as distributions of latencies, in the verdict's order.
    pub fn distributions() -> impl Iterator<Item = (Headline, &'static Distribution)> {
        (Headline::ALL.into_iter()).filter_map(|h| h.def().distribution.as_ref().map(|d| (h, d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_headline_has_its_own_declaration_under_its_own_name() {
        for (i, h) in Headline::ALL.into_iter().enumerate() {
            assert_eq!(METRICS[i].headline, h, "METRICS out of order at {i}");
            assert_eq!(h.def().headline, h);
            // The key is the name the summary and the verdict write it under.
            assert_eq!(serde_json::to_value(h).unwrap(), h.key());
        }
        assert_eq!(METRICS.len(), Headline::ALL.len());
    }

    /// A distribution's key is its field in a side's part of summary.json, where the live
    /// page and a comparison of old runs find it.
    #[test]
    fn a_distributions_key_is_its_field_in_the_sides_summary() {
        use crate::testing::{computed, manifest, sv1_side};
        let summary = computed(&manifest(vec![sv1_side()]), &[], &[]);
        let side = serde_json::to_value(&summary.sides["sv1"]).unwrap();
        for (h, _) in Headline::distributions() {
            assert!(side.get(h.key()).is_some(), "no field {}", h.key());
        }
    }
}
