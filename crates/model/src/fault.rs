//! How a link's far end fails in a scenario's outage (`faults`).

use serde::{Deserialize, Serialize};

/// How the far end fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    Drop,
    Stall,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Drop => "drop",
            FaultKind::Stall => "stall",
        }
    }
}
