//! A sweep's plan: which scenario keys vary over which values, crossed (a grid) or
//! paired (`zip`), each point run `repeat` times with its own seed. Every point is checked
//! as the scenario it will run before anything runs, so a key the scenario has no field
//! for, or a value the field cannot take, is an error naming both up front.

pub mod runner;

use analysis::sweep::{PointRun, BUILTIN, RELEASE_KEY};
use anyhow::{bail, Context, Result};
use model::scenario::{Setting, SweepSection, VarySection};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The SRI binaries a release directory may hold, by the role they run.
const RELEASE_BINARIES: [(&str, &str); 3] = [
    ("pool", "pool_sv2"),
    ("translator", "translator_sv2"),
    ("jdc", "jd_client_sv2"),
];

/// The most runs a sweep may start: a sweep is a benchmark bounded in count and time.
pub const MAX_RUNS: usize = 1_000;

/// One varied key and its values, as `--set` takes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vary {
    pub key: String,
    pub values: Vec<String>,
}

impl Vary {
    /// `KEY=V1,V2,...` as `--vary` gives it.
    pub fn parse(arg: &str) -> Result<Vary> {
        let (key, list) = arg.split_once('=').with_context(|| {
            format!("--vary {arg:?}: expected KEY=V1,V2,... (link.rtt_ms=10,100)")
        })?;
        let key = key.trim().to_string();
        let values: Vec<String> = list
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        Vary::new(key, values)
    }

