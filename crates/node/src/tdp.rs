//! The SV2 Template Distribution Protocol face: the node as a Template Provider.
//!
//! A pool (or a Job Declarator Client) connects over Noise NX with the node as responder,
//! sends SetupConnection for the template distribution protocol and its
//! CoinbaseOutputConstraints, then gets a future NewTemplate plus SetNewPrevHash on every
//! new tip and a NewTemplate for updates on the same tip. Templates are the node's own (the
//! same assembly getblocktemplate uses, marker transaction included), so a job is tied to
//! its template by identity on every face. SubmitSolution goes through the same
//! validation as submitblock.
//!
//! Update policy ([`mining::refresh`], the rule every side's template source follows): on
//! a new tip a template is built for the client at once; `interval` after the last new tip
//! or template sent, when the mempool moved, a new one is built and sent if its fees grew
//! by at least `fee_threshold_sats` (else it looks again a second later). The
//! client's templates are its own (not getblocktemplate's cache), so when several pools
//! share the node, none of them waits on another's refresh timing.

use crate::shared::Shared;
use crate::template::Template;
use anyhow::{bail, Context, Result};
use bitcoin::hashes::Hash;
use mining::refresh::{RefreshPolicy, RefreshTimer};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use stratum_apps::network_helpers::accept_noise_connection;
use stratum_apps::network_helpers::noise_stream::{NoiseTcpReadHalf, NoiseTcpWriteHalf};
use stratum_apps::stratum_core::binary_sv2::{
    B016MOwned, B0255Owned, B064KOwned, Seq0255Owned, Seq064KOwned, Str0255Owned, U256Owned,
};
use stratum_apps::stratum_core::codec_sv2::SerializedFrame;
use stratum_apps::stratum_core::common_messages_sv2::{
    Protocol, SetupConnectionErrorOwned, SetupConnectionSuccess,
};
use stratum_apps::stratum_core::parsers_sv2::{
    AnyMessageOwned, CommonMessages, CommonMessagesOwned, TemplateDistribution,
    TemplateDistributionOwned,
};
use stratum_apps::stratum_core::template_distribution_sv2::{
    NewTemplateOwned, RequestTransactionDataErrorOwned, RequestTransactionDataSuccessOwned,
    SetNewPrevHashOwned, SubmitSolution,
};
use stratum_apps::utils::protocol_message_type::{protocol_message_type, MessageType};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The SV2 protocol version this face speaks.
const PROTOCOL_VERSION: u16 = 2;
/// Validity of the Noise certificates the node signs with its authority key.
const CERT_VALIDITY_S: u64 = 24 * 3600;

/// The authority key pair a Template Provider signs its Noise certificates with.
pub use sv2_wire::AuthorityKeys;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TdpOptions {
    pub bind: SocketAddr,
    pub keys: AuthorityKeys,
    /// How often the current template is offered on the same tip.
    #[serde(with = "model::duration")]
    pub interval: Duration,
    /// Minimum fee gain for an update on the same tip to be sent.
    pub fee_threshold_sats: u64,
}

impl TdpOptions {
    /// The same-tip refresh rule every template source follows.
    pub fn refresh_policy(&self) -> RefreshPolicy {
        RefreshPolicy {
            interval: self.interval,
            fee_threshold_sats: self.fee_threshold_sats,
        }
    }
}

/// Binds the TDP listener and serves every connection on its own task.
pub async fn start(shared: Arc<Shared>, opts: TdpOptions) -> Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(opts.bind).await.with_context(|| {
        format!(
            "cannot listen for Template Distribution on {} (port {} in use? choose another with --tdp-bind)",
            opts.bind,
            opts.bind.port()
        )
    })?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let (stream, peer) = probe::listen::accept_next("TDP", || listener.accept()).await;
            let _ = stream.set_nodelay(true);
            let (shared, opts) = (shared.clone(), opts.clone());
            tokio::spawn(async move {
                match serve(shared, stream, &opts, &format!("tdp {peer}")).await {
                    Ok(()) => tracing::info!(%peer, "TDP client left"),
                    Err(e) => {
                        tracing::warn!(%peer, error = format!("{e:#}"), "TDP connection closed")
                    }
                }
            });
        }
    });
    Ok((addr, task))
}

/// What a client sent, decoded off its connection by the reader task.
pub(crate) enum Inbound {
    Constraints { max_additional_size: u32 },
    RequestTransactionData { template_id: u64 },
    Solution(Solution),
}

