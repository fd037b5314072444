//! The `stratum-bench` binary: the command line of `lib.rs`, stamped with the git commit
//! it was built from. The Makefile sets `STRATUM_BENCH_GIT_COMMIT`; only this file reads
//! it, so a new commit relinks the binary and rebuilds nothing else (a build script's
//! output would rebuild every target of this package).

fn main() -> std::process::ExitCode {
    stratum_bench::main(option_env!("STRATUM_BENCH_GIT_COMMIT").unwrap_or("unknown"))
}
