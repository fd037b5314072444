//! Files and directories that hold secrets (RPC passwords, cookies, authority keys): made
//! readable by their owner only, as bitcoind makes its cookie, whatever the umask.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Writes `contents` to `path`, created or truncated, with mode 0600 (an existing file's
/// mode is set too).
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(contents.as_ref())
}

/// Creates `dir` and its parents; `dir` itself gets mode 0700.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_the_owners_alone_whatever_was_there() {
        let dir = std::env::temp_dir().join(format!("private-{}", std::process::id()));
        create_dir(&dir.join("roles")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.join("roles")), 0o700);
        let file = dir.join("roles/cookie");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&file, "u:p").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "u:p");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
