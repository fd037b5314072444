//! Roles in containers: the one image every role runs from, built without a registry.
//!
//! The image holds the `stratum-bench` executable (debug info stripped) and the shared
//! libraries it links, `FROM scratch`: nothing else runs in it. Every role is
//! `stratum-bench role ...` in it, the collector `stratum-bench collect ...`. Hosts without
//! a registry get it with `docker save TAG | ssh HOST docker load`.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest Docker engine the container features rely on (internal overlay networks,
/// `docker stack deploy` of compose v3 files).
const MIN_ENGINE: (u32, u32) = (20, 10);

/// The image tag of this build.
pub fn default_tag() -> String {
    format!("stratum-bench:{}", env!("CARGO_PKG_VERSION"))
}

/// Runs `docker ARGS`, returning its stdout; an error carries its stderr.
pub fn docker(args: &[&str]) -> Result<String> {
    let out = Command::new("docker").args(args).output().context(
        "cannot run `docker`: install Docker (Debian: apt-get install docker.io) and put it on PATH",
    )?;
    if !out.status.success() {
        bail!(
            "`docker {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The engine's version, once it is known to answer and be recent enough; otherwise an
/// error saying what is missing and how to fix it.
pub fn check_engine() -> Result<String> {
    let version = docker(&["version", "--format", "{{.Server.Version}}"]).context(
        "no Docker daemon answers: start one (systemctl start docker, or dockerd as root; `make test` starts one itself)",
    )?;
    let mut parts = version
        .split(['.', '+', '-'])
        .map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().flatten(), parts.next().flatten());
    match major.zip(minor) {
        Some(have) if have >= MIN_ENGINE => Ok(version),
        Some(_) => bail!(
            "the Docker engine is {version}; stratum-bench needs {}.{} or newer",
            MIN_ENGINE.0,
            MIN_ENGINE.1
        ),
        None => bail!("cannot read the Docker engine's version {version:?}"),
    }
}

/// Builds the image `tag` from `exe` and the shared libraries `ldd` says it loads.
pub fn build_image(exe: &Path, tag: &str) -> Result<()> {
    check_engine()?;
    let context = std::env::temp_dir().join(format!("stratum-bench-image-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&context);
    let built = fill_context(exe, &context).and_then(|()| {
        docker(&["build", "--quiet", "--tag", tag, &context.to_string_lossy()])
            .with_context(|| format!("cannot build the image {tag}"))
    });
    let _ = std::fs::remove_dir_all(&context);
    built.map(|_| ())
}

/// The build context: `rootfs/` (the executable, its libraries, an empty /tmp) and a
/// Dockerfile copying it onto nothing.
fn fill_context(exe: &Path, context: &Path) -> Result<()> {
    let rootfs = context.join("rootfs");
    for dir in ["usr/local/bin", "tmp", "run/bench"] {
        std::fs::create_dir_all(rootfs.join(dir))?;
    }
    let target = rootfs.join("usr/local/bin/stratum-bench");
    // The image need not carry debug info (a third of the executable's size).
    let stripped = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(exe)
        .arg(&target)
        .status()
        .is_ok_and(|s| s.success());
    if !stripped {
        std::fs::copy(exe, &target)
            .with_context(|| format!("cannot copy {} into the image", exe.display()))?;
    }
    for library in shared_libraries(exe)? {
        let inside = rootfs.join(library.strip_prefix("/").unwrap_or(&library));
        std::fs::create_dir_all(inside.parent().context("a library has a directory")?)?;
        // Copies the file a symlink names, under the symlink's name.
        std::fs::copy(&library, &inside)
            .with_context(|| format!("cannot copy {} into the image", library.display()))?;
    }
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/usr/local/bin/stratum-bench\"]\n",
    )?;
    Ok(())
}

/// The shared libraries `exe` loads, and its loader, as `ldd` lists them.
fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(exe)
        .output()
        .context("cannot run ldd to list the executable's libraries")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // A static executable needs none.
        if text.contains("not a dynamic executable") {
            return Ok(Vec::new());
        }
        bail!(
            "ldd {} failed: {}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(libraries_in(&text))
}

/// The absolute paths in `ldd` output: `name => /path (addr)` and `/path (addr)`.
fn libraries_in(ldd: &str) -> Vec<PathBuf> {
    ldd.lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = line.split_once("=>").map_or(line, |(_, p)| p.trim());
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_libraries_are_read_from_ldd() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f68)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f69)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f70)\n";
        assert_eq!(
            libraries_in(ldd),
            [
                "/lib/x86_64-linux-gnu/libstdc++.so.6",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
    }
}
