//! What the crates' fuzzing entry points share.

use std::sync::OnceLock;

/// One single-threaded runtime for every input a fuzzer runs: building one per input
/// would take most of its time, and one thread keeps an input's run repeatable.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for fuzzing")
    })
}
