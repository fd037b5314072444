//! What a report draws beyond summary.json, computed once with it and written beside it
//! (`charts.json`): the values behind each side's latency distributions, the farm's bytes
//! second by second, and the network's best template value in time. A report, a
//! comparison and an export read these and summary.json; none reads the events.

use crate::summary::Summary;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "stratum-bench.charts.v1";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Charts {
    pub schema: String,
    /// The network's best template value as its node sampled it: (seconds from the
    /// window's start, sats), the run's whole length.
    pub network_best: Vec<(f64, f64)>,
    pub sides: BTreeMap<String, SideCharts>,
}

/// One side's values. A latency's are by unit (the tip, or the block: one list each, in
/// the order the units came), as its interval takes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideCharts {
    pub new_job_ms: Vec<Vec<f64>>,
    pub new_prevhash_job_ms: Vec<Vec<f64>>,
    pub block_propagation_ms: Vec<Vec<f64>>,
    /// The farm's bytes a second each way, second k of the window at index k.
    pub farm_tx_per_s: Vec<f64>,
    pub farm_rx_per_s: Vec<f64>,
}

impl Charts {
    /// The charts of a summary just computed (its per-event samples at hand).
    pub fn of(summary: &Summary) -> Charts {
        Charts {
            schema: SCHEMA.into(),
            network_best: summary.network_best.clone(),
            sides: (summary.sides.iter())
                .map(|(name, s)| {
                    let side = SideCharts {
                        new_job_ms: s.samples.new_job_ms.clusters(),
                        new_prevhash_job_ms: s.samples.new_prevhash_job_ms.clusters(),
                        block_propagation_ms: s.samples.block_propagation_ms.clusters(),
                        farm_tx_per_s: s.samples.farm_tx_per_s.clone(),
                        farm_rx_per_s: s.samples.farm_rx_per_s.clone(),
                    };
                    (name.clone(), side)
                })
                .collect(),
        }
    }

    /// A run directory's `charts.json`, refused when another version wrote it.
    pub fn read(run_dir: &Path) -> Result<Charts> {
        let path = run_dir.join(model::run_dir::CHARTS_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let charts: Charts = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a charts file", path.display()))?;
        if charts.schema != SCHEMA {
            bail!(
                "{} is of schema {}, this tool writes {SCHEMA}",
                path.display(),
                charts.schema
            );
        }
        Ok(charts)
    }
}
