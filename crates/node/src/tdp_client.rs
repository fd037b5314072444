//! A Template Distribution Protocol client: what a pool or JDC does towards a Template
//! Provider, for the template benchmark and the tests of the node's TP face.

use anyhow::{anyhow, bail, Context, Result};
use std::net::SocketAddr;
use std::time::Duration;
use stratum_apps::key_utils::Secp256k1PublicKey;
use stratum_apps::network_helpers::connect_with_noise;
use stratum_apps::network_helpers::noise_stream::{NoiseTcpReadHalf, NoiseTcpWriteHalf};
use stratum_apps::stratum_core::binary_sv2::Str0255Owned;
pub use stratum_apps::stratum_core::common_messages_sv2::Protocol;
use stratum_apps::stratum_core::common_messages_sv2::SetupConnectionOwned;
use stratum_apps::stratum_core::parsers_sv2::{
    AnyMessageOwned, CommonMessages, CommonMessagesOwned, TemplateDistribution,
    TemplateDistributionOwned,
};
use stratum_apps::stratum_core::template_distribution_sv2::{
    CoinbaseOutputConstraintsOwned, NewTemplateOwned, SetNewPrevHashOwned,
};
use stratum_apps::utils::types::OutboundFrame;

/// How long a message may take before the client gives up.
const PATIENCE: Duration = Duration::from_secs(10);

pub struct TdpClient {
    pub read: NoiseTcpReadHalf,
    pub write: NoiseTcpWriteHalf,
}

impl TdpClient {
    /// Connects over Noise, checking the TP's certificate against `authority`.
    pub async fn connect(addr: SocketAddr, authority: Secp256k1PublicKey) -> Result<TdpClient> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot reach the Template Provider at {addr}"))?;
        let (read, write) = connect_with_noise(tcp, Some(authority))
            .await
            .map_err(|e| anyhow!("Noise handshake with the Template Provider failed: {e:?}"))?
            .into_split();
        Ok(TdpClient { read, write })
    }

    pub async fn send(&mut self, msg: AnyMessageOwned) -> Result<()> {
        let frame = OutboundFrame::from_message(msg).map_err(|e| anyhow!("encode: {e:?}"))?;
        self.write
            .write_frame(frame)
            .await
            .map_err(|e| anyhow!("write: {e:?}"))
    }

    /// SetupConnection for `protocol`; `Err` carries the TP's error code when it refuses.
    pub async fn setup(&mut self, protocol: Protocol) -> Result<(), String> {
        let text = |s: &str| Str0255Owned::try_from(s.as_bytes().to_vec()).expect("short");
        self.send(AnyMessageOwned::Common(
            CommonMessagesOwned::SetupConnection(SetupConnectionOwned {
                protocol,
                min_version: 2,
                max_version: 2,
                flags: 0,
                endpoint_host: text("127.0.0.1"),
                endpoint_port: 0,
                vendor: text("stratum-bench"),
                hardware_version: text(""),
                firmware: text(""),
                device_id: text(""),
            }),
        ))
        .await
        .map_err(|e| e.to_string())?;
        let mut frame = self.read.read_frame().await.map_err(|e| format!("{e:?}"))?;
        let header = frame.header();
        match CommonMessages::try_from((header.msg_type(), frame.payload())) {
            Ok(CommonMessages::SetupConnectionSuccess(_)) => Ok(()),
            Ok(CommonMessages::SetupConnectionError(e)) => {
                Err(String::from_utf8_lossy(e.error_code.as_ref()).into())
            }
            other => Err(format!("unexpected answer to SetupConnection: {other:?}")),
        }
    }

    /// The next Template Distribution message.
    pub async fn next(&mut self) -> Result<TemplateDistributionOwned> {
        let mut frame = tokio::time::timeout(PATIENCE, self.read.read_frame())
            .await
            .map_err(|_| anyhow!("no message from the Template Provider within {PATIENCE:?}"))?
            .map_err(|e| anyhow!("the Template Provider's connection ended: {e:?}"))?;
        let header = frame.header();
        let message = TemplateDistribution::try_from((header.msg_type(), frame.payload()))
            .map_err(|e| anyhow!("not a Template Distribution message: {e:?}"))?
            .into_owned();
        Ok(message)
    }

    /// Tells the TP how much room the client's coinbase outputs need.
    pub async fn constraints(&mut self, max_additional_size: u32) -> Result<()> {
        self.send(AnyMessageOwned::TemplateDistribution(
            TemplateDistributionOwned::CoinbaseOutputConstraints(CoinbaseOutputConstraintsOwned {
                coinbase_output_max_additional_size: max_additional_size,
                coinbase_output_max_additional_sigops: 4,
            }),
        ))
        .await
    }

    /// The future template of a new tip and the SetNewPrevHash that activates it.
    pub async fn new_tip(&mut self) -> Result<(NewTemplateOwned, SetNewPrevHashOwned)> {
        let TemplateDistributionOwned::NewTemplate(t) = self.next().await? else {
            bail!("expected NewTemplate first");
        };
        let TemplateDistributionOwned::SetNewPrevHash(p) = self.next().await? else {
            bail!("expected SetNewPrevHash after a future NewTemplate");
        };
        if !t.future_template || t.template_id != p.template_id {
            bail!("a new tip needs a future template and its SetNewPrevHash");
        }
        Ok((t, p))
    }
}