    fn new(key: String, values: Vec<String>) -> Result<Vary> {
        if key.is_empty() {
            bail!("--vary: a key is empty (KEY=V1,V2: link.rtt_ms=10,100)");
        }
        if values.is_empty() {
            bail!("--vary {key}: no values (give one or more, comma-separated)");
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = values.iter().find(|v| !seen.insert(v.as_str())) {
            bail!("--vary {key}: {twice:?} is given twice");
        }
        Ok(Vary { key, values })
    }
}

/// A `[[sweep.vary]]` entry as the sweep's axis.
fn vary_of(section: &VarySection) -> Result<Vary> {
    let values = (section.values.iter())
        .map(|v| match v {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    Vary::new(section.key.clone(), values).with_context(|| "scenario field `sweep.vary`")
}

/// The whole plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub vary: Vec<Vary>,
    pub zip: bool,
    pub repeat: u32,
}

impl Plan {
    /// The plan from `--vary` arguments, or else the scenario's `[sweep]` table; `repeat`
    /// and `zip` from the command line win over the table's.
    pub fn resolve(
        args: &[String],
        zip: bool,
        repeat: Option<u32>,
        section: Option<&SweepSection>,
    ) -> Result<Plan> {
        let vary: Vec<Vary> = if args.is_empty() {
            let section = section.filter(|s| !s.vary.is_empty()).context(
                "nothing to vary: give --vary KEY=V1,V2 (link.rtt_ms=10,100), or a scenario with a [[sweep.vary]] table",
            )?;
            section.vary.iter().map(vary_of).collect::<Result<_>>()?
        } else {
            args.iter().map(|a| Vary::parse(a)).collect::<Result<_>>()?
        };
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = vary.iter().find(|v| !seen.insert(v.key.as_str())) {
            bail!("--vary {}: the key is varied twice", twice.key);
        }
        // The scenario's `zip` pairs the scenario's own lists, not the command line's.
        let zip = zip || (args.is_empty() && section.is_some_and(|s| s.zip));
        if zip {
            if let Some(other) = vary.iter().find(|v| v.values.len() != vary[0].values.len()) {
                bail!(
                    "--zip pairs the lists value by value: {} has {} values, {} has {}",
                    vary[0].key,
                    vary[0].values.len(),
                    other.key,
                    other.values.len()
                );
            }
        }
        let repeat = repeat.or(section.and_then(|s| s.repeat)).unwrap_or(1);
        if repeat == 0 {
            bail!("--repeat: at least 1 run a point");
        }
        let plan = Plan { vary, zip, repeat };
        let runs = plan.settings().len() * repeat as usize;
        if runs > MAX_RUNS {
            bail!("the sweep would start {runs} runs; at most {MAX_RUNS} (fewer values, or fewer repeats)");
        }
        Ok(plan)
    }

    /// Every point's settings: the grid of the values, or the lists paired.
    pub fn settings(&self) -> Vec<Vec<(String, String)>> {
        if self.zip {
            return (0..self.vary[0].values.len())
                .map(|i| {
                    (self.vary.iter())
                        .map(|v| (v.key.clone(), v.values[i].clone()))
                        .collect()
                })
                .collect();
        }
        let mut grid: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for v in &self.vary {
            grid = grid
                .into_iter()
                .flat_map(|point| {
                    v.values.iter().map(move |value| {
                        let mut p = point.clone();
                        p.push((v.key.clone(), value.clone()));
                        p
                    })
                })
                .collect();
        }
        grid
    }

    /// Every run, points in order and each point's repeats together.
    pub fn runs(&self, base_seed: u64) -> Vec<PointRun> {
        let mut runs = Vec::new();
        for (point, settings) in self.settings().into_iter().enumerate() {
            for repeat in 0..self.repeat {
                let label: Vec<String> = (settings.iter())
                    .map(|(k, v)| format!("{}={}", short_key(k), short_value(v)))
                    .collect();
                let mut name = format!("{point:03}-{}", sanitize(&label.join("-")));
                if self.repeat > 1 {
                    name.push_str(&format!("-r{repeat}"));
                }
                runs.push(PointRun {
                    name,
                    point,
                    settings: settings.clone(),
                    repeat,
                    seed: base_seed.wrapping_add(u64::from(repeat)),
                });
            }
        }
        runs
    }
}

/// The settings that make the scenario `run`.
pub fn overrides(run: &PointRun) -> Result<Vec<Setting>> {
    let mut out = Vec::new();
    for (key, value) in &run.settings {
        out.extend(set_of(key, value)?);
    }
    out.push(Setting::new("seed", run.seed as i64));
    Ok(out)
}

/// "link.rtt_ms=100, miners.count=10".
fn label(run: &PointRun) -> String {
    (run.settings.iter())
        .map(|(k, v)| format!("{k}={}", short_value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The settings of one varied key's value: a command is a string whatever it looks
/// like; `builtin` leaves an SRI role's command unset; `release` expands to its
/// directory's binaries (in it, or in its `bin/` as `cargo install --root DIR` puts them).
fn set_of(key: &str, value: &str) -> Result<Vec<Setting>> {
    if key == RELEASE_KEY {
        if value == BUILTIN {
            return Ok(Vec::new());
        }
        let root = Path::new(value);
        let dir = if root.join("bin").is_dir() {
            root.join("bin")
        } else {
            root.to_path_buf()
        };
        let sets: Vec<Setting> = (RELEASE_BINARIES.iter())
            .filter(|(_, bin)| dir.join(bin).is_file())
            .map(|(role, bin)| {
                let path = dir.join(bin).display().to_string();
                Setting::new(format!("roles.{role}.command"), path)
            })
            .collect();
        if sets.is_empty() {
            bail!(
                "--vary release={value}: the directory holds none of {:?} (or give {BUILTIN:?} for the pinned build)",
                RELEASE_BINARIES.map(|(_, bin)| bin)
            );
        }
        return Ok(sets);
    }
    if key.starts_with("roles.") && key.ends_with(".command") {
        if value == BUILTIN {
            return Ok(Vec::new());
        }
        return Ok(vec![Setting::new(key, value)]);
    }
    Ok(vec![Setting::of_text(key, value)])
}

/// Checks every point of `plan` as the scenario it will run (`common_sets` applied to
/// every run), before anything runs; returns, for a point that runs an SRI binary, the
/// build of each SRI role (which a release swapped, which stay linked).
pub fn validate_points(
    scenario: &Path,
    plan: &Plan,
    common_sets: &[Setting],
) -> Result<Vec<String>> {
    let mut builds = Vec::new();
    let text = std::fs::read_to_string(scenario)
        .with_context(|| format!("cannot read scenario {}", scenario.display()))?;
    for run in plan.runs(0).iter().filter(|r| r.repeat == 0) {
        let mut sets = common_sets.to_vec();
        sets.extend(overrides(run)?);
        let point = crate::on_host::parse(&text, scenario, &sets).with_context(|| {
            format!("--vary {}: this point is not a valid scenario", label(run))
        })?;
        let roles = crate::sri_builds::identify(&point)
            .with_context(|| format!("--vary {}: an SRI binary is refused", label(run)))?;
        if roles.iter().any(|r| r.binary.is_some()) {
            let described = crate::sri_builds::described(&roles).join("; ");
            builds.push(format!("{}: {described}", label(run)));
        }
    }
    Ok(builds)
}

fn short_key(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// A path is named by its last parts (a release's directory and binary).
fn short_value(value: &str) -> String {
    let parts: Vec<&str> = value.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() > 2 {
        parts[parts.len() - 2..].join("/")
    } else {
        value.to_string()
    }
}

/// A directory name of letters, digits, `.`, `_`, `-` and `=`, at most 60 characters.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str], zip: bool, repeat: Option<u32>) -> Result<Plan> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Plan::resolve(&args, zip, repeat, None)
    }

    #[test]
    fn a_grid_crosses_the_values_and_zip_pairs_them() {
        let p = plan(&["link.rtt_ms=10,100", "miners.count=2,4,8"], false, None).unwrap();
        let s = p.settings();
        assert_eq!(s.len(), 6);
        assert_eq!(
            s[1],
            vec![
                ("link.rtt_ms".into(), "10".into()),
                ("miners.count".into(), "4".into())
            ]
        );
        let z = plan(&["link.rtt_ms=10,100", "miners.count=2,4"], true, None).unwrap();
        assert_eq!(z.settings().len(), 2);
        assert_eq!(z.settings()[1][1].1, "4");
        let err = plan(&["link.rtt_ms=10,100", "miners.count=2,4,8"], true, None).unwrap_err();
        assert!(err.to_string().contains("miners.count has 3"), "{err}");
    }

    #[test]
    fn repeats_get_their_own_seeds_and_directories() {
        let p = plan(&["link.rtt_ms=10,100"], false, Some(3)).unwrap();
        let runs = p.runs(7);
        assert_eq!(runs.len(), 6);
        assert_eq!(runs[4].name, "001-rtt_ms=100-r1");
        assert_eq!(runs[4].seed, 8);
        let sets: Vec<String> = (overrides(&runs[4]).unwrap().iter())
            .map(Setting::to_string)
            .collect();
        assert_eq!(sets, ["link.rtt_ms=100", "seed=8"]);
    }

    #[test]
    fn bad_vary_arguments_are_named() {
        for (arg, says) in [
            ("link.rtt_ms=", "no values"),
            ("link.rtt_ms", "expected KEY=V1"),
            ("=1,2", "a key is empty"),
            ("link.rtt_ms=1,1", "given twice"),
        ] {
            let err = plan(&[arg], false, None).unwrap_err().to_string();
            assert!(err.contains(says), "{arg}: {err}");
        }
        let err = plan(&["link.rtt_ms=1", "link.rtt_ms=2"], false, None).unwrap_err();
        assert!(err.to_string().contains("varied twice"), "{err}");
        let err = plan(&["link.rtt_ms=1"], false, Some(0)).unwrap_err();
        assert!(err.to_string().contains("at least 1"), "{err}");
    }

    #[test]
    fn builtin_leaves_a_role_alone_and_a_command_is_a_string() {
        assert!(set_of("roles.pool.command", "builtin").unwrap().is_empty());
        assert_eq!(
            set_of("roles.pool.command", "/opt/b/pool_sv2").unwrap(),
            [Setting::new("roles.pool.command", "/opt/b/pool_sv2")]
        );
        // A command that reads as TOML stays the string it is.
        assert_eq!(
            set_of("roles.pool.command", "1").unwrap(),
            [Setting::new("roles.pool.command", "1")]
        );
        let err = set_of(RELEASE_KEY, "/nonexistent").unwrap_err();
        assert!(err.to_string().contains("pool_sv2"), "{err}");
    }
}
