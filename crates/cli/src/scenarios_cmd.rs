//! `stratum-bench scenarios`: the shipped scenarios and what each is for.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ScenariosArgs {
    /// The directory of scenario files.
    #[arg(long, default_value = "scenarios")]
    dir: PathBuf,
}

pub fn list(args: ScenariosArgs) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.dir)
        .with_context(|| {
            format!(
                "cannot read {} (run from the repository, or give --dir)",
                args.dir.display()
            )
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    anyhow::ensure!(
        !files.is_empty(),
        "no scenario files (*.toml) in {}",
        args.dir.display()
    );
    let mut out = String::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let what = match harness::on_host::load(&file, &[]) {
            Ok(s) => format!(
                "{}; {:.0} s measured",
                s.sides.join(", "),
                s.duration.as_secs_f64()
            ),
            Err(e) => format!("does not load as it is: {e:#}"),
        };
        out += &format!("{}  ({what})\n", file.display());
        for line in report::terminal::wrap(&purpose(&text), 96, "") {
            out += &format!("    {line}\n");
        }
    }
    // Read through `head`: a reader that stops early is no error.
    match std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => Ok(written?),
    }
}

/// The first sentence of a scenario's leading comment, what it is for: up to a full stop,
/// or a colon that ends a line (before a drawing of the sides).
fn purpose(text: &str) -> String {
    let comment: Vec<&str> = text
        .lines()
        .map_while(|l| l.strip_prefix('#'))
        .map(str::trim)
        .collect();
    let joined = comment.join("\n");
    let end = joined
        .char_indices()
        .find(|&(i, c)| {
            let next = || joined[i + c.len_utf8()..].chars().next();
            match c {
                '.' => next().is_none_or(char::is_whitespace),
                ':' => next().is_none_or(|n| n == '\n'),
                _ => false,
            }
        })
        .map_or(joined.len(), |(i, _)| i);
    match joined[..end].replace('\n', " ").trim() {
        "" => "(no leading comment)".into(),
        first => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::purpose;

    #[test]
    fn the_purpose_is_the_leading_comments_first_sentence() {
        let text = "# Configuration A beside the SV1 baseline, at the same\n# time:\n#   sv1: more\nname = \"x\"\n# later";
        assert_eq!(
            purpose(text),
            "Configuration A beside the SV1 baseline, at the same time"
        );
        assert_eq!(
            purpose("# pool 0.7.0 is pinned. Then\n"),
            "pool 0.7.0 is pinned"
        );
        assert_eq!(
            purpose("# Soak: many miners, for an hour.\n"),
            "Soak: many miners, for an hour"
        );
        assert_eq!(purpose("name = \"x\"\n"), "(no leading comment)");
        // Any character, not only ASCII, before the full stop.
        assert_eq!(purpose("# Pool — été. More\n"), "Pool — été");
    }
}
