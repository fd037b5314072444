//! An SV2 authority key pair: what a Template Provider, a pool or a JDS signs its Noise
//! certificates with, and what a tap answering as one of them holds.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use stratum_apps::key_utils::{Secp256k1PublicKey, Secp256k1SecretKey};

/// An authority key pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthorityKeys {
    pub public: Secp256k1PublicKey,
    pub secret: Secp256k1SecretKey,
}

impl AuthorityKeys {
    /// A fresh key pair (one per run).
    pub fn generate() -> AuthorityKeys {
        // Through the key's text form: the SV2 crates use their own secp256k1 version.
        let secret = bitcoin::secp256k1::SecretKey::new(&mut rand::thread_rng());
        Self::from_secret(&bitcoin::base58::encode_check(&secret.secret_bytes()))
            .expect("32 random bytes are a secret key")
    }

    /// The pair of a secret key in SRI's text form (base58check).
    pub fn from_secret(text: &str) -> Result<AuthorityKeys> {
        let secret: Secp256k1SecretKey = text
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("bad secret key: {e:?}"))?;
        Ok(AuthorityKeys {
            public: secret.into(),
            secret,
        })
    }
}
