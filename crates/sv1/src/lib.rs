//! Stratum V1 as mining farms run it today: the message layer and job encoding
//! ([`wire`], [`job`]), the built-in solo pool ([`pool`]), the miner fleet ([`fleet`]) and
//! the tap in front of any SV1 pool ([`tap`]), and a node's `hashblock` announcements
//! ([`hashblock`]).

pub mod fleet;
pub mod fuzzing;
pub mod hashblock;
pub mod job;
pub mod pool;
pub mod tap;
pub mod wire;
