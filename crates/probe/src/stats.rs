//! Distribution summaries: what every latency and value is reported as.

use serde::{Deserialize, Serialize};

/// `count`, `mean`, `p50`, `p90`, `p99`, `max` of a sample (nearest-rank percentiles).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub count: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    /// The 95% interval of the mean, where the analysis computed one by the samples'
    /// independent units (the tips or templates they belong to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ci: Option<(f64, f64)>,
    /// Those independent units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units: Option<usize>,
}

impl Dist {
    pub fn of(samples: &[f64]) -> Dist {
        let sorted = sorted_finite(samples);
        let n = sorted.len();
        let pct = |p: f64| nearest_rank(&sorted, p);
        Dist {
            count: n,
            mean: (n > 0).then(|| sorted.iter().sum::<f64>() / n as f64),
            p50: pct(0.50),
            p90: pct(0.90),
            p99: pct(0.99),
            max: sorted.last().copied(),
            mean_ci: None,
            units: None,
        }
    }
}

/// The `q` quantile (0..=1) of `samples`, nearest rank; `None` when there are none.
pub fn percentile(samples: &[f64], q: f64) -> Option<f64> {
    nearest_rank(&sorted_finite(samples), q)
}

fn sorted_finite(samples: &[f64]) -> Vec<f64> {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    sorted
}

fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    (n > 0).then(|| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1])
}

/// A plain-text table of distributions, one row per name, for terminal output.
pub fn table(unit: &str, rows: &[(&str, Dist)]) -> String {
    let width = rows
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0)
        .max(unit.len());
    let mut out = format!(
        "{unit:<width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "count", "mean", "p50", "p90", "p99", "max"
    );
    let cell = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    for (name, d) in rows {
        out.push_str(&format!(
            "{name:<width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            d.count,
            cell(d.mean),
            cell(d.p50),
            cell(d.p90),
            cell(d.p99),
            cell(d.max)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Dist::of(&xs);
        assert_eq!(d.count, 100);
        assert_eq!(d.mean, Some(50.5));
        assert_eq!(
            (d.p50, d.p90, d.p99, d.max),
            (Some(50.0), Some(90.0), Some(99.0), Some(100.0))
        );
        assert!(table("ms", &[("x", d.clone())]).contains("50.500"));
        assert_eq!(percentile(&xs, 0.95), Some(95.0));
        let empty = Dist::of(&[]);
        assert_eq!((empty.count, empty.p50), (0, None));
    }
}
