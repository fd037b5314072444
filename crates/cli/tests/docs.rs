//! The README is a front door and docs/ the guide behind it: every link between them
//! resolves, to a file and to a heading, and the README stays short.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn repo() -> PathBuf {
    crate::common::crate_dir().join("../..")
}

/// The README and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "md") {
            pages.push(entry.path());
        }
    }
    pages
}

/// Every `[text](target)` outside code blocks and code spans.
fn links(markdown: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    found
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces
/// as dashes.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut seen = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let base = slug(line.trim_start_matches('#'));
            // Repeated headings get -1, -2 ... as on GitHub.
            let mut name = base.clone();
            let mut n = 0;
            while !seen.insert(name.clone()) {
                n += 1;
                name = format!("{base}-{n}");
            }
        }
    }
    seen
}

#[test]
fn every_link_in_the_readme_and_the_guide_resolves() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            assert!(
                target.exists(),
                "{}: {link} points at nothing",
                page.display()
            );
            assert!(
                (target.canonicalize().unwrap()).starts_with(repo().canonicalize().unwrap()),
                "{}: {link} leaves the repository, which users do not have",
                page.display()
            );
            if !anchor.is_empty() {
                let markdown = std::fs::read_to_string(&target).unwrap();
                assert!(
                    anchors(&markdown).contains(anchor),
                    "{}: {link}: no heading #{anchor} in {}",
                    page.display(),
                    target.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} links");
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines < 250, "README.md has {lines} lines");
    for must in [
        "make run",
        "make test",
        "## Glossary",
        "## Reading the verdict",
    ] {
        assert!(readme.contains(must), "README lacks {must}");
    }
    assert!(!readme.contains("../shared"), "users have no ../shared");
    assert!(
        !readme.contains("SAMPLE-OUTPUT"),
        "the sample of `make run` is filled in"
    );
}

#[test]
fn links_and_anchors_are_read_as_github_reads_them() {
    assert_eq!(
        links("see [a](docs/run.md#x) and `[b](no)`\n```\n[c](no)\n```\n[d](#e)"),
        ["docs/run.md#x", "#e"]
    );
    assert_eq!(
        slug(" `stratum-bench sweep SCENARIO`: how the answer moves"),
        "stratum-bench-sweep-scenario-how-the-answer-moves"
    );
    let a = anchors("# A\n## A\n```\n# not\n```\n");
    assert_eq!(a, BTreeSet::from(["a".to_string(), "a-1".to_string()]));
}
