//! Blocks of ours on Core's chain: its template, our coinbase, our proof of work. What
//! funds a key on signet and what stands for the rest of the network in a run.

use crate::CoreNode;
use anyhow::{bail, Context, Result};
use bitcoin::{BlockHash, ScriptBuf};
use serde_json::{json, Value};
use sv1::pool::templates::{fetch, EXTRANONCE1_SIZE, EXTRANONCE2_SIZE};

/// A block ground on a template of Core's, ready to submit.
#[derive(Debug, Clone)]
pub struct SolvedBlock {
    pub hash: BlockHash,
    pub prev_hash: BlockHash,
    pub height: u32,
    /// Transactions besides the coinbase.
    pub tx_count: usize,
    hex: String,
}

impl CoreNode {
    /// A block on Core's current template, paying `payout`, its coinbase tagged `tag`,
    /// ground on `threads` threads (`nice`: at the lowest CPU priority, so the roles of a
    /// run beside it are not slowed). Its time is the template's; if no nonce of 2^32 meets the
    /// target (about e^-887 on signet), a second later.
    pub async fn solve(
        &self,
        payout: &ScriptBuf,
        tag: &[u8],
        threads: usize,
        nice: bool,
    ) -> Result<SolvedBlock> {
        let template = fetch(&self.rpc, None)
            .await
            .context("Bitcoin Core's getblocktemplate")?;
        let (mut coinbase, coinb2) = template.coinbase_parts(payout, tag);
        coinbase.extend([0; EXTRANONCE1_SIZE + EXTRANONCE2_SIZE]);
        coinbase.extend(coinb2);
        let tx: bitcoin::Transaction =
            bitcoin::consensus::deserialize(&coinbase).context("our coinbase does not parse")?;
        let header = bitcoin::block::Header {
            version: bitcoin::block::Version::from_consensus(template.version),
            prev_blockhash: template.prev_hash,
            merkle_root: mining::merkle_root_from_branch(
                tx.compute_txid().to_raw_hash(),
                &template.branch,
            ),
            time: template.curtime,
            bits: template.bits,
            nonce: 0,
        };
        let (done, solved) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("grind".into())
            .spawn(move || {
                if nice {
                    // SAFETY: setpriority on this thread's own id only lowers its priority
                    // (and that of the threads it starts, which inherit it).
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as u32, 19) };
                }
                let header = (0..).find_map(|later| {
                    let header = bitcoin::block::Header {
                        time: header.time + later,
                        ..header
                    };
                    mining::grind(&header, threads)
                });
                let _ = done.send(header);
            })?;
        let solved = solved
            .await?
            .expect("an endless search ends only with a header");
        Ok(SolvedBlock {
            hash: solved.block_hash(),
            prev_hash: template.prev_hash,
            height: template.height,
            tx_count: template.tx_count,
            hex: template.block_hex(&solved, &coinbase)?,
        })
    }

    /// Submits `block`; Core's refusal (a reason, or a duplicate) is the error.
    pub async fn submit(&self, block: &SolvedBlock) -> Result<()> {
        let answer: Value = self.call("submitblock", json!([block.hex])).await?;
        if !answer.is_null() {
            bail!(
                "Bitcoin Core refused our block {} at height {}: {answer}",
                block.hash,
                block.height
            );
        }
        Ok(())
    }
}