pub(crate) struct Solution {
    template_id: u64,
    version: u32,
    time: u32,
    nonce: u32,
    coinbase: Vec<u8>,
}

/// Coinbase bytes a pool may add beyond the BIP34 height and the witness commitment: the
/// space block assembly keeps free (4,000 weight units, as bitcoind) less a bare coinbase.
const MAX_ADDITIONAL_COINBASE_BYTES: u32 = 850;

/// One TDP client's connection; `asker` names it in the node's record of its builds.
async fn serve(
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    opts: &TdpOptions,
    asker: &str,
) -> Result<()> {
    let noise =
        accept_noise_connection(stream, opts.keys.public, opts.keys.secret, CERT_VALIDITY_S)
            .await
            .map_err(|e| anyhow::anyhow!("Noise handshake failed: {e}"))?;
    let (mut reader, mut writer) = noise.into_split();

    set_up_connection(&mut reader, &mut writer).await?;

    // A reader task decodes frames, since a frame read cannot be cancelled halfway.
    let (tx, mut inbound) = mpsc::unbounded_channel();
    let mut read_task = tokio::spawn(async move {
        loop {
            let item = read_inbound(&mut reader).await?;
            if tx.send(item).is_err() {
                return Ok::<(), anyhow::Error>(());
            }
        }
    });

    let mut tips = shared.subscribe_tip();
    let mut refresh = RefreshTimer::start(opts.refresh_policy(), Instant::now());
    let mut constrained = false;
    let mut last: Option<Arc<Template>> = None;
    // Every template sent on the current tip, by id: a solution or a transaction request
    // may name any of them, however many the node has built since for its other clients.
    let mut sent: HashMap<u64, Arc<Template>> = HashMap::new();
    loop {
        tokio::select! {
            item = inbound.recv() => {
                let Some(item) = item else {
                    return match (&mut read_task).await {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(e),
                        Err(e) => Err(anyhow::anyhow!("reader task failed: {e}")),
                    };
                };
                match item {
                    Inbound::Constraints { max_additional_size } => {
                        if max_additional_size > MAX_ADDITIONAL_COINBASE_BYTES {
                            tracing::warn!(
                                max_additional_size,
                                reserved = MAX_ADDITIONAL_COINBASE_BYTES,
                                "coinbase outputs larger than the space templates keep free; blocks may exceed the weight limit"
                            );
                        }
                        if !constrained {
                            constrained = true;
                            tips.mark_unchanged();
                            let t = send_new_tip(&shared, &mut writer, asker).await?;
                            sent = HashMap::from([(t.id, t.clone())]);
                            last = Some(t);
                            refresh.restart(Instant::now());
                        }
                    }
                    Inbound::RequestTransactionData { template_id } => {
                        let template = sent.get(&template_id).cloned();
                        sv2_wire::send(&mut writer, transaction_data(template_id, template), "the TDP client").await?;
                    }
                    Inbound::Solution(s) => match sent.get(&s.template_id) {
                        Some(t) => submit_solution(&shared, t, s),
                        None => tracing::warn!(
                            template_id = s.template_id,
                            "SubmitSolution for a template not sent on the current tip (a stale solution); ignored"
                        ),
                    },
                }
            }
            changed = tips.changed(), if constrained => {
                if changed.is_err() {
                    return Ok(());
                }
                // The tip may already be the one last sent (our own sync announced it).
                let tip = *tips.borrow_and_update();
                if last.as_ref().is_none_or(|l| l.prev_hash != tip) {
                    let t = send_new_tip(&shared, &mut writer, asker).await?;
                    sent = HashMap::from([(t.id, t.clone())]);
                    last = Some(t);
                    refresh.restart(Instant::now());
                }
            }
            _ = tokio::time::sleep_until(refresh.due()), if constrained => {
                // Due: a new template when the mempool moved since the last one sent (on
                // this tip), sent when its fees grew enough; otherwise look again shortly.
                let moved = {
                    let state = shared.sync();
                    last.as_ref().is_some_and(|l| {
                        l.prev_hash == state.tip_hash()
                            && l.mempool_version != state.mempool().version()
                    })
                };
                let update = moved.then(|| shared.build_template(asker));
                let policy = refresh.policy();
                // Built after the lock was let go: on a tip that moved since, the new tip's
                // own template (future, then its prev hash) is on its way instead.
                let same_tip = |t: &Template, l: &Template| t.prev_hash == l.prev_hash;
                match update.filter(|t| last.as_ref().is_some_and(|l| same_tip(t, l) && policy.worth_sending(l.fees, t.fees))) {
                    Some(t) => {
                        sv2_wire::send(&mut writer, new_template(&t, false), "the TDP client").await?;
                        sent.insert(t.id, t.clone());
                        last = Some(t);
                        refresh.restart(Instant::now());
                    }
                    None => refresh.recheck(Instant::now()),
                }
            }
        }
    }
}

