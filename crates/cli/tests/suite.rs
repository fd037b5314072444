//! Every end-to-end test of stratum-bench, one module a family (tests/NAME.rs), built as
//! one test binary: the shared helpers (common/) compile once and the binary links once,
//! where a binary a file compiled them and linked every dependency thirty times over.
//! Filter a family with nextest's `test(/^NAME::/)` (docs/testing.md).

mod attack;
mod bench_fanout;
mod bench_pool;
mod bench_template;
mod bitcoin_core;
mod cli;
mod collector;
mod common;
mod containers;
mod deploy;
mod docs;
mod external_sv1_pool;
mod farm_node;
mod fuzz_corpus;
mod isolated_pool;
mod latency;
mod lifecycle;
mod live;
mod node_command;
mod outage;
mod race;
mod real_node;
mod real_sv1_miner;
mod releases;
mod relocatable;
mod run_sv1;
mod run_sv2;
mod security;
mod shards;
mod sweep;
mod tap;
mod template_provider;
mod two_hosts;
