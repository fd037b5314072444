//! What an attacker on a farm's link does (scenario `link.attack`): the attack as the
//! relay runs it and the analysis reads it back from the plan.

use serde::{Deserialize, Serialize};

/// What the attacker does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Attack {
    /// The classic hashrate hijack. SV1 `mining.authorize` and `mining.submit` name the
    /// attacker's worker `account` instead of the farm's; on a connection authorized
    /// before the attack began, the attacker first authorizes its own worker and swallows
    /// the answer. The pool credits the attacker; the miners see their shares accepted. On
    /// a stream it cannot read as SV1 (SV2's Noise), its rewrite lands on ciphertext: it
    /// changes one byte of the first chunk each connection sends after the attack began.
    HijackWorker { account: String },
    /// The job hijack of a malicious proxy: in each SV1 `mining.notify`, every coinbase
    /// output that pays (a witness commitment pays nothing) pays the attacker's `payout`
    /// script instead. The miners hash for the attacker: a block they find pays it, and the
    /// pool, which builds its own coinbase, rejects their shares. On a stream it cannot
    /// read (SV2's Noise), its rewrite lands on ciphertext: it changes one byte of the
    /// first chunk the pool sends each connection once the attack is on.
    HijackJob {
        #[serde(with = "hex_bytes")]
        payout: Vec<u8>,
    },
    /// Flips one bit of every `every_bytes`-th byte the link carries, each way (counted
    /// over all its connections): line noise, or a middlebox that mangles what it carries.
    Tamper { every_bytes: u64 },
    /// Inserts one forged message into each connection once the attack is on, farm to
    /// pool: on SV1 a `mining.submit` in the farm's worker's name on its current job (the
    /// pool judges it as the farm's; the attacker hides the answer), on a stream it cannot
    /// read (SV2) a frame of its own bytes.
    Inject,
}

impl Attack {
    pub fn kind(&self) -> AttackKind {
        match self {
            Attack::HijackWorker { .. } => AttackKind::HijackWorker,
            Attack::HijackJob { .. } => AttackKind::HijackJob,
            Attack::Tamper { .. } => AttackKind::Tamper,
            Attack::Inject => AttackKind::Inject,
        }
    }
}

/// The attack's kinds, as a scenario and a run's plan name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttackKind {
    HijackWorker,
    HijackJob,
    Tamper,
    Inject,
}

impl AttackKind {
    pub fn name(self) -> &'static str {
        match self {
            AttackKind::HijackWorker => "hijack-worker",
            AttackKind::HijackJob => "hijack-job",
            AttackKind::Tamper => "tamper",
            AttackKind::Inject => "inject",
        }
    }
}

impl std::fmt::Display for AttackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A script in a scenario and a spec: hex.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        hex::decode(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