/// Answers the client's SetupConnection: success for the template distribution protocol
/// at our version, else the SV2 error code, and the connection ends.
async fn set_up_connection(
    reader: &mut NoiseTcpReadHalf,
    writer: &mut NoiseTcpWriteHalf,
) -> Result<()> {
    // SetupConnection comes first, for the template distribution protocol. The frame is
    // dropped before the reader moves on: a read half dropped while one of its frames lives
    // spins forever (buffer_sv2 waits for every slice of its pool to come back).
    let (protocol, min_version, max_version) = {
        let mut frame = reader
            .read_frame()
            .await
            .map_err(|e| anyhow::anyhow!("no SetupConnection: {e}"))?;
        let header = frame.header();
        if protocol_message_type(header.ext_type(), header.msg_type()) != MessageType::Common {
            bail!(
                "expected SetupConnection, got message type {:#x}",
                header.msg_type()
            );
        }
        let setup = CommonMessages::try_from((header.msg_type(), frame.payload()))
            .map_err(|e| anyhow::anyhow!("malformed common message: {e:?}"))?;
        let CommonMessages::SetupConnection(setup) = setup else {
            bail!("expected SetupConnection, got {setup}");
        };
        (setup.protocol, setup.min_version, setup.max_version)
    };
    let error = if protocol != Protocol::TemplateDistributionProtocol {
        Some("unsupported-protocol")
    } else if min_version > PROTOCOL_VERSION || max_version < PROTOCOL_VERSION {
        Some("protocol-version-mismatch")
    } else {
        None
    };
    if let Some(code) = error {
        let reply = SetupConnectionErrorOwned {
            flags: 0,
            error_code: Str0255Owned::try_from(code.as_bytes().to_vec()).expect("short code"),
        };
        sv2_wire::send(
            writer,
            AnyMessageOwned::Common(CommonMessagesOwned::SetupConnectionError(reply)),
            "the TDP client",
        )
        .await?;
        bail!("refused SetupConnection: {code}");
    }
    let success = SetupConnectionSuccess {
        used_version: PROTOCOL_VERSION,
        flags: 0,
    };
    sv2_wire::send(
        writer,
        AnyMessageOwned::Common(success.into()),
        "the TDP client",
    )
    .await?;
    tracing::info!("TDP client set up");
    Ok(())
}

async fn read_inbound(reader: &mut NoiseTcpReadHalf) -> Result<Inbound> {
    let frame = reader
        .read_frame()
        .await
        .map_err(|e| anyhow::anyhow!("connection ended: {e}"))?;
    decode_inbound(frame)
}

/// What a client's frame asks, or why it may not be sent on a TDP connection.
pub(crate) fn decode_inbound(mut frame: SerializedFrame) -> Result<Inbound> {
    let header = frame.header();
    if protocol_message_type(header.ext_type(), header.msg_type())
        != MessageType::TemplateDistribution
    {
        bail!(
            "unexpected message type {:#x} (extension {:#x}) on a TDP connection",
            header.msg_type(),
            header.ext_type()
        );
    }
    let msg = TemplateDistribution::try_from((header.msg_type(), frame.payload()))
        .map_err(|e| anyhow::anyhow!("malformed TDP message: {e:?}"))?;
    Ok(match msg {
        TemplateDistribution::CoinbaseOutputConstraints(c) => Inbound::Constraints {
            max_additional_size: c.coinbase_output_max_additional_size,
        },
        TemplateDistribution::RequestTransactionData(r) => Inbound::RequestTransactionData {
            template_id: r.template_id,
        },
        TemplateDistribution::SubmitSolution(SubmitSolution {
            template_id,
            version,
            header_timestamp,
            header_nonce,
            coinbase_tx,
        }) => Inbound::Solution(Solution {
            template_id,
            version,
            time: header_timestamp,
            nonce: header_nonce,
            coinbase: coinbase_tx.as_ref().to_vec(),
        }),
        other => bail!("a TDP client may not send {other}"),
    })
}

