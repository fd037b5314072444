//! The `stratum-bench` binary: the command line of `lib.rs`, stamped with the git commit
//! it was built from (`build.rs`).

fn main() -> std::process::ExitCode {
    stratum_bench::main(env!("STRATUM_BENCH_GIT_COMMIT"))
}
