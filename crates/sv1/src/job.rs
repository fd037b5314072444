//! A mining job as `mining.notify` carries it, and the block header a share builds from it.

use anyhow::{Context, Result};
use bitcoin::block::{Header, Version};
use bitcoin::hashes::{sha256d, Hash};
use bitcoin::{BlockHash, CompactTarget, TxMerkleNode, Txid};
use sv1_wire::Notify;

/// The fields of `mining.notify`.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub job_id: String,
    pub prev_hash: BlockHash,
    /// Coinbase bytes before the extranonces, and after them (legacy serialisation).
    pub coinb1: Vec<u8>,
    pub coinb2: Vec<u8>,
    pub merkle_branch: Vec<TxMerkleNode>,
    pub version: i32,
    pub bits: CompactTarget,
    pub ntime: u32,
    pub clean: bool,
}

impl Job {
    /// The job as `mining.notify` carries it.
    pub fn to_notify(&self) -> Notify {
        Notify {
            job_id: self.job_id.clone(),
            prev_hash: prevhash_to_stratum(&self.prev_hash),
            coinb1: hex::encode(&self.coinb1),
            coinb2: hex::encode(&self.coinb2),
            merkle_branch: (self.merkle_branch.iter())
                .map(|n| hex::encode(n.as_byte_array()))
                .collect(),
            version: format!("{:08x}", self.version),
            nbits: format!("{:08x}", self.bits.to_consensus()),
            ntime: format!("{:08x}", self.ntime),
            clean_jobs: self.clean,
        }
    }

    /// The job a `mining.notify` describes; an error names the field that does not read.
    pub fn from_notify(notify: &Notify) -> Result<Job> {
        let hex_u32 = |field: &str, what: &str| -> Result<u32> {
            u32::from_str_radix(field, 16)
                .with_context(|| format!("notify {what} is not 8 hex digits"))
        };
        let branch = (notify.merkle_branch.iter())
            .map(|h| {
                let bytes: [u8; 32] = hex::decode(h)
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .context("merkle branch entry is not 32 bytes of hex")?;
                Ok(TxMerkleNode::from_byte_array(bytes))
            })
            .collect::<Result<_>>()?;
        Ok(Job {
            job_id: notify.job_id.clone(),
            prev_hash: prevhash_from_stratum(&notify.prev_hash)?,
            coinb1: hex::decode(&notify.coinb1).context("coinb1 is not hex")?,
            coinb2: hex::decode(&notify.coinb2).context("coinb2 is not hex")?,
            merkle_branch: branch,
            version: hex_u32(&notify.version, "version")? as i32,
            bits: CompactTarget::from_consensus(hex_u32(&notify.nbits, "nbits")?),
            ntime: hex_u32(&notify.ntime, "ntime")?,
            clean: notify.clean_jobs,
        })
    }

    /// The first merkle branch: the txid right after the coinbase (the node's marker).
    pub fn marker_txid(&self) -> Option<Txid> {
        self.merkle_branch
            .first()
            .map(|n| Txid::from_raw_hash(n.to_raw_hash()))
    }

    pub fn coinbase(&self, extranonce1: &[u8], extranonce2: &[u8]) -> Vec<u8> {
        let mut cb = Vec::with_capacity(self.coinb1.len() + 12 + self.coinb2.len());
        cb.extend_from_slice(&self.coinb1);
        cb.extend_from_slice(extranonce1);
        cb.extend_from_slice(extranonce2);
        cb.extend_from_slice(&self.coinb2);
        cb
    }

    /// The header a share describes; `version_bits` are already masked by the caller.
    pub fn header(
        &self,
        extranonce1: &[u8],
        extranonce2: &[u8],
        ntime: u32,
        nonce: u32,
        version: i32,
    ) -> Header {
        let root = self.merkle_root(extranonce1, extranonce2);
        self.header_on(root, ntime, nonce, version)
    }

    /// The merkle root under the extranonces: most of a share's hashing, and the same for
    /// every share a miner finds before it moves to its next extranonce2.
    pub fn merkle_root(&self, extranonce1: &[u8], extranonce2: &[u8]) -> TxMerkleNode {
        let coinbase_txid = sha256d::Hash::hash(&self.coinbase(extranonce1, extranonce2));
        mining::merkle_root_from_branch(coinbase_txid, &self.merkle_branch)
    }

    /// The header on a merkle root from [`Job::merkle_root`].
    pub fn header_on(
        &self,
        merkle_root: TxMerkleNode,
        ntime: u32,
        nonce: u32,
        version: i32,
    ) -> Header {
        Header {
            version: Version::from_consensus(version),
            prev_blockhash: self.prev_hash,
            merkle_root,
            time: ntime,
            bits: self.bits,
            nonce,
        }
    }
}

/// SV1's prevhash: the header's bytes with each 4-byte word reversed.
pub fn prevhash_to_stratum(hash: &BlockHash) -> String {
    let mut bytes = hash.to_byte_array();
    bytes.chunks_mut(4).for_each(<[u8]>::reverse);
    hex::encode(bytes)
}

pub fn prevhash_from_stratum(text: &str) -> Result<BlockHash> {
    let mut bytes: [u8; 32] = hex::decode(text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .context("prevhash is not 32 bytes of hex")?;
    bytes.chunks_mut(4).for_each(<[u8]>::reverse);
    Ok(BlockHash::from_byte_array(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_round_trips() {
        let job = Job {
            job_id: "1f".into(),
            prev_hash: BlockHash::from_byte_array(core::array::from_fn(|i| i as u8)),
            coinb1: vec![1, 2, 3],
            coinb2: vec![4, 5],
            merkle_branch: vec![TxMerkleNode::from_byte_array([9; 32])],
            version: 0x2000_0000,
            bits: CompactTarget::from_consensus(0x207f_ffff),
            ntime: 1_700_000_000,
            clean: true,
        };
        let back = Job::from_notify(&job.to_notify()).unwrap();
        assert_eq!(back, job);
        assert_eq!(
            back.marker_txid().unwrap().to_raw_hash().to_byte_array(),
            [9; 32]
        );
        assert!(Job::from_notify(&Notify {
            prev_hash: "00".into(),
            ..job.to_notify()
        })
        .is_err());
    }

    #[test]
    fn stratum_prevhash_swaps_words() {
        let hash = BlockHash::from_byte_array(core::array::from_fn(|i| i as u8));
        let text = prevhash_to_stratum(&hash);
        assert!(text.starts_with("03020100"));
        assert_eq!(prevhash_from_stratum(&text).unwrap(), hash);
    }
}