/// A template on the new tip, built for this client, as a future template; then the new
/// prev hash that activates it.
async fn send_new_tip(
    shared: &Shared,
    writer: &mut NoiseTcpWriteHalf,
    asker: &str,
) -> Result<Arc<Template>> {
    let template = shared.build_template(asker);
    let time = shared.sync().header_time();
    sv2_wire::send(writer, new_template(&template, true), "the TDP client").await?;
    let prev = SetNewPrevHashOwned {
        template_id: template.id,
        prev_hash: U256Owned::from(template.prev_hash.to_byte_array()),
        header_timestamp: time,
        n_bits: template.bits.to_consensus(),
        target: U256Owned::from(template.target().to_le_bytes()),
    };
    sv2_wire::send(
        writer,
        AnyMessageOwned::TemplateDistribution(TemplateDistributionOwned::SetNewPrevHash(prev)),
        "the TDP client",
    )
    .await?;
    Ok(template)
}

fn new_template(t: &Template, future: bool) -> AnyMessageOwned {
    // The coinbase starts with the BIP34 height; the witness commitment is the one output
    // the template needs.
    let height = bitcoin::script::Builder::new()
        .push_int(i64::from(t.height))
        .into_script();
    let commitment = bitcoin::TxOut {
        value: bitcoin::Amount::ZERO,
        script_pubkey: t.witness_commitment.clone(),
    };
    let path: Vec<U256Owned> = t
        .coinbase_merkle_branch
        .iter()
        .map(|n| U256Owned::from(n.to_byte_array()))
        .collect();
    AnyMessageOwned::TemplateDistribution(TemplateDistributionOwned::NewTemplate(
        NewTemplateOwned {
            template_id: t.id,
            future_template: future,
            version: t.version as u32,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255Owned::try_from(height.to_bytes()).expect("a few bytes"),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: t.value(),
            coinbase_tx_outputs_count: 1,
            coinbase_tx_outputs: B064KOwned::try_from(bitcoin::consensus::serialize(&commitment))
                .expect("one output"),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255Owned::new(path).expect("a merkle path is at most 32 deep"),
        },
    ))
}

fn transaction_data(template_id: u64, template: Option<Arc<Template>>) -> AnyMessageOwned {
    let reply = match template {
        Some(t) => {
            let txs: Vec<B016MOwned> = t
                .txs
                .iter()
                .map(|m| {
                    B016MOwned::try_from(bitcoin::consensus::serialize(&m.tx))
                        .expect("a transaction is under 16 MB")
                })
                .collect();
            TemplateDistributionOwned::RequestTransactionDataSuccess(
                RequestTransactionDataSuccessOwned {
                    template_id,
                    excess_data: B064KOwned::try_from(Vec::new()).expect("empty"),
                    transaction_list: Seq064KOwned::new(txs).expect("under 65,536 transactions"),
                },
            )
        }
        None => TemplateDistributionOwned::RequestTransactionDataError(
            RequestTransactionDataErrorOwned {
                template_id,
                error_code: Str0255Owned::try_from(b"template-id-not-found".to_vec())
                    .expect("short code"),
            },
        ),
    };
    AnyMessageOwned::TemplateDistribution(reply)
}

/// Rebuilds the block from its template and judges it as submitblock does.
pub(crate) fn submit_solution(shared: &Shared, template: &Template, s: Solution) {
    let coinbase: bitcoin::Transaction = match bitcoin::consensus::deserialize(&s.coinbase) {
        Ok(tx) => tx,
        Err(e) => {
            tracing::warn!(error = %e, "SubmitSolution with an undecodable coinbase; ignored");
            return;
        }
    };
    let header = bitcoin::block::Header {
        version: bitcoin::block::Version::from_consensus(s.version as i32),
        prev_blockhash: template.prev_hash,
        merkle_root: bitcoin::TxMerkleNode::all_zeros(),
        time: s.time,
        bits: template.bits,
        nonce: s.nonce,
    };
    let block = crate::template::assemble_block(
        header,
        coinbase,
        &template.coinbase_merkle_branch,
        template.txs.iter().map(|t| t.tx.clone()),
    );
    let hash = block.block_hash();
    match shared.judge_block(block, "tdp") {
        None => tracing::info!(%hash, "block from SubmitSolution accepted"),
        Some(reason) => tracing::info!(%hash, %reason, "block from SubmitSolution rejected"),
    }
}
