//! Coins of a key of ours on Core's private chain, and the transactions that spend them:
//! what fills Core's mempool, as a wallet would, for a node built without one.

use crate::CoreNode;
use anyhow::{bail, Context, Result};
use bitcoin::secp256k1::{rand::SeedableRng as _, All, Message, Secp256k1, SecretKey};
use bitcoin::sighash::{EcdsaSighashType, SighashCache};
use bitcoin::{
    absolute, transaction, Address, Amount, CompressedPublicKey, OutPoint, ScriptBuf, Sequence,
    Transaction, TxIn, TxOut, Txid, Witness,
};
use rand::Rng;
use serde_json::{json, Value};

/// Outputs of one splitting transaction: about 62 kvB, under Core's 100 kvB standard limit.
const SPLIT: usize = 2_000;
/// Blocks before a coinbase can be spent.
const COINBASE_MATURITY: u32 = 100;
/// A P2WPKH input spent to one P2WPKH output: 10.5 vB of transaction, 68 of input, 31 of
/// output, rounded up.
const ONE_IN_ONE_OUT_VB: u64 = 110;
/// Transactions sent to Core per JSON-RPC batch.
const BATCH: usize = 250;

/// A coin of ours: where it is, and what it holds.
#[derive(Debug, Clone, Copy)]
struct Coin {
    outpoint: OutPoint,
    value: Amount,
}

/// A key of ours, its confirmed coins, and the seeded draws of the fees that spend them.
pub struct Funds {
    secp: Secp256k1<All>,
    secret: SecretKey,
    public: CompressedPublicKey,
    script: ScriptBuf,
    pub address: Address,
    coins: Vec<Coin>,
    rng: rand_chacha::ChaCha8Rng,
}

impl Funds {
    /// At least `coins` confirmed coins of ours: coinbases to our key are mined (by Core on
    /// regtest, by our grinding on signet) and matured, and we split each into up to 2,000
    /// outputs, confirmed by one more block.
    pub async fn mine_and_split(core: &CoreNode, coins: usize, seed: u64) -> Result<Funds> {
        let secp = Secp256k1::new();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let secret = SecretKey::new(&mut rng);
        let public = CompressedPublicKey(secret.public_key(&secp));
        let address = Address::p2wpkh(&public, core.chain.network());
        let mut funds = Funds {
            script: address.script_pubkey(),
            secp,
            secret,
            public,
            address,
            coins: Vec::new(),
            rng,
        };
        let coinbases = coins.div_ceil(SPLIT).max(1);
        let hashes = core
            .mine_to(&funds.address, coinbases as u32 + COINBASE_MATURITY)
            .await?;
        let mut splits = Vec::with_capacity(coinbases);
        for (i, hash) in hashes.iter().take(coinbases).enumerate() {
            let block: Value = core.call("getblock", json!([hash.to_string(), 2])).await?;
            let coinbase = &block["tx"][0];
            let txid: Txid = (coinbase["txid"].as_str().unwrap_or_default())
                .parse()
                .context("getblock's coinbase txid")?;
            let btc = coinbase["vout"][0]["value"]
                .as_f64()
                .context("getblock's coinbase value")?;
            let coin = Coin {
                outpoint: OutPoint { txid, vout: 0 },
                value: Amount::from_btc(btc)?,
            };
            let outputs = SPLIT.min(coins.saturating_sub(i * SPLIT)).max(1);
            splits.push(funds.split(coin, outputs)?);
        }
        send(core, &splits).await?;
        // A block holds about 16 splits: mine until all of them are confirmed, so no
        // transaction of the fill spends an unconfirmed one.
        for _ in 0..=splits.len() / 15 {
            core.mine_to(&funds.address, 1).await?;
            let pool: Value = core.call("getmempoolinfo", json!([])).await?;
            if pool["size"] == 0 {
                break;
            }
        }
        let pool: Value = core.call("getmempoolinfo", json!([])).await?;
        anyhow::ensure!(
            pool["size"] == 0,
            "Bitcoin Core left {} of our splitting transactions unmined",
            pool["size"]
        );
        funds.coins = (splits.iter())
            .flat_map(|tx| {
                let txid = tx.compute_txid();
                (tx.output.iter().enumerate()).map(move |(vout, out)| Coin {
                    outpoint: OutPoint {
                        txid,
                        vout: vout as u32,
                    },
                    value: out.value,
                })
            })
            .collect();
        Ok(funds)
    }

