//! What a report draws beyond summary.json, computed once with it and written beside it
//! (`charts.json`): the values behind each side's latency distributions, the farm's bytes
//! second by second, and the network's best template value in time. A report, a
//! comparison and an export read these and summary.json; none reads the events.

use crate::metric::Headline;
use crate::summary::Summary;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "stratum-bench.charts.v2";

/// The version before each latency was kept by its headline: read into this one.
const SCHEMA_V1: &str = "stratum-bench.charts.v1";

/// A side's values as v1 wrote them: the three latencies a field each.
#[derive(Deserialize)]
struct SideChartsV1 {
    new_job_ms: Vec<Vec<f64>>,
    new_prevhash_job_ms: Vec<Vec<f64>>,
    block_propagation_ms: Vec<Vec<f64>>,
    farm_tx_per_s: Vec<f64>,
    farm_rx_per_s: Vec<f64>,
}

#[derive(Deserialize)]
struct ChartsV1 {
    network_best: Vec<(f64, f64)>,
    sides: BTreeMap<String, SideChartsV1>,
}

impl From<ChartsV1> for Charts {
    fn from(v1: ChartsV1) -> Charts {
        let side = |s: SideChartsV1| SideCharts {
            latencies: [
                (Headline::NewJobMs, s.new_job_ms),
                (Headline::NewPrevhashJobMs, s.new_prevhash_job_ms),
                (Headline::BlockPropagationMs, s.block_propagation_ms),
            ]
            .into(),
            farm_tx_per_s: s.farm_tx_per_s,
            farm_rx_per_s: s.farm_rx_per_s,
        };
        Charts {
            schema: SCHEMA.into(),
            network_best: v1.network_best,
            sides: (v1.sides.into_iter()).map(|(n, s)| (n, side(s))).collect(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Charts {
    pub schema: String,
    /// The network's best template value as its node sampled it: (seconds from the
    /// window's start, sats), the run's whole length.
    pub network_best: Vec<(f64, f64)>,
    pub sides: BTreeMap<String, SideCharts>,
}

/// One side's values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideCharts {
    /// Each headline shown as a distribution ([`Headline::distributions`]), by unit (the
    /// tip, or the block: one list each, in the order the units came), as its interval
    /// takes them.
    pub latencies: BTreeMap<Headline, Vec<Vec<f64>>>,
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
                        latencies: (Headline::distributions())
                            .map(|(h, d)| (h, (d.clusters)(&s.samples).clusters()))
                            .collect(),
                        farm_tx_per_s: s.samples.farm_tx_per_s.clone(),
                        farm_rx_per_s: s.samples.farm_rx_per_s.clone(),
                    };
                    (name.clone(), side)
                })
                .collect(),
        }
    }

    /// Writes the charts drawn from `summary` as a run directory's `charts.json`.
    pub fn write(run_dir: &Path, summary: &Summary) -> Result<()> {
        let path = run_dir.join(model::run_dir::CHARTS_FILE);
        std::fs::write(&path, serde_json::to_string(&Charts::of(summary))? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// A run directory's `charts.json` (v1's read as this version's), refused when another
    /// version wrote it.
    pub fn read(run_dir: &Path) -> Result<Charts> {
        let path = run_dir.join(model::run_dir::CHARTS_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let not_charts = || format!("{} is not a charts file", path.display());
        #[derive(Deserialize)]
        struct Schema {
            schema: String,
        }
        let Schema { schema } = serde_json::from_str(&text).with_context(not_charts)?;
        match schema.as_str() {
            SCHEMA => serde_json::from_str(&text).with_context(not_charts),
            SCHEMA_V1 => {
                let v1: ChartsV1 = serde_json::from_str(&text).with_context(not_charts)?;
                Ok(v1.into())
            }
            other => bail!(
                "{} is of schema {other}, this tool writes {SCHEMA}",
                path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use probe::{Event, TipCause};

    /// Two tips, a template on each, both miners' first jobs on them; the network's best
    /// template value sampled twice; the link carrying 100 bytes up every second.
    #[test]
    fn the_charts_are_the_summarys_values_by_unit_and_in_time() {
        let m = manifest(vec![sv1_side()]);
        let value = |t_ns, value_sats| {
            rec(
                t_ns,
                "node",
                Event::NetworkTemplateValue {
                    value_sats,
                    fees_sats: 0,
                    mempool_txs: 0,
                },
            )
        };
        let mut events = vec![
            value(500 * MS, 100),
            tip(1_000 * MS, "P", TipCause::Network),
            template(1_001 * MS, "node", "A", "P", 100),
            job(1_041 * MS, 0, "P", Some("A")),
            job(1_061 * MS, 1, "P", Some("A")),
            value(2_000 * MS, 300),
            tip(5_000 * MS, "Q", TipCause::Network),
            template(5_000 * MS, "node", "B", "Q", 300),
            job(5_020 * MS, 0, "Q", Some("B")),
            job(5_030 * MS, 1, "Q", Some("B")),
        ];
        events.extend((0..=10).map(|k| link_bytes(k * 1_000 * MS, "link", 100 * k, 0)));
        let charts = Charts::of(&computed(&m, &events, &[]));
        assert_eq!(charts.schema, SCHEMA);
        // Seconds from the window's start (0), and sats.
        assert_eq!(charts.network_best, vec![(0.5, 100.0), (2.0, 300.0)]);
        let sv1 = &charts.sides["sv1"];
        // New job, from each template's build, by tip: A at 1.001 s to 1.041 and 1.061 s;
        // B at 5.000 s to 5.020 and 5.030 s.
        let latency = |h| &sv1.latencies[&h];
        assert_eq!(
            latency(Headline::NewJobMs),
            &vec![vec![40.0, 60.0], vec![20.0, 30.0]]
        );
        // New job after a block, from each tip change: P at 1.000 s, Q at 5.000 s.
        assert_eq!(
            latency(Headline::NewPrevhashJobMs),
            &vec![vec![41.0, 61.0], vec![20.0, 30.0]]
        );
        // No block found: no unit.
        assert!(latency(Headline::BlockPropagationMs).is_empty());
        // 100 bytes up in each of the window's 10 seconds, none down.
        assert_eq!(sv1.farm_tx_per_s, vec![100.0; 10]);
        assert_eq!(sv1.farm_rx_per_s, vec![0.0; 10]);
    }

    #[test]
    fn charts_are_read_back_as_written_and_another_version_is_refused() {
        let dir = scratch_dir("charts");
        let mut charts = Charts {
            schema: SCHEMA.into(),
            network_best: vec![(1.5, 312_500_000.0)],
            ..Charts::default()
        };
        charts.sides.insert(
            "sv1".into(),
            SideCharts {
                latencies: [(Headline::NewJobMs, vec![vec![1.0, 2.0]])].into(),
                ..SideCharts::default()
            },
        );
        let path = dir.join(model::run_dir::CHARTS_FILE);
        std::fs::write(&path, serde_json::to_string(&charts).unwrap()).unwrap();
        assert_eq!(Charts::read(&dir).unwrap(), charts);
        // A v1 file, its latencies a field each, reads as this version's.
        let v1 = r#"{"schema": "stratum-bench.charts.v1", "network_best": [[1.5, 312500000.0]],
            "sides": {"sv1": {"new_job_ms": [[1.0, 2.0]], "new_prevhash_job_ms": [],
            "block_propagation_ms": [], "farm_tx_per_s": [], "farm_rx_per_s": []}}}"#;
        std::fs::write(&path, v1).unwrap();
        let read = Charts::read(&dir).unwrap();
        assert_eq!(
            read.sides["sv1"].latencies[&Headline::NewJobMs],
            vec![vec![1.0, 2.0]]
        );
        assert_eq!((read.schema.as_str(), read.network_best.len()), (SCHEMA, 1));
        charts.schema = "stratum-bench.charts.v0".into();
        std::fs::write(&path, serde_json::to_string(&charts).unwrap()).unwrap();
        let err = format!("{:#}", Charts::read(&dir).unwrap_err());
        assert!(err.contains("charts.v0") && err.contains(SCHEMA), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
