//! The simulated Bitcoin network node.
//!
//! A deterministic (for a seed) model of a Bitcoin network as one node sees it: a chain
//! that "the rest of the network" extends at Poisson-distributed times, a mempool fed by
//! generated real transactions, fee-rate block assembly with a marker transaction that
//! identifies every template, and bitcoind-grade block validation. [`NodeState`] is the
//! pure model, driven by virtual time (what the tests use); [`service`] runs it in real
//! time behind bitcoind-compatible JSON-RPC and ZMQ faces, and the SV2 Template Distribution
//! Protocol ([`tdp`]).

pub mod chain;
pub mod config;
pub mod fuzzing;
pub mod ipc;
pub mod mempool;
pub mod peer;
pub mod rpc;
pub mod service;
pub mod shared;
pub mod state;
pub mod tdp;
pub mod tdp_client;
pub mod template;
pub mod txgen;
pub mod validate;
pub mod zmq;

pub use config::{Difficulty, Follower, MempoolConfig, MempoolPreset, NodeConfig};
pub use service::{NodeHandle, NodeOptions, RpcAuth};
pub use state::NodeState;
pub use template::Template;
