//! Every fuzz target's seed corpus (`fuzz/seeds/<target>`: examples, and every input a
//! fuzzer ever crashed on, kept as a regression) replayed through the same entry point the
//! target calls, so a parser change that brings a crash back fails here, in seconds,
//! without nightly or cargo-fuzz.

use std::path::PathBuf;

fn replay(target: &str, entry: fn(&[u8])) {
    let dir = crate::common::crate_dir()
        .join("../../fuzz/seeds")
        .join(target);
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    inputs.sort();
    assert!(
        !inputs.is_empty(),
        "{target} has no seeds in {}",
        dir.display()
    );
    for input in inputs {
        let data = std::fs::read(&input).expect("a seed file");
        // A panic names the input; libFuzzer would abort on it.
        eprintln!("{target}: {}", input.display());
        entry(&data);
    }
}

#[test]
fn sv1_pool_connection() {
    replay("sv1_pool_connection", sv1::fuzzing::pool_connection);
}

#[test]
fn sv1_pool_template() {
    replay("sv1_pool_template", sv1::fuzzing::pool_template);
}

#[test]
fn sv1_miner_connection() {
    replay("sv1_miner_connection", sv1::fuzzing::miner_connection);
}

#[test]
fn sv1_tap_connection() {
    replay("sv1_tap_connection", sv1::fuzzing::tap_connection);
}

#[test]
fn node_rpc_request() {
    replay("node_rpc_request", node::fuzzing::rpc_request);
}

#[test]
fn node_submitted_block() {
    replay("node_submitted_block", node::fuzzing::submitted_block);
}

#[test]
fn node_tdp_frame() {
    replay("node_tdp_frame", node::fuzzing::tdp_frame);
}

#[test]
fn node_ipc_connection() {
    replay("node_ipc_connection", node::fuzzing::ipc_connection);
}

#[test]
fn sv2_tap_frames() {
    replay("sv2_tap_frames", sv2::fuzzing::tap_frames);
}

#[test]
fn sv2_miner_frames() {
    replay("sv2_miner_frames", sv2::fuzzing::miner_frames);
}

#[test]
fn scenario() {
    replay("scenario", harness::fuzzing::scenario);
}

#[test]
fn run_directory() {
    replay("run_directory", report::fuzzing::run_directory);
}
