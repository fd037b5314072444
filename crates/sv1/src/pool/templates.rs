//! Templates from any bitcoind-compatible node, turned into jobs.

use super::PoolConfig;
use crate::job::Job;
use anyhow::{Context, Result};
use bitcoin::consensus::encode::{serialize, VarInt};
use bitcoin::script::{Builder, PushBytesBuf};
use bitcoin::{BlockHash, CompactTarget, ScriptBuf, Transaction, TxMerkleNode, Txid};
use bitcoind_rpc::RpcClient;
use probe::{Event, Recorder};
use serde_json::{json, Value};
use std::str::FromStr;
use std::sync::Arc;
use sv1_wire::{Message, Method, Notify};

/// Bytes of extranonce1 (per connection) and extranonce2 (per miner) in the coinbase.
pub const EXTRANONCE1_SIZE: usize = 4;
pub const EXTRANONCE2_SIZE: usize = 8;

/// A getblocktemplate reply, with what a block on it needs kept ready.
#[derive(Debug)]
pub struct BlockTemplate {
    pub prev_hash: BlockHash,
    pub height: u32,
    pub value: u64,
    pub bits: CompactTarget,
    pub curtime: u32,
    pub version: i32,
    pub witness_commitment: Option<ScriptBuf>,
    pub branch: Vec<TxMerkleNode>,
    pub tx_count: usize,
    /// Every transaction's hex, concatenated: the body of a block after the coinbase.
    pub txs_hex: String,
    pub longpollid: Option<String>,
}

