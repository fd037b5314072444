//! Stratum V2 on the wire, shared by every SV2 role of ours: the node's Template Provider
//! face, the miner fleet and the tap each depend on this, never on one another.

pub mod keys;

pub use keys::AuthorityKeys;

use anyhow::Result;
use stratum_apps::network_helpers::noise_stream::NoiseTcpWriteHalf;
use stratum_apps::stratum_core::parsers_sv2::AnyMessageOwned;
use stratum_apps::utils::types::OutboundFrame;

/// Frames `msg` and writes it, encrypted, to `peer` (named in the error).
pub async fn send(writer: &mut NoiseTcpWriteHalf, msg: AnyMessageOwned, peer: &str) -> Result<()> {
    let frame = OutboundFrame::from_message(msg)
        .map_err(|e| anyhow::anyhow!("cannot frame a message: {e:?}"))?;
    writer
        .write_frame(frame)
        .await
        .map_err(|e| anyhow::anyhow!("cannot write to {peer}: {e}"))
}
