//! The mempool: transactions by txid, ordered by fee rate for block assembly.

use crate::txgen::sigop_cost;
use bitcoin::{Transaction, Txid, Wtxid};
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::Arc;

/// A transaction as the mempool keeps it, with everything a template needs precomputed.
#[derive(Debug)]
pub struct MempoolTx {
    pub tx: Transaction,
    pub txid: Txid,
    pub wtxid: Wtxid,
    pub fee: u64,
    pub weight: u64,
    pub sigops: u32,
    /// The transaction's entry in getblocktemplate's `transactions`, rendered once on
    /// arrival so that serving a template is a concatenation.
    pub gbt_json: String,
}

impl MempoolTx {
    pub fn new(tx: Transaction, fee: u64) -> Self {
        let txid = tx.compute_txid();
        let wtxid = tx.compute_wtxid();
        let weight = tx.weight().to_wu();
        let sigops = sigop_cost(&tx);
        let data = bitcoin::consensus::encode::serialize_hex(&tx);
        let mut gbt_json = String::with_capacity(data.len() + 220);
        write!(
            gbt_json,
            r#"{{"data":"{data}","txid":"{txid}","hash":"{wtxid}","depends":[],"fee":{fee},"sigops":{sigops},"weight":{weight}}}"#
        )
        .expect("writing to a String");
        MempoolTx {
            tx,
            txid,
            wtxid,
            fee,
            weight,
            sigops,
            gbt_json,
        }
    }

    /// Fee per weight unit, scaled to keep integer precision, for ordering.
    fn feerate_key(&self) -> u64 {
        self.fee * 1_000_000 / self.weight.max(1)
    }
}

/// Order key: highest fee rate first, then oldest first.
type RankKey = (Reverse<u64>, u64);

#[derive(Default, Clone)]
pub struct Mempool {
    by_txid: HashMap<Txid, (Arc<MempoolTx>, RankKey)>,
    by_rank: BTreeMap<RankKey, Arc<MempoolTx>>,
    next_seq: u64,
    total_weight: u64,
    total_fees: u64,
    /// Bumped on every change, so a cached template knows when it is out of date.
    version: u64,
}

impl Mempool {
    /// Adds a transaction; beyond `max_txs` the lowest fee rate is evicted (which may be
    /// the newcomer). Returns whether it stayed.
    pub fn insert(&mut self, entry: MempoolTx, max_txs: usize) -> bool {
        if self.by_txid.contains_key(&entry.txid) {
            return false;
        }
        let key = (Reverse(entry.feerate_key()), self.next_seq);
        self.next_seq += 1;
        let entry = Arc::new(entry);
        let txid = entry.txid;
        self.total_weight += entry.weight;
        self.total_fees += entry.fee;
        self.by_txid.insert(txid, (entry.clone(), key));
        self.by_rank.insert(key, entry);
        self.version += 1;
        while self.by_txid.len() > max_txs {
            let (_, lowest) = self.by_rank.last_key_value().expect("not empty");
            let lowest = lowest.txid;
            self.remove(&lowest);
        }
        self.by_txid.contains_key(&txid)
    }

    pub fn remove(&mut self, txid: &Txid) -> Option<Arc<MempoolTx>> {
        let (entry, key) = self.by_txid.remove(txid)?;
        self.by_rank.remove(&key);
        self.total_weight -= entry.weight;
        self.total_fees -= entry.fee;
        self.version += 1;
        Some(entry)
    }

    pub fn get(&self, txid: &Txid) -> Option<&Arc<MempoolTx>> {
        self.by_txid.get(txid).map(|(e, _)| e)
    }

    /// Highest fee rate first.
    pub fn by_feerate(&self) -> impl Iterator<Item = &Arc<MempoolTx>> {
        self.by_rank.values()
    }

    pub fn txids(&self) -> impl Iterator<Item = &Txid> {
        self.by_rank.values().map(|e| &e.txid)
    }

    pub fn len(&self) -> usize {
        self.by_txid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_txid.is_empty()
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn total_weight(&self) -> u64 {
        self.total_weight
    }

    pub fn total_fees(&self) -> u64 {
        self.total_fees
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MempoolConfig, MempoolPreset};
    use crate::txgen::TxGenerator;
    use rand::SeedableRng;

    fn generated(n: usize) -> Vec<MempoolTx> {
        let cfg = MempoolConfig::preset(MempoolPreset::Mainnet);
        let mut g = TxGenerator::new(rand_chacha::ChaCha8Rng::seed_from_u64(3), &cfg);
        (0..n)
            .map(|_| {
                let t = g.next_tx();
                MempoolTx::new(t.tx, t.fee)
            })
            .collect()
    }

    #[test]
    fn ordered_by_feerate_and_evicts_the_cheapest() {
        let mut pool = Mempool::default();
        for e in generated(500) {
            pool.insert(e, 400);
        }
        assert_eq!(pool.len(), 400);
        let rates: Vec<u64> = pool.by_feerate().map(|e| e.feerate_key()).collect();
        assert!(rates.windows(2).all(|w| w[0] >= w[1]));
        let weight: u64 = pool.by_feerate().map(|e| e.weight).sum();
        assert_eq!(weight, pool.total_weight());
        let first = *pool.txids().next().unwrap();
        let v = pool.version();
        assert!(pool.remove(&first).is_some());
        assert!(pool.get(&first).is_none());
        assert!(pool.version() > v);
    }
}
