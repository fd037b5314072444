//! Stratum V1 as mining farms run it today: the message layer and job encoding
//! ([`wire`], [`job`]), the built-in solo pool ([`pool`]) and the miner fleet ([`fleet`]).

pub mod fleet;
pub mod job;
pub mod pool;
pub mod wire;