    /// Coins left to spend.
    pub fn coins(&self) -> usize {
        self.coins.len()
    }

    /// A coin of ours spent back to us at a fee rate drawn from 1 to 50 sat/vB (what
    /// gives a template an order to choose), or `None` once all are spent.
    pub fn spend_one(&mut self) -> Option<Transaction> {
        let coin = self.coins.pop()?;
        let fee = Amount::from_sat(ONE_IN_ONE_OUT_VB * self.rng.gen_range(1..=50));
        let out = TxOut {
            value: coin.value.checked_sub(fee)?,
            script_pubkey: self.script.clone(),
        };
        Some(self.signed(coin, vec![out]))
    }

    /// `coin` split into `n` equal outputs of ours, paying at least 1 sat/vB (13 vB of
    /// transaction with up to 65,535 outputs' count, 68 of input, 31 a output).
    fn split(&self, coin: Coin, n: usize) -> Result<Transaction> {
        let vbytes = 13 + 68 + 31 * n as u64;
        let Some(each) = coin
            .value
            .checked_sub(Amount::from_sat(vbytes))
            .map(|v| v / n as u64)
        else {
            bail!("a coin of {} cannot pay for splitting", coin.value);
        };
        let out = TxOut {
            value: each,
            script_pubkey: self.script.clone(),
        };
        Ok(self.signed(coin, vec![out; n]))
    }

    /// A transaction spending `coin` to `outputs`, signed (P2WPKH, SIGHASH_ALL).
    fn signed(&self, coin: Coin, outputs: Vec<TxOut>) -> Transaction {
        let mut tx = Transaction {
            version: transaction::Version::TWO,
            lock_time: absolute::LockTime::ZERO,
            input: vec![TxIn {
                previous_output: coin.outpoint,
                script_sig: ScriptBuf::new(),
                sequence: Sequence::ENABLE_RBF_NO_LOCKTIME,
                witness: Witness::new(),
            }],
            output: outputs,
        };
        let mut cache = SighashCache::new(&mut tx);
        let sighash = cache
            .p2wpkh_signature_hash(0, &self.script, coin.value, EcdsaSighashType::All)
            .expect("input 0 exists and the script is P2WPKH");
        let signature = bitcoin::ecdsa::Signature {
            signature: self.secp.sign_ecdsa(&Message::from(sighash), &self.secret),
            sighash_type: EcdsaSighashType::All,
        };
        *cache.witness_mut(0).expect("input 0 exists") =
            Witness::p2wpkh(&signature, &self.public.0);
        tx
    }
}

/// Sends `txs` to Core's mempool, in JSON-RPC batches; the first refusal is the error.
pub async fn send(core: &CoreNode, txs: &[Transaction]) -> Result<()> {
    for chunk in txs.chunks(BATCH) {
        let batch: Vec<Value> = (chunk.iter().enumerate())
            .map(|(id, tx)| {
                let hex = bitcoin::consensus::encode::serialize_hex(tx);
                json!({"jsonrpc": "1.0", "id": id, "method": "sendrawtransaction", "params": [hex]})
            })
            .collect();
        let (status, body) = core.rpc.post(Value::Array(batch).to_string()).await?;
        let replies: Vec<Value> = serde_json::from_str(&body).with_context(|| {
            format!(
                "sendrawtransaction batch (HTTP {status}): {}",
                body.chars().take(300).collect::<String>()
            )
        })?;
        if let Some(error) = replies.iter().map(|r| &r["error"]).find(|e| !e.is_null()) {
            bail!("Bitcoin Core refused a transaction of ours: {error}");
        }
    }
    Ok(())
}
