//! Which configured delay each latency's path crosses on a side, and what the roles and
//! relays added beyond it at the median.
//!
//! Rules: on a side with a farm node (configurations A and B) new jobs are built and
//! handed out at the farm, crossing no configured delay; a new block reaches the farm's
//! node, and a block found there reaches the network, over the nodes' peer hop. On every
//! other side all three cross the side's link one way.

use crate::manifest::SideRoles;
use probe::Dist;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathReading {
    /// What the path crosses, in words.
    pub crosses: String,
    /// The configured one-way delay on it.
    pub delay_ms: f64,
    /// The median beyond that delay; `None` without samples.
    pub added_p50_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathReadings {
    pub new_job: PathReading,
    pub new_prevhash_job: PathReading,
    pub block_propagation: PathReading,
}

/// The readings of a side whose link has `link_rtt_ms`, from its three distributions.
pub fn path_readings(
    side: &SideRoles,
    link_rtt_ms: f64,
    new_job: &Dist,
    new_prevhash_job: &Dist,
    block_propagation: &Dist,
) -> PathReadings {
    let reading = |crosses: &str, delay_ms: f64, d: &Dist| PathReading {
        crosses: crosses.into(),
        delay_ms,
        added_p50_ms: d.p50.map(|p50| p50 - delay_ms),
    };
    match side.farm_node_role {
        Some(_) => {
            let hop = side.farm_node_hop_ms.unwrap_or(0.0);
            PathReadings {
                new_job: reading(
                    "nothing configured: jobs are made at the farm",
                    0.0,
                    new_job,
                ),
                new_prevhash_job: reading("the nodes' peer hop", hop, new_prevhash_job),
                block_propagation: reading("the nodes' peer hop", hop, block_propagation),
            }
        }
        None => {
            let one_way = link_rtt_ms / 2.0;
            PathReadings {
                new_job: reading("the link, one way", one_way, new_job),
                new_prevhash_job: reading("the link, one way", one_way, new_prevhash_job),
                block_propagation: reading("the link, one way", one_way, block_propagation),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn a_farm_sides_jobs_cross_no_delay_and_its_blocks_the_peer_hop() {
        let (_, a) = farm_side(); // peer hop 20 ms, link 40 ms round trip
        let r = path_readings(
            &a,
            40.0,
            &Dist::of(&[3.0]),
            &Dist::of(&[27.5]),
            &Dist::of(&[]),
        );
        assert_eq!(
            (r.new_job.delay_ms, r.new_job.added_p50_ms),
            (0.0, Some(3.0))
        );
        assert_eq!(r.new_prevhash_job.added_p50_ms, Some(7.5));
        assert_eq!(r.block_propagation.delay_ms, 20.0);
        assert_eq!(r.block_propagation.added_p50_ms, None);
    }

    #[test]
    fn any_other_side_crosses_its_link_one_way() {
        let (_, sv1) = sv1_side();
        let r = path_readings(
            &sv1,
            100.0,
            &Dist::of(&[52.0]),
            &Dist::of(&[61.0]),
            &Dist::of(&[50.5]),
        );
        assert_eq!(r.new_job.added_p50_ms, Some(2.0));
        assert_eq!(r.new_prevhash_job.added_p50_ms, Some(11.0));
        assert_eq!(r.block_propagation.added_p50_ms, Some(0.5));
        assert_eq!(r.new_job.crosses, "the link, one way");
    }
}
