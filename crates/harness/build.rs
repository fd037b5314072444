//! Records the git commit the binary was built from, for the run's host.json.
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // Without optional locks `git status` leaves the index as it is: refreshing it would
    // change .git/index, which reruns this script on the next cargo command, and with it
    // rebuild this crate and everything above it (4.5 minutes of every `make test`).
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
