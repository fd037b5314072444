//! SRI builds other than the linked one: which app and version a binary is, and whether
//! this build writes the config it reads.
//!
//! Every release below reads the TOML that [`crate::pool_config`], [`crate::translator_config`]
//! and [`crate::jdc_config`] write (their `config.rs`, stratum-apps 0.6 to 0.8, differ only
//! by optional fields this harness leaves out), and runs the Bitcoin Core IPC v31 and the
//! pool's JDS. A release outside the table is refused, naming it, so none is silently fed
//! another's config: to add one, read its `config.rs` against these writers, then add its row.

use crate::App;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The releases whose config this build writes, each as SRI published it (a pool release
/// with the translator and JDC built on the same stratum-apps).
pub const KNOWN: &[(App, &[&str])] = &[
    (App::Pool, &["0.5.0", "0.6.0", "0.7.0"]),
    (App::Translator, &["0.4.0", "0.5.0", "0.6.0"]),
    (App::JobDeclaratorClient, &["0.4.0", "0.5.0", "0.6.0"]),
];

/// An SRI binary the harness may start in place of the linked app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    pub app: App,
    pub version: String,
    pub program: PathBuf,
}

impl std::fmt::Display for Build {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.app.package(), self.version)
    }
}

/// Asks `program --version` what it is, and checks it is `app` in a release this build
/// writes the config of. Errors name the binary and the role.
pub fn identify(program: &Path, app: App) -> Result<Build> {
    let shown = program.display();
    let role = app.package();
    let output = run_version(program)
        .with_context(|| format!("{role} role: `{shown} --version` did not answer"))?;
    let text = String::from_utf8_lossy(&output);
    let (name, version) = parse_version(&text).with_context(|| {
        format!(
            "{role} role: {shown} is not an SRI app (`--version` printed {:?})",
            text.trim()
        )
    })?;
    if name != role {
        bail!("{role} role: {shown} is {name} {version}, not {role}");
    }
    let known = (KNOWN.iter())
        .find(|(a, _)| *a == app)
        .map_or(&[][..], |(_, v)| *v);
    if !known.contains(&version) {
        bail!(
            "{role} role: {shown} is {role} {version}, a release whose config this build does not know (it writes the config of {role} {}): refused rather than fed another release's config",
            known.join(", ")
        );
    }
    Ok(Build {
        app,
        version: version.to_string(),
        program: program.to_path_buf(),
    })
}

/// "pool_sv2 0.6.0" as clap prints it, into the app's package name and version.
fn parse_version(text: &str) -> Option<(&str, &str)> {
    let line = text.lines().next()?.trim();
    let (name, version) = line.split_once(' ')?;
    let numeric = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let semver = version.split('.').count() == 3 && version.split('.').all(numeric);
    semver.then_some((name, version))
}

/// The binary's `--version` output; a binary that does not run, fails or hangs is an error.
fn run_version(program: &Path) -> Result<Vec<u8>> {
    let mut child = lifecycle::command(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("it does not start")?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while child.try_wait()?.is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            bail!("it ran 10 s without answering");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "it exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_version_lines_are_read_and_others_are_not() {
        assert_eq!(
            parse_version("pool_sv2 0.6.0\n"),
            Some(("pool_sv2", "0.6.0"))
        );
        assert_eq!(parse_version("Bitcoin Core version v31.0\n"), None);
        assert_eq!(parse_version("pool_sv2 0.6\n"), None);
        assert_eq!(parse_version(""), None);
    }

    /// A script standing in for a binary: it prints `line` to `--version`.
    fn fake(dir: &Path, name: &str, line: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\necho '{line}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_known_release_is_taken_and_others_are_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("sri-release-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pool = fake(&dir, "pool_sv2", "pool_sv2 0.6.0");
        let build = identify(&pool, App::Pool).unwrap();
        assert_eq!(build.to_string(), "pool_sv2 0.6.0");

        let next = fake(&dir, "next", "pool_sv2 0.8.0");
        let e = format!("{:#}", identify(&next, App::Pool).unwrap_err());
        assert!(e.contains("pool_sv2 0.8.0") && e.contains("next"), "{e}");

        let e = format!("{:#}", identify(&pool, App::Translator).unwrap_err());
        assert!(e.contains("is pool_sv2 0.6.0, not translator_sv2"), "{e}");

        let e = format!(
            "{:#}",
            identify(Path::new("/bin/true"), App::Pool).unwrap_err()
        );
        assert!(e.contains("not an SRI app"), "{e}");

        let e = format!("{:#}", identify(&dir.join("gone"), App::Pool).unwrap_err());
        assert!(e.contains("does not start"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
