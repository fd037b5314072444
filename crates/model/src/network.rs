//! The simulated network's faces a scenario chooses: the Mining IPC interface our node
//! serves, the mempool it starts from, and how the rest of the network's blocks arrive.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How the rest of the network's blocks arrive (`network.arrivals`), at the network's own
/// rate either way (`block_interval` over the share of the hashrate not ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// As blocks arrive: a Poisson process, its gaps drawn from the seed.
    #[default]
    Poisson,
    /// One every mean gap exactly: a known number of the network's tips in a window, for a
    /// test or a comparison that needs that many whatever the draw. Not how blocks arrive:
    /// no tip follows another closely and none keeps miners waiting long, so stale work
    /// and its worth are not the network's.
    Regular,
}

impl Arrivals {
    /// The gap after one of the network's blocks: drawn from `draw` (an exponential of
    /// mean `mean_gap`) for Poisson arrivals, `mean_gap` itself for regular ones.
    pub fn gap(self, mean_gap: Duration, draw: impl FnOnce() -> Duration) -> Duration {
        match self {
            Arrivals::Poisson => draw(),
            Arrivals::Regular => mean_gap,
        }
    }
}

/// The Mining interface the face serves, as the Bitcoin Core release it stands for. The
/// two share `Init.makeMining @3` and every method of v31; v32.1 adds Mining.submitBlock
/// @7, getTransactionsByTxID @8 and getTransactionsByWitnessID @9, and moves
/// BlockTemplate.submitSolution from @7 (a bare result) to @10 (with reason and debug).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum MiningInterface {
    /// Bitcoin Core v31: the methods v32 added answer "Method not implemented.", as
    /// Cap'n Proto answers for a method a server does not have.
    #[default]
    V31,
    /// Bitcoin Core v32.1: the old submitSolution @7 is refused with Core's words, so a
    /// client built for v31 (the SRI roles pinned here) cannot submit blocks to it.
    V32,
}

impl TryFrom<u8> for MiningInterface {
    type Error = String;
    fn try_from(version: u8) -> Result<Self, String> {
        match version {
            31 => Ok(Self::V31),
            32 => Ok(Self::V32),
            other => Err(format!(
                "Mining IPC interface {other} is not served: 31 (Bitcoin Core v31) or 32 (v32.1)"
            )),
        }
    }
}

impl From<MiningInterface> for u8 {
    fn from(interface: MiningInterface) -> u8 {
        match interface {
            MiningInterface::V31 => 31,
            MiningInterface::V32 => 32,
        }
    }
}

impl std::str::FromStr for MiningInterface {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let version: u8 = (s.parse()).map_err(|_| format!("'{s}' is not 31 or 32"))?;
        Self::try_from(version)
    }
}

impl std::fmt::Display for MiningInterface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", u8::from(*self))
    }
}

/// Named starting points for the node's mempool (`network.mempool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MempoolPreset {
    /// Busy mainnet: several transactions a second, fees of a few sat/vB with a long tail.
    Mainnet,
    /// testnet4-like: few transactions, almost all at the 1 sat/vB floor.
    Testnet,
    /// No transactions: templates carry only the coinbase and the marker.
    Empty,
}

impl MempoolPreset {
    pub const NAMES: &'static str = "mainnet, testnet, empty";

    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "mainnet" => Ok(Self::Mainnet),
            "testnet" => Ok(Self::Testnet),
            "empty" => Ok(Self::Empty),
            other => Err(format!(
                "unknown mempool preset {other:?} (one of {})",
                Self::NAMES
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_gap_is_the_mean_and_a_poisson_one_is_drawn() {
        let every = Duration::from_millis(2500);
        assert_eq!(Arrivals::Regular.gap(every, || Duration::ZERO), every);
        assert_eq!(
            Arrivals::Poisson.gap(every, || Duration::from_secs(7)),
            Duration::from_secs(7)
        );
    }
}