impl BlockTemplate {
    pub fn from_gbt(t: &Value) -> Result<BlockTemplate> {
        let field = |k: &str| {
            t.get(k)
                .with_context(|| format!("getblocktemplate lacks `{k}`"))
        };
        let txs = field("transactions")?
            .as_array()
            .context("`transactions` is not an array")?;
        let mut txs_hex = String::new();
        let mut txids = Vec::with_capacity(txs.len());
        for tx in txs {
            let data = tx["data"].as_str().context("a transaction lacks `data`")?;
            txs_hex.push_str(data);
            let txid = tx["txid"].as_str().context("a transaction lacks `txid`")?;
            txids.push(Txid::from_str(txid).context("a txid is not a hash")?);
        }
        let commitment = t
            .get("default_witness_commitment")
            .and_then(Value::as_str)
            .map(|h| hex::decode(h).map(ScriptBuf::from_bytes))
            .transpose()
            .context("`default_witness_commitment` is not hex")?;
        Ok(BlockTemplate {
            prev_hash: BlockHash::from_str(
                field("previousblockhash")?.as_str().unwrap_or_default(),
            )
            .context("`previousblockhash` is not a hash")?,
            height: field("height")?
                .as_u64()
                .context("`height` is not a number")? as u32,
            value: field("coinbasevalue")?
                .as_u64()
                .context("`coinbasevalue` is not a number")?,
            bits: CompactTarget::from_consensus(
                u32::from_str_radix(field("bits")?.as_str().unwrap_or_default(), 16)
                    .context("`bits` is not hex")?,
            ),
            curtime: field("curtime")?
                .as_u64()
                .context("`curtime` is not a number")? as u32,
            version: field("version")?
                .as_i64()
                .context("`version` is not a number")? as i32,
            witness_commitment: commitment,
            branch: mining::coinbase_merkle_branch(&txids),
            tx_count: txids.len(),
            txs_hex,
            longpollid: t
                .get("longpollid")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    pub fn marker_txid(&self) -> Option<Txid> {
        self.branch
            .first()
            .map(|n| Txid::from_raw_hash(n.to_raw_hash()))
    }

    /// The coinbase around the extranonces: (bytes before, bytes after), legacy serialised.
    pub fn coinbase_parts(&self, payout: &ScriptBuf, tag: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let extranonce = EXTRANONCE1_SIZE + EXTRANONCE2_SIZE;
        let height = Builder::new()
            .push_int(i64::from(self.height))
            .into_script();
        let mut script_sig = height.to_bytes();
        let pushed = tag.len() + extranonce;
        script_sig.push(u8::try_from(pushed).expect("tag is short"));
        script_sig.extend_from_slice(tag);

        let mut coinb1 = Vec::new();
        coinb1.extend_from_slice(&2i32.to_le_bytes()); // version
        coinb1.push(1); // one input
        coinb1.extend_from_slice(&[0u8; 32]);
        coinb1.extend_from_slice(&u32::MAX.to_le_bytes());
        coinb1.extend(serialize(&VarInt((script_sig.len() + extranonce) as u64)));
        coinb1.extend_from_slice(&script_sig);

        let mut outputs = vec![bitcoin::TxOut {
            value: bitcoin::Amount::from_sat(self.value),
            script_pubkey: payout.clone(),
        }];
        if let Some(c) = &self.witness_commitment {
            outputs.push(bitcoin::TxOut {
                value: bitcoin::Amount::ZERO,
                script_pubkey: c.clone(),
            });
        }
        let mut coinb2 = Vec::new();
        coinb2.extend_from_slice(&u32::MAX.to_le_bytes()); // sequence
        coinb2.extend(serialize(&outputs));
        coinb2.extend_from_slice(&0u32.to_le_bytes()); // lock time
        (coinb1, coinb2)
    }

    /// `submitblock` hex of a solved block: header, coinbase (with its witness reserved
    /// value when the template commits to witnesses), then the template's transactions.
    pub fn block_hex(&self, header: &bitcoin::block::Header, coinbase: &[u8]) -> Result<String> {
        let mut tx: Transaction =
            bitcoin::consensus::deserialize(coinbase).context("the coinbase does not parse")?;
        if self.witness_commitment.is_some() {
            tx.input[0].witness.push([0u8; 32]);
        }
        let mut head = serialize(header);
        head.extend(serialize(&VarInt(1 + self.tx_count as u64)));
        head.extend(serialize(&tx));
        let mut out = hex::encode(head);
        out.push_str(&self.txs_hex);
        Ok(out)
    }
}

/// A job the pool has sent, and the template it came from.
#[derive(Debug)]
pub struct PoolJob {
    /// The pool's count of jobs; the job id is its hex.
    pub number: u64,
    pub job: Job,
    pub template: Arc<BlockTemplate>,
    /// The `mining.notify` line (newline included), rendered once for every miner:
    /// `[0]` with clean_jobs false, `[1]` with it true.
    pub notify_lines: [Vec<u8>; 2],
}

impl PoolJob {
    pub fn new(number: u64, job: Job, template: Arc<BlockTemplate>) -> PoolJob {
        let line = |clean_jobs: bool| {
            let notify = Notify {
                clean_jobs,
                ..job.to_notify()
            };
            Message::notification(Method::Notify(notify)).to_line()
        };
        let notify_lines = [line(false), line(true)];
        PoolJob {
            number,
            job,
            template,
            notify_lines,
        }
    }
}

pub async fn fetch(rpc: &RpcClient, longpollid: Option<&str>) -> Result<BlockTemplate> {
    // A signet's node serves only a client that knows its rule; others ignore it.
    let mut request = json!({"rules": ["segwit", "signet"]});
    if let Some(id) = longpollid {
        request["longpollid"] = json!(id);
    }
    let reply: Value = rpc
        .call("getblocktemplate", json!([request]))
        .await
        .context("getblocktemplate failed")?;
    BlockTemplate::from_gbt(&reply)
}

/// Makes the job for `template` (its id a counter) and records the template.
pub fn job_for(
    cfg: &PoolConfig,
    template: BlockTemplate,
    job_number: u64,
    clean: bool,
    reason: &str,
    recorder: &Recorder,
) -> PoolJob {
    recorder.record(Event::PoolTemplate {
        height: template.height,
        prev_hash: template.prev_hash.to_string(),
        value_sats: template.value,
        marker_txid: template.marker_txid().map(|t| t.to_string()),
        reason: reason.to_string(),
    });
    let (coinb1, coinb2) = template.coinbase_parts(&cfg.payout_script, cfg.coinbase_tag.as_bytes());
    let job = Job {
        job_id: format!("{job_number:x}"),
        prev_hash: template.prev_hash,
        coinb1,
        coinb2,
        merkle_branch: template.branch.clone(),
        version: template.version,
        bits: template.bits,
        ntime: template.curtime,
        clean,
    };
    PoolJob::new(job_number, job, Arc::new(template))
}

/// The push of the coinbase tag must fit one byte of length.
pub fn check_tag(tag: &str) -> Result<()> {
    anyhow::ensure!(
        tag.len() + EXTRANONCE1_SIZE + EXTRANONCE2_SIZE <= 75,
        "coinbase tag {tag:?} is longer than 63 bytes"
    );
    let _ = PushBytesBuf::try_from(tag.as_bytes().to_vec()).context("coinbase tag")?;
    Ok(())
}
