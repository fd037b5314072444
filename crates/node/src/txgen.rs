//! Generates real, serialisable transactions with the configured fee-rate and size mix.
//!
//! Inputs spend outpoints of a fictional UTXO set (random, hence unique, txids), so every
//! transaction is structurally valid and has a unique txid; signatures are well-formed
//! bytes that nothing verifies, since the simulated network has no UTXO set to check.

use crate::config::MempoolConfig;
use bitcoin::hashes::Hash;
use bitcoin::script::{Builder, PushBytesBuf};
use bitcoin::transaction::Version;
use bitcoin::{
    absolute, Amount, OutPoint, PubkeyHash, ScriptBuf, Sequence, Transaction, TxIn, TxOut, Txid,
    WPubkeyHash, Witness,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

/// Weight units of one input and one output of each kind, to aim at a target size.
const P2WPKH_INPUT_VB: f64 = 68.0;
const P2PKH_INPUT_VB: f64 = 148.0;
const OUTPUT_VB: f64 = 31.0;
const OVERHEAD_VB: f64 = 11.0;

pub struct TxGenerator {
    rng: ChaCha8Rng,
    feerate: LogNormal<f64>,
    vsize: LogNormal<f64>,
    legacy_share: f64,
}

/// A generated transaction and the fee it pays.
pub struct GeneratedTx {
    pub tx: Transaction,
    pub fee: u64,
}

impl TxGenerator {
    pub fn new(rng: ChaCha8Rng, cfg: &MempoolConfig) -> Self {
        TxGenerator {
            rng,
            feerate: LogNormal::new(cfg.feerate_median.ln(), cfg.feerate_sigma)
                .expect("validated fee-rate distribution"),
            vsize: LogNormal::new(cfg.vsize_median.ln(), cfg.vsize_sigma)
                .expect("validated size distribution"),
            legacy_share: cfg.legacy_share,
        }
    }

    pub fn next_tx(&mut self) -> GeneratedTx {
        let legacy = self.rng.gen_bool(self.legacy_share);
        let target_vsize = self.vsize.sample(&mut self.rng).clamp(100.0, 90_000.0);
        let input_vb = if legacy {
            P2PKH_INPUT_VB
        } else {
            P2WPKH_INPUT_VB
        };
        let inputs = (((target_vsize - OVERHEAD_VB - 2.0 * OUTPUT_VB) / input_vb).round() as usize)
            .clamp(1, 600);
        let room = target_vsize - OVERHEAD_VB - inputs as f64 * input_vb;
        let outputs = ((room / OUTPUT_VB).round() as usize).clamp(1, 2000);

        let input = (0..inputs).map(|_| self.input(legacy)).collect();
        let output = (0..outputs)
            .map(|_| TxOut {
                value: Amount::from_sat(self.rng.gen_range(5_000..5_000_000)),
                script_pubkey: if legacy {
                    ScriptBuf::new_p2pkh(&PubkeyHash::from_byte_array(self.rng.gen()))
                } else {
                    ScriptBuf::new_p2wpkh(&WPubkeyHash::from_byte_array(self.rng.gen()))
                },
            })
            .collect();
        let tx = Transaction {
            version: Version::TWO,
            lock_time: absolute::LockTime::ZERO,
            input,
            output,
        };
        let feerate = self.feerate.sample(&mut self.rng).max(1.0);
        let fee = (feerate * tx.vsize() as f64).ceil() as u64;
        GeneratedTx { tx, fee }
    }

    fn input(&mut self, legacy: bool) -> TxIn {
        let previous_output = OutPoint::new(
            Txid::from_byte_array(self.rng.gen()),
            self.rng.gen_range(0..4),
        );
        let mut sig = self.bytes(71);
        sig.push(0x01); // SIGHASH_ALL
        let mut pubkey = self.bytes(33);
        pubkey[0] = 0x02 | (pubkey[0] & 1);
        if legacy {
            let script_sig = Builder::new()
                .push_slice(PushBytesBuf::try_from(sig).expect("72 bytes"))
                .push_slice(PushBytesBuf::try_from(pubkey).expect("33 bytes"))
                .into_script();
            TxIn {
                previous_output,
                script_sig,
                sequence: Sequence::ENABLE_RBF_NO_LOCKTIME,
                witness: Witness::new(),
            }
        } else {
            TxIn {
                previous_output,
                script_sig: ScriptBuf::new(),
                sequence: Sequence::ENABLE_RBF_NO_LOCKTIME,
                witness: Witness::from_slice(&[sig, pubkey]),
            }
        }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.rng.gen()).collect()
    }
}

/// Sigop cost as bitcoind counts it for these shapes: 4 per legacy `OP_CHECKSIG` output
/// (legacy sigops weigh 4), 1 per P2WPKH spend.
pub fn sigop_cost(tx: &Transaction) -> u32 {
    let legacy: u32 = tx
        .output
        .iter()
        .map(|o| o.script_pubkey.count_sigops_legacy() as u32)
        .sum::<u32>()
        + tx.input
            .iter()
            .map(|i| i.script_sig.count_sigops_legacy() as u32)
            .sum::<u32>();
    let witness = tx.input.iter().filter(|i| i.witness.len() == 2).count() as u32;
    legacy * 4 + witness
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MempoolConfig, MempoolPreset};
    use rand::SeedableRng;

    #[test]
    fn transactions_follow_the_configured_mix() {
        let cfg = MempoolConfig::preset(MempoolPreset::Mainnet);
        let mut g = TxGenerator::new(ChaCha8Rng::seed_from_u64(7), &cfg);
        let txs: Vec<_> = (0..2000).map(|_| g.next_tx()).collect();
        let mut ids = std::collections::HashSet::new();
        let mut vsizes: Vec<f64> = Vec::new();
        let mut legacy = 0;
        for t in &txs {
            assert!(ids.insert(t.tx.compute_txid()), "txids are unique");
            let bytes = bitcoin::consensus::serialize(&t.tx);
            let back: Transaction = bitcoin::consensus::deserialize(&bytes).unwrap();
            assert_eq!(back, t.tx, "serialises and parses back");
            assert!(t.fee >= t.tx.vsize() as u64, "at least 1 sat/vB");
            vsizes.push(t.tx.vsize() as f64);
            legacy += t.tx.input.iter().all(|i| i.witness.is_empty()) as usize;
        }
        vsizes.sort_by(f64::total_cmp);
        let median = vsizes[vsizes.len() / 2];
        assert!(
            (120.0..260.0).contains(&median),
            "median vsize {median} near the configured 180"
        );
        let legacy_share = legacy as f64 / txs.len() as f64;
        assert!(
            (0.06..0.14).contains(&legacy_share),
            "legacy share {legacy_share}"
        );
    }
}
