//! The private chains a started Bitcoin Core runs on, and the work a block takes on each.

/// The private chain a Core runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// Every second hash is a block: Core's `generatetoaddress` mines one at once.
    Regtest,
    /// A signet whose block challenge is `OP_TRUE` (`-signetchallenge=51`): blocks need no
    /// signature, and the proof of work is signet's floor (`1e0377ae`, about 4.8 million
    /// hashes a block), so only a share far luckier than the pool's difficulty is a block.
    Signet,
}

impl Chain {
    /// As getblockchaininfo names it, and the data directory's subfolder.
    pub fn name(self) -> &'static str {
        match self {
            Chain::Regtest => "regtest",
            Chain::Signet => "signet",
        }
    }

    /// Its addresses' network.
    pub fn network(self) -> bitcoin::Network {
        match self {
            Chain::Regtest => bitcoin::Network::Regtest,
            Chain::Signet => bitcoin::Network::Signet,
        }
    }

    /// Hashes a block takes on average at the chain's (fixed) target: Core's regtest
    /// `207fffff`, signet's floor `1e0377ae` (its difficulty moves only after 2,016 blocks).
    pub fn hashes_per_block(self) -> f64 {
        let bits = match self {
            Chain::Regtest => 0x207f_ffff,
            Chain::Signet => 0x1e03_77ae,
        };
        let target = bitcoin::Target::from_compact(bitcoin::CompactTarget::from_consensus(bits));
        mining::hashes_per_difficulty(target.difficulty_float())
    }
}
