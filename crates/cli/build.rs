//! Records the git commit the binary was built from, for the run's host.json. Only the
//! binary's `main.rs` reads it, so a new commit relinks the binary and nothing else.
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // Without optional locks `git status` leaves the index as it is: refreshing it would
    // change .git/index, which reruns this script (and relinks the binary) on the next
    // cargo command.
    let dirty = std::process::Command::new("git")
        .args([
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    println!(
        "cargo:rustc-env=STRATUM_BENCH_GIT_COMMIT={commit}{}",
        if dirty { "-dirty" } else { "" }
    );
    for path in [
        "../../.git/HEAD",
        "../../.git/refs/heads",
        "../../.git/index",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
}
